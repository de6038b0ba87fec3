//! The kernel-level exact check shared by the sampler tests (MATH §7.1): a move's enumerated
//! one-step transition matrix against the exact posterior given the prior's current
//! hyperparameters (and `u` for NGGP); and the tiny models the checks run on.

use std::sync::Arc;

use nrmm::data::generate::data_set_b;
use nrmm::data::{DenseData, SparseCounts};
use nrmm::exact::{transition_matrix, ExactPosterior, TransitionMatrix};
use nrmm::kernel::beta_bernoulli::BetaBernoulli;
use nrmm::kernel::{
    ConjugateKernel, DiagHyper, Diagonal, MultinomialDirichlet, NormalWishart, NwHyper,
};
use nrmm::prior::{Dp, KPrior, Mfm, Nggp, NrmPrior, PitmanYor};
use nrmm::sampler::Move;

/// Tolerance of the row sums, invariance and detailed balance: rounding error only.
pub const TOL: f64 = 1e-12;

/// The exact posterior over partitions given the prior's current hyperparameters (with a
/// Gibbs-type prior's `ln V(n, K)`).
pub fn posterior<K: ConjugateKernel, P: NrmPrior>(kernel: &K, prior: &P) -> Vec<f64> {
    ExactPosterior::new(kernel, ln_prior_of_sizes(prior))
        .unwrap()
        .probabilities()
        .to_vec()
}

/// The prior's log weight of a partition with these cluster sizes: `ln V(n, K)` for a
/// Gibbs-type prior plus `Σ ln κ(n_c)`.
pub fn ln_prior_of_sizes<P: NrmPrior>(prior: &P) -> impl Fn(&[usize]) -> f64 {
    let p = prior.clone();
    move |sizes: &[usize]| {
        let v = if p.k_dependent() {
            p.ln_v_k(sizes.iter().sum(), sizes.len())
        } else {
            0.0
        };
        v + sizes.iter().map(|&s| p.ln_kappa(s)).sum::<f64>()
    }
}

/// Asserts that `mv`'s exact kernel is stochastic, leaves the posterior invariant and is in
/// detailed balance with it, to [`TOL`]; returns the matrix for further checks.
pub fn check<K: ConjugateKernel, P: NrmPrior, M: Move<K, P>>(
    kernel: &K,
    prior: &P,
    mv: &mut M,
) -> TransitionMatrix {
    let pi = posterior(kernel, prior);
    let t = transition_matrix(kernel, prior, mv).unwrap();
    assert_exact(mv.name(), &t, &pi);
    t
}

/// Asserts that the transition matrix `t` of the move `name` is stochastic, leaves `pi`
/// invariant and is in detailed balance with it, to [`TOL`].
pub fn assert_exact(name: &str, t: &TransitionMatrix, pi: &[f64]) {
    assert!(
        t.row_sum_error() < TOL,
        "{name}: rows sum off by {}",
        t.row_sum_error()
    );
    assert!(
        t.invariance_error(pi) < TOL,
        "{name}: |πK - π| = {}",
        t.invariance_error(pi)
    );
    assert!(
        t.detailed_balance_error(pi) < TOL,
        "{name}: detailed balance off by {}",
        t.detailed_balance_error(pi)
    );
}

/// The first `n` points of data set B (MATH §5.3).
fn set_b(n: usize) -> DenseData {
    let b = data_set_b();
    DenseData::from_rows(&(0..n).map(|i| b.row(i).to_vec()).collect::<Vec<_>>())
        .expect("n is at most 7")
}

/// The first `n` points of data set B under the Normal-Wishart kernel with the reference
/// hyperparameters of the whole set (so that one or two points still make a proper model).
pub fn nw_kernel(n: usize) -> NormalWishart {
    let hyper = NwHyper::from_data(&data_set_b()).expect("data set B has a covariance");
    NormalWishart::new(Arc::new(set_b(n)), hyper).expect("dimensions agree")
}

/// The first `n` points of data set B under the Normal-Wishart kernel with the reference
/// hyperparameters of those `n` points.
pub fn nw_kernel_own_hyper(n: usize) -> NormalWishart {
    let data = set_b(n);
    let hyper = NwHyper::from_data(&data).expect("the points have a covariance");
    NormalWishart::new(Arc::new(data), hyper).expect("dimensions agree")
}

/// The first `n` points of data set B under the diagonal kernel with its defaults from the
/// whole set.
pub fn diag_kernel(n: usize) -> Diagonal {
    let hyper = DiagHyper::from_data(&data_set_b(), 0.25, 0.1, 3.0).expect("valid defaults");
    Diagonal::new(Arc::new(set_b(n)), hyper).expect("dimensions agree")
}

/// The first `n` of six short documents over a six-word vocabulary, two topics.
pub fn md_kernel(n: usize) -> MultinomialDirichlet {
    let docs = [
        vec![(0, 3), (1, 1)],
        vec![(0, 2), (1, 2), (2, 1)],
        vec![(3, 2), (4, 2)],
        vec![(4, 1), (5, 3)],
        vec![(1, 1), (3, 1), (5, 1)],
        vec![(2, 2), (5, 1)],
    ];
    let counts = SparseCounts::from_rows(6, &docs[..n]).expect("valid counts");
    MultinomialDirichlet::new(Arc::new(counts), 0.5).expect("valid beta")
}

/// The first `n` of six binary points in four columns (two groups, one noisy column) under
/// the Beta-Bernoulli kernel with `β = 0.7`.
pub fn bb_kernel(n: usize) -> BetaBernoulli {
    let rows = [
        [1.0, 1.0, 0.0, 1.0],
        [1.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 1.0],
        [0.0, 1.0, 1.0, 0.0],
        [1.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, 1.0, 0.0],
    ];
    let rows: Vec<Vec<f64>> = rows[..n].iter().map(|r| r.to_vec()).collect();
    let data = DenseData::from_rows(&rows).expect("valid rows");
    BetaBernoulli::new(&data, 0.7).expect("binary values")
}

/// [`bb_kernel`]'s points with five entries missing (one point keeps a single entry).
pub fn bb_missing_kernel(n: usize) -> BetaBernoulli {
    let k = bb_kernel(6);
    let gone = [(0, 1), (2, 3), (3, 0), (3, 1), (3, 2)];
    let entries: Vec<Option<bool>> = (0..n * 4)
        .map(|t| (t / 4, t % 4))
        .map(|(i, j)| (!gone.contains(&(i, j))).then(|| k.entry(i, j).unwrap()))
        .collect();
    BetaBernoulli::with_missing(n, 4, &entries, 0.7).expect("valid entries")
}

/// The two priors of the checks: DP `α = 1` and NGGP `α = 1.3`, `σ = 0.4`, `u = 2.5`.
pub fn priors() -> (Dp, Nggp) {
    (Dp::new(1.0).unwrap(), Nggp::fixed(1.3, 0.4, 2.5).unwrap())
}

/// The first `n` rows of a small table for the product kernel, entries missing in every
/// column: a real column, a binary one, a categorical one of three levels and a count one.
pub fn mixed_table(n: usize) -> nrmm::data::TableData {
    use nrmm::data::table::{Column, ColumnType};
    let nan = f64::NAN;
    let col = |name: &str, kind, levels: &[&str], values: [f64; 6]| Column {
        name: name.into(),
        kind,
        levels: levels.iter().map(|s| s.to_string()).collect(),
        values: values[..n].to_vec(),
    };
    nrmm::data::TableData::new(vec![
        col("x", ColumnType::Real, &[], [0.3, nan, 2.1, 1.7, -0.4, 0.9]),
        col(
            "b",
            ColumnType::Binary,
            &["no", "yes"],
            [1.0, 0.0, nan, 1.0, 0.0, 1.0],
        ),
        col(
            "c",
            ColumnType::Categorical,
            &["r", "g", "b"],
            [2.0, 0.0, 1.0, nan, 2.0, 0.0],
        ),
        col("k", ColumnType::Count, &[], [3.0, 0.0, 5.0, nan, 1.0, nan]),
    ])
    .expect("a valid table")
}

/// The product kernel over [`mixed_table`]`(n)`, with priors fixed (not from the data).
pub fn mixed_kernel(n: usize) -> nrmm::kernel::mixed::Mixed {
    use nrmm::kernel::mixed::{Mixed, MixedPriors};
    let priors = MixedPriors {
        xi: vec![0.5],
        psi: vec![0.8],
        count_rate: vec![0.4],
        r: 0.3,
        nu: 3.5,
        beta: 0.6,
    };
    Mixed::with_priors(mixed_table(n), priors).expect("valid priors")
}

/// The Gibbs-type priors of the checks: Pitman-Yor with a negative `θ`, with a large `σ`,
/// and at `σ = 0`; MFM with `K - 1 ~ Poisson(1)` (Miller & Harrison's) and a geometric `p_K`.
pub fn gibbs_type_priors() -> (Vec<PitmanYor>, Vec<Mfm>) {
    (
        vec![
            PitmanYor::fixed(-0.2, 0.4).unwrap(),
            PitmanYor::fixed(1.5, 0.7).unwrap(),
            PitmanYor::fixed(0.8, 0.0).unwrap(),
        ],
        vec![
            Mfm::new(1.0, KPrior::Poisson { lambda: 1.0 }, None).unwrap(),
            Mfm::new(0.4, KPrior::Geometric { p: 0.3 }, None).unwrap(),
        ],
    )
}
