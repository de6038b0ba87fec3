//! Reproduction of Lee & Choi, "Tree-guided MCMC inference for normalized random measure
//! mixture models" (NIPS 2015): log joint against CPU seconds for Gibbs, Jain-Neal
//! split-merge, the paper's tgMCMC and this crate's exact tgMCMC on the paper's `toy` and
//! `10k` sets and on a bag-of-words corpus, the paper's `G` and `D` sweeps, and the distance
//! of every sampler from the exact posterior on two 7-point data sets (MATH §5.3).
//!
//! ```text
//! cargo run --release --example paper-tgmcmc-nips2015 -- [--smoke] [--out DIR] [--threads N]
//!     [--toy DIR] [--ten-k DIR] [--reuters FILE] [--only EXPERIMENT,...]
//! ```
//!
//! The experiments are `exactness`, `toy`, `toy_grid`, `ten_k` and `bag_of_words`; `--only`
//! reruns some of them (the claims of the others are read back from their last results).
//!
//! `--toy` and `--ten-k` are folders with `X.txt` and `gt_labels.txt` (default
//! `../shared/data/toy` and `../shared/data/10k`), `--reuters` an LDA-C file (default
//! `../shared/data/reuters/reuters.ldac`, its vocabulary from `reuters.tokens` beside it).
//! Without them, seeded synthetic stand-ins of the same shape are used, and the run says so.
//! Chains run in parallel on `--threads` threads (default 2); every time is the CPU time of
//! the chain's own thread, so the figures do not depend on the number of threads.
//!
//! Results go to `<out>/results/*.csv`, figures to `<out>/figures/*.svg`, and the numbers of
//! `<out>/README.md` are rewritten between its `BEGIN` / `END` markers.

#[path = "../common/mod.rs"]
mod common;

use common::cpu_clock::CpuClock;
use common::{median, update_readme, Claim, Table};
use nrmm::data::generate::{
    bag_of_words, data_set_a, data_set_b, gaussian_mixture, partition_uniform, toy_like,
    DocLengths, NormalWishartSampler,
};
use nrmm::data::{load, DenseData, SparseCounts};
use nrmm::diagnostics::{adjusted_rand_index, effective_sample_size};
use nrmm::exact::{ChainTv, ExactPosterior, Rgs};
use nrmm::kernel::{ConjugateKernel, MultinomialDirichlet, NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::NrmPrior;
use nrmm::prior::{Dp, Nggp, NggpHyperPriors, PartitionPrior, PartitionPriorSpec, Prior};
use nrmm::rng::SeedPlan;
use nrmm::run::executor::{Executor, Handler, Stop};
use nrmm::run::{Chain, Scheduled, SweepRecord};
use nrmm::sampler::tgmcmc::{tgmcmc_schedule, TgmcmcPaper};
use nrmm::sampler::{Gibbs, GibbsScan, HyperMove, JainNeal, RngChooser, Sams, State};
use nrmm::tree::{Forest, IbhcMode};
use plotters::prelude::*;
use rayon::prelude::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The DP(α = 1) log joint of the ground-truth partition of `toy`, the best any run of the
/// reference code reached (REFERENCE_FIGURES, "Golden value").
const TOY_GOLDEN: f64 = -1577.569613;

/// Restricted Gibbs launch scans of Jain-Neal, as in the reference code (MATH §6.2).
const LAUNCH_SCANS: usize = 10;

/// A log joint within this many nats of the best seen counts as having reached the optimum.
const WITHIN: f64 = 1.0;

/// The samplers of the comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sampler {
    /// One full Gibbs sweep in a fresh random order (MATH §6.1).
    Gibbs,
    /// Gibbs over this many points drawn uniformly without replacement per sweep (the paper's
    /// `Gibbs_sub`).
    GibbsSub(usize),
    /// One Jain-Neal split-merge proposal, then one full Gibbs sweep (MATH §6.2).
    JainNeal,
    /// One Jain-Neal proposal, then Gibbs over this many random points (the paper's `SM_sub`).
    JainNealSub(usize),
    /// One SAMS proposal, then one full Gibbs sweep (MATH §6.3).
    Sams,
    /// The reference tgMCMC sweep: `g` global moves, selective local moves of depth `d`
    /// (MATH §4, approximate).
    Paper { g: usize, d: usize },
    /// The exact tgMCMC sweep: `g` TG-SAMS proposals, then Gibbs over a uniformly random half
    /// of the points (MATH §5.4).
    Exact { g: usize },
}

/// The samplers of the exactness table; a sampler added to the crate joins it here.
const TV_SAMPLERS: [Sampler; 5] = [
    Sampler::Gibbs,
    Sampler::JainNeal,
    Sampler::Sams,
    Sampler::Paper { g: 10, d: 2 },
    Sampler::Exact { g: 10 },
];

impl Sampler {
    fn name(self) -> String {
        match self {
            Sampler::Gibbs => "Gibbs".into(),
            Sampler::GibbsSub(m) => format!("Gibbs_sub ({m} points)"),
            Sampler::JainNeal => "SM (Jain-Neal + Gibbs)".into(),
            Sampler::JainNealSub(m) => format!("SM_sub (Jain-Neal + Gibbs on {m} points)"),
            Sampler::Sams => "SAMS + Gibbs".into(),
            Sampler::Paper { g, d } => format!("tgMCMC paper (G={g}, D={d})"),
            Sampler::Exact { g } => format!("tgMCMC exact (G={g} TG-SAMS + Gibbs on half)"),
        }
    }

    /// The moves of one sweep over `n` points; `hyper` adds the hyperparameter update,
    /// `forest` is the paper move's starting forest and `initial` the chain's initial prior
    /// (the exact move's reference for its canonical trees).
    fn schedule<K: ConjugateKernel + 'static>(
        self,
        n: usize,
        hyper: bool,
        forest: Option<Forest<K>>,
        initial: &Prior,
    ) -> nrmm::Result<Vec<Scheduled<K, Prior>>> {
        let gibbs = |scan: GibbsScan| -> nrmm::Result<Scheduled<K, Prior>> {
            Ok(Scheduled {
                mv: Box::new(Gibbs::new(scan)?),
                repeats: 1,
            })
        };
        let mut moves = match self {
            Sampler::Gibbs => vec![gibbs(GibbsScan::Full)?],
            Sampler::GibbsSub(m) => vec![gibbs(GibbsScan::Subset(m))?],
            Sampler::JainNeal | Sampler::JainNealSub(_) => vec![
                Scheduled {
                    mv: Box::new(JainNeal::new(LAUNCH_SCANS)),
                    repeats: 1,
                },
                gibbs(match self {
                    Sampler::JainNealSub(m) => GibbsScan::Subset(m),
                    _ => GibbsScan::Full,
                })?,
            ],
            Sampler::Sams => vec![
                Scheduled {
                    mv: Box::new(Sams::new()),
                    repeats: 1,
                },
                gibbs(GibbsScan::Full)?,
            ],
            Sampler::Paper { g, d } => {
                let mut mv = TgmcmcPaper::new(g, d).with_hyper(hyper);
                if let Some(f) = forest {
                    mv = mv.with_forest(f);
                }
                return Ok(vec![Scheduled {
                    mv: Box::new(mv),
                    repeats: 1,
                }]);
            }
            Sampler::Exact { g } => {
                return tgmcmc_schedule(initial, g, GibbsScan::Subset((n / 2).max(1)), 1, hyper)
            }
        };
        if hyper {
            moves.push(Scheduled {
                mv: Box::new(HyperMove),
                repeats: 1,
            });
        }
        Ok(moves)
    }
}

/// The two priors of the paper: DP with `α = 1` fixed, and NGGP with the reference hyperpriors
/// (`α ~ Gamma(1, 1)`, `σ ~ Beta(1.5, 1.5)` on `[0.01, 0.99]`, `u` resampled every sweep).
#[derive(Clone, Copy, Debug, PartialEq)]
enum PriorKind {
    Dp,
    Nggp,
}

impl PriorKind {
    fn build(self) -> Prior {
        match self {
            PriorKind::Dp => Dp::new(1.0).expect("α = 1").into(),
            PriorKind::Nggp => Nggp::new(1.0, 0.5, 1.0, NggpHyperPriors::reference())
                .expect("reference NGGP")
                .into(),
        }
    }

    /// Whether a sweep resamples hyperparameters.
    fn hyper(self) -> bool {
        self == PriorKind::Nggp
    }

    fn name(self) -> &'static str {
        match self {
            PriorKind::Dp => "DP",
            PriorKind::Nggp => "NGGP",
        }
    }
}

/// How long a run goes on.
#[derive(Clone, Copy, Debug)]
struct Budget {
    /// CPU seconds of sampling.
    seconds: f64,
    /// Stop as soon as the log joint is within [`WITHIN`] of this.
    stop_at: Option<f64>,
}

/// One run: its trace against CPU time and how it ended.
#[derive(Clone, Debug)]
struct Run {
    /// CPU seconds of the noisy-IBHC initialisation (not counted in `times`).
    init_seconds: f64,
    /// Sampling CPU seconds after each sweep, starting with 0 for the initial state.
    times: Vec<f64>,
    /// The log joint at the same points.
    ln_joint: Vec<f64>,
    /// The number of clusters at the same points.
    k: Vec<usize>,
    /// Metropolis-Hastings proposals of the sampler's first move, accepted ones, and the sum
    /// of their capped log acceptance ratios.
    proposed: usize,
    accepted: usize,
    ln_accept_sum: f64,
    /// The final partition.
    labels: Vec<usize>,
}

impl Run {
    fn sweeps(&self) -> usize {
        self.times.len() - 1
    }

    fn seconds(&self) -> f64 {
        *self.times.last().expect("the initial point")
    }

    fn sweeps_per_second(&self) -> f64 {
        self.sweeps() as f64 / self.seconds()
    }

    fn best(&self) -> f64 {
        self.ln_joint
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// CPU seconds until the log joint first came within [`WITHIN`] of `target`.
    fn time_to(&self, target: f64) -> Option<f64> {
        self.ln_joint
            .iter()
            .position(|&l| l >= target - WITHIN)
            .map(|i| self.times[i])
    }

    /// The ESS of `K` over the second half of the sweeps per CPU second of that half.
    fn ess_k_per_second(&self) -> f64 {
        let half = self.sweeps() / 2;
        if half < 8 {
            return f64::NAN;
        }
        let ks: Vec<f64> = self.k[half + 1..].iter().map(|&k| k as f64).collect();
        effective_sample_size(&ks) / (self.seconds() - self.times[half])
    }

    /// The log joint of the last sweep at or before `t` (the initial value before the first).
    fn at(&self, t: f64) -> f64 {
        let i = self.times.partition_point(|&s| s <= t);
        self.ln_joint[i.saturating_sub(1)]
    }
}

/// The noisy-IBHC forest of `kernel`'s points (the reference initialisation) from seed
/// `seed`'s initialisation stream, and its CPU seconds.
fn noisy_ibhc<K: ConjugateKernel>(
    kernel: &K,
    prior: &Prior,
    seed: u64,
) -> nrmm::Result<(Forest<K>, f64)> {
    let mut rng = SeedPlan::new(seed).chain(1000);
    let clock = CpuClock::start();
    let forest = Forest::ibhc(
        kernel,
        prior,
        IbhcMode::Noisy,
        &mut RngChooser::new(&mut rng),
    )?;
    Ok((forest, clock.elapsed().as_secs_f64()))
}

/// Runs `sampler` from the noisy-IBHC partition of seed `seed` to the budget.
fn run_chain<K: ConjugateKernel + 'static>(
    kernel: &K,
    prior: PriorKind,
    sampler: Sampler,
    seed: u64,
    budget: Budget,
) -> nrmm::Result<Run> {
    let prior_value = prior.build();
    let (forest, init_seconds) = noisy_ibhc(kernel, &prior_value, seed)?;
    let partition = Partition::from_labels(kernel, &forest.labels()?)?;
    let state = State {
        partition,
        prior: prior_value,
    };
    let schedule =
        sampler.schedule(kernel.n_points(), prior.hyper(), Some(forest), &state.prior)?;
    let mut run = Run {
        init_seconds,
        times: vec![0.0],
        ln_joint: vec![state.ln_joint()],
        k: vec![state.partition.n_clusters()],
        proposed: 0,
        accepted: 0,
        ln_accept_sum: 0.0,
        labels: Vec::new(),
    };
    let mut chain = Chain::new(kernel, state, SeedPlan::new(seed).chain(0), schedule);
    let mut recorder = CpuRecorder {
        run: &mut run,
        budget,
        seconds: 0.0,
        clock: None,
    };
    Executor::new(&mut chain).with(&mut recorder).run()?;
    run.labels = chain.state().partition.canonical_labels();
    Ok(run)
}

/// The paper's stopping rule and record of a chain: the CPU seconds of its sweeps against the
/// budget, an early stop once the log joint is within [`WITHIN`] of the target, and each
/// sweep's log joint, K and first move's acceptance.
struct CpuRecorder<'r> {
    run: &'r mut Run,
    budget: Budget,
    seconds: f64,
    /// Started before a sweep, read after it, so only sweeps are timed.
    clock: Option<CpuClock>,
}

impl<K: ConjugateKernel, P: NrmPrior> Handler<K, P> for CpuRecorder<'_> {
    fn before_sweep(&mut self, _chain: &Chain<'_, K, P>) -> Option<Stop> {
        let target = self.budget.stop_at.map(|t| t - WITHIN);
        let last = self.run.ln_joint.last().copied();
        if self.run.sweeps() > 0 && target.is_some_and(|t| last.is_some_and(|l| l >= t)) {
            return Some(Stop::Done);
        }
        if self.seconds >= self.budget.seconds {
            return Some(Stop::Budget);
        }
        self.clock = Some(CpuClock::start());
        None
    }

    fn after_sweep(
        &mut self,
        _chain: &mut Chain<'_, K, P>,
        record: &SweepRecord,
    ) -> nrmm::Result<()> {
        self.seconds += self.clock.take().map_or(0.0, |c| c.elapsed().as_secs_f64());
        let run = &mut *self.run;
        run.times.push(self.seconds);
        run.ln_joint.push(record.ln_joint);
        run.k.push(record.n_clusters);
        if let Some((_, info)) = record.moves.first() {
            run.proposed += info.proposed;
            run.accepted += info.accepted;
            run.ln_accept_sum += info.ln_accept_sum;
        }
        Ok(())
    }
}

/// Runs every `(sampler, seed)` job on the thread pool, in job order.
fn run_all<K: ConjugateKernel + Sync + 'static>(
    pool: &rayon::ThreadPool,
    kernel: &K,
    prior: PriorKind,
    jobs: &[(Sampler, u64)],
    budget: Budget,
) -> nrmm::Result<Vec<Run>> {
    pool.install(|| {
        jobs.par_iter()
            .map(|&(s, seed)| run_chain(kernel, prior, s, seed, budget))
            .collect()
    })
}

/// Each sampler's runs, in the order of `samplers`.
fn by_sampler(samplers: &[Sampler], runs: Vec<Run>, per: usize) -> Vec<(Sampler, Vec<Run>)> {
    let mut it = runs.into_iter();
    samplers
        .iter()
        .map(|&s| (s, it.by_ref().take(per).collect()))
        .collect()
}

fn jobs(samplers: &[Sampler], runs: u64) -> Vec<(Sampler, u64)> {
    samplers
        .iter()
        .flat_map(|&s| (1..=runs).map(move |seed| (s, seed)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Summaries and figures.

fn f(v: f64, digits: usize) -> String {
    if v.is_finite() {
        format!("{v:.digits$}")
    } else {
        "—".into()
    }
}

/// The median of the times to `target` over all runs, a run that never got there counting as
/// slower than any that did; `None` when fewer than half got there.
fn median_time_to(runs: &[Run], target: f64) -> Option<f64> {
    let t: Vec<f64> = runs
        .iter()
        .map(|r| r.time_to(target).unwrap_or(f64::INFINITY))
        .collect();
    Some(median(&t)).filter(|m| m.is_finite())
}

fn reached(runs: &[Run], target: f64) -> usize {
    runs.iter().filter(|r| r.time_to(target).is_some()).count()
}

fn best_of(groups: &[(Sampler, Vec<Run>)]) -> f64 {
    groups
        .iter()
        .flat_map(|(_, runs)| runs.iter().map(Run::best))
        .fold(f64::NEG_INFINITY, f64::max)
}

/// The mean capped log acceptance ratio and the acceptance rate of the sampler's first move,
/// pooled over runs.
fn acceptance(runs: &[Run]) -> (f64, f64) {
    let p: usize = runs.iter().map(|r| r.proposed).sum();
    let a: usize = runs.iter().map(|r| r.accepted).sum();
    let l: f64 = runs.iter().map(|r| r.ln_accept_sum).sum();
    if p == 0 {
        (f64::NAN, f64::NAN)
    } else {
        (l / p as f64, a as f64 / p as f64)
    }
}

/// The median, minimum and maximum over runs of the log joint on a log-spaced grid of CPU
/// seconds from `t0` to `t1`.
struct Curve {
    name: String,
    t: Vec<f64>,
    median: Vec<f64>,
    lo: Vec<f64>,
    hi: Vec<f64>,
}

fn curve(name: String, runs: &[Run], t0: f64, t1: f64, points: usize) -> Curve {
    let t: Vec<f64> = (0..points)
        .map(|i| t0 * (t1 / t0).powf(i as f64 / (points - 1) as f64))
        .collect();
    let mut c = Curve {
        name,
        t: Vec::with_capacity(points),
        median: Vec::new(),
        lo: Vec::new(),
        hi: Vec::new(),
    };
    for &x in &t {
        // Only where every run has data (shorter runs stopped early).
        if runs.iter().any(|r| r.seconds() < x) {
            break;
        }
        let v: Vec<f64> = runs.iter().map(|r| r.at(x)).collect();
        c.t.push(x);
        c.median.push(median(&v));
        c.lo.push(v.iter().copied().fold(f64::INFINITY, f64::min));
        c.hi.push(v.iter().copied().fold(f64::NEG_INFINITY, f64::max));
    }
    c
}

fn curves_table(label: &str, curves: &[Curve], table: &mut Table) {
    for c in curves {
        for i in 0..c.t.len() {
            table.push(vec![
                label.to_string(),
                c.name.clone(),
                format!("{:.6}", c.t[i]),
                format!("{:.4}", c.median[i]),
                format!("{:.4}", c.lo[i]),
                format!("{:.4}", c.hi[i]),
            ]);
        }
    }
}

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// Log joint against CPU seconds (log scale): each curve's median as a line over a band from
/// its minimum to its maximum over runs; a dashed line marks `reference` if given. The y range
/// starts at the lowest median a third of the way along the time axis, so the approach to the
/// optimum is visible; what lies below is clamped to the bottom edge.
fn plot_curves(
    path: &Path,
    title: &str,
    curves: &[Curve],
    reference: Option<(f64, &str)>,
) -> common::Result<()> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let t0 = curves
        .iter()
        .filter_map(|c| c.t.first())
        .copied()
        .fold(f64::INFINITY, f64::min);
    let t1 = curves
        .iter()
        .filter_map(|c| c.t.last())
        .copied()
        .fold(0.0, f64::max);
    if !(t0.is_finite() && t1 > t0) {
        return Ok(());
    }
    let third = t0 * (t1 / t0).powf(1.0 / 3.0);
    let mut y_hi = curves
        .iter()
        .flat_map(|c| c.hi.iter())
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    if let Some((r, _)) = reference {
        y_hi = y_hi.max(r);
    }
    let mut y_lo = curves
        .iter()
        .flat_map(|c| c.t.iter().zip(&c.median).filter(|(t, _)| **t >= third))
        .map(|(_, m)| *m)
        .fold(f64::INFINITY, f64::min);
    if !y_lo.is_finite() || y_lo >= y_hi {
        y_lo = y_hi - 10.0;
    }
    let pad = 0.05 * (y_hi - y_lo);
    let (y_lo, y_hi) = (y_lo - pad, y_hi + pad);
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(18)
        .x_label_area_size(48)
        .y_label_area_size(90)
        .build_cartesian_2d((t0..t1).log_scale(), y_lo..y_hi)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("CPU seconds (log scale)")
        .y_desc("log joint")
        .x_label_formatter(&|v| format!("{v:.3}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(|e| err(&e))?;
    let clamp = |v: f64| v.clamp(y_lo, y_hi);
    for (i, c) in curves.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut band: Vec<(f64, f64)> =
            c.t.iter()
                .zip(&c.hi)
                .map(|(&t, &v)| (t, clamp(v)))
                .collect();
        band.extend(c.t.iter().zip(&c.lo).rev().map(|(&t, &v)| (t, clamp(v))));
        chart
            .draw_series(std::iter::once(Polygon::new(
                band,
                colour.mix(0.18).filled(),
            )))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(LineSeries::new(
                c.t.iter().zip(&c.median).map(|(&t, &v)| (t, clamp(v))),
                colour.stroke_width(2),
            ))
            .map_err(|e| err(&e))?
            .label(c.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
            });
    }
    if let Some((r, label)) = reference {
        let steps = 60;
        let dashes: Vec<f64> = (0..=steps)
            .map(|i| t0 * (t1 / t0).powf(i as f64 / steps as f64))
            .collect();
        chart
            .draw_series(
                dashes
                    .chunks(2)
                    .filter(|p| p.len() == 2)
                    .map(|p| PathElement::new(vec![(p[0], r), (p[1], r)], BLACK.stroke_width(1))),
            )
            .map_err(|e| err(&e))?
            .label(label.to_string())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(1)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Data.

/// A dense data set with its true labels, and whether it is the real one.
struct Dense {
    kernel: NormalWishart,
    truth: Vec<i64>,
    real: bool,
}

fn nw_kernel(x: DenseData) -> common::Result<NormalWishart> {
    let hyper = NwHyper::from_data(&x)?;
    Ok(NormalWishart::new(Arc::new(x), hyper)?)
}

/// `X.txt` and `gt_labels.txt` of `dir`, or `stand_in()` when absent.
fn load_dense_set(
    dir: Option<PathBuf>,
    stand_in: impl FnOnce() -> (DenseData, Vec<usize>),
) -> common::Result<Dense> {
    if let Some(dir) = dir {
        let x = load::load_dense(dir.join("X.txt"))?;
        let truth = load::load_labels(dir.join("gt_labels.txt"), x.n())?;
        return Ok(Dense {
            kernel: nw_kernel(x)?,
            truth,
            real: true,
        });
    }
    let (x, labels) = stand_in();
    Ok(Dense {
        kernel: nw_kernel(x)?,
        truth: labels.into_iter().map(|l| l as i64).collect(),
        real: false,
    })
}

/// A stand-in for `10k`: 10000 points in 6 dimensions from 119 clusters of a Normal-Wishart.
fn ten_k_stand_in() -> (DenseData, Vec<usize>) {
    let mut rng = SeedPlan::new(10_000).chain(0);
    let labels = partition_uniform(10_000, 119, &mut rng).expect("labels");
    let mut psi = vec![0.0; 36];
    for i in 0..6 {
        psi[i * 6 + i] = 0.05;
    }
    let nw = NormalWishartSampler::new(&[0.0; 6], &psi, 0.02, 12.0).expect("NW prior");
    let (x, _) = gaussian_mixture(&labels, &nw, &mut rng).expect("mixture");
    (x, labels)
}

/// The bag-of-words corpus, or a stand-in of Reuters' shape (395 documents, 4258 words).
fn load_corpus(path: Option<PathBuf>) -> common::Result<(SparseCounts, bool)> {
    if let Some(path) = path {
        let tokens = path.with_file_name("reuters.tokens");
        let vocab = std::fs::read_to_string(&tokens)
            .ok()
            .map(|t| t.lines().count());
        return Ok((load::load_ldac(&path, vocab)?, true));
    }
    let mut rng = SeedPlan::new(395).chain(0);
    let labels = partition_uniform(395, 12, &mut rng)?;
    let (counts, _) = bag_of_words(
        &labels,
        4258,
        0.1,
        DocLengths::Poisson { mean: 130.0 },
        &mut rng,
    )?;
    Ok((counts, false))
}

// ---------------------------------------------------------------------------------------------
// Settings.

struct Settings {
    smoke: bool,
    out: PathBuf,
    threads: usize,
    toy_dir: Option<PathBuf>,
    ten_k_dir: Option<PathBuf>,
    corpus: Option<PathBuf>,
    toy_runs: u64,
    toy_seconds: f64,
    grid_runs: u64,
    grid_seconds: f64,
    ten_k_runs: u64,
    ten_k_seconds: f64,
    bow_runs: u64,
    bow_seconds: f64,
    tv_chains: usize,
    tv_sweeps: usize,
    /// The experiments to run (`--only a,b`); all when `None`.
    only: Option<Vec<String>>,
}

/// The experiments, in the order they run (`toy_grid` reads `toy`'s results).
const EXPERIMENTS: &[&str] = &["exactness", "toy", "toy_grid", "ten_k", "bag_of_words"];

fn settings() -> common::Result<Settings> {
    let root = common::crate_root();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut smoke = false;
    let mut out = root.join("papers").join("tgmcmc-nips2015");
    let mut threads = 2;
    let mut toy_dir = None;
    let mut ten_k_dir = None;
    let mut corpus = None;
    let mut only = None;
    let mut i = 0;
    while i < args.len() {
        let value = |i: usize| {
            args.get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{} needs a value", args[i]))
        };
        match args[i].as_str() {
            "--smoke" => smoke = true,
            "--out" => {
                out = PathBuf::from(value(i)?);
                i += 1;
            }
            "--threads" => {
                threads = value(i)?.parse().map_err(|e| format!("--threads: {e}"))?;
                i += 1;
            }
            "--toy" => {
                toy_dir = Some(PathBuf::from(value(i)?));
                i += 1;
            }
            "--ten-k" => {
                ten_k_dir = Some(PathBuf::from(value(i)?));
                i += 1;
            }
            "--reuters" => {
                corpus = Some(PathBuf::from(value(i)?));
                i += 1;
            }
            "--only" => {
                let list: Vec<String> = value(i)?.split(',').map(str::to_string).collect();
                if let Some(bad) = list.iter().find(|x| !EXPERIMENTS.contains(&x.as_str())) {
                    return Err(format!(
                        "--only: unknown experiment `{bad}` (one of {})",
                        EXPERIMENTS.join(", ")
                    )
                    .into());
                }
                only = Some(list);
                i += 1;
            }
            other => return Err(format!("unknown argument `{other}`").into()),
        }
        i += 1;
    }
    let toy_dir = toy_dir.or_else(|| {
        common::shared_data(&root, "toy", "X.txt").and_then(|p| p.parent().map(Path::to_path_buf))
    });
    let ten_k_dir = ten_k_dir.or_else(|| {
        common::shared_data(&root, "10k", "X.txt").and_then(|p| p.parent().map(Path::to_path_buf))
    });
    let corpus = corpus.or_else(|| common::shared_data(&root, "reuters", "reuters.ldac"));
    let s = if smoke {
        Settings {
            smoke,
            out,
            threads: threads.max(1),
            toy_dir,
            ten_k_dir,
            corpus,
            toy_runs: 2,
            toy_seconds: 0.15,
            grid_runs: 1,
            grid_seconds: 0.05,
            ten_k_runs: 1,
            ten_k_seconds: 0.4,
            bow_runs: 1,
            bow_seconds: 0.2,
            tv_chains: 2,
            tv_sweeps: 1000,
            only,
        }
    } else {
        Settings {
            smoke,
            out,
            threads: threads.max(1),
            toy_dir,
            ten_k_dir,
            corpus,
            toy_runs: 10,
            toy_seconds: 10.0,
            grid_runs: 5,
            grid_seconds: 10.0,
            ten_k_runs: 3,
            ten_k_seconds: 60.0,
            bow_runs: 3,
            bow_seconds: 15.0,
            tv_chains: 4,
            tv_sweeps: 100_000,
            only,
        }
    };
    Ok(s)
}

/// Where a reproduction's outputs go and what it says in the README.
struct Output {
    results: PathBuf,
    figures: PathBuf,
    readme: PathBuf,
    claims: Vec<Claim>,
}

impl Output {
    fn section(&self, name: &str, content: &str) -> common::Result<()> {
        update_readme(&self.readme, name, content)
    }
}

// ---------------------------------------------------------------------------------------------
// Experiment 1: toy.

fn toy(s: &Settings, pool: &rayon::ThreadPool, out: &mut Output) -> common::Result<()> {
    let data = load_dense_set(s.toy_dir.clone(), || toy_like(1))?;
    let samplers = [
        Sampler::Gibbs,
        Sampler::JainNeal,
        Sampler::Paper { g: 10, d: 2 },
        Sampler::Exact { g: 10 },
    ];
    let budget = Budget {
        seconds: s.toy_seconds,
        stop_at: None,
    };
    let mut table = Table::new(&[
        "prior",
        "sampler",
        "runs",
        "sweeps/s (median)",
        "best log joint",
        "runs within 1 nat of best",
        "median CPU s to within 1 nat",
        "ESS(K)/s (median)",
        "MH move: mean capped log A",
        "MH move: acceptance rate",
        "noisy-IBHC init s (median)",
    ]);
    let mut curves_csv = Table::new(&["prior", "sampler", "seconds", "median", "min", "max"]);
    let mut dp_times = Vec::new();
    let mut rates = Vec::new();
    let mut best_dp = f64::NAN;
    for prior in [PriorKind::Dp, PriorKind::Nggp] {
        eprintln!(
            "toy, {}: {} runs of {} CPU s per sampler",
            prior.name(),
            s.toy_runs,
            s.toy_seconds
        );
        let runs = run_all(
            pool,
            &data.kernel,
            prior,
            &jobs(&samplers, s.toy_runs),
            budget,
        )?;
        let groups = by_sampler(&samplers, runs, s.toy_runs as usize);
        let best = best_of(&groups);
        if prior == PriorKind::Dp {
            best_dp = best;
        }
        let mut curves = Vec::new();
        for (sampler, runs) in &groups {
            let rate = median(&runs.iter().map(Run::sweeps_per_second).collect::<Vec<_>>());
            let t = median_time_to(runs, best);
            let (ln_a, acc) = acceptance(runs);
            table.push(vec![
                prior.name().into(),
                sampler.name(),
                runs.len().to_string(),
                f(rate, 1),
                f(
                    runs.iter().map(Run::best).fold(f64::NEG_INFINITY, f64::max),
                    2,
                ),
                format!("{}/{}", reached(runs, best), runs.len()),
                t.map_or("not reached".into(), |t| f(t, 3)),
                f(
                    median(&runs.iter().map(Run::ess_k_per_second).collect::<Vec<_>>()),
                    0,
                ),
                f(ln_a, 3),
                f(acc, 3),
                f(
                    median(&runs.iter().map(|r| r.init_seconds).collect::<Vec<_>>()),
                    4,
                ),
            ]);
            rates.push((prior, *sampler, rate));
            if prior == PriorKind::Dp {
                dp_times.push((*sampler, t, reached(runs, best), runs.len()));
            }
            curves.push(curve(
                sampler.name(),
                runs,
                s.toy_seconds / 5000.0,
                s.toy_seconds,
                150,
            ));
        }
        curves_table(prior.name(), &curves, &mut curves_csv);
        let reference = match prior {
            PriorKind::Dp => Some((TOY_GOLDEN, "log joint of the true partition")),
            PriorKind::Nggp => None,
        };
        plot_curves(
            &out.figures
                .join(format!("toy_{}.svg", prior.name().to_lowercase())),
            &format!(
                "toy ({}), {}: median and min-max over {} runs from noisy IBHC",
                if data.real { "1300 x 2" } else { "stand-in" },
                match prior {
                    PriorKind::Dp => "DP(alpha = 1)",
                    PriorKind::Nggp => "NGGP, reference hyperpriors",
                },
                s.toy_runs
            ),
            &curves,
            reference,
        )?;
    }
    table.write_csv(&out.results.join("toy.csv"))?;
    curves_csv.write_csv(&out.results.join("toy_curves.csv"))?;
    let mut md = table.markdown();
    let _ = write!(
        md,
        "\nBest log joint seen under the DP over all runs: {best_dp:.6} (the true partition's: \
         {TOY_GOLDEN}).\n"
    );
    out.section("toy", &md)?;

    // Claims.
    let time = |want: fn(&Sampler) -> bool| {
        dp_times
            .iter()
            .find(|(s, ..)| want(s))
            .map(|&(_, t, r, n)| (t, r, n))
            .expect("sampler ran")
    };
    let (t_gibbs, r_gibbs, n) = time(|s| *s == Sampler::Gibbs);
    let (t_sm, r_sm, _) = time(|s| *s == Sampler::JainNeal);
    let (t_paper, r_paper, _) = time(|s| matches!(s, Sampler::Paper { .. }));
    let (t_exact, r_exact, _) = time(|s| matches!(s, Sampler::Exact { .. }));
    let show = |t: Option<f64>, r: usize| match t {
        Some(t) => format!("{t:.3} s ({r}/{n} runs)"),
        None => format!("not reached by half ({r}/{n} runs)"),
    };
    out.claims.push(Claim {
        claim: "toy, DP: tgMCMC reaches the optimum far sooner than Gibbs and SM (median CPU s to within 1 nat)".into(),
        paper: "reference code: Gibbs 6.91 s, SM 2.27 s, tgMCMC 0.95 s (3 runs each)".into(),
        ours: format!(
            "Gibbs {}, SM {}, tgMCMC paper {}, exact {}",
            show(t_gibbs, r_gibbs),
            show(t_sm, r_sm),
            show(t_paper, r_paper),
            show(t_exact, r_exact)
        ),
        ratio: match (t_paper, t_exact) {
            (Some(p), Some(e)) => format!(
                "paper mode {:.1}x, exact {:.1}x faster than the reference tgMCMC",
                0.95 / p,
                0.95 / e
            ),
            _ => "—".into(),
        },
        run: common::this_run(),
    });
    let rate = |prior: PriorKind, want: fn(&Sampler) -> bool| {
        rates
            .iter()
            .find(|(p, s, _)| *p == prior && want(s))
            .map(|r| r.2)
            .expect("sampler ran")
    };
    for (what, want, reference) in [
        (
            "Gibbs",
            (|s: &Sampler| *s == Sampler::Gibbs) as fn(&Sampler) -> bool,
            66.9,
        ),
        (
            "SM (Jain-Neal + Gibbs)",
            |s: &Sampler| *s == Sampler::JainNeal,
            51.6,
        ),
        (
            "tgMCMC paper mode (G=10, D=2)",
            |s: &Sampler| matches!(s, Sampler::Paper { .. }),
            398.7,
        ),
    ] {
        let ours = rate(PriorKind::Dp, want);
        out.claims.push(Claim {
            claim: format!("toy, DP: {what} sweeps per CPU second"),
            paper: format!("reference code: {reference}"),
            ours: f(ours, 1),
            ratio: format!("{:.1}x faster", ours / reference),
            run: common::this_run(),
        });
    }
    Ok(())
}

/// The paper's `G` and `D` sweeps of the paper mode on toy (DP): sweeps/s and time to the
/// optimum, each run stopped once it is within 1 nat of the best seen by the main runs.
fn toy_grid(
    s: &Settings,
    pool: &rayon::ThreadPool,
    out: &mut Output,
    target: f64,
) -> common::Result<()> {
    let data = load_dense_set(s.toy_dir.clone(), || toy_like(1))?;
    let configs: Vec<Sampler> = [(1, 2), (5, 2), (10, 2), (20, 2), (10, 0), (10, 1), (10, 3)]
        .into_iter()
        .map(|(g, d)| Sampler::Paper { g, d })
        .collect();
    eprintln!(
        "toy G/D sweep: {} runs of at most {} CPU s per setting",
        s.grid_runs, s.grid_seconds
    );
    let budget = Budget {
        seconds: s.grid_seconds,
        stop_at: Some(target),
    };
    let runs = run_all(
        pool,
        &data.kernel,
        PriorKind::Dp,
        &jobs(&configs, s.grid_runs),
        budget,
    )?;
    let mut table = Table::new(&[
        "G",
        "D",
        "runs",
        "sweeps/s (median)",
        "runs within 1 nat of the optimum",
        "median CPU s to within 1 nat",
        "mean capped log A of the global moves",
    ]);
    for (sampler, runs) in by_sampler(&configs, runs, s.grid_runs as usize) {
        let Sampler::Paper { g, d } = sampler else {
            unreachable!("paper configurations only")
        };
        table.push(vec![
            g.to_string(),
            d.to_string(),
            runs.len().to_string(),
            f(
                median(&runs.iter().map(Run::sweeps_per_second).collect::<Vec<_>>()),
                1,
            ),
            format!("{}/{}", reached(&runs, target), runs.len()),
            median_time_to(&runs, target).map_or("not reached".into(), |t| f(t, 3)),
            f(acceptance(&runs).0, 3),
        ]);
    }
    table.write_csv(&out.results.join("toy_grid.csv"))?;
    out.section(
        "toy_grid",
        &format!(
            "{}\nOptimum: {target:.2} (best log joint of the main toy runs). Each run stops at \
             the optimum or after {} CPU s.\n",
            table.markdown(),
            s.grid_seconds
        ),
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Experiment 2: 10k.

fn ten_k(s: &Settings, pool: &rayon::ThreadPool, out: &mut Output) -> common::Result<()> {
    let data = load_dense_set(s.ten_k_dir.clone(), ten_k_stand_in)?;
    let n = data.kernel.n_points();
    let prior = PriorKind::Nggp;
    let budget = Budget {
        seconds: s.ten_k_seconds,
        stop_at: None,
    };
    let main = [
        Sampler::Gibbs,
        Sampler::JainNeal,
        Sampler::Paper { g: 10, d: 2 },
        Sampler::Exact { g: 10 },
    ];
    eprintln!(
        "10k, NGGP: {} runs of {} CPU s per sampler",
        s.ten_k_runs, s.ten_k_seconds
    );
    let runs = run_all(
        pool,
        &data.kernel,
        prior,
        &jobs(&main, s.ten_k_runs),
        budget,
    )?;
    let mut groups = by_sampler(&main, runs, s.ten_k_runs as usize);
    // Gibbs_sub and SM_sub update as many points per sweep as make a Gibbs sweep as long as a
    // sweep of the paper's tgMCMC.
    let rate = |g: &[(Sampler, Vec<Run>)], want: fn(&Sampler) -> bool| {
        let runs = &g.iter().find(|(s, _)| want(s)).expect("ran").1;
        median(&runs.iter().map(Run::sweeps_per_second).collect::<Vec<_>>())
    };
    let gibbs_rate = rate(&groups, |s| *s == Sampler::Gibbs);
    let paper_rate = rate(&groups, |s| matches!(s, Sampler::Paper { .. }));
    let subset = ((n as f64 * gibbs_rate / paper_rate).round() as usize).clamp(1, n);
    let sub = [Sampler::GibbsSub(subset), Sampler::JainNealSub(subset)];
    eprintln!("10k, NGGP: Gibbs_sub and SM_sub on {subset} points per sweep");
    let runs = run_all(pool, &data.kernel, prior, &jobs(&sub, s.ten_k_runs), budget)?;
    groups.extend(by_sampler(&sub, runs, s.ten_k_runs as usize));
    let best = best_of(&groups);
    let list = |v: Vec<String>| v.join(" / ");
    let mut table = Table::new(&[
        "sampler",
        "runs",
        "sweeps/s (median)",
        "best log joint (per run)",
        "final K (per run)",
        "ARI vs truth (per run)",
        "runs within 1 nat of best",
        "MH move: mean capped log A",
    ]);
    let mut curves = Vec::new();
    let mut summary = Vec::new();
    for (sampler, runs) in &groups {
        let aris: Vec<f64> = runs
            .iter()
            .map(|r| adjusted_rand_index(&r.labels, &data.truth))
            .collect::<nrmm::Result<_>>()?;
        let bests: Vec<f64> = runs.iter().map(Run::best).collect();
        let ks: Vec<usize> = runs.iter().map(|r| *r.k.last().expect("K")).collect();
        let rate = median(&runs.iter().map(Run::sweeps_per_second).collect::<Vec<_>>());
        table.push(vec![
            sampler.name(),
            runs.len().to_string(),
            f(rate, 2),
            list(bests.iter().map(|&b| f(b, 1)).collect()),
            list(ks.iter().map(|k| k.to_string()).collect()),
            list(aris.iter().map(|&a| f(a, 3)).collect()),
            format!("{}/{}", reached(runs, best), runs.len()),
            f(acceptance(runs).0, 3),
        ]);
        summary.push((*sampler, rate, bests, ks, aris));
        curves.push(curve(
            sampler.name(),
            runs,
            s.ten_k_seconds / 3000.0,
            s.ten_k_seconds,
            150,
        ));
    }
    table.write_csv(&out.results.join("ten_k.csv"))?;
    let mut curves_csv = Table::new(&["prior", "sampler", "seconds", "median", "min", "max"]);
    curves_table("NGGP", &curves, &mut curves_csv);
    curves_csv.write_csv(&out.results.join("ten_k_curves.csv"))?;
    plot_curves(
        &out.figures.join("ten_k_nggp.svg"),
        &format!(
            "10k ({}), NGGP with reference hyperpriors: median and min-max over {} runs",
            if data.real { "10000 x 6" } else { "stand-in" },
            s.ten_k_runs
        ),
        &curves,
        Some((-73444.0, "reference code's best (60 s)")),
    )?;
    out.section(
        "ten_k",
        &format!(
            "{}\nGibbs_sub and SM_sub update {subset} of the {n} points per sweep: the number that \
             makes a Gibbs sweep as long as a sweep of the paper's tgMCMC (median Gibbs {:.2} \
             sweeps/s, tgMCMC paper {:.2} sweeps/s in the runs above).\n",
            table.markdown(),
            gibbs_rate,
            paper_rate
        ),
    )?;

    let pick = |want: fn(&Sampler) -> bool| {
        summary
            .iter()
            .find(|x| want(&x.0))
            .cloned()
            .expect("sampler ran")
    };
    let (_, paper_rate, paper_best, paper_k, paper_ari) =
        pick(|s| matches!(s, Sampler::Paper { .. }));
    let (_, _, exact_best, exact_k, exact_ari) = pick(|s| matches!(s, Sampler::Exact { .. }));
    let (_, gibbs_rate, gibbs_best, _, gibbs_ari) = pick(|s| *s == Sampler::Gibbs);
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let range = |v: &[f64], d: usize| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        format!("{}-{}", f(lo, d), f(max(v), d))
    };
    let k_range = |v: &[usize]| {
        format!(
            "{}-{}",
            v.iter().min().copied().unwrap_or(0),
            v.iter().max().copied().unwrap_or(0)
        )
    };
    out.claims.push(Claim {
        claim: format!(
            "10k, NGGP, {} CPU s: tgMCMC's best log joint (best of runs)",
            s.ten_k_seconds
        ),
        paper: "reference code: -73444.0 (tgMCMC), -77620.5 (Gibbs)".into(),
        ours: format!(
            "tgMCMC paper {:.1}, exact {:.1}, Gibbs {:.1}",
            max(&paper_best),
            max(&exact_best),
            max(&gibbs_best)
        ),
        ratio: format!(
            "paper mode {:+.1} nats, exact {:+.1} nats vs the reference tgMCMC",
            max(&paper_best) + 73444.0,
            max(&exact_best) + 73444.0
        ),
        run: common::this_run(),
    });
    out.claims.push(Claim {
        claim: "10k, NGGP: final K and ARI against the true labels (119 clusters)".into(),
        paper: "reference code: tgMCMC K 118-119, ARI 0.985-0.986; Gibbs ARI 0.90-0.92".into(),
        ours: format!(
            "tgMCMC paper K {}, ARI {}; exact K {}, ARI {}; Gibbs ARI {}",
            k_range(&paper_k),
            range(&paper_ari, 3),
            k_range(&exact_k),
            range(&exact_ari, 3),
            range(&gibbs_ari, 3)
        ),
        ratio: "—".into(),
        run: common::this_run(),
    });
    for (what, ours, reference) in [
        ("tgMCMC paper mode", paper_rate, 7.9),
        ("Gibbs", gibbs_rate, 0.38),
    ] {
        out.claims.push(Claim {
            claim: format!("10k, NGGP: {what} sweeps per CPU second"),
            paper: format!("reference code: {reference}"),
            ours: f(ours, 2),
            ratio: format!("{:.1}x faster", ours / reference),
            run: common::this_run(),
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Experiment 3: bag of words.

fn bag(s: &Settings, pool: &rayon::ThreadPool, out: &mut Output) -> common::Result<()> {
    let (counts, real) = load_corpus(s.corpus.clone())?;
    let (docs, vocab) = (counts.n(), counts.vocab());
    let kernel = MultinomialDirichlet::new(Arc::new(counts), 0.1)?;
    let samplers = [
        Sampler::Gibbs,
        Sampler::JainNeal,
        Sampler::Paper { g: 10, d: 2 },
        Sampler::Exact { g: 10 },
    ];
    eprintln!(
        "bag of words, NGGP: {} runs of {} CPU s per sampler",
        s.bow_runs, s.bow_seconds
    );
    let budget = Budget {
        seconds: s.bow_seconds,
        stop_at: None,
    };
    let runs = run_all(
        pool,
        &kernel,
        PriorKind::Nggp,
        &jobs(&samplers, s.bow_runs),
        budget,
    )?;
    let groups = by_sampler(&samplers, runs, s.bow_runs as usize);
    let best = best_of(&groups);
    let mut table = Table::new(&[
        "sampler",
        "runs",
        "sweeps/s (median)",
        "best log joint (per run)",
        "final K (per run)",
        "runs within 1 nat of best",
        "median CPU s to within 1 nat",
        "MH move: mean capped log A",
    ]);
    let mut curves = Vec::new();
    let mut times = Vec::new();
    for (sampler, runs) in &groups {
        let t = median_time_to(runs, best);
        table.push(vec![
            sampler.name(),
            runs.len().to_string(),
            f(
                median(&runs.iter().map(Run::sweeps_per_second).collect::<Vec<_>>()),
                1,
            ),
            runs.iter()
                .map(|r| f(r.best(), 1))
                .collect::<Vec<_>>()
                .join(" / "),
            runs.iter()
                .map(|r| r.k.last().expect("K").to_string())
                .collect::<Vec<_>>()
                .join(" / "),
            format!("{}/{}", reached(runs, best), runs.len()),
            t.map_or("not reached".into(), |t| f(t, 3)),
            f(acceptance(runs).0, 3),
        ]);
        times.push((
            sampler.name(),
            t,
            runs.iter().map(Run::best).fold(f64::NEG_INFINITY, f64::max),
        ));
        curves.push(curve(
            sampler.name(),
            runs,
            s.bow_seconds / 3000.0,
            s.bow_seconds,
            150,
        ));
    }
    table.write_csv(&out.results.join("bag_of_words.csv"))?;
    let mut curves_csv = Table::new(&["prior", "sampler", "seconds", "median", "min", "max"]);
    curves_table("NGGP", &curves, &mut curves_csv);
    curves_csv.write_csv(&out.results.join("bag_of_words_curves.csv"))?;
    let what = if real {
        format!("Reuters ({docs} docs x {vocab} words)")
    } else {
        format!("stand-in corpus ({docs} docs x {vocab} words)")
    };
    plot_curves(
        &out.figures.join("bag_of_words_nggp.svg"),
        &format!(
            "{}, NGGP: median and min-max over {} runs",
            if real { "Reuters" } else { "stand-in corpus" },
            s.bow_runs
        ),
        &curves,
        None,
    )?;
    out.section(
        "bag_of_words",
        &format!(
            "{what}.\n\n{}\nBest log joint seen: {best:.2}.\n",
            table.markdown()
        ),
    )?;
    let show: Vec<String> = times
        .iter()
        .map(|(name, _, b)| format!("{} {b:.1}", name.split(" (").next().unwrap_or(name)))
        .collect();
    out.claims.push(Claim {
        claim: format!(
            "{what}, NGGP: best log joint in {} CPU s (best of runs)",
            s.bow_seconds
        ),
        paper: "NIPS corpus (not available): tgMCMC reaches a higher log joint sooner than Gibbs and SM"
            .into(),
        ours: show.join("; "),
        ratio: "—".into(),
        run: common::this_run(),
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Experiment 4: exactness.

/// The exact posterior a chain running `prior` targets: `u` and every random hyperparameter
/// integrated out (MATH §7.1).
fn exact_posterior<K: ConjugateKernel>(kernel: &K, prior: &Prior) -> nrmm::Result<ExactPosterior> {
    let weights = PartitionPrior::new(PartitionPriorSpec::from_prior(prior)?, kernel.n_points())?;
    let mut failed = None;
    let post = ExactPosterior::new(kernel, |sizes: &[usize]| match weights.ln_weight(sizes) {
        Ok(w) => w,
        Err(e) => {
            failed = Some(e);
            f64::NAN
        }
    });
    match failed {
        Some(e) => Err(e),
        None => post,
    }
}

/// `chains` chains of `sweeps` sweeps of `sampler` from exact-IBHC starts (each chain's own
/// seed), the first tenth dropped, scored against the exact posterior.
fn tv_config(
    data: &DenseData,
    prior: PriorKind,
    sampler: Sampler,
    chains: usize,
    sweeps: usize,
    seed: u64,
) -> nrmm::Result<ChainTv> {
    let kernel = NormalWishart::new(Arc::new(data.clone()), NwHyper::from_data(data)?)?;
    let prior_value = prior.build();
    let post = exact_posterior(&kernel, &prior_value)?;
    let burn_in = sweeps / 10;
    let mut visited = Vec::with_capacity(chains);
    for c in 0..chains as u64 {
        let plan = SeedPlan::new(seed);
        let mut rng = plan.task(c, 0, 1);
        let forest = Forest::ibhc(
            &kernel,
            &prior_value,
            IbhcMode::Exact,
            &mut RngChooser::new(&mut rng),
        )?;
        let state = State {
            partition: Partition::from_labels(&kernel, &forest.labels()?)?,
            prior: prior_value.clone(),
        };
        let schedule =
            sampler.schedule(kernel.n_points(), prior.hyper(), Some(forest), &state.prior)?;
        let mut chain = Chain::new(&kernel, state, plan.chain(c), schedule);
        let mut v = Vec::with_capacity(sweeps - burn_in);
        for sweep in 0..sweeps {
            chain.sweep()?;
            if sweep >= burn_in {
                let rgs = Rgs::from_labels(&chain.state().partition.canonical_labels())?;
                v.push(post.index_of(&rgs)?);
            }
        }
        visited.push(v);
    }
    post.chain_tv(&visited, 20)
}

fn exactness(s: &Settings, pool: &rayon::ThreadPool, out: &mut Output) -> common::Result<()> {
    let sets = [("A", data_set_a()), ("B", data_set_b())];
    let mut configs = Vec::new();
    for (name, data) in &sets {
        for prior in [PriorKind::Dp, PriorKind::Nggp] {
            for sampler in TV_SAMPLERS {
                configs.push((*name, data, prior, sampler));
            }
        }
    }
    eprintln!(
        "exactness: {} configurations, {} chains of {} sweeps each",
        configs.len(),
        s.tv_chains,
        s.tv_sweeps
    );
    let results: Vec<ChainTv> = pool.install(|| {
        configs
            .par_iter()
            .enumerate()
            .map(|(i, (_, data, prior, sampler))| {
                tv_config(
                    data,
                    *prior,
                    *sampler,
                    s.tv_chains,
                    s.tv_sweeps,
                    500 + i as u64,
                )
            })
            .collect::<nrmm::Result<_>>()
    })?;
    let mut table = Table::new(&[
        "data",
        "prior",
        "sampler",
        "draws",
        "N_eff",
        "TV",
        "noise floor E[TV]",
        "TV / floor",
        "TV over K",
    ]);
    let mut paper = Vec::new();
    let mut exact_ratio: f64 = 0.0;
    for ((name, _, prior, sampler), m) in configs.iter().zip(&results) {
        table.push(vec![
            name.to_string(),
            prior.name().into(),
            sampler.name(),
            m.draws.to_string(),
            f(m.n_eff, 0),
            f(m.tv, 4),
            f(m.expected_tv, 4),
            f(m.ratio_to_floor(), 2),
            f(m.tv_k, 4),
        ]);
        match sampler {
            Sampler::Paper { .. } => paper.push((*name, *prior, *m)),
            Sampler::Exact { .. } => exact_ratio = exact_ratio.max(m.ratio_to_floor()),
            _ => {}
        }
    }
    table.write_csv(&out.results.join("exactness.csv"))?;
    out.section(
        "exactness",
        &format!(
            "{}\n{} chains of {} sweeps per row from exact-IBHC starts, the first tenth \
             dropped; N_eff by batch means of the partition indicators (20 batches per chain); \
             the noise floor is the exact expected TV of N_eff independent draws.\n",
            table.markdown(),
            s.tv_chains,
            s.tv_sweeps
        ),
    )?;
    let tv_of = |set: &str, prior: PriorKind| {
        paper
            .iter()
            .find(|(n, p, _)| *n == set && *p == prior)
            .map(|x| x.2)
            .expect("ran")
    };
    let (a_dp, b_dp, b_nggp) = (
        tv_of("A", PriorKind::Dp),
        tv_of("B", PriorKind::Dp),
        tv_of("B", PriorKind::Nggp),
    );
    out.claims.push(Claim {
        claim: "tgMCMC as published converges to the posterior (TV to the exact posterior, 7 points, G=10, D=2)".into(),
        paper: "reference code (MATH §5.3): TV 0.142 (A, DP), 0.372 (B, DP), 0.411 (B, NGGP)".into(),
        ours: format!(
            "paper mode TV {:.3} (A, DP), {:.3} (B, DP), {:.3} (B, NGGP), floors {:.3}-{:.3}",
            a_dp.tv,
            b_dp.tv,
            b_nggp.tv,
            a_dp.expected_tv.min(b_dp.expected_tv).min(b_nggp.expected_tv),
            a_dp.expected_tv.max(b_dp.expected_tv).max(b_nggp.expected_tv)
        ),
        ratio: format!("{:.2}x the reference code's TV on B, DP", b_dp.tv / 0.372),
        run: common::this_run(),
    });
    out.claims.push(Claim {
        claim: "the exact tgMCMC is at the noise floor on data sets A and B, DP and NGGP".into(),
        paper: "— (the paper's sampler is biased; MATH §5.4)".into(),
        ours: format!("TV / floor at most {exact_ratio:.2} over the four settings"),
        ratio: "—".into(),
        run: common::this_run(),
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------------

fn main() -> common::Result<()> {
    let s = settings()?;
    let (results, figures) = common::output_dirs(&s.out)?;
    let mut out = Output {
        results,
        figures,
        readme: s.out.join("README.md"),
        claims: Vec::new(),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(s.threads)
        .build()
        .map_err(|e| format!("thread pool: {e}"))?;
    let start = std::time::Instant::now();
    for &name in EXPERIMENTS {
        if s.only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|x| x == name))
        {
            continue;
        }
        out.claims.clear();
        match name {
            "exactness" => exactness(&s, &pool, &mut out)?,
            "toy" => toy(&s, &pool, &mut out)?,
            "toy_grid" => {
                // The optimum is the best DP log joint of the main toy runs.
                let t = Table::read_csv(&out.results.join("toy.csv"))?;
                let target = t
                    .rows
                    .iter()
                    .filter(|r| r[0] == "DP")
                    .filter_map(|r| r[4].parse::<f64>().ok())
                    .fold(f64::NEG_INFINITY, f64::max);
                toy_grid(&s, &pool, &mut out, target)?
            }
            "ten_k" => ten_k(&s, &pool, &mut out)?,
            "bag_of_words" => bag(&s, &pool, &mut out)?,
            _ => unreachable!("EXPERIMENTS lists the experiments"),
        }
        common::claims_table(&out.claims)
            .write_csv(&out.results.join(format!("claims_{name}.csv")))?;
    }
    // The claims of every experiment, those not rerun read back from their last run.
    let mut all = Vec::new();
    for name in EXPERIMENTS {
        let path = out.results.join(format!("claims_{name}.csv"));
        if path.is_file() {
            for r in Table::read_csv(&path)?.rows {
                all.push(Claim {
                    claim: r[0].clone(),
                    paper: r[1].clone(),
                    ours: r[2].clone(),
                    ratio: r[3].clone(),
                    run: r.get(4).cloned().unwrap_or_default(),
                });
            }
        }
    }
    common::write_claims(&out.results, &all)?;
    let mut claims = common::claims_table(&all);
    claims.header[1] = "paper / reference".into();
    out.section("claims", &claims.markdown())?;
    out.section(
        "setup",
        &format!(
            "{} mode, {} threads; toy {} runs x {} CPU s, G/D sweep {} runs x at most {} CPU s, \
             10k {} runs x {} CPU s, bag of words {} runs x {} CPU s, exactness {} chains x {} \
             sweeps.\n",
            if s.smoke { "Smoke" } else { "Full" },
            s.threads,
            s.toy_runs,
            s.toy_seconds,
            s.grid_runs,
            s.grid_seconds,
            s.ten_k_runs,
            s.ten_k_seconds,
            s.bow_runs,
            s.bow_seconds,
            s.tv_chains,
            s.tv_sweeps,
        ),
    )?;
    common::record_run(
        &out.readme,
        &match &s.only {
            None => "`cargo run --release --example paper-tgmcmc-nips2015`".to_string(),
            Some(o) => format!(
                "`cargo run --release --example paper-tgmcmc-nips2015 -- --only {}` (the \
                 other experiments' claims from their last runs, dated in the claims table)",
                o.join(",")
            ),
        },
    )?;
    eprintln!("wall time: {:.0} s", start.elapsed().as_secs_f64());
    println!("{}", claims.markdown());
    Ok(())
}
