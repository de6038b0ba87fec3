//! Serialisable summaries of an exact posterior and of a sample compared with it, for
//! machine-readable (`--json`) reports.

use serde::{Deserialize, Serialize};

/// One partition with its posterior probability.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartitionProbability {
    /// The canonical restricted growth string (one character per point, `0`-`9`, `a`, `b`).
    pub rgs: String,
    /// The blocks as sorted 0-based point indices, in block order.
    pub blocks: Vec<Vec<usize>>,
    /// `p(Π | X)`.
    pub probability: f64,
    /// `ln p(Π | X)`.
    pub ln_probability: f64,
}

/// The posterior probability of one number of blocks.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct KProbability {
    /// Number of blocks.
    pub k: usize,
    /// `P(K = k | X)`.
    pub probability: f64,
}

/// The headline figures of an exact posterior.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PosteriorSummary {
    /// Number of points `n`.
    pub n_points: usize,
    /// Number of partitions enumerated, `B_n`.
    pub n_partitions: u64,
    /// `ln` of the normalising sum (the log evidence when the prior is a normalised EPPF).
    pub ln_normaliser: f64,
    /// `E[K | X]`.
    pub expected_k: f64,
    /// `P(K = k | X)` for every `k` of positive probability, by increasing `k`.
    pub k_probabilities: Vec<KProbability>,
    /// The most probable partitions, most probable first.
    pub top_partitions: Vec<PartitionProbability>,
}

/// A sample of partitions judged against the exact posterior (MATH §7.1, "Checks").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleComparison {
    /// Number of sampled partitions.
    pub n_samples: u64,
    /// Number of distinct partitions among them.
    pub n_distinct: usize,
    /// Total variation distance over partitions.
    pub tv: f64,
    /// Total variation distance over the number of blocks `K`.
    pub tv_k: f64,
    /// The effective sample size the expected TV refers to.
    pub n_eff: f64,
    /// Large-`N` expected TV of a perfect sampler with `n_eff` draws:
    /// `Σ_Π sqrt(p(1-p) / (2π n_eff))`.
    pub expected_tv: f64,
    /// `P(K = k | X)` for `k = 0..=n`.
    pub k_exact: Vec<f64>,
    /// Sampled frequencies of `K = k` for `k = 0..=n`.
    pub k_empirical: Vec<f64>,
}

impl super::ExactPosterior {
    /// Writes the posterior as text: the `top` most probable partitions (labels by point),
    /// `P(K = k)` for every `k` of positive probability, and `E[K]`.
    pub fn print(&self, out: &mut dyn std::io::Write, top: usize) -> std::io::Result<()> {
        let (n_partitions, n) = (self.n_partitions(), self.n_points());
        writeln!(
            out,
            "exact posterior over {n_partitions} partitions of {n} points"
        )?;
        writeln!(out, "\ntop partitions (labels by point):")?;
        for (rgs, p) in self.top(top) {
            writeln!(out, "  {rgs}  {p:.6}")?;
        }
        writeln!(out, "\nP(K = k):")?;
        for (k, p) in self.k_probabilities().iter().enumerate() {
            if *p > 0.0 {
                writeln!(out, "  {k:>2}  {p:.6}")?;
            }
        }
        writeln!(out, "\nE[K] = {:.6}", self.expected_k())
    }
}
