//! Prediction for new points: the posterior predictive density and cluster probabilities.
//!
//! Given a draw (a partition of the training data and the prior's hyperparameters), a new
//! point joins cluster `c` with probability ∝ `κ(n_c+1, u)/κ(n_c, u) · p(x* | X_c)` and opens
//! a new cluster with probability ∝ `κ(1, u) · p(x*)` (MATH §1.3, the Gibbs weights with the
//! new point in the role of point `i`). For the DP these are exactly `n_c/(n+α)` and
//! `α/(n+α)`; for NGGP they hold given the draw's `u`. The posterior predictive density is
//! the average over draws of the normalised mixture.

use crate::data::{DenseData, SparseCounts};
use crate::error::{Error, Result};
use crate::kernel::{ConjugateKernel, Diagonal, MultinomialDirichlet, NormalWishart};
use crate::math::log_sum_exp;
use crate::partition::Partition;
use crate::prior::NrmPrior;

/// A kernel that can evaluate the predictive of points outside its own data set.
pub trait PredictiveKernel: ConjugateKernel {
    /// The type of a set of new points.
    type NewData;

    /// Number of points in `data`.
    fn n_new(data: &Self::NewData) -> usize;

    /// `ln p(x*_j | X_S)` for point `j` of `data`.
    fn ln_predictive_new(&self, data: &Self::NewData, j: usize, s: &Self::Stat) -> Result<f64>;
}

impl PredictiveKernel for NormalWishart {
    type NewData = DenseData;

    fn n_new(data: &DenseData) -> usize {
        data.n()
    }

    fn ln_predictive_new(&self, data: &DenseData, j: usize, s: &Self::Stat) -> Result<f64> {
        self.ln_predictive_point(data.row(j), s)
    }
}

impl PredictiveKernel for Diagonal {
    type NewData = DenseData;

    fn n_new(data: &DenseData) -> usize {
        data.n()
    }

    fn ln_predictive_new(&self, data: &DenseData, j: usize, s: &Self::Stat) -> Result<f64> {
        self.ln_predictive_point(data.row(j), s)
    }
}

impl PredictiveKernel for MultinomialDirichlet {
    type NewData = SparseCounts;

    fn n_new(data: &SparseCounts) -> usize {
        data.n()
    }

    fn ln_predictive_new(&self, data: &SparseCounts, j: usize, s: &Self::Stat) -> Result<f64> {
        let (ids, counts) = data.row(j);
        self.ln_predictive_doc(ids, counts, s)
    }
}

/// For each new point: log weights of joining each cluster of `partition` (in
/// [`Partition::slots_by_key`] order, i.e. canonical label order) and, last, a new cluster,
/// normalised to log probabilities. Cost: O(m K) predictive evaluations.
pub fn cluster_log_probabilities<K: PredictiveKernel, P: NrmPrior>(
    kernel: &K,
    partition: &Partition<K>,
    prior: &P,
    new: &K::NewData,
) -> Result<Vec<Vec<f64>>> {
    let slots = partition.slots_by_key();
    let empty = kernel.empty_stat();
    (0..K::n_new(new))
        .map(|j| {
            let mut ln_w = Vec::with_capacity(slots.len() + 1);
            for &s in &slots {
                let c = partition.cluster(s).expect("live slot");
                ln_w.push(
                    prior.ln_kappa_join(c.size()) + kernel.ln_predictive_new(new, j, c.stat())?,
                );
            }
            ln_w.push(prior.ln_kappa_new() + kernel.ln_predictive_new(new, j, &empty)?);
            let total = log_sum_exp(&ln_w);
            if !total.is_finite() {
                return Err(Error::Numerical(format!(
                    "predictive of new point {j} is {total}"
                )));
            }
            ln_w.iter_mut().for_each(|w| *w -= total);
            Ok(ln_w)
        })
        .collect()
}

/// The most probable cluster of each new point under one point estimate: the canonical label
/// of the cluster, or `K` (one past the last) for "a new cluster", with its probability.
pub fn predict_labels<K: PredictiveKernel, P: NrmPrior>(
    kernel: &K,
    partition: &Partition<K>,
    prior: &P,
    new: &K::NewData,
) -> Result<Vec<(usize, f64)>> {
    Ok(cluster_log_probabilities(kernel, partition, prior, new)?
        .into_iter()
        .map(|lp| {
            let (best, &l) = lp
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .expect("at least the new-cluster option");
            (best, l.exp())
        })
        .collect())
}

/// The log posterior predictive density of each new point, averaged over draws (each a
/// partition of the training data with its prior): `ln (1/S) Σ_s Σ_c w_c^s p(x* | X_c^s)`
/// with `w^s` the normalised join/new weights of draw `s`. Cost: O(S m K) predictives.
pub fn ln_predictive_density<K: PredictiveKernel, P: NrmPrior>(
    kernel: &K,
    draws: &[(Partition<K>, P)],
    new: &K::NewData,
) -> Result<Vec<f64>> {
    if draws.is_empty() {
        return Err(Error::Empty(
            "no draws to average the predictive over".into(),
        ));
    }
    let m = K::n_new(new);
    let mut per_draw = vec![Vec::with_capacity(draws.len()); m];
    for (partition, prior) in draws {
        let slots = partition.slots_by_key();
        let empty = kernel.empty_stat();
        let mut ln_w = Vec::with_capacity(slots.len() + 1);
        let mut ln_terms = Vec::with_capacity(slots.len() + 1);
        for &s in &slots {
            ln_w.push(prior.ln_kappa_join(partition.cluster(s).expect("live").size()));
        }
        ln_w.push(prior.ln_kappa_new());
        let total = log_sum_exp(&ln_w);
        ln_w.iter_mut().for_each(|w| *w -= total);
        for (j, out) in per_draw.iter_mut().enumerate() {
            ln_terms.clear();
            for (t, &s) in slots.iter().enumerate() {
                let c = partition.cluster(s).expect("live");
                ln_terms.push(ln_w[t] + kernel.ln_predictive_new(new, j, c.stat())?);
            }
            ln_terms.push(ln_w[slots.len()] + kernel.ln_predictive_new(new, j, &empty)?);
            out.push(log_sum_exp(&ln_terms));
        }
    }
    let ln_s = (draws.len() as f64).ln();
    Ok(per_draw.iter().map(|v| log_sum_exp(v) - ln_s).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::NwHyper;
    use crate::prior::{Dp, Nggp};
    use std::sync::Arc;

    fn kernel_1d() -> NormalWishart {
        let x = DenseData::new(6, 1, vec![-2.0, -1.8, -2.3, 1.0, 1.4, 0.8]).unwrap();
        let hyper = NwHyper::new(vec![0.0], vec![0.5], 0.2, 3.0).unwrap();
        NormalWishart::new(Arc::new(x), hyper).unwrap()
    }

    /// The predictive density is a proper density: its integral over a wide grid is 1.
    #[test]
    fn predictive_density_integrates_to_one() {
        let k = kernel_1d();
        let draws = vec![
            (
                Partition::from_labels(&k, &[0, 0, 0, 1, 1, 1]).unwrap(),
                Dp::new(1.0).unwrap(),
            ),
            (Partition::single(&k), Dp::new(0.5).unwrap()),
        ];
        let (lo, hi, m) = (-60.0, 60.0, 120_001);
        let h = (hi - lo) / (m - 1) as f64;
        let grid = DenseData::new(m, 1, (0..m).map(|i| lo + h * i as f64).collect()).unwrap();
        let dens = ln_predictive_density(&k, &draws, &grid).unwrap();
        // Student-t tails decay like |x|^-(ν'+1) with ν' = ν + n - d + 1 ≥ 4; the mass beyond
        // ±60 and the trapezoid error are both far below 1e-4.
        let integral: f64 = dens.iter().map(|l| l.exp()).sum::<f64>() * h;
        assert!((integral - 1.0).abs() < 1e-4, "integral {integral}");
    }

    #[test]
    fn cluster_probabilities_sum_to_one_and_pick_the_near_cluster() {
        let k = kernel_1d();
        let part = Partition::from_labels(&k, &[0, 0, 0, 1, 1, 1]).unwrap();
        let new = DenseData::new(3, 1, vec![-2.1, 1.1, 40.0]).unwrap();
        for prior in [
            crate::prior::Prior::Dp(Dp::new(1.0).unwrap()),
            Nggp::fixed(1.0, 0.5, 2.0).unwrap().into(),
        ] {
            let lp = cluster_log_probabilities(&k, &part, &prior, &new).unwrap();
            for row in &lp {
                let s: f64 = row.iter().map(|l| l.exp()).sum();
                assert!((s - 1.0).abs() < 1e-12);
            }
            let labels = predict_labels(&k, &part, &prior, &new).unwrap();
            assert_eq!(labels[0].0, 0);
            assert_eq!(labels[1].0, 1);
            assert_eq!(labels[2].0, 2, "a far point opens a new cluster");
        }
    }
}
