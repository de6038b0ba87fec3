//! Every collapsed sampler that takes the Gibbs-type priors (Pitman-Yor, MFM) is exact with
//! them: the one-step transition matrix of each move, enumerated over all of its random
//! choices from every partition of a tiny data set, leaves the exact posterior (the EPPF with
//! `V(n, K)` times the kernel's marginals) invariant and is in detailed balance with it
//! (MATH §7.1, kernel-level check); and the samplers that cannot take them refuse, naming
//! those that can.

use nrmm::prior::{NrmPrior, Prior};
use nrmm::run::{SamplerKind, SamplerSettings};
use nrmm::sampler::{Gibbs, GibbsScan, JainNeal, Sams, TgSams};

use crate::exact_check::{
    bb_kernel, check, diag_kernel, gibbs_type_priors, md_kernel, nw_kernel, nw_kernel_own_hyper,
};

/// Every Gibbs-type prior of the checks, as the run-time [`Prior`].
fn all() -> Vec<Prior> {
    let (py, mfm) = gibbs_type_priors();
    py.into_iter()
        .map(Prior::from)
        .chain(mfm.into_iter().map(Prior::from))
        .collect()
}

#[test]
fn gibbs_is_exact_with_gibbs_type_priors() {
    for prior in all() {
        let mut mv = Gibbs::new(GibbsScan::Full).unwrap();
        check(&nw_kernel_own_hyper(4), &prior, &mut mv);
        check(&md_kernel(4), &prior, &mut mv);
        check(&bb_kernel(4), &prior, &mut mv);
        check(
            &diag_kernel(4),
            &prior,
            &mut Gibbs::new(GibbsScan::Subset(2)).unwrap(),
        );
    }
}

#[test]
fn sams_is_exact_with_gibbs_type_priors() {
    for prior in all() {
        for n in [4, 5] {
            check(&nw_kernel(n), &prior, &mut Sams::new());
            check(&md_kernel(n), &prior, &mut Sams::new());
        }
        check(&bb_kernel(5), &prior, &mut Sams::new());
    }
}

#[test]
fn jain_neal_is_exact_with_gibbs_type_priors() {
    for prior in all() {
        for scans in [0, 1, 2] {
            check(&nw_kernel(4), &prior, &mut JainNeal::new(scans));
        }
        check(&md_kernel(4), &prior, &mut JainNeal::new(1));
    }
}

#[test]
fn tg_sams_is_exact_with_gibbs_type_priors() {
    for prior in all() {
        for n in [3, 5] {
            check(&nw_kernel(n), &prior, &mut TgSams::new());
        }
        check(&md_kernel(5), &prior, &mut TgSams::new());
        check(&diag_kernel(4), &prior, &mut TgSams::new());
    }
}

#[test]
fn the_gibbs_type_priors_weigh_k() {
    // Not the product form: otherwise the checks above would say nothing new.
    for prior in all() {
        assert!(prior.k_dependent());
    }
}

#[test]
fn other_samplers_refuse_them_naming_those_that_take_them() {
    for prior in all() {
        for kind in SamplerKind::ALL {
            let settings = SamplerSettings::new(kind);
            let got = settings.schedule::<nrmm::kernel::NormalWishart>(false, &prior);
            if kind.takes_gibbs_type() {
                assert!(got.is_ok(), "{}: {:?}", kind.name(), got.err());
            } else {
                let e = got.err().expect("refused").to_string();
                assert!(
                    e.contains("gibbs, jain-neal, sams, tgmcmc, subcluster")
                        && e.contains(kind.name()),
                    "{}: {e}",
                    kind.name()
                );
            }
        }
    }
}
