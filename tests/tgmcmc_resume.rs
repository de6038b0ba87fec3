//! Exact resume of the tree-guided samplers with their hyperparameters resampled.
//!
//! * `tgmcmc`: TG-SAMS builds its canonical trees at a reference prior, which the schedule
//!   fixes to the chain's initial prior; a chain resumed from a checkpoint (JSON and back)
//!   continues exactly as the chain that wrote it. Giving the resumed move the checkpoint's
//!   prior as its reference instead changes the trees and the chain: the test can fail.
//! * `tgmcmc-paper`: its forest is history-dependent state, saved as tree shapes keyed by point
//!   indices and rebuilt on resume; the rebuilt forest passes `validate()`, has the saved
//!   shapes, and the resumed chain continues exactly. Resuming without the saved trees
//!   (rebuilding them from the partition) changes the chain.

use nrmm::kernel::{ConjugateKernel, NormalWishart};
use nrmm::partition::Partition;
use nrmm::prior::{AlphaUpdate, Dp, GammaPrior, Nggp, NggpHyperPriors, NrmPrior, Prior};
use nrmm::rng::SeedPlan;
use nrmm::run::{Chain, ChainCheckpoint, Scheduled};
use nrmm::sampler::tgmcmc::{tgmcmc_paper_schedule, tgmcmc_schedule};
use nrmm::sampler::{GibbsScan, Move, RngChooser, State, TgmcmcPaper};

use crate::support::checkpoint;
use checkpoint::{
    assert_resumes_are_the_straight_run, md_kernel, nw_kernel, through_json, timeless,
};

/// Priors whose hyperparameters are resampled.
fn priors() -> Vec<Prior> {
    vec![
        Prior::Dp(
            Dp::with_alpha_prior(1.0, GammaPrior::reference(), AlphaUpdate::EscobarWest).unwrap(),
        ),
        Prior::Nggp(Nggp::new(1.0, 0.5, 1.0, NggpHyperPriors::reference()).unwrap()),
    ]
}

/// The two tree-guided schedules with the hyperparameter update; `reference` is the prior
/// TG-SAMS builds its trees at.
fn schedule<K: ConjugateKernel + 'static>(
    sampler: &str,
    reference: &Prior,
) -> Vec<Scheduled<K, Prior>> {
    match sampler {
        "tgmcmc" => tgmcmc_schedule(reference, 3, GibbsScan::Subset(20), 1, true).unwrap(),
        "tgmcmc-paper" => tgmcmc_paper_schedule(3, 2, true),
        other => panic!("no sampler {other}"),
    }
}

/// A chain over `kernel` from singletons, run `before` sweeps, and its checkpoint through JSON.
fn checkpointed<'k, K: ConjugateKernel + 'static>(
    kernel: &'k K,
    prior: &Prior,
    sampler: &str,
    seed: u64,
    before: u64,
) -> (Chain<'k, K, Prior>, ChainCheckpoint<Prior>) {
    let state = State {
        partition: Partition::singletons(kernel),
        prior: prior.clone(),
    };
    let mut chain = Chain::new(
        kernel,
        state,
        SeedPlan::new(seed).chain(1),
        schedule(sampler, prior),
    );
    for _ in 0..before {
        chain.sweep().unwrap();
    }
    let checkpoint = chain.checkpoint().unwrap();
    (chain, through_json(&checkpoint, sampler))
}

/// Whether `after` sweeps of `a` and `b` agree exactly (records, partitions, priors, streams).
fn continue_alike<K: ConjugateKernel>(
    mut a: Chain<'_, K, Prior>,
    mut b: Chain<'_, K, Prior>,
    after: u64,
) -> bool {
    for _ in 0..after {
        let (ra, rb) = (a.sweep().unwrap(), b.sweep().unwrap());
        if timeless(&ra) != timeless(&rb) || ra.ln_joint.to_bits() != rb.ln_joint.to_bits() {
            return false;
        }
    }
    let same_state = a.state().partition.snapshot() == b.state().partition.snapshot()
        && a.state().prior == b.state().prior;
    let (_, rng_a) = a.into_parts();
    let (_, rng_b) = b.into_parts();
    same_state && rng_a == rng_b
}

/// The prior of the checkpoint must have moved away from the initial one, or the tests of
/// the reference prior would prove nothing.
fn moved(initial: &Prior, checkpoint: &ChainCheckpoint<Prior>) {
    assert_ne!(
        initial.hyper_values(),
        checkpoint.prior.hyper_values(),
        "the hyperparameters were resampled before the checkpoint"
    );
}

fn check_resume<K: ConjugateKernel + 'static>(kernel: &K, prior: &Prior, sampler: &str) {
    let (chain, checkpoint) = checkpointed(kernel, prior, sampler, 11, 15);
    moved(prior, &checkpoint);
    if sampler == "tgmcmc-paper" {
        assert_eq!(checkpoint.aux.len(), 1, "the paper move saves its trees");
    }
    let resumed = Chain::resume(kernel, checkpoint, schedule(sampler, prior)).unwrap();
    assert!(
        continue_alike(chain, resumed, 25),
        "{sampler} under {prior:?}: the resumed chain differs from the chain that went on"
    );
}

#[test]
fn resumed_tree_guided_chains_continue_exactly() {
    let nw = nw_kernel();
    let md = md_kernel();
    for prior in priors() {
        for sampler in ["tgmcmc", "tgmcmc-paper"] {
            check_resume(&nw, &prior, sampler);
            check_resume(&md, &prior, sampler);
        }
    }
}

/// A chain checkpointed every few sweeps and resumed each time is the chain that only took
/// the checkpoints.
#[test]
fn a_chain_of_tree_guided_resumes_is_the_straight_run() {
    let kernel = nw_kernel();
    let prior = priors().pop().unwrap();
    for sampler in ["tgmcmc", "tgmcmc-paper"] {
        assert_resumes_are_the_straight_run(
            &kernel,
            &prior,
            2,
            || schedule(sampler, &prior),
            sampler,
        );
    }
}

#[test]
fn a_resumed_tgmcmc_with_the_resumed_prior_as_reference_diverges() {
    let kernel = nw_kernel();
    let prior = priors().pop().unwrap();
    let (chain, checkpoint) = checkpointed(&kernel, &prior, "tgmcmc", 11, 15);
    moved(&prior, &checkpoint);
    let wrong_reference = checkpoint.prior.clone();
    let resumed = Chain::resume(&kernel, checkpoint, schedule("tgmcmc", &wrong_reference)).unwrap();
    assert!(!continue_alike(chain, resumed, 25));
}

/// The saved trees matter: a resumed tgmcmc-paper chain whose move rebuilds its trees from
/// the partition (as it would with no saved state) leaves the straight run.
#[test]
fn a_resumed_tgmcmc_paper_without_its_trees_diverges() {
    let kernel = nw_kernel();
    let prior = priors().pop().unwrap();
    let (chain, mut checkpoint) = checkpointed(&kernel, &prior, "tgmcmc-paper", 11, 15);
    assert!(checkpoint.aux[0].is_some());
    checkpoint.aux.clear();
    let resumed = Chain::resume(&kernel, checkpoint, schedule("tgmcmc-paper", &prior)).unwrap();
    assert!(!continue_alike(chain, resumed, 25));
}

/// At the level of the move: the forest rebuilt from a checkpoint passes every invariant, has
/// the saved shapes, and the move and the one it was saved from, stepped side by side, keep
/// identical forests (shapes and potentials to the bit) and partitions.
#[test]
fn the_paper_forest_is_rebuilt_identically() {
    let kernel = nw_kernel();
    let prior = priors().pop().unwrap();
    let mut state = State {
        partition: Partition::singletons(&kernel),
        prior: prior.clone(),
    };
    let mut rng = SeedPlan::new(5).chain(0);
    let mut live = TgmcmcPaper::<NormalWishart>::new(3, 2).with_hyper(true);
    for _ in 0..12 {
        Move::<_, Prior>::step(
            &mut live,
            &kernel,
            &mut state,
            &mut RngChooser::new(&mut rng),
        )
        .unwrap();
    }
    let shapes = live.forest().unwrap().shapes();
    state.partition = Partition::restore(&kernel, &state.partition.snapshot()).unwrap();
    let aux = Move::<_, Prior>::save_aux(&live).unwrap();
    let text = serde_json::to_string(&aux).unwrap();
    let mut back = TgmcmcPaper::<NormalWishart>::new(3, 2).with_hyper(true);
    Move::<_, Prior>::restore_aux(
        &mut back,
        &kernel,
        &state,
        serde_json::from_str(&text).unwrap(),
    )
    .unwrap();
    let restored = back.forest().unwrap();
    restored.validate(&kernel, &state.prior).unwrap();
    assert_eq!(restored.shapes(), shapes);
    assert_eq!(
        restored.labels().unwrap(),
        state.partition.canonical_labels()
    );
    let (mut state_b, mut rng_b) = (state.clone(), rng.clone());
    for step in 0..10 {
        Move::<_, Prior>::step(
            &mut live,
            &kernel,
            &mut state,
            &mut RngChooser::new(&mut rng),
        )
        .unwrap();
        Move::<_, Prior>::step(
            &mut back,
            &kernel,
            &mut state_b,
            &mut RngChooser::new(&mut rng_b),
        )
        .unwrap();
        let (fa, fb) = (live.forest().unwrap(), back.forest().unwrap());
        assert_eq!(fa.shapes(), fb.shapes(), "step {step}");
        assert_eq!(fa.ln_phi_sum().to_bits(), fb.ln_phi_sum().to_bits());
        assert_eq!(state.partition.snapshot(), state_b.partition.snapshot());
        assert_eq!(state.prior, state_b.prior);
        fb.validate(&kernel, &state_b.prior).unwrap();
    }
}

/// Damaged saved trees are a clear error, never a panic.
#[test]
fn damaged_paper_trees_are_refused() {
    let kernel = nw_kernel();
    let prior: Prior = Dp::new(1.0).unwrap().into();
    let state = State {
        partition: Partition::single(&kernel),
        prior,
    };
    let n = kernel.n_points();
    let all: Vec<serde_json::Value> = (0..n).map(|i| serde_json::json!([i])).collect();
    let mut duplicate = all.clone();
    duplicate[1] = serde_json::json!([0]);
    let cases = [
        (
            serde_json::json!({ "trees": all[1..] }),
            "no leaf for point 0",
        ),
        (
            serde_json::json!({ "trees": duplicate }),
            "no other leaf holds",
        ),
        (serde_json::json!({ "trees": [[null, 0]] }), "unfinished"),
        (serde_json::json!({ "trees": [[0, 1]] }), "after the end"),
        (serde_json::json!({ "trees": [[n]] }), "no other leaf holds"),
        (serde_json::json!({ "trees": [[]] }), "unfinished"),
        (serde_json::json!({ "forest": 3 }), "not a set of trees"),
    ];
    for (value, needle) in cases {
        let mut mv = TgmcmcPaper::<NormalWishart>::new(1, 1);
        let e = Move::<_, Prior>::restore_aux(&mut mv, &kernel, &state, Some(value.clone()))
            .expect_err("damaged trees")
            .to_string();
        assert!(e.contains(needle), "{value}: {e}");
    }
}
