//! Miller & Harrison (2018), "Mixture models with a prior on the number of components", JASA
//! 113(521), with Miller & Harrison (2013, 2014) on the inconsistency of Dirichlet process and
//! Pitman-Yor mixtures for the number of components: on data from a mixture of three
//! well-separated bivariate Gaussians, the posterior of the number of clusters `t` under a
//! mixture of finite mixtures (MFM) concentrates at the true 3 as `n` grows, while the DP and
//! Pitman-Yor mixtures keep mass on `t > 3`, the extra clusters tiny. The NGGP, not in the
//! papers, is run beside them.
//!
//! ```text
//! cargo run --release --example paper-miller-harrison                   # the full run
//! cargo run --release --example paper-miller-harrison -- --smoke --out runs/mh-smoke
//! ```
//!
//! The full run writes `papers/miller-harrison/results/{k_posterior,summary,claims}.csv` and
//! `figures/{k_posterior,p_true_k}.svg`, and rewrites the numbers in its README. The data are
//! synthetic (the papers' own draws are not published), drawn from the seed.
//!
//! Every chain (two per prior and n) starts from one cluster on its own random stream (its
//! index among the chains, in [`SeedPlan`]), so the results do not depend on how many threads
//! run them.

#[path = "../common/mod.rs"]
mod common;

use common::cpu_clock::CpuClock;
use common::{Claim, Table};
use nrmm::data::DenseData;
use nrmm::kernel::{NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, KPrior, Mfm, Nggp, NggpHyperPriors, PitmanYor, Prior};
use nrmm::rng::SeedPlan;
use nrmm::sampler::{Gibbs, GibbsScan, HyperMove, Move, RngChooser, Sams, State};
use plotters::prelude::*;
use rand_distr::{Distribution, StandardNormal};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The true number of components.
const TRUE_K: usize = 3;
/// Mixture weights, means and covariances (row-major 2 × 2) of the data's three components:
/// each mean at least 5.8 from the others, covariances of scale about 1.
const WEIGHTS: [f64; TRUE_K] = [0.45, 0.30, 0.25];
const MEANS: [[f64; 2]; TRUE_K] = [[0.0, 0.0], [6.0, 0.0], [3.0, 5.0]];
const COVS: [[f64; 4]; TRUE_K] = [
    [1.0, 0.0, 0.0, 1.0],
    [1.5, 0.0, 0.0, 0.5],
    [1.0, 0.4, 0.4, 1.0],
];
/// The largest `t` shown on its own; larger ones are pooled into the last bar.
const T_SHOWN: usize = 8;
/// SAMS proposals per sweep (beside one Gibbs scan): enough to split the starting cluster
/// within a few sweeps; the tiny clusters are opened and closed by the Gibbs scans.
const PROPOSALS: usize = 5;
/// The random stream of the data, apart from the chains' streams `0, 1, …`.
const DATA_STREAM: u64 = 1 << 32;
/// Chains per (prior, n), each from one cluster on its own stream; their agreement on
/// `P(t = 3)` is reported.
const CHAINS: usize = 2;

/// The four priors compared, each with its hyperparameters fixed (the NGGP's `u` resampled).
#[derive(Clone, Copy, Debug, PartialEq)]
enum PriorChoice {
    Dp,
    PitmanYor,
    Nggp,
    Mfm,
}

impl PriorChoice {
    const ALL: [PriorChoice; 4] = [
        PriorChoice::Dp,
        PriorChoice::PitmanYor,
        PriorChoice::Nggp,
        PriorChoice::Mfm,
    ];

    fn name(self) -> &'static str {
        match self {
            PriorChoice::Dp => "DP",
            PriorChoice::PitmanYor => "Pitman-Yor",
            PriorChoice::Nggp => "NGGP",
            PriorChoice::Mfm => "MFM",
        }
    }

    /// Its settings, as the README states them.
    fn settings(self) -> &'static str {
        match self {
            PriorChoice::Dp => "α = 1",
            PriorChoice::PitmanYor => "θ = 1, σ = 0.25",
            PriorChoice::Nggp => "α = 1, σ = 0.25, u resampled",
            PriorChoice::Mfm => "γ = 1, K - 1 ~ Poisson(1)",
        }
    }

    fn build(self) -> nrmm::Result<Prior> {
        Ok(match self {
            PriorChoice::Dp => Dp::new(1.0)?.into(),
            PriorChoice::PitmanYor => PitmanYor::fixed(1.0, 0.25)?.into(),
            PriorChoice::Nggp => Nggp::new(
                1.0,
                0.25,
                1.0,
                NggpHyperPriors {
                    sample_u: true,
                    ..NggpHyperPriors::fixed()
                },
            )?
            .into(),
            PriorChoice::Mfm => Mfm::new(1.0, KPrior::Poisson { lambda: 1.0 }, None)?.into(),
        })
    }
}

/// What the chains of one prior at one `n` found over their kept sweeps (the second half of
/// each).
#[derive(Clone, Debug)]
struct Fit {
    prior: PriorChoice,
    n: usize,
    /// Kept sweeps with `t` clusters, `t = 1..=T_SHOWN` (the last pooling `t ≥ T_SHOWN`).
    counts: [usize; T_SHOWN + 1],
    /// Over the kept sweeps with `t > 3`: the points outside the 3 largest clusters, summed,
    /// and the size of the smallest cluster, one entry per such sweep.
    extra_points: usize,
    smallest: Vec<usize>,
    /// Each chain's `P(t = 3)`, in chain order.
    chain_p_true: Vec<f64>,
    cpu_seconds: f64,
}

impl Fit {
    /// The chains' kept sweeps pooled (all of one prior and one `n`).
    fn pool(chains: &[Fit]) -> Fit {
        let mut f = chains[0].clone();
        for c in &chains[1..] {
            for (a, b) in f.counts.iter_mut().zip(&c.counts) {
                *a += b;
            }
            f.extra_points += c.extra_points;
            f.smallest.extend_from_slice(&c.smallest);
            f.chain_p_true.extend_from_slice(&c.chain_p_true);
            f.cpu_seconds += c.cpu_seconds;
        }
        f
    }

    /// The mean number of points outside the 3 largest clusters when `t > 3`.
    fn mean_extra(&self) -> f64 {
        self.extra_points as f64 / self.smallest.len().max(1) as f64
    }

    /// The median size of the smallest cluster when `t > 3`.
    fn median_smallest(&self) -> f64 {
        let v: Vec<f64> = self.smallest.iter().map(|&s| s as f64).collect();
        common::median(&v)
    }

    fn kept(&self) -> usize {
        self.counts.iter().sum()
    }

    fn p(&self, t: usize) -> f64 {
        self.counts[t] as f64 / self.kept() as f64
    }

    fn p_above(&self) -> f64 {
        (TRUE_K + 1..=T_SHOWN).map(|t| self.p(t)).sum()
    }

    fn mean_t(&self) -> f64 {
        (1..=T_SHOWN).map(|t| t as f64 * self.p(t)).sum()
    }
}

struct Settings {
    smoke: bool,
    out: PathBuf,
    seed: u64,
    sizes: Vec<usize>,
}

impl Settings {
    /// Sweeps of the chain at `n` points: fewer at large `n`, where a sweep costs more and the
    /// clusters' estimates settle sooner.
    fn sweeps(&self, n: usize) -> usize {
        match (self.smoke, n) {
            (true, _) => 60,
            (false, n) if n <= 200 => 20_000,
            (false, n) if n <= 1000 => 10_000,
            (false, n) if n <= 2500 => 6000,
            _ => 4000,
        }
    }
}

fn parse_args() -> common::Result<Settings> {
    let mut s = Settings {
        smoke: false,
        out: common::crate_root().join("papers").join("miller-harrison"),
        seed: 1,
        sizes: vec![50, 200, 1000, 2500, 10_000],
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--smoke" => s.smoke = true,
            "--out" => s.out = PathBuf::from(args.next().ok_or("--out needs a directory")?),
            "--seed" => {
                let v = args.next().ok_or("--seed needs a number")?;
                s.seed = v
                    .parse()
                    .map_err(|_| format!("--seed {v:?}: expected a whole number"))?;
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?} (expected --smoke, --out DIR, --seed N)"
                )
                .into())
            }
        }
    }
    if s.smoke {
        s.sizes = vec![50, 200];
    }
    Ok(s)
}

/// `n` points from the three-component mixture, from the seed's data stream; a smaller `n`
/// is a prefix of a larger one.
fn mixture(seed: u64, n: usize) -> nrmm::Result<DenseData> {
    let mut rng = SeedPlan::new(seed).chain(DATA_STREAM);
    let mut x = Vec::with_capacity(2 * n);
    for _ in 0..n {
        let u: f64 = nrmm::rng::uniform_open01(&mut rng);
        let mut c = 0;
        let mut acc = WEIGHTS[0];
        while u > acc && c + 1 < TRUE_K {
            c += 1;
            acc += WEIGHTS[c];
        }
        let (z0, z1): (f64, f64) = (
            StandardNormal.sample(&mut rng),
            StandardNormal.sample(&mut rng),
        );
        // x = μ + L z, L the Cholesky factor of the covariance.
        let cov = COVS[c];
        let l11 = cov[0].sqrt();
        let l21 = cov[2] / l11;
        let l22 = (cov[3] - l21 * l21).sqrt();
        x.push(MEANS[c][0] + l11 * z0);
        x.push(MEANS[c][1] + l21 * z0 + l22 * z1);
    }
    DenseData::new(n, 2, x)
}

/// The Normal-Wishart prior of every run, fixed whatever `n`: ξ the centre of the three
/// means, `E[Σ] = Ψ / (ν - d - 1) = I` with `ν = 5`, and `r = 0.01` (a cluster's mean within
/// about 10 of ξ a priori).
fn kernel_prior() -> nrmm::Result<NwHyper> {
    NwHyper::new(vec![3.0, 5.0 / 3.0], vec![2.0, 0.0, 0.0, 2.0], 0.01, 5.0)
}

/// One chain of `prior` on the first `n` points: from one cluster, each sweep
/// [`PROPOSALS`] SAMS proposals, one collapsed Gibbs scan and the prior's hyperparameter
/// move; the second half of the sweeps kept.
fn run_chain(
    settings: &Settings,
    data: &DenseData,
    prior: PriorChoice,
    n: usize,
    stream: u64,
) -> common::Result<Fit> {
    let clock = CpuClock::start();
    let x = DenseData::new(n, 2, data.values()[..2 * n].to_vec())?;
    let kernel = NormalWishart::new(Arc::new(x), kernel_prior()?)?;
    let mut state = State {
        partition: Partition::single(&kernel),
        prior: prior.build()?,
    };
    let mut rng = SeedPlan::new(settings.seed).chain(stream);
    let mut chooser = RngChooser::new(&mut rng);
    let mut gibbs = Gibbs::new(GibbsScan::Full)?;
    let mut sams = Sams::new();
    let mut hyper = HyperMove;
    let sweeps = settings.sweeps(n);
    let mut fit = Fit {
        prior,
        n,
        counts: [0; T_SHOWN + 1],
        extra_points: 0,
        smallest: Vec::new(),
        chain_p_true: Vec::new(),
        cpu_seconds: 0.0,
    };
    for sweep in 0..sweeps {
        for _ in 0..PROPOSALS {
            Move::<NormalWishart, Prior>::step(&mut sams, &kernel, &mut state, &mut chooser)?;
        }
        Move::<NormalWishart, Prior>::step(&mut gibbs, &kernel, &mut state, &mut chooser)?;
        Move::<NormalWishart, Prior>::step(&mut hyper, &kernel, &mut state, &mut chooser)?;
        if sweep < sweeps / 2 {
            continue;
        }
        let mut sizes = state.partition.sizes();
        let t = sizes.len();
        fit.counts[t.min(T_SHOWN)] += 1;
        if t > TRUE_K {
            sizes.sort_unstable_by(|a, b| b.cmp(a));
            fit.extra_points += sizes[TRUE_K..].iter().sum::<usize>();
            fit.smallest.push(sizes[t - 1]);
        }
    }
    fit.chain_p_true.push(fit.p(TRUE_K));
    fit.cpu_seconds = clock.elapsed().as_secs_f64();
    Ok(fit)
}

/// Every chain of every (prior, n), the largest `n` first, shared among the available
/// threads; the chains of each pair pooled, in the order of `sizes` and [`PriorChoice::ALL`].
fn run_all(settings: &Settings, data: &DenseData) -> common::Result<Vec<Fit>> {
    let mut jobs: Vec<(u64, PriorChoice, usize)> = Vec::new();
    for &n in &settings.sizes {
        for &p in &PriorChoice::ALL {
            for _ in 0..CHAINS {
                jobs.push((jobs.len() as u64, p, n));
            }
        }
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(jobs[k].2 * settings.sweeps(jobs[k].2)));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Fit, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(jobs.len());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&job) = order.get(k) else { break };
                let (stream, prior, n) = jobs[job];
                let fit = run_chain(settings, data, prior, n, stream)
                    .map_err(|e| format!("{} at n = {n}: {e}", prior.name()));
                if let Ok(f) = &fit {
                    eprintln!(
                        "{:>10} n = {:>6}, chain {}: P(t = 3) = {:.3}, E[t] = {:.2} ({:.1} s CPU)",
                        prior.name(),
                        n,
                        stream as usize % CHAINS,
                        f.p(TRUE_K),
                        f.mean_t(),
                        f.cpu_seconds
                    );
                }
                results.lock().expect("a worker panicked")[job] = Some(fit);
            });
        }
    });
    let chains = results
        .into_inner()
        .expect("a worker panicked")
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect::<Result<Vec<Fit>, String>>()?;
    Ok(chains.chunks(CHAINS).map(Fit::pool).collect())
}

fn t_label(t: usize) -> String {
    if t == T_SHOWN {
        format!("{T_SHOWN}+")
    } else {
        t.to_string()
    }
}

fn posterior_table(fits: &[Fit]) -> Table {
    let mut t = Table::new(&["prior", "n", "t", "probability"]);
    for f in fits {
        for k in 1..=T_SHOWN {
            t.push(vec![
                f.prior.name().into(),
                f.n.to_string(),
                t_label(k),
                format!("{:.4}", f.p(k)),
            ]);
        }
    }
    t
}

fn summary_table(fits: &[Fit]) -> Table {
    let mut t = Table::new(&[
        "prior",
        "n",
        "P(t = 3)",
        "P(t > 3)",
        "E[t]",
        "P(t = 3) by chain",
        "points outside the 3 largest (mean, t > 3)",
        "smallest cluster (median, t > 3)",
        "kept sweeps",
        "CPU s",
    ]);
    for f in fits {
        let extra = if f.smallest.is_empty() {
            ("-".into(), "-".into())
        } else {
            (
                format!("{:.1}", f.mean_extra()),
                format!("{}", f.median_smallest()),
            )
        };
        t.push(vec![
            f.prior.name().into(),
            f.n.to_string(),
            format!("{:.3}", f.p(TRUE_K)),
            format!("{:.3}", f.p_above()),
            format!("{:.2}", f.mean_t()),
            f.chain_p_true
                .iter()
                .map(|p| format!("{p:.3}"))
                .collect::<Vec<_>>()
                .join(" / "),
            extra.0,
            extra.1,
            f.kept().to_string(),
            format!("{:.2}", f.cpu_seconds),
        ]);
    }
    t
}

fn plot_error<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

const COLOURS: [(u8, u8, u8); 4] = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)];

fn colour(i: usize) -> RGBColor {
    let (r, g, b) = COLOURS[i % COLOURS.len()];
    RGBColor(r, g, b)
}

/// A grid of bar charts of `P(t | x_1..n)`: a row per prior, a column per `n`.
fn plot_posteriors(path: &Path, fits: &[Fit], sizes: &[usize]) -> common::Result<()> {
    let err = plot_error(path);
    let (cols, rows) = (sizes.len(), PriorChoice::ALL.len());
    let root =
        SVGBackend::new(path, (240 * cols as u32 + 40, 200 * rows as u32 + 60)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let root = root
        .titled(
            "Posterior of the number of clusters t (true: 3), by prior (rows) and n (columns)",
            ("sans-serif", 20),
        )
        .map_err(&err)?;
    let panels = root.split_evenly((rows, cols));
    for (r, prior) in PriorChoice::ALL.iter().enumerate() {
        for (c, &n) in sizes.iter().enumerate() {
            let Some(f) = fits.iter().find(|f| f.prior == *prior && f.n == n) else {
                continue;
            };
            let area = &panels[r * cols + c];
            let mut chart = ChartBuilder::on(area)
                .caption(format!("{}, n = {n}", prior.name()), ("sans-serif", 14))
                .margin(6)
                .x_label_area_size(22)
                .y_label_area_size(34)
                .build_cartesian_2d(0.5f64..T_SHOWN as f64 + 0.5, 0.0f64..1.0)
                .map_err(&err)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(T_SHOWN)
                .x_label_formatter(&|v| {
                    let t = v.round() as usize;
                    if (1..=T_SHOWN).contains(&t) {
                        t_label(t)
                    } else {
                        String::new()
                    }
                })
                .y_labels(3)
                .draw()
                .map_err(&err)?;
            let fill = colour(r).filled();
            chart
                .draw_series((1..=T_SHOWN).map(|t| {
                    let x = t as f64;
                    Rectangle::new([(x - 0.35, 0.0), (x + 0.35, f.p(t))], fill)
                }))
                .map_err(&err)?;
        }
    }
    root.present().map_err(&err)?;
    Ok(())
}

/// `P(t = 3 | x_1..n)` against `n` (log scale), one line per prior.
fn plot_p_true(path: &Path, fits: &[Fit], sizes: &[usize]) -> common::Result<()> {
    let err = plot_error(path);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let lo = *sizes.first().ok_or("no sizes")? as f64 / 1.4;
    let hi = *sizes.last().ok_or("no sizes")? as f64 * 1.4;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Posterior probability of the true number of clusters (3)",
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(42)
        .y_label_area_size(56)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0f64..1.02)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc("n (log scale)")
        .y_desc("P(t = 3 | data)")
        .draw()
        .map_err(&err)?;
    for (i, prior) in PriorChoice::ALL.iter().enumerate() {
        let line: Vec<(f64, f64)> = sizes
            .iter()
            .filter_map(|&n| {
                fits.iter()
                    .find(|f| f.prior == *prior && f.n == n)
                    .map(|f| (n as f64, f.p(TRUE_K)))
            })
            .collect();
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(line.clone(), c.stroke_width(3)))
            .map_err(&err)?
            .label(format!("{} ({})", prior.name(), prior.settings()))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)));
        chart
            .draw_series(line.iter().map(|&p| Circle::new(p, 4, c.filled())))
            .map_err(&err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerLeft)
        .draw()
        .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}

fn claims(fits: &[Fit], sizes: &[usize]) -> Vec<Claim> {
    let at = |p: PriorChoice, n: usize| fits.iter().find(|f| f.prior == p && f.n == n);
    let (small, large) = (sizes[0], *sizes.last().expect("sizes"));
    let trend = |p: PriorChoice| {
        sizes
            .iter()
            .filter_map(|&n| at(p, n).map(|f| format!("{:.2}", f.p(TRUE_K))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let n_list = sizes
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let extra = |p: PriorChoice| {
        at(p, large).map_or("-".into(), |f| {
            if f.smallest.is_empty() {
                format!("P(t > 3) = 0 at n = {large}")
            } else {
                format!(
                    "P(t > 3) = {:.2} at n = {large}, the clusters beyond the 3 largest holding \
                     {:.1} points on average, the smallest cluster of median size {}",
                    f.p_above(),
                    f.mean_extra(),
                    f.median_smallest()
                )
            }
        })
    };
    let run = common::this_run();
    vec![
        Claim {
            claim: "MFM: the posterior of the number of clusters concentrates at the true K = 3"
                .into(),
            paper: "P(t = true | data) rises towards 1 as n grows (figures of the simulated \
                    Gaussian mixtures, qualitative)"
                .into(),
            ours: format!(
                "P(t = 3) = {} at n = {n_list}; {}",
                trend(PriorChoice::Mfm),
                extra(PriorChoice::Mfm)
            ),
            ratio: "—".into(),
            run: run.clone(),
        },
        Claim {
            claim: "DP mixture: the posterior keeps mass on extra, tiny clusters".into(),
            paper: "P(t = true | data) does not go to 1; the surplus clusters are tiny \
                    (qualitative; Miller & Harrison 2013, 2018)"
                .into(),
            ours: format!(
                "P(t = 3) = {} at n = {n_list}; {}",
                trend(PriorChoice::Dp),
                extra(PriorChoice::Dp)
            ),
            ratio: "—".into(),
            run: run.clone(),
        },
        Claim {
            claim: "Pitman-Yor mixture: the same inconsistency as the DP's".into(),
            paper: "P(t = true | data) does not go to 1 (qualitative; Miller & Harrison 2014)"
                .into(),
            ours: format!(
                "P(t = 3) = {} at n = {n_list}; {}",
                trend(PriorChoice::PitmanYor),
                extra(PriorChoice::PitmanYor)
            ),
            ratio: "—".into(),
            run: run.clone(),
        },
        Claim {
            claim: "NGGP mixture (not in the papers): the posterior of the number of clusters"
                .into(),
            paper: "— (a Gibbs-type prior with infinitely many components, like the DP and \
                    Pitman-Yor)"
                .into(),
            ours: format!(
                "P(t = 3) = {} at n = {n_list}; {}",
                trend(PriorChoice::Nggp),
                extra(PriorChoice::Nggp)
            ),
            ratio: "—".into(),
            run,
        },
    ]
    .into_iter()
    .map(|mut c| {
        if small == large {
            c.ours = format!("{} (one size only)", c.ours);
        }
        c
    })
    .collect()
}

/// The README's "what matches" section, from the results: the MFM's `P(t = 3)` rising
/// towards 1, the other priors' staying low with tiny surplus clusters, and the chains'
/// agreement. Each verdict is decided by the thresholds it states.
fn verdict(fits: &[Fit], sizes: &[usize]) -> String {
    let at = |p: PriorChoice, n: usize| fits.iter().find(|f| f.prior == p && f.n == n);
    let (small, large) = (sizes[0], *sizes.last().expect("sizes"));
    let mut out = String::new();
    if let (Some(a), Some(b)) = (at(PriorChoice::Mfm, small), at(PriorChoice::Mfm, large)) {
        let ok = b.p(TRUE_K) >= 0.9 && b.p(TRUE_K) > a.p(TRUE_K);
        out.push_str(&format!(
            "* **MFM: {}.** `P(t = 3)` goes from {:.2} at n = {small} to {:.2} at n = {large} \
             (the claim: towards 1; this verdict asks for at least 0.9 at the largest n and a \
             rise).",
            if ok { "matches" } else { "does not match" },
            a.p(TRUE_K),
            b.p(TRUE_K)
        ));
        if !b.smallest.is_empty() {
            out.push_str(&format!(
                " In the kept sweeps with a fourth cluster at n = {large} (P = {:.3}), its \
                 smallest cluster has a median of {} points: a true component occasionally \
                 split in two sizeable parts, not a surplus of tiny clusters.",
                b.p_above(),
                b.median_smallest()
            ));
        }
        out.push('\n');
    }
    for p in [PriorChoice::Dp, PriorChoice::PitmanYor, PriorChoice::Nggp] {
        let Some(b) = at(p, large) else { continue };
        let tiny = !b.smallest.is_empty() && b.median_smallest() <= 0.01 * large as f64;
        let ok = b.p(TRUE_K) < 0.5 && tiny;
        let trend: Vec<String> = sizes
            .iter()
            .filter_map(|&n| at(p, n).map(|f| format!("{:.2}", f.p(TRUE_K))))
            .collect();
        out.push_str(&format!(
            "* **{}: {}.** `P(t = 3)` = {} at n = {}; at n = {large} `P(t > 3)` = {:.2}, the \
             smallest cluster of median size {} and the points outside the 3 largest clusters \
             {:.1} on average ({:.2}% of n){}. (This verdict asks for `P(t = 3)` below 0.5 \
             at the largest n and a median smallest cluster of at most 1% of n.)\n",
            p.name(),
            match (ok, p) {
                (true, PriorChoice::Nggp) => "like the DP and Pitman-Yor, tiny surplus clusters",
                (true, _) => "matches, tiny surplus clusters",
                (false, _) => "does not match",
            },
            trend.join(", "),
            sizes
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            b.p_above(),
            b.median_smallest(),
            b.mean_extra(),
            100.0 * b.mean_extra() / large as f64,
            if p == PriorChoice::Nggp {
                "; not in the papers"
            } else {
                ""
            }
        ));
    }
    let spread = fits
        .iter()
        .map(|f| {
            let lo = f.chain_p_true.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = f
                .chain_p_true
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            (hi - lo, f)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((d, f)) = spread {
        out.push_str(&format!(
            "* **Mixing.** The two chains' `P(t = 3)` differ by at most {d:.3} (largest for \
             {} at n = {}).\n",
            f.prior.name(),
            f.n
        ));
    }
    out
}

fn main() -> common::Result<()> {
    let settings = parse_args()?;
    let (results, figures) = common::output_dirs(&settings.out)?;
    let n_max = *settings.sizes.iter().max().ok_or("no sizes")?;
    let data = mixture(settings.seed, n_max)?;
    let fits = run_all(&settings, &data)?;

    let posterior = posterior_table(&fits);
    posterior.write_csv(&results.join("k_posterior.csv"))?;
    let summary = summary_table(&fits);
    summary.write_csv(&results.join("summary.csv"))?;
    plot_posteriors(&figures.join("k_posterior.svg"), &fits, &settings.sizes)?;
    plot_p_true(&figures.join("p_true_k.svg"), &fits, &settings.sizes)?;
    let claims = claims(&fits, &settings.sizes);
    common::write_claims(&results, &claims)?;
    println!("{}", summary.markdown());
    if !settings.smoke {
        let readme = settings.out.join("README.md");
        common::update_readme(&readme, "summary", &summary.markdown())?;
        common::update_readme(&readme, "claims", &common::claims_table(&claims).markdown())?;
        common::update_readme(&readme, "verdict", &verdict(&fits, &settings.sizes))?;
        common::record_run(
            &readme,
            "`cargo run --release --example paper-miller-harrison`",
        )?;
    }
    Ok(())
}
