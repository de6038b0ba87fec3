//! Reproduction of the DPMM.jl technical report's benchmarks (Akyürek, "DPMM.jl"; the
//! package's sub-cluster sampler is Chang & Fisher 2013, MATH §6.4): convergence of its
//! samplers against wall seconds on a Gaussian and a multinomial mixture, their thread
//! scaling, and the headline timing of 100 sub-cluster iterations on a million points.
//!
//! ```text
//! cargo run --release --example paper-dpmm-jl                 # convergence + scaling (~12 min)
//! cargo run --release --example paper-dpmm-jl -- --headline   # N = 1,000,000 headline only
//! cargo run --release --example paper-dpmm-jl -- --report     # tables, figures from the CSVs
//! cargo run --release --example paper-dpmm-jl -- --smoke --out runs/dpmm-smoke   # seconds, for CI
//! ```
//!
//! The experiments write `results/*.csv`; the report stage (always run last) reads every CSV
//! present in `<out>/results`, so the headline figures come from the committed
//! `results/headline.csv` unless `--headline` is given, and writes the tables, the figures,
//! `results/claims.csv` and the numbers of `<out>/README.md`.
//!
//! Samplers (all DP, `α = 1`): collapsed Gibbs ([`Gibbs`], sequential), quasi-collapsed
//! ([`QuasiCollapsed`]), direct ([`Direct`]), quasi-direct ([`QuasiDirect`]), the exact
//! sub-cluster sampler ([`SubCluster::new`], 4 proposals per step, with its default 4 and with
//! [`LONG_LAUNCH`] launch iterations) and the DPMM.jl-faithful one ([`SubCluster::dpmm`], its
//! default settings). The parallel ones run on a rayon pool of 1
//! and of 2 threads; their chains do not depend on the thread count (the deterministic engine
//! of `nrmm::sampler::dpmm`), which the scaling table checks.

#[path = "../common/mod.rs"]
mod common;
mod report;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use nrmm::data::generate::{bag_of_words, partition_uniform, DocLengths};
use nrmm::data::DenseData;
use nrmm::diagnostics::{adjusted_rand_index, normalized_mutual_information};
use nrmm::kernel::{
    ConjugateKernel, MultinomialDirichlet, NormalWishart, NwHyper, ParametricKernel,
};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Prior};
use nrmm::rng::{uniform_index, SeedPlan};
use nrmm::run::executor::{Executor, Handler, Stop};
use nrmm::run::{Chain, Scheduled, SweepRecord};
use nrmm::sampler::{
    Direct, DpmmOptions, Gibbs, GibbsScan, Move, QuasiCollapsed, QuasiDirect, State, SubCluster,
    SubClusterOptions,
};
use rand_distr::{Distribution, StandardNormal};

use common::Table;

/// The samplers of the DPMM.jl report, in plotting order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampler {
    /// Collapsed Gibbs (sequential, MATH §1.3).
    Collapsed,
    /// Quasi-collapsed Gibbs (parallel, approximate).
    QuasiCollapsed,
    /// Direct Gibbs (parallel, approximate).
    Direct,
    /// Quasi-direct Gibbs (parallel, approximate).
    QuasiDirect,
    /// The exact sub-cluster split/merge sampler with its default 4 launch iterations.
    SubCluster,
    /// The exact sub-cluster sampler with [`LONG_LAUNCH`] launch iterations.
    SubClusterLong,
    /// The DPMM.jl-faithful sub-cluster sampler (approximate).
    SubClusterDpmm,
}

/// Every sampler, in plotting order.
pub const SAMPLERS: [Sampler; 7] = [
    Sampler::Collapsed,
    Sampler::QuasiCollapsed,
    Sampler::Direct,
    Sampler::QuasiDirect,
    Sampler::SubCluster,
    Sampler::SubClusterLong,
    Sampler::SubClusterDpmm,
];

/// Launch iterations of [`Sampler::SubClusterLong`]: enough for the sub-cluster Gibbs pass to
/// leave a random bisection of a large multi-modal cluster, which the default 4 are not.
pub const LONG_LAUNCH: usize = 20;

impl Sampler {
    /// The CLI name (`nrmm run --sampler NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Sampler::Collapsed => "gibbs",
            Sampler::QuasiCollapsed => "quasi-collapsed",
            Sampler::Direct => "direct",
            Sampler::QuasiDirect => "quasi-direct",
            Sampler::SubCluster => "subcluster",
            Sampler::SubClusterLong => "subcluster-l20",
            Sampler::SubClusterDpmm => "subcluster-dpmm",
        }
    }

    /// Whether the sampler runs its passes on the rayon pool.
    pub fn parallel(self) -> bool {
        self != Sampler::Collapsed
    }

    fn build<K: ParametricKernel + 'static>(self) -> nrmm::Result<Box<dyn Move<K, Prior>>> {
        Ok(match self {
            Sampler::Collapsed => Box::new(Gibbs::new(GibbsScan::Full)?),
            Sampler::QuasiCollapsed => Box::new(QuasiCollapsed::new()),
            Sampler::Direct => Box::new(Direct::new()),
            Sampler::QuasiDirect => Box::new(QuasiDirect::new()),
            Sampler::SubCluster => Box::new(SubCluster::new(SubClusterOptions::default())),
            Sampler::SubClusterLong => Box::new(SubCluster::new(SubClusterOptions {
                launch_iters: LONG_LAUNCH,
                ..SubClusterOptions::default()
            })),
            Sampler::SubClusterDpmm => Box::new(SubCluster::dpmm(DpmmOptions::default())),
        })
    }

    /// The report's initial state: one cluster, except the direct samplers, which it starts
    /// from the true number of uniformly random clusters because from one cluster they do not
    /// open new ones (its §"Serial Comparisons").
    fn init(self, n: usize, k_true: usize, seed: u64) -> common::Result<Vec<usize>> {
        Ok(match self {
            Sampler::Direct | Sampler::QuasiDirect => {
                partition_uniform(n, k_true, &mut SeedPlan::new(seed).chain(1))?
            }
            _ => vec![0; n],
        })
    }
}

/// The sizes and budgets of one invocation.
struct Config {
    out: PathBuf,
    smoke: bool,
    headline: bool,
    /// Only the report stage, from the CSVs already in `<out>/results`.
    report_only: bool,
    /// Gaussian points.
    n_gauss: usize,
    /// Documents.
    n_docs: usize,
    /// Chain seeds per data set: Gaussian, multinomial.
    seeds: (u64, u64),
    /// Wall-second budget of one chain's sweeps: Gaussian, multinomial.
    budget: (f64, f64),
    /// Iteration cap of one chain.
    max_iters: usize,
}

impl Config {
    fn from_args() -> common::Result<Self> {
        let mut out = common::crate_root().join("papers").join("dpmm-jl");
        let (mut smoke, mut headline, mut report_only) = (false, false, false);
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--out" => out = PathBuf::from(args.next().ok_or("--out needs a directory")?),
                "--smoke" => smoke = true,
                "--headline" => headline = true,
                "--report" => report_only = true,
                other => {
                    return Err(format!(
                        "unknown argument `{other}` (expected --out DIR, --smoke, --headline, \
                         --report)"
                    )
                    .into())
                }
            }
        }
        Ok(if smoke {
            Config {
                out,
                smoke,
                headline,
                report_only,
                n_gauss: 2_000,
                n_docs: 500,
                seeds: (1, 1),
                budget: (2.0, 0.1),
                max_iters: 100,
            }
        } else {
            Config {
                out,
                smoke,
                headline,
                report_only,
                n_gauss: 100_000,
                n_docs: 10_000,
                seeds: (3, 2),
                budget: (10.0, 8.0),
                max_iters: 300,
            }
        })
    }
}

/// Side of the grid of Gaussian centres.
const GRID_SPACING: f64 = 6.0;
/// Components of the Gaussian mixture (a 3 × 2 grid).
const K_GAUSS: usize = 6;
/// Topics of the bag-of-words data.
const K_TOPICS: usize = 10;
/// Vocabulary size.
const VOCAB: usize = 100;
/// Dirichlet parameter of the generating topics (sparse, well separated).
const TOPIC_BETA: f64 = 0.1;
/// Mean document length.
const DOC_LENGTH: f64 = 50.0;
/// Symmetric Dirichlet parameter of the kernel: DPMM.jl's "ones vector" prior.
const KERNEL_BETA: f64 = 1.0;
/// Seed of the data sets.
const DATA_SEED: u64 = 2019;

/// `n` points of six unit-covariance Gaussians centred on a 3 × 2 grid of side
/// [`GRID_SPACING`], equal weights, with their components.
fn gaussian_grid(n: usize, seed: u64) -> common::Result<(DenseData, Vec<usize>)> {
    let mut rng = SeedPlan::new(seed).chain(0);
    let mut values = Vec::with_capacity(2 * n);
    let mut truth = Vec::with_capacity(n);
    for _ in 0..n {
        let k = uniform_index(&mut rng, K_GAUSS);
        let (cx, cy) = (GRID_SPACING * (k % 3) as f64, GRID_SPACING * (k / 3) as f64);
        let zx: f64 = StandardNormal.sample(&mut rng);
        let zy: f64 = StandardNormal.sample(&mut rng);
        values.push(cx + zx);
        values.push(cy + zy);
        truth.push(k);
    }
    Ok((DenseData::new(n, 2, values)?, truth))
}

/// One recorded iteration of a chain.
struct Point {
    iter: usize,
    seconds: f64,
    ln_joint: f64,
    nmi: f64,
    k: usize,
}

/// A finished chain: its scored iterations and its last labelling.
struct Run {
    points: Vec<Point>,
    labels: Vec<usize>,
}

/// What one chain runs: which sampler, on how many threads, from which seed, for how long.
#[derive(Clone, Copy, Debug)]
struct ChainSpec {
    sampler: Sampler,
    threads: usize,
    seed: u64,
    /// Wall seconds of sweeps after which the chain stops.
    budget: f64,
    /// Iterations after which the chain stops.
    max_iters: usize,
}

/// Runs `spec.sampler` on `spec.threads` rayon threads from `init` until `spec.budget` wall
/// seconds of sweeps or `spec.max_iters` iterations; the state is scored after every sweep
/// (outside the clock).
fn run_chain<K: ParametricKernel + 'static>(
    kernel: &K,
    truth: &[usize],
    init: &[usize],
    spec: ChainSpec,
) -> common::Result<Run> {
    let ChainSpec {
        sampler,
        threads,
        seed,
        budget,
        max_iters,
    } = spec;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    // The pool's closure returns the library's error type, which is `Send`.
    let run = pool.install(|| -> nrmm::Result<Run> {
        let state = State {
            partition: Partition::from_labels(kernel, init)?,
            prior: Prior::from(Dp::new(1.0)?),
        };
        let mut chain = Chain::new(
            kernel,
            state,
            SeedPlan::new(seed).chain(0),
            vec![Scheduled {
                mv: sampler.build::<K>()?,
                repeats: 1,
            }],
        );
        let mut scorer = Scorer {
            truth,
            budget,
            max_iters,
            seconds: 0.0,
            started: None,
            points: Vec::new(),
        };
        scorer.points.push(scorer.score(&chain, 0)?);
        Executor::new(&mut chain).with(&mut scorer).run()?;
        Ok(Run {
            points: scorer.points,
            labels: chain.state().partition.canonical_labels(),
        })
    })?;
    Ok(run)
}

/// Stops a chain after `max_iters` iterations or once its sweeps have taken `budget` wall
/// seconds (checked after each sweep), and scores the state after every sweep outside the
/// clock.
struct Scorer<'t> {
    truth: &'t [usize],
    budget: f64,
    max_iters: usize,
    seconds: f64,
    /// When the current sweep started.
    started: Option<Instant>,
    points: Vec<Point>,
}

impl Scorer<'_> {
    /// The point of iteration `iter`: log joint, NMI against the truth and K.
    fn score<K: ConjugateKernel>(
        &self,
        chain: &Chain<'_, K, Prior>,
        iter: usize,
    ) -> nrmm::Result<Point> {
        let st = chain.state();
        let labels = st.partition.canonical_labels();
        Ok(Point {
            iter,
            seconds: self.seconds,
            ln_joint: st.partition.ln_joint(&st.prior),
            nmi: normalized_mutual_information(&labels, self.truth)?,
            k: st.partition.n_clusters(),
        })
    }
}

impl<K: ConjugateKernel> Handler<K, Prior> for Scorer<'_> {
    fn before_sweep(&mut self, _chain: &Chain<'_, K, Prior>) -> Option<Stop> {
        let iters = self.points.len() - 1;
        if iters >= self.max_iters || (iters > 0 && self.seconds >= self.budget) {
            return Some(Stop::Budget);
        }
        self.started = Some(Instant::now());
        None
    }

    fn after_sweep(
        &mut self,
        chain: &mut Chain<'_, K, Prior>,
        _record: &SweepRecord,
    ) -> nrmm::Result<()> {
        self.seconds += self
            .started
            .take()
            .map_or(0.0, |t| t.elapsed().as_secs_f64());
        let point = self.score(chain, self.points.len())?;
        self.points.push(point);
        Ok(())
    }
}

/// Runs every sampler (parallel ones on 1 and 2 threads) for `seeds` chain seeds of `budget`
/// wall seconds each and appends their traces to `trace`.
fn convergence<K: ParametricKernel + 'static>(
    data: &str,
    kernel: &K,
    truth: &[usize],
    k_true: usize,
    cfg: &Config,
    (seeds, budget): (u64, f64),
    trace: &mut Table,
) -> common::Result<()> {
    for seed in 1..=seeds {
        for sampler in SAMPLERS {
            let init = sampler.init(truth.len(), k_true, 100 + seed)?;
            let threads: &[usize] = if sampler.parallel() { &[1, 2] } else { &[1] };
            for &t in threads {
                let spec = ChainSpec {
                    sampler,
                    threads: t,
                    seed,
                    budget,
                    max_iters: cfg.max_iters,
                };
                let pts = run_chain(kernel, truth, &init, spec)?.points;
                let last = pts.last().expect("the initial point");
                eprintln!(
                    "{data} seed {seed} {:>16} {t}t: {:>4} iters {:>6.2} s  K {:>3}  NMI {:.3}",
                    sampler.name(),
                    last.iter,
                    last.seconds,
                    last.k,
                    last.nmi
                );
                for p in &pts {
                    trace.push(vec![
                        data.to_string(),
                        sampler.name().to_string(),
                        t.to_string(),
                        seed.to_string(),
                        p.iter.to_string(),
                        format!("{:.6}", p.seconds),
                        // Shortest round-trip form, so equal chains give equal strings.
                        format!("{}", p.ln_joint),
                        format!("{:.6}", p.nmi),
                        p.k.to_string(),
                    ]);
                }
            }
        }
    }
    Ok(())
}

/// The columns of `results/trace_*.csv`.
pub const TRACE_HEADER: [&str; 9] = [
    "data", "sampler", "threads", "seed", "iter", "seconds", "ln_joint", "nmi", "k",
];

/// The Normal-Wishart prior of every Gaussian run: `ξ` = the data mean, `ν = d + 10`,
/// `Ψ = (ν - d - 1) I` so that `E[Σ] = I` (the generating covariance; DPMM.jl's split-merge
/// runs use an identity-covariance prior too), and `r = 0.01`, so a component mean's prior
/// standard deviation (about 10) covers the grid of centres.
fn gaussian_prior(x: &DenseData) -> common::Result<NwHyper> {
    let d = x.d();
    let mut xi = vec![0.0; d];
    for i in 0..x.n() {
        for (m, v) in xi.iter_mut().zip(x.row(i)) {
            *m += v / x.n() as f64;
        }
    }
    let nu = d as f64 + 10.0;
    let mut psi = vec![0.0; d * d];
    for j in 0..d {
        psi[j * d + j] = nu - d as f64 - 1.0;
    }
    Ok(NwHyper::new(xi, psi, 0.01, nu)?)
}

fn gaussian_experiment(cfg: &Config, results: &std::path::Path) -> common::Result<()> {
    let (x, truth) = gaussian_grid(cfg.n_gauss, DATA_SEED)?;
    let hyper = gaussian_prior(&x)?;
    let kernel = NormalWishart::new(Arc::new(x), hyper)?;
    let mut trace = Table::new(&TRACE_HEADER);
    convergence(
        "gaussian",
        &kernel,
        &truth,
        K_GAUSS,
        cfg,
        (cfg.seeds.0, cfg.budget.0),
        &mut trace,
    )?;
    trace.write_csv(&results.join("trace_gaussian.csv"))
}

fn multinomial_experiment(cfg: &Config, results: &std::path::Path) -> common::Result<()> {
    let mut rng = SeedPlan::new(DATA_SEED).chain(2);
    let truth = partition_uniform(cfg.n_docs, K_TOPICS, &mut rng)?;
    let (counts, _topics) = bag_of_words(
        &truth,
        VOCAB,
        TOPIC_BETA,
        DocLengths::Poisson { mean: DOC_LENGTH },
        &mut rng,
    )?;
    let kernel = MultinomialDirichlet::new(Arc::new(counts), KERNEL_BETA)?;
    let mut trace = Table::new(&TRACE_HEADER);
    convergence(
        "multinomial",
        &kernel,
        &truth,
        K_TOPICS,
        cfg,
        (cfg.seeds.1, cfg.budget.1),
        &mut trace,
    )?;
    trace.write_csv(&results.join("trace_multinomial.csv"))
}

/// The columns of `results/headline.csv`.
pub const HEADLINE_HEADER: [&str; 10] = [
    "sampler", "n", "iters", "threads", "wall_s", "cpu_s", "final_k", "ari", "nmi", "peak_mb",
];

/// Peak resident set size of this process in MB (`VmHWM` of `/proc/self/status`).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// CPU seconds (user + system) of this process so far, from `/proc/self/stat` (clock ticks
/// of 1/100 s).
fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces; the fields after its closing parenthesis do not.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The report's headline: 100 sub-cluster iterations on N = 1,000,000, d = 2, K = 6, for the
/// exact sub-cluster sampler (default options) and the DPMM.jl-faithful one, on 1 and 2
/// threads, from one cluster as the report's runs start (`--Kinit 1`). The final K and ARI
/// show whether a sampler found the six clusters in those 100 iterations.
fn headline(cfg: &Config, results: &std::path::Path) -> common::Result<()> {
    let (n, iters) = if cfg.smoke {
        (20_000, 5)
    } else {
        (1_000_000, 100)
    };
    let (x, truth) = gaussian_grid(n, DATA_SEED)?;
    let hyper = gaussian_prior(&x)?;
    let kernel = NormalWishart::new(Arc::new(x), hyper)?;
    let init = vec![0; truth.len()];
    let mut rows = Vec::new();
    for sampler in [Sampler::SubCluster, Sampler::SubClusterDpmm] {
        for threads in [1, 2] {
            let cpu0 = process_cpu_s();
            let spec = ChainSpec {
                sampler,
                threads,
                seed: 1,
                budget: f64::INFINITY,
                max_iters: iters,
            };
            let run = run_chain(&kernel, &truth, &init, spec)?;
            let cpu = match (cpu0, process_cpu_s()) {
                (Some(a), Some(b)) => format!("{:.1}", b - a),
                _ => "n/a".to_string(),
            };
            let last = run.points.last().expect("the initial point");
            let ari = adjusted_rand_index(&run.labels, &truth)?;
            eprintln!(
                "headline {:>16} {threads}t: {:.1} s wall, {cpu} s CPU, K {}, NMI {:.4}, ARI {ari:.4}",
                sampler.name(),
                last.seconds,
                last.k,
                last.nmi
            );
            rows.push(vec![
                sampler.name().to_string(),
                n.to_string(),
                iters.to_string(),
                threads.to_string(),
                format!("{:.2}", last.seconds),
                cpu,
                last.k.to_string(),
                format!("{ari:.4}"),
                format!("{:.4}", last.nmi),
            ]);
        }
    }
    let peak = peak_rss_mb().map_or("n/a".to_string(), |mb| format!("{mb:.0}"));
    let mut t = Table::new(&HEADLINE_HEADER);
    for mut r in rows {
        r.push(peak.clone());
        t.push(r);
    }
    t.write_csv(&results.join("headline.csv"))
}

/// The 1-minute load average of the machine (`/proc/loadavg`), or "n/a".
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "n/a".to_string())
}

/// Records the machine's load at the start and end of an experiment in `<results>/<file>`.
fn with_load_record(
    results: &std::path::Path,
    file: &str,
    body: impl FnOnce() -> common::Result<()>,
) -> common::Result<()> {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mut t = Table::new(&["stage", "load_1min", "cpus"]);
    t.push(vec!["start".into(), load_average(), cpus.to_string()]);
    body()?;
    t.push(vec!["end".into(), load_average(), cpus.to_string()]);
    t.write_csv(&results.join(file))
}

fn main() -> common::Result<()> {
    let cfg = Config::from_args()?;
    let (results, figures) = common::output_dirs(&cfg.out)?;
    if cfg.report_only {
        return report::write(&cfg.out, &results, &figures, cfg.smoke);
    }
    if cfg.headline || cfg.smoke {
        with_load_record(&results, "machine_headline.csv", || {
            headline(&cfg, &results)
        })?;
    }
    if !cfg.headline {
        with_load_record(&results, "machine.csv", || {
            gaussian_experiment(&cfg, &results)?;
            multinomial_experiment(&cfg, &results)
        })?;
    }
    report::write(&cfg.out, &results, &figures, cfg.smoke)
}
