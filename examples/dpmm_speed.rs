//! The DPMM.jl report's headline run with the sub-cluster samplers: 100 iterations on a seeded
//! synthetic Gaussian mixture of N = 1,000,000 points in d = 2 with K = 6 components (the
//! report: 75.7 s on 1 CPU, 12.8 s on 8 CPUs), timed on 1 and 2 rayon threads.
//!
//! Run:
//!
//! ```text
//! cargo run --release --example dpmm_speed            # N = 1,000,000, 100 iterations
//! cargo run --release --example dpmm_speed -- --smoke # N = 20,000, 10 iterations (seconds)
//! # options: --n N --iters T --threads 1,2 --sampler subcluster|subcluster-dpmm|both
//! #          --start one|ten --trace (K and cluster sizes after every iteration)
//! ```
//!
//! Model: DP with α = 1, Normal-Wishart hyperparameters from the data (MATH §2.1). Data: six
//! unit-covariance Gaussians at fixed, well-separated centres, equal weights, points in a
//! seeded random order. Start (`--start`): one cluster holding every point (the default, as
//! DPMM.jl's `fit`, whose `ninit` is 1), or ten clusters by point index (each spread over the
//! whole data set). Samplers (`--sampler`, both by default): the exact [`SubCluster::new`]
//! with 4 launch iterations and 4 proposals per iteration, and the DPMM.jl-faithful
//! [`SubCluster::dpmm`] with DPMM.jl's settings. For each sampler and thread count it prints
//! the wall seconds, iterations per second, the final K and the adjusted Rand index against
//! the true components, and at the end the peak resident memory of the process (`VmHWM`).

use std::sync::Arc;
use std::time::Instant;

use nrmm::data::DenseData;
use nrmm::diagnostics::adjusted_rand_index;
use nrmm::kernel::{NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Prior};
use nrmm::rng::{uniform_index, SeedPlan};
use nrmm::run::{Chain, Scheduled};
use nrmm::sampler::{DpmmOptions, Move, State, SubCluster, SubClusterOptions};
use rand_distr::{Distribution, StandardNormal};

const CENTRES: [(f64, f64); 6] = [
    (0.0, 0.0),
    (8.0, 0.0),
    (0.0, 8.0),
    (8.0, 8.0),
    (16.0, 4.0),
    (4.0, 16.0),
];

fn data(n: usize) -> (DenseData, Vec<usize>) {
    let mut rng = SeedPlan::new(2013).chain(0);
    let mut values = Vec::with_capacity(2 * n);
    let mut truth = Vec::with_capacity(n);
    for _ in 0..n {
        let k = uniform_index(&mut rng, CENTRES.len());
        let (cx, cy) = CENTRES[k];
        let (zx, zy): (f64, f64) = (
            StandardNormal.sample(&mut rng),
            StandardNormal.sample(&mut rng),
        );
        values.push(cx + zx);
        values.push(cy + zy);
        truth.push(k);
    }
    (DenseData::new(n, 2, values).expect("finite values"), truth)
}

/// Peak resident set size in MB from `/proc/self/status`, if available.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Command-line settings of the run.
struct Settings {
    n: usize,
    iters: usize,
    threads: Vec<usize>,
    samplers: Vec<&'static str>,
    start: &'static str,
    trace: bool,
    launch_iters: usize,
    proposals: usize,
}

fn parse_args() -> Settings {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let smoke = args.iter().any(|a| a == "--smoke");
    let mut s = Settings {
        n: if smoke { 20_000 } else { 1_000_000 },
        iters: if smoke { 10 } else { 100 },
        threads: vec![1, 2],
        samplers: vec!["subcluster", "subcluster-dpmm"],
        start: "one",
        trace: args.iter().any(|a| a == "--trace"),
        launch_iters: 10,
        proposals: 4,
    };
    let value = |flag: &str| {
        args.iter().position(|a| a == flag).map(|p| {
            args.get(p + 1)
                .unwrap_or_else(|| panic!("{flag} needs a value"))
        })
    };
    if let Some(v) = value("--n") {
        s.n = v.parse().expect("--n: a positive integer");
    }
    if let Some(v) = value("--iters") {
        s.iters = v.parse().expect("--iters: a positive integer");
    }
    if let Some(v) = value("--launch-iters") {
        s.launch_iters = v.parse().expect("--launch-iters: an integer");
    }
    if let Some(v) = value("--proposals") {
        s.proposals = v.parse().expect("--proposals: an integer");
    }
    if let Some(v) = value("--threads") {
        s.threads = v
            .split(',')
            .map(|t| t.parse().expect("--threads: comma-separated integers"))
            .collect();
    }
    if let Some(v) = value("--sampler") {
        s.samplers = match v.as_str() {
            "subcluster" => vec!["subcluster"],
            "subcluster-dpmm" => vec!["subcluster-dpmm"],
            "both" => vec!["subcluster", "subcluster-dpmm"],
            other => panic!("--sampler: subcluster, subcluster-dpmm or both, not {other}"),
        };
    }
    if let Some(v) = value("--start") {
        s.start = match v.as_str() {
            "one" => "one",
            "ten" => "ten",
            other => panic!("--start: one or ten, not {other}"),
        };
    }
    s
}

fn main() {
    let settings = parse_args();
    let (n, iters) = (settings.n, settings.iters);
    let (x, truth) = data(n);
    let hyper = NwHyper::from_data(&x).expect("non-singular covariance");
    let kernel = NormalWishart::new(Arc::new(x), hyper).expect("dimensions agree");
    let start: Vec<usize> = match settings.start {
        "one" => vec![0; n],
        _ => (0..n).map(|i| i % 10).collect(),
    };
    println!(
        "N = {n}, d = 2, true K = 6, {iters} iterations, start: {}",
        settings.start
    );
    println!("sampler          threads  wall_s  iter/s  final_K  ARI");
    for &sampler in &settings.samplers {
        for &threads in &settings.threads {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("thread pool");
            let (secs, k, ari) = pool.install(|| {
                let state = State {
                    partition: Partition::from_labels(&kernel, &start).expect("labels fit"),
                    prior: Prior::from(Dp::new(1.0).expect("valid alpha")),
                };
                let mv: Box<dyn Move<NormalWishart, Prior>> = if sampler == "subcluster" {
                    Box::new(SubCluster::new(SubClusterOptions {
                        launch_iters: settings.launch_iters,
                        proposals: settings.proposals,
                    }))
                } else {
                    Box::new(SubCluster::dpmm(DpmmOptions::default()))
                };
                let mut chain = Chain::new(
                    &kernel,
                    state,
                    SeedPlan::new(1).chain(0),
                    vec![Scheduled { mv, repeats: 1 }],
                );
                let t0 = Instant::now();
                for t in 0..iters {
                    chain.sweep().expect("sub-cluster iteration");
                    if settings.trace {
                        let mut sizes = chain.state().partition.sizes();
                        sizes.sort_unstable_by(|a, b| b.cmp(a));
                        eprintln!(
                            "iteration {:>3}: K = {:>2}, sizes {sizes:?}",
                            t + 1,
                            sizes.len()
                        );
                    }
                }
                let secs = t0.elapsed().as_secs_f64();
                let labels = chain.state().partition.canonical_labels();
                let ari = adjusted_rand_index(&labels, &truth).expect("same length");
                (secs, chain.state().partition.n_clusters(), ari)
            });
            println!(
                "{sampler:<15}  {threads:>7}  {secs:>6.2}  {:>6.2}  {k:>7}  {ari:.4}",
                iters as f64 / secs
            );
        }
    }
    match peak_rss_mb() {
        Some(mb) => println!("peak resident memory (VmHWM): {mb:.0} MB"),
        None => println!("peak resident memory: unavailable (no /proc/self/status)"),
    }
}
