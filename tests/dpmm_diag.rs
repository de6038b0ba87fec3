//! The exact sub-cluster sampler (MATH §6.4), which draws explicit component parameters
//! ([`nrmm::kernel::ParametricKernel`]), on the diagonal kernel: its visits to the partitions
//! of data set B (MATH §5.3) match the exact posterior within twice the noise floor, with the
//! method and bound of `tests/dpmm_tv.rs` (chains from one cluster and from singletons, a
//! tenth burnt in, the effective size by batch means). Seconds in release.

use crate::support;

use nrmm::data::generate::data_set_b;
use nrmm::exact::Rgs;
use nrmm::kernel::{DiagHyper, Diagonal};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Nggp, Prior};
use nrmm::rng::SeedPlan;
use nrmm::run::{Chain, Scheduled};
use nrmm::sampler::{State, SubCluster, SubClusterOptions};
use std::sync::Arc;
use support::exact_posterior;

const CHAINS: usize = 4;
const BATCHES: usize = 20;
const SWEEPS: usize = 10_000;

fn tv_of_subcluster(prior: Prior, seed: u64) -> (f64, f64) {
    let data = data_set_b();
    let hyper = DiagHyper::from_data(&data, 0.25, 0.1, 3.0).unwrap();
    let kernel = Diagonal::new(Arc::new(data), hyper).unwrap();
    let post = exact_posterior(&kernel, &prior);
    let burn_in = SWEEPS / 10;
    let batch_len = (SWEEPS - burn_in) / BATCHES;
    let plan = SeedPlan::new(seed);
    let mut visited = Vec::with_capacity(CHAINS);
    for c in 0..CHAINS {
        let partition = if c % 2 == 0 {
            Partition::single(&kernel)
        } else {
            Partition::singletons(&kernel)
        };
        let state = State {
            partition,
            prior: prior.clone(),
        };
        let moves = vec![Scheduled {
            mv: Box::new(SubCluster::new(SubClusterOptions {
                launch_iters: 2,
                proposals: 2,
            })) as Box<dyn nrmm::sampler::Move<Diagonal, Prior>>,
            repeats: 1,
        }];
        let mut chain = Chain::new(&kernel, state, plan.chain(c as u64), moves);
        for _ in 0..burn_in {
            chain.sweep().unwrap();
        }
        let mut v = Vec::with_capacity(BATCHES * batch_len);
        for _ in 0..BATCHES * batch_len {
            chain.sweep().unwrap();
            let labels = chain.state().partition.canonical_labels();
            v.push(post.index_of(&Rgs::from_labels(&labels).unwrap()).unwrap());
        }
        visited.push(v);
    }
    let m = post.chain_tv(&visited, BATCHES).unwrap();
    println!(
        "N_eff {:.0} TV {:.4} E[TV] {:.4}",
        m.n_eff, m.tv, m.expected_tv
    );
    (m.tv, m.expected_tv)
}

#[test]
fn subcluster_on_the_diagonal_kernel_visits_match_exact_posterior() {
    for (i, prior) in [
        Prior::from(Dp::new(1.0).unwrap()),
        Prior::from(Nggp::fixed(1.0, 0.5, 2.0).unwrap()),
    ]
    .into_iter()
    .enumerate()
    {
        let (tv, expected) = tv_of_subcluster(prior, 810 + i as u64);
        assert!(tv <= 2.0 * expected, "TV {tv} above twice E[TV] {expected}");
    }
}
