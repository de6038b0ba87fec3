//! Speed and quality of tree-guided MCMC on the paper's data sets, against the reference
//! figures (`../shared/docs/REFERENCE_FIGURES.md`): the reference C++ code runs 399 tgMCMC
//! sweeps/s on `toy` and 7.8 on `10k`, and reaches log joints -73607.7 (DP) and -73444.0
//! (NGGP with hyperpriors) on `10k` in 60 s.
//!
//! ```text
//! cargo run --release --example tgmcmc_speed -- [toy|10k|all] [--seconds S] [--seeds N]
//! ```
//!
//! * `toy`: `tgmcmc-paper` (DP, α = 1, G = 10, D = 2, from the noisy-IBHC forest) sweeps/s and
//!   sweeps to the golden optimum -1577.569613; the exact `tgmcmc` (G = 10 TG-SAMS proposals
//!   and a Gibbs scan of a random half of the points per sweep) time to the optimum (median
//!   over three times as many seeds) from the noisy-IBHC partition.
//! * `10k`: `tgmcmc-paper` sweeps/s (DP); the exact `tgmcmc` (same schedule) log joint reached
//!   in `S` seconds (default 60) for 3 seeds, DP(1) and NGGP with the reference hyperpriors,
//!   with the final number of clusters and the adjusted Rand index against the true labels of
//!   the final state and of the best state visited (the visited MAP estimate; its labels are
//!   copied outside the timed sweeps).
//!
//! * `fixed toy|10k N [paper|exact]`: exactly `N` sweeps of `tgmcmc-paper` (DP, from the
//!   noisy-IBHC forest of seed 1) and / or of the exact `tgmcmc` (same schedule as above), with
//!   their CPU seconds and a digest of where each chain ended (the final log joint to the bit,
//!   the number of clusters, a hash of the labels): a fixed workload for profilers
//!   (`valgrind --tool=callgrind`) and a check that an optimisation leaves the draws unchanged.
//!
//! Times are this thread's CPU seconds spent in sweeps (the reference figures are CPU
//! seconds); the IBHC initialisation is reported separately. The data are read from `../shared/data` (relative to the crate
//! root); without it the example says so and stops.

use std::path::{Path, PathBuf};
use std::sync::Arc;

#[path = "support/cpu_clock.rs"]
mod cpu_clock;
use cpu_clock::CpuClock;

use nrmm::data::load;
use nrmm::diagnostics::adjusted_rand_index;
use nrmm::kernel::{ConjugateKernel, NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Nggp, NggpHyperPriors, Prior};
use nrmm::rng::SeedPlan;
use nrmm::run::{Chain, Scheduled};
use nrmm::sampler::tgmcmc::{tgmcmc_schedule, TgmcmcPaper};
use nrmm::sampler::{GibbsScan, RngChooser, State};
use nrmm::tree::{Forest, IbhcMode};

/// The DP(1) log joint of the ground-truth partition of `toy`, the best any run reaches.
const TOY_OPTIMUM: f64 = -1577.569613;

struct Data {
    kernel: NormalWishart,
    truth: Vec<i64>,
}

fn load_set(name: &str) -> Option<Data> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(name);
    let x = match load::load_dense(dir.join("X.txt")) {
        Ok(x) => x,
        Err(e) => {
            println!("skipping {name}: {e} (the data live in ../shared/data)");
            return None;
        }
    };
    let truth = load::load_labels(dir.join("gt_labels.txt"), x.n()).ok()?;
    let hyper = NwHyper::from_data(&x).ok()?;
    let kernel = NormalWishart::new(Arc::new(x), hyper).ok()?;
    Some(Data { kernel, truth })
}

/// The noisy-IBHC forest and its partition (the reference initialisation), with its time.
fn noisy_ibhc(
    data: &Data,
    prior: &Prior,
    seed: u64,
) -> (Forest<NormalWishart>, State<NormalWishart, Prior>, f64) {
    let mut rng = SeedPlan::new(seed).chain(1000);
    let start = CpuClock::start();
    let forest = Forest::ibhc(
        &data.kernel,
        prior,
        IbhcMode::Noisy,
        &mut RngChooser::new(&mut rng),
    )
    .expect("IBHC");
    let seconds = start.elapsed().as_secs_f64();
    let partition =
        Partition::from_labels(&data.kernel, &forest.labels().expect("labels")).expect("partition");
    let state = State {
        partition,
        prior: prior.clone(),
    };
    (forest, state, seconds)
}

/// What a run did.
struct Outcome {
    sweeps: u64,
    seconds: f64,
    best: f64,
    /// Sweep and sampling seconds at which the log joint first came within 0.01 of `target`.
    reached: Option<(u64, f64)>,
    k: usize,
    labels: Vec<usize>,
    /// The labels of the state with the best log joint, the visited MAP estimate.
    best_labels: Vec<usize>,
}

/// Runs until `seconds` of sampling or, with `stop_at_target`, until the target is reached.
fn run(
    data: &Data,
    state: State<NormalWishart, Prior>,
    schedule: Vec<Scheduled<NormalWishart, Prior>>,
    seed: u64,
    seconds: f64,
    target: Option<f64>,
    stop_at_target: bool,
) -> Outcome {
    let mut chain = Chain::new(&data.kernel, state, SeedPlan::new(seed).chain(0), schedule);
    let mut best = f64::NEG_INFINITY;
    let mut best_labels = Vec::new();
    let mut reached = None;
    let mut cpu = 0.0;
    loop {
        let clock = CpuClock::start();
        let r = chain.sweep().expect("sweep");
        cpu += clock.elapsed().as_secs_f64();
        if r.ln_joint > best {
            best = r.ln_joint;
            best_labels = chain.state().partition.canonical_labels();
        }
        if reached.is_none() && target.is_some_and(|t| r.ln_joint > t - 0.01) {
            reached = Some((r.sweep, cpu));
        }
        if cpu >= seconds || (stop_at_target && reached.is_some()) {
            return Outcome {
                sweeps: r.sweep,
                seconds: cpu,
                best,
                reached,
                k: r.n_clusters,
                labels: chain.state().partition.canonical_labels(),
                best_labels,
            };
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

fn paper(forest: Forest<NormalWishart>, hyper: bool) -> Vec<Scheduled<NormalWishart, Prior>> {
    vec![Scheduled {
        mv: Box::new(
            TgmcmcPaper::new(10, 2)
                .with_forest(forest)
                .with_hyper(hyper),
        ),
        repeats: 1,
    }]
}

/// The exact schedule used throughout: G = 10 TG-SAMS proposals, then a Gibbs scan of a
/// uniformly random half of the points (exact too; cheaper sweeps let the chain be checked
/// more often).
fn exact(data: &Data, prior: &Prior, hyper: bool) -> Vec<Scheduled<NormalWishart, Prior>> {
    let half = (data.kernel.n_points() / 2).max(1);
    tgmcmc_schedule(prior, 10, GibbsScan::Subset(half), 1, hyper).expect("schedule")
}

fn toy(seconds: f64, seeds: u64) {
    let Some(data) = load_set("toy") else { return };
    let dp: Prior = Dp::new(1.0).expect("alpha").into();
    println!("== toy (1300 x 2), DP(alpha = 1), noisy-IBHC start ==");
    println!("tgmcmc-paper, G = 10, D = 2, {seconds} s per seed (reference: 399 sweeps/s):");
    let mut rates = Vec::new();
    for seed in 1..=seeds {
        let (forest, state, init) = noisy_ibhc(&data, &dp, seed);
        let k0 = state.partition.n_clusters();
        let o = run(
            &data,
            state,
            paper(forest, false),
            seed,
            seconds,
            Some(TOY_OPTIMUM),
            false,
        );
        let rate = o.sweeps as f64 / o.seconds;
        rates.push(rate);
        println!(
            "  seed {seed}: init {init:.4} s (K = {k0}), {rate:.0} sweeps/s, best {:.6}, optimum at {}",
            o.best,
            o.reached.map_or("never".into(), |(s, t)| format!("sweep {s} ({t:.3} s)"))
        );
    }
    println!(
        "  median {:.0} sweeps/s = {:.1} x the reference",
        median(rates.clone()),
        median(rates) / 399.0
    );
    println!("tgmcmc (exact), G = 10 TG-SAMS + Gibbs on half the points, time to the optimum (goal: median <= 0.05 s):");
    let mut times = Vec::new();
    let exact_seeds = 3 * seeds;
    for seed in 1..=exact_seeds {
        let (_, state, init) = noisy_ibhc(&data, &dp, seed);
        let o = run(
            &data,
            state,
            exact(&data, &dp, false),
            seed,
            30.0,
            Some(TOY_OPTIMUM),
            true,
        );
        match o.reached {
            Some((s, t)) => {
                times.push(t);
                println!("  seed {seed}: init {init:.4} s, optimum at sweep {s}, {t:.4} s");
            }
            None => println!(
                "  seed {seed}: not reached in {:.1} s (best {:.4})",
                o.seconds, o.best
            ),
        }
    }
    if !times.is_empty() {
        println!(
            "  median {:.4} s ({} of {exact_seeds} seeds)",
            median(times.clone()),
            times.len()
        );
    }
}

fn ten_k(seconds: f64, seeds: u64) {
    let Some(data) = load_set("10k") else { return };
    let dp: Prior = Dp::new(1.0).expect("alpha").into();
    let nggp: Prior = Nggp::new(1.0, 0.5, 1.0, NggpHyperPriors::reference())
        .expect("nggp")
        .into();
    println!("== 10k (10000 x 6, 119 true labels), noisy-IBHC start ==");
    let paper_seconds = seconds.min(20.0);
    println!("tgmcmc-paper, DP(1), G = 10, D = 2, {paper_seconds} s (reference: 7.8 sweeps/s):");
    let (forest, state, init) = noisy_ibhc(&data, &dp, 1);
    let o = run(
        &data,
        state,
        paper(forest, false),
        1,
        paper_seconds,
        None,
        false,
    );
    let rate = o.sweeps as f64 / o.seconds;
    println!(
        "  init {init:.3} s, {rate:.1} sweeps/s = {:.1} x the reference, best {:.1}, K = {}",
        rate / 7.8,
        o.best,
        o.k
    );
    for (name, prior, hyper, reference) in [
        ("DP(1)", &dp, false, -73607.7),
        ("NGGP, hyperpriors", &nggp, true, -73444.0),
    ] {
        println!(
            "tgmcmc (exact), {name}, {seconds} s per seed (reference best: {reference}; goal: ARI >= 0.99):"
        );
        for seed in 1..=seeds {
            let (_, state, init) = noisy_ibhc(&data, prior, seed);
            let o = run(
                &data,
                state,
                exact(&data, prior, hyper),
                seed,
                seconds,
                None,
                false,
            );
            let ari = adjusted_rand_index(&o.labels, &data.truth).expect("ARI");
            let best_ari = adjusted_rand_index(&o.best_labels, &data.truth).expect("ARI");
            println!(
                "  seed {seed}: init {init:.3} s, {} sweeps ({:.2}/s), best log joint {:.1} ({:+.1} vs reference), K = {}, ARI = {ari:.4} (best state: {best_ari:.4})",
                o.sweeps,
                o.sweeps as f64 / o.seconds,
                o.best,
                o.best - reference,
                o.k
            );
        }
    }
}

/// The `fixed` workload (see the module documentation).
fn fixed(set: &str, sweeps: u64, which: &str) {
    let Some(data) = load_set(set) else { return };
    let dp: Prior = Dp::new(1.0).expect("alpha").into();
    for kind in ["paper", "exact"] {
        if which != kind && which != "both" {
            continue;
        }
        let (forest, state, _) = noisy_ibhc(&data, &dp, 1);
        let schedule = if kind == "paper" {
            paper(forest, false)
        } else {
            exact(&data, &dp, false)
        };
        let mut chain = Chain::new(&data.kernel, state, SeedPlan::new(1).chain(0), schedule);
        let clock = CpuClock::start();
        for _ in 0..sweeps {
            chain.sweep().expect("sweep");
        }
        let cpu = clock.elapsed().as_secs_f64();
        let end = chain.state();
        let labels = end.partition.canonical_labels();
        let hash = labels.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &l| {
            (h ^ l as u64).wrapping_mul(0x0000_0100_0000_01b3)
        });
        println!(
            "{set} {kind}: {sweeps} sweeps in {cpu:.3} s ({:.1}/s); end: ln joint {:.6} (bits {:016x}), K = {}, labels hash {hash:016x}",
            sweeps as f64 / cpu,
            end.ln_joint(),
            end.ln_joint().to_bits(),
            end.partition.n_clusters()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("fixed") {
        let set = args.get(1).map_or("toy", String::as_str);
        let sweeps = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
        fixed(set, sweeps, args.get(3).map_or("both", String::as_str));
        return;
    }
    let which = args
        .first()
        .filter(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or_else(|| "all".into());
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<f64>().ok())
    };
    let seconds = flag("--seconds").unwrap_or(60.0);
    let seeds = flag("--seeds").map_or(3, |s| s as u64);
    if which == "toy" || which == "all" {
        toy(seconds.min(5.0), seeds.max(5));
    }
    if which == "10k" || which == "all" {
        ten_k(seconds, seeds);
    }
}
