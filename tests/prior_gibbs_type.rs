//! The Gibbs-type priors (Pitman-Yor, MFM) are probability laws on set partitions: their
//! EPPFs sum to 1 over all set partitions of n ≤ 8; their laws of the number of clusters
//! equal independent closed forms (the urn schemes that generate them); the tabulated priors
//! of the exact posterior equal the EPPFs; with random hyperparameters (Pitman-Yor's `θ`,
//! `σ` or both, the MFM's `γ`) the integrated priors sum to 1 and equal the EPPFs integrated
//! against the hyperpriors by a plain midpoint rule; and the samplers' join and new-cluster
//! weights are ratios of the EPPF.

use crate::prior_support;

use nrmm::math::log_sum_exp;
use nrmm::prior::{
    BetaPrior, GammaPrior, KPrior, Mfm, NrmPrior, PartitionPrior, PartitionPriorSpec, PitmanYor,
};
use prior_support::integer_partitions;

/// `ln Σ_Π p(Π)` over the set partitions of `n` with `k` blocks (`None`: all).
fn ln_total(n: usize, k: Option<usize>, ln_p: impl Fn(&[usize]) -> f64) -> f64 {
    let terms: Vec<f64> = integer_partitions(n)
        .iter()
        .filter(|(sizes, _)| k.is_none_or(|k| sizes.len() == k))
        .map(|(sizes, ln_count)| ln_count + ln_p(sizes))
        .collect();
    log_sum_exp(&terms)
}

fn py_cases() -> Vec<PitmanYor> {
    [
        (1.0, 0.5),
        (-0.3, 0.5),
        (-0.01, 0.02),
        (0.1, 0.9),
        (25.0, 0.25),
        (0.7, 0.0),
    ]
    .iter()
    .map(|&(t, s)| PitmanYor::fixed(t, s).unwrap())
    .collect()
}

fn mfm_cases() -> Vec<Mfm> {
    let mut v = Vec::new();
    for kp in [
        KPrior::Poisson { lambda: 1.0 },
        KPrior::Poisson { lambda: 7.5 },
        KPrior::Geometric { p: 0.1 },
        KPrior::Geometric { p: 0.8 },
    ] {
        for g in [0.05, 1.0, 6.0] {
            v.push(Mfm::new(g, kp, None).unwrap());
        }
    }
    v
}

#[test]
fn pitman_yor_eppf_sums_to_one() {
    for py in py_cases() {
        for n in 1..=8 {
            let s = ln_total(n, None, |sizes| py.ln_eppf(sizes).unwrap());
            assert!(s.abs() < 1e-11, "{py:?}, n {n}: ln sum {s}");
        }
    }
}

#[test]
fn mfm_eppf_sums_to_one() {
    for m in mfm_cases() {
        for n in 1..=8 {
            let s = ln_total(n, None, |sizes| m.ln_eppf(sizes).unwrap());
            assert!(s.abs() < 1e-11, "{m:?}, n {n}: ln sum {s}");
        }
    }
}

/// `P(K_n = k)` of the Pitman-Yor process by its urn: the (m+1)-th point opens a cluster with
/// probability `(θ + kσ) / (θ + m)` given `k` clusters among `m` points.
fn py_urn(theta: f64, sigma: f64, n: usize) -> Vec<f64> {
    let mut p = vec![0.0; n + 1];
    p[1] = 1.0;
    for m in 1..n {
        let mut next = vec![0.0; n + 1];
        for k in 1..=m {
            let open = (theta + k as f64 * sigma) / (theta + m as f64);
            next[k + 1] += p[k] * open;
            next[k] += p[k] * (1.0 - open);
        }
        p = next;
    }
    p
}

/// `P(K_n = t)` of the MFM by its urn given `K` (Pólya urn with `K` colours of weight `γ`:
/// the (m+1)-th point takes an unused colour with probability `(K - t)γ / (m + Kγ)`), mixed
/// over `p_K` up to where its tail is below 1e-17.
fn mfm_urn(gamma: f64, kp: KPrior, n: usize) -> Vec<f64> {
    let mut total = vec![0.0; n + 1];
    let mut mass = 0.0;
    let mut big_k = 1;
    while mass < 1.0 - 1e-17 && big_k < 5000 {
        let w = kp.ln_pmf(big_k).exp();
        mass += w;
        let kf = big_k as f64;
        let mut p = vec![0.0; n + 1];
        p[1] = 1.0;
        for m in 1..n {
            let mut next = vec![0.0; n + 1];
            for t in 1..=m.min(big_k) {
                let open = (kf - t as f64) * gamma / (m as f64 + kf * gamma);
                if t < n {
                    next[t + 1] += p[t] * open;
                }
                next[t] += p[t] * (1.0 - open);
            }
            p = next;
        }
        for t in 1..=n {
            total[t] += w * p[t];
        }
        big_k += 1;
    }
    total
}

#[test]
fn pitman_yor_k_law_matches_its_urn_and_the_eppf() {
    for py in py_cases() {
        for n in [1, 2, 5, 8] {
            let law = py.k_distribution(n);
            let urn = py_urn(py.theta(), py.sigma(), n);
            for k in 1..=n {
                assert!(
                    (law[k] - urn[k]).abs() < 1e-12,
                    "{py:?} n {n} k {k}: {} vs urn {}",
                    law[k],
                    urn[k]
                );
                let enumerated = ln_total(n, Some(k), |s| py.ln_eppf(s).unwrap()).exp();
                assert!((law[k] - enumerated).abs() < 1e-12);
            }
        }
        // Far beyond enumeration, the urn still agrees.
        let (law, urn) = (py.k_distribution(300), py_urn(py.theta(), py.sigma(), 300));
        let worst = (1..=300)
            .map(|k| (law[k] - urn[k]).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-10, "{py:?} n 300: {worst}");
    }
}

#[test]
fn mfm_k_law_matches_its_urn_and_the_eppf() {
    for m in mfm_cases() {
        for n in [1, 2, 5, 8, 60] {
            let law = m.k_distribution(n);
            let urn = mfm_urn(m.gamma(), m.k_prior(), n);
            for t in 1..=n {
                assert!(
                    (law[t] - urn[t]).abs() < 1e-11,
                    "{m:?} n {n} t {t}: {} vs urn {}",
                    law[t],
                    urn[t]
                );
                if n <= 8 {
                    let enumerated = ln_total(n, Some(t), |s| m.ln_eppf(s).unwrap()).exp();
                    assert!((law[t] - enumerated).abs() < 1e-12);
                }
            }
        }
    }
}

#[test]
fn tabulated_gibbs_type_priors_equal_the_eppfs() {
    let n = 7;
    for py in py_cases() {
        let t = PartitionPrior::new(
            PartitionPriorSpec::PyFixed {
                theta: py.theta(),
                sigma: py.sigma(),
            },
            n,
        )
        .unwrap();
        for (sizes, _) in integer_partitions(n) {
            let a = t.ln_weight(&sizes).unwrap();
            assert!((a - py.ln_eppf(&sizes).unwrap()).abs() < 1e-12);
        }
    }
    for m in mfm_cases() {
        let t = PartitionPrior::new(
            PartitionPriorSpec::MfmFixed {
                gamma: m.gamma(),
                k_prior: m.k_prior(),
            },
            n,
        )
        .unwrap();
        for (sizes, _) in integer_partitions(n) {
            let a = t.ln_weight(&sizes).unwrap();
            assert!((a - m.ln_eppf(&sizes).unwrap()).abs() < 1e-12);
        }
    }
}

/// The collapsed Gibbs weights of adding point `n + 1` to a partition with block sizes
/// `sizes` (joining each block, or opening one), normalised, against the EPPF's ratios.
fn check_weights<P: NrmPrior>(prior: &P, eppf: impl Fn(&[usize]) -> f64, sizes: &[usize]) {
    let n = sizes.iter().sum::<usize>() + 1;
    let k = sizes.len();
    let mut from_eppf = Vec::new();
    let mut from_weights = Vec::new();
    for c in 0..k {
        let mut s = sizes.to_vec();
        s[c] += 1;
        from_eppf.push(eppf(&s));
        from_weights.push(prior.ln_kappa_join(sizes[c]));
    }
    let mut s = sizes.to_vec();
    s.push(1);
    from_eppf.push(eppf(&s));
    from_weights.push(prior.ln_kappa_new() + prior.ln_new_shift(n, k));
    let (ze, zw) = (log_sum_exp(&from_eppf), log_sum_exp(&from_weights));
    for (a, b) in from_eppf.iter().zip(&from_weights) {
        assert!((a - ze - (b - zw)).abs() < 1e-12, "{prior:?} {sizes:?}");
    }
    // The log joint with zero marginals is the EPPF.
    let joint = prior.ln_joint(sizes, &vec![0.0; k]);
    assert!((joint - eppf(sizes)).abs() < 1e-10 * joint.abs().max(1.0));
}

#[test]
fn gibbs_weights_are_ratios_of_the_eppf() {
    let cases: [&[usize]; 4] = [&[1], &[3, 1], &[2, 2, 1, 4], &[40, 1, 1, 17, 3]];
    for py in py_cases() {
        for sizes in cases {
            check_weights(&py, |s| py.ln_eppf(s).unwrap(), sizes);
        }
    }
    for m in mfm_cases() {
        for sizes in cases {
            check_weights(&m, |s| m.ln_eppf(s).unwrap(), sizes);
        }
    }
}

#[test]
fn mfm_v_ratios_are_finite_at_ten_million() {
    // V_n(t+1)/V_n(t) at n = 10^7, γ = 1, K - 1 ~ Poisson(1): finite and positive for every
    // t, and equal to the ratio of the values themselves (each about e^{-1.6e8}) to the
    // digits those keep; the recursion in ratio form is checked to rounding in the module's
    // own tests.
    let m = Mfm::new(1.0, KPrior::Poisson { lambda: 1.0 }, None).unwrap();
    let n = 10_000_000;
    for t in 1..40 {
        let shift = m.ln_new_shift(n, t);
        assert!(shift.is_finite(), "t {t}: {shift}");
        let direct = m.ln_v_k(n, t + 1) - m.ln_v_k(n, t);
        assert!((direct - shift).abs() < 1e-6, "t {t}: {direct} vs {shift}");
    }
}

/// `ln ∫ exp(f(x)) dx` over `[lo, hi]` by the plain midpoint rule on `m` cells: an
/// integration independent of the library's quadratures, for smooth integrands whose mass
/// lies well inside the interval.
fn ln_midpoint(lo: f64, hi: f64, m: usize, f: impl Fn(f64) -> f64) -> f64 {
    let h = (hi - lo) / m as f64;
    let terms: Vec<f64> = (0..m).map(|i| f(lo + (i as f64 + 0.5) * h)).collect();
    log_sum_exp(&terms) + h.ln()
}

/// The Pitman-Yor priors with random hyperparameters that the samplers can run, as specs.
fn py_random_specs() -> Vec<PartitionPriorSpec> {
    let theta = GammaPrior::reference();
    let sigma = BetaPrior::reference();
    vec![
        PartitionPriorSpec::PyRandomTheta { theta, sigma: 0.3 },
        PartitionPriorSpec::PyRandomTheta {
            theta: GammaPrior::new(2.0, 0.5).unwrap(),
            sigma: 0.0,
        },
        PartitionPriorSpec::PyRandomSigma { theta: 0.8, sigma },
        PartitionPriorSpec::PyRandomSigma {
            theta: -0.04,
            sigma: BetaPrior::new(2.0, 1.0, 0.05, 0.9).unwrap(),
        },
        PartitionPriorSpec::PyRandom { theta, sigma },
        PartitionPriorSpec::PyRandom {
            theta: GammaPrior::new(0.5, 2.0).unwrap(),
            sigma: BetaPrior::new(1.0, 3.0, 0.01, 0.99).unwrap(),
        },
    ]
}

fn mfm_random_specs() -> Vec<PartitionPriorSpec> {
    vec![
        PartitionPriorSpec::MfmRandom {
            gamma: GammaPrior::reference(),
            k_prior: KPrior::Poisson { lambda: 1.0 },
        },
        PartitionPriorSpec::MfmRandom {
            gamma: GammaPrior::new(3.0, 2.0).unwrap(),
            k_prior: KPrior::Geometric { p: 0.3 },
        },
        PartitionPriorSpec::MfmRandom {
            gamma: GammaPrior::new(0.5, 0.5).unwrap(),
            k_prior: KPrior::Poisson { lambda: 4.0 },
        },
    ]
}

#[test]
fn gibbs_type_priors_with_random_hyperparameters_sum_to_one() {
    for spec in py_random_specs().into_iter().chain(mfm_random_specs()) {
        for n in [1usize, 2, 5, 8] {
            let t = PartitionPrior::new(spec, n).unwrap();
            assert!(t.is_normalised());
            let s = ln_total(n, None, |sizes| t.ln_weight(sizes).unwrap());
            assert!(s.abs() < 1e-10, "{spec:?}, n {n}: ln sum {s}");
        }
    }
}

#[test]
fn gibbs_type_priors_with_random_hyperparameters_are_mixtures_of_the_eppfs() {
    // Each integrated weight against the fixed EPPF integrated by a midpoint rule on a fine
    // grid (on ln θ and ln γ, whose integrands decay fast at both ends of the ranges used;
    // on σ over the prior's support), written here from the EPPFs and the prior densities.
    let n = 6;
    let cases: [&[usize]; 4] = [&[6], &[1, 1, 1, 1, 1, 1], &[3, 2, 1], &[2, 2, 2]];
    for spec in py_random_specs().into_iter().chain(mfm_random_specs()) {
        let t = PartitionPrior::new(spec, n).unwrap();
        for sizes in cases {
            let library = t.ln_weight(sizes).unwrap();
            let py = |theta: f64, sigma: f64| PitmanYor::fixed(theta, sigma).unwrap();
            // The midpoint rule converges geometrically for these analytic integrands on
            // ln θ and ln γ, algebraically (as h²) on σ, whose grid is therefore finer.
            let on_ln = |prior: GammaPrior, f: &dyn Fn(f64) -> f64| {
                ln_midpoint(-60.0, 6.0, 1000, |x| {
                    let v = x.exp();
                    prior.ln_pdf(v) + x + f(v)
                })
            };
            let on_sigma = |prior: BetaPrior, f: &dyn Fn(f64) -> f64| {
                ln_midpoint(prior.lo(), prior.hi(), 2000, |s| prior.ln_pdf(s) + f(s))
            };
            let direct = match spec {
                PartitionPriorSpec::PyRandomTheta { theta, sigma } => {
                    on_ln(theta, &|th| py(th, sigma).ln_eppf(sizes).unwrap())
                }
                PartitionPriorSpec::PyRandomSigma { theta, sigma } => {
                    on_sigma(sigma, &|s| py(theta, s).ln_eppf(sizes).unwrap())
                }
                PartitionPriorSpec::PyRandom { theta, sigma } => on_sigma(sigma, &|s| {
                    on_ln(theta, &|th| py(th, s).ln_eppf(sizes).unwrap())
                }),
                PartitionPriorSpec::MfmRandom { gamma, k_prior } => on_ln(gamma, &|g| {
                    Mfm::new(g, k_prior, None).unwrap().ln_eppf(sizes).unwrap()
                }),
                _ => unreachable!(),
            };
            assert!(
                (library - direct).abs() < 1e-5,
                "{spec:?} {sizes:?}: {library} vs {direct}"
            );
        }
    }
}

#[test]
fn random_hyperparameters_map_to_their_integrated_priors() {
    use nrmm::prior::{Prior, PyHyperPriors};
    let py = PitmanYor::new(1.0, 0.5, PyHyperPriors::reference()).unwrap();
    assert!(matches!(
        PartitionPriorSpec::from_prior(&Prior::PitmanYor(py)).unwrap(),
        PartitionPriorSpec::PyRandom { .. }
    ));
    let theta_only = PyHyperPriors {
        theta: Some(GammaPrior::reference()),
        sigma: None,
    };
    let py = PitmanYor::new(1.0, 0.5, theta_only).unwrap();
    assert_eq!(
        PartitionPriorSpec::from_prior(&Prior::PitmanYor(py)).unwrap(),
        PartitionPriorSpec::PyRandomTheta {
            theta: GammaPrior::reference(),
            sigma: 0.5
        }
    );
    let m = Mfm::new(
        1.0,
        KPrior::Poisson { lambda: 1.0 },
        Some(GammaPrior::reference()),
    )
    .unwrap();
    assert!(matches!(
        PartitionPriorSpec::from_prior(&Prior::Mfm(m)).unwrap(),
        PartitionPriorSpec::MfmRandom { .. }
    ));
    // θ must stay above -σ over the whole support of σ.
    let bad = PartitionPriorSpec::PyRandomSigma {
        theta: -0.02,
        sigma: BetaPrior::reference(),
    };
    assert!(PartitionPrior::new(bad, 4).is_err());
}
