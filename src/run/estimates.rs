//! Point estimates by loss for the summary of a run: the partitions minimising the posterior
//! expected Variation of Information, Binder's loss and one minus the adjusted Rand index
//! over the run's draws ([`crate::diagnostics::salso`]), the expected loss of each estimate
//! (these, Dahl's and the best state visited) under each loss, and the 95% credible ball in
//! the VI around the VI estimate (Wade & Ghahramani 2018). The generalised VI and Binder's
//! loss take the parameter `a` (in (0, 2), 1 by default: larger `a` makes splitting a
//! posterior cluster dearer, so fewer clusters), which the ball's VI shares.
//!
//! **The default estimate** (`estimate.txt`, the summary's headline, Python's `labels_`) is
//! the VI estimate, Dahl's least-squares draw where there is none (beyond
//! [`MAX_ATOM_CLUSTERS`], a warning saying so): on the five labelled real sets measured (iris, wine,
//! breast cancer, a 2,000-image MNIST PCA-50 subsample and the 10,000-point set of 119
//! clusters) the VI estimate's ARI against the labels was at least Dahl's on every one, and
//! its expected VI lower on four (equal on iris), as Wade & Ghahramani (2018) argue.

use super::dahl::{DrawSource, Estimate};
use crate::diagnostics::{
    minimise_expected_loss, CredibleBall, DrawSet, DrawSetBuilder, LossEstimate, PartitionLoss,
    SearchSettings,
};
use crate::error::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// The losses whose minimisers the summary reports, in its order, with the VI's and
/// Binder's parameter `a` (see [`PartitionLoss`]).
pub fn losses(a: f64) -> [PartitionLoss; 3] {
    [
        PartitionLoss::Vi { a },
        PartitionLoss::Binder { a },
        PartitionLoss::OneMinusAri,
    ]
}

/// Errors unless `a`, the parameter of the VI and Binder's loss, is in (0, 2) (see
/// [`PartitionLoss::validate`]), naming it `loss_a`.
pub fn validate_loss_a(a: f64) -> Result<()> {
    PartitionLoss::Vi { a }.validate().map_err(|_| {
        Error::param(
            "loss_a",
            a,
            "a number in (0, 2), 1 for the plain VI and Binder's loss (larger: fewer clusters)",
        )
    })
}

/// The name of an estimate by its loss in the summary's files and tables: `vi`, `binder` or
/// `1-ari`, whatever the parameter `a` (recorded once as [`LossSummary::loss_a`]).
pub fn short_name(loss: PartitionLoss) -> &'static str {
    match loss {
        PartitionLoss::Vi { .. } => "vi",
        PartitionLoss::Binder { .. } => "binder",
        PartitionLoss::OneMinusAri => "1-ari",
    }
}

/// The level of the credible ball the summary reports.
pub const BALL_LEVEL: f64 = 0.95;

/// Most atom-cluster products `A K̄` (atoms: groups of points with the same cluster in every
/// draw, see [`crate::diagnostics::draw_set`]; `K̄` the draws' mean number of clusters) for
/// which the summary searches: beyond, a search over [`MIN_SCAN_DRAWS`] draws takes minutes
/// (its cost is O(A M K) per scan). 10,000 points in 119 clusters (about 1.2·10⁶) are
/// searched in seconds. Points are not limited: on a concentrated posterior of a million
/// points the atoms are few (32,379 in 6 clusters over 32 draws of 10⁶ points in 2
/// dimensions).
pub const MAX_ATOM_CLUSTERS: f64 = 2e6;

/// Most draws the search uses, evenly spaced within each chain.
const MAX_DRAWS: usize = 1000;

/// Point-draw pairs `n M` the search's draws hold at most (20 MB), but never fewer than
/// [`MIN_DRAWS`] draws.
const MAX_CELLS: usize = 5_000_000;

/// The fewest draws the search uses when there are as many.
const MIN_DRAWS: usize = 100;

/// Atom-draw-cluster products `A M K̄` the search's draws hold at most (`K̄` their mean
/// number of clusters; a scan of the search costs O(A M K)), but never fewer than
/// [`MIN_SCAN_DRAWS`] draws: 10,000 points in 119 clusters took 135 s of CPU over 100 draws
/// before this bound, which keeps 30 (about 5 s).
const MAX_SCAN_WORK: f64 = 3e7;

/// The fewest draws the search uses where clusters are many.
const MIN_SCAN_DRAWS: usize = 30;

/// The summary's point estimates by loss.
#[derive(Clone, Debug, Serialize)]
pub struct LossSummary {
    /// The parameter `a` of the VI and Binder's loss (1: the plain losses).
    pub loss_a: f64,
    /// Draws the estimates and expected losses are over.
    pub draws: usize,
    /// Atoms of those draws: groups of points with the same cluster in every one, which the
    /// searches place as one (see [`crate::diagnostics::draw_set`]).
    pub atoms: usize,
    /// The minimiser of each of [`losses`].
    pub estimates: Vec<LossEstimate>,
    /// Per estimate (`vi`, `binder`, `1-ari`, `dahl`, `map`), its expected loss under each
    /// loss: lower is better, and each minimiser should be lowest under its own loss.
    pub expected_losses: BTreeMap<String, BTreeMap<String, f64>>,
    /// The credible ball at [`BALL_LEVEL`] in the VI (with `a`) around the VI estimate.
    pub credible_ball: CredibleBall,
}

/// The draws of `sources` for the search as a [`DrawSet`]: each chain's evenly thinned to its
/// share of a limit on draws (at most [`MAX_CELLS`] `/ n`, within [`MIN_DRAWS`] and
/// [`MAX_DRAWS`]), taken into the set's atoms one at a time. Cost: reading the draws files,
/// one draw in memory at a time, and O(n log K) per draw kept.
fn thinned_draws(sources: &[DrawSource], n: usize) -> Result<Option<DrawSet>> {
    let limit = (MAX_CELLS / n.max(1)).clamp(MIN_DRAWS, MAX_DRAWS);
    let share = limit.div_ceil(sources.len().max(1));
    let mut builder = DrawSetBuilder::new(n);
    let mut kept = 0;
    for source in sources {
        let stride = source.count()?.div_ceil(share).max(1);
        let mut at = 0;
        source.for_each(|draw| {
            if at % stride == 0 {
                builder.add(&draw.labels)?;
                kept += 1;
            }
            at += 1;
            Ok(())
        })?;
    }
    if kept == 0 {
        return Ok(None);
    }
    builder.finish().map(Some)
}

/// `set` evenly thinned to at most [`MAX_SCAN_WORK`] `/ (A K̄)` draws (at least
/// [`MIN_SCAN_DRAWS`]), `A` its atoms and `K̄` its mean number of clusters, keeping the
/// first. Cost: O(A M).
fn fewer_for_many_clusters(set: DrawSet) -> Result<DrawSet> {
    let m = set.len();
    let mean = (set.total_columns() as f64 / m as f64).max(1.0);
    let keep = ((MAX_SCAN_WORK / (set.atoms() as f64 * mean)) as usize).max(MIN_SCAN_DRAWS);
    if keep >= m {
        return Ok(set);
    }
    set.every(m.div_ceil(keep))
}

/// What [`loss_summary`] found.
pub(super) enum ByLoss {
    /// The estimates.
    Found(Box<LossSummary>),
    /// No draws to search over.
    NoDraws,
    /// More atom-cluster products than [`MAX_ATOM_CLUSTERS`]: the atoms and the draws' mean
    /// number of clusters.
    TooManyAtoms(usize, f64),
}

/// The point estimates by loss over the draws of `sources` (see the module documentation),
/// with the expected losses of Dahl's estimate `dahl` and the best state `map`, over the
/// `n` points; none when there are no draws or more than [`MAX_ATOM_CLUSTERS`]; `a` the VI's
/// and Binder's parameter, validated. The search's runs draw from `seed`. Cost: reading the
/// draws, the searches' (see [`crate::diagnostics::salso`]) and O(n + M (A + K²)) per
/// expected loss.
pub(super) fn loss_summary(
    sources: &[DrawSource],
    n: usize,
    dahl: Option<&Estimate>,
    map: Option<&Estimate>,
    seed: u64,
    a: f64,
) -> Result<ByLoss> {
    validate_loss_a(a)?;
    let losses = losses(a);
    let Some(set) = thinned_draws(sources, n)? else {
        return Ok(ByLoss::NoDraws);
    };
    let clusters = set.total_columns() as f64 / set.len() as f64;
    if set.atoms() as f64 * clusters > MAX_ATOM_CLUSTERS {
        return Ok(ByLoss::TooManyAtoms(set.atoms(), clusters));
    }
    let set = fewer_for_many_clusters(set)?;
    let clusters = set.total_columns() as f64 / set.len() as f64;
    let settings = SearchSettings::for_size(set.n(), set.atoms(), set.len(), clusters, seed);
    let estimates = losses
        .iter()
        .map(|&loss| minimise_expected_loss(&set, loss, &settings))
        .collect::<Result<Vec<_>>>()?;
    let mut named: Vec<(String, &[usize])> = estimates
        .iter()
        .map(|e| (short_name(e.loss).to_string(), e.labels.as_slice()))
        .collect();
    named.extend(dahl.map(|e| ("dahl".to_string(), e.labels.as_slice())));
    named.extend(map.map(|e| ("map".to_string(), e.labels.as_slice())));
    let mut expected_losses = BTreeMap::new();
    for (name, labels) in named {
        let mut row = BTreeMap::new();
        for loss in losses {
            row.insert(
                short_name(loss).to_string(),
                set.expected_loss(loss, labels)?,
            );
        }
        expected_losses.insert(name, row);
    }
    let credible_ball = CredibleBall::around(&set, losses[0], &estimates[0].labels, BALL_LEVEL)?;
    Ok(ByLoss::Found(Box::new(LossSummary {
        loss_a: a,
        draws: set.len(),
        atoms: set.atoms(),
        estimates,
        expected_losses,
        credible_ball,
    })))
}
