//! Reproduction of Lin (2013), "Online learning of nonparametric mixture models via sequential
//! variational approximation" (NIPS 26), synthetic experiment: held-out log-likelihood
//! against time for collapsed Gibbs, split-merge (Jain-Neal + Gibbs, SAMS + Gibbs), one-pass
//! SVA and SVA-PM on a DP mixture of Gaussians with 9 components.
//!
//! ```text
//! cargo run --release --example paper-sva-nips2013                 # full run (~3 CPU min)
//! cargo run --release --example paper-sva-nips2013 -- --smoke --out runs/sva-smoke
//! ```
//!
//! Options: `--out DIR` (default `papers/sva-nips2013`), `--smoke` (tiny budgets),
//! `--seeds N` (data sets, default 5), `--seconds T` (CPU seconds per sampler run, default
//! 10), `--proposals P` (split-merge proposals per Gibbs sweep, default 1).
//!
//! Per seed `s`: the library's generator `lin2013_like(s)` draws 10,000 points from the 9
//! components; the first 9,000 are the training set and the last 1,000 the held-out test set
//! (the points are i.i.d., so this is a draw of both from the same mixture). The model is a
//! DP(α = 1) mixture with the Normal-Wishart prior that matches the generator (means spread as
//! N(0, 100² I), unit covariance expected with the weight of ten observations). Every sampler
//! starts from one cluster; after each sweep whose end passes the next point of a log-spaced
//! grid of CPU times, the held-out log predictive density of the current state
//! (`diagnostics::ln_predictive_density` with that single state) is evaluated, outside the
//! timed part. SVA is one pass over the training points in a seeded random order; its curve
//! along the pass is obtained by fitting prefixes of that order (a prefix fit is the pass
//! stopped there, plus SVA-PM's final check), each timed on its own (best of five). All times are this
//! thread's CPU seconds. Medians over the seeds are reported.

#[path = "../common/mod.rs"]
mod common;

use common::cpu_clock::CpuClock;
use common::{median, update_readme, write_claims, Claim, Table};
use nrmm::data::generate::lin2013_like;
use nrmm::data::DenseData;
use nrmm::diagnostics::{adjusted_rand_index, ln_predictive_density};
use nrmm::kernel::{NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::Dp;
use nrmm::rng::SeedPlan;
use nrmm::run::executor::{Executor, Handler, Stop};
use nrmm::run::{Chain, Scheduled, SweepRecord};
use nrmm::sampler::{Gibbs, GibbsScan, JainNeal, Sams, State};
use nrmm::sva::{fit, shuffled_order, SvaConfig};
use plotters::prelude::*;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// DP concentration of every method.
const ALPHA: f64 = 1.0;
/// The ε values of SVA and SVA-PM.
const EPSILONS: [f64; 3] = [0.01, 0.1, 0.5];
/// A component counts as "found" when it holds at least this share of the training points.
const MIN_SHARE: f64 = 0.01;
/// A method has "reached" the reference when its held-out log-likelihood per point is within
/// this many nats of the true partition's.
const REACH_NATS: f64 = 0.01;
/// Restricted Gibbs launch scans of Jain-Neal (their paper's and the reference code's choice).
const LAUNCH_SCANS: usize = 10;
/// Each SVA fit is timed this many times and the fastest kept.
const TIMING_REPEATS: usize = 5;
/// Colours of lines and clusters (Tableau 10 and 20, as in `nrmm plot`).
const LINE_COLOURS: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

/// The sizes of one run of the experiment.
struct Settings {
    smoke: bool,
    seeds: usize,
    n_train: usize,
    n_test: usize,
    /// CPU seconds per sampler run.
    budget: f64,
    /// Split-merge proposals per Gibbs sweep.
    proposals: usize,
    /// Evaluation times of the samplers (log-spaced, the last is the budget).
    grid: Vec<f64>,
    /// Prefix lengths of the SVA pass (log-spaced, the last is the whole set).
    prefixes: Vec<usize>,
    out: PathBuf,
}

/// The methods compared.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Method {
    Gibbs,
    JainNeal,
    Sams,
    Sva { epsilon: f64, prune_merge: bool },
}

impl Method {
    fn all() -> Vec<Method> {
        let mut m = vec![Method::Gibbs, Method::JainNeal, Method::Sams];
        for prune_merge in [false, true] {
            for epsilon in EPSILONS {
                m.push(Method::Sva {
                    epsilon,
                    prune_merge,
                });
            }
        }
        m
    }

    fn name(&self) -> String {
        match self {
            Method::Gibbs => "Gibbs".into(),
            Method::JainNeal => "JN+Gibbs".into(),
            Method::Sams => "SAMS+Gibbs".into(),
            Method::Sva {
                epsilon,
                prune_merge,
            } => format!(
                "{} eps={epsilon}",
                if *prune_merge { "SVA-PM" } else { "SVA" }
            ),
        }
    }

    fn is_sampler(&self) -> bool {
        !matches!(self, Method::Sva { .. })
    }
}

/// One evaluation: CPU seconds so far, mean held-out log predictive density per test point,
/// number of components.
#[derive(Clone, Copy, Debug)]
struct Point {
    seconds: f64,
    ll: f64,
    k: usize,
}

/// The outcome of one method on one seed.
struct Run {
    method: Method,
    seed: u64,
    curve: Vec<Point>,
    /// Components at the end, and those with at least [`MIN_SHARE`] of the points.
    k: usize,
    k_found: usize,
    ari: f64,
    /// CPU seconds of the whole run (the budget for samplers, the pass for SVA).
    seconds: f64,
    /// Held-out log-likelihood per point of the true partition on this seed.
    reference: f64,
}

impl Run {
    fn final_ll(&self) -> f64 {
        self.curve.last().map_or(f64::NAN, |p| p.ll)
    }

    /// First CPU time at which the curve is within [`REACH_NATS`] of the reference, or
    /// infinity.
    fn reach(&self) -> f64 {
        self.curve
            .iter()
            .find(|p| p.ll >= self.reference - REACH_NATS)
            .map_or(f64::INFINITY, |p| p.seconds)
    }
}

/// One seed's data: training set, its true labels, test set.
struct Data {
    train: Arc<DenseData>,
    truth: Vec<usize>,
    test: DenseData,
}

/// The two data sets: the library's Lin-like set, whose components are far apart, and the same
/// design with the centres drawn closer, so that components overlap.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    /// `lin2013_like`: centres ~ N(0, 100² I), unit covariance.
    Separated,
    /// Centres ~ N(0, [`OVERLAP_SPREAD`]² I), unit covariance.
    Overlapping,
}

/// Standard deviation of the centres of the overlapping set: with 9 unit-covariance
/// components, neighbours are typically two to three standard deviations apart.
const OVERLAP_SPREAD: f64 = 5.0;

impl Variant {
    /// Suffix of the variant's files and README sections.
    fn suffix(&self) -> &'static str {
        match self {
            Variant::Separated => "",
            Variant::Overlapping => "_overlap",
        }
    }

    fn title(&self) -> &'static str {
        match self {
            Variant::Separated => "separated set",
            Variant::Overlapping => "overlapping set",
        }
    }

    /// Standard deviation of the centres, which the prior on the means matches.
    fn spread(&self) -> f64 {
        match self {
            Variant::Separated => 100.0,
            Variant::Overlapping => OVERLAP_SPREAD,
        }
    }
}

/// The runs of every method on every seed of one variant.
struct Outcome {
    runs: Vec<Run>,
}

fn main() -> common::Result<()> {
    let settings = parse_args()?;
    let (results, figures) = common::output_dirs(&settings.out)?;
    let mut outcomes = Vec::new();
    for variant in [Variant::Separated, Variant::Overlapping] {
        eprintln!("== {}", variant.title());
        outcomes.push((
            variant,
            run_variant(&settings, variant, &results, &figures)?,
        ));
    }
    let claims = claims(&outcomes);
    write_claims(&results, &claims)?;
    if !settings.smoke {
        update_docs(&settings, &outcomes, &claims)?;
    }
    Ok(())
}

/// Every method on every seed of `variant`; writes its tables and figures.
fn run_variant(
    settings: &Settings,
    variant: Variant,
    results: &Path,
    figures: &Path,
) -> common::Result<Outcome> {
    let hyper = unit_cov_prior(2, variant.spread())?;
    let mut runs: Vec<Run> = Vec::new();
    let mut scatter = None;
    for s in 0..settings.seeds {
        let seed = s as u64 + 1;
        let data = split(variant, seed, settings.n_train, settings.n_test)?;
        let kernel = NormalWishart::new(data.train.clone(), hyper.clone())?;
        let truth_partition = Partition::from_labels(&kernel, &data.truth)?;
        let reference = mean(&ln_predictive_density(
            &kernel,
            &[(truth_partition, Dp::new(ALPHA)?)],
            &data.test,
        )?);
        eprintln!("seed {seed}: true partition held-out ll/pt {reference:.4}");
        for (index, method) in Method::all().into_iter().enumerate() {
            let run = if method.is_sampler() {
                run_sampler(settings, &kernel, &data, method, seed, index)?
            } else {
                let (run, components) = run_sva(settings, &hyper, &data, method, seed, reference)?;
                if s == 0 && method == PM {
                    scatter = Some(components);
                }
                run
            };
            let run = Run { reference, ..run };
            eprintln!(
                "  {:<16} K = {:>3} ({:>2} found)  ARI = {:.3}  ll/pt = {:.4}  {:.3} s",
                method.name(),
                run.k,
                run.k_found,
                run.ari,
                run.final_ll(),
                run.seconds
            );
            runs.push(run);
        }
    }
    let methods = Method::all();
    let curves = median_curves(&runs, &methods);
    let sfx = variant.suffix();
    write_tables(settings, results, sfx, &runs, &curves)?;
    let reference = median(&runs.iter().map(|r| r.reference).collect::<Vec<_>>());
    plot_curves(
        &figures.join(format!("heldout_vs_time{sfx}.svg")),
        &format!(
            "Held-out log-likelihood per point, {} (median over seeds)",
            variant.title()
        ),
        "held-out log predictive density per point (nats)",
        &curves,
        |p| p.ll,
        Some(reference),
    )?;
    plot_curves(
        &figures.join(format!("components_vs_time{sfx}.svg")),
        &format!(
            "Number of components, {} (median over seeds)",
            variant.title()
        ),
        "components",
        &curves,
        |p| p.k as f64,
        Some(9.0),
    )?;
    if let Some((data, labels, components)) = &scatter {
        plot_scatter(
            &figures.join(format!("sva_pm_components{sfx}.svg")),
            variant,
            data,
            labels,
            components,
        )?;
    }
    Ok(Outcome { runs })
}

/// The SVA-PM setting shown on the scatter and in the claims.
const PM: Method = Method::Sva {
    epsilon: 0.1,
    prune_merge: true,
};

fn parse_args() -> common::Result<Settings> {
    let mut smoke = false;
    let mut out = common::crate_root().join("papers").join("sva-nips2013");
    let mut seeds = None;
    let mut seconds = None;
    let mut proposals = 1;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--smoke" => smoke = true,
            "--out" => out = PathBuf::from(value("--out")?),
            "--seeds" => seeds = Some(parse::<usize>("--seeds", &value("--seeds")?)?),
            "--seconds" => seconds = Some(parse::<f64>("--seconds", &value("--seconds")?)?),
            "--proposals" => proposals = parse::<usize>("--proposals", &value("--proposals")?)?,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let (n_train, n_test, default_seeds, default_seconds) = if smoke {
        (1_000, 200, 2, 0.3)
    } else {
        (9_000, 1_000, 5, 10.0)
    };
    let seeds = seeds.unwrap_or(default_seeds);
    let budget = seconds.unwrap_or(default_seconds);
    if seeds == 0 || !(budget > 1e-3 && budget.is_finite()) {
        return Err(
            format!("need at least one seed and --seconds > 0.001, got {seeds}, {budget}").into(),
        );
    }
    let points = if smoke { 12 } else { 36 };
    let grid = log_grid(1e-3, budget, points);
    let prefixes: Vec<usize> = {
        let mut p: Vec<usize> = log_grid(10.0, n_train as f64, points)
            .into_iter()
            .map(|x| x.round() as usize)
            .collect();
        p.dedup();
        p
    };
    Ok(Settings {
        smoke,
        seeds,
        n_train,
        n_test,
        budget,
        proposals,
        grid,
        prefixes,
        out,
    })
}

fn parse<T: std::str::FromStr>(name: &str, s: &str) -> common::Result<T> {
    s.parse()
        .map_err(|_| format!("{name}: cannot read {s:?} as a number").into())
}

/// `points` values from `lo` to `hi`, evenly spaced on a log scale.
fn log_grid(lo: f64, hi: f64, points: usize) -> Vec<f64> {
    let (a, b) = (lo.ln(), hi.ln());
    (0..points)
        .map(|i| (a + (b - a) * i as f64 / (points - 1) as f64).exp())
        .collect()
}

/// The Normal-Wishart prior of the generator: mean 0, means spread as N(0, spread² I)
/// (`r = 1/spread²` with unit covariance), `ν = d + 10` and `Ψ = (ν - d - 1) I`, so that
/// the expected covariance is `I` with the weight of ten observations.
fn unit_cov_prior(d: usize, spread: f64) -> nrmm::Result<NwHyper> {
    let nu = d as f64 + 10.0;
    let mut psi = vec![0.0; d * d];
    for i in 0..d {
        psi[i * d + i] = nu - d as f64 - 1.0;
    }
    NwHyper::new(vec![0.0; d], psi, 1.0 / (spread * spread), nu)
}

/// The seed's data set split into the first `n_train` points and the next `n_test`.
fn split(variant: Variant, seed: u64, n_train: usize, n_test: usize) -> nrmm::Result<Data> {
    let (all, labels) = match variant {
        Variant::Separated => lin2013_like(seed),
        Variant::Overlapping => overlapping(seed, n_train + n_test)?,
    };
    let d = all.d();
    let train = DenseData::new(n_train, d, all.values()[..n_train * d].to_vec())?;
    let test = DenseData::new(
        n_test,
        d,
        all.values()[n_train * d..(n_train + n_test) * d].to_vec(),
    )?;
    Ok(Data {
        train: Arc::new(train),
        truth: labels[..n_train].to_vec(),
        test,
    })
}

/// `n` points in 2-D from 9 unit-covariance Gaussians with centres ~ N(0, [`OVERLAP_SPREAD`]²
/// I) and uniform component choice: `lin2013_like`'s design with closer centres. Drawn from
/// stream 1 of `seed` (the generator of the separated set uses stream 0).
fn overlapping(seed: u64, n: usize) -> nrmm::Result<(DenseData, Vec<usize>)> {
    const COMPONENTS: usize = 9;
    let mut rng = SeedPlan::new(seed).chain(1);
    let mut normal = || -> f64 { StandardNormal.sample(&mut rng) };
    let centres: Vec<[f64; 2]> = (0..COMPONENTS)
        .map(|_| [OVERLAP_SPREAD * normal(), OVERLAP_SPREAD * normal()])
        .collect();
    let mut values = Vec::with_capacity(2 * n);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let c = rng.random_range(0..COMPONENTS);
        let z: [f64; 2] = [
            StandardNormal.sample(&mut rng),
            StandardNormal.sample(&mut rng),
        ];
        values.extend([centres[c][0] + z[0], centres[c][1] + z[1]]);
        labels.push(c);
    }
    Ok((DenseData::new(n, 2, values)?, labels))
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Clusters holding at least [`MIN_SHARE`] of `total`.
fn found(sizes: impl Iterator<Item = f64>, total: f64) -> usize {
    sizes.filter(|&s| s >= MIN_SHARE * total).count()
}

/// A sampler from one cluster for the budget, evaluated on the CPU-time grid.
fn run_sampler(
    settings: &Settings,
    kernel: &NormalWishart,
    data: &Data,
    method: Method,
    seed: u64,
    stream: usize,
) -> common::Result<Run> {
    let gibbs = || -> nrmm::Result<Scheduled<NormalWishart, Dp>> {
        Ok(Scheduled {
            mv: Box::new(Gibbs::new(GibbsScan::Full)?),
            repeats: 1,
        })
    };
    let schedule = match method {
        Method::Gibbs => vec![gibbs()?],
        Method::JainNeal => vec![
            Scheduled {
                mv: Box::new(JainNeal::new(LAUNCH_SCANS)),
                repeats: settings.proposals,
            },
            gibbs()?,
        ],
        Method::Sams => vec![
            Scheduled {
                mv: Box::new(Sams::new()),
                repeats: settings.proposals,
            },
            gibbs()?,
        ],
        Method::Sva { .. } => unreachable!("SVA is not a sampler"),
    };
    let state = State {
        partition: Partition::single(kernel),
        prior: Dp::new(ALPHA)?,
    };
    // Streams 0 of each seed belong to the generator; methods use 10 + their index.
    let rng = SeedPlan::new(seed).chain(10 + stream as u64);
    let mut chain = Chain::new(kernel, state, rng, schedule);
    let mut grid = GridRecorder {
        grid: &settings.grid,
        data,
        cpu: 0.0,
        clock: None,
        curve: Vec::with_capacity(settings.grid.len()),
    };
    Executor::new(&mut chain).with(&mut grid).run()?;
    let (cpu, curve) = (grid.cpu, grid.curve);
    let partition = &chain.state().partition;
    let n = partition.n() as f64;
    Ok(Run {
        method,
        seed,
        k: partition.n_clusters(),
        k_found: found(partition.sizes().into_iter().map(|s| s as f64), n),
        ari: adjusted_rand_index(&partition.canonical_labels(), &data.truth)?,
        seconds: cpu,
        curve,
        reference: f64::NAN,
    })
}

/// Times a chain's sweeps in CPU seconds and evaluates its state (held-out log predictive
/// density and K) at each point of the CPU-time grid it passes, outside the clock; stops once
/// every grid point has its value.
struct GridRecorder<'a> {
    grid: &'a [f64],
    data: &'a Data,
    cpu: f64,
    /// Started before a sweep, read after it, so only sweeps are timed.
    clock: Option<CpuClock>,
    curve: Vec<Point>,
}

impl Handler<NormalWishart, Dp> for GridRecorder<'_> {
    fn before_sweep(&mut self, _chain: &Chain<'_, NormalWishart, Dp>) -> Option<Stop> {
        if self.curve.len() >= self.grid.len() {
            return Some(Stop::Done);
        }
        self.clock = Some(CpuClock::start());
        None
    }

    fn after_sweep(
        &mut self,
        chain: &mut Chain<'_, NormalWishart, Dp>,
        _record: &SweepRecord,
    ) -> nrmm::Result<()> {
        self.cpu += self.clock.take().map_or(0.0, |c| c.elapsed().as_secs_f64());
        if self.cpu < self.grid[self.curve.len()] {
            return Ok(());
        }
        let st = chain.state();
        let ll = mean(&ln_predictive_density(
            chain.kernel(),
            &[(st.partition.clone(), st.prior.clone())],
            &self.data.test,
        )?);
        let k = st.partition.n_clusters();
        while self.curve.len() < self.grid.len() && self.grid[self.curve.len()] <= self.cpu {
            self.curve.push(Point {
                seconds: self.cpu,
                ll,
                k,
            });
        }
        Ok(())
    }
}

/// A component drawn on the scatter: mean, expected covariance (row-major 2 × 2), weight.
type Drawn = ([f64; 2], [f64; 4], f64);

/// What the scatter shows: the training points in pass order, their SVA labels, the
/// components.
type Scatter = (Arc<DenseData>, Vec<usize>, Vec<Drawn>);

/// One SVA pass (and its prefixes) over the training points in a seeded random order; also
/// returns the shuffled training set, the final hard labels and components for drawing.
fn run_sva(
    settings: &Settings,
    hyper: &NwHyper,
    data: &Data,
    method: Method,
    seed: u64,
    reference: f64,
) -> common::Result<(Run, Scatter)> {
    let Method::Sva {
        epsilon,
        prune_merge,
    } = method
    else {
        unreachable!("a sampler is not SVA")
    };
    let config = SvaConfig {
        epsilon,
        ..if prune_merge {
            SvaConfig::with_prune_merge(ALPHA)
        } else {
            SvaConfig::new(ALPHA)
        }
    };
    // One order per seed, shared by every SVA variant.
    let order = shuffled_order(settings.n_train, &mut SeedPlan::new(seed).chain(100));
    let d = data.train.d();
    let values: Vec<f64> = order
        .iter()
        .flat_map(|&i| data.train.row(i).iter().copied())
        .collect();
    let truth: Vec<usize> = order.iter().map(|&i| data.truth[i]).collect();
    let mut curve = Vec::with_capacity(settings.prefixes.len());
    let mut last = None;
    for &m in &settings.prefixes {
        let prefix = Arc::new(DenseData::new(m, d, values[..m * d].to_vec())?);
        let kernel = NormalWishart::new(prefix.clone(), hyper.clone())?;
        // Best of five: a prefix fit can take microseconds, where a cold cache or a context
        // switch would dominate a single measurement.
        let mut times = Vec::with_capacity(TIMING_REPEATS);
        let mut f = None;
        for _ in 0..TIMING_REPEATS {
            let clock = CpuClock::start();
            f = Some(fit(&kernel, &config)?);
            times.push(clock.elapsed().as_secs_f64());
        }
        let f = f.expect("at least one repeat");
        let seconds = times.iter().copied().fold(f64::INFINITY, f64::min);
        curve.push(Point {
            seconds,
            ll: mean(&f.ln_predictive_new(&data.test)?),
            k: f.n_components(),
        });
        last = Some((prefix, f));
    }
    let (shuffled, f) = last.ok_or("no SVA prefix")?;
    let weights = f.weights();
    let total: f64 = weights.iter().sum();
    let drawn = f
        .posteriors()
        .iter()
        .map(|p| {
            let s = p.nu - d as f64 - 1.0;
            (
                [p.mean[0], p.mean[1]],
                [p.psi[0] / s, p.psi[1] / s, p.psi[2] / s, p.psi[3] / s],
                p.weight,
            )
        })
        .collect();
    let run = Run {
        method,
        seed,
        k: f.n_components(),
        k_found: found(weights.iter().copied(), total),
        ari: adjusted_rand_index(f.labels(), &truth)?,
        seconds: curve.last().map_or(f64::NAN, |p| p.seconds),
        curve,
        reference,
    };
    Ok((run, (shuffled, f.labels().to_vec(), drawn)))
}

/// Per method, the median over seeds of each curve point's time, log-likelihood and K.
fn median_curves(runs: &[Run], methods: &[Method]) -> Vec<(Method, Vec<Point>)> {
    methods
        .iter()
        .map(|&m| {
            let mine: Vec<&Run> = runs.iter().filter(|r| r.method == m).collect();
            let len = mine.iter().map(|r| r.curve.len()).min().unwrap_or(0);
            let points = (0..len)
                .map(|j| {
                    let col = |f: &dyn Fn(&Point) -> f64| {
                        median(&mine.iter().map(|r| f(&r.curve[j])).collect::<Vec<_>>())
                    };
                    Point {
                        seconds: col(&|p| p.seconds),
                        ll: col(&|p| p.ll),
                        k: col(&|p| p.k as f64).round() as usize,
                    }
                })
                .collect();
            (m, points)
        })
        .collect()
}

/// Formats seconds, or "> budget" for a time never reached.
fn secs(s: f64) -> String {
    if s.is_finite() {
        format!("{s:.4}")
    } else {
        "not reached".into()
    }
}

/// Median over the seeds of `f` for `method`'s runs.
fn med(runs: &[Run], method: Method, f: impl Fn(&Run) -> f64) -> f64 {
    median(
        &runs
            .iter()
            .filter(|r| r.method == method)
            .map(f)
            .collect::<Vec<_>>(),
    )
}

fn summary_table(runs: &[Run]) -> Table {
    let mut t = Table::new(&[
        "method",
        "K",
        "K (>= 1% of points)",
        "ARI",
        "held-out ll/pt",
        "gap to truth (nats/pt)",
        "CPU s",
        "CPU s to within 0.01 of truth",
    ]);
    for m in Method::all() {
        t.push(vec![
            m.name(),
            format!("{}", med(runs, m, |r| r.k as f64)),
            format!("{}", med(runs, m, |r| r.k_found as f64)),
            format!("{:.3}", med(runs, m, |r| r.ari)),
            format!("{:.4}", med(runs, m, Run::final_ll)),
            format!("{:.4}", med(runs, m, |r| r.reference - r.final_ll())),
            secs(med(runs, m, |r| r.seconds)),
            secs(med(runs, m, Run::reach)),
        ]);
    }
    t
}

/// Writes `curves`, `curves_median`, `per_seed` and `summary` (each `<name><sfx>.csv`) and
/// `setup.csv`.
fn write_tables(
    settings: &Settings,
    results: &Path,
    sfx: &str,
    runs: &[Run],
    curves: &[(Method, Vec<Point>)],
) -> common::Result<()> {
    let mut raw = Table::new(&["method", "seed", "step", "cpu_seconds", "heldout_ll", "k"]);
    let mut per_seed = Table::new(&[
        "method",
        "seed",
        "k",
        "k_found",
        "ari",
        "heldout_ll",
        "true_partition_ll",
        "cpu_seconds",
        "cpu_seconds_to_truth",
    ]);
    for r in runs {
        for (j, p) in r.curve.iter().enumerate() {
            raw.push(vec![
                r.method.name(),
                r.seed.to_string(),
                j.to_string(),
                format!("{:.6}", p.seconds),
                format!("{:.6}", p.ll),
                p.k.to_string(),
            ]);
        }
        per_seed.push(vec![
            r.method.name(),
            r.seed.to_string(),
            r.k.to_string(),
            r.k_found.to_string(),
            format!("{:.4}", r.ari),
            format!("{:.6}", r.final_ll()),
            format!("{:.6}", r.reference),
            format!("{:.6}", r.seconds),
            secs(r.reach()),
        ]);
    }
    let mut med_curves = Table::new(&["method", "step", "cpu_seconds", "heldout_ll", "k"]);
    for (m, pts) in curves {
        for (j, p) in pts.iter().enumerate() {
            med_curves.push(vec![
                m.name(),
                j.to_string(),
                format!("{:.6}", p.seconds),
                format!("{:.6}", p.ll),
                p.k.to_string(),
            ]);
        }
    }
    raw.write_csv(&results.join(format!("curves{sfx}.csv")))?;
    med_curves.write_csv(&results.join(format!("curves_median{sfx}.csv")))?;
    per_seed.write_csv(&results.join(format!("per_seed{sfx}.csv")))?;
    summary_table(runs).write_csv(&results.join(format!("summary{sfx}.csv")))?;
    let mut setup = Table::new(&["setting", "value"]);
    for (k, v) in [
        ("seeds (data sets)", settings.seeds.to_string()),
        (
            "training / test points",
            format!("{} / {}", settings.n_train, settings.n_test),
        ),
        (
            "CPU seconds per sampler run",
            format!("{}", settings.budget),
        ),
        (
            "split-merge proposals per Gibbs sweep",
            settings.proposals.to_string(),
        ),
        ("Jain-Neal launch scans", LAUNCH_SCANS.to_string()),
        (
            "evaluation points per curve",
            settings.grid.len().to_string(),
        ),
    ] {
        setup.push(vec![k.into(), v]);
    }
    setup.write_csv(&results.join("setup.csv"))?;
    Ok(())
}

fn claims(outcomes: &[(Variant, Outcome)]) -> Vec<Claim> {
    let samplers = [Method::Gibbs, Method::JainNeal, Method::Sams];
    let mut out = Vec::new();
    for (variant, outcome) in outcomes {
        let runs = &outcome.runs;
        let best_sampler = samplers
            .iter()
            .copied()
            .max_by(|a, b| med(runs, *a, Run::final_ll).total_cmp(&med(runs, *b, Run::final_ll)))
            .expect("three samplers");
        let pm_ll = med(runs, PM, Run::final_ll);
        let sampler_ll = med(runs, best_sampler, Run::final_ll);
        let pm_time = med(runs, PM, |r| r.seconds);
        let pm_k = med(runs, PM, |r| r.k as f64);
        let (k_lo, k_hi) = runs
            .iter()
            .filter(|r| r.method == PM)
            .fold((usize::MAX, 0), |(lo, hi), r| (lo.min(r.k), hi.max(r.k)));
        let seeds = runs.iter().filter(|r| r.method == PM).count();
        let title = variant.title();
        out.push(Claim {
            claim: format!("one SVA-PM pass reaches a held-out likelihood comparable to the samplers' ({title})"),
            paper: "comparable held-out log-likelihood (qualitative)".into(),
            ours: format!(
                "SVA-PM (eps=0.1) {pm_ll:.4} vs best sampler ({}) {sampler_ll:.4} nats/pt after {:.0} CPU s",
                best_sampler.name(),
                med(runs, best_sampler, |r| r.seconds)
            ),
            ratio: "—".into(),
            run: common::this_run(),
        });
        if *variant == Variant::Separated {
            // The fastest sampler to the truth, not the best at the end: the claim is about time.
            let fastest = samplers
                .iter()
                .copied()
                .min_by(|a, b| med(runs, *a, Run::reach).total_cmp(&med(runs, *b, Run::reach)))
                .expect("three samplers");
            let reach = med(runs, fastest, Run::reach);
            out.push(Claim {
                claim: format!("SVA-PM takes a fraction of the samplers' time ({title})"),
                paper: "one pass, far faster than Gibbs and split-merge (qualitative)".into(),
                ours: format!(
                    "SVA-PM pass {pm_time:.4} CPU s; fastest sampler ({}) within 0.01 nats/pt of the true partition after {}",
                    fastest.name(),
                    if reach.is_finite() {
                        format!("{reach:.3} CPU s ({:.0}x)", reach / pm_time)
                    } else {
                        "never, in the budget".into()
                    }
                ),
                ratio: "—".into(),
                run: common::this_run(),
            });
        }
        out.push(Claim {
            claim: format!("SVA-PM finds the right number of components, 9 ({title})"),
            paper: "the true number of components (qualitative)".into(),
            ours: format!(
                "median {pm_k} (range {k_lo}-{k_hi}) over {seeds} seeds; ARI {:.3}",
                med(runs, PM, |r| r.ari)
            ),
            ratio: "—".into(),
            run: common::this_run(),
        });
    }
    out
}

fn update_docs(
    settings: &Settings,
    outcomes: &[(Variant, Outcome)],
    claims: &[Claim],
) -> common::Result<()> {
    let readme = settings.out.join("README.md");
    let setup = Table::read_csv(&settings.out.join("results").join("setup.csv"))?;
    update_readme(&readme, "setup", &setup.markdown())?;
    for (variant, outcome) in outcomes {
        update_readme(
            &readme,
            &format!("summary{}", variant.suffix()),
            &summary_table(&outcome.runs).markdown(),
        )?;
    }
    let mut t = Table::new(&["claim", "paper", "ours"]);
    for c in claims {
        t.push(vec![c.claim.clone(), c.paper.clone(), c.ours.clone()]);
    }
    update_readme(&readme, "claims", &t.markdown())?;
    common::record_run(
        &readme,
        "`cargo run --release --example paper-sva-nips2013`",
    )?;
    Ok(())
}

fn plot_error<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

fn line_colour(i: usize) -> RGBColor {
    let (r, g, b) = LINE_COLOURS[i % LINE_COLOURS.len()];
    RGBColor(r, g, b)
}

/// One line per method of `value` against CPU seconds (log x axis), with a dashed
/// horizontal reference.
fn plot_curves(
    path: &Path,
    title: &str,
    y_desc: &str,
    curves: &[(Method, Vec<Point>)],
    value: impl Fn(&Point) -> f64,
    reference: Option<f64>,
) -> common::Result<()> {
    let err = plot_error(path);
    let all: Vec<(f64, f64)> = curves
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| (p.seconds.max(1e-6), value(p))))
        .collect();
    let x_lo = all.iter().map(|p| p.0).fold(f64::INFINITY, f64::min) / 1.5;
    let x_hi = all.iter().map(|p| p.0).fold(0.0, f64::max) * 1.5;
    let ys = all.iter().map(|p| p.1).chain(reference);
    let (mut y_lo, mut y_hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
        (a.min(y), b.max(y))
    });
    let pad = 0.05 * (y_hi - y_lo).max(1e-3);
    y_lo -= pad;
    y_hi += pad;
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(18)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), y_lo..y_hi)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc("CPU seconds (log scale)")
        .y_desc(y_desc)
        .draw()
        .map_err(&err)?;
    if let Some(r) = reference {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x_lo, r), (x_hi, r)],
                8,
                5,
                BLACK.stroke_width(1),
            ))
            .map_err(&err)?
            .label(if y_desc == "components" {
                "true number (9)"
            } else {
                "true partition"
            })
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], BLACK.stroke_width(1)));
    }
    for (i, (m, pts)) in curves.iter().enumerate() {
        let c = line_colour(i);
        let line: Vec<(f64, f64)> = pts
            .iter()
            .map(|p| (p.seconds.max(1e-6), value(p)))
            .collect();
        let width = if m.is_sampler() { 3 } else { 2 };
        chart
            .draw_series(LineSeries::new(line.clone(), c.stroke_width(width)))
            .map_err(&err)?
            .label(m.name())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)));
        if !m.is_sampler() {
            chart
                .draw_series(line.iter().map(|&p| Circle::new(p, 2, c.filled())))
                .map_err(&err)?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}

/// A third of the training points coloured by their SVA-PM label, each component's mean (cross) and its
/// expected covariance as a 3-standard-deviation ellipse, labelled with its weight: the whole
/// set on the left, and on the right a zoom on the two closest components (at the scale of
/// the whole set the unit-covariance clusters are dots).
fn plot_scatter(
    path: &Path,
    variant: Variant,
    data: &DenseData,
    labels: &[usize],
    components: &[Drawn],
) -> common::Result<()> {
    let err = plot_error(path);
    let root = SVGBackend::new(path, (1320, 680)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let root = root
        .titled(
            &format!(
                "SVA-PM (eps = 0.1) after one pass, {}, seed 1: {} components",
                variant.title(),
                components.len()
            ),
            ("sans-serif", 22),
        )
        .map_err(&err)?;
    let (left, right) = root.split_horizontally(680);
    let span = |j: usize| {
        let (lo, hi) = (0..data.n())
            .map(|i| data.row(i)[j])
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        let pad = 0.06 * (hi - lo);
        (lo - pad, hi + pad)
    };
    draw_panel(
        &left,
        "all training points",
        span(0),
        span(1),
        data,
        labels,
        components,
    )
    .map_err(&err)?;
    let (mut a, mut b, mut best) = (0, 0, f64::INFINITY);
    for i in 0..components.len() {
        for j in i + 1..components.len() {
            let (p, q) = (components[i].0, components[j].0);
            let dist = ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2)).sqrt();
            if dist < best {
                (a, b, best) = (i, j, dist);
            }
        }
    }
    let (centre, half) = if best.is_finite() {
        let (p, q) = (components[a].0, components[b].0);
        (
            [(p[0] + q[0]) / 2.0, (p[1] + q[1]) / 2.0],
            (0.75 * best).max(6.0),
        )
    } else {
        (components.first().map_or([0.0, 0.0], |c| c.0), 6.0)
    };
    draw_panel(
        &right,
        "zoom on the two closest components",
        (centre[0] - half, centre[0] + half),
        (centre[1] - half, centre[1] + half),
        data,
        labels,
        components,
    )
    .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}

/// One panel of [`plot_scatter`] over the window `x` × `y`.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
    data: &DenseData,
    labels: &[usize],
    components: &[Drawn],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(14)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let inside = |p: &[f64]| p[0] >= x0 && p[0] <= x1 && p[1] >= y0 && p[1] <= y1;
    // Every third point keeps the picture (and the SVG) light.
    chart.draw_series(
        (0..data.n())
            .step_by(3)
            .filter(|&i| inside(data.row(i)))
            .map(|i| {
                let p = data.row(i);
                Circle::new((p[0], p[1]), 2, line_colour(labels[i]).mix(0.5).filled())
            }),
    )?;
    for (k, (mu, cov, w)) in components.iter().enumerate() {
        // The 3-sd ellipse is mu + 3 L (cos t, sin t), L the Cholesky factor of cov.
        let l11 = cov[0].sqrt();
        let l21 = cov[2] / l11;
        let l22 = (cov[3] - l21 * l21).max(0.0).sqrt();
        let ellipse: Vec<(f64, f64)> = (0..=64)
            .map(|t| {
                let a = std::f64::consts::TAU * t as f64 / 64.0;
                let (c, s) = (3.0 * a.cos(), 3.0 * a.sin());
                (mu[0] + l11 * c, mu[1] + l21 * c + l22 * s)
            })
            .filter(|p| inside(&[p.0, p.1]))
            .collect();
        chart.draw_series(LineSeries::new(ellipse, BLACK.stroke_width(1)))?;
        if inside(mu) {
            chart.draw_series([Cross::new(
                (mu[0], mu[1]),
                5,
                line_colour(k).stroke_width(2),
            )])?;
            chart.draw_series([Text::new(
                format!("w = {w:.0}"),
                (mu[0] + 0.02 * (x1 - x0), mu[1] + 0.02 * (y1 - y0)),
                ("sans-serif", 13),
            )])?;
        }
    }
    Ok(())
}
