//! Every move's exact one-step kernel, built by enumerating all of its random choices
//! (scan orders included) from every partition of a tiny data set, leaves the exact posterior
//! invariant and satisfies detailed balance (MATH §7.1, kernel-level check), for the
//! Normal-Wishart, diagonal, Multinomial-Dirichlet, Beta-Bernoulli and product (mixed table,
//! entries missing) kernels.

use nrmm::data::{DenseData, SparseCounts};
use nrmm::kernel::beta_bernoulli::BetaBernoulli;
use nrmm::kernel::{DiagHyper, Diagonal, MultinomialDirichlet, NormalWishart, NwHyper};
use nrmm::prior::{Dp, Nggp};
use nrmm::sampler::{Gibbs, GibbsScan, JainNeal, Sams};
use proptest::prelude::*;
use std::sync::Arc;

use crate::exact_check::nw_kernel_own_hyper as nw_kernel;
use crate::exact_check::{
    bb_kernel, bb_missing_kernel, check, diag_kernel, md_kernel, mixed_kernel, priors,
};

#[test]
fn gibbs_full_sweep_is_exact() {
    let (dp, nggp) = priors();
    let mut mv = Gibbs::new(GibbsScan::Full).unwrap();
    check(&nw_kernel(4), &dp, &mut mv);
    check(&nw_kernel(4), &nggp, &mut mv);
    check(&md_kernel(4), &dp, &mut mv);
    check(&md_kernel(4), &nggp, &mut mv);
    check(&diag_kernel(4), &dp, &mut mv);
    check(&diag_kernel(5), &nggp, &mut mv);
    check(&bb_kernel(4), &dp, &mut mv);
    check(&bb_kernel(5), &nggp, &mut mv);
    check(&bb_missing_kernel(5), &dp, &mut mv);
    check(&mixed_kernel(5), &dp, &mut mv);
    check(&mixed_kernel(5), &nggp, &mut mv);
}

#[test]
fn gibbs_subset_sweep_is_exact() {
    let (dp, nggp) = priors();
    let mut mv = Gibbs::new(GibbsScan::Subset(2)).unwrap();
    check(&nw_kernel(5), &dp, &mut mv);
    check(&md_kernel(5), &nggp, &mut mv);
    check(&diag_kernel(5), &dp, &mut mv);
    check(&bb_kernel(5), &nggp, &mut mv);
    check(&mixed_kernel(5), &nggp, &mut mv);
}

#[test]
fn sams_is_exact() {
    let (dp, nggp) = priors();
    let mut mv = Sams::new();
    for n in [4, 5] {
        check(&nw_kernel(n), &dp, &mut mv);
        check(&nw_kernel(n), &nggp, &mut mv);
        check(&md_kernel(n), &dp, &mut mv);
        check(&md_kernel(n), &nggp, &mut mv);
        check(&diag_kernel(n), &dp, &mut mv);
        check(&diag_kernel(n), &nggp, &mut mv);
        check(&bb_kernel(n), &dp, &mut mv);
        check(&bb_kernel(n), &nggp, &mut mv);
        check(&bb_missing_kernel(n), &nggp, &mut mv);
        check(&mixed_kernel(n), &dp, &mut mv);
        check(&mixed_kernel(n), &nggp, &mut mv);
    }
}

#[test]
fn jain_neal_is_exact() {
    let (dp, nggp) = priors();
    for scans in [0, 1, 2] {
        let mut mv = JainNeal::new(scans);
        check(&nw_kernel(4), &dp, &mut mv);
        check(&md_kernel(4), &nggp, &mut mv);
        check(&diag_kernel(4), &nggp, &mut mv);
        check(&bb_kernel(4), &dp, &mut mv);
        check(&bb_missing_kernel(4), &nggp, &mut mv);
        check(&mixed_kernel(4), &dp, &mut mv);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random 4-point 2-D data sets and random hyperparameters: Gibbs and SAMS stay exact.
    #[test]
    fn random_models_stay_exact(
        xs in proptest::collection::vec(-3.0f64..3.0, 8),
        alpha in 0.2f64..5.0,
        sigma in 0.05f64..0.95,
        u in 0.1f64..20.0,
        r in 0.05f64..2.0,
        nu_extra in 0.1f64..6.0,
    ) {
        let rows: Vec<Vec<f64>> = xs.chunks(2).map(<[f64]>::to_vec).collect();
        let data = DenseData::from_rows(&rows).unwrap();
        let hyper = NwHyper::new(vec![0.0, 0.0], vec![1.0, 0.2, 0.2, 0.5], r, 1.0 + nu_extra).unwrap();
        let kernel = NormalWishart::new(Arc::new(data), hyper).unwrap();
        let dp = Dp::new(alpha).unwrap();
        let nggp = Nggp::fixed(alpha, sigma, u).unwrap();
        check(&kernel, &dp, &mut Sams::new());
        check(&kernel, &nggp, &mut Sams::new());
        check(&kernel, &nggp, &mut Gibbs::new(GibbsScan::Full).unwrap());
    }

    /// Random 4-point 3-D data sets under the diagonal kernel with random hyperparameters.
    #[test]
    fn random_diagonal_models_stay_exact(
        xs in proptest::collection::vec(-3.0f64..3.0, 12),
        psi in proptest::collection::vec(0.05f64..3.0, 3),
        alpha in 0.2f64..5.0,
        r in 0.05f64..2.0,
        nu in 0.2f64..6.0,
    ) {
        let rows: Vec<Vec<f64>> = xs.chunks(3).map(<[f64]>::to_vec).collect();
        let data = DenseData::from_rows(&rows).unwrap();
        let hyper = DiagHyper::new(vec![0.5, 0.0, -0.5], psi, r, nu).unwrap();
        let kernel = Diagonal::new(Arc::new(data), hyper).unwrap();
        let dp = Dp::new(alpha).unwrap();
        check(&kernel, &dp, &mut Sams::new());
        check(&kernel, &dp, &mut Gibbs::new(GibbsScan::Full).unwrap());
    }

    /// Random count data sets: the sparse kernel's moves stay exact too.
    #[test]
    fn random_count_models_stay_exact(
        docs in proptest::collection::vec(proptest::collection::vec((0u32..5, 1u32..4), 1..4), 4),
        beta in 0.05f64..3.0,
        alpha in 0.2f64..5.0,
    ) {
        let counts = SparseCounts::from_rows(5, &docs).unwrap();
        let kernel = MultinomialDirichlet::new(Arc::new(counts), beta).unwrap();
        let dp = Dp::new(alpha).unwrap();
        check(&kernel, &dp, &mut Sams::new());
        check(&kernel, &dp, &mut Gibbs::new(GibbsScan::Full).unwrap());
    }

    /// Random binary data sets (4 points, 3 columns, entries missing at random) and random
    /// `β`: the Beta-Bernoulli kernel's moves stay exact.
    #[test]
    fn random_binary_models_stay_exact(
        bits in proptest::collection::vec(0u8..3, 12),
        beta in 0.05f64..3.0,
        alpha in 0.2f64..5.0,
    ) {
        let entries: Vec<Option<bool>> = bits.iter().map(|&b| (b < 2).then_some(b == 1)).collect();
        let kernel = BetaBernoulli::with_missing(4, 3, &entries, beta).unwrap();
        let dp = Dp::new(alpha).unwrap();
        check(&kernel, &dp, &mut Sams::new());
        check(&kernel, &dp, &mut Gibbs::new(GibbsScan::Full).unwrap());
        check(&kernel, &dp, &mut JainNeal::new(1));
    }
}
