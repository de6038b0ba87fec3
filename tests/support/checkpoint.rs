//! Shared fixtures of the checkpoint and resume tests: the small data sets of both kernels,
//! records compared without their timing, a checkpoint's round trip through JSON, and the
//! "chain of resumes is the straight run" check.

#![allow(dead_code)]

use nrmm::data::generate::{self, DocLengths, NormalWishartSampler};
use nrmm::kernel::{ConjugateKernel, MultinomialDirichlet, NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::Prior;
use nrmm::rng::SeedPlan;
use nrmm::run::{Chain, ChainCheckpoint, Scheduled, SweepRecord};
use nrmm::sampler::State;
use std::sync::Arc;

/// A Normal-Wishart kernel over 60 two-dimensional points drawn from 4 clusters (seed 3),
/// with hyperparameters from the data (MATH §2.1).
pub fn nw_kernel() -> NormalWishart {
    let mut rng = SeedPlan::new(3).chain(0);
    let labels = generate::partition_uniform(60, 4, &mut rng).unwrap();
    let nw = NormalWishartSampler::new(&[0.0, 0.0], &[1.0, 0.0, 0.0, 1.0], 0.05, 5.0).unwrap();
    let (x, _) = generate::gaussian_mixture(&labels, &nw, &mut rng).unwrap();
    let hyper = NwHyper::from_data(&x).unwrap();
    NormalWishart::new(Arc::new(x), hyper).unwrap()
}

/// A Multinomial-Dirichlet kernel over 50 documents of a 40-word vocabulary from 3 topics
/// (seed 4).
pub fn md_kernel() -> MultinomialDirichlet {
    let mut rng = SeedPlan::new(4).chain(0);
    let labels = generate::partition_uniform(50, 3, &mut rng).unwrap();
    let (c, _) = generate::bag_of_words(
        &labels,
        40,
        0.2,
        DocLengths::Poisson { mean: 15.0 },
        &mut rng,
    )
    .unwrap();
    MultinomialDirichlet::new(Arc::new(c), 0.1).unwrap()
}

/// A record without its timing, which is the only thing allowed to differ.
pub fn timeless(r: &SweepRecord) -> SweepRecord {
    SweepRecord {
        seconds: 0.0,
        ..r.clone()
    }
}

/// `checkpoint` written to JSON and read back, asserting that it survives the trip.
pub fn through_json(checkpoint: &ChainCheckpoint<Prior>, what: &str) -> ChainCheckpoint<Prior> {
    let json = serde_json::to_string(checkpoint).unwrap();
    let back: ChainCheckpoint<Prior> = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, checkpoint, "{what}: the checkpoint survives JSON");
    back
}

/// Asserts that a chain over `kernel` from one cluster, checkpointed every 7 sweeps and
/// resumed from the JSON of each checkpoint, gives the records of the chain that only took
/// the checkpoints, over 40 sweeps with stream `seed`.
pub fn assert_resumes_are_the_straight_run<K: ConjugateKernel + 'static>(
    kernel: &K,
    prior: &Prior,
    seed: u64,
    schedule: impl Fn() -> Vec<Scheduled<K, Prior>>,
    what: &str,
) {
    let fresh = || State {
        partition: Partition::single(kernel),
        prior: prior.clone(),
    };
    let rng = || SeedPlan::new(seed).chain(0);
    let mut straight = Chain::new(kernel, fresh(), rng(), schedule());
    let mut hopping = Chain::new(kernel, fresh(), rng(), schedule());
    for sweep in 1..=40u64 {
        let (a, b) = (straight.sweep().unwrap(), hopping.sweep().unwrap());
        assert_eq!(timeless(&a), timeless(&b), "{what}: sweep {sweep}");
        if sweep % 7 == 0 {
            straight.checkpoint().unwrap();
            let text = serde_json::to_string(&hopping.checkpoint().unwrap()).unwrap();
            hopping =
                Chain::resume(kernel, serde_json::from_str(&text).unwrap(), schedule()).unwrap();
        }
    }
}
