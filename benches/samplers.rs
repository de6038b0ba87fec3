//! Criterion benchmarks of the marginal samplers under the reference model (DP with α = 1,
//! Normal-Wishart hyperparameters from the data as in the reference code, MATH §2.1), at a
//! converged state: one collapsed Gibbs sweep, one SAMS proposal and one Jain-Neal proposal
//! with 10 launch scans, one sweep of each DPMM.jl-style sampler (sub-cluster exact and
//! faithful, direct, quasi-direct, quasi-collapsed) and one SVA-PM pass, on the paper's `toy`
//! (1300 × 2) and `10k` (10000 × 6) data sets.
//!
//! Run: `cargo bench --bench samplers` (about two minutes; `BENCHMARKS.md` has the results).
//!
//! Data come from `../shared/data/{toy,10k}/X.txt` (relative to the repository root; the
//! environment variable `NRMM_DATA_DIR` overrides the folder), started from the partition in
//! `gt_labels.txt` next to it, or, without a label file, from a collapsed Gibbs burn-in that
//! starts with one cluster. When a data set is absent the benchmark says so and uses a seeded
//! stand-in of the same shape instead: `toy_like` for `toy`, and for `10k` a Normal-Wishart
//! mixture of 10000 points in 6 dimensions over a Chinese-restaurant partition with about 120
//! clusters, started from its generating labels.
//!
//! Each benchmark keeps running its own chain from that state (one seeded stream per
//! benchmark), so it measures the stationary regime rather than a fixed start.
//!
//! Times are this thread's CPU time (`CLOCK_THREAD_CPUTIME_ID` on Linux, wall time
//! elsewhere), like the reference figures, so that other processes sharing the machine
//! inflate them less. The data-parallel DPMM.jl-style samplers run in a one-thread rayon pool
//! whose worker is the thread timed, so their figures are single-core costs.

#[path = "../examples/support/cpu_clock.rs"]
mod cpu_clock;
use cpu_clock::CpuClock;
#[path = "support/mod.rs"]
mod support;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use nrmm::kernel::{ConjugateKernel, NormalWishart};
use nrmm::partition::Partition;
use nrmm::prior::Dp;
use nrmm::rng::SeedPlan;
use nrmm::sampler::{
    Direct, DpmmOptions, Gibbs, GibbsScan, JainNeal, Move, QuasiCollapsed, QuasiDirect, RngChooser,
    Sams, State, SubCluster, SubClusterOptions,
};
use nrmm::sva::{fit_shuffled, SvaConfig};

type NwState = State<NormalWishart, Dp>;

/// The kernel and start state for data set `name`, from `../shared/data` or a stand-in.
fn setup(name: &str) -> (NormalWishart, NwState) {
    let (data, labels) = support::read(name).unwrap_or_else(|| {
        let (data, labels) = support::stand_in(name);
        (data, Some(labels))
    });
    let kernel = support::reference_kernel(data);
    let prior = Dp::new(1.0).expect("alpha = 1");
    let state = match labels {
        Some(labels) => State {
            partition: Partition::from_labels(&kernel, &labels).expect("one label per point"),
            prior,
        },
        None => burn_in(&kernel, prior),
    };
    (kernel, state)
}

/// Collapsed Gibbs sweeps from one cluster until 20 sweeps in a row fail to raise the best
/// log joint seen (at most 2000 sweeps).
fn burn_in(kernel: &NormalWishart, prior: Dp) -> NwState {
    let mut state = State {
        partition: Partition::single(kernel),
        prior,
    };
    let mut rng = SeedPlan::new(20_151_205).chain(99);
    let mut gibbs = Gibbs::new(GibbsScan::Full).expect("valid scan");
    let (mut best, mut stale) = (f64::NEG_INFINITY, 0);
    for _ in 0..2000 {
        gibbs
            .step(kernel, &mut state, &mut RngChooser::new(&mut rng))
            .expect("Gibbs sweep");
        let lj = state.ln_joint();
        if lj > best + 1e-9 {
            (best, stale) = (lj, 0);
        } else {
            stale += 1;
            if stale == 20 {
                break;
            }
        }
    }
    state
}

/// Benchmarks one step of `mv` as `group/name`, continuing one chain from `start`.
fn bench_move(
    c: &mut Criterion,
    group: &str,
    name: &str,
    stream: u64,
    kernel: &NormalWishart,
    start: &NwState,
    mut mv: impl Move<NormalWishart, Dp>,
) {
    let mut state = start.clone();
    let mut rng = SeedPlan::new(7).chain(stream);
    let mut g = c.benchmark_group(group);
    if kernel.n_points() > 5000 && (group == "gibbs_sweep" || group.starts_with("dpmm")) {
        g.sample_size(10).measurement_time(Duration::from_secs(8));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            pool.install(|| {
                let clock = CpuClock::start();
                for _ in 0..iters {
                    mv.step(kernel, &mut state, &mut RngChooser::new(&mut rng))
                        .expect("step");
                }
                clock.elapsed()
            })
        })
    });
    g.finish();
}

/// Benchmarks one sweep of each DPMM.jl-style sampler (MATH §6.4) on data set `name`.
fn dpmm_sweeps(
    c: &mut Criterion,
    name: &str,
    stream: u64,
    kernel: &NormalWishart,
    start: &NwState,
) {
    let group = "dpmm_sweep";
    let id = |s: &str| format!("{s}/{name}");
    let exact = SubCluster::new(SubClusterOptions::default());
    bench_move(c, group, &id("subcluster"), stream, kernel, start, exact);
    let faithful = SubCluster::dpmm(DpmmOptions::default());
    bench_move(
        c,
        group,
        &id("subcluster-dpmm"),
        stream + 1,
        kernel,
        start,
        faithful,
    );
    bench_move(
        c,
        group,
        &id("direct"),
        stream + 2,
        kernel,
        start,
        Direct::new(),
    );
    let quasi = QuasiDirect::new();
    bench_move(
        c,
        group,
        &id("quasi-direct"),
        stream + 3,
        kernel,
        start,
        quasi,
    );
    let collapsed = QuasiCollapsed::new();
    bench_move(
        c,
        group,
        &id("quasi-collapsed"),
        stream + 4,
        kernel,
        start,
        collapsed,
    );
}

/// Benchmarks one SVA-PM pass (Lin 2013; MATH §6.5) over data set `name` in a shuffled order.
fn sva_pass(c: &mut Criterion, name: &str, kernel: &NormalWishart) {
    let config = SvaConfig::with_prune_merge(1.0);
    let mut rng = SeedPlan::new(7).chain(100);
    let mut g = c.benchmark_group("sva_pm_pass");
    g.sample_size(10);
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let clock = CpuClock::start();
            for _ in 0..iters {
                let fit = fit_shuffled(kernel, &config, &mut rng).expect("fit");
                std::hint::black_box(fit.n_components());
            }
            clock.elapsed()
        })
    });
    g.finish();
}

fn samplers(c: &mut Criterion) {
    for (stream, name) in ["toy", "10k"].into_iter().enumerate() {
        let (kernel, start) = setup(name);
        let stream = 3 * stream as u64;
        let gibbs = Gibbs::new(GibbsScan::Full).expect("valid scan");
        bench_move(c, "gibbs_sweep", name, stream, &kernel, &start, gibbs);
        bench_move(
            c,
            "sams_proposal",
            name,
            stream + 1,
            &kernel,
            &start,
            Sams::new(),
        );
        let jn = JainNeal::new(10);
        bench_move(
            c,
            "jain_neal_proposal",
            name,
            stream + 2,
            &kernel,
            &start,
            jn,
        );
        dpmm_sweeps(c, name, 10 + 5 * stream, &kernel, &start);
        sva_pass(c, name, &kernel);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = samplers
}
criterion_main!(benches);
