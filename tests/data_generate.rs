//! Synthetic generators: reproducibility by seed, parameter validation, and moments checked
//! against their exact values within a few standard errors (fixed seeds, bounds derived from
//! the number of draws).

use nrmm::data::generate::*;
use nrmm::data::{canonical_labels, SparseCounts};
use nrmm::rng::{NrmmRng, SeedPlan};
use nrmm::Error;

fn rng(seed: u64) -> NrmmRng {
    SeedPlan::new(seed).chain(0)
}

/// Asserts `|observed - expected| < z · se`.
fn assert_within(what: &str, observed: f64, expected: f64, se: f64, z: f64) {
    assert!(
        (observed - expected).abs() < z * se,
        "{what}: observed {observed}, expected {expected} (se {se}, z = {:.2})",
        (observed - expected) / se
    );
}

fn psi3() -> Vec<f64> {
    vec![2.0, 0.3, -0.2, 0.3, 1.0, 0.1, -0.2, 0.1, 0.5]
}

fn invert(m: &[f64], d: usize) -> Vec<f64> {
    let inv = nalgebra::DMatrix::from_row_slice(d, d, m)
        .try_inverse()
        .unwrap();
    (0..d * d).map(|k| inv[(k / d, k % d)]).collect()
}

// ---------------------------------------------------------------------------------------------
// Partitions.

#[test]
fn fixed_k_partitions() {
    let equal = partition_equal(10, 3).unwrap();
    assert_eq!(equal, vec![0, 0, 0, 0, 1, 1, 1, 2, 2, 2]);
    assert_eq!(
        partition_equal(1300, 13).unwrap()[..101]
            .iter()
            .filter(|&&l| l == 0)
            .count(),
        100
    );
    let uniform = partition_uniform(1000, 4, &mut rng(1)).unwrap();
    assert!(uniform.iter().all(|&l| l < 4));
    for c in 0..4 {
        let count = uniform.iter().filter(|&&l| l == c).count() as f64;
        assert_within(
            "uniform cluster size",
            count,
            250.0,
            (1000.0f64 * 0.25 * 0.75).sqrt(),
            4.0,
        );
    }
    for bad in [
        partition_equal(5, 0),
        partition_equal(5, 6),
        partition_equal(0, 1),
    ] {
        assert!(matches!(bad, Err(Error::InvalidParameter { .. })));
    }
    assert!(partition_uniform(3, 4, &mut rng(1)).is_err());
}

#[test]
fn crp_number_of_clusters_matches_its_exact_mean() {
    let (n, draws) = (60usize, 3000usize);
    for (alpha, seed) in [(0.5, 2u64), (3.0, 3)] {
        let exact: f64 = (0..n).map(|i| alpha / (alpha + i as f64)).sum();
        let var: f64 = (0..n)
            .map(|i| alpha * i as f64 / (alpha + i as f64).powi(2))
            .sum();
        let mut r = rng(seed);
        let mut total = 0.0;
        for _ in 0..draws {
            let labels = partition_crp(n, alpha, &mut r).unwrap();
            assert_eq!(canonical_labels(&labels), labels, "labels are canonical");
            total += (labels.iter().max().unwrap() + 1) as f64;
        }
        let se = (var / draws as f64).sqrt();
        assert_within(
            &format!("E[K], alpha = {alpha}"),
            total / draws as f64,
            exact,
            se,
            4.0,
        );
    }
}

#[test]
fn crp_first_pair_coclusters_with_probability_one_over_one_plus_alpha() {
    let (alpha, draws) = (1.5, 8000);
    let mut r = rng(4);
    let together = (0..draws)
        .filter(|_| {
            let l = partition_crp(5, alpha, &mut r).unwrap();
            l[0] == l[1]
        })
        .count() as f64;
    let p = 1.0 / (1.0 + alpha);
    assert_within(
        "P(1 ~ 2)",
        together / draws as f64,
        p,
        (p * (1.0 - p) / draws as f64).sqrt(),
        4.0,
    );
}

#[test]
fn crp_validates_its_parameters() {
    for alpha in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            partition_crp(5, alpha, &mut rng(1)),
            Err(Error::InvalidParameter { .. })
        ));
    }
    assert!(partition_crp(0, 1.0, &mut rng(1)).is_err());
    assert_eq!(partition_crp(1, 1.0, &mut rng(1)).unwrap(), vec![0]);
}

#[test]
fn nggp_generator_validates_before_evaluating_v() {
    for (alpha, sigma) in [(0.0, 0.5), (1.0, 0.0), (1.0, 1.0), (f64::NAN, 0.5)] {
        assert!(matches!(
            partition_nggp(5, alpha, sigma, &mut rng(1)),
            Err(Error::InvalidParameter { .. })
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Normal-Wishart.

#[test]
fn normal_wishart_validates_its_parameters() {
    let xi = [0.0; 3];
    assert!(NormalWishartSampler::new(&xi, &psi3(), 0.1, 5.0).is_ok());
    assert!(NormalWishartSampler::new(&xi, &psi3(), 0.1, 2.01).is_ok());
    let cases = [
        NormalWishartSampler::new(&[], &[], 0.1, 5.0),
        NormalWishartSampler::new(&xi, &psi3()[..8], 0.1, 5.0),
        NormalWishartSampler::new(&xi, &psi3(), 0.0, 5.0),
        NormalWishartSampler::new(&xi, &psi3(), 0.1, 2.0),
        NormalWishartSampler::new(&xi, &psi3(), 0.1, f64::NAN),
        NormalWishartSampler::new(&[f64::NAN, 0.0, 0.0], &psi3(), 0.1, 5.0),
    ];
    for c in cases {
        assert!(matches!(
            c,
            Err(Error::InvalidParameter { .. } | Error::DimensionMismatch(_))
        ));
    }
    let mut asym = psi3();
    asym[1] = 0.4;
    assert!(matches!(
        NormalWishartSampler::new(&xi, &asym, 0.1, 5.0),
        Err(Error::InvalidParameter { ref name, .. }) if name.contains("Psi")
    ));
    assert!(matches!(
        NormalWishartSampler::new(&[0.0, 0.0], &[1.0, 2.0, 2.0, 1.0], 0.1, 5.0),
        Err(Error::NotPositiveDefinite(_))
    ));
}

#[test]
fn wishart_draws_have_mean_nu_psi_inverse() {
    let (d, nu, draws) = (3usize, 6.5, 6000usize);
    let nw = NormalWishartSampler::new(&[0.0; 3], &psi3(), 0.1, nu).unwrap();
    let s = invert(&psi3(), d);
    let mut r = rng(5);
    let mut sum = vec![0.0; d * d];
    for _ in 0..draws {
        let lambda = nw.sample_precision(&mut r);
        for (a, b) in sum.iter_mut().zip(&lambda) {
            *a += b;
        }
        assert_eq!(lambda[1], lambda[3], "symmetric");
    }
    for i in 0..d {
        for j in 0..d {
            let var = nu * (s[i * d + j].powi(2) + s[i * d + i] * s[j * d + j]);
            assert_within(
                &format!("E[Lambda[{i}][{j}]]"),
                sum[i * d + j] / draws as f64,
                nu * s[i * d + j],
                (var / draws as f64).sqrt(),
                4.5,
            );
        }
    }
}

#[test]
fn component_means_are_centred_on_xi_with_their_prior_spread() {
    let (d, nu, r0, draws) = (3usize, 7.0, 0.5, 6000usize);
    let xi = [1.0, -2.0, 0.5];
    let nw = NormalWishartSampler::new(&xi, &psi3(), r0, nu).unwrap();
    let psi = psi3();
    let mut r = rng(6);
    let mut sum = [0.0; 3];
    let mut sum_sq = [0.0; 3];
    for _ in 0..draws {
        let c = nw.sample_component(&mut r);
        for a in 0..d {
            sum[a] += c.mean[a];
            sum_sq[a] += (c.mean[a] - xi[a]).powi(2);
        }
    }
    for a in 0..d {
        // Cov(mu) = E[(r Lambda)^{-1}] = Psi / (r (nu - d - 1)).
        let var = psi[a * d + a] / (r0 * (nu - d as f64 - 1.0));
        assert_within(
            "E[mu]",
            sum[a] / draws as f64,
            xi[a],
            (var / draws as f64).sqrt(),
            4.5,
        );
        // Var(mu) itself: a loose check (the t-like law has heavy tails), 25% at this size.
        let observed = sum_sq[a] / draws as f64;
        assert!(
            (observed / var - 1.0).abs() < 0.25,
            "Var(mu[{a}]) {observed} vs {var}"
        );
    }
}

#[test]
fn points_follow_their_components_gaussian() {
    let (d, n) = (2usize, 5000usize);
    let nw = NormalWishartSampler::new(&[0.0, 0.0], &[1.0, 0.4, 0.4, 0.8], 1.0, 4.0).unwrap();
    let (x, comps) = gaussian_mixture(&vec![0; n], &nw, &mut rng(7)).unwrap();
    assert_eq!(comps.len(), 1);
    let sigma = invert(&comps[0].precision, d);
    let mu = &comps[0].mean;
    let mut mean = [0.0; 2];
    for i in 0..n {
        for (m, v) in mean.iter_mut().zip(x.row(i)) {
            *m += v / n as f64;
        }
    }
    for a in 0..d {
        assert_within(
            "point mean",
            mean[a],
            mu[a],
            (sigma[a * d + a] / n as f64).sqrt(),
            4.5,
        );
    }
    for a in 0..d {
        for b in 0..d {
            let cov: f64 = (0..n)
                .map(|i| (x.row(i)[a] - mu[a]) * (x.row(i)[b] - mu[b]))
                .sum::<f64>()
                / n as f64;
            let var = (sigma[a * d + b].powi(2) + sigma[a * d + a] * sigma[b * d + b]) / n as f64;
            assert_within("point covariance", cov, sigma[a * d + b], var.sqrt(), 4.5);
        }
    }
}

#[test]
fn dp_gaussian_data_set_has_consistent_shapes_and_is_reproducible() {
    let nw = NormalWishartSampler::new(&[0.0; 3], &psi3(), 0.1, 6.0).unwrap();
    let draw = |seed| {
        let mut r = rng(seed);
        let labels = partition_crp(200, 1.0, &mut r).unwrap();
        let (x, comps) = gaussian_mixture(&labels, &nw, &mut r).unwrap();
        (labels, x, comps)
    };
    let (labels, x, comps) = draw(8);
    let k = labels.iter().max().unwrap() + 1;
    assert_eq!((x.n(), x.d(), comps.len()), (200, 3, k));
    for c in &comps {
        assert_eq!((c.mean.len(), c.precision.len()), (3, 9));
    }
    assert!(x.values().iter().all(|v| v.is_finite()));
    assert_eq!(draw(8), (labels, x.clone(), comps));
    assert_ne!(draw(9).1, x);
    assert!(matches!(
        gaussian_mixture(&[0, 5, 1], &nw, &mut rng(1)),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(gaussian_mixture(&[], &nw, &mut rng(1)).is_err());
}

// ---------------------------------------------------------------------------------------------
// Bags of words.

fn row_total(x: &SparseCounts, i: usize) -> u64 {
    x.row(i).1.iter().map(|&c| u64::from(c)).sum()
}

#[test]
fn bag_of_words_respects_lengths_and_topics() {
    let labels = partition_equal(40, 2).unwrap();
    let lengths: Vec<usize> = (0..40).map(|i| 500 + i).collect();
    let (x, topics) =
        bag_of_words(&labels, 30, 0.5, DocLengths::Given(&lengths), &mut rng(10)).unwrap();
    assert_eq!((x.n(), x.vocab(), topics.len()), (40, 30, 2));
    for (i, &len) in lengths.iter().enumerate() {
        assert_eq!(row_total(&x, i), len as u64);
    }
    for t in &topics {
        assert!((t.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
    // Pooled word frequencies of cluster 0 against its topic, word by word.
    let mut pooled = [0.0; 30];
    let mut total = 0.0;
    for i in (0..40).filter(|&i| labels[i] == 0) {
        let (ids, counts) = x.row(i);
        for (&w, &c) in ids.iter().zip(counts) {
            pooled[w as usize] += f64::from(c);
            total += f64::from(c);
        }
    }
    for (w, &p) in topics[0].iter().enumerate() {
        let se = (p * (1.0 - p) / total).sqrt().max(1e-9);
        assert_within(
            &format!("frequency of word {w}"),
            pooled[w] / total,
            p,
            se,
            4.5,
        );
    }
}

#[test]
fn poisson_lengths_are_at_least_one_with_the_given_mean() {
    let n = 3000;
    let labels = vec![0; n];
    let mean = 4.0;
    let (x, _) =
        bag_of_words(&labels, 50, 1.0, DocLengths::Poisson { mean }, &mut rng(11)).unwrap();
    let lens: Vec<u64> = (0..n).map(|i| row_total(&x, i)).collect();
    assert!(lens.iter().all(|&l| l >= 1));
    let avg = lens.iter().sum::<u64>() as f64 / n as f64;
    // Length - 1 ~ Poisson(mean - 1), variance mean - 1.
    assert_within(
        "mean length",
        avg,
        mean,
        ((mean - 1.0) / n as f64).sqrt(),
        4.0,
    );
    let (ones, _) = bag_of_words(
        &labels[..5],
        5,
        1.0,
        DocLengths::Poisson { mean: 1.0 },
        &mut rng(1),
    )
    .unwrap();
    assert!((0..5).all(|i| row_total(&ones, i) == 1));
}

#[test]
fn bag_of_words_validates_and_reproduces() {
    let labels = [0, 1, 0];
    let ok = |seed| {
        bag_of_words(
            &labels,
            20,
            0.1,
            DocLengths::Poisson { mean: 8.0 },
            &mut rng(seed),
        )
        .unwrap()
    };
    assert_eq!(ok(3), ok(3));
    assert_ne!(ok(3).0, ok(4).0);
    let len = DocLengths::Poisson { mean: 5.0 };
    let r = &mut rng(1);
    assert!(bag_of_words(&labels, 0, 0.1, len, r).is_err());
    assert!(bag_of_words(&labels, 10, 0.0, len, r).is_err());
    assert!(bag_of_words(&labels, 10, f64::NAN, len, r).is_err());
    assert!(bag_of_words(&labels, 10, 0.1, DocLengths::Poisson { mean: 0.5 }, r).is_err());
    assert!(bag_of_words(&labels, 10, 0.1, DocLengths::Given(&[1, 2]), r).is_err());
    assert!(bag_of_words(&labels, 10, 0.1, DocLengths::Given(&[1, 0, 2]), r).is_err());
    assert!(bag_of_words(&[0, 3, 0], 10, 0.1, len, r).is_err());
}

// ---------------------------------------------------------------------------------------------
// Built-ins.

#[test]
fn toy_like_is_a_seeded_13_cluster_ring() {
    let (x, labels) = toy_like(42);
    assert_eq!((x.n(), x.d()), (1300, 2));
    assert_eq!(labels, partition_equal(1300, 13).unwrap());
    assert_eq!(toy_like(42), (x.clone(), labels.clone()));
    assert_ne!(toy_like(43).0, x);
    for c in 0..13 {
        let idx: Vec<usize> = (0..1300).filter(|&i| labels[i] == c).collect();
        let m: Vec<f64> = (0..2)
            .map(|a| idx.iter().map(|&i| x.row(i)[a]).sum::<f64>() / idx.len() as f64)
            .collect();
        let radius = m[0].hypot(m[1]);
        let expected = if c == 0 { 0.0 } else { 1.25 };
        // Cluster sd is at most 0.14, so the mean of 100 points is within 0.06 at 4.3 sd.
        assert!(
            (radius - expected).abs() < 0.06,
            "cluster {c} centred at radius {radius}"
        );
    }
}

#[test]
fn data_sets_a_and_b_are_verbatim() {
    let a = data_set_a();
    assert_eq!(
        a.values(),
        &[0.0, 0.0, 0.3, -0.2, -0.2, 0.4, 2.0, 2.1, 2.4, 1.8, 1.1, 1.0, 2.2, 2.6]
    );
    let b = data_set_b();
    assert_eq!((b.n(), b.d()), (7, 2));
    assert_eq!(b.row(5), &[0.55, 0.5]);
    assert_eq!(b.row(6), &[1.05, 1.2]);
    assert_eq!(b.row(1), &[0.1, -0.08]);
}

/// The law of the number of blocks of `draws` partitions of `n` points against `law` (entry `k`
/// the probability of `k` blocks), by Pearson's X² over the values with expected count at
/// least 5 (the rest pooled): below the 0.999 quantile of its χ² law, by the Wilson-Hilferty
/// approximation.
fn assert_k_law(what: &str, draw: &mut dyn FnMut() -> Vec<usize>, law: &[f64], draws: usize) {
    let mut counts = vec![0usize; law.len()];
    for _ in 0..draws {
        let labels = draw();
        let k = labels.iter().max().map_or(0, |m| m + 1);
        // Labels are 0..K in order of first appearance: every block is used.
        assert_eq!(canonical_labels(&labels), labels, "{what}");
        counts[k] += 1;
    }
    let (mut x2, mut cells, mut pooled_obs, mut pooled_exp) = (0.0, 0usize, 0.0, 0.0);
    for (k, &p) in law.iter().enumerate() {
        let e = p * draws as f64;
        let o = counts[k] as f64;
        if e >= 5.0 {
            x2 += (o - e).powi(2) / e;
            cells += 1;
        } else {
            pooled_obs += o;
            pooled_exp += e;
        }
    }
    if pooled_exp > 0.0 {
        x2 += (pooled_obs - pooled_exp).powi(2) / pooled_exp.max(1e-300);
        cells += 1;
    }
    let df = (cells - 1) as f64;
    let z = 3.09; // the 0.999 normal quantile
    let q = df * (1.0 - 2.0 / (9.0 * df) + z * (2.0 / (9.0 * df)).sqrt()).powi(3);
    assert!(
        x2 < q,
        "{what}: X² = {x2:.2} on {df} df, 0.999 quantile {q:.2}"
    );
}

#[test]
fn pitman_yor_partitions_follow_the_prior_law_of_k() {
    use nrmm::prior::PitmanYor;
    for &(theta, sigma, n) in &[(1.0, 0.5, 8usize), (-0.3, 0.4, 10), (4.0, 0.0, 6)] {
        let law = PitmanYor::fixed(theta, sigma).unwrap().k_distribution(n);
        let mut r = rng(41);
        assert_k_law(
            &format!("PY({theta}, {sigma}), n {n}"),
            &mut || partition_pitman_yor(n, theta, sigma, &mut r).unwrap(),
            &law,
            40_000,
        );
    }
}

#[test]
fn mfm_partitions_follow_the_prior_law_of_k() {
    use nrmm::prior::{KPrior, Mfm};
    for (gamma, k_prior, n) in [
        (1.0, KPrior::Poisson { lambda: 1.0 }, 8usize),
        (0.3, KPrior::Geometric { p: 0.2 }, 10),
        (2.5, KPrior::Poisson { lambda: 5.0 }, 6),
    ] {
        let law = Mfm::new(gamma, k_prior, None).unwrap().k_distribution(n);
        let mut r = rng(43);
        assert_k_law(
            &format!("MFM({gamma}, {k_prior:?}), n {n}"),
            &mut || partition_mfm(n, gamma, &k_prior, &mut r).unwrap(),
            &law,
            40_000,
        );
    }
}

#[test]
fn gibbs_type_generators_validate_their_parameters() {
    use nrmm::prior::KPrior;
    let mut r = rng(1);
    assert!(partition_pitman_yor(5, -0.5, 0.5, &mut r).is_err());
    assert!(partition_pitman_yor(5, 1.0, 1.0, &mut r).is_err());
    assert!(partition_pitman_yor(0, 1.0, 0.5, &mut r).is_err());
    let poisson = KPrior::Poisson { lambda: 1.0 };
    assert!(partition_mfm(5, 0.0, &poisson, &mut r).is_err());
    assert!(partition_mfm(5, 1.0, &KPrior::Geometric { p: 1.5 }, &mut r).is_err());
    assert_eq!(partition_mfm(1, 1.0, &poisson, &mut r).unwrap(), vec![0]);
}
