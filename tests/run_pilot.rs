//! The pilot that sets the default cluster scale ([`nrmm::run::pilot`]): it finds the
//! within-cluster covariance of clustered data, keeps the scaled default on data with no
//! structure, gives the same partition on the data in other units (per-column scales,
//! shifts, a rotation), depends on the seed only (not on the thread count), runs on a bounded
//! random subsample of large data, and a run records the chosen scale so that resuming uses
//! it.

use nrmm::data::{Dataset, DenseData};
use nrmm::model::{AnyKernel, KernelKind, Model, ModelSpec, NwDefaults};
use nrmm::rng::SeedPlan;
use nrmm::run::pilot::{
    full_pilot_sweeps, pooled_within, settle, Settled, FULL_PILOT_DIMENSIONS, MIN_PILOT_SWEEPS,
    PILOT_POINTS, PILOT_SWEEPS, ROUND_POINTS,
};
use nrmm::run::start::Resolved;
use nrmm::run::{Budget, RunRecord, Runner, SamplerKind, SamplerSpec, Start};
use rand_distr::{Distribution, StandardNormal};
use std::path::PathBuf;

/// 150 points in 3-D, three clusters whose means lie along one axis, each with covariance
/// diag(1, 4, 0.25) (the spread between the clusters is mostly along the first axis, so the
/// data's covariance has a very different shape from a cluster's).
fn clustered() -> (DenseData, Vec<usize>) {
    let labels: Vec<usize> = (0..150).map(|i| i / 50).collect();
    let mut rng = SeedPlan::new(11).chain(0);
    let sd = [1.0, 2.0, 0.5];
    let mut values = Vec::with_capacity(450);
    for &c in &labels {
        for (j, s) in sd.iter().enumerate() {
            let z: f64 = StandardNormal.sample(&mut rng);
            let centre = if j == 0 { 8.0 * c as f64 } else { 0.0 };
            values.push(centre + s * z);
        }
    }
    (DenseData::new(150, 3, values).unwrap(), labels)
}

/// The default model with the Normal-Wishart kernel asked for, so that the pilot sets its
/// scale and does not weigh the diagonal kernel against it.
fn model(x: DenseData) -> Model {
    let spec = ModelSpec {
        kernel: Some(KernelKind::Nw),
        ..ModelSpec::default()
    };
    Model::build(&spec, Dataset::Dense(x)).unwrap()
}

/// `k` clusters of `per` points in `d` dimensions, centres 40 apart along the axes (cluster
/// `c` at 40 in coordinate `c`), each cluster's covariance `cov_of(d)` given by a factor
/// `F` (points `centre + F z`, F row-major d × d).
fn separated(k: usize, per: usize, d: usize, factor: &[f64], seed: u64) -> DenseData {
    let mut rng = SeedPlan::new(seed).chain(0);
    let mut values = Vec::with_capacity(k * per * d);
    for c in 0..k {
        for _ in 0..per {
            let z: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
            for a in 0..d {
                let centre = if a == c { 40.0 } else { 0.0 };
                let noise: f64 = (0..d).map(|b| factor[a * d + b] * z[b]).sum();
                values.push(centre + noise);
            }
        }
    }
    DenseData::new(k * per, d, values).unwrap()
}

/// `k` clusters of `per` points in `d` dimensions, each centre ±10 in every coordinate (signs
/// drawn), spread by N(0, I), or, when `correlated`, with every coordinate moving with the
/// first (`0.3 z_a + z_0`: covariance 0.09 I plus a common factor, far from diagonal).
fn signed(k: usize, per: usize, d: usize, correlated: bool, seed: u64) -> DenseData {
    let mut rng = SeedPlan::new(seed).chain(0);
    let mut side = || -> f64 {
        let s: f64 = StandardNormal.sample(&mut rng);
        if s < 0.0 {
            -10.0
        } else {
            10.0
        }
    };
    let centres: Vec<Vec<f64>> = (0..k).map(|_| (0..d).map(|_| side()).collect()).collect();
    let mut rng = SeedPlan::new(seed).chain(1);
    let mut values = Vec::with_capacity(k * per * d);
    for centre in &centres {
        for _ in 0..per {
            let z: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
            values.extend(
                (0..d).map(|a| centre[a] + if correlated { 0.3 * z[a] + z[0] } else { z[a] }),
            );
        }
    }
    DenseData::new(k * per, d, values).unwrap()
}

fn identity(d: usize) -> Vec<f64> {
    (0..d * d).map(|i| f64::from(i % (d + 1) == 0)).collect()
}

/// The default model's pilot (the kernel not asked for).
fn settled_default(x: DenseData, seed: u64) -> Model {
    let m = Model::build(&ModelSpec::default(), Dataset::Dense(x)).unwrap();
    match settle(&m, seed, None).unwrap() {
        Settled::Scaled(m) => *m,
        other => panic!("expected the pilot to set the scale, got {other:?}"),
    }
}

#[test]
fn the_pilot_takes_the_diagonal_kernel_where_its_evidence_is_higher() {
    // Six spherical clusters of 50 points in 30 dimensions: 465 covariance parameters per
    // cluster for the full kernel, 30 for the diagonal one.
    let m = settled_default(separated(6, 50, 30, &identity(30), 7), 1);
    assert!(
        matches!(m.kernel, AnyKernel::Diag(_)),
        "{:?}",
        m.spec.kernel
    );
    let pilot = m.spec.pilot.expect("recorded");
    assert_eq!(pilot.clusters, 6);
    assert!(pilot.diagonal_by.is_some_and(|by| by > 0), "{pilot:?}");
    assert_eq!(m.requested.kernel, Some(KernelKind::Diag));
    assert!(m.kernel_note.is_some());
}

#[test]
fn correlated_clusters_keep_the_full_kernel() {
    // Three clusters in 3-D whose coordinates are strongly correlated within each cluster.
    let f = [1.0, 0.0, 0.0, 0.95, 0.3, 0.0, 0.9, 0.2, 0.3];
    let m = settled_default(separated(3, 60, 3, &f, 8), 1);
    assert!(matches!(m.kernel, AnyKernel::Nw(_)), "{:?}", m.spec.kernel);
    assert_eq!(m.spec.pilot.expect("recorded").diagonal_by, None);
}

/// Above [`FULL_PILOT_DIMENSIONS`] the full kernel's pilot runs fewer sweeps, from the
/// diagonal kernel's best partition, and the kernels are still told apart by evidence:
/// correlated clusters with points enough keep the full kernel (its shorter pilot recorded),
/// spherical clusters of few points take the diagonal one.
#[test]
fn above_64_dimensions_the_full_kernels_shorter_pilot_still_chooses_by_evidence() {
    let d = 72;
    assert!(d > FULL_PILOT_DIMENSIONS);
    let m = settled_default(signed(4, 400, d, true, 12), 1);
    assert!(matches!(m.kernel, AnyKernel::Nw(_)), "{:?}", m.spec.kernel);
    let pilot = m.spec.pilot.expect("recorded");
    assert_eq!(
        (pilot.sweeps, pilot.diagonal_by),
        (full_pilot_sweeps(d), None)
    );
    assert!(pilot.clusters > 1, "{pilot:?}");
    assert!(pilot.sweeps < PILOT_SWEEPS);

    let m = settled_default(signed(6, 100, d, false, 13), 1);
    assert!(
        matches!(m.kernel, AnyKernel::Diag(_)),
        "{:?}",
        m.spec.kernel
    );
    let pilot = m.spec.pilot.expect("recorded");
    assert_eq!((pilot.sweeps, pilot.clusters), (PILOT_SWEEPS, 6));
    assert!(pilot.diagonal_by.is_some_and(|by| by > 0), "{pilot:?}");
}

#[test]
fn the_full_kernels_pilot_sweeps_shrink_as_the_square_of_the_dimensions() {
    let got: Vec<u64> = [2, 64, 65, 128, 1_000]
        .into_iter()
        .map(full_pilot_sweeps)
        .collect();
    assert_eq!(got, [200, 200, 194, 50, MIN_PILOT_SWEEPS]);
}

#[test]
fn the_kernel_choice_does_not_depend_on_column_units() {
    let x = separated(6, 50, 30, &identity(30), 9);
    let values: Vec<f64> = (0..x.n())
        .flat_map(|i| {
            x.row(i)
                .iter()
                .enumerate()
                .map(|(a, v)| v * (1.0 + a as f64) - 3.0 * a as f64)
                .collect::<Vec<_>>()
        })
        .collect();
    let y = DenseData::new(x.n(), x.d(), values).unwrap();
    let (mx, my) = (settled_default(x, 3), settled_default(y, 3));
    assert_eq!(mx.spec.kernel, my.spec.kernel);
    assert_eq!(mx.spec.pilot, my.spec.pilot);
}

fn settled(x: DenseData, seed: u64) -> Model {
    match settle(&model(x), seed, None).unwrap() {
        Settled::Scaled(m) => *m,
        other => panic!("expected the pilot to set the scale, got {other:?}"),
    }
}

/// The Normal-Wishart scale of a model.
fn psi(m: &Model) -> Vec<f64> {
    let AnyKernel::Nw(k) = &m.kernel else {
        panic!("Normal-Wishart expected")
    };
    k.hyper().psi().to_vec()
}

#[test]
fn the_pilot_finds_the_within_cluster_covariance() {
    let (x, truth) = clustered();
    let within = pooled_within(&x, &truth, 3).unwrap();
    let m = settled(x, 1);
    let pilot = m.spec.pilot.expect("recorded");
    assert_eq!(pilot.clusters, 3);
    assert_eq!(m.requested.nw_psi.as_deref(), Some(psi(&m).as_slice()));
    let AnyKernel::Nw(k) = &m.kernel else {
        unreachable!()
    };
    let factor = k.hyper().nu() - 3.0 - 1.0;
    // The pilot's partition is the truth but for a few points at the clusters' edges: its
    // pooled variances are the true partition's within 10 %; the data's variance along the
    // first axis is 22 times the within-cluster one.
    for a in 0..3 {
        let expected = within[a * 3 + a];
        let got = psi(&m)[a * 3 + a] / factor;
        assert!(
            (got / expected - 1.0).abs() < 0.1,
            "dimension {a}: pilot {got}, truth {expected}"
        );
    }
}

#[test]
fn noise_keeps_the_scaled_default() {
    let mut rng = SeedPlan::new(3).chain(0);
    let values: Vec<f64> = (0..200 * 4)
        .map(|_| StandardNormal.sample(&mut rng))
        .collect();
    let m = model(DenseData::new(200, 4, values).unwrap());
    match settle(&m, 1, None).unwrap() {
        Settled::Kept(why) => assert!(why.contains("one cluster"), "{why}"),
        other => panic!("expected the default kept, got {other:?}"),
    }
}

#[test]
fn the_scaled_and_reference_defaults_and_a_given_scale_run_no_pilot() {
    let (x, _) = clustered();
    for spec in [
        ModelSpec {
            nw_defaults: NwDefaults::Scaled,
            ..ModelSpec::default()
        },
        ModelSpec {
            nw_defaults: NwDefaults::Reference,
            ..ModelSpec::default()
        },
        ModelSpec {
            nw_psi: Some(vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]),
            ..ModelSpec::default()
        },
    ] {
        let m = Model::build(&spec, Dataset::Dense(x.clone())).unwrap();
        assert!(matches!(settle(&m, 1, None).unwrap(), Settled::NotDue));
    }
}

/// `x` under per-column scales and shifts and a rotation in the first two columns.
fn affine(x: &DenseData) -> DenseData {
    let (c, s) = (0.6f64, 0.8f64);
    let mut values = Vec::with_capacity(x.n() * x.d());
    for i in 0..x.n() {
        let r = x.row(i);
        let (u, v) = (c * r[0] - s * r[1], s * r[0] + c * r[1]);
        values.extend([1000.0 * u + 5.0, 0.001 * v - 7.0, -3.0 * r[2] + 1e4]);
    }
    DenseData::new(x.n(), x.d(), values).unwrap()
}

/// Labels of a short run of `m` (seed 4, 2 chains, 60 sweeps) in a fresh directory.
fn run_labels(m: &Model, name: &str) -> (Vec<String>, PathBuf) {
    let dir = scratch(name);
    let spec = SamplerSpec {
        budget: Budget::Sweeps(60),
        chains: 2,
        seed: 4,
        checkpoint_every: Some(30),
        ..SamplerSpec::new(SamplerKind::Sams)
    };
    Runner::new(m, spec, &dir).run().unwrap();
    let labels = (0..2)
        .map(|c| std::fs::read_to_string(dir.join(format!("chain-{c}/labels.txt"))).unwrap())
        .collect();
    (labels, dir)
}

/// A fresh directory for this file's test `name`.
fn scratch(name: &str) -> PathBuf {
    crate::support::scratch("run_pilot", name)
}

#[test]
fn the_answer_does_not_depend_on_the_units() {
    let (x, _) = clustered();
    let y = affine(&x);
    let (mx, my) = (settled(x, 2), settled(y, 2));
    assert_eq!(mx.spec.pilot, my.spec.pilot);
    assert_eq!(run_labels(&mx, "units-x").0, run_labels(&my, "units-y").0);
}

#[test]
fn the_pilot_depends_on_the_seed_only() {
    let (x, _) = clustered();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| psi(&settled(x.clone(), 5)));
    assert_eq!(one, psi(&settled(x, 5)));
}

#[test]
fn a_run_records_the_pilots_scale_and_resumes_with_it() {
    let (x, _) = clustered();
    let m = settled(x.clone(), 1);
    let (_, dir) = run_labels(&m, "record");
    let record = RunRecord::load(&dir).unwrap();
    assert_eq!(record.model, m.requested);
    // A front end rebuilds the run's model from its record: no pilot is due, the scale is
    // the recorded one, and the run resumes under it.
    let rebuilt = Model::build(&record.model, Dataset::Dense(x)).unwrap();
    assert!(matches!(
        settle(&rebuilt, 1, None).unwrap(),
        Settled::NotDue
    ));
    assert_eq!(psi(&rebuilt), psi(&m));
    Runner::resume(&rebuilt, &dir)
        .unwrap()
        .budget(Budget::Sweeps(90))
        .run()
        .unwrap();
}

#[test]
fn a_run_on_the_diagonal_kernel_the_pilot_chose_resumes_from_the_default_settings() {
    let x = separated(6, 50, 30, &identity(30), 7);
    let m = settled_default(x.clone(), 1);
    assert!(matches!(m.kernel, AnyKernel::Diag(_)));
    let (_, dir) = run_labels(&m, "record-diag");
    let record = RunRecord::load(&dir).unwrap();
    // A front end that rebuilds the model from its own (default) settings gets the kernel and
    // the scale the pilot chose back from the record.
    let fresh = Model::build(&ModelSpec::default(), Dataset::Dense(x)).unwrap();
    let rebuilt = nrmm::run::pilot::recorded(fresh, &record.model).unwrap();
    assert!(matches!(rebuilt.kernel, AnyKernel::Diag(_)));
    assert_eq!(rebuilt.spec, m.spec);
    Runner::resume(&rebuilt, &dir)
        .unwrap()
        .budget(Budget::Sweeps(90))
        .run()
        .unwrap();
}

/// On more points than [`PILOT_POINTS`] the pilot runs on that many, says so in the model it
/// returns, and still finds the within-cluster covariance; the subsample, and so the scale,
/// depend on the seed only, not on the thread count.
#[test]
fn a_large_data_sets_pilot_runs_on_a_bounded_subsample() {
    // Two clusters of 6,000 points about 57 apart in 2-D, each with covariance I.
    let x = separated(2, 6_000, 2, &identity(2), 3);
    assert!(x.n() > PILOT_POINTS);
    let m = settled(x.clone(), 1);
    let pilot = m.spec.pilot.expect("the pilot set the scale");
    assert_eq!((pilot.points, pilot.clusters), (Some(PILOT_POINTS), 2));
    // Both chains hold the two clusters as the best state of the first round's second
    // half: the pilot stops there, at a quarter of its sweeps.
    const { assert!(PILOT_POINTS >= ROUND_POINTS) };
    assert_eq!(pilot.sweeps, PILOT_SWEEPS / 4);
    // Ψ / (ν - d - 1) is the pooled covariance, here near I.
    let nu = 2.0 + 3.0 + 1.0;
    let cov: Vec<f64> = psi(&m).iter().map(|p| p / (nu - 3.0)).collect();
    for (got, want) in cov.iter().zip(identity(2)) {
        assert!((got - want).abs() < 0.08, "{cov:?}");
    }
    // Its best partition, carried to all 12,000 points, is the two clusters: where the
    // sub-cluster sampler's chains start under `--init auto`.
    let carried = m
        .pilot_partition
        .clone()
        .expect("the pilot's partition is kept");
    assert_eq!(carried.len(), x.n());
    assert!(carried[..6_000].iter().all(|&z| z == carried[0]));
    assert!(carried[6_000..].iter().all(|&z| z == carried[6_000]));
    assert_ne!(carried[0], carried[6_000]);
    assert_eq!(
        Start::Auto
            .resolve(x.n(), SamplerKind::Subcluster, Some(&carried))
            .unwrap(),
        Resolved::Pilot(carried.clone())
    );
    assert_eq!(
        Start::Auto
            .resolve(x.n(), SamplerKind::Subcluster, None)
            .unwrap(),
        Resolved::Single
    );
    assert_eq!(
        Start::Auto
            .resolve(x.n(), SamplerKind::Sams, Some(&carried))
            .unwrap(),
        Resolved::Auto
    );
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| settled(x, 1));
    assert_eq!(psi(&one), psi(&m));
    assert_eq!(one.pilot_partition, m.pilot_partition);
}
