//! Every move's exact one-step kernel, built by enumerating all of its random choices
//! (scan orders included) from every partition of a tiny data set, leaves the exact posterior
//! invariant and satisfies detailed balance (MATH §7.1, kernel-level check), for the
//! Normal-Wishart, diagonal and Multinomial-Dirichlet kernels.

use nrmm::data::{DenseData, SparseCounts};
use nrmm::kernel::{DiagHyper, Diagonal, MultinomialDirichlet, NormalWishart, NwHyper};
use nrmm::prior::{Dp, Nggp};
use nrmm::sampler::{Gibbs, GibbsScan, JainNeal, Sams};
use proptest::prelude::*;
use std::sync::Arc;

use crate::exact_check;
use exact_check::check;

/// The first `n` points of data set B (MATH §5.3), with the reference hyperparameters.
fn nw_kernel(n: usize) -> NormalWishart {
    let b = [
        [0.0, 0.0],
        [0.1, -0.08],
        [-0.07, 0.12],
        [1.0, 1.05],
        [1.12, 0.93],
        [0.55, 0.5],
        [1.05, 1.2],
    ];
    let rows: Vec<Vec<f64>> = b[..n].iter().map(|r| r.to_vec()).collect();
    let data = DenseData::from_rows(&rows).unwrap();
    let hyper = NwHyper::from_data(&data).unwrap();
    NormalWishart::new(Arc::new(data), hyper).unwrap()
}

/// The first `n` points of data set B under the diagonal kernel with its defaults from the
/// whole set (so that one point still makes a proper model).
fn diag_kernel(n: usize) -> Diagonal {
    let b = [
        [0.0, 0.0],
        [0.1, -0.08],
        [-0.07, 0.12],
        [1.0, 1.05],
        [1.12, 0.93],
        [0.55, 0.5],
        [1.05, 1.2],
    ];
    let rows: Vec<Vec<f64>> = b.iter().map(|r| r.to_vec()).collect();
    let hyper =
        DiagHyper::from_data(&DenseData::from_rows(&rows).unwrap(), 0.25, 0.1, 3.0).unwrap();
    let data = DenseData::from_rows(&rows[..n]).unwrap();
    Diagonal::new(Arc::new(data), hyper).unwrap()
}

/// Five short documents over a six-word vocabulary, two topics.
fn md_kernel(n: usize) -> MultinomialDirichlet {
    let docs = [
        vec![(0, 3), (1, 1)],
        vec![(0, 2), (1, 2), (2, 1)],
        vec![(3, 2), (4, 2)],
        vec![(4, 1), (5, 3)],
        vec![(1, 1), (3, 1), (5, 1)],
    ];
    let counts = SparseCounts::from_rows(6, &docs[..n]).unwrap();
    MultinomialDirichlet::new(Arc::new(counts), 0.5).unwrap()
}

fn priors() -> (Dp, Nggp) {
    (Dp::new(1.0).unwrap(), Nggp::fixed(1.3, 0.4, 2.5).unwrap())
}

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
}

#[test]
fn gibbs_subset_sweep_is_exact() {
    let (dp, nggp) = priors();
    let mut mv = Gibbs::new(GibbsScan::Subset(2)).unwrap();
    check(&nw_kernel(5), &dp, &mut mv);
    check(&md_kernel(5), &nggp, &mut mv);
    check(&diag_kernel(5), &dp, &mut mv);
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
}
