//! The default cluster scale by empirical Bayes ([`crate::model::NwDefaults::Pooled`]): a
//! short pilot run under the scaled defaults, then the kernel's scale set so that a
//! cluster's expected covariance is the pooled within-cluster covariance of the best
//! partition the pilot saw.
//!
//! **Why.** The scaled defaults make a cluster's expected covariance a share of the whole
//! data's covariance, which holds the spread *between* clusters as well as within them. With
//! an inverse-Wishart of `ν = d + 3 + d/2` degrees of freedom that shape is a strong prior:
//! clusters are expected to be elongated along the directions that separate the classes, so
//! the posterior joins classes (wine, 178 × 13: K = 4, ARI 0.41 with two cultivars joined)
//! and, where many small clusters fill the space, makes too few of them (the 10k set, 119
//! clusters: K ≈ 84). With the within-class covariance of the true labels as the scale, wine
//! gives ARI 0.80; the pilot estimates it without labels (wine 0.71, iris 0.56 → 0.83, the
//! 10k set 0.82 → 0.98, measured in `BENCHMARKS.md`). Pure noise keeps one cluster: its pilot
//! finds one, and the scale then stays the scaled default's.
//!
//! **Units.** The pilot runs under the scaled defaults, whose posterior over partitions does
//! not depend on the data's units (any invertible affine map), and the pooled covariance of a
//! partition transforms as the data's covariance does; so the chosen scale, and the run's
//! posterior, do not depend on the units either.
//!
//! **A subsample.** On more than [`PILOT_POINTS`] points the pilot runs on a uniform random
//! subsample of that many (without replacement, drawn from the seed, [`pilot_rows`]), under
//! the scaled defaults of the subsample, and the pooled covariance is that of the subsample's
//! best partition: a covariance is estimated as well from thousands of points as from
//! millions, while a pilot over all of them cost 494 s before the first sweep of a run on
//! 200,000 points. Which rows are taken does not depend on the data's values, so the units
//! argument below holds for the subsample as for the whole.
//!
//! **Reproducibility.** The pilot's chains draw from their own streams of the run's seed
//! (chain indices from [`PILOT_STREAM`]), and the subsample from one more
//! ([`PILOT_STREAM`] - 1), so the run's chains are those of a run without a
//! pilot under the chosen scale; the choice depends on the seed only, not on the thread
//! count. A run records the chosen scale in its model (`nw_psi`, with `pilot`), so that
//! resuming, predicting and summarising use it without a new pilot.
//!
//! **The kernel.** Where the kernel was not asked for (nor a kernel hyperparameter given),
//! the pilot runs for the diagonal kernel as well and keeps the kernel whose settled model
//! gives its own best partition the higher log joint (empirical Bayes over the kernel; see
//! `weighs_kernels`): clusters with too few points for a full covariance get the diagonal
//! kernel, correlated data keep the full one. Per-column scales and shifts move both log
//! joints by the same Jacobian, so the choice does not depend on the units; a rotation can
//! change it.
//!
//! **The start.** The chosen kernel's best partition is kept, carried to every point of a
//! subsampled run by the settled model's predictive (`carried_to_all`), as
//! [`Model::pilot_partition`]: the exact sub-cluster sampler's chains start there under
//! `--init auto` ([`crate::run::spec::Start::resolve`]).
//!
//! **Many dimensions.** A sweep of the full kernel costs O(d²) a point, so above
//! [`FULL_PILOT_DIMENSIONS`] its pilot runs fewer sweeps, shrinking as `1/d²`
//! ([`full_pilot_sweeps`]), and where the kernels are weighed the diagonal kernel's pilot runs
//! first and the full kernel's chains start from its best partition: the full kernel's pilot
//! then costs about what it costs at 64 dimensions.
//!
//! **Stopping early.** On [`ROUND_POINTS`] points or more the pilot's chains are compared
//! after a quarter and a half of their sweeps, and the pilot stops there when both chains'
//! best states of the round's second half are one and the same partition ([`best_partition`]):
//! where the posterior sits on one partition, as on well-separated clusters, further sweeps
//! would find it again. Where they differ the pilot runs on, and its last round is the whole
//! pilot's second half, so it finds what it found without rounds.
//!
//! Cost: [`PILOT_CHAINS`] chains of [`PILOT_SWEEPS`] sweeps of SAMS (in parallel) over
//! `m = min(N, PILOT_POINTS)` points ([`full_pilot_sweeps`] for the full kernel), O(m d²)
//! for the pooled covariance, one kernel construction over the `N` points and, on a
//! subsample, O(N) to draw it and O(m d) to copy it; twice the pilot (the second at the
//! diagonal kernel's O(m d) per sweep) when the kernel is weighed; on a subsample, `N K`
//! predictive evaluations to carry the best partition to every point. So the pilot's time is
//! bounded at any `N` and, but for the floor of [`MIN_PILOT_SWEEPS`], at any `d`: 6 s on two
//! cores for 10,000 points in 3 dimensions in 8 clusters, both kernels.

pub mod mixed;

use super::spec::{MoveSettings, SamplerSettings};
use crate::data::Dataset;
use crate::data::DenseData;
use crate::error::Result;
use crate::kernel::{ConjugateKernel, HyperKernel, ParametricKernel};
use crate::model::{AnyKernel, KernelKind, Model, ModelSpec, NwDefaults, PilotScale};
use crate::prior::Prior;
use crate::run::executor::{Executor, Handler, Stop, StopFlag, StopReason};
use crate::run::start::Resolved;
use crate::run::{Chain, SweepRecord};
use crate::sampler::State;
use crate::sva::SvaKernel;
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Sweeps of each pilot chain. The best partition is sought in the second half.
pub const PILOT_SWEEPS: u64 = 200;

/// Pilot chains, run in parallel.
pub const PILOT_CHAINS: usize = 2;

/// The most dimensions at which the full-covariance kernel's pilot runs all
/// [`PILOT_SWEEPS`]; above it the pilot is bounded in `d` as it is in `n`
/// ([`full_pilot_sweeps`]). Every shared real set (up to 64 varying columns) stays below it.
pub const FULL_PILOT_DIMENSIONS: usize = 64;

/// The fewest sweeps of a full-covariance kernel's pilot, however many the dimensions.
pub const MIN_PILOT_SWEEPS: u64 = 10;

/// Sweeps of each chain of the full-covariance kernel's pilot in `d` dimensions:
/// [`PILOT_SWEEPS`] up to [`FULL_PILOT_DIMENSIONS`], then that many times
/// `(FULL_PILOT_DIMENSIONS / d)²` (rounded up), at least [`MIN_PILOT_SWEEPS`].
///
/// **Why.** A sweep of the full kernel costs O(d²) a point where the diagonal kernel's costs
/// O(d): on 100,000 × 128 points in 80 clusters the full kernel's 200 sweeps over the
/// pilot's 10,000 points took two thirds of the default run, only to lose to the diagonal
/// kernel. With the sweeps shrinking as `1/d²`, the full kernel's pilot costs at most what
/// it costs at 64 dimensions (until the floor), and where the kernels are weighed it starts
/// from the diagonal kernel's best partition ([`settle`]), so that its fewer sweeps refine a
/// good partition rather than search from a poor one. Cost: none.
pub fn full_pilot_sweeps(d: usize) -> u64 {
    if d <= FULL_PILOT_DIMENSIONS {
        return PILOT_SWEEPS;
    }
    let share = (FULL_PILOT_DIMENSIONS as f64 / d as f64).powi(2);
    ((PILOT_SWEEPS as f64 * share).ceil() as u64).max(MIN_PILOT_SWEEPS)
}

/// The first chain index of the pilot's random streams: far above any run's chain numbers,
/// so a pilot never shares a stream with a chain of the run. The subsample is drawn from the
/// stream below it.
pub const PILOT_STREAM: u64 = 1 << 62;

/// The most points a pilot runs on: larger data are subsampled to this many
/// ([`pilot_rows`]). With clusters of a few hundred points among them, ten thousand points
/// estimate a pooled covariance to a few per cent, and data sets up to this size (the 10k
/// set, 119 clusters) keep a pilot over all their points.
pub const PILOT_POINTS: usize = 10_000;

/// The rows a pilot of seed `seed` runs on for `n` points: `None` (all of them) up to
/// [`PILOT_POINTS`], else a uniform random sample of [`PILOT_POINTS`] distinct rows in
/// increasing order, drawn by Floyd's algorithm (Bentley and Floyd 1987) from the stream
/// [`PILOT_STREAM`] - 1 of `seed`: the same rows for a seed and `n` on any machine and any
/// thread count. Cost: O(m log m) for `m` = [`PILOT_POINTS`] rows, independent of `n`.
pub fn pilot_rows(n: usize, seed: u64) -> Option<Vec<usize>> {
    if n <= PILOT_POINTS {
        return None;
    }
    let mut rng = crate::rng::SeedPlan::new(seed).chain(PILOT_STREAM - 1);
    let mut rows = std::collections::BTreeSet::new();
    // Floyd: for j = n - m, ..., n - 1 draw t in 0..=j and take t, or j if t is taken; every
    // m-subset is equally likely.
    for j in n - PILOT_POINTS..n {
        let t = crate::rng::uniform_index(&mut rng, j + 1);
        if !rows.insert(t) {
            rows.insert(j);
        }
    }
    Some(rows.into_iter().collect())
}

/// The fewest degrees of freedom, `n - K` per `d + 1` dimensions, of the pooled covariance
/// that sets the scale: with fewer (a handful of points, or clusters of one or two points)
/// the estimate is too noisy to be better than the scaled default, or singular.
pub(super) const MIN_DOF_PER_DIM: usize = 5;

/// The smallest variance, in any direction, of the pilot's scale relative to the scaled
/// default's (the smallest eigenvalue of `Ψ₀⁻¹ Ψ`, unit-free); below it (clusters flat in a
/// direction: a column constant within them, or columns that move together) the scaled
/// default stays, since a near-singular scale makes every cluster's predictive degenerate.
const MIN_RELATIVE_VARIANCE: f64 = 1e-6;

/// How many nats per point the diagonal kernel's log joint must exceed the full kernel's by
/// for the pilot to take it: a decisive margin, so that the default changes where the full
/// kernel is far off (clusters with too few points for a full covariance: 7.7 nats per point
/// on six clusters of 167 points in 50 dimensions), not on differences that the pilots' own
/// noise can flip (3 nats on 40 points in 2 dimensions, where the two pilots found 3 and 4
/// clusters).
const MIN_EVIDENCE_PER_POINT: f64 = 1.0;

/// What [`settle`] did.
#[derive(Debug)]
pub enum Settled {
    /// The model with the pilot's scale (for the product kernel: with its choice of how to
    /// model the real columns, [`mixed`]).
    Scaled(Box<Model>),
    /// No pilot was due (the model does not ask for one, or gives its own scale).
    NotDue,
    /// The pilot ran, and the scaled default stays, for the reason given (one line).
    Kept(String),
    /// The flag stopped the pilot.
    Interrupted,
}

/// Whether `model` asks for a pilot: [`NwDefaults::Pooled`], a Normal-Wishart or diagonal
/// kernel, no scale given and none chosen yet; or the product kernel's choice of how to model
/// the real columns ([`mixed::is_due`]).
pub fn is_due(model: &Model) -> bool {
    mixed::is_due(model) || scale_is_due(model)
}

/// Whether `model` asks for the pilot that sets the cluster scale (see [`is_due`]).
fn scale_is_due(model: &Model) -> bool {
    let m = &model.spec;
    m.nw_defaults == NwDefaults::Pooled
        && m.nw_psi.is_none()
        && m.pilot.is_none()
        && matches!(m.kernel, Some(KernelKind::Nw | KernelKind::Diag))
}

/// `model` with the cluster scale a pilot run of seed `seed` chooses, or unchanged when no
/// pilot is due or the scaled default stays: what a new run over `model` should use
/// ([`settle`] without interruption, for callers that need no reason).
pub fn settled(model: Model, seed: u64) -> Result<Model> {
    Ok(match settle(&model, seed, None)? {
        Settled::Scaled(m) => *m,
        Settled::NotDue | Settled::Kept(_) | Settled::Interrupted => model,
    })
}

/// The model a resumed run uses, for a front end that rebuilds it from its own settings rather
/// than from the run's record: `model` with the kernel and the cluster scale that the run's
/// pilot chose, as `record` (the run's recorded model) holds them; `model` unchanged when no
/// pilot chose them. Cost: one kernel construction (two when the pilot chose the diagonal
/// kernel, over the same points).
pub fn recorded(model: Model, record: &ModelSpec) -> Result<Model> {
    if mixed::is_due(&model) {
        return mixed::recorded(model, record);
    }
    let (Some(psi), Some(scale)) = (&record.nw_psi, record.pilot) else {
        return Ok(model);
    };
    if !scale_is_due(&model) {
        return Ok(model);
    }
    // The pilot chose the diagonal kernel where the model has the Normal-Wishart one.
    let model = match record.kernel {
        Some(KernelKind::Diag) => diagonal_of(&model).transpose()?.unwrap_or(model),
        _ => model,
    };
    model.with_pilot_scale(psi.clone(), scale)
}

/// Runs the pilot of a new run of `model` with seed `seed` (see the module documentation)
/// and returns the model with the scale it chose, or why the scaled default stays. `stop`,
/// when set, ends the pilot (Ctrl-C). Cost: see the module documentation.
pub fn settle(model: &Model, seed: u64, stop: Option<&AtomicBool>) -> Result<Settled> {
    if mixed::is_due(model) {
        return mixed::settle(model, seed, stop);
    }
    if !scale_is_due(model) {
        return Ok(Settled::NotDue);
    }
    let Some(rows) = pilot_rows(model.n_points(), seed) else {
        let chosen = settle_on(model, weighs_kernels(model), seed, stop)?;
        return Ok(match (chosen.settled, chosen.labels) {
            (Settled::Scaled(mut m), Some(labels)) => {
                m.pilot_partition = Some(labels.iter().map(|&z| z as u32).collect());
                Settled::Scaled(m)
            }
            (other, _) => other,
        });
    };
    let sub = subsample(model, &rows)?;
    let chosen = settle_on(&sub, weighs_kernels(model), seed, stop)?;
    let chosen_labels = chosen.labels;
    Ok(match chosen.settled {
        // The scale (and kernel) chosen on the subsample, carried over to all the points.
        Settled::Scaled(chosen_model) => {
            let chosen = chosen_model;
            let (Some(psi), Some(mut scale)) = (chosen.spec.nw_psi.clone(), chosen.spec.pilot)
            else {
                unreachable!("a pilot's model records its scale");
            };
            scale.points = Some(rows.len());
            // The diagonal kernel over all the points only when it was chosen (it shares the
            // points and, with the same ξ, their centred copy with `model`'s kernel).
            let diagonal = match chosen.spec.kernel {
                Some(KernelKind::Diag) => diagonal_of(model).transpose()?,
                _ => None,
            };
            let target = diagonal.as_ref().unwrap_or(model);
            let mut settled = target.with_pilot_scale(psi, scale)?;
            settled.kernel_note = chosen.kernel_note.clone().or(settled.kernel_note);
            if let Some(labels) = &chosen_labels {
                settled.pilot_partition = Some(carried_to_all(&settled, &rows, labels)?);
            }
            Settled::Scaled(Box::new(settled))
        }
        other => other,
    })
}

/// `model`'s requested settings, with its kernel, over the rows `rows` of its data: the model
/// a subsampled pilot runs on. Cost: O(m d) to copy the rows, and a kernel construction.
fn subsample(model: &Model, rows: &[usize]) -> Result<Model> {
    let x = match &model.kernel {
        AnyKernel::Nw(k) => k.data(),
        AnyKernel::Diag(k) => k.data(),
        _ => unreachable!("a pilot is due for the kernels on real vectors only"),
    };
    let mut values = Vec::with_capacity(rows.len() * x.d());
    for &i in rows {
        values.extend_from_slice(x.row(i));
    }
    // The kernel the whole data set settled on (a choice by `n` and `d` that a subsample
    // could make otherwise); whether to weigh the diagonal one is decided on the whole model.
    let spec = ModelSpec {
        kernel: model.spec.kernel,
        ..model.requested.clone()
    };
    Model::build_all_columns(
        &spec,
        Dataset::Dense(DenseData::new(rows.len(), x.d(), values)?),
    )
}

/// What [`settle_on`] chose, with the best partition of the chosen kernel's pilot.
struct Chosen {
    settled: Settled,
    labels: Option<Vec<usize>>,
}

/// [`settle`] on `model`'s own points (all of a run's, or its pilot's subsample), weighing
/// the diagonal kernel against the full one when `weigh`. Above [`FULL_PILOT_DIMENSIONS`]
/// the diagonal kernel's pilot runs first and the full kernel's fewer sweeps
/// ([`full_pilot_sweeps`]) start from its best partition; below, the full kernel's pilot runs
/// first, from the default start, as it did before the bound.
fn settle_on(model: &Model, weigh: bool, seed: u64, stop: Option<&AtomicBool>) -> Result<Chosen> {
    let alone = |o: Outcome| Chosen {
        settled: o.settled,
        labels: o.labels,
    };
    let d = dimensions(model);
    let sweeps = full_pilot_sweeps(d);
    let diagonal = if weigh { diagonal_of(model) } else { None };
    let Some(diagonal) = diagonal else {
        // The full kernel alone, or the diagonal one asked for (its sweeps cost O(d)).
        let own = match model.kernel {
            AnyKernel::Nw(_) => sweeps,
            _ => PILOT_SWEEPS,
        };
        return Ok(alone(settle_kernel(model, Plan::sweeps(own), seed, stop)?));
    };
    let diagonal = diagonal?;
    let (full, other) = if diagonal_first(d) {
        let other = settle_kernel(&diagonal, Plan::sweeps(PILOT_SWEEPS), seed, stop)?;
        let Some(start) = &other.labels else {
            return Ok(alone(other));
        };
        let plan = Plan {
            sweeps,
            start: Some(start),
        };
        (settle_kernel(model, plan, seed, stop)?, other)
    } else {
        // Independent pilots on their own streams, so run at once: on more cores than the
        // pilot's chains the second costs no wall time.
        let (full, other) = rayon::join(
            || settle_kernel(model, Plan::sweeps(sweeps), seed, stop),
            || settle_kernel(&diagonal, Plan::sweeps(PILOT_SWEEPS), seed, stop),
        );
        let full = full?;
        if matches!(full.settled, Settled::Interrupted) {
            return Ok(alone(full));
        }
        (full, other?)
    };
    let (other_labels, full_labels) = (other.labels, full.labels);
    let mut labels = full_labels;
    let settled = match (other.settled, other.score, full.score) {
        (Settled::Interrupted, _, _) => Settled::Interrupted,
        (Settled::Scaled(m), Some(g), Some(f))
            if g - f > MIN_EVIDENCE_PER_POINT * model.n_points() as f64 =>
        {
            let by = (g - f).round() as i64;
            let mut m = *m;
            for spec in [&mut m.spec, &mut m.requested] {
                if let Some(p) = spec.pilot.as_mut() {
                    p.diagonal_by = Some(by);
                }
            }
            m.kernel_note = Some(format!(
                "using the diagonal kernel (`kernel` diag): at the pilot's best partitions its \
                 log joint is {by} nats above the full covariance kernel's (give `kernel` nw to \
                 insist)"
            ));
            labels = other_labels;
            Settled::Scaled(Box::new(m))
        }
        _ => full.settled,
    };
    Ok(Chosen { settled, labels })
}

/// The pilot's chains and sweeps for `model` in words ("2 chains of 200 sweeps", or with the
/// full-covariance kernel's fewer sweeps above [`FULL_PILOT_DIMENSIONS`]), for a front end's
/// progress line. Cost: none.
pub fn sweeps_line(model: &Model) -> String {
    let d = dimensions(model);
    let full = full_pilot_sweeps(d);
    let chains = format!("{PILOT_CHAINS} chains of up to");
    match &model.kernel {
        AnyKernel::Nw(_) if diagonal_first(d) && weighs_kernels(model) => format!(
            "{chains} {PILOT_SWEEPS} sweeps for the diagonal kernel, then {full} for the full \
             covariance kernel from its best partition"
        ),
        AnyKernel::Nw(_) => format!("{chains} {full} sweeps"),
        _ => format!("{chains} {PILOT_SWEEPS} sweeps"),
    }
}

/// Whether, the kernels being weighed in `d` dimensions, the diagonal kernel's pilot runs
/// first and the full kernel's shorter one starts from its best partition ([`settle_on`]).
fn diagonal_first(d: usize) -> bool {
    d > FULL_PILOT_DIMENSIONS
}

/// The dimensions of the points of `model`'s kernel on real vectors (0 for another kernel).
fn dimensions(model: &Model) -> usize {
    match &model.kernel {
        AnyKernel::Nw(k) => k.data().d(),
        AnyKernel::Diag(k) => k.data().d(),
        _ => 0,
    }
}

/// `model`'s settings over its data with the diagonal kernel, when its kernel is the
/// Normal-Wishart (`None` otherwise), with `model`'s fingerprint and columns (the kernel's
/// data are the columns `model` keeps). Cost: the kernel's construction over the same
/// (shared) points.
fn diagonal_of(model: &Model) -> Option<Result<Model>> {
    let AnyKernel::Nw(k) = &model.kernel else {
        return None;
    };
    let spec = ModelSpec {
        kernel: Some(KernelKind::Diag),
        ..model.requested.clone()
    };
    let built = Model::build_all_columns(&spec, Dataset::Dense(k.data().as_ref().clone()));
    Some(built.map(|m| Model {
        fingerprint: model.fingerprint.clone(),
        columns: model.columns.clone(),
        ..m
    }))
}

/// Whether the pilot weighs the diagonal kernel against the full one: the kernel was not
/// asked for and is the Normal-Wishart, and no kernel hyperparameter or hyperprior was given
/// (they mean different things to the two kernels).
///
/// **Why.** With few points per cluster for a full covariance (1,000 points in 6 clusters in
/// 50 dimensions: 1,275 covariance parameters per cluster of 167 points) the full kernel
/// joins clusters that the diagonal one separates exactly; both kernels' log joints are
/// densities of the same data, so the one with the higher evidence at its pilot's best
/// partition is the better model of the data (empirical Bayes over the kernel). On correlated
/// data the full kernel wins by far (iris, wine, breast cancer: by 59 to 13,000 nats).
fn weighs_kernels(model: &Model) -> bool {
    let r = &model.requested;
    r.kernel.is_none()
        && matches!(model.kernel, AnyKernel::Nw(_))
        && r.nw_xi.is_none()
        && r.nw_r.is_none()
        && r.nw_nu.is_none()
        && !r.kernel_hyperpriors
}

/// What one kernel's pilot settled, and the log joint of its best partition under the model
/// it settled on (`None` when interrupted).
struct Outcome {
    settled: Settled,
    score: Option<f64>,
    /// The pilot's best partition (canonical labels), `None` when interrupted.
    labels: Option<Vec<usize>>,
}

/// How long a pilot's chains run, and where they start.
#[derive(Clone, Copy)]
pub(super) struct Plan<'a> {
    /// Sweeps of each chain.
    pub sweeps: u64,
    /// The start (labels, one per point), or `None` for the default start.
    pub start: Option<&'a [usize]>,
}

impl Plan<'_> {
    /// `sweeps` sweeps from the default start.
    pub fn sweeps(sweeps: u64) -> Self {
        Plan {
            sweeps,
            start: None,
        }
    }
}

/// [`settle`] for the model's own kernel: the pilot run by `plan`, the pooled scale and its
/// checks.
fn settle_kernel(
    model: &Model,
    plan: Plan<'_>,
    seed: u64,
    stop: Option<&AtomicBool>,
) -> Result<Outcome> {
    let found = match &model.kernel {
        AnyKernel::Nw(k) => best_partition(k, &model.prior, model, plan, seed, stop)?,
        AnyKernel::Diag(k) => best_partition(k, &model.prior, model, plan, seed, stop)?,
        _ => {
            return Ok(Outcome {
                settled: Settled::NotDue,
                score: None,
                labels: None,
            })
        }
    };
    let Some((labels, sweeps)) = found else {
        return Ok(Outcome {
            settled: Settled::Interrupted,
            score: None,
            labels: None,
        });
    };
    let settled = settle_labels(model, &labels, sweeps)?;
    let scored = match &settled {
        Settled::Scaled(m) => m.as_ref(),
        _ => model,
    };
    let score = crate::with_kernel!(&scored.kernel, |k| {
        crate::partition::Partition::from_labels(k, &labels)?.ln_joint(&scored.prior)
    });
    Ok(Outcome {
        settled,
        score: Some(score),
        labels: Some(labels),
    })
}

/// The pilot's best partition `labels` of the rows `rows` carried to every point of
/// `model`: each point joins the cluster with the highest `ln n_c + ln p(x | X_c)`, `X_c` the
/// rows of cluster `c` (the subsample's own points among them, so they may move), under the
/// model's settled kernel. Where the clusters are many, the exact sub-cluster sampler would
/// take as many splits to find them from one cluster (100,000 points in 128 dimensions in 80
/// clusters: 33 after 100 sweeps), where a pilot on 10,000 of the points finds nearly all.
/// Deterministic, and independent of the thread count. Cost: `n K` predictive evaluations
/// in parallel (O(d²) each for the Normal-Wishart kernel, O(d) for the diagonal one).
fn carried_to_all(model: &Model, rows: &[usize], labels: &[usize]) -> Result<Arc<[u32]>> {
    let clusters = labels.iter().max().map_or(0, |m| m + 1);
    crate::with_kernel!(&model.kernel, |k| {
        let mut members = vec![Vec::new(); clusters];
        for (&i, &z) in rows.iter().zip(labels) {
            members[z].push(i);
        }
        let stats: Vec<_> = members
            .iter()
            .map(|m| (k.stat_of(m), (m.len() as f64).ln()))
            .collect();
        let carried: Vec<u32> = (0..k.n_points())
            .into_par_iter()
            .map(|i| {
                let mut best = (f64::NEG_INFINITY, 0);
                for (c, (stat, ln_n)) in stats.iter().enumerate() {
                    let score = ln_n + k.ln_predictive(i, stat);
                    if score > best.0 {
                        best = (score, c as u32);
                    }
                }
                best.1
            })
            .collect();
        Ok(carried.into())
    })
}

/// The model with the scale pooled from the pilot's best partition `labels` (found by chains
/// of `sweeps` sweeps), or why the scaled default stays.
fn settle_labels(model: &Model, labels: &[usize], sweeps: u64) -> Result<Settled> {
    let clusters = labels.iter().max().map_or(0, |m| m + 1);
    let pilot = PilotScale {
        sweeps,
        chains: PILOT_CHAINS,
        clusters,
        diagonal_by: None,
        points: None,
    };
    let kept = |why: &str| {
        Ok(Settled::Kept(format!(
            "the pilot run's best partition has {why}: the cluster scale stays the scaled \
             default (a share of the data's covariance)"
        )))
    };
    if clusters < 2 {
        return kept("one cluster");
    }
    // What the scale is made from: the data, the degrees of freedom, the scaled default's
    // scale (the unit of the flatness check), and whether the kernel is the diagonal one.
    let (x, nu, default, diagonal) = match &model.kernel {
        AnyKernel::Nw(k) => (k.data(), k.hyper().nu(), k.hyper().psi(), false),
        AnyKernel::Diag(k) => (k.data(), k.hyper().nu(), k.hyper().psi(), true),
        _ => return Ok(Settled::NotDue),
    };
    let d = x.d();
    if x.n() < clusters + MIN_DOF_PER_DIM * (d + 1) {
        return kept(&format!(
            "{clusters} clusters, too few points beyond one per cluster to estimate their \
             covariance ({} in {d} dimensions)",
            x.n()
        ));
    }
    let within = pooled_within(x, labels, clusters).expect("n > clusters was checked");
    let psi: Vec<f64> = if diagonal {
        // The diagonal kernel's expected variance of dimension j is ψ_j / (ν - 2).
        (0..d).map(|a| (nu - 2.0) * within[a * d + a]).collect()
    } else {
        // The Normal-Wishart's expected covariance is Ψ / (ν - d - 1).
        within.iter().map(|w| (nu - d as f64 - 1.0) * w).collect()
    };
    let smallest = if diagonal {
        psi.iter()
            .zip(default)
            .map(|(p, q)| p / q)
            .fold(f64::INFINITY, f64::min)
    } else {
        smallest_relative_eigenvalue(&psi, default, d)
    };
    // NaN (a scale that is not finite) fails too.
    if smallest.is_nan() || smallest < MIN_RELATIVE_VARIANCE {
        return kept(&format!(
            "{clusters} clusters that are flat in some direction (variance {smallest:.1e} of \
             the default's)"
        ));
    }
    Ok(Settled::Scaled(Box::new(
        model.with_pilot_scale(psi, pilot)?,
    )))
}

/// The fewest points on which a pilot's chains are compared before their last sweep
/// ([`best_partition`]). Below it a pilot costs little, and its chains, making few
/// proposals a sweep (`n / 100`), can agree on a partition they would leave later: on 40
/// points in 2-D both held the same 4 clusters at 50 sweeps where the whole pilot's best
/// partition has 3.
pub const ROUND_POINTS: usize = 5_000;

/// The sweeps at which a pilot of `sweeps` sweeps per chain over `n` points compares its
/// chains: from [`ROUND_POINTS`] points a quarter and a half of them (those of at least
/// [`MIN_PILOT_SWEEPS`]), then all; on fewer points all only.
fn round_ends(sweeps: u64, n: usize) -> Vec<u64> {
    let early = if n >= ROUND_POINTS {
        vec![sweeps / 4, sweeps / 2]
    } else {
        Vec::new()
    };
    let mut ends: Vec<u64> = early
        .into_iter()
        .filter(|&e| e >= MIN_PILOT_SWEEPS)
        .collect();
    ends.push(sweeps);
    ends.dedup();
    ends
}

/// The highest-log-joint partition (canonical labels) of the second half of
/// [`PILOT_CHAINS`] chains of the default sampler run by `plan` (its sweeps, from its start
/// or the default one), with the sweeps each chain ran, or `None` if `stop` ended them. Ties
/// go to the lower chain, so the result does not depend on the order the chains finish in.
///
/// **Rounds.** On at least [`ROUND_POINTS`] points the chains run to a quarter of the plan's
/// sweeps, then a half, then all of them ([`round_ends`]); after each round but the last, if
/// every chain's best state of the
/// round's second half (sweeps after half the round's end) is one and the same partition, the
/// pilot stops there: on data whose posterior sits on one partition (well-separated
/// clusters) both chains find it within the first rounds, and further sweeps would only
/// find it again. Otherwise the last round's second half is the plan's, so the pilot finds
/// what a pilot without rounds finds. The decision reads the chains' states only, so it is
/// the same on any number of threads.
pub(super) fn best_partition<K: SvaKernel + HyperKernel + ParametricKernel + 'static>(
    kernel: &K,
    prior: &Prior,
    model: &Model,
    plan: Plan<'_>,
    seed: u64,
    stop: Option<&AtomicBool>,
) -> Result<Option<(Vec<usize>, u64)>> {
    let n = kernel.n_points();
    let settings = SamplerSettings {
        moves: MoveSettings {
            proposals: MoveSettings::default_proposals(n),
            ..MoveSettings::default()
        },
        ..SamplerSettings::default()
    };
    let mut chains = (0..PILOT_CHAINS as u64)
        .map(|c| {
            let chain_index = PILOT_STREAM + c;
            let moves = settings.schedule::<K>(model.spec.resamples_hyper(), prior)?;
            let partition = match plan.start {
                Some(labels) => crate::partition::Partition::from_labels(kernel, labels)?,
                None => {
                    Resolved::Auto
                        .partition(kernel, prior, seed, chain_index)?
                        .0
                }
            };
            let state = State {
                partition,
                prior: prior.clone(),
            };
            let rng = crate::rng::SeedPlan::new(seed).chain(chain_index);
            Ok(Chain::new(kernel, state, rng, moves))
        })
        .collect::<Result<Vec<_>>>()?;
    // Every chain to `end` sweeps: each one's best state after `end / 2`, or `None` if
    // `stop` ended them.
    let mut run_to = |end: u64| -> Result<Option<Vec<Found>>> {
        let results: Vec<Result<Best>> = chains
            .par_iter_mut()
            .map(|chain| {
                let mut budget = super::spec::Budget::Sweeps(end);
                let mut best = KeepBest {
                    after: end / 2,
                    best: None,
                };
                let never = AtomicBool::new(false);
                let mut flag = StopFlag {
                    flag: stop.unwrap_or(&never),
                    reason: StopReason::Interrupted,
                };
                let stopped = Executor::new(chain)
                    .with(&mut flag)
                    .with(&mut budget)
                    .with(&mut best)
                    .run()?;
                Ok(match stopped {
                    Stop::Budget => best.best,
                    _ => None,
                })
            })
            .collect();
        results.into_iter().collect()
    };
    let ends = round_ends(plan.sweeps, n);
    let (&last, early) = ends.split_last().expect("a pilot runs its plan's sweeps");
    for &end in early {
        let Some(bests) = run_to(end)? else {
            return Ok(None);
        };
        if bests.windows(2).all(|w| w[0].1 == w[1].1) {
            return Ok(Some((highest(bests), end)));
        }
    }
    Ok(run_to(last)?.map(|bests| (highest(bests), last)))
}

/// The partition of the highest log joint among the chains' bests, the lower chain on ties.
fn highest(bests: Vec<Found>) -> Vec<usize> {
    let mut best: Best = None;
    for (ln_joint, labels) in bests {
        if best.as_ref().is_none_or(|(b, _)| ln_joint > *b) {
            best = Some((ln_joint, labels));
        }
    }
    best.map(|(_, labels)| labels).expect("a pilot has chains")
}

/// A log joint and its partition (canonical labels).
type Found = (f64, Vec<usize>);

/// The best log joint of a chain's round and its partition, if any.
type Best = Option<Found>;

/// Keeps the highest-log-joint state of a chain's second half.
struct KeepBest {
    /// The sweep after which the second half begins.
    after: u64,
    best: Best,
}

impl<K: ConjugateKernel, P: crate::prior::NrmPrior> Handler<K, P> for KeepBest {
    fn after_sweep(&mut self, chain: &mut Chain<'_, K, P>, record: &SweepRecord) -> Result<()> {
        let better = self.best.as_ref().is_none_or(|(b, _)| record.ln_joint > *b);
        if record.sweep > self.after && better {
            self.best = Some((record.ln_joint, chain.state().partition.canonical_labels()));
        }
        Ok(())
    }
}

/// The smallest eigenvalue of `Ψ₀⁻¹ Ψ` for symmetric positive definite `Ψ₀` (row-major
/// d × d, as `Ψ`): `λ_min(L⁻¹ Ψ L⁻ᵀ)` with `Ψ₀ = L Lᵀ`; `-∞` when `Ψ₀` is not positive
/// definite or `Ψ` is not finite. Cost: O(d³).
fn smallest_relative_eigenvalue(psi: &[f64], default: &[f64], d: usize) -> f64 {
    let Some(chol) = nalgebra::DMatrix::from_row_slice(d, d, default).cholesky() else {
        return f64::NEG_INFINITY;
    };
    let l = chol.l();
    let scale = nalgebra::DMatrix::from_row_slice(d, d, psi);
    let Some(half) = l.solve_lower_triangular(&scale) else {
        return f64::NEG_INFINITY;
    };
    let Some(whole) = l.solve_lower_triangular(&half.transpose()) else {
        return f64::NEG_INFINITY;
    };
    let sym = (&whole + whole.transpose()) * 0.5;
    if sym.iter().any(|v| !v.is_finite()) {
        return f64::NEG_INFINITY;
    }
    sym.symmetric_eigenvalues().min()
}

/// The pooled within-cluster covariance of `x` under `labels` (`k` clusters, labels
/// `0..k`): `Σ_c Σ_{i ∈ c} (x_i - x̄_c)(x_i - x̄_c)ᵀ / (n - k)`, row-major d × d; `None` when
/// `n ≤ k`. Two passes over the data, O(N d²).
pub fn pooled_within(x: &DenseData, labels: &[usize], k: usize) -> Option<Vec<f64>> {
    let (n, d) = (x.n(), x.d());
    if n <= k {
        return None;
    }
    let mut sums = vec![0.0; k * d];
    let mut counts = vec![0usize; k];
    for (i, &c) in labels.iter().enumerate() {
        counts[c] += 1;
        for (s, v) in sums[c * d..(c + 1) * d].iter_mut().zip(x.row(i)) {
            *s += v;
        }
    }
    for (c, &m) in counts.iter().enumerate() {
        for s in &mut sums[c * d..(c + 1) * d] {
            *s /= m.max(1) as f64;
        }
    }
    let mut scatter = vec![0.0; d * d];
    let mut centred = vec![0.0; d];
    for (i, &c) in labels.iter().enumerate() {
        for ((z, v), m) in centred.iter_mut().zip(x.row(i)).zip(&sums[c * d..]) {
            *z = v - m;
        }
        for a in 0..d {
            for b in 0..=a {
                scatter[a * d + b] += centred[a] * centred[b];
            }
        }
    }
    let dof = (n - k) as f64;
    for a in 0..d {
        for b in 0..=a {
            let v = scatter[a * d + b] / dof;
            scatter[a * d + b] = v;
            scatter[b * d + a] = v;
        }
    }
    Some(scatter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pilot_compares_its_chains_at_a_quarter_and_a_half_of_its_sweeps() {
        let n = ROUND_POINTS;
        assert_eq!(round_ends(PILOT_SWEEPS, n), [50, 100, 200]);
        // The full kernel's shorter pilots in many dimensions: rounds of at least the floor.
        assert_eq!(round_ends(50, n), [12, 25, 50]);
        assert_eq!(round_ends(2 * MIN_PILOT_SWEEPS, n), [MIN_PILOT_SWEEPS, 20]);
        assert_eq!(round_ends(MIN_PILOT_SWEEPS, n), [MIN_PILOT_SWEEPS]);
        // Fewer points: all the sweeps at once.
        assert_eq!(round_ends(PILOT_SWEEPS, n - 1), [PILOT_SWEEPS]);
    }

    #[test]
    fn the_pilot_subsample_is_bounded_uniform_and_seeded() {
        assert_eq!(pilot_rows(PILOT_POINTS, 1), None);
        let n = 1_000_000;
        let rows = pilot_rows(n, 1).unwrap();
        assert_eq!(rows.len(), PILOT_POINTS);
        assert!(rows.windows(2).all(|w| w[0] < w[1]) && rows[rows.len() - 1] < n);
        assert_eq!(pilot_rows(n, 1), Some(rows.clone()));
        assert_ne!(pilot_rows(n, 2), Some(rows.clone()));
        // Uniform: each tenth of the rows holds about a tenth of the sample (1,000 ± 5 sd).
        for tenth in 0..10 {
            let inside = rows.iter().filter(|&&i| i * 10 / n == tenth).count();
            assert!((850..1150).contains(&inside), "{tenth}: {inside}");
        }
    }

    #[test]
    fn pooled_within_is_the_scatter_about_each_cluster_mean() {
        // Two clusters in 1-D: {0, 2} (mean 1) and {10, 14} (mean 12): scatter 2 + 8 over
        // n - k = 2.
        let x = DenseData::new(4, 1, vec![0.0, 2.0, 10.0, 14.0]).unwrap();
        let w = pooled_within(&x, &[0, 0, 1, 1], 2).unwrap();
        assert_eq!(w, vec![5.0]);
        assert!(pooled_within(&x, &[0, 1, 2, 3], 4).is_none());
    }

    #[test]
    fn the_relative_eigenvalue_is_unit_free_and_sees_flat_directions() {
        let default = [4.0, 1.0, 1.0, 2.0];
        let twice: Vec<f64> = default.iter().map(|v| 2.0 * v).collect();
        assert!((smallest_relative_eigenvalue(&twice, &default, 2) - 2.0).abs() < 1e-12);
        // Rank one: both columns move together.
        let flat = [1.0, 1.0, 1.0, 1.0];
        assert!(smallest_relative_eigenvalue(&flat, &default, 2).abs() < 1e-12);
        assert_eq!(
            smallest_relative_eigenvalue(&default, &flat, 2),
            f64::NEG_INFINITY
        );
    }
}
