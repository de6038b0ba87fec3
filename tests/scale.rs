//! Checks at scale: every sampler, on 10,000 points with a known true partition, must reach
//! the true partition's log joint region.
//!
//! The exactness checks run on 7 points, where every partition can be enumerated; they cannot
//! see a sampler that over-splits large clusters and never merges them back. Here every
//! sampler runs on two seeded data sets drawn *from the model the chains run under* (a
//! partition from the DP's CRP, then Gaussian data from Normal-Wishart clusters with the
//! kernel's own hyperparameters; [`SEPARATED`] and [`OVERLAPPING`]), and its chain must come
//! within [`Scenario::tol`] of the log joint of the true labels under that model (what
//! `nrmm loglik` prints for them).
//!
//! **Why the truth's log joint is the bar.** When the data are drawn from the model, the true
//! partition is itself a draw from the posterior `p(Π | X)` (the argument of the Geweke
//! tests, MATH §7.2), so `ln p(X, Π_true)` is one draw from the distribution of
//! `ln p(X, Π)` under the posterior. A chain in the posterior's typical set visits many
//! partitions whose log joint is spread the same way, so its best over the second half of
//! the run is, but for an unlikely truth in the far upper tail, at or above the truth's; and
//! it exceeds it by a few nats already for a handful of distinct draws. A chain stuck in a
//! wrong mode sits far below: splitting one true cluster of `m` points into two random
//! halves costs `m ln 2` nats of the DP's partition prior with nothing gained in likelihood
//! (about 700 nats for 1,000 points), into two spatial halves still about `0.19 m`, and one
//! true cluster merged into another costs thousands of nats on separated data.
//!
//! **The tolerance** ([`tolerance`]) is one nat per parameter of one cluster (mean,
//! covariance, weight: `P = d + d(d+1)/2 + 1`) times `ln n`, i.e. twice the BIC penalty of one
//! cluster: the log joint of a partition near the truth differs from it by the Occam factors
//! of clusters that the data barely support (each about `(P/2) ln n_c`) and by reassigned
//! ambiguous points, and a state with one cluster too many or too few that the data do
//! support lies outside it. For `d = 2`, `n = 10,000` it is 55 nats, far below the hundreds
//! to thousands of nats of the stuck states above.
//!
//! **The statistic** is the best log joint over the second half of the chain: the first half
//! is burn-in (from one cluster every sampler needs it), and the best, unlike the mean, does
//! not depend on how widely the posterior's log joint spreads, so one bar serves both data
//! sets; a chain that never visits the truth's region in the second half fails however it
//! got there. The spread is wide when clusters overlap: on [`OVERLAPPING`] the exact
//! samplers' chains swing by hundreds of nats from sweep to sweep as ambiguous points and
//! small clusters move, and average 300-450 nats above the truth over their last quarter
//! (measured), while a chain stuck over-split sits thousands of nats below it. The check is
//! one-sided by design: a chain above the truth passes, as the approximate samplers that
//! under-split the overlapping set do (`tgmcmc-paper` and `subcluster-dpmm` at K = 3-5 of
//! 7); their bias is measured against enumeration by the TV tests. The mean over the last
//! quarter, the final number of clusters `K` and the first sweep within the tolerance are
//! printed for every run (`--nocapture`).
//!
//! **Starts.** From ONE cluster (the hard case: every cluster must be split off), from the
//! default start (`Start::Auto`, the better of one cluster and an SVA-PM fit, what `nrmm run`
//! uses), and from an over-split state, every true cluster cut in two (random halves or
//! spatial halves across its principal axis), which must be merged back within the budget;
//! and from the truth with a small ball of points cut out of its largest cluster
//! ([`StartFrom::SmallPiece`], at 10⁵ points, for the exact sub-cluster sampler, whose
//! launches cannot isolate such a piece to weigh its merge);
//! and from the TRUE partition, itself a draw from the posterior, where an exact chain stays:
//! on the separated set the mean log joint of its last quarter must lie within the tolerance
//! of the truth's on either side (measured: within 6 nats at 10⁴ points, 17 at 10⁵, for every
//! sampler), so a move whose ratios are wrong only at scale shows as a drift either way. Every
//! run also checks that the chain's statistics, updated incrementally over all its sweeps,
//! give the log joint that statistics computed afresh from its labels give.
//!
//! The exact sub-cluster sampler also runs under the Pitman-Yor process and the MFM on
//! separated sets drawn from them ([`SEPARATED_PY`], [`SEPARATED_MFM`]), from one cluster and
//! from the truth, with the same bar.
//!
//! Sweeps are counted, never timed, and every seed is fixed, so the outcome does not depend on
//! the machine; there are no retries. Budgets ([`budget`]) are sized so that the whole file
//! runs in 1.5-3 minutes on two shared cores in release (`cargo test --release --test
//! integration scale::`). The samplers use the command line's default moves
//! (`MoveSettings::default_proposals_for(kind, n)` split-merge proposals per sweep, 10 launch scans, 10
//! global moves, one Gibbs sweep).
//!
//! Tests ignored with "fails today" record, in their reason, what the sampler measured when the
//! test was written (best log joint of the second half against the truth's, K); run them with
//! `cargo test --release --test integration scale:: -- --ignored --nocapture`, which also runs
//! the long versions: the same checks at 10^5 and 10^6 points, and the failing ones with
//! longer budgets (minutes each; `scale::large_` alone, or one test by its name).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use nrmm::data::generate::{
    gaussian_mixture, partition_crp, partition_mfm, partition_pitman_yor, GaussianComponent,
    NormalWishartSampler,
};
use nrmm::data::DenseData;
use nrmm::kernel::{NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, KPrior, Mfm, PitmanYor, Prior};
use nrmm::rng::{uniform_open01, SeedPlan};
use nrmm::run::{Chain, MoveSettings, SamplerKind, SamplerSettings, Start};
use nrmm::sampler::State;

/// A data set drawn from the model: `n` points in `d` dimensions, the partition from the
/// CRP with concentration `alpha` (the DP prior the chains run under), each cluster's mean
/// and precision from the Normal-Wishart with `ξ = 0`, `Ψ = I`, prior sample size `r` and
/// `ν = d + nu_minus_d` (the kernel's hyperparameters), all from `seed`.
#[derive(Clone, Copy, Debug)]
pub struct SetSpec {
    /// Name for reports.
    pub name: &'static str,
    /// Number of points.
    pub n: usize,
    /// Dimension.
    pub d: usize,
    /// Prior sample size of the cluster means: their spread is `1/√r` times a cluster's own,
    /// so a small `r` separates the clusters.
    pub r: f64,
    /// `ν − d` of the clusters' Wishart precisions.
    pub nu_minus_d: f64,
    /// DP concentration (of the CRP draw and of the model); Pitman-Yor's `θ`.
    pub alpha: f64,
    /// The prior the partition is drawn from and the chains run under.
    pub prior: SetPrior,
    /// Seed of every draw.
    pub seed: u64,
}

/// The prior of a data set: the DP with the set's `alpha`, or a Gibbs-type prior whose
/// partition is drawn from its own urn (Pitman-Yor with `θ = alpha`) or definition (the MFM,
/// `K - 1 ~ Poisson(λ)`).
#[derive(Clone, Copy, Debug)]
pub enum SetPrior {
    /// The Dirichlet process.
    Dp,
    /// Pitman-Yor with discount `sigma` (and `θ = alpha`).
    PitmanYor {
        /// The discount.
        sigma: f64,
    },
    /// The MFM with Dirichlet parameter `gamma` and `K - 1 ~ Poisson(lambda)`.
    Mfm {
        /// The Dirichlet parameter.
        gamma: f64,
        /// The mean of `K - 1`.
        lambda: f64,
    },
}

impl SetPrior {
    /// The prior, with `alpha` the set's concentration.
    fn build(self, alpha: f64) -> Prior {
        match self {
            SetPrior::Dp => Dp::new(alpha).expect("valid alpha").into(),
            SetPrior::PitmanYor { sigma } => {
                PitmanYor::fixed(alpha, sigma).expect("valid θ, σ").into()
            }
            SetPrior::Mfm { gamma, lambda } => Mfm::new(gamma, KPrior::Poisson { lambda }, None)
                .expect("valid MFM")
                .into(),
        }
    }

    /// A partition of `n` points drawn from the prior.
    fn draw(self, n: usize, alpha: f64, rng: &mut nrmm::rng::NrmmRng) -> Vec<usize> {
        match self {
            SetPrior::Dp => partition_crp(n, alpha, rng).expect("valid CRP settings"),
            SetPrior::PitmanYor { sigma } => {
                partition_pitman_yor(n, alpha, sigma, rng).expect("valid Pitman-Yor settings")
            }
            SetPrior::Mfm { gamma, lambda } => {
                partition_mfm(n, gamma, &KPrior::Poisson { lambda }, rng)
                    .expect("valid MFM settings")
            }
        }
    }
}

/// Well-separated clusters: the means spread `1/√0.002 ≈ 22` times a cluster's scale; the
/// Bayes classifier with the true components misplaces 0.02 % of the points.
pub const SEPARATED: SetSpec = SetSpec {
    name: "separated",
    n: 10_000,
    d: 2,
    r: 0.002,
    nu_minus_d: 4.0,
    alpha: 1.0,
    prior: SetPrior::Dp,
    seed: 11,
};

/// Moderately overlapping clusters: the means spread `1/√0.1 ≈ 3.2` times a cluster's
/// scale, so neighbouring clusters share their tails: the Bayes classifier with the true
/// components misplaces 7.2 % of the points.
pub const OVERLAPPING: SetSpec = SetSpec {
    name: "overlapping",
    n: 10_000,
    d: 2,
    r: 0.1,
    nu_minus_d: 4.0,
    alpha: 1.0,
    prior: SetPrior::Dp,
    seed: 12,
};

/// A data set with its model and the true partition's log joint.
pub struct Scenario {
    /// How it was drawn.
    pub spec: SetSpec,
    /// The Normal-Wishart kernel over the data, at the generating hyperparameters.
    pub kernel: NormalWishart,
    /// The DP prior at the generating concentration.
    pub prior: Prior,
    /// The true labels.
    pub truth: Vec<usize>,
    /// `ln p(X, Π_true)` under `kernel` and `prior`.
    pub truth_joint: f64,
    /// Clusters of the truth.
    pub k_true: usize,
    /// Sizes of the true clusters, largest first.
    pub sizes: Vec<usize>,
    /// Fraction of points whose own component is not the most probable one under the true
    /// means, precisions and proportions: how much the clusters overlap.
    pub bayes_error: f64,
    /// How far below `truth_joint` a chain may stay ([`tolerance`]).
    pub tol: f64,
}

/// The tolerance of the log joint below the truth's: one nat per parameter of one cluster
/// (`P = d + d(d+1)/2 + 1`: mean, covariance, weight) times `ln n`, twice one cluster's BIC
/// penalty (see the module documentation for why this is the right scale).
pub fn tolerance(n: usize, d: usize) -> f64 {
    let p = d + d * (d + 1) / 2 + 1;
    p as f64 * (n as f64).ln()
}

/// `ln det Λ` and the lower Cholesky factor of a row-major symmetric positive-definite `Λ`.
fn cholesky(a: &[f64], d: usize) -> (f64, Vec<f64>) {
    let mut l = vec![0.0; d * d];
    let mut ln_det = 0.0;
    for i in 0..d {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i * d + k] * l[j * d + k]).sum();
            if i == j {
                let v = (a[i * d + i] - s).sqrt();
                ln_det += 2.0 * v.ln();
                l[i * d + i] = v;
            } else {
                l[i * d + j] = (a[i * d + j] - s) / l[j * d + j];
            }
        }
    }
    (ln_det, l)
}

/// The fraction of points that the Bayes classifier with the true components and the true
/// proportions assigns to another component than their own.
fn bayes_error(data: &DenseData, labels: &[usize], comps: &[GaussianComponent]) -> f64 {
    let (n, d) = (data.n(), data.d());
    let mut counts = vec![0usize; comps.len()];
    for &l in labels {
        counts[l] += 1;
    }
    let consts: Vec<(f64, Vec<f64>)> = comps
        .iter()
        .zip(&counts)
        .map(|(c, &m)| {
            let (ln_det, l) = cholesky(&c.precision, d);
            let w = if m == 0 {
                f64::NEG_INFINITY
            } else {
                (m as f64).ln()
            };
            (w + 0.5 * ln_det, l)
        })
        .collect();
    let mut wrong = 0;
    for (i, &own) in labels.iter().enumerate() {
        let x = data.row(i);
        let score = |c: usize| {
            // (x − μ)ᵀ Λ (x − μ) = |Lᵀ (x − μ)|² with Λ = L Lᵀ.
            let (k, l) = &consts[c];
            let mu = &comps[c].mean;
            let q: f64 = (0..d)
                .map(|j| {
                    (j..d)
                        .map(|r| l[r * d + j] * (x[r] - mu[r]))
                        .sum::<f64>()
                        .powi(2)
                })
                .sum();
            k - 0.5 * q
        };
        let mine = score(own);
        if (0..comps.len()).any(|c| c != own && score(c) > mine) {
            wrong += 1;
        }
    }
    wrong as f64 / n as f64
}

impl Scenario {
    /// Draws the data set of `spec` and computes the truth's log joint.
    pub fn new(spec: SetSpec) -> Scenario {
        let d = spec.d;
        let mut rng = SeedPlan::new(spec.seed).chain(0);
        let labels = spec.prior.draw(spec.n, spec.alpha, &mut rng);
        let xi = vec![0.0; d];
        let mut psi = vec![0.0; d * d];
        for i in 0..d {
            psi[i * d + i] = 1.0;
        }
        let nu = d as f64 + spec.nu_minus_d;
        let nw = NormalWishartSampler::new(&xi, &psi, spec.r, nu).expect("valid Normal-Wishart");
        let (data, comps) = gaussian_mixture(&labels, &nw, &mut rng).expect("valid labels");
        let bayes_error = bayes_error(&data, &labels, &comps);
        let hyper = NwHyper::new(xi, psi, spec.r, nu).expect("valid hyperparameters");
        let kernel = NormalWishart::new(Arc::new(data), hyper).expect("dimensions agree");
        let prior = spec.prior.build(spec.alpha);
        let truth_part = Partition::from_labels(&kernel, &labels).expect("one label per point");
        let truth_joint = truth_part.ln_joint(&prior);
        let mut sizes = truth_part.sizes();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        Scenario {
            spec,
            k_true: truth_part.n_clusters(),
            truth: labels,
            truth_joint,
            sizes,
            bayes_error,
            tol: tolerance(spec.n, d),
            kernel,
            prior,
        }
    }

    /// The scenario of `spec`, drawn once per test process and shared by its tests (told
    /// apart by name, size and seed).
    pub fn get(spec: SetSpec) -> &'static Scenario {
        static CACHE: Mutex<Vec<&'static Scenario>> = Mutex::new(Vec::new());
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let same = |s: &SetSpec| s.name == spec.name && s.n == spec.n && s.seed == spec.seed;
        if let Some(scn) = cache.iter().find(|scn| same(&scn.spec)) {
            return scn;
        }
        // Leaked on purpose: a handful of data sets live as long as the test process.
        let scn: &'static Scenario = Box::leak(Box::new(Scenario::new(spec)));
        cache.push(scn);
        scn
    }

    /// One line on the data set for reports.
    pub fn describe(&self) -> String {
        format!(
            "{} (n = {}, d = {}, r = {}): K = {}, sizes {:?}, Bayes error {:.2} %, truth ln p = \
             {:.1}, tol {:.1}",
            self.spec.name,
            self.spec.n,
            self.spec.d,
            self.spec.r,
            self.k_true,
            self.sizes,
            100.0 * self.bayes_error,
            self.truth_joint,
            self.tol
        )
    }

    /// Every true cluster of at least two points cut in two: `random` halves (each point
    /// to a side by a fair coin from `seed`), or spatial halves (the side of the cluster's
    /// median along its principal axis).
    pub fn over_split(&self, random: bool, seed: u64) -> Vec<usize> {
        let data = self.kernel.data();
        let d = data.d();
        let mut rng = SeedPlan::new(seed).task(0, 0, 7);
        let k = self.truth.iter().max().map_or(0, |m| m + 1);
        let mut labels: Vec<usize> = self.truth.iter().map(|&l| 2 * l).collect();
        for c in 0..k {
            let members: Vec<usize> = (0..self.truth.len())
                .filter(|&i| self.truth[i] == c)
                .collect();
            if members.len() < 2 {
                continue;
            }
            if random {
                for &i in &members {
                    if uniform_open01(&mut rng) < 0.5 {
                        labels[i] += 1;
                    }
                }
                continue;
            }
            let axis = principal_axis(data, &members);
            let mut proj: Vec<(f64, usize)> = members
                .iter()
                .map(|&i| {
                    let x = data.row(i);
                    ((0..d).map(|j| x[j] * axis[j]).sum(), i)
                })
                .collect();
            proj.sort_by(|a, b| a.0.total_cmp(&b.0));
            for &(_, i) in &proj[proj.len() / 2..] {
                labels[i] += 1;
            }
        }
        labels
    }
}

impl Scenario {
    /// The true labels with the `m` points nearest (in Euclidean distance) to the first
    /// point of the largest true cluster, that point included, given a label of their own:
    /// a ball inside one cluster, which the posterior puts back into it (its points are
    /// drawn from the cluster's Gaussian like the rest), but which fits its own points more
    /// tightly than the cluster does, so that moves of one point at a time keep it.
    pub fn small_piece(&self, m: usize) -> Vec<usize> {
        let data = self.kernel.data();
        let k = self.truth.iter().max().map_or(0, |l| l + 1);
        let mut counts = vec![0usize; k];
        for &l in &self.truth {
            counts[l] += 1;
        }
        let largest = (0..k).max_by_key(|&c| counts[c]).expect("a cluster");
        let centre = self
            .truth
            .iter()
            .position(|&l| l == largest)
            .expect("the cluster has a point");
        let c = data.row(centre);
        let mut near: Vec<(f64, usize)> = (0..self.truth.len())
            .filter(|&i| self.truth[i] == largest)
            .map(|i| {
                let x = data.row(i);
                (x.iter().zip(c).map(|(a, b)| (a - b) * (a - b)).sum(), i)
            })
            .collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut labels = self.truth.clone();
        for &(_, i) in near.iter().take(m) {
            labels[i] = k;
        }
        labels
    }
}

/// The leading eigenvector of the covariance of the `members` of `data`, by power
/// iteration (enough to cut a cluster across its longest direction).
fn principal_axis(data: &DenseData, members: &[usize]) -> Vec<f64> {
    let d = data.d();
    let m = members.len() as f64;
    let mut mean = vec![0.0; d];
    for &i in members {
        for (s, x) in mean.iter_mut().zip(data.row(i)) {
            *s += x / m;
        }
    }
    let mut cov = vec![0.0; d * d];
    for &i in members {
        let x = data.row(i);
        for a in 0..d {
            for b in 0..d {
                cov[a * d + b] += (x[a] - mean[a]) * (x[b] - mean[b]) / m;
            }
        }
    }
    let mut v: Vec<f64> = (0..d).map(|j| 1.0 + j as f64 * 0.1).collect();
    for _ in 0..200 {
        let w: Vec<f64> = (0..d)
            .map(|a| (0..d).map(|b| cov[a * d + b] * v[b]).sum())
            .collect();
        let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm == 0.0 {
            break;
        }
        v = w.into_iter().map(|x| x / norm).collect();
    }
    v
}

/// Where a chain starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartFrom {
    /// All points in one cluster.
    One,
    /// The command line's default start ([`Start::Auto`]).
    Default,
    /// Every true cluster split into random halves.
    RandomHalves,
    /// Every true cluster split into spatial halves.
    SpatialHalves,
    /// The true partition: a draw from the posterior (the data are drawn from the model), so
    /// an exact chain started there stays in the truth's region, and one that drifts away
    /// is not exact.
    Truth,
    /// The true partition with a small ball of [`PIECE`] points cut out of its largest
    /// cluster into a cluster of their own ([`Scenario::small_piece`]).
    SmallPiece,
}

/// Points of the ball that [`StartFrom::SmallPiece`] cuts out of the largest true cluster.
pub const PIECE: usize = 60;

/// The sampler's settings as the command line gives them for `n` points by default.
pub fn settings(kind: SamplerKind, n: usize) -> SamplerSettings {
    SamplerSettings {
        kind,
        moves: MoveSettings {
            proposals: MoveSettings::default_proposals_for(kind, n),
            ..MoveSettings::default()
        },
        temperatures: Vec::new(),
    }
}

/// What one chain did.
#[derive(Clone, Debug)]
pub struct ChainReport {
    /// Sweeps run.
    pub sweeps: u64,
    /// Log joint of the start.
    pub start_joint: f64,
    /// Clusters of the start.
    pub start_k: usize,
    /// Best log joint over the second half of the sweeps.
    pub best_late: f64,
    /// Clusters of that best state.
    pub k_best_late: usize,
    /// Mean log joint over the last quarter of the sweeps.
    pub mean_last_quarter: f64,
    /// Clusters after the last sweep.
    pub k_end: usize,
    /// First sweep whose log joint came within the tolerance of the truth's.
    pub first_within: Option<u64>,
    /// Wall-clock seconds of sampling (reported, never asserted).
    pub seconds: f64,
    /// The log joint and K at a few sweeps, for the report.
    pub path: Vec<(u64, usize, f64)>,
}

/// Runs `kind` on `scn` from `from` for `sweeps` sweeps on stream 0 of `seed`.
pub fn run_chain(
    scn: &Scenario,
    kind: SamplerKind,
    from: StartFrom,
    sweeps: u64,
    seed: u64,
) -> ChainReport {
    let kernel = &scn.kernel;
    let n = scn.spec.n;
    let partition = match from {
        StartFrom::One => Partition::single(kernel),
        StartFrom::Default => {
            Start::Auto
                .resolve(n, kind, None)
                .expect("auto needs no file")
                .partition(kernel, &scn.prior, seed, 0)
                .expect("auto start")
                .0
        }
        StartFrom::RandomHalves | StartFrom::SpatialHalves => {
            let labels = scn.over_split(from == StartFrom::RandomHalves, seed);
            Partition::from_labels(kernel, &labels).expect("one label per point")
        }
        StartFrom::Truth => {
            Partition::from_labels(kernel, &scn.truth).expect("one label per point")
        }
        StartFrom::SmallPiece => {
            Partition::from_labels(kernel, &scn.small_piece(PIECE)).expect("one label per point")
        }
    };
    let start_joint = partition.ln_joint(&scn.prior);
    let start_k = partition.n_clusters();
    let schedule = settings(kind, n)
        .schedule::<NormalWishart>(false, &scn.prior)
        .expect("default settings are valid");
    let state = State {
        partition,
        prior: scn.prior.clone(),
    };
    let mut chain = Chain::new(kernel, state, SeedPlan::new(seed).chain(0), schedule);
    let bar = scn.truth_joint - scn.tol;
    let half = sweeps / 2;
    let quarter_from = sweeps - sweeps / 4;
    let mut report = ChainReport {
        sweeps,
        start_joint,
        start_k,
        best_late: f64::NEG_INFINITY,
        k_best_late: 0,
        mean_last_quarter: 0.0,
        k_end: 0,
        first_within: None,
        seconds: 0.0,
        path: Vec::new(),
    };
    let clock = Instant::now();
    let mut last_sum = 0.0;
    let mut next_mark = 1;
    for _ in 0..sweeps {
        let rec = chain.sweep().expect("sweep");
        let s = rec.sweep;
        if rec.ln_joint >= bar && report.first_within.is_none() {
            report.first_within = Some(s);
        }
        if s > half && rec.ln_joint > report.best_late {
            report.best_late = rec.ln_joint;
            report.k_best_late = rec.n_clusters;
        }
        if s > quarter_from {
            last_sum += rec.ln_joint;
        }
        if s == next_mark || s == sweeps {
            report
                .path
                .push((s, rec.n_clusters, rec.ln_joint - scn.truth_joint));
            next_mark *= 2;
        }
        report.k_end = rec.n_clusters;
    }
    report.seconds = clock.elapsed().as_secs_f64();
    // The chain's statistics, updated point by point and block by block over every sweep,
    // still give the log joint that statistics computed afresh from its labels give.
    let kept = chain.state().partition.ln_joint(&scn.prior);
    let fresh = Partition::from_labels(kernel, &chain.state().partition.canonical_labels())
        .expect("one label per point")
        .ln_joint(&scn.prior);
    assert!(
        (kept - fresh).abs() <= 1e-9 * fresh.abs(),
        "{kind}: the chain's statistics give a log joint of {kept}, its labels {fresh}"
    );
    report.mean_last_quarter = last_sum / (sweeps - quarter_from) as f64;
    report
}

/// Sweeps given to `kind`: enough for a sampler that works to reach the truth's region from
/// one cluster on 10,000 points with room to spare (measured: the first sweep within the
/// tolerance is printed), few enough to keep the file within its time budget. Single-point
/// samplers get many cheap sweeps (a few ms each on 10,000 points); the split-merge and
/// tree-guided ones fewer, dearer ones (SAMS and Jain-Neal run `n / 100 = 100` proposals per
/// sweep, a Jain-Neal sweep takes about 2 s here, a SAMS sweep 0.15 s). The two sub-cluster
/// samplers get the same budget (300 sweeps, 0.02-0.04 s each here).
pub fn budget(kind: SamplerKind) -> u64 {
    match kind {
        SamplerKind::Gibbs
        | SamplerKind::Direct
        | SamplerKind::QuasiDirect
        | SamplerKind::QuasiCollapsed => 1500,
        SamplerKind::JainNeal => 10,
        SamplerKind::Sams => 100,
        SamplerKind::Tgmcmc | SamplerKind::TgmcmcPaper => 60,
        SamplerKind::Subcluster => 300,
        SamplerKind::SubclusterDpmm => 300,
    }
}

/// Runs `kind` on the scenario of `spec` from `from` with `sweeps` sweeps, prints the
/// report, and asserts that the best log joint over the second half is within the
/// tolerance of the truth's; from an over-split start, also that the best state has at most
/// two clusters more than the truth (the log joint already fails a chain that leaves one
/// true cluster in two pieces, hundreds of nats below; the count says it in clusters, and
/// leaves room for the two- and three-point clusters of the data, which the posterior may
/// place either way).
pub fn check_at(spec: SetSpec, kind: SamplerKind, from: StartFrom, sweeps: u64) {
    let scn = Scenario::get(spec);
    let rep = run_chain(scn, kind, from, sweeps, 1);
    let rel = |v: f64| v - scn.truth_joint;
    let path: Vec<String> = rep
        .path
        .iter()
        .map(|(s, k, v)| format!("{s}:K={k},{v:+.0}"))
        .collect();
    println!(
        "scale {} {:?} {} n={}: {} sweeps in {:.1} s; start K = {} ({:+.1}); best of 2nd half \
         {:+.1} (K = {}), mean of last quarter {:+.1}, final K = {}, true K = {}, first within \
         tol at {:?}; path {}\n  data: {}",
        kind,
        from,
        spec.name,
        spec.n,
        rep.sweeps,
        rep.seconds,
        rep.start_k,
        rel(rep.start_joint),
        rel(rep.best_late),
        rep.k_best_late,
        rel(rep.mean_last_quarter),
        rep.k_end,
        scn.k_true,
        rep.first_within,
        path.join(" "),
        scn.describe()
    );
    assert!(
        rep.best_late >= scn.truth_joint - scn.tol,
        "{kind} from {from:?} on {} (n = {}): best log joint over the second half of {} sweeps \
         is {:.1}, {:.1} below the truth's {:.1} (tolerance {:.1}); K = {} there, {} at the \
         end, true K = {}",
        spec.name,
        spec.n,
        rep.sweeps,
        rep.best_late,
        scn.truth_joint - rep.best_late,
        scn.truth_joint,
        scn.tol,
        rep.k_best_late,
        rep.k_end,
        scn.k_true
    );
    if from == StartFrom::Truth {
        assert!(
            (rep.mean_last_quarter - scn.truth_joint).abs() <= scn.tol,
            "{kind} from the truth on {} (n = {}): the mean log joint of the last quarter of {} \
             sweeps is {:+.1} from the truth's (tolerance {:.1}): the chain left the posterior it \
             started in",
            spec.name,
            spec.n,
            rep.sweeps,
            rep.mean_last_quarter - scn.truth_joint,
            scn.tol
        );
    }
    if matches!(
        from,
        StartFrom::RandomHalves | StartFrom::SpatialHalves | StartFrom::SmallPiece
    ) {
        assert!(
            rep.k_best_late <= scn.k_true + 2,
            "{kind} from {from:?} on {}: the best state of the second half has K = {}, true K \
             = {}",
            spec.name,
            rep.k_best_late,
            scn.k_true
        );
    }
}

/// [`check_at`] with the sampler's [`budget`].
pub fn check(spec: SetSpec, kind: SamplerKind, from: StartFrom) {
    check_at(spec, kind, from, budget(kind));
}

/// One test per sampler and start on a data set.
macro_rules! reach_truth {
    ($spec:expr, $from:expr; $($(#[$attr:meta])* $test:ident => $kind:ident),* $(,)?) => {
        $(
            $(#[$attr])*
            #[test]
            fn $test() {
                check($spec, SamplerKind::$kind, $from);
            }
        )*
    };
}

/// The data sets are what the module documentation says they are: 10,000 points, several
/// clusters, the separated set with almost no overlap and the overlapping one with some.
#[test]
fn scenarios_are_as_described() {
    for spec in [SEPARATED, OVERLAPPING] {
        let scn = Scenario::get(spec);
        println!("{}", scn.describe());
        assert!(scn.k_true >= 5, "{}", scn.describe());
    }
    assert!(Scenario::get(SEPARATED).bayes_error < 0.005);
    let over = Scenario::get(OVERLAPPING).bayes_error;
    assert!((0.01..0.2).contains(&over), "Bayes error {over}");
}

/// An over-split start is what it says: every true cluster of two points or more in two
/// pieces, each piece inside one true cluster, and far below the truth's log joint.
#[test]
fn over_split_starts_split_every_cluster() {
    let scn = Scenario::get(SEPARATED);
    for random in [false, true] {
        let labels = scn.over_split(random, 1);
        let part = Partition::from_labels(&scn.kernel, &labels).unwrap();
        let splittable = scn.sizes.iter().filter(|&&m| m >= 2).count();
        assert!(
            part.n_clusters() >= scn.k_true + splittable - 3,
            "random {random}"
        );
        for (i, &l) in labels.iter().enumerate() {
            assert_eq!(l / 2, scn.truth[i], "a piece crosses true clusters");
        }
        let below = scn.truth_joint - part.ln_joint(&scn.prior);
        assert!(
            below > 10.0 * scn.tol,
            "random {random}: only {below} below"
        );
    }
}

reach_truth!(SEPARATED, StartFrom::One;
    gibbs_separated_from_one => Gibbs,
    #[ignore = "fails today: after 10 sweeps (1,000 proposals, ~15 s) the best is 1755.7 nats \
        below the truth (K = 11); still 58.8 below (K = 12) after 100 sweeps"]
    jain_neal_separated_from_one => JainNeal,
    sams_separated_from_one => Sams,
    tgmcmc_separated_from_one => Tgmcmc,
    tgmcmc_paper_separated_from_one => TgmcmcPaper,
    subcluster_separated_from_one => Subcluster,
    subcluster_dpmm_separated_from_one => SubclusterDpmm,
    direct_separated_from_one => Direct,
    quasi_direct_separated_from_one => QuasiDirect,
    quasi_collapsed_separated_from_one => QuasiCollapsed,
);

reach_truth!(OVERLAPPING, StartFrom::One;
    gibbs_overlapping_from_one => Gibbs,
    #[ignore = "fails today: after 10 sweeps the best is 3889.0 nats below the truth (K = 9, true \
        7)"]
    jain_neal_overlapping_from_one => JainNeal,
    sams_overlapping_from_one => Sams,
    tgmcmc_overlapping_from_one => Tgmcmc,
    tgmcmc_paper_overlapping_from_one => TgmcmcPaper,
    subcluster_overlapping_from_one => Subcluster,
    subcluster_dpmm_overlapping_from_one => SubclusterDpmm,
    direct_overlapping_from_one => Direct,
    quasi_direct_overlapping_from_one => QuasiDirect,
    #[ignore = "fails today: after 1500 sweeps the best is 1663.6 nats below the truth (K = 7)"]
    quasi_collapsed_overlapping_from_one => QuasiCollapsed,
);

reach_truth!(OVERLAPPING, StartFrom::Default;
    gibbs_overlapping_from_default => Gibbs,
    #[ignore = "fails today: after 10 sweeps the best is 4421.1 nats below the truth (K = 7); \
        still 2845.8 below (K = 9) after 100 sweeps"]
    jain_neal_overlapping_from_default => JainNeal,
    sams_overlapping_from_default => Sams,
    tgmcmc_overlapping_from_default => Tgmcmc,
    tgmcmc_paper_overlapping_from_default => TgmcmcPaper,
    subcluster_overlapping_from_default => Subcluster,
    subcluster_dpmm_overlapping_from_default => SubclusterDpmm,
    direct_overlapping_from_default => Direct,
    quasi_direct_overlapping_from_default => QuasiDirect,
    quasi_collapsed_overlapping_from_default => QuasiCollapsed,
);

reach_truth!(SEPARATED, StartFrom::Truth;
    gibbs_stays_at_the_truth => Gibbs,
    jain_neal_stays_at_the_truth => JainNeal,
    sams_stays_at_the_truth => Sams,
    tgmcmc_stays_at_the_truth => Tgmcmc,
    tgmcmc_paper_stays_at_the_truth => TgmcmcPaper,
    subcluster_stays_at_the_truth => Subcluster,
    subcluster_dpmm_stays_at_the_truth => SubclusterDpmm,
    direct_stays_at_the_truth => Direct,
    quasi_direct_stays_at_the_truth => QuasiDirect,
    quasi_collapsed_stays_at_the_truth => QuasiCollapsed,
);

reach_truth!(SEPARATED, StartFrom::RandomHalves;
    gibbs_merges_random_halves => Gibbs,
    #[ignore = "fails today: after 10 sweeps the best is 453.6 nats below the truth (K = 16, true \
        11); within the tolerance from sweep 70 of 100"]
    jain_neal_merges_random_halves => JainNeal,
    sams_merges_random_halves => Sams,
    tgmcmc_merges_random_halves => Tgmcmc,
    tgmcmc_paper_merges_random_halves => TgmcmcPaper,
    subcluster_merges_random_halves => Subcluster,
    subcluster_dpmm_merges_random_halves => SubclusterDpmm,
    #[ignore = "fails today: after 1500 sweeps the best is 3691.9 nats below the truth (K = 13, \
        true 11)"]
    direct_merges_random_halves => Direct,
    #[ignore = "fails today: after 1500 sweeps the best is 2511.2 nats below the truth (K = 12, \
        true 11)"]
    quasi_direct_merges_random_halves => QuasiDirect,
    #[ignore = "fails today: after 1500 sweeps the best is 2769.0 nats below the truth (K = 13, \
        true 11)"]
    quasi_collapsed_merges_random_halves => QuasiCollapsed,
);

reach_truth!(SEPARATED, StartFrom::SpatialHalves;
    gibbs_merges_spatial_halves => Gibbs,
    #[ignore = "fails today: after 10 sweeps the best is 8089.1 nats below the truth (K = 25, \
        true 11); still 3215.1 below (K = 13) after 100 sweeps"]
    jain_neal_merges_spatial_halves => JainNeal,
    sams_merges_spatial_halves => Sams,
    tgmcmc_merges_spatial_halves => Tgmcmc,
    tgmcmc_paper_merges_spatial_halves => TgmcmcPaper,
    subcluster_merges_spatial_halves => Subcluster,
    #[ignore = "fails today: after 300 sweeps the best is 4823.9 nats below the truth (K = 16, \
        true 11)"]
    subcluster_dpmm_merges_spatial_halves => SubclusterDpmm,
    #[ignore = "fails today: after 1500 sweeps the best is 1087.0 nats below the truth (K = 12, \
        true 11)"]
    direct_merges_spatial_halves => Direct,
    #[ignore = "fails today: after 1500 sweeps the best is 518.9 nats below the truth (K = 13, \
        true 11)"]
    quasi_direct_merges_spatial_halves => QuasiDirect,
    #[ignore = "fails today: after 1500 sweeps the best is 3168.0 nats below the truth (K = 13, \
        true 11)"]
    quasi_collapsed_merges_spatial_halves => QuasiCollapsed,
);

/// [`SEPARATED`] at 100,000 points (its own seed: another partition and other clusters).
pub const SEPARATED_LARGE: SetSpec = SetSpec {
    name: "separated",
    n: 100_000,
    seed: 21,
    ..SEPARATED
};

/// [`OVERLAPPING`] at 100,000 points.
pub const OVERLAPPING_LARGE: SetSpec = SetSpec {
    name: "overlapping",
    n: 100_000,
    seed: 22,
    ..OVERLAPPING
};

/// [`OVERLAPPING`] at 1,000,000 points.
pub const OVERLAPPING_HUGE: SetSpec = SetSpec {
    name: "overlapping",
    n: 1_000_000,
    seed: 32,
    ..OVERLAPPING
};

reach_truth!(SEPARATED_LARGE, StartFrom::One;
    #[ignore = "long: 10^5 points"] large_gibbs_separated_from_one => Gibbs,
    #[ignore = "long: 10^5 points"] large_jain_neal_separated_from_one => JainNeal,
    #[ignore = "long: 10^5 points"] large_sams_separated_from_one => Sams,
    #[ignore = "long: 10^5 points"] large_tgmcmc_separated_from_one => Tgmcmc,
    #[ignore = "long: 10^5 points"] large_tgmcmc_paper_separated_from_one => TgmcmcPaper,
    #[ignore = "long: 10^5 points"] large_subcluster_separated_from_one => Subcluster,
    #[ignore = "long: 10^5 points; fails today: after 300 sweeps the best is 393.5 nats below the \
        truth (K = 13, true 12)"]
    large_subcluster_dpmm_separated_from_one => SubclusterDpmm,
    #[ignore = "long: 10^5 points"] large_direct_separated_from_one => Direct,
    #[ignore = "long: 10^5 points"] large_quasi_direct_separated_from_one => QuasiDirect,
    #[ignore = "long: 10^5 points"] large_quasi_collapsed_separated_from_one => QuasiCollapsed,
);

reach_truth!(OVERLAPPING_LARGE, StartFrom::One;
    #[ignore = "long: 10^5 points"] large_gibbs_overlapping_from_one => Gibbs,
    #[ignore = "long: 10^5 points"] large_jain_neal_overlapping_from_one => JainNeal,
    #[ignore = "long: 10^5 points"] large_sams_overlapping_from_one => Sams,
    #[ignore = "long: 10^5 points"] large_tgmcmc_overlapping_from_one => Tgmcmc,
    #[ignore = "long: 10^5 points"] large_tgmcmc_paper_overlapping_from_one => TgmcmcPaper,
    #[ignore = "long: 10^5 points; fails today: after 300 sweeps the best is 782.9 nats below the \
        truth (K = 3, true 9)"]
    large_subcluster_dpmm_overlapping_from_one => SubclusterDpmm,
    #[ignore = "long: 10^5 points"] large_direct_overlapping_from_one => Direct,
    #[ignore = "long: 10^5 points"] large_quasi_direct_overlapping_from_one => QuasiDirect,
    #[ignore = "long: 10^5 points"] large_quasi_collapsed_overlapping_from_one => QuasiCollapsed,
);

reach_truth!(OVERLAPPING_LARGE, StartFrom::Default;
    #[ignore = "long: 10^5 points"] large_gibbs_overlapping_from_default => Gibbs,
    #[ignore = "long: 10^5 points"] large_sams_overlapping_from_default => Sams,
);

reach_truth!(SEPARATED_LARGE, StartFrom::RandomHalves;
    #[ignore = "long: 10^5 points"] large_gibbs_merges_random_halves => Gibbs,
    #[ignore = "long: 10^5 points"] large_sams_merges_random_halves => Sams,
    #[ignore = "long: 10^5 points; fails today: after 300 sweeps the best is 62795 nats below \
        the truth (K = 14, true 12): the halves of the two largest clusters (36,000 and 34,000 \
        points), reshuffled by the restricted passes, are no longer random halves, and no \
        proposal reproduces their soft boundary (a merge whose reverse split is by fair coins \
        scored -65 to -970 nats; the allocation family stops at 16,384 points)"]
    large_subcluster_merges_random_halves => Subcluster,
);

reach_truth!(SEPARATED_LARGE, StartFrom::SpatialHalves;
    #[ignore = "long: 10^5 points; fails today: from 19164.3 to 59285.4 nats below the truth in \
        1500 sweeps (K = 15, true 12)"]
    large_gibbs_merges_spatial_halves => Gibbs,
    #[ignore = "long: 10^5 points; fails today: from 19164.3 to 60461.4 nats below the truth in \
        100 sweeps (K = 19, true 12)"]
    large_sams_merges_spatial_halves => Sams,
    #[ignore = "long: 10^5 points; fails today, as Gibbs and SAMS do: from 19164 to 56613 nats \
        below the truth in 300 sweeps (K = 14, true 12): the restricted passes blur the spatial \
        halves of the largest clusters into soft random ones, a state of far more partitions, \
        which no proposal merges back (see the random halves)"]
    large_subcluster_merges_spatial_halves => Subcluster,
);

reach_truth!(SEPARATED_LARGE, StartFrom::SmallPiece;
    large_subcluster_merges_a_small_piece => Subcluster,
);

/// The small-piece start is what it says: one cluster more than the truth, a piece of
/// [`PIECE`] points inside the largest true cluster, and far below the truth's log joint.
#[test]
fn the_small_piece_start_is_far_below_the_truth() {
    let scn = Scenario::get(SEPARATED_LARGE);
    let labels = scn.small_piece(PIECE);
    let part = Partition::from_labels(&scn.kernel, &labels).unwrap();
    assert_eq!(part.n_clusters(), scn.k_true + 1);
    let below = scn.truth_joint - part.ln_joint(&scn.prior);
    println!(
        "small piece: {below:.1} nats below the truth (tolerance {:.1})",
        scn.tol
    );
    assert!(below > 2.0 * scn.tol, "only {below:.1} below");
}

reach_truth!(OVERLAPPING_HUGE, StartFrom::One;
    #[ignore = "long: 10^6 points"] huge_subcluster_overlapping_from_one => Subcluster,
    #[ignore = "long: 10^6 points"] huge_subcluster_dpmm_overlapping_from_one => SubclusterDpmm,
);

reach_truth!(SEPARATED_LARGE, StartFrom::Truth;
    #[ignore = "long: 10^5 points"] large_gibbs_stays_at_the_truth => Gibbs,
    #[ignore = "long: 10^5 points"] large_sams_stays_at_the_truth => Sams,
    #[ignore = "long: 10^5 points"] large_subcluster_stays_at_the_truth => Subcluster,
    #[ignore = "long: 10^5 points"] large_subcluster_dpmm_stays_at_the_truth => SubclusterDpmm,
    #[ignore = "long: 10^5 points"] large_direct_stays_at_the_truth => Direct,
);

/// The exact sub-cluster sampler from one cluster on [`OVERLAPPING_LARGE`], with ten times
/// its budget. On this set the posterior's log joint is broad: an exact Gibbs chain started
/// at the true partition swings between 1,300 nats above and 5,200 below it within 1,500
/// sweeps (K from 7 to 14), so a chain must run long enough to visit the truth's region in
/// its second half. With 300 sweeps the best of the second half was 3,746 nats below; with
/// 3,000 it is above the truth (measured: +1,240, K = 7).
#[test]
#[ignore = "long: 10^5 points, 3,000 sub-cluster sweeps (about a minute)"]
fn large_subcluster_overlapping_from_one() {
    check_at(
        OVERLAPPING_LARGE,
        SamplerKind::Subcluster,
        StartFrom::One,
        3000,
    );
}

/// The same from the default start (one cluster for this sampler).
#[test]
#[ignore = "long: 10^5 points, 3,000 sub-cluster sweeps (about a minute)"]
fn large_subcluster_overlapping_from_default() {
    check_at(
        OVERLAPPING_LARGE,
        SamplerKind::Subcluster,
        StartFrom::Default,
        3000,
    );
}

/// The exact sub-cluster sampler from one cluster on the overlapping set with ten times its
/// budget: whether more sweeps merge its over-split state back (today they do, first at
/// sweep 361: slow, not stuck, at this size).
#[test]
#[ignore = "long: 1,000 sub-cluster sweeps (about a minute)"]
fn long_subcluster_overlapping_from_one() {
    check_at(OVERLAPPING, SamplerKind::Subcluster, StartFrom::One, 1000);
}

/// Jain-Neal from one cluster on the separated set with twenty times its budget.
#[test]
#[ignore = "long: 200 Jain-Neal sweeps (several minutes)"]
fn long_jain_neal_separated_from_one() {
    check_at(SEPARATED, SamplerKind::JainNeal, StartFrom::One, 200);
}

/// The separated set's settings with its partition drawn from Pitman-Yor's urn (`θ = 1`,
/// `σ = 0.25`: clusters of every size down to single points), the chains under that prior.
pub const SEPARATED_PY: SetSpec = SetSpec {
    name: "separated-py",
    prior: SetPrior::PitmanYor { sigma: 0.25 },
    seed: 13,
    ..SEPARATED
};

/// The separated set's settings with its partition drawn from the MFM (`γ = 1`,
/// `K - 1 ~ Poisson(5)`), the chains under that prior.
pub const SEPARATED_MFM: SetSpec = SetSpec {
    name: "separated-mfm",
    prior: SetPrior::Mfm {
        gamma: 1.0,
        lambda: 5.0,
    },
    seed: 14,
    ..SEPARATED
};

// The exact sub-cluster sampler under the Gibbs-type priors, on data drawn from them: from
// one cluster (its default start at this size) and from the truth, where it must stay.
reach_truth!(SEPARATED_PY, StartFrom::One;
    subcluster_pitman_yor_from_one => Subcluster,
);
reach_truth!(SEPARATED_PY, StartFrom::Truth;
    subcluster_pitman_yor_stays_at_the_truth => Subcluster,
);
reach_truth!(SEPARATED_MFM, StartFrom::One;
    subcluster_mfm_from_one => Subcluster,
);
reach_truth!(SEPARATED_MFM, StartFrom::Truth;
    subcluster_mfm_stays_at_the_truth => Subcluster,
);
