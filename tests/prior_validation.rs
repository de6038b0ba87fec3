//! Invalid hyperparameters are errors that name the parameter, never panics: α ≤ 0,
//! σ ∉ (0, 1), u ≤ 0, Beta bounds outside (0, 1), NaN and infinities, empty or zero-size
//! blocks. Also: the runtime `Prior` dispatches to its variant.

use nrmm::prior::{
    ln_v, AlphaUpdate, BetaPrior, Dp, GammaPrior, Nggp, NggpHyperPriors, NrmPrior, PartitionPrior,
    PartitionPriorSpec, Prior, SliceSampler,
};
use nrmm::rng::SeedPlan;
use nrmm::Error;

fn names(result: Result<impl std::fmt::Debug, Error>, word: &str) {
    match result {
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(word), "message {msg:?} does not name {word:?}");
        }
        Ok(v) => panic!("expected an error naming {word}, got {v:?}"),
    }
}

const BAD_POSITIVE: [f64; 5] = [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
const BAD_UNIT: [f64; 6] = [0.0, 1.0, -0.2, 1.5, f64::NAN, f64::INFINITY];

#[test]
fn dp_rejects_bad_alpha() {
    for a in BAD_POSITIVE {
        names(Dp::new(a), "alpha");
        names(
            Dp::with_alpha_prior(a, GammaPrior::reference(), AlphaUpdate::EscobarWest),
            "alpha",
        );
    }
}

#[test]
fn nggp_rejects_bad_state() {
    let fixed = NggpHyperPriors::fixed();
    for a in BAD_POSITIVE {
        names(Nggp::new(a, 0.5, 1.0, fixed), "alpha");
        names(Nggp::new(1.0, 0.5, a, fixed), "u");
    }
    for s in BAD_UNIT {
        names(Nggp::new(1.0, s, 1.0, fixed), "sigma");
    }
    // σ must lie in the support of its prior.
    names(
        Nggp::new(1.0, 0.995, 1.0, NggpHyperPriors::reference()),
        "sigma",
    );
    let mut p = Nggp::new(1.0, 0.5, 1.0, NggpHyperPriors::reference()).unwrap();
    names(p.set_sigma(0.005), "sigma");
    names(p.set_alpha(-2.0), "alpha");
    names(p.set_u(0.0), "u");
    names(p.set_ln_u(f64::NAN), "ln u");
    assert_eq!((p.alpha(), p.sigma(), p.u()), (1.0, 0.5, 1.0));
}

#[test]
fn hyperpriors_reject_bad_parameters() {
    for x in BAD_POSITIVE {
        names(GammaPrior::new(x, 1.0), "shape");
        names(GammaPrior::new(1.0, x), "rate");
        names(BetaPrior::new(x, 1.0, 0.1, 0.9), "beta prior a");
        names(BetaPrior::new(1.0, x, 0.1, 0.9), "beta prior b");
    }
    for lo in BAD_UNIT {
        names(BetaPrior::new(1.0, 1.0, lo, 0.9), "lower bound");
    }
    for hi in [0.1, 0.05, 1.0, 1.2, f64::NAN] {
        names(BetaPrior::new(1.0, 1.0, 0.1, hi), "upper bound");
    }
    let r = NggpHyperPriors::reference();
    assert_eq!(r.alpha, Some(GammaPrior::new(1.0, 1.0).unwrap()));
    assert_eq!(r.sigma, Some(BetaPrior::new(1.5, 1.5, 0.01, 0.99).unwrap()));
    assert!(r.sample_u);
}

#[test]
fn ln_v_and_partition_priors_reject_bad_parameters() {
    for a in BAD_POSITIVE {
        names(ln_v(5, 2, a, 0.5), "alpha");
        names(
            PartitionPrior::new(PartitionPriorSpec::DpFixed { alpha: a }, 4),
            "alpha",
        );
        names(
            PartitionPrior::new(
                PartitionPriorSpec::NggpFixed {
                    alpha: a,
                    sigma: 0.5,
                },
                4,
            ),
            "alpha",
        );
        names(
            PartitionPrior::new(
                PartitionPriorSpec::NggpGivenU {
                    alpha: 1.0,
                    sigma: 0.5,
                    u: a,
                },
                4,
            ),
            "u",
        );
    }
    for s in BAD_UNIT {
        names(ln_v(5, 2, 1.0, s), "sigma");
        names(
            PartitionPrior::new(
                PartitionPriorSpec::NggpFixed {
                    alpha: 1.0,
                    sigma: s,
                },
                4,
            ),
            "sigma",
        );
    }
    names(ln_v(5, 6, 1.0, 0.5), "k");
    names(ln_v(0, 0, 1.0, 0.5), "n");
    names(
        PartitionPrior::new(PartitionPriorSpec::DpFixed { alpha: 1.0 }, 0),
        "n",
    );
    let t = PartitionPrior::new(PartitionPriorSpec::DpFixed { alpha: 1.0 }, 4).unwrap();
    assert!(matches!(
        t.ln_weight(&[1, 2]),
        Err(Error::DimensionMismatch(_))
    ));
    assert!(matches!(t.ln_weight(&[]), Err(Error::Empty(_))));
    names(t.ln_weight(&[4, 0]), "block size");
}

#[test]
fn eppfs_reject_empty_blocks() {
    let dp = Dp::new(1.0).unwrap();
    let nggp = Nggp::fixed(1.0, 0.5, 1.0).unwrap();
    assert!(dp.ln_eppf(&[]).is_err());
    assert!(nggp.ln_eppf(&[]).is_err());
    names(nggp.ln_eppf(&[3, 0]), "block size");
}

#[test]
fn slice_sampler_rejects_bad_settings() {
    for w in BAD_POSITIVE {
        names(SliceSampler::new(w, 10), "slice width");
    }
    names(SliceSampler::new(1.0, 0), "slice max steps");
    let s = SliceSampler::new(1.0, 10).unwrap();
    names(s.with_bounds(2.0, 1.0), "slice bounds");
    names(s.with_bounds(f64::NAN, 1.0), "slice bounds");
    let mut rng = SeedPlan::new(1).chain(0);
    let bounded = s.with_bounds(0.0, 1.0).unwrap();
    names(bounded.sample(1.5, |_| 0.0, &mut rng), "slice start");
}

/// Every trait method of `outer` equals that of `inner`.
fn same_as<T: NrmPrior>(outer: &Prior, inner: &T) {
    let sizes = [3usize, 1, 2];
    let marg = [-1.5, -0.3, -2.0];
    for n in 1..6 {
        assert_eq!(outer.ln_kappa(n), inner.ln_kappa(n));
        assert_eq!(outer.ln_kappa_join(n), inner.ln_kappa_join(n));
        assert_eq!(outer.ln_joint_const(n), inner.ln_joint_const(n));
    }
    assert_eq!(outer.ln_kappa_new(), inner.ln_kappa_new());
    assert_eq!(outer.ln_joint(&sizes, &marg), inner.ln_joint(&sizes, &marg));
    assert_eq!(outer.joint_label(), inner.joint_label());
    assert_eq!(outer.hyper_values(), inner.hyper_values());
}

#[test]
fn runtime_prior_dispatches_to_its_variant() {
    let sizes = [3usize, 1, 2];
    let dp = Dp::new(0.8).unwrap();
    let outer = Prior::from(dp.clone());
    same_as(&outer, &dp);
    assert_eq!(outer.ln_eppf(&sizes).unwrap(), dp.ln_eppf(&sizes).unwrap());
    assert_eq!(outer.joint_label(), "ln p(X, partition | alpha)");

    let nggp = Nggp::fixed(1.2, 0.3, 1.7).unwrap();
    let outer = Prior::from(nggp.clone());
    same_as(&outer, &nggp);
    assert_eq!(
        outer.ln_eppf(&sizes).unwrap(),
        nggp.ln_eppf(&sizes).unwrap()
    );
    assert_eq!(outer.joint_label(), "ln p(X, partition, u | alpha, sigma)");

    // Resampling through the enum moves the variant's state like the variant itself.
    let hyper = NggpHyperPriors::reference();
    let inner = Nggp::new(1.0, 0.5, 1.0, hyper).unwrap();
    let mut a = Prior::from(inner.clone());
    let mut b = inner;
    a.resample_hyper(&sizes, &mut SeedPlan::new(9).chain(0))
        .unwrap();
    b.resample_hyper(&sizes, &mut SeedPlan::new(9).chain(0))
        .unwrap();
    assert_eq!(a, Prior::Nggp(b));
}
