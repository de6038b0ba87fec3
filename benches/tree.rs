//! Criterion benchmarks of the tree engine and the tree-guided samplers under the reference
//! model (DP with α = 1, Normal-Wishart hyperparameters from the data as in the reference code,
//! MATH §2.1) on the paper's `toy` (1300 × 2) and `10k` (10000 × 6) data sets:
//!
//! * `ibhc_build/{exact,noisy}`: a whole exact / noisy IBHC forest (MATH §3.4), a fresh
//!   insertion order per build;
//! * `seq_insert`: SeqInsert + Update of one point's leaf into its own cluster's tree, after
//!   detaching it there (the detach is not timed), on the exact IBHC forest;
//! * `sample_sub`: SampleSub over the internal nodes of the largest tree (MATH §4.1), forward
//!   draw and reverse evaluation of the drawn node;
//! * `stoc_insert`: the StocInsert of a split (MATH §4.2) of a uniformly drawn tree with at
//!   least two points, at a node drawn by SampleSub: the trees freed by Destroy re-inserted
//!   into the two children (only the StocInsert is timed; the tree is then restored);
//! * `tgmcmc_paper_sweep`: one reference sweep (G = 10, D = 2, MATH §4.5), continuing one chain
//!   from the noisy-IBHC forest;
//! * `tg_sams_step`: one TG-SAMS proposal (MATH §5.4), continuing one chain from the
//!   ground-truth partition.
//!
//! Run: `cargo bench --bench tree` (about three minutes; `BENCHMARKS.md` has the results).
//!
//! Data come from `../shared/data/{toy,10k}/X.txt` with `gt_labels.txt` (relative to the
//! repository root; the environment variable `NRMM_DATA_DIR` overrides the folder). When a
//! data set is absent the benchmark says so and uses a seeded stand-in of the same shape:
//! `toy_like` for `toy`, and for `10k` a Normal-Wishart mixture of 10000 points in 6
//! dimensions over a Chinese-restaurant partition with about 120 clusters.
//!
//! Times are this thread's CPU time (`CLOCK_THREAD_CPUTIME_ID` on Linux, wall time
//! elsewhere), like the reference figures.

use std::time::Duration;

#[path = "../examples/support/cpu_clock.rs"]
mod cpu_clock;
use cpu_clock::CpuClock;
#[path = "support/mod.rs"]
mod support;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use nrmm::kernel::{ConjugateKernel, NormalWishart};
use nrmm::partition::Partition;
use nrmm::prior::Dp;
use nrmm::rng::SeedPlan;
use nrmm::sampler::{Chooser, Move, RngChooser, State, TgSams, TgmcmcPaper};
use nrmm::tree::{Candidates, Forest, IbhcMode, NodeKey, StocChoice};

/// A data set with its kernel and ground-truth labels.
struct Set {
    name: &'static str,
    kernel: NormalWishart,
    labels: Vec<usize>,
}

/// The kernel and labels of data set `name`, from the shared data folder or a stand-in.
fn setup(name: &'static str) -> Set {
    let (data, labels) = match support::read(name) {
        Some((data, Some(labels))) => (data, labels),
        _ => support::stand_in(name),
    };
    Set {
        name,
        kernel: support::reference_kernel(data),
        labels,
    }
}

fn dp() -> Dp {
    Dp::new(1.0).expect("alpha = 1")
}

/// The IBHC forest of the data in `mode` from insertion-order seed `seed`.
fn ibhc(set: &Set, mode: IbhcMode, seed: u64) -> Forest<NormalWishart> {
    let mut rng = SeedPlan::new(seed).chain(1000);
    Forest::ibhc(&set.kernel, &dp(), mode, &mut RngChooser::new(&mut rng)).expect("IBHC")
}

/// Whole-forest builds, one insertion order per build.
fn builds(c: &mut Criterion, set: &Set) {
    let mut g = c.benchmark_group("ibhc_build");
    if set.kernel.n_points() > 5000 {
        g.sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .measurement_time(Duration::from_secs(10));
    }
    for (mode, label) in [(IbhcMode::Exact, "exact"), (IbhcMode::Noisy, "noisy")] {
        let mut seed = 0u64;
        g.bench_function(format!("{label}/{}", set.name), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    seed += 1;
                    let mut rng = SeedPlan::new(seed).chain(0);
                    let clock = CpuClock::start();
                    let forest =
                        Forest::ibhc(&set.kernel, &dp(), mode, &mut RngChooser::new(&mut rng))
                            .expect("IBHC");
                    total += clock.elapsed();
                    drop(forest);
                }
                total
            })
        });
    }
    g.finish();
}

/// SeqInsert of one point's leaf back into its cluster's tree (points in turn, singletons
/// skipped); the forest stays a valid partition.
fn seq_insert(c: &mut Criterion, set: &Set) {
    let kernel = &set.kernel;
    let mut forest = ibhc(set, IbhcMode::Exact, 1);
    let n = kernel.n_points();
    let mut next = 0usize;
    let mut g = c.benchmark_group("seq_insert");
    g.bench_function(set.name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let i = next % n;
                next += 1;
                let leaf = forest.leaf_of(i).expect("a live leaf");
                let Some(parent) = forest.node(leaf).and_then(|l| l.parent()) else {
                    continue;
                };
                let [l, r] = forest
                    .node(parent)
                    .and_then(|p| p.children())
                    .expect("internal");
                let sibling = if l == leaf { r } else { l };
                forest.detach_leaf(kernel, leaf).expect("detach");
                let target = forest.root_of(sibling).expect("a tree");
                let clock = CpuClock::start();
                forest.insert(kernel, target, leaf).expect("insert");
                total += clock.elapsed();
                done += 1;
            }
            total
        })
    });
    g.finish();
}

/// The registered tree with the most points.
fn largest(forest: &Forest<NormalWishart>) -> NodeKey {
    forest
        .roots()
        .max_by_key(|&r| forest.node(r).map_or(0, |n| n.size()))
        .expect("a tree")
}

/// SampleSub forward and reverse on the largest tree.
fn sample_sub(c: &mut Criterion, set: &Set) {
    let mut forest = ibhc(set, IbhcMode::Exact, 1);
    let top = largest(&forest);
    let mut rng = SeedPlan::new(7).chain(1);
    let mut g = c.benchmark_group("sample_sub");
    g.bench_function(
        format!(
            "{}/{}pts",
            set.name,
            forest.node(top).map_or(0, |n| n.size())
        ),
        |b| {
            b.iter_custom(|iters| {
                let clock = CpuClock::start();
                for _ in 0..iters {
                    let mut chooser = RngChooser::new(&mut rng);
                    let (v, ln_p) = forest
                        .sample_sub(top, Candidates::InternalNodes, &mut chooser)
                        .expect("forward");
                    let back = forest
                        .ln_prob_sub(top, v, Candidates::InternalNodes)
                        .expect("reverse");
                    std::hint::black_box(ln_p + back);
                }
                clock.elapsed()
            })
        },
    );
    g.finish();
}

/// The StocInsert of a split proposal, as the reference move makes it: copy the tree, draw the
/// split node, Destroy, split the node, StocInsert the freed trees (timed), then restore the
/// copy as a rejected proposal does.
fn stoc_insert(c: &mut Criterion, set: &Set) {
    let kernel = &set.kernel;
    let mut forest = ibhc(set, IbhcMode::Exact, 1);
    let mut rng = SeedPlan::new(7).chain(2);
    let (mut roots, mut queue, mut trees, mut choices) = (
        Vec::new(),
        Vec::new(),
        Vec::<NodeKey>::new(),
        Vec::<StocChoice>::new(),
    );
    let mut g = c.benchmark_group("stoc_insert");
    g.bench_function(set.name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut chooser = RngChooser::new(&mut rng);
                roots.clear();
                roots.extend(
                    forest
                        .roots()
                        .filter(|&r| forest.node(r).is_some_and(|n| !n.is_leaf())),
                );
                let tree = roots[chooser.choose_uniform(roots.len())];
                let copy = forest.copy_tree(tree).expect("copy");
                let (a, _) = forest
                    .sample_sub(tree, Candidates::InternalNodes, &mut chooser)
                    .expect("split node");
                queue.clear();
                forest.destroy(a, &mut queue).expect("destroy");
                trees.clear();
                trees.extend(forest.split_root(a).expect("split"));
                let clock = CpuClock::start();
                forest
                    .stoc_insert(kernel, &mut trees, &queue, &mut chooser, &mut choices)
                    .expect("StocInsert");
                total += clock.elapsed();
                for &t in &trees {
                    forest.delete_tree(t).expect("delete");
                }
                forest.adopt_leaves(copy).expect("adopt");
                forest.register_root(copy).expect("register");
            }
            total
        })
    });
    g.finish();
}

/// One step of `mv`, continuing one chain from `state`.
fn bench_move(
    c: &mut Criterion,
    group: &str,
    set: &Set,
    mut state: State<NormalWishart, Dp>,
    mut mv: impl Move<NormalWishart, Dp>,
) {
    let mut rng = SeedPlan::new(7).chain(3);
    let mut g = c.benchmark_group(group);
    if set.kernel.n_points() > 5000 && group == "tgmcmc_paper_sweep" {
        g.sample_size(20).measurement_time(Duration::from_secs(8));
    }
    g.bench_function(set.name, |b| {
        b.iter_custom(|iters| {
            let clock = CpuClock::start();
            for _ in 0..iters {
                mv.step(&set.kernel, &mut state, &mut RngChooser::new(&mut rng))
                    .expect("step");
            }
            clock.elapsed()
        })
    });
    g.finish();
}

fn tree(c: &mut Criterion) {
    for name in ["toy", "10k"] {
        let set = setup(name);
        builds(c, &set);
        seq_insert(c, &set);
        sample_sub(c, &set);
        stoc_insert(c, &set);
        let forest = ibhc(&set, IbhcMode::Noisy, 1);
        let start = State {
            partition: Partition::from_labels(&set.kernel, &forest.labels().expect("labels"))
                .expect("partition"),
            prior: dp(),
        };
        let paper = TgmcmcPaper::new(10, 2).with_forest(forest);
        bench_move(c, "tgmcmc_paper_sweep", &set, start, paper);
        let truth = State {
            partition: Partition::from_labels(&set.kernel, &set.labels).expect("labels"),
            prior: dp(),
        };
        let tg = TgSams::new().with_reference_prior(&dp());
        bench_move(c, "tg_sams_step", &set, truth, tg);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = tree
}
criterion_main!(benches);
