//! Sampled partitions against the exact posterior: TV distances and the expected TV of a
//! perfect sampler (MATH §7.1, "Checks" and "Error bars").

use nrmm::exact::{dp_ln_eppf, EmpiricalPartitions, ExactPosterior, SampleComparison};
use nrmm::rng::SeedPlan;

/// `ln m(X_S)` of 1-D data `x_i ~ N(μ, σ²)`, `μ ~ N(μ0, τ²)`, for every subset by bitmask:
/// `-k/2 ln(2πσ²) - ½ ln(1 + kτ²/σ²) - SS/(2σ²) - k(x̄ - μ0)² / (2(σ² + kτ²))`.
fn gaussian_subset_table(x: &[f64], sigma: f64, mu0: f64, tau: f64) -> Vec<f64> {
    let (s2, t2) = (sigma * sigma, tau * tau);
    (0..1usize << x.len())
        .map(|mask| {
            let members: Vec<f64> = (0..x.len())
                .filter(|&i| mask >> i & 1 == 1)
                .map(|i| x[i])
                .collect();
            if members.is_empty() {
                return 0.0;
            }
            let k = members.len() as f64;
            let mean = members.iter().sum::<f64>() / k;
            let ss: f64 = members.iter().map(|v| (v - mean).powi(2)).sum();
            -0.5 * k * (2.0 * std::f64::consts::PI * s2).ln()
                - 0.5 * (1.0 + k * t2 / s2).ln()
                - ss / (2.0 * s2)
                - k * (mean - mu0).powi(2) / (2.0 * (s2 + k * t2))
        })
        .collect()
}

/// A diffuse posterior over the 203 partitions of 6 points (two loose groups and a point
/// between them, in the spirit of MATH §5.3 data set B), DP with α = 1.
fn diffuse_posterior(x: &[f64]) -> ExactPosterior {
    let table = gaussian_subset_table(x, 0.3, 0.5, 1.0);
    ExactPosterior::from_subset_table(x.len(), &table, dp_ln_eppf(x.len(), 1.0).unwrap()).unwrap()
}

const DATA6: [f64; 6] = [0.0, 0.1, -0.07, 1.0, 1.12, 0.55];

#[test]
fn the_exact_distribution_is_at_distance_zero_from_itself() {
    let post = diffuse_posterior(&DATA6);
    assert_eq!(post.tv_distance_to(&post).unwrap(), 0.0);
    // Counts proportional to the probabilities, to 12 digits.
    let scale = 1e12;
    let counts = (0..post.n_partitions()).map(|k| {
        (
            post.rgs_at(k).unwrap(),
            (post.probabilities()[k] * scale).round() as u64,
        )
    });
    let empirical = EmpiricalPartitions::from_counts(6, counts).unwrap();
    // Each rounded count is off by at most ½ in 1e12: TV ≤ B_6 / 1e12 plus rounding of sums.
    assert!(post.tv_distance(&empirical).unwrap() < 203.0 / scale);
    assert!(post.tv_k(&empirical).unwrap() < 203.0 / scale);
    let other = ExactPosterior::prior(6, dp_ln_eppf(6, 1.0).unwrap()).unwrap();
    assert!(post.tv_distance_to(&other).unwrap() > 0.1);
}

#[test]
fn the_fixture_is_diffuse() {
    let post = diffuse_posterior(&DATA6);
    let heavy = post.probabilities().iter().filter(|&&p| p >= 1e-3).count();
    assert!(heavy >= 40, "only {heavy} partitions have mass ≥ 1e-3");
    assert!(post.top(1)[0].1 < 0.3);
}

#[test]
fn iid_draws_are_within_the_noise_of_a_perfect_sampler() {
    let post = diffuse_posterior(&DATA6);
    let n_draws = 10_000;
    let mut rng = SeedPlan::new(2024).chain(0);
    let sampler = post.sampler();
    // Non-canonical labels (block b of the RGS written as 10 - b) exercise relabelling.
    let draws: Vec<Vec<i64>> = (0..n_draws)
        .map(|_| {
            sampler
                .draw(&mut rng)
                .labels()
                .iter()
                .map(|&a| 10 - a as i64)
                .collect()
        })
        .collect();
    let empirical = EmpiricalPartitions::from_label_vectors(6, &draws).unwrap();
    assert_eq!(empirical.total(), n_draws as u64);
    let tv = post.tv_distance(&empirical).unwrap();

    let exact = post.expected_tv_exact(n_draws as u64).unwrap();
    let mc = post
        .expected_tv_monte_carlo(n_draws, 100, &mut SeedPlan::new(7).chain(1))
        .unwrap();
    // The spread of one sample's TV around its mean, from the Monte Carlo replicates.
    let sd = mc.std_error * (mc.replicates as f64).sqrt();
    println!(
        "N = {n_draws}: TV {tv:.5}; perfect sampler: exact {exact:.5}, Monte Carlo {:.5} ± {:.5}, \
         large-N {:.5}; one-sample sd {sd:.5}",
        mc.mean,
        mc.std_error,
        post.expected_tv_approx(n_draws as f64).unwrap()
    );
    assert!(
        (tv - exact).abs() < 5.0 * sd,
        "TV {tv:.5}, expected {exact:.5} ± {sd:.5}"
    );

    // TV over K with its own large-N noise level.
    let pk = post.k_probabilities();
    let expected_tv_k: f64 = pk
        .iter()
        .map(|p| (p * (1.0 - p) / (2.0 * std::f64::consts::PI * n_draws as f64)).sqrt())
        .sum();
    let tv_k = post.tv_k(&empirical).unwrap();
    assert!(
        tv_k < 5.0 * expected_tv_k,
        "TV_K {tv_k} vs expected {expected_tv_k}"
    );

    let report: SampleComparison = post.compare(&empirical, n_draws as f64).unwrap();
    assert_eq!(report.tv, tv);
    assert_eq!(report.tv_k, tv_k);
    assert_eq!(report.n_samples, n_draws as u64);
    assert!(report.n_distinct <= 203);
    assert_eq!(report.k_exact, pk);
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("\"expected_tv\""), "{json}");
}

#[test]
fn a_biased_sample_is_detected() {
    // Draws from the prior instead of the posterior: far outside the noise.
    let post = diffuse_posterior(&DATA6);
    let prior = ExactPosterior::prior(6, dp_ln_eppf(6, 1.0).unwrap()).unwrap();
    let sampler = prior.sampler();
    let mut rng = SeedPlan::new(3).chain(0);
    let mut empirical = EmpiricalPartitions::new(6).unwrap();
    for _ in 0..10_000 {
        empirical.add(sampler.draw(&mut rng), 1).unwrap();
    }
    let expected = post.expected_tv_exact(10_000).unwrap();
    assert!(post.tv_distance(&empirical).unwrap() > 10.0 * expected);
}

#[test]
fn expected_tv_estimates_agree() {
    let post = diffuse_posterior(&DATA6);
    // Small N: the exact (De Moivre) value against Monte Carlo, within 4 standard errors;
    // the large-N approximation is not meant to hold here.
    for n_draws in [5usize, 50] {
        let exact = post.expected_tv_exact(n_draws as u64).unwrap();
        let mc = post
            .expected_tv_monte_carlo(n_draws, 4000, &mut SeedPlan::new(11).chain(n_draws as u64))
            .unwrap();
        println!(
            "N = {n_draws}: exact {exact:.6}, Monte Carlo {:.6} ± {:.6}, large-N {:.6}",
            mc.mean,
            mc.std_error,
            post.expected_tv_approx(n_draws as f64).unwrap()
        );
        assert!(
            (mc.mean - exact).abs() < 4.0 * mc.std_error,
            "N = {n_draws}: exact {exact}, MC {} ± {}",
            mc.mean,
            mc.std_error
        );
    }
    // Large N: all three agree. Every partition here has N p ≫ 1 for N = 1e8.
    let min_p = post.probabilities().iter().copied().fold(1.0, f64::min);
    let big = 100_000_000u64;
    assert!(big as f64 * min_p > 100.0, "min p = {min_p}");
    let exact = post.expected_tv_exact(big).unwrap();
    let approx = post.expected_tv_approx(big as f64).unwrap();
    println!("N = {big}: exact {exact:.4e}, large-N {approx:.4e}");
    assert!(
        (approx - exact).abs() < 1e-3 * exact,
        "approx {approx} vs exact {exact}"
    );
    // Moderately large N for Monte Carlo, against the approximation.
    let n_draws = 20_000;
    let approx = post.expected_tv_approx(n_draws as f64).unwrap();
    let mc = post
        .expected_tv_monte_carlo(n_draws, 40, &mut SeedPlan::new(12).chain(0))
        .unwrap();
    let exact = post.expected_tv_exact(n_draws as u64).unwrap();
    println!(
        "N = {n_draws}: exact {exact:.6}, Monte Carlo {:.6} ± {:.6}, large-N {approx:.6}",
        mc.mean, mc.std_error
    );
    assert!(
        (mc.mean - exact).abs() < 4.0 * mc.std_error,
        "MC {mc:?} vs exact {exact}"
    );
    assert!(
        (approx - exact).abs() < 0.05 * exact,
        "approx {approx} vs exact {exact}"
    );
    // MATH §7.1 bound: E[TV] ≤ sqrt(B / (2π N)).
    assert!(approx <= (203.0 / (2.0 * std::f64::consts::PI * n_draws as f64)).sqrt());
}

#[test]
fn bad_comparisons_are_errors() {
    let post = diffuse_posterior(&DATA6);
    let empty = EmpiricalPartitions::new(6).unwrap();
    assert!(matches!(
        post.tv_distance(&empty),
        Err(nrmm::Error::Empty(_))
    ));
    let mut other_n = EmpiricalPartitions::new(5).unwrap();
    other_n.push_labels(&[0, 0, 1, 1, 2]).unwrap();
    assert!(post.tv_distance(&other_n).is_err());
    assert!(post.tv_k(&other_n).is_err());
    assert!(post.expected_tv_approx(0.0).is_err());
    assert!(post.expected_tv_approx(f64::NAN).is_err());
    assert!(post.expected_tv_exact(0).is_err());
    let mut rng = SeedPlan::new(1).chain(0);
    assert!(post.expected_tv_monte_carlo(10, 1, &mut rng).is_err());
    assert!(post.expected_tv_monte_carlo(0, 10, &mut rng).is_err());
    let small = ExactPosterior::prior(3, |_: &[usize]| 0.0).unwrap();
    assert!(post.tv_distance_to(&small).is_err());
}
