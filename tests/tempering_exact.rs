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
    assert_exact, bb_kernel, diag_kernel, gibbs_type_priors, ln_prior_of_sizes, md_kernel,
    nw_kernel, priors, TOL,
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
    ExactPosterior::from_subset_table(inner.n_points(), &table, ln_prior_of_sizes(prior))
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
    assert_exact(name, &t, &pi);
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

// ---- The swap step of the ladder, on the product space of two and three replicas ----

use nrmm::exact::{Rgs, RgsIndex, SetPartitions};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Prior};
use nrmm::rng::SeedPlan;
use nrmm::run::ladder::{temper, Ladder};
use nrmm::run::{Chain, SamplerKind, SamplerSettings};
use nrmm::sampler::{PathEnumerator, State};
use std::collections::BTreeMap;

/// The swap step after sweep `sweep` of a ladder at `betas` over `inner`'s data, enumerated
/// from every product state (one partition per replica): returns the sparse transition
/// `from → {to: probability}` over product indices `Σ_r index_r B^r` and the product target
/// `Π_r π_{β_r}`.
fn swap_transitions<K: ConjugateKernel + 'static>(
    inner: &K,
    betas: &[f64],
    prior: &Prior,
    sweep: u64,
) -> (Vec<BTreeMap<usize, f64>>, Vec<f64>) {
    let n = inner.n_points();
    let index = RgsIndex::new(n).unwrap();
    let b = index.n_partitions();
    let r = betas.len();
    let partitions: Vec<Vec<usize>> = SetPartitions::new(n)
        .unwrap()
        .map(|rgs| rgs.labels().iter().map(|&l| l as usize).collect())
        .collect();
    let marginals: Vec<Vec<f64>> = betas
        .iter()
        .map(|&beta| tempered_posterior(inner, beta, prior))
        .collect();
    let start = State {
        partition: Partition::single(inner),
        prior: prior.clone(),
    };
    let schedules = (1..r).map(|_| Vec::new()).collect();
    let mut ladder = Ladder::new(inner, betas, &start, schedules, SeedPlan::new(1), 0).unwrap();
    let states = b.pow(r as u32);
    let mut rows = vec![BTreeMap::new(); states];
    let mut target = vec![0.0; states];
    for (from, row) in rows.iter_mut().enumerate() {
        let digits: Vec<usize> = (0..r).map(|k| from / b.pow(k as u32) % b).collect();
        target[from] = digits.iter().zip(&marginals).map(|(&d, m)| m[d]).product();
        let mut paths = PathEnumerator::new();
        while paths.next_path() {
            let mut cold = State {
                partition: Partition::from_labels(inner, &partitions[digits[0]]).unwrap(),
                prior: prior.clone(),
            };
            ladder
                .set_states(
                    digits[1..]
                        .iter()
                        .map(|&d| (partitions[d].clone(), prior.clone()))
                        .collect(),
                )
                .unwrap();
            ladder.swap_with(inner, &mut cold, sweep, &mut paths);
            let mut to = index
                .index_of(&Rgs::from_labels(&cold.partition.canonical_labels()).unwrap())
                .unwrap();
            for (k, s) in ladder.states().enumerate() {
                let d = index
                    .index_of(&Rgs::from_labels(&s.partition.canonical_labels()).unwrap())
                    .unwrap();
                to += d * b.pow(k as u32 + 1);
            }
            *row.entry(to).or_insert(0.0) += paths.ln_prob().exp();
        }
    }
    (rows, target)
}

/// Asserts that the swap step is stochastic, leaves the product target invariant, is
/// reversible, and exchanges states with positive probability.
fn check_swap<K: ConjugateKernel + 'static>(inner: &K, betas: &[f64], prior: &Prior, sweep: u64) {
    let (rows, pi) = swap_transitions(inner, betas, prior, sweep);
    let mut flow = vec![0.0; pi.len()];
    let mut moved = 0.0;
    for (from, row) in rows.iter().enumerate() {
        let total: f64 = row.values().sum();
        assert!((total - 1.0).abs() < TOL, "row {from} sums to {total}");
        for (&to, &p) in row {
            flow[to] += pi[from] * p;
            if to != from {
                moved += pi[from] * p;
                let back = rows[to].get(&from).copied().unwrap_or(0.0);
                let gap = (pi[from] * p - pi[to] * back).abs();
                assert!(gap < TOL, "detailed balance {from} <-> {to} off by {gap}");
            }
        }
    }
    let worst = flow
        .iter()
        .zip(&pi)
        .map(|(f, p)| (f - p).abs())
        .fold(0.0, f64::max);
    assert!(
        worst < TOL,
        "|π K - π| = {worst} (β {betas:?}, sweep {sweep})"
    );
    assert!(moved > 1e-3, "the swap never exchanges states ({moved})");
}

#[test]
fn swaps_of_two_replicas_are_exact() {
    let dp = Prior::Dp(Dp::new(1.0).unwrap());
    let (_, nggp) = priors();
    let nggp = Prior::Nggp(nggp);
    for sweep in [0, 1] {
        check_swap(&nw_kernel(4), &[1.0, 0.4], &dp, sweep);
        check_swap(&md_kernel(4), &[1.0, 0.3], &nggp, sweep);
        check_swap(&diag_kernel(4), &[1.0, 0.7], &dp, sweep);
    }
}

/// Three replicas: pair (0, 1) after even sweeps, (1, 2) after odd ones, each exact.
#[test]
fn swaps_of_three_replicas_are_exact() {
    let dp = Prior::Dp(Dp::new(1.0).unwrap());
    for sweep in [0, 1] {
        check_swap(&nw_kernel(4), &[1.0, 0.6, 0.25], &dp, sweep);
    }
}

/// A tempered chain's own replica targets the untempered posterior: four chains of the
/// tempered samplers over five points, their visits within twice the TV a perfect sampler of
/// their effective size shows. Fixed seeds.
#[test]
fn tempered_chains_visit_the_posterior() {
    let inner = nw_kernel(5);
    let prior = Prior::Dp(Dp::new(1.0).unwrap());
    let post = ExactPosterior::dp(&inner, 1.0).unwrap();
    let (sweeps, batches) = (6_000, 20);
    for (kind, betas, seed) in [
        (SamplerKind::Gibbs, vec![1.0, 0.5, 0.25], 41),
        (SamplerKind::Tgmcmc, vec![1.0, 0.3], 42),
    ] {
        let settings = SamplerSettings {
            temperatures: betas.clone(),
            ..SamplerSettings::new(kind)
        };
        let plan = SeedPlan::new(seed);
        let mut visited = Vec::new();
        let mut accepted = 0;
        for c in 0..4u64 {
            let partition = if c % 2 == 0 {
                Partition::single(&inner)
            } else {
                Partition::singletons(&inner)
            };
            let state = State {
                partition,
                prior: prior.clone(),
            };
            let schedule = settings.schedule(false, &prior).unwrap();
            let chain = Chain::new(&inner, state, plan.chain(c), schedule);
            let mut chain = temper(chain, &settings, false, &prior, plan, c).unwrap();
            let mut v = Vec::with_capacity(sweeps);
            for t in 0..sweeps + sweeps / 10 {
                let record = chain.sweep().unwrap();
                accepted += record
                    .moves
                    .iter()
                    .filter(|(name, _)| name.starts_with("swap_"))
                    .map(|(_, info)| info.accepted)
                    .sum::<usize>();
                if t >= sweeps / 10 {
                    let labels = chain.state().partition.canonical_labels();
                    v.push(post.index_of(&Rgs::from_labels(&labels).unwrap()).unwrap());
                }
            }
            visited.push(v);
        }
        let tv = post.chain_tv(&visited, batches).unwrap();
        println!(
            "{kind} at β {betas:?}: N_eff {:.0} TV {:.4} E[TV] {:.4} ratio {:.2}, {accepted} swaps",
            tv.n_eff,
            tv.tv,
            tv.expected_tv,
            tv.ratio_to_floor()
        );
        assert!(accepted > 100, "{kind}: {accepted} swaps accepted");
        assert!(
            tv.tv < 2.0 * tv.expected_tv,
            "{kind}: TV {} above twice the floor {}",
            tv.tv,
            tv.expected_tv
        );
    }
}
