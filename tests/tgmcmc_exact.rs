//! The exact tgMCMC moves are exact (MATH §5.4, §7.1 kernel-level check): TG-SAMS's one-step
//! transition matrix, enumerated over every decision (route, cluster, SampleSub node, anchors,
//! allocation order, allocations, both acceptance stages) from every partition of a tiny data
//! set, leaves the exact posterior invariant and is reversible; and the anchor-pair
//! probability the move evaluates for its reverse equals the enumerated probability of
//! drawing that pair.

use std::collections::BTreeMap;

use nrmm::exact::{transition_matrix, SetPartitions};
use nrmm::kernel::{ConjugateKernel, NormalWishart};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, NrmPrior};
use nrmm::sampler::{Chooser, Gibbs, GibbsScan, Move, PathEnumerator, State, StepInfo, TgSams};

use crate::exact_check;
use exact_check::{
    bb_kernel, bb_missing_kernel, diag_kernel, md_kernel, mixed_kernel, nw_kernel, posterior,
    priors, TOL,
};

fn check<K: ConjugateKernel, P: NrmPrior, M: Move<K, P>>(kernel: &K, prior: &P, mv: &mut M) {
    let name = mv.name();
    let t = exact_check::check(kernel, prior, mv);
    // The move must actually move: some off-diagonal mass from a typical state.
    let moved: f64 = (1..t.n_states()).map(|j| t.get(0, j)).sum();
    assert!(
        moved > 1e-3,
        "{name}: the single cluster never changes ({moved})"
    );
}

#[test]
fn tg_sams_is_exact_on_normal_wishart_data() {
    let (dp, nggp) = priors();
    for n in [2, 3, 4, 5] {
        check(&nw_kernel(n), &dp, &mut TgSams::new());
        check(&nw_kernel(n), &nggp, &mut TgSams::new());
    }
}

#[test]
fn tg_sams_is_exact_on_six_points() {
    let (dp, nggp) = priors();
    check(&nw_kernel(6), &dp, &mut TgSams::new());
    check(&md_kernel(6), &nggp, &mut TgSams::new());
}

/// The diagonal kernel: its O(1) predictive bound steers the tree descent.
#[test]
fn tg_sams_is_exact_on_diagonal_kernel_data() {
    let (dp, nggp) = priors();
    for n in [3, 5] {
        let kernel = diag_kernel(n);
        check(&kernel, &dp, &mut TgSams::new());
        check(&kernel, &nggp, &mut TgSams::new());
    }
}

#[test]
fn tg_sams_is_exact_on_count_data() {
    let (dp, nggp) = priors();
    for n in [4, 5] {
        check(&md_kernel(n), &dp, &mut TgSams::new());
        check(&md_kernel(n), &nggp, &mut TgSams::new());
    }
}

/// The Beta-Bernoulli kernel: binary data, no predictive bound (every descent evaluates).
#[test]
fn tg_sams_is_exact_on_binary_data() {
    let (dp, nggp) = priors();
    for n in [4, 6] {
        check(&bb_kernel(n), &dp, &mut TgSams::new());
        check(&bb_kernel(n), &nggp, &mut TgSams::new());
        check(&bb_missing_kernel(n), &dp, &mut TgSams::new());
        check(&mixed_kernel(n), &dp, &mut TgSams::new());
    }
}

#[test]
fn tg_sams_is_exact_for_any_route_probability() {
    let (dp, nggp) = priors();
    for p in [0.1, 0.8] {
        check(
            &nw_kernel(5),
            &dp,
            &mut TgSams::with_split_probability(p).unwrap(),
        );
        check(
            &md_kernel(5),
            &nggp,
            &mut TgSams::with_split_probability(p).unwrap(),
        );
    }
    for bad in [0.0, 1.0, -0.5, f64::NAN] {
        assert!(TgSams::<NormalWishart>::with_split_probability(bad).is_err());
    }
}

/// The reference prior of the trees is fixed at the first use: a move first used under one
/// prior and then run under another is still exact for the other (the trees only guide).
#[test]
fn tg_sams_stays_exact_when_the_prior_differs_from_the_tree_reference() {
    let kernel = nw_kernel(5);
    let mut mv = TgSams::new();
    let dp_ref = Dp::new(0.05).unwrap();
    let start = State {
        partition: Partition::single(&kernel),
        prior: dp_ref,
    };
    mv.ln_anchor_probability(&kernel, &start.partition, &start.prior, 0, 1)
        .unwrap();
    let (dp, nggp) = priors();
    check(&kernel, &dp, &mut mv);
    check(&kernel, &nggp, &mut mv);
}

/// One TG-SAMS proposal followed by a Gibbs scan, as one move: the exact schedule's sweep.
struct Sweep<K: ConjugateKernel> {
    tg: TgSams<K>,
    gibbs: Gibbs,
}

impl<K: ConjugateKernel, P: NrmPrior> Move<K, P> for Sweep<K> {
    fn name(&self) -> &'static str {
        "tg-sams + gibbs"
    }
    fn step(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
    ) -> nrmm::Result<StepInfo> {
        let mut info = self.tg.step(kernel, state, chooser)?;
        info.absorb(self.gibbs.step(kernel, state, chooser)?);
        Ok(info)
    }
}

#[test]
fn the_exact_sweep_is_invariant() {
    let (dp, nggp) = priors();
    let kernel = nw_kernel(4);
    let mut sweep = Sweep {
        tg: TgSams::new(),
        gibbs: Gibbs::new(GibbsScan::Full).unwrap(),
    };
    let t = transition_matrix(&kernel, &dp, &mut sweep).unwrap();
    assert!(t.invariance_error(&posterior(&kernel, &dp)) < TOL);
    let t = transition_matrix(&kernel, &nggp, &mut sweep).unwrap();
    assert!(t.invariance_error(&posterior(&kernel, &nggp)) < TOL);
}

/// For every partition, the probabilities of all enumerated anchor draws, summed per
/// unordered pair, equal `exp(ln_anchor_probability)`, and each draw reports that value.
fn check_anchor_probabilities<K: ConjugateKernel, P: NrmPrior>(kernel: &K, prior: &P) {
    let n = kernel.n_points();
    let mut mv = TgSams::new();
    let mut pairs_checked = 0;
    for rgs in SetPartitions::new(n).unwrap() {
        let part = Partition::from_labels(kernel, rgs.labels()).unwrap();
        let mut total: BTreeMap<(usize, usize), f64> = BTreeMap::new();
        let mut paths = PathEnumerator::new();
        while paths.next_path() {
            let draw = mv
                .draw_anchors(kernel, &part, prior, &mut paths)
                .unwrap()
                .expect("n ≥ 2");
            let key = (draw.i.min(draw.j), draw.i.max(draw.j));
            let eval = mv
                .ln_anchor_probability(kernel, &part, prior, draw.i, draw.j)
                .unwrap();
            assert!(
                (draw.ln_prob - eval).abs() < 1e-12,
                "{rgs}: draw reports {} for {key:?}, evaluation {eval}",
                draw.ln_prob
            );
            *total.entry(key).or_default() += paths.ln_prob().exp();
        }
        let sum: f64 = total.values().sum();
        assert!(
            (sum - 1.0).abs() < 1e-12,
            "{rgs}: pair probabilities sum to {sum}"
        );
        for i in 0..n {
            for j in i + 1..n {
                let enumerated = total.get(&(i, j)).copied().unwrap_or(0.0);
                let eval = mv
                    .ln_anchor_probability(kernel, &part, prior, i, j)
                    .unwrap()
                    .exp();
                let swapped = mv
                    .ln_anchor_probability(kernel, &part, prior, j, i)
                    .unwrap()
                    .exp();
                assert!(
                    (enumerated - eval).abs() < 1e-12 && (eval - swapped).abs() < 1e-15,
                    "{rgs}: pair ({i}, {j}) enumerated {enumerated}, evaluated {eval} / {swapped}"
                );
                pairs_checked += 1;
            }
        }
    }
    assert!(pairs_checked > 100);
}

#[test]
fn anchor_probabilities_equal_enumerated_draws() {
    let (dp, nggp) = priors();
    check_anchor_probabilities(&nw_kernel(5), &dp);
    check_anchor_probabilities(&nw_kernel(5), &nggp);
    check_anchor_probabilities(&md_kernel(5), &dp);
}

#[test]
fn anchor_evaluation_rejects_bad_pairs() {
    let kernel = nw_kernel(4);
    let part = Partition::single(&kernel);
    let (dp, _) = priors();
    let mut mv = TgSams::new();
    assert!(mv.ln_anchor_probability(&kernel, &part, &dp, 1, 1).is_err());
    assert!(mv.ln_anchor_probability(&kernel, &part, &dp, 0, 4).is_err());
}

/// A single point admits no proposal; two points alternate between their two partitions.
#[test]
fn tiny_data_sets_are_handled() {
    let kernel = nw_kernel(1);
    let (dp, _) = priors();
    let mut state = State {
        partition: Partition::single(&kernel),
        prior: dp.clone(),
    };
    let mut paths = PathEnumerator::new();
    assert!(paths.next_path());
    let info = Move::step(&mut TgSams::new(), &kernel, &mut state, &mut paths).unwrap();
    assert_eq!(info.proposed, 0);
    assert!(!paths.next_path());
}
