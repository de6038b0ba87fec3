//! One-step invariance of the exact sub-cluster sampler (MATH §6.4), checked directly by Monte
//! Carlo on tiny inputs.
//!
//! The launches draw continuous sub-cluster parameters, which path enumeration cannot follow,
//! so the Hastings ratios of the split/merge proposals are checked through their consequence:
//! if every ratio is right, one step started from the exact posterior `p(Π | X)` ends in
//! `p(Π | X)`. Each trial draws a start partition from the enumerated posterior of the 7
//! points of data set B (MATH §5.3; 877 partitions), applies one step of the move with its
//! own seeded stream, and records the end partition. The `TRIALS` ends are independent, so
//! their counts are multinomial and the Pearson statistic `X²` over the cells with at least
//! 5 expected visits (the rest pooled into one cell) has mean `df` and standard deviation
//! `√(2 df)` when the move is invariant; the tests require `X² ≤ df + 5√(2 df)`. A wrong
//! factor anywhere in a ratio (a proposal probability, a launch or allocation probability, a
//! prior term) moves mass between partitions and, at this sample size, `X²` far above that
//! bound: the last test shows it for the DPMM.jl-faithful variant, whose ratios are known to
//! be inexact, and doubling one proposal probability of one family gives `X²` about 7 times
//! `df` on data set A's first 5 points.
//!
//! Both proposal families run (each proposal picks one by a fair coin), with the launch
//! fitting its sub-clusters on the whole set and, in a second configuration, on a sample of
//! 2 points (so the subsampled launch of large sets is covered too); a third configuration
//! gives every set of more than one point the large-set proposals (spread anchors, restarts
//! on a sample of 3 points, launch sides sharpened, the allocation family for sets of at
//! most 4 points and, on larger ones, only for splits off and merges of single points), which
//! the sampler otherwise makes only on sets of more than 1,024 points (the allocation family's
//! limits: 16,384, and pieces of 1,024 above that).
//!
//! The Gibbs-type priors (two Pitman-Yor, two MFM) take the same three configurations and a
//! fourth, the restricted Gibbs pass alone (no proposals), which checks the weight law given
//! the partition on its own: with Pitman-Yor's `Dir(N_k)` in place of `Dir(N_k - σ)`, or
//! the MFM's `Dir(N_k)` in place of `Dir(N_k + γ)`, its `X²` lands far above the bound, and
//! so does the whole move's with the `V(n, K±1) / V(n, K)` of the split/merge ratios left
//! out.

use crate::support;

use nrmm::data::generate::data_set_b;
use nrmm::exact::{ExactPosterior, Rgs};
use nrmm::kernel::NormalWishart;
use nrmm::partition::Partition;
use nrmm::prior::{Dp, KPrior, Mfm, Nggp, PitmanYor, Prior};
use nrmm::rng::{uniform_open01, SeedPlan};
use nrmm::sampler::{
    DpmmOptions, Move, RngChooser, Splittable, State, SubCluster, SubClusterOptions,
};
use support::{exact_posterior, nw_reference};

/// Independent one-step trials per configuration (about 2 s each in release).
const TRIALS: usize = 200_000;

fn kernel() -> NormalWishart {
    nw_reference(data_set_b())
}

/// Pearson's statistic of `counts` against `TRIALS · probs` and its degrees of freedom, cells
/// with fewer than 5 expected visits pooled.
fn pearson(counts: &[u64], probs: &[f64]) -> (f64, usize) {
    let total = TRIALS as f64;
    let (mut x2, mut cells) = (0.0, 0);
    let (mut pooled_obs, mut pooled_exp) = (0.0, 0.0);
    for (&c, &p) in counts.iter().zip(probs) {
        let e = total * p;
        if e >= 5.0 {
            x2 += (c as f64 - e).powi(2) / e;
            cells += 1;
        } else {
            pooled_obs += c as f64;
            pooled_exp += e;
        }
    }
    if pooled_exp > 0.0 {
        x2 += (pooled_obs - pooled_exp).powi(2) / pooled_exp;
        cells += 1;
    }
    (x2, cells - 1)
}

/// Runs the trials of `make()` under `prior` and returns `(X², df)`.
fn one_step_chi2(
    prior: Prior,
    make: impl Fn() -> Box<dyn Move<NormalWishart, Prior>>,
    seed: u64,
) -> (f64, usize) {
    let kernel = kernel();
    let post: ExactPosterior = exact_posterior(&kernel, &prior);
    let probs = post.probabilities().to_vec();
    let plan = SeedPlan::new(seed);
    let mut counts = vec![0u64; probs.len()];
    let mut mv = make();
    for t in 0..TRIALS {
        let mut rng = plan.chain(t as u64);
        // The start: inverse CDF of the exact posterior.
        let u = uniform_open01(&mut rng);
        let mut acc = 0.0;
        let mut start = probs.len() - 1;
        for (s, &p) in probs.iter().enumerate() {
            acc += p;
            if u < acc {
                start = s;
                break;
            }
        }
        let rgs = post.rgs_at(start).unwrap();
        let mut state = State {
            partition: Partition::from_labels(&kernel, rgs.labels()).unwrap(),
            prior: prior.clone(),
        };
        let mut chooser = RngChooser::new(&mut rng);
        mv.step(&kernel, &mut state, &mut chooser).unwrap();
        let end = Rgs::from_labels(&state.partition.canonical_labels()).unwrap();
        counts[post.index_of(&end).unwrap()] += 1;
    }
    pearson(&counts, &probs)
}

fn bound(df: usize) -> f64 {
    df as f64 + 5.0 * (2.0 * df as f64).sqrt()
}

fn exact_move(sample: Option<usize>) -> Box<dyn Move<NormalWishart, Prior>> {
    let mv = SubCluster::new(SubClusterOptions {
        launch_iters: 2,
        proposals: 2,
    });
    match sample {
        Some(m) => Box::new(mv.with_launch_sample(m).unwrap()),
        None => Box::new(mv),
    }
}

/// The exact move with the large-set proposals on every set of two points or more.
fn large_set_move() -> Box<dyn Move<NormalWishart, Prior>> {
    let mv = SubCluster::new(SubClusterOptions {
        launch_iters: 2,
        proposals: 2,
    });
    Box::new(
        mv.with_launch_sample(2)
            .unwrap()
            .with_large_sets(1, 3, 4, 1)
            .unwrap(),
    )
}

#[test]
fn one_step_of_the_large_set_proposals_stays_at_the_posterior() {
    let dp: Prior = Dp::new(1.0).unwrap().into();
    let nggp: Prior = Nggp::fixed(1.0, 0.5, 2.0).unwrap().into();
    for (name, prior, seed) in [("DP", dp, 21), ("NGGP given u", nggp, 22)] {
        let (x2, df) = one_step_chi2(prior, large_set_move, seed);
        println!("{name}, large-set proposals: X² {x2:.1}, df {df}");
        assert!(x2 <= bound(df), "X² {x2:.1} above {:.1}", bound(df));
    }
}

#[test]
fn one_step_from_the_posterior_stays_there_dp() {
    let prior: Prior = Dp::new(1.0).unwrap().into();
    for (sample, seed) in [(None, 11), (Some(2), 12)] {
        let (x2, df) = one_step_chi2(prior.clone(), || exact_move(sample), seed);
        println!("DP, launch sample {sample:?}: X² {x2:.1}, df {df}");
        assert!(x2 <= bound(df), "X² {x2:.1} above {:.1}", bound(df));
    }
}

#[test]
fn one_step_from_the_posterior_stays_there_nggp_given_u() {
    let prior: Prior = Nggp::fixed(1.0, 0.5, 2.0).unwrap().into();
    let (x2, df) = one_step_chi2(prior, || exact_move(Some(2)), 13);
    println!("NGGP given u: X² {x2:.1}, df {df}");
    assert!(x2 <= bound(df), "X² {x2:.1} above {:.1}", bound(df));
}

#[test]
fn the_check_rejects_an_inexact_move() {
    let prior: Prior = Dp::new(1.0).unwrap().into();
    let (x2, df) = one_step_chi2(
        prior,
        || {
            Box::new(SubCluster::dpmm(DpmmOptions {
                merge_factor: 1.0,
                splittable: Splittable::Off,
            }))
        },
        14,
    );
    println!("DPMM.jl-faithful (Chang-Fisher ratios): X² {x2:.1}, df {df}");
    assert!(x2 > bound(df), "X² {x2:.1} within {:.1}", bound(df));
}

/// A constructor of the move under test.
type MakeMove = fn() -> Box<dyn Move<NormalWishart, Prior>>;

/// The restricted Gibbs pass alone: the weights given the partition and the labels among the
/// existing clusters.
fn restricted_move() -> Box<dyn Move<NormalWishart, Prior>> {
    Box::new(SubCluster::new(SubClusterOptions {
        launch_iters: 2,
        proposals: 0,
    }))
}

/// Two Pitman-Yor priors (a negative `θ`, a large `σ`) and two MFMs (Poisson and geometric
/// `K - 1`), named.
fn gibbs_type() -> Vec<(&'static str, Prior)> {
    vec![
        ("PY(-0.2, 0.4)", PitmanYor::fixed(-0.2, 0.4).unwrap().into()),
        ("PY(1.5, 0.7)", PitmanYor::fixed(1.5, 0.7).unwrap().into()),
        (
            "MFM(1, poisson:1)",
            Mfm::new(1.0, KPrior::Poisson { lambda: 1.0 }, None)
                .unwrap()
                .into(),
        ),
        (
            "MFM(0.4, geometric:0.3)",
            Mfm::new(0.4, KPrior::Geometric { p: 0.3 }, None)
                .unwrap()
                .into(),
        ),
    ]
}

#[test]
fn one_step_from_the_posterior_stays_there_gibbs_type() {
    let configs: [(&str, MakeMove); 4] = [
        ("restricted pass alone", restricted_move),
        ("whole launch", || exact_move(None)),
        ("launch sample 2", || exact_move(Some(2))),
        ("large-set proposals", large_set_move),
    ];
    for (p, (name, prior)) in gibbs_type().into_iter().enumerate() {
        for (c, (config, make)) in configs.iter().enumerate() {
            let seed = 100 + 10 * p as u64 + c as u64;
            let (x2, df) = one_step_chi2(prior.clone(), make, seed);
            println!("{name}, {config}: X² {x2:.1}, df {df}");
            assert!(
                x2 <= bound(df),
                "{name}, {config}: X² {x2:.1} above {:.1}",
                bound(df)
            );
        }
    }
}
