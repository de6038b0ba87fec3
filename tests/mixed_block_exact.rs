//! The product kernel's full-covariance block of real columns with missing coordinates
//! (`nrmm::kernel::mixed::block`) against the exact posterior `p(Π | observed entries)` by
//! enumeration of the 203 partitions of six rows.
//!
//! **The reference.** Under missing at random the cluster marginal of the observed entries is
//! the complete-data marginal integrated over the missing ones:
//! `m(X_obs,S) = ∫ m_NW(X_S completed by u) du · m_b(S)`, with `m_NW` the Normal-Wishart
//! marginal of complete rows (the full kernel's, [`NormalWishart`]) and `m_b` the binary
//! column's Beta-Bernoulli marginal over its observed entries (the independent product
//! kernel's). The table has two rows with one missing real coordinate each, so a cluster
//! holds at most two missing coordinates; the integral is a 1-D or 2-D quadrature in
//! `u = c + w tan θ` (midpoint rule in `θ`, spectrally accurate for these smooth integrands
//! whose tails decay as a power above 2), checked against twice the nodes, and the 1-D case
//! against the kernel's closed-form margin of the Student-t predictive.
//!
//! **The check.** Four chains per sampler (two from one cluster, two from singletons), a
//! tenth burnt in, the effective size by batch means and the TV a perfect sampler of that size
//! would show, `E[TV]` (`tests/support`): the sampler passes within twice `E[TV]`, as the
//! other long-run checks. The same check fails for the wrong model that fills a missing
//! coordinate with its column's mean and never redraws it.

use nrmm::data::table::{Column, ColumnType, TableData};
use nrmm::data::DenseData;
use nrmm::exact::{dp_ln_eppf, ExactPosterior};
use nrmm::kernel::mixed::{Mixed, MixedPriors};
use nrmm::kernel::{ConjugateKernel, NormalWishart, NwHyper, PredictiveKernel};
use nrmm::prior::{Dp, Prior};
use nrmm::run::{SamplerKind, SamplerSettings};
use std::sync::Arc;

use crate::support::chains_tv;

const NAN: f64 = f64::NAN;

/// Rows: two real columns (row 1 misses `y`, row 4 misses `x`) and a binary one (row 4
/// misses it too).
const X: [f64; 6] = [0.0, 0.4, 1.0, 3.0, NAN, 3.6];
const Y: [f64; 6] = [0.1, NAN, 1.1, -0.9, -1.2, -1.5];
const B: [f64; 6] = [1.0, 0.0, 1.0, 0.0, NAN, 0.0];

fn column(name: &str, kind: ColumnType, values: &[f64]) -> Column {
    Column {
        name: name.into(),
        kind,
        levels: if kind == ColumnType::Binary {
            vec!["no".into(), "yes".into()]
        } else {
            Vec::new()
        },
        values: values.to_vec(),
    }
}

fn table(x: &[f64], y: &[f64]) -> TableData {
    TableData::new(vec![
        column("x", ColumnType::Real, x),
        column("b", ColumnType::Binary, &B),
        column("y", ColumnType::Real, y),
    ])
    .unwrap()
}

fn hyper() -> NwHyper {
    NwHyper::new(vec![1.5, -0.4], vec![0.5, 0.2, 0.2, 0.5], 0.3, 4.0).unwrap()
}

fn other_priors() -> MixedPriors {
    MixedPriors {
        xi: Vec::new(),
        psi: Vec::new(),
        count_rate: Vec::new(),
        r: 0.3,
        nu: 4.0,
        beta: 0.7,
    }
}

/// The kernel under test: the block over the table with its missing entries.
fn kernel() -> Mixed {
    Mixed::full_with(table(&X, &Y), other_priors(), hyper()).unwrap()
}

/// The deliberately wrong model: each missing real coordinate at its column's observed mean,
/// never redrawn.
fn mean_filled_kernel() -> Mixed {
    let mean = |v: &[f64]| {
        let o: Vec<f64> = v.iter().copied().filter(|v| !v.is_nan()).collect();
        o.iter().sum::<f64>() / o.len() as f64
    };
    let fill = |v: &[f64]| -> Vec<f64> {
        let m = mean(v);
        v.iter().map(|&a| if a.is_nan() { m } else { a }).collect()
    };
    Mixed::full_with(table(&fill(&X), &fill(&Y)), other_priors(), hyper()).unwrap()
}

/// `ln ∫ exp(f(u)) du` over `R^k` (k = 0, 1, 2) by the midpoint rule in `θ` with
/// `u = c + w tan θ`, `m` nodes per coordinate.
fn integrate(k: usize, c: [f64; 2], w: [f64; 2], m: usize, f: &dyn Fn(&[f64]) -> f64) -> f64 {
    let nodes: Vec<(f64, f64)> = (0..m)
        .map(|j| {
            let theta =
                -std::f64::consts::FRAC_PI_2 + (j as f64 + 0.5) * std::f64::consts::PI / m as f64;
            let sec = 1.0 / theta.cos();
            (
                theta.tan(),
                (std::f64::consts::PI / m as f64 * sec * sec).ln(),
            )
        })
        .collect();
    let mut terms = Vec::new();
    match k {
        0 => return f(&[]),
        1 => {
            for &(t, lw) in &nodes {
                terms.push(f(&[c[0] + w[0] * t]) + lw + w[0].ln());
            }
        }
        2 => {
            for &(t, lw) in &nodes {
                for &(s, lv) in &nodes {
                    terms.push(
                        f(&[c[0] + w[0] * t, c[1] + w[1] * s]) + lw + lv + w[0].ln() + w[1].ln(),
                    );
                }
            }
        }
        _ => unreachable!("at most two missing coordinates"),
    }
    nrmm::math::log_sum_exp(&terms)
}

/// `ln m(X_obs,S)` for every subset `S` (bitmask) by quadrature with `m` nodes.
fn reference_table(m: usize) -> Vec<f64> {
    let n = 6;
    // The binary column alone, under the independent product kernel.
    let b_only = Mixed::with_priors(
        TableData::new(vec![column("b", ColumnType::Binary, &B)]).unwrap(),
        other_priors(),
    )
    .unwrap();
    let h = hyper();
    let mut out = vec![0.0; 1 << n];
    for (mask, entry) in out.iter_mut().enumerate().skip(1) {
        let rows: Vec<usize> = (0..n).filter(|&i| mask >> i & 1 == 1).collect();
        let missing: Vec<(usize, usize)> = rows
            .iter()
            .flat_map(|&i| {
                [(i, 0, X[i]), (i, 1, Y[i])]
                    .into_iter()
                    .filter(|t| t.2.is_nan())
                    .map(|(i, k, _)| (i, k))
            })
            .collect();
        let f = |u: &[f64]| {
            let mut values = Vec::with_capacity(2 * rows.len());
            for &i in &rows {
                values.extend([X[i], Y[i]]);
            }
            for (j, &(i, k)) in missing.iter().enumerate() {
                let pos = rows.iter().position(|&r| r == i).unwrap();
                values[2 * pos + k] = u[j];
            }
            let data = DenseData::new(rows.len(), 2, values).unwrap();
            let nw = NormalWishart::new(Arc::new(data), h.clone()).unwrap();
            let all: Vec<usize> = (0..rows.len()).collect();
            nw.ln_marginal(&nw.stat_of(&all))
        };
        let c = [
            h.xi()[missing.first().map_or(0, |m| m.1)],
            h.xi()[missing.last().map_or(0, |m| m.1)],
        ];
        let w = [1.5, 1.5];
        let nw_part = integrate(missing.len(), c, w, m, &f);
        *entry = nw_part + b_only.ln_marginal(&b_only.stat_of(&rows));
    }
    out
}

fn exact() -> ExactPosterior {
    let table = reference_table(400);
    ExactPosterior::from_subset_table(6, &table, dp_ln_eppf(6, 1.0).unwrap()).unwrap()
}

#[test]
fn the_quadrature_reference_is_converged() {
    let a = reference_table(200);
    let b = reference_table(400);
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    assert!(
        worst < 1e-8,
        "quadrature changes by {worst} nats from 200 to 400 nodes"
    );
}

/// The kernel's closed-form density of a new row's observed coordinates (the margin of the
/// cluster's Student-t predictive) is the complete-row marginal integrated over the missing
/// coordinate.
#[test]
fn observed_coordinates_predictive_is_the_integrated_marginal() {
    let k = kernel();
    let complete = [0usize, 2, 3, 5];
    let s = k.stat_of(&complete);
    let h = hyper();
    let b_only = Mixed::with_priors(
        TableData::new(vec![column("b", ColumnType::Binary, &B)]).unwrap(),
        other_priors(),
    )
    .unwrap();
    let b_new = TableData::new(vec![column("b", ColumnType::Binary, &[1.0])]).unwrap();
    let b_part = b_only
        .ln_predictive_new(&b_new, 0, &b_only.stat_of(&complete))
        .unwrap();
    for (x, y) in [(0.7, NAN), (NAN, -0.3), (2.5, NAN)] {
        // A second, complete row: a table has no column without an observed entry.
        let new = TableData::new(vec![
            column("x", ColumnType::Real, &[x, 0.0]),
            column("b", ColumnType::Binary, &[1.0, 1.0]),
            column("y", ColumnType::Real, &[y, 0.0]),
        ])
        .unwrap();
        let closed = k.ln_predictive_new(&new, 0, &s).unwrap() - b_part;
        let f = |u: &[f64]| {
            let mut values = Vec::new();
            for &i in &complete {
                values.extend([X[i], Y[i]]);
            }
            values.extend(if x.is_nan() { [u[0], y] } else { [x, u[0]] });
            let nw = NormalWishart::new(Arc::new(DenseData::new(5, 2, values).unwrap()), h.clone())
                .unwrap();
            nw.ln_marginal(&nw.stat_of(&[0, 1, 2, 3, 4]))
        };
        let nw = NormalWishart::new(
            Arc::new(
                DenseData::new(4, 2, complete.iter().flat_map(|&i| [X[i], Y[i]]).collect())
                    .unwrap(),
            ),
            h.clone(),
        )
        .unwrap();
        let base = nw.ln_marginal(&nw.stat_of(&[0, 1, 2, 3]));
        let quad = integrate(1, [0.0; 2], [1.5; 2], 400, &f) - base;
        assert!(
            (closed - quad).abs() < 1e-9,
            "({x}, {y}): closed form {closed}, quadrature {quad}"
        );
    }
}

const SWEEPS: usize = 4_000;

fn tv_of(kernel: &Mixed, kind: SamplerKind, seed: u64) -> nrmm::exact::ChainTv {
    let prior = Prior::Dp(Dp::new(1.0).unwrap());
    let post = exact();
    let settings = SamplerSettings::new(kind);
    let tv = chains_tv(
        kernel,
        &prior,
        &post,
        &|| settings.schedule::<Mixed>(false, &prior).unwrap(),
        SWEEPS,
        seed,
    );
    println!(
        "{}: N_eff {:.0} TV {:.4} E[TV] {:.4} ratio {:.2}",
        kind.name(),
        tv.n_eff,
        tv.tv,
        tv.expected_tv,
        tv.ratio_to_floor()
    );
    tv
}

/// Every collapsed sampler, the tree-guided one and the exact sub-cluster sampler, with the
/// missing coordinates redrawn inside the sweep, within twice the noise floor.
#[test]
fn every_sampler_targets_the_posterior_given_the_observed_entries() {
    let k = kernel();
    assert!(k.has_latent());
    let mut failures = Vec::new();
    for (i, kind) in [
        SamplerKind::Gibbs,
        SamplerKind::JainNeal,
        SamplerKind::Sams,
        SamplerKind::Tgmcmc,
        SamplerKind::Subcluster,
    ]
    .into_iter()
    .enumerate()
    {
        let tv = tv_of(&k, kind, 3_200 + i as u64);
        if tv.tv.is_nan() || tv.tv > 2.0 * tv.expected_tv {
            failures.push(format!(
                "{}: TV {} E[TV] {}",
                kind.name(),
                tv.tv,
                tv.expected_tv
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The check has power: the model that fills each missing coordinate with its column's mean
/// and never redraws it is far above the floor.
#[test]
fn mean_filled_coordinates_fail_the_check() {
    let k = mean_filled_kernel();
    assert!(!k.has_latent());
    let tv = tv_of(&k, SamplerKind::Gibbs, 3_300);
    assert!(
        tv.tv > 3.0 * tv.expected_tv,
        "mean filling: TV {} E[TV] {}",
        tv.tv,
        tv.expected_tv
    );
}

/// The kernel's identities with the block: a predictive is a ratio of marginals, a pair
/// marginal the union's, and statistics after adds, removes and merges the batch ones.
#[test]
fn block_statistics_obey_the_kernel_identities() {
    let k = kernel();
    let s = k.stat_of(&[0, 2, 4]);
    for i in [1, 3, 5] {
        let with = k.stat_of(&[0, 2, 4, i]);
        let pred = k.ln_predictive(i, &s);
        let ratio = k.ln_marginal(&with) - k.ln_marginal(&s);
        assert!(
            (pred - ratio).abs() < 1e-10,
            "point {i}: {pred} against {ratio}"
        );
    }
    let a = k.stat_of(&[0, 1]);
    let b = k.stat_of(&[3, 4, 5]);
    let union = k.ln_marginal(&k.stat_of(&[0, 1, 3, 4, 5]));
    assert!((k.ln_marginal_pair(&a, &b) - union).abs() < 1e-10);
    let mut m = a.clone();
    k.merge(&mut m, &b);
    k.remove(&mut m, 4);
    k.add(&mut m, 2);
    let batch = k.ln_marginal(&k.stat_of(&[0, 1, 2, 3, 5]));
    assert!((k.ln_marginal(&m) - batch).abs() < 1e-10);
}

/// A chain with the missing coordinates redrawn, checkpointed every 7 sweeps and resumed from
/// the checkpoint's JSON (which carries their values), continues as the chain that only took
/// the checkpoints, for a collapsed and the sub-cluster sampler.
#[test]
fn resumed_chains_continue_with_the_drawn_coordinates() {
    let k = kernel();
    let prior = Prior::Dp(Dp::new(1.0).unwrap());
    for kind in [
        SamplerKind::Sams,
        SamplerKind::Subcluster,
        SamplerKind::Tgmcmc,
    ] {
        let settings = SamplerSettings::new(kind);
        crate::support::checkpoint::assert_resumes_are_the_straight_run(
            &k,
            &prior,
            41,
            || settings.schedule::<Mixed>(false, &prior).unwrap(),
            kind.name(),
        );
    }
    // The checkpoint holds one value per missing real coordinate.
    let mut chain = nrmm::run::Chain::new(
        &k,
        nrmm::sampler::State {
            partition: nrmm::partition::Partition::single(&k),
            prior: prior.clone(),
        },
        nrmm::rng::SeedPlan::new(5).chain(0),
        SamplerSettings::new(SamplerKind::Gibbs)
            .schedule::<Mixed>(false, &prior)
            .unwrap(),
    );
    chain.sweep().unwrap();
    let latent = chain.checkpoint().unwrap().latent;
    assert_eq!(latent.len(), 2);
    assert!(latent.iter().all(|v| v.is_finite()));
    assert_ne!(latent, k.latent(), "the sweep redrew them");
}

/// A table of `n` rows: two real columns with correlation `rho` within each of two groups, a
/// binary column, every seventh row missing one real entry.
fn correlated_table(n: usize, rho: f64) -> TableData {
    let mut rng = nrmm::rng::SeedPlan::new(77).chain(0);
    let (mut x, mut y, mut b) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let g = (i % 2) as f64;
        let u: f64 = rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
        let v: f64 = rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
        x.push(if i % 7 == 3 { NAN } else { 5.0 * g + u });
        y.push(if i % 7 == 5 {
            NAN
        } else {
            -5.0 * g + rho * u + (1.0 - rho * rho).sqrt() * v
        });
        b.push(if nrmm::rng::uniform_open01(&mut rng) < 0.5 {
            0.0
        } else {
            1.0
        });
    }
    TableData::new(vec![
        column("x", ColumnType::Real, &x),
        column("b", ColumnType::Binary, &b),
        column("y", ColumnType::Real, &y),
    ])
    .unwrap()
}

/// The pilot chooses the full block for strongly correlated real columns and keeps them
/// independent for uncorrelated ones, and records the choice and its margin in the model.
#[test]
fn the_pilot_chooses_the_block_by_evidence() {
    use nrmm::model::{Model, ModelSpec, RealColumns};
    use nrmm::run::pilot::{settle, Settled};
    for (rho, want) in [(0.95, RealColumns::Full), (0.0, RealColumns::Independent)] {
        let model = Model::build(
            &ModelSpec::default(),
            nrmm::data::Dataset::Table(correlated_table(120, rho)),
        )
        .unwrap();
        assert!(nrmm::run::pilot::is_due(&model));
        let Settled::Scaled(m) = settle(&model, 3, None).unwrap() else {
            panic!("the pilot settles the choice");
        };
        assert_eq!(m.spec.mixed_real, Some(want), "rho {rho}");
        let made = m.spec.mixed_real_choice.expect("the margin is recorded");
        assert_eq!(made.rows, 120 - 120 / 7 - (120 + 1) / 7);
        println!("rho {rho}: the block {} nats above", made.full_by);
        assert!(
            !nrmm::run::pilot::is_due(&m),
            "a settled model asks for no pilot"
        );
    }
}
