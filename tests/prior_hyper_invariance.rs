//! Each hyperparameter update targets its conditional given the partition (MATH §1.7, §7.1
//! "Checks"). With the block sizes fixed, N starting values are drawn exactly from the
//! conditional (inverse CDF of the numerically integrated density on a fine grid), one update
//! is applied to each, and the results are KS-tested against the same CDF at level 0.001
//! (fixed seeds, no retries). Covered: u, α and σ of the NGGP; α of the DP under both
//! schemes; a long thinned chain for u from a far start; and the σ marginal of the full
//! reference-prior update (u, α, σ) against the hyperparameter-integrated prior.

use crate::prior_support;

use nrmm::math::{ln_gamma, softplus};
use nrmm::prior::{AlphaUpdate, BetaPrior, Dp, GammaPrior, Nggp, NggpHyperPriors, NrmPrior};
use nrmm::rng::{uniform_open01, NrmmRng, SeedPlan};
use prior_support::{ks_critical_001, ks_statistic, GridCdf};

const N: usize = 4000;
const SIZES: [usize; 4] = [4, 2, 1, 1];

fn assert_ks(name: &str, draws: &[f64], cdf: &GridCdf) {
    let ks = ks_statistic(draws, |x| cdf.cdf(x));
    let crit = ks_critical_001(draws.len());
    assert!(ks < crit, "{name}: KS {ks:.4} >= critical {crit:.4}");
}

/// Draws `N` exact starts from `cdf`, applies `update` to each, returns the results and the
/// fraction that moved.
fn one_update_each(
    cdf: &GridCdf,
    seed: u64,
    update: impl FnMut(f64, &mut NrmmRng) -> f64,
) -> (Vec<f64>, f64) {
    one_update_each_n(cdf, seed, N, update)
}

fn one_update_each_n(
    cdf: &GridCdf,
    seed: u64,
    count: usize,
    mut update: impl FnMut(f64, &mut NrmmRng) -> f64,
) -> (Vec<f64>, f64) {
    let mut rng = SeedPlan::new(seed).chain(0);
    let mut moved = 0;
    let out = (0..count)
        .map(|_| {
            let x0 = cdf.inverse(uniform_open01(&mut rng));
            let x1 = update(x0, &mut rng);
            if (x1 - x0).abs() > 1e-12 * x0.abs().max(1.0) {
                moved += 1;
            }
            x1
        })
        .collect();
    (out, moved as f64 / count as f64)
}

/// `ln p(u | Π, α, σ)` in x = ln u, written from MATH §1.7(a) independently of the library:
/// `n x - α (1 + e^x)^σ - (n - Kσ) ln(1 + e^x)`.
fn ln_u_target(x: f64, n: f64, k: f64, alpha: f64, sigma: f64) -> f64 {
    n * x - alpha * (1.0 + x.exp()).powf(sigma) - (n - k * sigma) * (1.0 + x.exp()).ln()
}

#[test]
fn nggp_u_update_targets_its_conditional() {
    let (alpha, sigma) = (1.3, 0.4);
    let (n, k) = (8.0, 4.0);
    let cdf =
        GridCdf::from_ln_density(-30.0, 30.0, 300_000, |x| ln_u_target(x, n, k, alpha, sigma));
    let hyper = NggpHyperPriors {
        sample_u: true,
        ..NggpHyperPriors::fixed()
    };
    let mut p = Nggp::new(alpha, sigma, 1.0, hyper).unwrap();
    let (out, moved) = one_update_each(&cdf, 201, |x0, rng| {
        p.set_ln_u(x0).unwrap();
        p.resample_hyper(&SIZES, rng).unwrap();
        assert_eq!((p.alpha(), p.sigma()), (alpha, sigma));
        p.ln_u()
    });
    assert_ks("u", &out, &cdf);
    assert!(moved > 0.99, "{moved}");
}

#[test]
fn nggp_u_chain_from_a_far_start_reaches_its_conditional() {
    let (alpha, sigma) = (0.6, 0.7);
    let sizes = [5, 3, 3, 2, 1, 1, 1];
    let (n, k) = (16.0, 7.0);
    let cdf =
        GridCdf::from_ln_density(-30.0, 30.0, 300_000, |x| ln_u_target(x, n, k, alpha, sigma));
    let hyper = NggpHyperPriors {
        sample_u: true,
        ..NggpHyperPriors::fixed()
    };
    // Start twelve units of ln u above the bulk.
    let mut p = Nggp::new(alpha, sigma, (cdf.mean() + 12.0).exp(), hyper).unwrap();
    let mut rng = SeedPlan::new(202).chain(0);
    let thin = 10;
    for _ in 0..200 {
        p.resample_hyper(&sizes, &mut rng).unwrap();
    }
    let draws: Vec<f64> = (0..N)
        .map(|_| {
            for _ in 0..thin {
                p.resample_hyper(&sizes, &mut rng).unwrap();
            }
            p.ln_u()
        })
        .collect();
    assert_ks("u chain", &draws, &cdf);
}

#[test]
fn nggp_alpha_update_targets_its_conditional() {
    let (sigma, u): (f64, f64) = (0.4, 2.0);
    let prior = GammaPrior::new(2.0, 0.5).unwrap();
    let k = SIZES.len() as f64;
    // p(α | ·) ∝ p(α) α^K e^{-α((1+u)^σ - 1)}, in s = ln α (Jacobian e^s).
    let psi = (1.0 + u).powf(sigma) - 1.0;
    let cdf = GridCdf::from_ln_density(-40.0, 7.0, 200_000, |s| {
        let a = s.exp();
        prior.ln_pdf(a) + k * s - a * psi + s
    });
    let hyper = NggpHyperPriors {
        alpha: Some(prior),
        ..NggpHyperPriors::fixed()
    };
    let mut p = Nggp::new(1.0, sigma, u, hyper).unwrap();
    let (out, moved) = one_update_each(&cdf, 203, |s0, rng| {
        p.set_alpha(s0.exp()).unwrap();
        p.resample_hyper(&SIZES, rng).unwrap();
        assert_eq!((p.sigma(), p.u()), (sigma, u));
        p.alpha().ln()
    });
    assert_ks("nggp alpha", &out, &cdf);
    assert!(moved > 0.99, "{moved}");
}

/// `ln p(σ | Π, u, α)` from MATH §1.7(c), written out in full (all blocks, `ln Γ(1-σ)` terms
/// included) and independently of the library.
fn ln_sigma_target(s: f64, prior: &BetaPrior, sizes: &[usize], alpha: f64, u: f64) -> f64 {
    let k = sizes.len() as f64;
    let mut v = (prior.a() - 1.0) * s.ln() + (prior.b() - 1.0) * (1.0 - s).ln() + k * s.ln()
        - alpha * (1.0 + u).powf(s);
    for &c in sizes {
        v += ln_gamma(c as f64 - s) - ln_gamma(1.0 - s) - (c as f64 - s) * (1.0 + u).ln();
    }
    v
}

#[test]
fn nggp_sigma_update_targets_its_conditional() {
    let (alpha, u) = (1.3, 2.0);
    let prior = BetaPrior::new(2.0, 3.0, 0.05, 0.95).unwrap();
    let cdf = GridCdf::from_ln_density_on(prior.lo(), prior.hi(), 50_000, |s| {
        ln_sigma_target(s, &prior, &SIZES, alpha, u)
    });
    let hyper = NggpHyperPriors {
        sigma: Some(prior),
        ..NggpHyperPriors::fixed()
    };
    let mut p = Nggp::new(alpha, 0.5, u, hyper).unwrap();
    let (out, moved) = one_update_each(&cdf, 204, |s0, rng| {
        p.set_sigma(s0).unwrap();
        p.resample_hyper(&SIZES, rng).unwrap();
        assert_eq!((p.alpha(), p.u()), (alpha, u));
        p.sigma()
    });
    assert!(out.iter().all(|&s| prior.contains(s)));
    assert_ks("sigma", &out, &cdf);
    assert!(moved > 0.99, "{moved}");
}

#[test]
fn nggp_reference_updates_leave_the_sigma_marginal_invariant() {
    // Under α ~ Gamma(1, 1), u and α integrate in closed form (MATH §7.1):
    // p(σ | Π) ∝ p(σ) σ^K Γ(σ)/Γ(n+σ) Π_c Γ(n_c - σ)/Γ(1 - σ). A thinned chain of the full
    // update (u, then α, then σ) must reproduce it.
    let prior = BetaPrior::reference();
    let sizes = [3usize, 2, 1, 1];
    let (n, k) = (7.0, 4.0);
    let cdf = GridCdf::from_ln_density_on(prior.lo(), prior.hi(), 50_000, |s| {
        let mut v = prior.ln_pdf(s) + k * s.ln() + ln_gamma(s) - ln_gamma(n + s);
        for &c in &sizes {
            v += ln_gamma(c as f64 - s) - ln_gamma(1.0 - s);
        }
        v
    });
    let mut p = Nggp::new(1.0, 0.5, 1.0, NggpHyperPriors::reference()).unwrap();
    let mut rng = SeedPlan::new(205).chain(0);
    for _ in 0..500 {
        p.resample_hyper(&sizes, &mut rng).unwrap();
    }
    let draws: Vec<f64> = (0..3000)
        .map(|_| {
            for _ in 0..20 {
                p.resample_hyper(&sizes, &mut rng).unwrap();
            }
            p.sigma()
        })
        .collect();
    assert_ks("sigma marginal", &draws, &cdf);
}

/// `ln p(α | Π)` of the DP in s = ln α: `ln p(α) + K s + ln Γ(α) - ln Γ(α + n) + s`.
fn dp_alpha_cdf(prior: &GammaPrior, n: usize, k: usize) -> GridCdf {
    GridCdf::from_ln_density(-40.0, 7.0, 200_000, |s| {
        let a = s.exp();
        prior.ln_pdf(a) + k as f64 * s + ln_gamma(a) - ln_gamma(a + n as f64) + s
    })
}

fn check_dp_update(update: AlphaUpdate, prior: GammaPrior, sizes: &[usize], seed: u64) {
    let cdf = dp_alpha_cdf(&prior, sizes.iter().sum(), sizes.len());
    let mut dp = Dp::with_alpha_prior(1.0, prior, update).unwrap();
    // The DP updates are O(1): a large sample resolves small errors in the mixture weights.
    let (out, moved) = one_update_each_n(&cdf, seed, 20_000, |s0, rng| {
        dp.set_alpha(s0.exp()).unwrap();
        dp.resample_hyper(sizes, rng).unwrap();
        dp.alpha().ln()
    });
    assert_ks(&format!("dp alpha {update:?}"), &out, &cdf);
    assert!(moved > 0.99, "{moved}");
}

#[test]
fn dp_escobar_west_targets_the_alpha_conditional() {
    // Few points and a = 1 make the mixture weight matter: odds (a+K-1)/(n(b - ln η)).
    let sizes = [2, 1];
    check_dp_update(
        AlphaUpdate::EscobarWest,
        GammaPrior::new(1.0, 1.0).unwrap(),
        &sizes,
        206,
    );
    let sizes = [5, 3, 1, 1, 1, 1];
    check_dp_update(
        AlphaUpdate::EscobarWest,
        GammaPrior::new(2.0, 0.5).unwrap(),
        &sizes,
        216,
    );
}

#[test]
fn dp_u_augmented_targets_the_alpha_conditional() {
    let sizes = [2, 1];
    check_dp_update(
        AlphaUpdate::UAugmented,
        GammaPrior::new(1.0, 1.0).unwrap(),
        &sizes,
        207,
    );
    let sizes = [5, 3, 1, 1, 1, 1];
    check_dp_update(
        AlphaUpdate::UAugmented,
        GammaPrior::new(2.0, 0.5).unwrap(),
        &sizes,
        217,
    );
}

#[test]
fn fixed_hyperparameters_stay_fixed() {
    let mut rng = SeedPlan::new(208).chain(0);
    let mut dp = Dp::new(0.7).unwrap();
    dp.resample_hyper(&SIZES, &mut rng).unwrap();
    assert_eq!(dp.alpha(), 0.7);
    let mut p = Nggp::fixed(1.1, 0.3, 2.0).unwrap();
    p.resample_hyper(&SIZES, &mut rng).unwrap();
    assert_eq!(
        p.hyper_values(),
        vec![("alpha", 1.1), ("sigma", 0.3), ("u", 2.0f64.ln().exp())]
    );
    assert!(p.resample_hyper(&[], &mut rng).is_err());
    assert!(p.resample_hyper(&[2, 0], &mut rng).is_err());
    assert!(dp.resample_hyper(&[], &mut rng).is_err());
}

#[test]
fn u_conditional_of_the_library_matches_the_formula() {
    let p = Nggp::fixed(1.3, 0.4, 1.0).unwrap();
    // The two differ by the constant α (expm1 against the plain power).
    let c = ln_u_target(0.0, 8.0, 4.0, 1.3, 0.4) - p.ln_u_conditional(0.0, 8, 4);
    for x in [-20.0, -3.0, 0.5, 4.0, 30.0] {
        let d = ln_u_target(x, 8.0, 4.0, 1.3, 0.4) - p.ln_u_conditional(x, 8, 4);
        assert!((d - c).abs() < 1e-9 * (1.0 + softplus(x) * 8.0), "x = {x}");
    }
}
