//! The hyperparameter updates of the Gibbs-type priors target their conditionals given the
//! partition (as `prior_hyper_invariance` checks the DP's and NGGP's): with the block sizes
//! fixed, N starting values are drawn exactly from the conditional (inverse CDF of the
//! numerically integrated density on a fine grid, the density written here from the EPPF
//! independently of the library), one update is applied to each, and the results are
//! KS-tested against the same CDF at level 0.001 (fixed seeds, no retries); and a long thinned
//! chain of updates from a far start reaches the conditional. Covered: Pitman-Yor's `θ` and
//! `σ`, the MFM's `γ`.

use crate::prior_support;

use nrmm::math::{ln_gamma, log_sum_exp};
use nrmm::prior::{BetaPrior, GammaPrior, KPrior, Mfm, NrmPrior, PitmanYor, PyHyperPriors};
use nrmm::rng::{uniform_open01, SeedPlan};
use prior_support::{ks_critical_001, ks_statistic, GridCdf};

const N: usize = 4000;
const SIZES: [usize; 5] = [5, 2, 2, 1, 1];

fn assert_ks(name: &str, draws: &[f64], cdf: &GridCdf) {
    let ks = ks_statistic(draws, |x| cdf.cdf(x));
    let crit = ks_critical_001(draws.len());
    assert!(ks < crit, "{name}: KS {ks:.4} >= critical {crit:.4}");
}

/// `ln p(Π | θ, σ)` of Pitman-Yor as plain products: `Π_{i<K}(θ + iσ) / Π_{j=1}^{n-1}(θ + j)
/// · Π_c Π_{j=1}^{n_c - 1}(j - σ)`.
fn py_eppf(theta: f64, sigma: f64, sizes: &[usize]) -> f64 {
    let n: usize = sizes.iter().sum();
    let k = sizes.len();
    let num: f64 = (1..k).map(|i| (theta + i as f64 * sigma).ln()).sum();
    let den: f64 = (1..n).map(|j| (theta + j as f64).ln()).sum();
    let blocks: f64 = sizes
        .iter()
        .map(|&s| (1..s).map(|j| (j as f64 - sigma).ln()).sum::<f64>())
        .sum();
    num - den + blocks
}

/// `ln p(Π | γ)` of the MFM by the plain series of `V_n(t)` (400 terms of `ln Γ`).
fn mfm_eppf(gamma: f64, kp: KPrior, sizes: &[usize]) -> f64 {
    let n: usize = sizes.iter().sum();
    let t = sizes.len();
    let terms: Vec<f64> = (t..t + 400)
        .map(|k| {
            let kf = k as f64;
            kp.ln_pmf(k) + ln_gamma(kf + 1.0)
                - ln_gamma((k - t) as f64 + 1.0)
                - (ln_gamma(gamma * kf + n as f64) - ln_gamma(gamma * kf))
        })
        .collect();
    let blocks: f64 = sizes
        .iter()
        .map(|&s| ln_gamma(gamma + s as f64) - ln_gamma(gamma))
        .sum();
    log_sum_exp(&terms) + blocks
}

/// One update from each of N exact starts; the results.
fn one_update_each(
    cdf: &GridCdf,
    seed: u64,
    mut update: impl FnMut(f64, &mut nrmm::rng::NrmmRng) -> f64,
) -> Vec<f64> {
    let mut rng = SeedPlan::new(seed).chain(0);
    (0..N)
        .map(|_| {
            let x0 = cdf.inverse(uniform_open01(&mut rng));
            update(x0, &mut rng)
        })
        .collect()
}

#[test]
fn pitman_yor_theta_update_targets_its_conditional() {
    let sigma = 0.3;
    let prior = GammaPrior::new(2.0, 0.5).unwrap();
    // In s = ln θ, Jacobian e^s.
    let cdf = GridCdf::from_ln_density(-40.0, 6.5, 200_000, |s| {
        let t = s.exp();
        prior.ln_pdf(t) + s + py_eppf(t, sigma, &SIZES)
    });
    let hyper = PyHyperPriors {
        theta: Some(prior),
        sigma: None,
    };
    let mut p = PitmanYor::new(1.0, sigma, hyper).unwrap();
    let out = one_update_each(&cdf, 331, |s0, rng| {
        p.set_theta(s0.exp()).unwrap();
        p.resample_hyper(&SIZES, rng).unwrap();
        assert_eq!(p.sigma(), sigma);
        p.theta().ln()
    });
    assert_ks("PY theta", &out, &cdf);
}

#[test]
fn pitman_yor_sigma_update_targets_its_conditional() {
    let theta = 0.8;
    let prior = BetaPrior::new(1.5, 1.5, 0.01, 0.99).unwrap();
    let cdf = GridCdf::from_ln_density_on(0.01, 0.99, 200_000, |s| {
        prior.ln_pdf(s) + py_eppf(theta, s, &SIZES)
    });
    let hyper = PyHyperPriors {
        theta: None,
        sigma: Some(prior),
    };
    let mut p = PitmanYor::new(theta, 0.5, hyper).unwrap();
    let out = one_update_each(&cdf, 332, |s0, rng| {
        p.set_sigma(s0).unwrap();
        p.resample_hyper(&SIZES, rng).unwrap();
        assert_eq!(p.theta(), theta);
        p.sigma()
    });
    assert_ks("PY sigma", &out, &cdf);
}

#[test]
fn pitman_yor_joint_chain_from_a_far_start_reaches_the_theta_marginal() {
    // θ and σ both resampled: the chain's θ marginal against the θ marginal of
    // p(θ, σ | Π), integrated over σ on a grid.
    let theta_prior = GammaPrior::new(1.0, 1.0).unwrap();
    let sigma_prior = BetaPrior::new(1.5, 1.5, 0.01, 0.99).unwrap();
    let sigmas: Vec<f64> = (0..2000)
        .map(|i| 0.01 + 0.98 * (i as f64 + 0.5) / 2000.0)
        .collect();
    let cdf = GridCdf::from_ln_density(-40.0, 6.0, 20_000, |s| {
        let t = s.exp();
        let inner: Vec<f64> = sigmas
            .iter()
            .map(|&g| sigma_prior.ln_pdf(g) + py_eppf(t, g, &SIZES))
            .collect();
        theta_prior.ln_pdf(t) + s + log_sum_exp(&inner)
    });
    let hyper = PyHyperPriors {
        theta: Some(theta_prior),
        sigma: Some(sigma_prior),
    };
    let mut p = PitmanYor::new(50.0, 0.9, hyper).unwrap();
    let mut rng = SeedPlan::new(333).chain(0);
    for _ in 0..200 {
        p.resample_hyper(&SIZES, &mut rng).unwrap();
    }
    let draws: Vec<f64> = (0..N)
        .map(|_| {
            for _ in 0..10 {
                p.resample_hyper(&SIZES, &mut rng).unwrap();
            }
            p.theta().ln()
        })
        .collect();
    assert_ks("PY theta chain", &draws, &cdf);
}

#[test]
fn mfm_gamma_update_targets_its_conditional() {
    for (kp, seed) in [
        (KPrior::Poisson { lambda: 1.0 }, 334),
        (KPrior::Geometric { p: 0.2 }, 335),
    ] {
        let prior = GammaPrior::new(1.0, 1.0).unwrap();
        let cdf = GridCdf::from_ln_density(-40.0, 5.0, 20_000, |s| {
            let g = s.exp();
            prior.ln_pdf(g) + s + mfm_eppf(g, kp, &SIZES)
        });
        let mut m = Mfm::new(1.0, kp, Some(prior)).unwrap();
        let out = one_update_each(&cdf, seed, |s0, rng| {
            m.set_gamma(s0.exp()).unwrap();
            m.resample_hyper(&SIZES, rng).unwrap();
            m.gamma().ln()
        });
        assert_ks("MFM gamma", &out, &cdf);
    }
}
