//! The EPPFs and the hyperparameter-integrated partition priors are probability laws on set
//! partitions: they sum to 1 over all set partitions of n ≤ 8 (MATH §1.4, §1.5, §7.1).
//! The sum runs over integer partitions of n, each weighted by its number of set partitions.

use crate::prior_support;

use nrmm::math::log_sum_exp;
use nrmm::prior::{BetaPrior, Dp, GammaPrior, Nggp, PartitionPrior, PartitionPriorSpec, Prior};
use prior_support::integer_partitions;

/// `ln Σ_Π p(Π)` for a prior given as a function of block sizes.
fn ln_total(n: usize, ln_p: impl Fn(&[usize]) -> f64) -> f64 {
    let terms: Vec<f64> = integer_partitions(n)
        .iter()
        .map(|(sizes, ln_count)| ln_count + ln_p(sizes))
        .collect();
    log_sum_exp(&terms)
}

#[test]
fn integer_partition_counts_give_bell_numbers() {
    let bell = [1.0, 1.0, 2.0, 5.0, 15.0, 52.0, 203.0, 877.0, 4140.0];
    for (n, &b) in bell.iter().enumerate().skip(1) {
        let total = ln_total(n, |_| 0.0).exp();
        assert!((total - b).abs() < 1e-9 * b, "B_{n}: {total}");
    }
}

#[test]
fn dp_eppf_sums_to_one() {
    for &alpha in &[0.01, 0.3, 1.0, 4.5, 250.0] {
        let dp = Dp::new(alpha).unwrap();
        for n in 1..=8 {
            let s = ln_total(n, |sizes| dp.ln_eppf(sizes).unwrap());
            assert!(s.abs() < 1e-10, "alpha {alpha}, n {n}: ln sum {s}");
        }
    }
}

#[test]
fn nggp_eppf_sums_to_one() {
    for &(alpha, sigma) in &[
        (1.0, 0.5),
        (0.1, 0.01),
        (3.0, 0.01),
        (0.2, 0.99),
        (7.0, 0.99),
        (40.0, 0.3),
        (0.01, 0.7),
    ] {
        let p = Nggp::fixed(alpha, sigma, 1.0).unwrap();
        for n in 1..=8 {
            let s = ln_total(n, |sizes| p.ln_eppf(sizes).unwrap());
            assert!(
                s.abs() < 1e-10,
                "alpha {alpha}, sigma {sigma}, n {n}: ln sum {s}"
            );
        }
    }
}

#[test]
fn tabulated_fixed_priors_equal_the_eppfs() {
    let n = 7;
    let dp = Dp::new(1.3).unwrap();
    let nggp = Nggp::fixed(0.8, 0.4, 2.0).unwrap();
    let t_dp = PartitionPrior::new(PartitionPriorSpec::DpFixed { alpha: 1.3 }, n).unwrap();
    let t_ng = PartitionPrior::new(
        PartitionPriorSpec::NggpFixed {
            alpha: 0.8,
            sigma: 0.4,
        },
        n,
    )
    .unwrap();
    for (sizes, _) in integer_partitions(n) {
        let a = t_dp.ln_weight(&sizes).unwrap();
        assert!((a - dp.ln_eppf(&sizes).unwrap()).abs() < 1e-12);
        let b = t_ng.ln_weight(&sizes).unwrap();
        assert!((b - nggp.ln_eppf(&sizes).unwrap()).abs() < 1e-12);
    }
}

#[test]
fn dp_with_random_alpha_sums_to_one() {
    // Includes priors with slowly decaying left tails in ln α (a + K - 1 down to 0.01).
    for (a, b) in [
        (1.0, 1.0),
        (2.0, 0.5),
        (0.5, 3.0),
        (0.01, 1.0),
        (0.05, 50.0),
        (100.0, 0.01),
    ] {
        let prior = GammaPrior::new(a, b).unwrap();
        for n in [1usize, 4, 8] {
            let t =
                PartitionPrior::new(PartitionPriorSpec::DpRandomAlpha { alpha: prior }, n).unwrap();
            assert!(t.is_normalised());
            let s = ln_total(n, |sizes| t.ln_weight(sizes).unwrap());
            assert!(s.abs() < 1e-10, "Gamma({a}, {b}), n {n}: ln sum {s}");
        }
    }
}

#[test]
fn dp_with_random_alpha_is_the_prior_mixture_of_eppfs() {
    // For α ~ Gamma(1, 1) and n = 2: p({1,2}) = E[1/(α+1)] = e E_1(1) (exponential integral),
    // E_1(1) = 0.21938393439552027.
    let t = PartitionPrior::new(
        PartitionPriorSpec::DpRandomAlpha {
            alpha: GammaPrior::new(1.0, 1.0).unwrap(),
        },
        2,
    )
    .unwrap();
    let p = t.ln_weight(&[2]).unwrap().exp();
    let exact = std::f64::consts::E * 0.219_383_934_395_520_27;
    assert!((p - exact).abs() < 1e-13, "{p} vs {exact}");
}

#[test]
fn nggp_with_random_hyperparameters_sums_to_one() {
    let cases = [
        // The reference priors (b = 1: closed form in α and u, 1-D σ integral).
        (GammaPrior::reference(), BetaPrior::reference()),
        (
            GammaPrior::new(2.5, 1.0).unwrap(),
            BetaPrior::new(0.7, 2.0, 0.001, 0.95).unwrap(),
        ),
        // b ≠ 1: the 2-D (u, σ) quadrature.
        (GammaPrior::new(2.0, 0.5).unwrap(), BetaPrior::reference()),
        (
            GammaPrior::new(0.5, 3.0).unwrap(),
            BetaPrior::new(2.0, 1.0, 0.05, 0.99).unwrap(),
        ),
    ];
    for (alpha, sigma) in cases {
        for n in [1usize, 3, 6] {
            let t =
                PartitionPrior::new(PartitionPriorSpec::NggpRandom { alpha, sigma }, n).unwrap();
            let s = ln_total(n, |sizes| t.ln_weight(sizes).unwrap());
            assert!(s.abs() < 1e-10, "{alpha:?}, {sigma:?}, n {n}: ln sum {s}");
        }
    }
}

#[test]
fn nggp_random_weights_are_order_free_and_memoised() {
    let t = PartitionPrior::new(
        PartitionPriorSpec::NggpRandom {
            alpha: GammaPrior::reference(),
            sigma: BetaPrior::reference(),
        },
        7,
    )
    .unwrap();
    let a = t.ln_weight(&[3, 1, 2, 1]).unwrap();
    let b = t.ln_weight(&[1, 1, 2, 3]).unwrap();
    assert_eq!(a, b);
    assert!(t.ln_weight(&[3, 3]).is_err());
    assert!(t.ln_weight(&[3, 0, 4]).is_err());
    assert!(t.ln_weight(&[]).is_err());
}

#[test]
fn nggp_given_u_is_the_joint_at_that_u() {
    let p = Nggp::fixed(1.4, 0.35, 0.8).unwrap();
    let spec = PartitionPriorSpec::from_prior(&Prior::Nggp(p.clone())).unwrap();
    let t = PartitionPrior::new(spec, 6).unwrap();
    assert!(!t.is_normalised());
    use nrmm::prior::NrmPrior;
    for (sizes, _) in integer_partitions(6) {
        let joint = p.ln_joint(&sizes, &vec![0.0; sizes.len()]);
        assert!((t.ln_weight(&sizes).unwrap() - joint).abs() < 1e-12);
    }
}

#[test]
fn specs_follow_the_sampler_settings() {
    use nrmm::prior::{AlphaUpdate, NggpHyperPriors};
    let dp = Prior::Dp(Dp::new(2.0).unwrap());
    assert_eq!(
        PartitionPriorSpec::from_prior(&dp).unwrap(),
        PartitionPriorSpec::DpFixed { alpha: 2.0 }
    );
    let g = GammaPrior::new(3.0, 2.0).unwrap();
    let dp = Prior::Dp(Dp::with_alpha_prior(2.0, g, AlphaUpdate::UAugmented).unwrap());
    assert_eq!(
        PartitionPriorSpec::from_prior(&dp).unwrap(),
        PartitionPriorSpec::DpRandomAlpha { alpha: g }
    );
    let reference = Nggp::new(1.0, 0.5, 1.0, NggpHyperPriors::reference()).unwrap();
    assert!(matches!(
        PartitionPriorSpec::from_prior(&Prior::Nggp(reference)).unwrap(),
        PartitionPriorSpec::NggpRandom { .. }
    ));
    let mut only_u = NggpHyperPriors::fixed();
    only_u.sample_u = true;
    let p = Nggp::new(1.0, 0.5, 1.0, only_u).unwrap();
    assert_eq!(
        PartitionPriorSpec::from_prior(&Prior::Nggp(p)).unwrap(),
        PartitionPriorSpec::NggpFixed {
            alpha: 1.0,
            sigma: 0.5
        }
    );
    let mut partial = NggpHyperPriors::reference();
    partial.sigma = None;
    let p = Nggp::new(1.0, 0.5, 1.0, partial).unwrap();
    assert!(PartitionPriorSpec::from_prior(&Prior::Nggp(p)).is_err());
}
