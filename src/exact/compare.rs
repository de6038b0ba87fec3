//! Comparing sampler output with the exact posterior (MATH §7.1, "Checks" and "Error bars").
//!
//! Samples are counted per canonical partition ([`EmpiricalPartitions`]); the exact posterior
//! then gives the total variation (TV) distance over partitions and over `K`, and the TV that
//! a perfect sampler with the same number of independent draws would show, which is the noise
//! floor a sampler's TV is judged against.

use super::enumerate::{check_n, Rgs};
use super::posterior::ExactPosterior;
use super::summary::SampleComparison;
use crate::error::{Error, Result};
use crate::math::ln_gamma;
use rand::Rng;
use std::collections::BTreeMap;

/// Counts of sampled partitions of `n ≤ 12` points, keyed by their canonical RGS.
///
/// Stored sparsely (one entry per distinct partition seen), in enumeration order.
#[derive(Clone, Debug, PartialEq)]
pub struct EmpiricalPartitions {
    n: usize,
    counts: BTreeMap<Rgs, u64>,
    total: u64,
}

impl EmpiricalPartitions {
    /// No samples yet, for partitions of `n` points. Errors for `n > 12`.
    pub fn new(n: usize) -> Result<Self> {
        check_n(n)?;
        Ok(EmpiricalPartitions {
            n,
            counts: BTreeMap::new(),
            total: 0,
        })
    }

    /// Counts a sequence of label vectors (any label type; each vector is relabelled to its
    /// RGS). Errors if a vector does not have `n` entries.
    pub fn from_label_vectors<I, L, T>(n: usize, samples: I) -> Result<Self>
    where
        I: IntoIterator<Item = L>,
        L: AsRef<[T]>,
        T: PartialEq,
    {
        let mut empirical = Self::new(n)?;
        for labels in samples {
            empirical.push_labels(labels.as_ref())?;
        }
        Ok(empirical)
    }

    /// Counts from `(partition, count)` pairs (for example a sampler's own tally).
    pub fn from_counts<I: IntoIterator<Item = (Rgs, u64)>>(n: usize, counts: I) -> Result<Self> {
        let mut empirical = Self::new(n)?;
        for (rgs, count) in counts {
            empirical.add(rgs, count)?;
        }
        Ok(empirical)
    }

    /// Counts one sample given as a label vector.
    pub fn push_labels<T: PartialEq>(&mut self, labels: &[T]) -> Result<()> {
        if labels.len() != self.n {
            return Err(Error::DimensionMismatch(format!(
                "a sampled label vector has {} entries, the partitions have {} points",
                labels.len(),
                self.n
            )));
        }
        self.add(Rgs::from_labels(labels)?, 1)
    }

    /// Adds `count` samples of partition `rgs`. Errors if it has a different number of points.
    pub fn add(&mut self, rgs: Rgs, count: u64) -> Result<()> {
        if rgs.len() != self.n {
            return Err(Error::DimensionMismatch(format!(
                "partition {rgs} has {} points, the sample has {}",
                rgs.len(),
                self.n
            )));
        }
        if count > 0 {
            *self.counts.entry(rgs).or_insert(0) += count;
            self.total += count;
        }
        Ok(())
    }

    /// Number of points per partition.
    pub fn n_points(&self) -> usize {
        self.n
    }

    /// Number of samples counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Number of distinct partitions seen.
    pub fn n_distinct(&self) -> usize {
        self.counts.len()
    }

    /// How often `rgs` was seen.
    pub fn count(&self, rgs: &Rgs) -> u64 {
        self.counts.get(rgs).copied().unwrap_or(0)
    }

    /// The relative frequency of `rgs` (0 when nothing was counted).
    pub fn frequency(&self, rgs: &Rgs) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.count(rgs) as f64 / self.total as f64
        }
    }

    /// The distinct partitions seen with their counts, in enumeration order.
    pub fn iter(&self) -> impl Iterator<Item = (Rgs, u64)> + '_ {
        self.counts.iter().map(|(&rgs, &c)| (rgs, c))
    }

    /// Relative frequencies of `K = k` for `k = 0..=n`.
    pub fn k_frequencies(&self) -> Vec<f64> {
        let mut freq = vec![0.0; self.n + 1];
        if self.total > 0 {
            for (rgs, c) in self.iter() {
                freq[rgs.n_blocks()] += c as f64 / self.total as f64;
            }
        }
        freq
    }
}

/// A Monte Carlo estimate with its standard error.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct McEstimate {
    /// Mean over the replicates.
    pub mean: f64,
    /// Standard error of the mean (replicate standard deviation / sqrt(replicates)).
    pub std_error: f64,
    /// Number of independent replicates.
    pub replicates: usize,
}

impl ExactPosterior {
    fn check_sample(&self, empirical: &EmpiricalPartitions) -> Result<()> {
        if empirical.n_points() != self.n_points() {
            return Err(Error::DimensionMismatch(format!(
                "the sample has partitions of {} points, the exact posterior of {}",
                empirical.n_points(),
                self.n_points()
            )));
        }
        if empirical.total() == 0 {
            return Err(Error::Empty(
                "no sampled partitions to compare with the exact posterior".into(),
            ));
        }
        Ok(())
    }

    /// Total variation distance `½ Σ_Π |p̂(Π) - p(Π | X)|` between the sample's frequencies and
    /// the exact posterior, over all partitions.
    ///
    /// Only the partitions seen are visited: the unseen ones contribute `1 - Σ_seen p`, so the
    /// cost is `O(distinct · n)`. Errors on a point-count mismatch or an empty sample.
    pub fn tv_distance(&self, empirical: &EmpiricalPartitions) -> Result<f64> {
        self.check_sample(empirical)?;
        let total = empirical.total() as f64;
        let mut seen_abs = 0.0;
        let mut seen_mass = 0.0;
        for (rgs, c) in empirical.iter() {
            let p = self.probabilities()[self.index_of(&rgs)?];
            seen_abs += (c as f64 / total - p).abs();
            seen_mass += p;
        }
        Ok(0.5 * (seen_abs + (1.0 - seen_mass).max(0.0)))
    }

    /// Total variation distance between the sample's and the exact distribution of the number
    /// of blocks `K`. Errors on a point-count mismatch or an empty sample.
    pub fn tv_k(&self, empirical: &EmpiricalPartitions) -> Result<f64> {
        self.check_sample(empirical)?;
        Ok(tv_of(&empirical.k_frequencies(), &self.k_probabilities()))
    }

    /// Total variation distance to another exact posterior over the same points (for example
    /// the same data under another prior). Cost `O(B_n)`.
    pub fn tv_distance_to(&self, other: &ExactPosterior) -> Result<f64> {
        if other.n_points() != self.n_points() {
            return Err(Error::DimensionMismatch(format!(
                "exact posteriors over {} and {} points",
                self.n_points(),
                other.n_points()
            )));
        }
        Ok(tv_of(self.probabilities(), other.probabilities()))
    }

    /// The expected TV of a perfect sampler with `n_eff` independent draws, large-`N`
    /// approximation (MATH §7.1, "Error bars"):
    /// `E[TV] ≈ Σ_Π sqrt(p(1 - p) / (2π N_eff))`.
    ///
    /// It replaces each count's `E|p̂ - p|` by its normal limit `sqrt(2/π)·sqrt(p(1-p)/N)`, so
    /// it is accurate only when `N·p(Π)` is large for the partitions carrying the mass; it
    /// overestimates when many partitions have `N·p ≲ 1`. It is bounded by
    /// `sqrt(B_n / (2π N_eff))`. See [`ExactPosterior::expected_tv_exact`] for the exact value.
    /// Cost `O(B_n)`. Errors unless `n_eff` is finite and positive.
    pub fn expected_tv_approx(&self, n_eff: f64) -> Result<f64> {
        if !(n_eff.is_finite() && n_eff > 0.0) {
            return Err(Error::param(
                "n_eff",
                n_eff,
                "a finite effective sample size > 0",
            ));
        }
        let scale = 1.0 / (2.0 * std::f64::consts::PI * n_eff);
        Ok(self
            .probabilities()
            .iter()
            .map(|&p| (p * (1.0 - p) * scale).max(0.0).sqrt())
            .sum())
    }

    /// The exact expected TV of `n_samples` i.i.d. draws from this posterior:
    /// `E[TV] = (1 / 2N) Σ_Π E|X_Π - N p(Π)|` with `X_Π ~ Binomial(N, p(Π))`.
    ///
    /// Each mean absolute deviation is De Moivre's closed form
    /// `E|X - Np| = 2 ν C(N, ν) p^ν (1-p)^{N-ν+1}`, `ν = ⌊Np⌋ + 1`, evaluated in log space
    /// (Diaconis & Zabell 1991, "Closed form summation for classical distributions"). Cost
    /// `O(B_n)` with at most three `ln Γ` per partition (none when `Np < 1`). Errors for
    /// `n_samples = 0`.
    pub fn expected_tv_exact(&self, n_samples: u64) -> Result<f64> {
        if n_samples == 0 {
            return Err(Error::param("n_samples", 0, "a number of draws > 0"));
        }
        let big_n = n_samples as f64;
        let ln_gamma_n1 = ln_gamma(big_n + 1.0);
        let sum: f64 = self
            .probabilities()
            .iter()
            .map(|&p| binomial_mean_abs_deviation(n_samples, big_n, ln_gamma_n1, p))
            .sum();
        Ok(sum / (2.0 * big_n))
    }

    /// A Monte Carlo estimate of the expected TV of a perfect sampler with `n_samples` draws:
    /// `replicates` independent samples of `n_samples` i.i.d. draws from this posterior, each
    /// scored with [`ExactPosterior::tv_distance`]. Unbiased for any `N`; its standard error is
    /// reported with it.
    ///
    /// Cost: `O(B_n)` to build the sampler, then `O(N log N)` per replicate with one reused
    /// buffer. Errors for `n_samples = 0` or fewer than 2 replicates.
    pub fn expected_tv_monte_carlo<R: Rng + ?Sized>(
        &self,
        n_samples: usize,
        replicates: usize,
        rng: &mut R,
    ) -> Result<McEstimate> {
        if n_samples == 0 {
            return Err(Error::param("n_samples", 0, "a number of draws > 0"));
        }
        if replicates < 2 {
            return Err(Error::param(
                "replicates",
                replicates,
                "at least 2, to estimate a standard error",
            ));
        }
        let sampler = self.sampler();
        let p = self.probabilities();
        let mut draws = vec![0usize; n_samples];
        let mut tvs = Vec::with_capacity(replicates);
        for _ in 0..replicates {
            for d in draws.iter_mut() {
                *d = sampler.draw_index(rng);
            }
            draws.sort_unstable();
            let mut seen_abs = 0.0;
            let mut seen_mass = 0.0;
            for run in draws.chunk_by(|a, b| a == b) {
                let ps = p[run[0]];
                seen_abs += (run.len() as f64 / n_samples as f64 - ps).abs();
                seen_mass += ps;
            }
            tvs.push(0.5 * (seen_abs + (1.0 - seen_mass).max(0.0)));
        }
        let mean = tvs.iter().sum::<f64>() / replicates as f64;
        let var = tvs.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (replicates - 1) as f64;
        Ok(McEstimate {
            mean,
            std_error: (var / replicates as f64).sqrt(),
            replicates,
        })
    }

    /// Everything a report needs to judge a sample against this posterior: TV over partitions
    /// and over `K`, the two `K` distributions, and the large-`N` expected TV of a perfect
    /// sampler with `n_eff` effective draws (pass the sample size for independent draws, or an
    /// effective sample size for a chain).
    pub fn compare(&self, empirical: &EmpiricalPartitions, n_eff: f64) -> Result<SampleComparison> {
        let tv = self.tv_distance(empirical)?;
        let expected_tv = self.expected_tv_approx(n_eff)?;
        Ok(SampleComparison {
            n_samples: empirical.total(),
            n_distinct: empirical.n_distinct(),
            tv,
            tv_k: self.tv_k(empirical)?,
            n_eff,
            expected_tv,
            k_exact: self.k_probabilities(),
            k_empirical: empirical.k_frequencies(),
        })
    }
}

/// `½ Σ |a_i - b_i|` over two equally long probability vectors.
fn tv_of(a: &[f64], b: &[f64]) -> f64 {
    0.5 * a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>()
}

/// `E|X - Np|` for `X ~ Binomial(N, p)` by De Moivre's formula; `ln_gamma_n1 = ln Γ(N + 1)`.
fn binomial_mean_abs_deviation(n: u64, big_n: f64, ln_gamma_n1: f64, p: f64) -> f64 {
    if p <= 0.0 || p >= 1.0 {
        return 0.0;
    }
    let nu = (big_n * p).floor() as u64 + 1;
    if nu > n {
        return 0.0;
    }
    let ln_q = (-p).ln_1p();
    if nu == 1 {
        // 2·N·p·(1-p)^N, the common case for rare partitions, without ln Γ.
        return 2.0 * big_n * p * (big_n * ln_q).exp();
    }
    let nu_f = nu as f64;
    let ln_choose = ln_gamma_n1 - ln_gamma(nu_f + 1.0) - ln_gamma(big_n - nu_f + 1.0);
    2.0 * (nu_f.ln() + ln_choose + nu_f * p.ln() + (big_n - nu_f + 1.0) * ln_q).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binomial_mad_by_sum(n: u64, p: f64) -> f64 {
        let mut total = 0.0;
        for k in 0..=n {
            let kf = k as f64;
            let nf = n as f64;
            let ln_pmf = ln_gamma(nf + 1.0) - ln_gamma(kf + 1.0) - ln_gamma(nf - kf + 1.0)
                + kf * p.ln()
                + (nf - kf) * (-p).ln_1p();
            total += ln_pmf.exp() * (kf - nf * p).abs();
        }
        total
    }

    #[test]
    fn de_moivre_matches_direct_summation() {
        for &n in &[1u64, 2, 7, 30, 200, 1000] {
            for &p in &[1e-4, 0.01, 0.1, 0.3, 0.5, 0.77, 0.999] {
                let direct = binomial_mad_by_sum(n, p);
                let closed = binomial_mean_abs_deviation(n, n as f64, ln_gamma(n as f64 + 1.0), p);
                assert!(
                    (direct - closed).abs() <= 1e-10 * direct.max(1e-3),
                    "N = {n}, p = {p}: {direct} vs {closed}"
                );
            }
        }
        assert_eq!(binomial_mean_abs_deviation(5, 5.0, ln_gamma(6.0), 0.0), 0.0);
        assert_eq!(binomial_mean_abs_deviation(5, 5.0, ln_gamma(6.0), 1.0), 0.0);
    }

    #[test]
    fn empirical_counts_and_mismatches() {
        let mut emp = EmpiricalPartitions::new(3).unwrap();
        emp.push_labels(&[5, 5, 2]).unwrap();
        emp.push_labels(&[1, 1, 0]).unwrap();
        emp.add(Rgs::new(&[0, 1, 2]).unwrap(), 2).unwrap();
        emp.add(Rgs::new(&[0, 0, 0]).unwrap(), 0).unwrap();
        assert_eq!(emp.total(), 4);
        assert_eq!(emp.n_distinct(), 2);
        assert_eq!(emp.count(&Rgs::new(&[0, 0, 1]).unwrap()), 2);
        assert_eq!(emp.frequency(&Rgs::new(&[0, 1, 2]).unwrap()), 0.5);
        assert_eq!(emp.k_frequencies(), vec![0.0, 0.0, 0.5, 0.5]);
        assert!(emp.push_labels(&[0, 0]).is_err());
        assert!(emp.add(Rgs::new(&[0]).unwrap(), 1).is_err());
        assert!(EmpiricalPartitions::new(13).is_err());
    }
}
