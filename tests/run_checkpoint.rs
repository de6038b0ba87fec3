//! Checkpoint and resume at the library level: a chain resumed from a checkpoint (written to
//! JSON and read back) continues exactly as the chain that wrote it, sweep for sweep and bit for
//! bit, for every sampler, both kernels and both priors with their hyperparameters resampled.

use nrmm::kernel::ConjugateKernel;
use nrmm::partition::Partition;
use nrmm::prior::{AlphaUpdate, Dp, GammaPrior, Nggp, NggpHyperPriors, Prior};
use nrmm::rng::SeedPlan;
use nrmm::run::{Chain, ChainCheckpoint, Scheduled};
use nrmm::sampler::{Gibbs, GibbsScan, HyperMove, JainNeal, Sams, State};

use crate::support::checkpoint;
use checkpoint::{
    assert_resumes_are_the_straight_run, md_kernel, nw_kernel, through_json, timeless,
};

fn priors() -> Vec<Prior> {
    vec![
        Prior::Dp(Dp::new(1.0).unwrap()),
        Prior::Dp(
            Dp::with_alpha_prior(1.0, GammaPrior::reference(), AlphaUpdate::EscobarWest).unwrap(),
        ),
        Prior::Nggp(Nggp::new(1.0, 0.5, 1.0, NggpHyperPriors::reference()).unwrap()),
    ]
}

/// The schedules of the command line's samplers, plus the hyperparameter move.
fn schedule<K: ConjugateKernel + 'static>(sampler: &str) -> Vec<Scheduled<K, Prior>> {
    let gibbs = || Scheduled {
        mv: Box::new(Gibbs::new(GibbsScan::Full).unwrap()),
        repeats: 1,
    };
    let mut moves = match sampler {
        "gibbs" => vec![gibbs()],
        "gibbs-sub" => vec![Scheduled {
            mv: Box::new(Gibbs::new(GibbsScan::Subset(7)).unwrap()),
            repeats: 1,
        }],
        "jain-neal" => vec![
            Scheduled {
                mv: Box::new(JainNeal::new(3)),
                repeats: 2,
            },
            gibbs(),
        ],
        "sams" => vec![
            Scheduled {
                mv: Box::new(Sams::new()),
                repeats: 3,
            },
            gibbs(),
        ],
        other => panic!("no sampler {other}"),
    };
    moves.push(Scheduled {
        mv: Box::new(HyperMove),
        repeats: 1,
    });
    moves
}

/// Runs `before` sweeps, checkpoints through JSON, and checks that `after` more sweeps of the
/// original chain and of a resumed one agree exactly.
fn check_resume<K: ConjugateKernel + 'static>(kernel: &K, prior: &Prior, sampler: &str) {
    let (before, after) = (15, 25);
    let state = State {
        partition: Partition::singletons(kernel),
        prior: prior.clone(),
    };
    let mut chain = Chain::new(kernel, state, SeedPlan::new(9).chain(2), schedule(sampler));
    for _ in 0..before {
        chain.sweep().unwrap();
    }
    let checkpoint = chain.checkpoint().unwrap();
    chain.state().partition.validate(kernel, 1e-12).unwrap();
    let back = through_json(&checkpoint, sampler);
    let mut resumed = Chain::resume(kernel, back, schedule(sampler)).unwrap();
    assert_eq!(resumed.sweeps_done(), before);
    assert_eq!(resumed.seconds(), chain.seconds());
    for _ in 0..after {
        let (a, b) = (chain.sweep().unwrap(), resumed.sweep().unwrap());
        assert_eq!(
            timeless(&a),
            timeless(&b),
            "{sampler} under {prior:?}: sweep {}",
            a.sweep
        );
        assert_eq!(a.ln_joint.to_bits(), b.ln_joint.to_bits());
    }
    assert_eq!(
        chain.state().partition.snapshot(),
        resumed.state().partition.snapshot()
    );
    assert_eq!(chain.state().prior, resumed.state().prior);
    let (_, rng_a) = chain.into_parts();
    let (_, rng_b) = resumed.into_parts();
    assert_eq!(rng_a, rng_b);
}

#[test]
fn resumed_normal_wishart_chains_continue_exactly() {
    let kernel = nw_kernel();
    for prior in priors() {
        for sampler in ["gibbs", "gibbs-sub", "jain-neal", "sams"] {
            check_resume(&kernel, &prior, sampler);
        }
    }
}

#[test]
fn resumed_multinomial_dirichlet_chains_continue_exactly() {
    let kernel = md_kernel();
    for prior in priors() {
        for sampler in ["gibbs", "jain-neal", "sams"] {
            check_resume(&kernel, &prior, sampler);
        }
    }
}

/// Checkpoints taken every few sweeps, each resumed in turn, give the same chain as one that
/// only took them: a long run split over many processes is the run that never stopped.
#[test]
fn a_chain_of_resumes_is_the_straight_run() {
    let kernel = nw_kernel();
    let prior = priors().pop().unwrap();
    assert_resumes_are_the_straight_run(&kernel, &prior, 1, || schedule("sams"), "sams");
}

#[test]
fn a_checkpoint_of_other_data_is_refused() {
    let kernel = nw_kernel();
    let mut chain = Chain::new(
        &kernel,
        State {
            partition: Partition::single(&kernel),
            prior: priors().remove(0),
        },
        SeedPlan::new(1).chain(0),
        schedule("gibbs"),
    );
    chain.sweep().unwrap();
    let checkpoint = chain.checkpoint().unwrap();
    let other = md_kernel();
    let e = Chain::resume(&other, checkpoint.clone(), schedule("gibbs"))
        .err()
        .expect("50 documents are not the 60 points of the checkpoint")
        .to_string();
    assert!(e.contains("60 points"), "{e}");
    let bad = ChainCheckpoint {
        seconds: f64::NAN,
        ..checkpoint
    };
    assert!(Chain::resume(&kernel, bad, schedule("gibbs")).is_err());
}

mod random {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Any seed, sampler, prior and checkpoint sweep: the snapshot restores a valid
        /// partition with the same layout, and the resumed chain continues exactly.
        #[test]
        fn resume_is_exact_from_any_sweep(
            seed in 0u64..1000,
            sampler in prop::sample::select(vec!["gibbs", "gibbs-sub", "jain-neal", "sams"]),
            prior in 0usize..3,
            at in 1u64..25,
        ) {
            let kernel = nw_kernel();
            let prior = priors().remove(prior);
            let state = State {
                partition: Partition::single(&kernel),
                prior,
            };
            let mut chain =
                Chain::new(&kernel, state, SeedPlan::new(seed).chain(1), schedule(sampler));
            for _ in 0..at {
                chain.sweep().unwrap();
            }
            let before = chain.state().partition.snapshot();
            let checkpoint = chain.checkpoint().unwrap();
            prop_assert_eq!(&checkpoint.partition, &before);
            let text = serde_json::to_string(&checkpoint).unwrap();
            let mut resumed =
                Chain::resume(&kernel, serde_json::from_str(&text).unwrap(), schedule(sampler))
                    .unwrap();
            resumed.state().partition.validate(&kernel, 1e-12).unwrap();
            for _ in 0..8 {
                let (a, b) = (chain.sweep().unwrap(), resumed.sweep().unwrap());
                prop_assert_eq!(timeless(&a), timeless(&b));
            }
        }
    }
}
