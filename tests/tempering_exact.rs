//! Parallel tempering is exact (MATH §6.6, §7.1 kernel-level check):
//!
//! * every collapsed move (collapsed Gibbs, full and subset scans; SAMS; Jain-Neal; TG-SAMS)
//!   over a tempered kernel [`Tempered`] at `β = 0.4` has an enumerated one-step transition
//!   matrix that leaves the tempered posterior `π_β(Π) ∝ p(Π) Π_c m(X_c)^β` invariant and is
//!   reversible, with `π_β` computed from the untempered kernel's subset marginals times `β`
//!   (so the check does not trust the wrapper's own marginals);
//! * the wrapper at `β = 1` gives the inner kernel's values bit for bit;
//! * the swap step of a ladder, enumerated over pairs (and triples) of partitions, leaves the
//!   product of the replicas' tempered posteriors invariant and is reversible;
//! * a whole tempered chain's cold replica visits partitions with the frequencies of the
//!   untempered posterior, within twice the TV a perfect sampler of its effective size shows.

use nrmm::exact::{subset_ln_marginals, transition_matrix, ExactPosterior};
use nrmm::kernel::{ConjugateKernel, Tempered};
use nrmm::prior::NrmPrior;
use nrmm::sampler::{Gibbs, GibbsScan, JainNeal, Move, Sams, TgSams};

use crate::exact_check::{
    bb_kernel, diag_kernel, gibbs_type_priors, md_kernel, nw_kernel, priors, TOL,
};

/// The inverse temperature of the checks.
const BETA: f64 = 0.4;

/// The tempered posterior `∝ p(Π) Π_c m(X_c)^β` from `inner`'s subset marginals times `β`.
fn tempered_posterior<K: ConjugateKernel, P: NrmPrior>(
    inner: &K,
    beta: f64,
    prior: &P,
) -> Vec<f64> {
    let table: Vec<f64> = subset_ln_marginals(inner)
        .unwrap()
        .into_iter()
        .map(|l| beta * l)
        .collect();
    let p = prior.clone();
    ExactPosterior::from_subset_table(inner.n_points(), &table, move |sizes: &[usize]| {
        let v = if p.k_dependent() {
            p.ln_v_k(sizes.iter().sum(), sizes.len())
        } else {
            0.0
        };
        v + sizes.iter().map(|&s| p.ln_kappa(s)).sum::<f64>()
    })
    .unwrap()
    .probabilities()
    .to_vec()
}

/// Asserts that `mv` over `inner` tempered at [`BETA`] is stochastic, leaves the tempered
/// posterior invariant, is reversible with respect to it, and moves; and that the untempered
/// posterior is not invariant (the check can tell the two apart).
fn check<K, P, M>(inner: &K, prior: &P, mv: &mut M)
where
    K: ConjugateKernel,
    P: NrmPrior,
    M: Move<Tempered<K>, P>,
{
    let kernel = Tempered::new(inner.clone(), BETA).unwrap();
    let pi = tempered_posterior(inner, BETA, prior);
    let t = transition_matrix(&kernel, prior, mv).unwrap();
    let name = mv.name();
    assert!(
        t.row_sum_error() < TOL,
        "{name}: rows off by {}",
        t.row_sum_error()
    );
    assert!(
        t.invariance_error(&pi) < TOL,
        "{name}: |π_β K - π_β| = {}",
        t.invariance_error(&pi)
    );
    assert!(
        t.detailed_balance_error(&pi) < TOL,
        "{name}: detailed balance off by {}",
        t.detailed_balance_error(&pi)
    );
    let moved: f64 = (1..t.n_states()).map(|j| t.get(0, j)).sum();
    assert!(moved > 1e-3, "{name}: the single cluster never changes");
    let cold = tempered_posterior(inner, 1.0, prior);
    assert!(
        t.invariance_error(&cold) > 1e-6,
        "{name}: the untempered posterior is invariant too ({}); the check tells nothing",
        t.invariance_error(&cold)
    );
}

#[test]
fn tempered_gibbs_is_exact() {
    let (dp, nggp) = priors();
    let mut full = Gibbs::new(GibbsScan::Full).unwrap();
    check(&nw_kernel(4), &dp, &mut full);
    check(&nw_kernel(4), &nggp, &mut full);
    check(&md_kernel(4), &dp, &mut full);
    check(&diag_kernel(4), &nggp, &mut full);
    check(&bb_kernel(4), &dp, &mut full);
    let mut subset = Gibbs::new(GibbsScan::Subset(2)).unwrap();
    check(&nw_kernel(5), &nggp, &mut subset);
    check(&md_kernel(5), &dp, &mut subset);
    check(&bb_kernel(5), &nggp, &mut subset);
}

#[test]
fn tempered_sams_is_exact() {
    let (dp, nggp) = priors();
    for n in [4, 5] {
        check(&nw_kernel(n), &dp, &mut Sams::new());
        check(&nw_kernel(n), &nggp, &mut Sams::new());
        check(&md_kernel(n), &dp, &mut Sams::new());
        check(&diag_kernel(n), &nggp, &mut Sams::new());
        check(&bb_kernel(n), &dp, &mut Sams::new());
    }
}

#[test]
fn tempered_jain_neal_is_exact() {
    let (dp, nggp) = priors();
    for scans in [0, 1, 2] {
        check(&nw_kernel(4), &dp, &mut JainNeal::new(scans));
        check(&md_kernel(4), &nggp, &mut JainNeal::new(scans));
        check(&diag_kernel(4), &dp, &mut JainNeal::new(scans));
    }
}

#[test]
fn tempered_tg_sams_is_exact() {
    let (dp, nggp) = priors();
    for n in [4, 5] {
        check(&nw_kernel(n), &dp, &mut TgSams::new());
        check(&nw_kernel(n), &nggp, &mut TgSams::new());
        check(&diag_kernel(n), &dp, &mut TgSams::new());
        check(&md_kernel(n), &nggp, &mut TgSams::new());
    }
}

/// Pitman-Yor and the MFM: the `V(n, K)` shifts are the prior's and stay untempered.
#[test]
fn tempered_moves_are_exact_under_gibbs_type_priors() {
    let (py, mfm) = gibbs_type_priors();
    let mut gibbs = Gibbs::new(GibbsScan::Full).unwrap();
    check(&nw_kernel(4), &py[0], &mut gibbs);
    check(&nw_kernel(4), &mfm[0], &mut gibbs);
    check(&nw_kernel(4), &py[1], &mut Sams::new());
    check(&md_kernel(4), &mfm[1], &mut TgSams::new());
}

/// At `β = 1` the wrapper's values are the inner kernel's, bit for bit.
#[test]
fn untempered_wrapper_is_the_kernel() {
    let inner = nw_kernel(5);
    let k = Tempered::new(inner.clone(), 1.0).unwrap();
    let s = inner.stat_of(&[0, 2, 3]);
    let t = inner.stat_of(&[1]);
    assert_eq!(k.ln_marginal(&s).to_bits(), inner.ln_marginal(&s).to_bits());
    assert_eq!(
        k.ln_marginal_pair(&s, &t).to_bits(),
        inner.ln_marginal_pair(&s, &t).to_bits()
    );
    assert_eq!(
        k.ln_predictive(4, &s).to_bits(),
        inner.ln_predictive(4, &s).to_bits()
    );
    assert_eq!(
        k.ln_predictive_member(2, &s).map(f64::to_bits),
        inner.ln_predictive_member(2, &s).map(f64::to_bits)
    );
}

#[test]
fn tempering_refuses_bad_temperatures_and_latent_values() {
    for beta in [0.0, -0.5, 1.5, f64::NAN] {
        assert!(Tempered::new(nw_kernel(3), beta).is_err(), "β = {beta}");
    }
    use nrmm::data::table::{Column, ColumnType, TableData};
    use nrmm::kernel::mixed::{Mixed, MixedPriors};
    use nrmm::kernel::NwHyper;
    let real = |name: &str, values: Vec<f64>| Column {
        name: name.into(),
        kind: ColumnType::Real,
        levels: Vec::new(),
        values,
    };
    let table = TableData::new(vec![
        real("x", vec![0.0, f64::NAN, 1.0, 3.0]),
        real("y", vec![0.1, 0.5, 1.1, -0.9]),
    ])
    .unwrap();
    let priors = MixedPriors {
        xi: Vec::new(),
        psi: Vec::new(),
        count_rate: Vec::new(),
        r: 0.3,
        nu: 4.0,
        beta: 0.7,
    };
    let hyper = NwHyper::new(vec![1.0, 0.0], vec![0.5, 0.2, 0.2, 0.5], 0.3, 4.0).unwrap();
    let block = Mixed::full_with(table, priors, hyper).unwrap();
    assert!(block.has_latent());
    let e = Tempered::new(block, 0.5).unwrap_err().to_string();
    assert!(e.contains("missing"), "{e}");
}
