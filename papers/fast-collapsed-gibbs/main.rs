//! Reproduction of Das (2014), "Fast collapsed Gibbs sampler for Dirichlet process Gaussian
//! mixture models using rank-1 Cholesky updates": caching the Cholesky factor of each
//! cluster's `Ψ_n` and keeping it current by rank-1 updates and downdates makes the
//! Normal-Wishart collapsed Gibbs predictive O(d²) instead of O(d³).
//!
//! ```text
//! cargo run --release --example paper-fast-collapsed-gibbs            # full run, rewrites the README
//! cargo run --release --example paper-fast-collapsed-gibbs -- --smoke --out runs/fcg-smoke
//! ```
//!
//! Two kernels run the library's collapsed Gibbs move ([`nrmm::sampler::Gibbs`]) on the same
//! data from the same seed: the library's [`NormalWishart`] (cached factor, O(d²) predictive)
//! and [`NaiveNw`] below, which keeps only the count, mean and scatter of each cluster and
//! builds and factorises `Ψ_n` from scratch for every predictive (O(d³)), with the same
//! factorisation routine, so that the only difference is the cache. Both must give the same
//! predictive values (to 1e-9 relative) and, given the same seed, the same chain.
//!
//! Experiments: (1) 100 points of dimension 100, CPU time after 10, 100, 1,000 and 10,000
//! iterations (one chain per method, timed at those iterations; smoke: 10 and 100 on 30
//! points); (2) 300 points at d = 2, 6, 50, 100, CPU time per iteration and the speed-up.
//! The data are seeded Gaussian mixtures drawn from a Normal-Wishart prior (no data set is
//! needed).

#[path = "../common/mod.rs"]
mod common;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::cpu_clock::CpuClock;
use common::{Claim, Table};
use nrmm::data::generate::{
    gaussian_mixture, partition_equal, partition_uniform, NormalWishartSampler,
};
use nrmm::data::DenseData;
use nrmm::kernel::cholesky::{cholesky_in_place, forward_substitute, ln_det};
use nrmm::kernel::{ConjugateKernel, NormalWishart, NwHyper};
use nrmm::math::{ln_gamma, ln_mv_gamma_ratio};
use nrmm::partition::Partition;
use nrmm::prior::Dp;
use nrmm::rng::SeedPlan;
use nrmm::sampler::{Gibbs, GibbsScan, Move, RngChooser, State};
use plotters::prelude::*;

const SEED: u64 = 20_140_107;

/// The Normal-Wishart kernel computed the naive way: per cluster only the count, the mean and
/// the centred scatter (Welford updates, O(d²)), and for every predictive and marginal a
/// from-scratch `Ψ_n = Ψ + M₂ + (r n/(r+n)) x̄ x̄ᵀ` and its Cholesky factorisation, O(d³)
/// (MATH §2.1). The size-dependent constants are tabulated as in the library, so that the
/// comparison isolates the factor cache.
#[derive(Clone, Debug)]
struct NaiveNw {
    d: usize,
    n_points: usize,
    /// The data centred at ξ, row-major.
    centred: Arc<[f64]>,
    /// Ψ in the column-by-column lower layout of `nrmm::kernel::cholesky`.
    psi: Arc<[f64]>,
    r: f64,
    nu: f64,
    marg_const: Arc<[f64]>,
    pred_const: Arc<[f64]>,
}

/// Count, mean and centred scatter (lower triangle, column by column) of a cluster.
#[derive(Clone, Debug)]
struct NaiveStat {
    n: usize,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

thread_local! {
    /// Scratch for `Ψ_n` and a right-hand side, so that the naive kernel does not allocate.
    static SCRATCH: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

impl NaiveNw {
    fn new(data: &DenseData, hyper: &NwHyper) -> nrmm::Result<Self> {
        let d = hyper.dim();
        let centred: Arc<[f64]> = data
            .values()
            .chunks_exact(d)
            .flat_map(|row| row.iter().zip(hyper.xi()).map(|(v, m)| v - m))
            .collect();
        let mut psi_chol = hyper.psi().to_vec();
        cholesky_in_place(&mut psi_chol, d, "psi")?;
        let ln_det_psi = ln_det(&psi_chol, d);
        let (r, nu, df) = (hyper.r(), hyper.nu(), d as f64);
        let ln_pi = std::f64::consts::PI.ln();
        let max_n = data.n() + 1;
        let marg_const = (0..=max_n)
            .map(|n| {
                let nf = n as f64;
                -0.5 * nf * df * ln_pi - 0.5 * df * (nf / r).ln_1p()
                    + 0.5 * nu * ln_det_psi
                    + ln_mv_gamma_ratio(d, 0.5 * (nu + nf), 0.5 * nu)
            })
            .collect();
        let pred_const = (0..=max_n)
            .map(|n| {
                let (rn, nu_n) = (r + n as f64, nu + n as f64);
                -0.5 * df * ln_pi - 0.5 * df * (1.0 / rn).ln_1p() + ln_gamma(0.5 * (nu_n + 1.0))
                    - ln_gamma(0.5 * (nu_n + 1.0 - df))
            })
            .collect();
        Ok(NaiveNw {
            d,
            n_points: data.n(),
            centred,
            psi: hyper.psi().into(),
            r,
            nu,
            marg_const,
            pred_const,
        })
    }

    fn point(&self, i: usize) -> &[f64] {
        &self.centred[i * self.d..(i + 1) * self.d]
    }

    /// Builds `Ψ_n` of `s` in `p` and factorises it in place; false if it is not positive
    /// definite in floating point.
    fn factor(&self, s: &NaiveStat, p: &mut [f64]) -> bool {
        let d = self.d;
        let c = self.r * s.n as f64 / (self.r + s.n as f64);
        for j in 0..d {
            let mj = c * s.mean[j];
            for i in j..d {
                let k = j * d + i;
                p[k] = self.psi[k] + s.m2[k] + s.mean[i] * mj;
            }
        }
        cholesky_in_place(p, d, "Psi_n").is_ok()
    }

    fn with_scratch<T>(&self, f: impl FnOnce(&mut [f64], &mut [f64]) -> T) -> T {
        let d = self.d;
        SCRATCH.with(|cell| {
            let mut buf = cell.borrow_mut();
            if buf.len() < d * d + d {
                buf.resize(d * d + d, 0.0);
            }
            let (p, rhs) = buf.split_at_mut(d * d);
            f(p, &mut rhs[..d])
        })
    }
}

impl ConjugateKernel for NaiveNw {
    type Stat = NaiveStat;

    fn n_points(&self) -> usize {
        self.n_points
    }

    fn empty_stat(&self) -> NaiveStat {
        NaiveStat {
            n: 0,
            mean: vec![0.0; self.d],
            m2: vec![0.0; self.d * self.d],
        }
    }

    fn count(&self, s: &NaiveStat) -> usize {
        s.n
    }

    /// Welford: `M₂ += (1 - 1/n)(y - x̄)(y - x̄)ᵀ` with the old mean, then the mean.
    fn add(&self, s: &mut NaiveStat, i: usize) {
        let d = self.d;
        let y = self.point(i);
        s.n += 1;
        let inv_n = 1.0 / s.n as f64;
        let w = 1.0 - inv_n;
        for j in 0..d {
            let dj = w * (y[j] - s.mean[j]);
            let col = &mut s.m2[j * d + j..(j + 1) * d];
            for ((m, &yi), &mi) in col.iter_mut().zip(&y[j..]).zip(&s.mean[j..]) {
                *m += (yi - mi) * dj;
            }
        }
        for (m, &v) in s.mean.iter_mut().zip(y) {
            *m += (v - *m) * inv_n;
        }
    }

    /// Reverse Welford: `M₂ -= (n/(n-1))(y - x̄)(y - x̄)ᵀ` with the current mean, then the
    /// mean.
    fn remove(&self, s: &mut NaiveStat, i: usize) {
        if s.n <= 1 {
            *s = self.empty_stat();
            return;
        }
        let d = self.d;
        let y = self.point(i);
        let w = s.n as f64 / (s.n - 1) as f64;
        for j in 0..d {
            let dj = w * (y[j] - s.mean[j]);
            let col = &mut s.m2[j * d + j..(j + 1) * d];
            for ((m, &yi), &mi) in col.iter_mut().zip(&y[j..]).zip(&s.mean[j..]) {
                *m -= (yi - mi) * dj;
            }
        }
        s.n -= 1;
        let inv_n = 1.0 / s.n as f64;
        for (m, &v) in s.mean.iter_mut().zip(y) {
            *m -= (v - *m) * inv_n;
        }
        if s.n == 1 {
            s.m2.fill(0.0);
        }
    }

    fn merge(&self, a: &mut NaiveStat, b: &NaiveStat) {
        if b.n == 0 {
            return;
        }
        if a.n == 0 {
            a.clone_from(b);
            return;
        }
        let d = self.d;
        let (na, nb) = (a.n as f64, b.n as f64);
        let n = na + nb;
        let c = na * nb / n;
        for j in 0..d {
            let dj = c * (b.mean[j] - a.mean[j]);
            for i in j..d {
                let k = j * d + i;
                a.m2[k] += b.m2[k] + (b.mean[i] - a.mean[i]) * dj;
            }
        }
        for (m, &mb) in a.mean.iter_mut().zip(&b.mean) {
            *m += (mb - *m) * (nb / n);
        }
        a.n += b.n;
    }

    fn ln_marginal(&self, s: &NaiveStat) -> f64 {
        if s.n == 0 {
            return 0.0;
        }
        let ld = self.with_scratch(|p, _| {
            if self.factor(s, p) {
                ln_det(p, self.d)
            } else {
                f64::NAN
            }
        });
        self.marg_const[s.n] - 0.5 * (self.nu + s.n as f64) * ld
    }

    fn ln_marginal_pair(&self, a: &NaiveStat, b: &NaiveStat) -> f64 {
        let mut u = a.clone();
        self.merge(&mut u, b);
        self.ln_marginal(&u)
    }

    /// The Student-t predictive from a fresh factor `L` of `Ψ_n`:
    /// `pc(n) - ½ ln|Ψ_n| - ((ν_n+1)/2) ln(1 + r_n/(r_n+1) ‖L⁻¹(y - ξ_n)‖²)`.
    fn ln_predictive(&self, i: usize, s: &NaiveStat) -> f64 {
        let y = self.point(i);
        let rn = self.r + s.n as f64;
        let w = s.n as f64 / rn;
        let (ld, q) = self.with_scratch(|p, z| {
            if !self.factor(s, p) {
                return (f64::NAN, f64::NAN);
            }
            for ((zi, &yi), &mi) in z.iter_mut().zip(y).zip(&s.mean) {
                *zi = yi - w * mi;
            }
            (ln_det(p, self.d), forward_substitute(p, self.d, z))
        });
        self.pred_const[s.n]
            - 0.5 * ld
            - 0.5 * (self.nu + s.n as f64 + 1.0) * (rn / (rn + 1.0) * q).ln_1p()
    }
}

/// One chain's timings and trajectory.
struct ChainRun {
    /// CPU seconds spent in Gibbs steps after each checkpoint iteration.
    seconds_at: Vec<f64>,
    /// Canonical labels after every iteration.
    labels: Vec<Vec<usize>>,
    /// Clusters at the end.
    clusters: usize,
}

/// Runs `iterations` collapsed Gibbs sweeps under a DP(1) prior with the chain's seeded
/// stream, from a seeded uniformly random partition into 10 clusters (from one cluster,
/// single-site Gibbs in 100 dimensions rarely splits at all), timing the steps (CPU time) at
/// each of `checkpoints`.
fn run_chain<K: ConjugateKernel>(
    kernel: &K,
    iterations: usize,
    checkpoints: &[usize],
) -> nrmm::Result<ChainRun> {
    let mut rng = SeedPlan::new(SEED).chain(0);
    let start = partition_uniform(kernel.n_points(), 10, &mut rng)?;
    let mut state = State {
        partition: Partition::from_labels(kernel, &start)?,
        prior: Dp::new(1.0)?,
    };
    let mut gibbs = Gibbs::new(GibbsScan::Full)?;
    let mut seconds = 0.0;
    let mut seconds_at = Vec::new();
    let mut labels = Vec::with_capacity(iterations);
    for it in 1..=iterations {
        let clock = CpuClock::start();
        Move::<K, Dp>::step(
            &mut gibbs,
            kernel,
            &mut state,
            &mut RngChooser::new(&mut rng),
        )?;
        seconds += clock.elapsed().as_secs_f64();
        if checkpoints.contains(&it) {
            seconds_at.push(seconds);
        }
        labels.push(state.partition.canonical_labels());
    }
    Ok(ChainRun {
        seconds_at,
        labels,
        clusters: state.partition.n_clusters(),
    })
}

/// The first iteration (1-based) at which two chains differ, if any.
fn first_difference(a: &ChainRun, b: &ChainRun) -> Option<usize> {
    a.labels
        .iter()
        .zip(&b.labels)
        .position(|(x, y)| x != y)
        .map(|p| p + 1)
}

/// Largest relative difference between the two kernels' log predictives of every point under
/// every cluster of the partition `labels` (and the empty cluster), and their log marginals.
fn max_relative_difference(
    fast: &NormalWishart,
    naive: &NaiveNw,
    labels: &[usize],
) -> nrmm::Result<(f64, usize)> {
    let k = labels.iter().max().map_or(0, |m| m + 1);
    let mut worst: f64 = 0.0;
    let mut compared = 0;
    let rel = |a: f64, b: f64| (a - b).abs() / a.abs().max(b.abs()).max(1.0);
    for c in 0..=k {
        let members: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == c).collect();
        let (sf, sn) = (fast.stat_of(&members), naive.stat_of(&members));
        worst = worst.max(rel(fast.ln_marginal(&sf), naive.ln_marginal(&sn)));
        for i in (0..labels.len()).filter(|&i| labels[i] != c) {
            let (a, b) = (fast.ln_predictive(i, &sf), naive.ln_predictive(i, &sn));
            if !(a.is_finite() && b.is_finite()) {
                return Err(nrmm::Error::Numerical(format!(
                    "predictive of point {i} in cluster {c}: {a} (cached) vs {b} (naive)"
                )));
            }
            worst = worst.max(rel(a, b));
            compared += 1;
        }
    }
    Ok((worst, compared))
}

/// `n` points in `k` equal clusters of a Gaussian mixture drawn from a Normal-Wishart prior
/// with mean 0, `Ψ = ν I` (so `E[Λ] = I`: unit within-cluster spread) and `r = 0.05` (cluster
/// means spread with about 20 times that variance).
fn mixture(n: usize, d: usize, k: usize, seed: u64) -> nrmm::Result<DenseData> {
    let nu = d as f64 + 2.0;
    let mut psi = vec![0.0; d * d];
    for i in 0..d {
        psi[i * d + i] = nu;
    }
    let prior = NormalWishartSampler::new(&vec![0.0; d], &psi, 0.05, nu)?;
    let labels = partition_equal(n, k)?;
    let mut rng = SeedPlan::new(seed).chain(1);
    Ok(gaussian_mixture(&labels, &prior, &mut rng)?.0)
}

/// The model's hyperparameters at every dimension: ξ = the data mean, `Ψ = (ν - d - 1) I`
/// with `ν = d + 3` (prior mean covariance `E[Σ] = I`, the generator's within-cluster
/// spread) and `r = 0.05`, as in the generator. The reference recipe `NwHyper::from_data`
/// does not apply to 100 points in 100 dimensions (the sample covariance is singular), and its
/// `det Ψ = 0.1` makes clusters ever tighter relative to unit spread as d grows (at d = 50 every
/// point became its own cluster), so one recipe that means the same at every d is used.
fn model_hyper(x: &DenseData) -> nrmm::Result<NwHyper> {
    let d = x.d();
    let mut xi = vec![0.0; d];
    for i in 0..x.n() {
        for (m, v) in xi.iter_mut().zip(x.row(i)) {
            *m += v / x.n() as f64;
        }
    }
    let nu = d as f64 + 3.0;
    let mut psi = vec![0.0; d * d];
    for i in 0..d {
        psi[i * d + i] = nu - d as f64 - 1.0;
    }
    NwHyper::new(xi, psi, 0.05, nu)
}

struct Args {
    out: PathBuf,
    smoke: bool,
}

fn parse_args() -> common::Result<Args> {
    let mut args = Args {
        out: common::crate_root()
            .join("papers")
            .join("fast-collapsed-gibbs"),
        smoke: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--smoke" => args.smoke = true,
            "--out" => args.out = PathBuf::from(it.next().ok_or("--out needs a directory")?),
            other => {
                return Err(
                    format!("unknown argument {other:?} (expected --smoke, --out DIR)").into(),
                )
            }
        }
    }
    Ok(args)
}

fn main() -> common::Result<()> {
    let args = parse_args()?;
    let (results, figures) = common::output_dirs(&args.out)?;
    let readme = args.out.join("README.md");

    // Experiment 1: time against iterations at d = 100.
    let (n1, d1) = if args.smoke { (30, 100) } else { (100, 100) };
    let checkpoints: Vec<usize> = if args.smoke {
        vec![10, 100]
    } else {
        vec![10, 100, 1_000, 10_000]
    };
    let iterations = *checkpoints.last().expect("checkpoints");
    let x = mixture(n1, d1, 4, SEED)?;
    let hyper = model_hyper(&x)?;
    let fast = NormalWishart::new(Arc::new(x.clone()), hyper.clone())?;
    let naive = NaiveNw::new(&x, &hyper)?;
    eprintln!("experiment 1: n = {n1}, d = {d1}, {iterations} iterations per method");
    let run_fast = run_chain(&fast, iterations, &checkpoints)?;
    eprintln!("  cached: {:.3} s", run_fast.seconds_at.last().unwrap());
    let run_naive = run_chain(&naive, iterations, &checkpoints)?;
    eprintln!("  naive: {:.3} s", run_naive.seconds_at.last().unwrap());
    let diverged = first_difference(&run_fast, &run_naive);
    let (pred_diff, compared) =
        max_relative_difference(&fast, &naive, run_fast.labels.last().expect("iterations"))?;
    if pred_diff > 1e-9 {
        return Err(
            format!("the two kernels' predictives differ by {pred_diff:e} relative").into(),
        );
    }
    let mut t1 = Table::new(&[
        "iterations",
        "naive O(d^3) CPU s",
        "cached O(d^2) CPU s",
        "speed-up",
    ]);
    for (k, &it) in checkpoints.iter().enumerate() {
        let (a, b) = (run_naive.seconds_at[k], run_fast.seconds_at[k]);
        t1.push(vec![
            it.to_string(),
            format!("{a:.4}"),
            format!("{b:.4}"),
            format!("{:.1}", a / b),
        ]);
    }
    t1.write_csv(&results.join("time_vs_iterations.csv"))?;
    plot_time_vs_iterations(
        &figures.join("time_vs_iterations.svg"),
        &checkpoints,
        &run_naive.seconds_at,
        &run_fast.seconds_at,
        n1,
        d1,
    )?;

    // Experiment 2: speed-up against the dimension.
    let dims: Vec<(usize, usize)> = if args.smoke {
        vec![(2, 50), (6, 20), (50, 2)]
    } else {
        vec![(2, 2_000), (6, 1_000), (50, 100), (100, 30)]
    };
    let n2 = if args.smoke { 60 } else { 300 };
    let mut t2 = Table::new(&[
        "d",
        "points",
        "iterations",
        "clusters at end",
        "naive ms/iteration",
        "cached ms/iteration",
        "speed-up",
        "same chain",
        "max rel. diff. of predictives",
    ]);
    let mut speedups = Vec::new();
    let mut all_same = diverged.is_none();
    let mut worst_diff = pred_diff;
    for &(d, its) in &dims {
        let x = mixture(n2, d, 5, SEED + d as u64)?;
        let hyper = model_hyper(&x)?;
        let fast = NormalWishart::new(Arc::new(x.clone()), hyper.clone())?;
        let naive = NaiveNw::new(&x, &hyper)?;
        let a = run_chain(&fast, its, &[its])?;
        let b = run_chain(&naive, its, &[its])?;
        let same = first_difference(&a, &b);
        all_same &= same.is_none();
        let (diff, _) = max_relative_difference(&fast, &naive, a.labels.last().expect("its"))?;
        if diff > 1e-9 {
            return Err(format!("d = {d}: predictives differ by {diff:e} relative").into());
        }
        worst_diff = worst_diff.max(diff);
        let (ms_fast, ms_naive) = (
            1e3 * a.seconds_at[0] / its as f64,
            1e3 * b.seconds_at[0] / its as f64,
        );
        eprintln!("d = {d}: naive {ms_naive:.3} ms/it, cached {ms_fast:.3} ms/it");
        speedups.push((d, ms_naive / ms_fast));
        t2.push(vec![
            d.to_string(),
            n2.to_string(),
            its.to_string(),
            a.clusters.to_string(),
            format!("{ms_naive:.4}"),
            format!("{ms_fast:.4}"),
            format!("{:.1}", ms_naive / ms_fast),
            match same {
                None => "yes".into(),
                Some(it) => format!("no (from iteration {it})"),
            },
            format!("{diff:.1e}"),
        ]);
    }
    t2.write_csv(&results.join("speedup_vs_dimension.csv"))?;
    plot_speedup(&figures.join("speedup_vs_dimension.svg"), &speedups)?;

    let mut t3 = Table::new(&["check", "result"]);
    t3.push(vec![
        format!("same chain, d = {d1}, {iterations} iterations"),
        match diverged {
            None => format!(
                "identical labels after every iteration ({} clusters at the end)",
                run_fast.clusters
            ),
            Some(it) => format!("labels differ from iteration {it}"),
        },
    ]);
    t3.push(vec![
        "max relative difference of predictives and marginals".into(),
        format!("{pred_diff:.1e} over {compared} (point, cluster) pairs at the final state"),
    ]);
    t3.write_csv(&results.join("agreement.csv"))?;

    let last = t1.rows.last().expect("rows");
    let speedup_full: f64 = last[3].parse()?;
    let (d_hi, s_hi) = *speedups.last().expect("dims");
    let (d_lo, s_lo) = speedups[0];
    let claims = vec![
        Claim {
            claim: format!("cached rank-1 Cholesky beats from-scratch O(d^3) predictive (d = {d1}, {} iterations)", last[0]),
            paper: "faster by roughly a factor of d (O(d^2) vs O(d^3))".into(),
            ours: format!("{speedup_full:.1}x faster ({} s vs {} s CPU)", last[2], last[1]),
            ratio: "—".into(),
            run: common::this_run(),
        },
        Claim {
            claim: "the speed-up grows with the dimension".into(),
            paper: "O(d)".into(),
            ours: format!("{s_lo:.1}x at d = {d_lo}, {s_hi:.1}x at d = {d_hi}"),
            ratio: "—".into(),
            run: common::this_run(),
        },
        Claim {
            claim: "same predictive and same chain as the naive computation".into(),
            paper: "exact (same algorithm)".into(),
            ours: format!(
                "max rel. diff. {worst_diff:.1e}; chains {}",
                if all_same { "identical" } else { "diverge (see table)" }
            ),
            ratio: "—".into(),
            run: common::this_run(),
        },
    ];
    common::write_claims(&results, &claims)?;
    common::update_readme(&readme, "iterations", &t1.markdown())?;
    common::update_readme(&readme, "dimension", &t2.markdown())?;
    common::update_readme(&readme, "agreement", &t3.markdown())?;
    let growth = speedups
        .iter()
        .map(|(d, s)| format!("{s:.1}x at d = {d}"))
        .collect::<Vec<_>>()
        .join(", ");
    let verdict = format!(
        "* **Matches:** the cached factor is {speedup_full:.1}x faster than the from-scratch \
         factorisation at d = {d1} over {iterations} iterations, and the speed-up grows with \
         the dimension ({growth}): a factorisation costs about d³/3 multiply-adds against \
         d²/2 for the triangular solve, so the ratio of the predictive's costs grows like d \
         once d is large enough for the O(d³) term to dominate; at small d the fixed costs \
         per point (the prior weights, the random draw, building `Ψ_n`) dominate both.\n\
         * **Matches:** both kernels give the same predictives (largest relative difference \
         {worst_diff:.1e}) and, from the same seed, {}.\n\
         * **Differs:** the naive kernel's constant factor is ours, not the note's (it uses the \
         same hand-written factorisation as the library and no allocation), so the absolute \
         seconds and the exact speed-up are not comparable to the note's; the shape is.",
        if all_same {
            "the same chain (identical labels after every iteration in every run)"
        } else {
            "chains that eventually differ by rounding (see the tables)"
        }
    );
    common::update_readme(&readme, "verdict", &verdict)?;
    common::record_run(
        &readme,
        "`cargo run --release --example paper-fast-collapsed-gibbs`",
    )?;
    println!("{}\n{}\n{}", t1.markdown(), t2.markdown(), t3.markdown());
    Ok(())
}

fn plot_error<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> Box<dyn std::error::Error> + '_ {
    move |e| format!("{}: {e}", path.display()).into()
}

const NAIVE_COLOUR: RGBColor = RGBColor(214, 39, 40);
const CACHED_COLOUR: RGBColor = RGBColor(31, 119, 180);

/// CPU seconds against iterations, log-log, one line per method.
fn plot_time_vs_iterations(
    path: &Path,
    its: &[usize],
    naive: &[f64],
    cached: &[f64],
    n: usize,
    d: usize,
) -> common::Result<()> {
    let err = plot_error(path);
    let root = SVGBackend::new(path, (800, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let lo = cached
        .iter()
        .chain(naive)
        .copied()
        .fold(f64::INFINITY, f64::min)
        / 2.0;
    let hi = cached.iter().chain(naive).copied().fold(0.0, f64::max) * 2.0;
    let x_hi = *its.last().expect("iterations") as f64 * 1.5;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Collapsed Gibbs, {n} points, d = {d}: CPU time"),
            ("sans-serif", 22),
        )
        .margin(18)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(
            (its[0] as f64 / 1.5..x_hi).log_scale(),
            (lo.max(1e-6)..hi).log_scale(),
        )
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc("iterations (full sweeps)")
        .y_desc("CPU seconds")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()
        .map_err(&err)?;
    for (name, times, c) in [
        (
            "naive: Cholesky of Psi_n per predictive, O(d^3)",
            naive,
            NAIVE_COLOUR,
        ),
        (
            "cached factor, rank-1 updates, O(d^2)",
            cached,
            CACHED_COLOUR,
        ),
    ] {
        let pts: Vec<(f64, f64)> = its
            .iter()
            .map(|&i| i as f64)
            .zip(times.iter().copied())
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(&err)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)));
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, c.filled())))
            .map_err(&err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}

/// Speed-up (naive time / cached time per iteration) against the dimension, log-log.
fn plot_speedup(path: &Path, speedups: &[(usize, f64)]) -> common::Result<()> {
    let err = plot_error(path);
    let root = SVGBackend::new(path, (800, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let hi = speedups.iter().map(|s| s.1).fold(1.0, f64::max) * 2.0;
    let d_hi = speedups.iter().map(|s| s.0).max().unwrap_or(2) as f64 * 1.5;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Speed-up of the cached factor over the naive predictive",
            ("sans-serif", 22),
        )
        .margin(18)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d((1.5f64..d_hi).log_scale(), (0.5f64..hi).log_scale())
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc("dimension d")
        .y_desc("speed-up (naive / cached CPU time)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.1}"))
        .draw()
        .map_err(&err)?;
    let pts: Vec<(f64, f64)> = speedups.iter().map(|&(d, s)| (d as f64, s)).collect();
    chart
        .draw_series(LineSeries::new(pts.clone(), CACHED_COLOUR.stroke_width(2)))
        .map_err(&err)?;
    chart
        .draw_series(
            pts.iter()
                .map(|&p| Circle::new(p, 5, CACHED_COLOUR.filled())),
        )
        .map_err(&err)?;
    chart
        .draw_series(
            pts.iter()
                .map(|&(d, s)| Text::new(format!("{s:.1}x"), (d, s * 1.25), ("sans-serif", 16))),
        )
        .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}
