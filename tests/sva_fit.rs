//! SVA and SVA-PM (MATH §6.5) end to end: Lin's synthetic set recovered in one pass, pruning
//! and merging on constructed inputs, determinism, held-out predictive density, the
//! Multinomial-Dirichlet kernel on generated documents, every error path, and the ARI on the
//! paper's toy set (skipped with a message when `../shared/data/toy` is absent); the
//! Pitman-Yor and MFM urns ([`SvaPrior`]) on Lin's set, and Pitman-Yor with `σ = 0` as the
//! DP.

use crate::support;

use std::sync::Arc;

use nrmm::data::generate::{bag_of_words, lin2013_like, partition_equal, DocLengths};
use nrmm::data::load::{load_dense, load_labels};
use nrmm::data::{DenseData, SparseCounts};
use nrmm::diagnostics::{adjusted_rand_index, normalized_mutual_information};
use nrmm::kernel::{ConjugateKernel, MultinomialDirichlet, NormalWishart, NwHyper};
use nrmm::prior::{KPrior, Mfm, PitmanYor};
use nrmm::rng::SeedPlan;
use nrmm::sva::{fit, fit_order, fit_shuffled, PruneMerge, SvaConfig, SvaPrior};
use nrmm::Error;

/// The Normal-Wishart prior for unit-covariance clusters with broadly spread means:
/// `ξ = 0`, `ν = d + 10` and `Ψ = (ν - d - 1) I`, so that `E[Σ] = I` with the weight of ten
/// extra observations ("known-ish" unit covariance), and `r = 1e-4`, so that the prior
/// covariance of a mean, `Σ / r ≈ 100² I`, is the base `N(0, 100² I)` of the centres.
fn unit_cov_broad_mean(data: DenseData) -> NormalWishart {
    let d = data.d();
    let nu = d as f64 + 10.0;
    let mut psi = vec![0.0; d * d];
    for i in 0..d {
        psi[i * d + i] = nu - d as f64 - 1.0;
    }
    NormalWishart::new(
        Arc::new(data),
        NwHyper::new(vec![0.0; d], psi, 1e-4, nu).unwrap(),
    )
    .unwrap()
}

fn rows(data: &DenseData, range: std::ops::Range<usize>) -> DenseData {
    DenseData::from_rows(&range.map(|i| data.row(i).to_vec()).collect::<Vec<_>>()).unwrap()
}

/// SVA-PM finds the 9 components of Lin's synthetic set in one pass, in data order and in a
/// shuffled order, with an ARI near 1; the held-out predictive density is that of the true
/// mixture of 9 well-separated unit Gaussians, `-ln(2π) - 1 - ln 9 ≈ -5.035` per point (to
/// within 0.05 nats, about four standard errors of the mean over 2000 points).
#[test]
fn sva_pm_recovers_lin_synthetic_set_in_one_pass() {
    let (data, truth) = lin2013_like(2013);
    let k = unit_cov_broad_mean(rows(&data, 0..8000));
    let config = SvaConfig::with_prune_merge(1.0);
    for (name, result) in [
        ("data order", fit(&k, &config)),
        (
            "shuffled",
            fit_shuffled(&k, &config, &mut SeedPlan::new(5).chain(0)),
        ),
    ] {
        let f = result.unwrap();
        let ari = adjusted_rand_index(f.labels(), &truth[..8000]).unwrap();
        let nmi = normalized_mutual_information(f.labels(), &truth[..8000]).unwrap();
        println!(
            "Lin set, {name}: K = {}, ARI = {ari:.4}, NMI = {nmi:.4}, events {:?}",
            f.n_components(),
            f.events()
        );
        assert_eq!(f.n_components(), 9, "{name}: weights {:?}", f.weights());
        assert!(ari > 0.99, "{name}: ARI {ari}");
        let w: f64 = f.weights().iter().sum();
        assert!((w - 8000.0).abs() < 1.0, "{name}: total weight {w}");
        let held = f.ln_predictive_new(&rows(&data, 8000..10_000)).unwrap();
        let mean = held.iter().sum::<f64>() / held.len() as f64;
        let expect = -(2.0 * std::f64::consts::PI).ln() - 1.0 - 9f64.ln();
        println!("  held-out mean ln p = {mean:.4} (true mixture: {expect:.4})");
        assert!((mean - expect).abs() < 0.05, "{name}: held-out {mean}");
    }
}

/// Plain SVA with a tiny ε splits a single tight cluster among several components that take
/// the same points with nearly equal responsibilities; SVA-PM merges them back into one, and
/// the merged component has the total weight.
#[test]
fn merging_collapses_duplicate_components() {
    let mut rng = SeedPlan::new(3).chain(0);
    let labels = vec![0; 400];
    let sampler = nrmm::data::generate::NormalWishartSampler::new(
        &[0.0, 0.0],
        &[1.0, 0.0, 0.0, 1.0],
        1.0,
        30.0,
    )
    .unwrap();
    let (data, _) = nrmm::data::generate::gaussian_mixture(&labels, &sampler, &mut rng).unwrap();
    let k = unit_cov_broad_mean(data);
    let loose = SvaConfig {
        epsilon: 1e-9,
        ..SvaConfig::new(50.0)
    };
    let plain = fit(&k, &loose).unwrap();
    let merged = fit(
        &k,
        &SvaConfig {
            prune_merge: Some(PruneMerge {
                prune_threshold: 0.0,
                merge_threshold: 0.2,
                check_interval: 10,
            }),
            ..loose.clone()
        },
    )
    .unwrap();
    println!(
        "plain K = {} {:?}, merged K = {} {:?}",
        plain.n_components(),
        plain.events(),
        merged.n_components(),
        merged.events()
    );
    assert!(plain.n_components() >= 2, "{:?}", plain.weights());
    assert!(merged.events().merged >= 1);
    assert_eq!(merged.events().pruned, 0);
    assert!(merged.n_components() < plain.n_components());
    let w: f64 = merged.weights().iter().sum();
    assert!((w - 400.0).abs() < 1e-6, "{w}");
    assert!(merged.labels().iter().all(|&l| l < merged.n_components()));
}

/// Three far outliers after 300 points of one cluster each open a component of weight about
/// 1; pruning at a 1% share removes them at the final check and relabels the outliers to the
/// surviving cluster; without pruning they stay.
#[test]
fn pruning_removes_small_components_and_relabels_their_points() {
    let mut pts: Vec<Vec<f64>> = Vec::new();
    let mut rng = SeedPlan::new(9).chain(0);
    for _ in 0..300 {
        use rand_distr::{Distribution, StandardNormal};
        let a: f64 = StandardNormal.sample(&mut rng);
        let b: f64 = StandardNormal.sample(&mut rng);
        pts.push(vec![a, b]);
    }
    pts.push(vec![400.0, 0.0]);
    pts.push(vec![0.0, -400.0]);
    pts.push(vec![-300.0, 300.0]);
    let k = unit_cov_broad_mean(DenseData::from_rows(&pts).unwrap());
    let plain = fit(&k, &SvaConfig::new(1.0)).unwrap();
    assert_eq!(plain.n_components(), 4, "{:?}", plain.weights());
    let pruned = fit(
        &k,
        &SvaConfig {
            prune_merge: Some(PruneMerge {
                prune_threshold: 0.01,
                merge_threshold: 0.0,
                check_interval: 1000,
            }),
            ..SvaConfig::new(1.0)
        },
    )
    .unwrap();
    assert_eq!(pruned.n_components(), 1, "{:?}", pruned.weights());
    assert_eq!(pruned.events().pruned, 3);
    assert_eq!(pruned.events().merged, 0);
    assert!(pruned.labels().iter().all(|&l| l == 0));
    let w = pruned.weights()[0];
    assert!((w - 300.0).abs() < 1e-6, "{w}");
}

/// A component created since the last check is not pruned during the pass: the outliers
/// arrive right before a check and survive it, to be pruned only at the final check.
#[test]
fn young_components_survive_the_check_after_their_birth() {
    let mut pts: Vec<Vec<f64>> = (0..99)
        .map(|i| vec![(i % 7) as f64 * 0.3, (i % 5) as f64 * 0.3])
        .collect();
    pts.push(vec![500.0, 500.0]);
    let k = unit_cov_broad_mean(DenseData::from_rows(&pts).unwrap());
    let config = SvaConfig {
        prune_merge: Some(PruneMerge {
            prune_threshold: 0.05,
            merge_threshold: 0.0,
            check_interval: 100,
        }),
        ..SvaConfig::new(1.0)
    };
    let f = fit(&k, &config).unwrap();
    // The check after point 100 spares the outlier's component (born at point 100); the
    // final check prunes it.
    assert_eq!(f.events().checks, 2);
    assert_eq!(f.events().pruned, 1);
    assert_eq!(f.n_components(), 1);
}

/// Equal seeds give bit-identical fits; the given order is the identity order.
#[test]
fn fits_are_deterministic() {
    let (data, _) = lin2013_like(7);
    let k = unit_cov_broad_mean(rows(&data, 0..2000));
    let config = SvaConfig::with_prune_merge(1.0);
    let a = fit_shuffled(&k, &config, &mut SeedPlan::new(11).chain(0)).unwrap();
    let b = fit_shuffled(&k, &config, &mut SeedPlan::new(11).chain(0)).unwrap();
    assert_eq!(a.weights(), b.weights());
    assert_eq!(a.labels(), b.labels());
    let order: Vec<usize> = (0..2000).collect();
    let c = fit(&k, &config).unwrap();
    let d = fit_order(&k, &config, &order).unwrap();
    assert_eq!(c.weights(), d.weights());
    assert_eq!(c.labels(), d.labels());
}

/// The hard labels, the relabelling by maximum posterior responsibility and the partition
/// for a sampler agree on a well-separated set; `assign_new` labels new points by the same
/// rule.
#[test]
fn labels_relabel_and_partition_agree() {
    let (data, truth) = lin2013_like(1);
    let k = unit_cov_broad_mean(rows(&data, 0..3000));
    let f = fit(&k, &SvaConfig::with_prune_merge(1.0)).unwrap();
    let relabelled = f.relabel().unwrap();
    assert_eq!(adjusted_rand_index(&relabelled, f.labels()).unwrap(), 1.0);
    let part = f.to_partition().unwrap();
    assert_eq!(part.n_clusters(), f.n_components());
    let new = f.assign_new(&rows(&data, 3000..3500)).unwrap();
    assert!(adjusted_rand_index(&new, &truth[3000..3500]).unwrap() > 0.99);
    assert_eq!(f.assign(&[0, 1]).unwrap(), relabelled[..2].to_vec());
    let train = f.ln_predictive_points(&[0, 1, 2]).unwrap();
    assert!(train.iter().all(|v| v.is_finite()));
    assert_eq!(f.posteriors().len(), f.n_components());
}

/// Documents from 5 well-separated topics: SVA-PM on the Multinomial-Dirichlet kernel
/// recovers them.
#[test]
fn sva_pm_clusters_documents() {
    let mut rng = SeedPlan::new(21).chain(0);
    let truth = partition_equal(500, 5).unwrap();
    let (docs, _) = bag_of_words(
        &truth,
        300,
        0.05,
        DocLengths::Poisson { mean: 60.0 },
        &mut rng,
    )
    .unwrap();
    let k = MultinomialDirichlet::new(Arc::new(docs), 0.1).unwrap();
    let f = fit_shuffled(&k, &SvaConfig::with_prune_merge(1.0), &mut rng).unwrap();
    let ari = adjusted_rand_index(f.labels(), &truth).unwrap();
    println!("documents: K = {}, ARI = {ari:.4}", f.n_components());
    assert!(ari > 0.95, "ARI {ari}, weights {:?}", f.weights());
    let held = SparseCounts::from_rows(300, &[vec![(0, 3), (7, 1)], vec![(299, 2)]]).unwrap();
    assert!(f
        .ln_predictive_new(&held)
        .unwrap()
        .iter()
        .all(|v| v.is_finite()));
    let outside = SparseCounts::from_rows(400, &[vec![(350, 1)]]).unwrap();
    let e = f.ln_predictive_new(&outside).unwrap_err().to_string();
    assert!(e.contains("vocabulary"), "{e}");
}

/// Every impossible request is a clear error, never a panic.
#[test]
fn bad_inputs_are_errors() {
    let (data, _) = lin2013_like(3);
    let k = unit_cov_broad_mean(rows(&data, 0..50));
    let e = fit(&k, &SvaConfig::new(-1.0)).unwrap_err().to_string();
    assert!(e.contains("alpha"), "{e}");
    let e = fit_order(&k, &SvaConfig::new(1.0), &[0, 1, 2]).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch(_)), "{e}");
    let mut dup: Vec<usize> = (0..50).collect();
    dup[7] = 3;
    let e = fit_order(&k, &SvaConfig::new(1.0), &dup)
        .unwrap_err()
        .to_string();
    assert!(e.contains("entry 8") && e.contains("exactly once"), "{e}");
    let mut far: Vec<usize> = (0..50).collect();
    far[0] = 50;
    assert!(fit_order(&k, &SvaConfig::new(1.0), &far).is_err());
    let f = fit(&k, &SvaConfig::new(1.0)).unwrap();
    let e = f.assign(&[50]).unwrap_err().to_string();
    assert!(e.contains("point index"), "{e}");
    assert!(f.ln_predictive_points(&[99]).is_err());
    let wrong_dim = DenseData::from_rows(&[vec![1.0, 2.0, 3.0]]).unwrap();
    let e = f.ln_predictive_new(&wrong_dim).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch(_)), "{e}");
    assert!(f.assign_new(&wrong_dim).is_err());
    assert_eq!(k.n_points(), 50);
}

/// The paper's toy set (13 clusters of 100) with the reference empirical-Bayes
/// hyperparameters: SVA-PM's ARI against the true labels, in a shuffled order, at α = 1 and
/// α = 10 (measured 0.48 and 0.80 with seed 1). With this prior the first points of a
/// component predict a covariance wider than the gaps between neighbouring ring clusters, so
/// a single pass joins some neighbours; a larger α opens components sooner. The bounds are
/// regression guards well below the measured values.
#[test]
fn toy_set_ari() {
    let Some(dir) = support::data_dir("toy") else {
        return;
    };
    let data = load_dense(dir.join("X.txt")).unwrap();
    let truth = load_labels(dir.join("gt_labels.txt"), data.n()).unwrap();
    let k = support::nw_reference(data);
    for (alpha, bound) in [(1.0, 0.35), (10.0, 0.7)] {
        let config = SvaConfig::with_prune_merge(alpha);
        let f = fit_shuffled(&k, &config, &mut SeedPlan::new(1).chain(0)).unwrap();
        let ari = adjusted_rand_index(f.labels(), &truth).unwrap();
        println!(
            "toy, alpha {alpha}: K = {}, ARI = {ari:.4}, events {:?}",
            f.n_components(),
            f.events()
        );
        assert!(
            ari > bound,
            "alpha {alpha}: ARI {ari}, K {}",
            f.n_components()
        );
    }
}

/// The Lin-like generator: 10,000 points in 2-D, labels 0..9 all used, the same set for the
/// same seed and another for another seed; within each component the points have about unit
/// variance per coordinate (within 5 standard errors of a variance over ~1,100 points).
#[test]
fn lin_generator_shape_and_spread() {
    let (a, la) = lin2013_like(4);
    let (b, lb) = lin2013_like(4);
    let (c, _) = lin2013_like(5);
    assert_eq!((a.n(), a.d()), (10_000, 2));
    assert_eq!(a.values(), b.values());
    assert_eq!(la, lb);
    assert_ne!(a.values(), c.values());
    for comp in 0..9 {
        let members: Vec<usize> = (0..a.n()).filter(|&i| la[i] == comp).collect();
        assert!(members.len() > 900, "component {comp}: {}", members.len());
        for j in 0..2 {
            let m = members.iter().map(|&i| a.row(i)[j]).sum::<f64>() / members.len() as f64;
            let v = members
                .iter()
                .map(|&i| (a.row(i)[j] - m).powi(2))
                .sum::<f64>()
                / (members.len() - 1) as f64;
            let se = (2.0 / (members.len() - 1) as f64).sqrt();
            assert!(
                (v - 1.0).abs() < 5.0 * se,
                "component {comp}, coordinate {j}: {v}"
            );
        }
    }
}

/// SVA-PM by the Pitman-Yor urn (a negative and a positive `θ`) and the MFM's (Poisson and
/// geometric `K - 1`) finds the 9 components of Lin's synthetic set as the DP's does, the
/// total soft weight the number of points, the held-out density that of the true mixture
/// (the bounds of `sva_pm_recovers_lin_synthetic_set_in_one_pass`).
#[test]
fn gibbs_type_urns_recover_lin_synthetic_set() {
    let (data, truth) = lin2013_like(2013);
    let k = unit_cov_broad_mean(rows(&data, 0..8000));
    let rules = [
        SvaPrior::PitmanYor(PitmanYor::fixed(-0.2, 0.4).unwrap()),
        SvaPrior::PitmanYor(PitmanYor::fixed(2.0, 0.25).unwrap()),
        SvaPrior::Mfm(Mfm::new(1.0, KPrior::Poisson { lambda: 8.0 }, None).unwrap()),
        SvaPrior::Mfm(Mfm::new(0.5, KPrior::Geometric { p: 0.1 }, None).unwrap()),
    ];
    for rule in rules {
        let config = SvaConfig {
            prior: rule.clone(),
            ..SvaConfig::with_prune_merge(1.0)
        };
        let f = fit_shuffled(&k, &config, &mut SeedPlan::new(5).chain(0)).unwrap();
        let ari = adjusted_rand_index(f.labels(), &truth[..8000]).unwrap();
        println!(
            "Lin set, {rule:?}: K = {}, ARI = {ari:.4}",
            f.n_components()
        );
        assert_eq!(f.n_components(), 9, "{rule:?}: weights {:?}", f.weights());
        assert!(ari > 0.99, "{rule:?}: ARI {ari}");
        let w: f64 = f.weights().iter().sum();
        assert!((w - 8000.0).abs() < 1.0, "{rule:?}: total weight {w}");
        let held = f.ln_predictive_new(&rows(&data, 8000..10_000)).unwrap();
        let mean = held.iter().sum::<f64>() / held.len() as f64;
        let expect = -(2.0 * std::f64::consts::PI).ln() - 1.0 - 9f64.ln();
        assert!((mean - expect).abs() < 0.05, "{rule:?}: held-out {mean}");
    }
}

/// The Pitman-Yor urn with `σ = 0` is the DP's with `α = θ`: the same components, weights
/// and labels, plain and pruned, on Lin's set and on documents.
#[test]
fn pitman_yor_without_discount_is_the_dp() {
    let (data, _) = lin2013_like(7);
    let k = unit_cov_broad_mean(rows(&data, 0..3000));
    for theta in [0.3, 1.0, 5.0] {
        for base in [SvaConfig::new(theta), SvaConfig::with_prune_merge(theta)] {
            let py = SvaConfig {
                prior: SvaPrior::PitmanYor(PitmanYor::fixed(theta, 0.0).unwrap()),
                ..base.clone()
            };
            let order: Vec<usize> = (0..3000).rev().collect();
            let (a, b) = (
                fit_order(&k, &base, &order).unwrap(),
                fit_order(&k, &py, &order).unwrap(),
            );
            assert_eq!(a.labels(), b.labels(), "theta {theta}");
            assert_eq!(a.weights(), b.weights(), "theta {theta}");
        }
    }
}

/// The rules refuse nothing that the DP's takes, and a configuration of another prior
/// validates without a DP concentration (a Pitman-Yor `θ ≤ 0` is the prior's, not `alpha`).
#[test]
fn a_gibbs_type_rule_needs_no_concentration() {
    let config = SvaConfig {
        prior: SvaPrior::PitmanYor(PitmanYor::fixed(-0.2, 0.4).unwrap()),
        ..SvaConfig::new(-0.2)
    };
    config.validate().unwrap();
    let e = SvaConfig::new(-0.2).validate().unwrap_err().to_string();
    assert!(e.contains("alpha"), "{e}");
}
