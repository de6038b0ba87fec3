//! Credible balls of partitions (Wade & Ghahramani 2018, "Bayesian cluster analysis: point
//! estimation and credible balls", Bayesian Analysis 13(2), §3.2): the smallest ball around a
//! point estimate `ĉ`, in the metric of a loss, that holds a chosen share of the posterior,
//! and the partitions at its edge that show how far the uncertainty reaches.
//!
//! From `M` draws, the ball at level `1 - α` has radius `ε` = the smallest distance such that
//! at least `⌈(1 - α) M⌉` draws lie within `ε` of `ĉ`. Its bounds are draws in the ball:
//!
//! * the **horizontal bound**: the farthest from `ĉ`;
//! * the **vertical upper bound**: of those with the fewest clusters, the farthest (the
//!   coarsest clustering the posterior finds credible);
//! * the **vertical lower bound**: of those with the most clusters, the farthest (the finest).
//!
//! Ties go to the first draw. Wade & Ghahramani measure with the VI; any
//! [`PartitionLoss`] serves (for the generalised VI and Binder with `a ≠ 1` the "distance" is
//! the loss of `ĉ` against the draw, not symmetric).

use super::draw_set::DrawSet;
use super::partition_loss::PartitionLoss;
use crate::error::{Error, Result};

/// A partition at the edge of a credible ball.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BallBound {
    /// Its distance from the estimate.
    pub distance: f64,
    /// Its number of clusters.
    pub n_clusters: usize,
    /// The draw it is (index among the draws).
    pub draw: usize,
    /// Its canonical labels.
    #[serde(skip)]
    pub labels: Vec<usize>,
}

/// A credible ball around a point estimate (see the module documentation).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CredibleBall {
    /// The metric.
    pub loss: PartitionLoss,
    /// Its credible level `1 - α`.
    pub level: f64,
    /// Its radius.
    pub radius: f64,
    /// Draws inside it.
    pub inside: usize,
    /// Draws in all.
    pub among: usize,
    /// The draw in the ball farthest from the estimate.
    pub horizontal: BallBound,
    /// The farthest of the draws in the ball with the fewest clusters.
    pub vertical_upper: BallBound,
    /// The farthest of the draws in the ball with the most clusters.
    pub vertical_lower: BallBound,
}

impl CredibleBall {
    /// The ball at `level` around `estimate` in the metric `loss` from `draws`. Errors on a
    /// level outside (0, 1], an invalid loss, or an estimate of another length. Cost:
    /// O(M (n + K K_m)) for the distances and O(M log M) to sort them.
    pub fn around(
        draws: &DrawSet,
        loss: PartitionLoss,
        estimate: &[usize],
        level: f64,
    ) -> Result<Self> {
        if !(level > 0.0 && level <= 1.0) {
            return Err(Error::param(
                "level",
                level,
                "a credible level in (0, 1], such as 0.95",
            ));
        }
        let distances = draws.losses(loss, estimate)?;
        let m = distances.len();
        let mut sorted = distances.clone();
        sorted.sort_by(f64::total_cmp);
        // The ⌈level M⌉-th smallest distance; the small margin keeps 0.95 × 100 from rounding
        // up to 96 draws.
        let needed = ((level * m as f64) - 1e-9).ceil().max(1.0) as usize;
        let radius = sorted[needed.min(m) - 1];
        let inside: Vec<usize> = (0..m).filter(|&d| distances[d] <= radius).collect();
        let bound = |pick: &dyn Fn(usize, usize) -> bool| -> BallBound {
            // `pick(a, b)`: whether draw `a` beats the current choice `b`.
            let mut best = inside[0];
            for &d in &inside[1..] {
                if pick(d, best) {
                    best = d;
                }
            }
            BallBound {
                distance: distances[best],
                n_clusters: draws.n_clusters(best),
                draw: best,
                labels: draws.labels(best),
            }
        };
        let k = |d: usize| draws.n_clusters(d);
        let farther = |a: usize, b: usize| distances[a] > distances[b];
        Ok(CredibleBall {
            loss,
            level,
            radius,
            inside: inside.len(),
            among: m,
            horizontal: bound(&farther),
            vertical_upper: bound(&|a, b| k(a) < k(b) || (k(a) == k(b) && farther(a, b))),
            vertical_lower: bound(&|a, b| k(a) > k(b) || (k(a) == k(b) && farther(a, b))),
        })
    }
}
