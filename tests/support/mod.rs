//! Shared helpers of the sampler tests: kernels over the MATH §5.3 data sets, the sweep
//! schedules of the samplers under test, the exact posterior a sampler targets, batch-means
//! variance estimates, a grid inverse CDF, a deliberately wrong Gibbs move, and the location
//! of the real data; and, in submodules, the command-line and checkpoint helpers.

#![allow(dead_code)]

pub mod checkpoint;
pub mod cli;

use nrmm::data::DenseData;
use nrmm::error::Result;
use nrmm::exact::{ChainTv, ExactPosterior, Rgs};
use nrmm::kernel::{ConjugateKernel, NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::{NrmPrior, PartitionPrior, PartitionPriorSpec, Prior};
use nrmm::rng::SeedPlan;
use nrmm::run::{Chain, Scheduled};
use nrmm::sampler::{Chooser, Gibbs, GibbsScan, HyperMove, JainNeal, Move, Sams, State, StepInfo};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Restricted Gibbs launch scans of Jain-Neal, as in the reference code (MATH §6.2).
pub const LAUNCH_SCANS: usize = 10;

/// The Normal-Wishart kernel over `data` with the reference code's empirical-Bayes
/// hyperparameters (MATH §2.1).
pub fn nw_reference(data: DenseData) -> NormalWishart {
    let hyper = NwHyper::from_data(&data).expect("data set has a non-singular covariance");
    NormalWishart::new(Arc::new(data), hyper).expect("dimensions agree")
}

/// The samplers under test: one sweep of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampler {
    /// One full Gibbs sweep in a random order (MATH §6.1).
    Gibbs,
    /// One Jain-Neal split-merge proposal, then one Gibbs sweep (MATH §6.2).
    JainNealGibbs,
    /// One SAMS proposal, then one Gibbs sweep (MATH §6.3).
    SamsGibbs,
    /// This many Jain-Neal proposals and nothing else.
    JainNealAlone(usize),
    /// This many SAMS proposals and nothing else.
    SamsAlone(usize),
    /// One sweep of the deliberately wrong [`OffByOneGibbs`], to show that a test has power.
    OffByOneGibbs,
}

impl Sampler {
    /// A short name for reports.
    pub fn name(self) -> String {
        match self {
            Sampler::Gibbs => "gibbs".into(),
            Sampler::JainNealGibbs => "jain-neal+gibbs".into(),
            Sampler::SamsGibbs => "sams+gibbs".into(),
            Sampler::JainNealAlone(r) => format!("jain-neal x{r}"),
            Sampler::SamsAlone(r) => format!("sams x{r}"),
            Sampler::OffByOneGibbs => "off-by-one gibbs".into(),
        }
    }

    /// The moves of one sweep, followed by the hyperparameter move when `resample_hyper`.
    pub fn schedule<K: ConjugateKernel + 'static, P: NrmPrior + 'static>(
        self,
        resample_hyper: bool,
    ) -> Vec<Scheduled<K, P>> {
        let gibbs = || Scheduled {
            mv: Box::new(Gibbs::new(GibbsScan::Full).expect("full scan is valid")),
            repeats: 1,
        };
        let mut moves: Vec<Scheduled<K, P>> = match self {
            Sampler::Gibbs => vec![gibbs()],
            Sampler::JainNealGibbs => vec![
                Scheduled {
                    mv: Box::new(JainNeal::new(LAUNCH_SCANS)),
                    repeats: 1,
                },
                gibbs(),
            ],
            Sampler::SamsGibbs => vec![
                Scheduled {
                    mv: Box::new(Sams::new()),
                    repeats: 1,
                },
                gibbs(),
            ],
            Sampler::JainNealAlone(r) => vec![Scheduled {
                mv: Box::new(JainNeal::new(LAUNCH_SCANS)),
                repeats: r,
            }],
            Sampler::SamsAlone(r) => vec![Scheduled {
                mv: Box::new(Sams::new()),
                repeats: r,
            }],
            Sampler::OffByOneGibbs => vec![Scheduled {
                mv: Box::new(OffByOneGibbs::default()),
                repeats: 1,
            }],
        };
        if resample_hyper {
            moves.push(Scheduled {
                mv: Box::new(HyperMove),
                repeats: 1,
            });
        }
        moves
    }
}

/// Whether a sampler running `prior` must resample any hyperparameter (the DP's `α` with a
/// prior; the NGGP's `u`, and `α`, `σ` with priors; Pitman-Yor's `θ`, `σ` and the MFM's `γ`
/// with priors).
pub fn resamples_hyper(prior: &Prior) -> bool {
    match prior {
        Prior::Dp(dp) => dp.alpha_prior().is_some(),
        Prior::Nggp(p) => {
            let h = p.hyper();
            h.sample_u || h.alpha.is_some() || h.sigma.is_some()
        }
        Prior::PitmanYor(p) => p.hyper().theta.is_some() || p.hyper().sigma.is_some(),
        Prior::Mfm(p) => p.gamma_prior().is_some(),
    }
}

/// The exact posterior `p(Π | X)` that a chain running `prior` (with its hyperparameter
/// settings) targets: the partition prior with `u` and random hyperparameters integrated out
/// (MATH §7.1), times the kernel's marginals, by enumeration.
pub fn exact_posterior<K: ConjugateKernel>(kernel: &K, prior: &Prior) -> ExactPosterior {
    let spec = PartitionPriorSpec::from_prior(prior).expect("an exact partition prior exists");
    let pp = PartitionPrior::new(spec, kernel.n_points()).expect("valid partition prior");
    ExactPosterior::new(kernel, |sizes: &[usize]| {
        pp.ln_weight(sizes)
            .expect("block sizes of an enumerated partition")
    })
    .expect("exact posterior")
}

/// Chains of the long-run total-variation checks (half from one cluster, half from
/// singletons).
pub const TV_CHAINS: usize = 4;

/// Batches per chain of the long-run total-variation checks.
pub const TV_BATCHES: usize = 20;

/// The TV check of a sampler against `post` (MATH §7.1, "Checks"): [`TV_CHAINS`] chains of
/// `schedule()` over `kernel` from `prior`, chain `c` started from one cluster (even `c`) or
/// from singletons (odd `c`) on stream `c` of `seed`, each burning in `sweeps / 10` sweeps and
/// keeping [`TV_BATCHES`] batches of the rest; their visits measured by
/// [`ExactPosterior::chain_tv`].
pub fn chains_tv<K: ConjugateKernel>(
    kernel: &K,
    prior: &Prior,
    post: &ExactPosterior,
    schedule: &dyn Fn() -> Vec<Scheduled<K, Prior>>,
    sweeps: usize,
    seed: u64,
) -> ChainTv {
    let burn_in = sweeps / 10;
    let batch_len = (sweeps - burn_in) / TV_BATCHES;
    let plan = SeedPlan::new(seed);
    let mut visited = Vec::with_capacity(TV_CHAINS);
    for c in 0..TV_CHAINS {
        let partition = if c % 2 == 0 {
            Partition::single(kernel)
        } else {
            Partition::singletons(kernel)
        };
        let state = State {
            partition,
            prior: prior.clone(),
        };
        let mut chain = Chain::new(kernel, state, plan.chain(c as u64), schedule());
        for _ in 0..burn_in {
            chain.sweep().unwrap();
        }
        let mut v = Vec::with_capacity(TV_BATCHES * batch_len);
        for _ in 0..TV_BATCHES * batch_len {
            chain.sweep().unwrap();
            let labels = chain.state().partition.canonical_labels();
            v.push(post.index_of(&Rgs::from_labels(&labels).unwrap()).unwrap());
        }
        visited.push(v);
    }
    post.chain_tv(&visited, TV_BATCHES).unwrap()
}

/// The batch-means estimate of the variance of the mean of `series` split into `batches`
/// equal consecutive batches (a trailing remainder is dropped): `S²_batch / batches`, where
/// `S²_batch` is the sample variance of the batch means. Consistent for the variance of the
/// mean of a stationary series when the batch length is well above its autocorrelation time
/// (Flegal & Jones 2010).
pub fn batch_means_variance(series: &[f64], batches: usize) -> f64 {
    let len = series.len() / batches;
    assert!(
        batches >= 2 && len >= 1,
        "need at least 2 non-empty batches"
    );
    let means: Vec<f64> = series
        .chunks_exact(len)
        .take(batches)
        .map(|b| b.iter().sum::<f64>() / len as f64)
        .collect();
    let grand = means.iter().sum::<f64>() / batches as f64;
    let s2 = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (batches - 1) as f64;
    s2 / batches as f64
}

/// The real data folder `../shared/data/<sub>` (or `$NRMM_DATA_DIR/<sub>`), or `None` with a
/// message on stderr when it is absent, so the calling test can skip.
pub fn data_dir(sub: &str) -> Option<PathBuf> {
    let root = std::env::var_os("NRMM_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"));
    let dir = root.join(sub);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: real data folder {} is absent (expected at ../shared/data/{sub}, or set \
             NRMM_DATA_DIR)",
            dir.display()
        );
        None
    }
}

/// A distribution on an interval tabulated from its log density on a uniform grid: the CDF by
/// the trapezoidal rule, inverted by bisection and linear interpolation. Draws by
/// [`GridCdf::inverse`] of a uniform are exact draws from the piecewise-linear CDF, which
/// differs from the true one by `O(h²)` in the grid step `h`.
pub struct GridCdf {
    x: Vec<f64>,
    cdf: Vec<f64>,
}

impl GridCdf {
    /// Tabulates `exp(ln_f)` on `points` equally spaced points of `[lo, hi]` (the mass outside
    /// must be negligible). Cost: `points` evaluations of `ln_f`.
    pub fn from_ln_density(lo: f64, hi: f64, points: usize, ln_f: impl Fn(f64) -> f64) -> Self {
        let h = (hi - lo) / (points - 1) as f64;
        let x: Vec<f64> = (0..points).map(|i| lo + h * i as f64).collect();
        let ln: Vec<f64> = x.iter().map(|&v| ln_f(v)).collect();
        let top = ln.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let f: Vec<f64> = ln.iter().map(|v| (v - top).exp()).collect();
        let mut cdf = Vec::with_capacity(points);
        cdf.push(0.0);
        for i in 1..points {
            cdf.push(cdf[i - 1] + 0.5 * h * (f[i - 1] + f[i]));
        }
        let total = cdf[points - 1];
        for c in &mut cdf {
            *c /= total;
        }
        GridCdf { x, cdf }
    }

    /// The quantile of `p ∈ (0, 1)`.
    pub fn inverse(&self, p: f64) -> f64 {
        let i = self
            .cdf
            .partition_point(|&c| c < p)
            .clamp(1, self.cdf.len() - 1);
        let (c0, c1) = (self.cdf[i - 1], self.cdf[i]);
        let t = if c1 > c0 { (p - c0) / (c1 - c0) } else { 0.5 };
        self.x[i - 1] + t * (self.x[i] - self.x[i - 1])
    }
}

/// A Gibbs sweep with a classic bug: the join weight is taken at the cluster size before the
/// point was removed, `κ_join(n_c + 1)` instead of `κ_join(n_c)` (for the DP `n_c + 1` instead
/// of `n_c`), which favours joining and so shrinks `K`. Otherwise identical to
/// [`nrmm::sampler::Gibbs`] with a full random scan.
#[derive(Default)]
pub struct OffByOneGibbs {
    order: Vec<usize>,
    slots: Vec<usize>,
    ln_w: Vec<f64>,
}

impl<K: ConjugateKernel, P: NrmPrior> Move<K, P> for OffByOneGibbs {
    fn name(&self) -> &'static str {
        "gibbs-off-by-one"
    }

    fn step(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
    ) -> Result<StepInfo> {
        chooser.permutation(state.partition.n(), &mut self.order);
        for &i in &self.order {
            let part = &mut state.partition;
            part.remove(kernel, i);
            self.slots.clear();
            self.ln_w.clear();
            for s in part.slots() {
                let c = part.cluster(s).unwrap();
                self.slots.push(s);
                self.ln_w.push(
                    state.prior.ln_kappa_join(c.size() + 1) + kernel.ln_predictive(i, c.stat()),
                );
            }
            self.ln_w
                .push(state.prior.ln_kappa_new() + kernel.ln_predictive(i, &kernel.empty_stat()));
            let (pick, _) = chooser.choose_log(&self.ln_w)?;
            match self.slots.get(pick) {
                Some(&s) => part.insert(kernel, i, s),
                None => {
                    part.insert_new(kernel, i);
                }
            }
        }
        Ok(StepInfo::default())
    }
}

/// The `.rs` files below `dir`, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("read {}: {e}", d.display())) {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// A fresh (absent) directory `<test>-<name>-<pid>` under Cargo's scratch space for
/// integration tests: whatever an earlier run left there is removed.
pub fn scratch(test: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{test}-{name}-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    dir
}
