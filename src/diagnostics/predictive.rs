//! Prediction for new points: the posterior predictive density and cluster probabilities.
//!
//! Given a draw (a partition of the training data and the prior's hyperparameters), a new
//! point joins cluster `c` with probability ∝ `κ(n_c+1, u)/κ(n_c, u) · p(x* | X_c)` and opens
//! a new cluster with probability ∝ `κ(1, u) · p(x*)` (MATH §1.3, the Gibbs weights with the
//! new point in the role of point `i`). For the DP these are exactly `n_c/(n+α)` and
//! `α/(n+α)`; for NGGP they hold given the draw's `u`; for a Gibbs-type prior the new
//! cluster's weight carries `V(n+1, K+1)/V(n+1, K)` ([`NrmPrior::ln_new_at`]). The posterior predictive density is
//! the average over draws of the normalised mixture.

use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
pub use crate::kernel::PredictiveKernel;
use crate::partition::Partition;
use crate::prior::NrmPrior;
use crate::vecmath::log_sum_exp;

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
    let mut entries: Vec<(&K::Stat, f64)> = slots
        .iter()
        .map(|&s| {
            let c = partition.cluster(s).expect("live slot");
            (c.stat(), prior.ln_kappa_join(c.size()))
        })
        .collect();
    entries.push((&empty, prior.ln_new_at(partition.n() + 1, slots.len())));
    let mut out = Vec::with_capacity(K::n_new(new));
    kernel.ln_predictives_new(new, &entries, &mut |j, ln_w| {
        let total = log_sum_exp(ln_w);
        if !total.is_finite() {
            return Err(Error::Numerical(format!(
                "predictive of new point {j} is {total}"
            )));
        }
        out.push(ln_w.iter().map(|w| w - total).collect());
        Ok(())
    })?;
    Ok(out)
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
/// with `w^s` the normalised join/new weights of draw `s` ([`ln_predictive_of_draw`]).
/// Cost: O(S m K) predictives.
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
        for (v, l) in per_draw
            .iter_mut()
            .zip(ln_predictive_of_draw(kernel, partition, prior, new)?)
        {
            v.push(l);
        }
    }
    let ln_s = (draws.len() as f64).ln();
    Ok(per_draw.iter().map(|v| log_sum_exp(v) - ln_s).collect())
}

/// The log predictive density of each new point given one draw, `ln Σ_c w_c p(x* | X_c)`
/// with `w` the normalised weights of joining each cluster of `partition` or a new one
/// (MATH §1.3): the density the posterior predictive averages over draws, and whose spread
/// across draws gives pointwise credible bands ([`crate::diagnostics::density`]).
/// Cost: O(m K) predictives.
pub fn ln_predictive_of_draw<K: PredictiveKernel, P: NrmPrior>(
    kernel: &K,
    partition: &Partition<K>,
    prior: &P,
    new: &K::NewData,
) -> Result<Vec<f64>> {
    let slots = partition.slots_by_key();
    let empty = kernel.empty_stat();
    let mut ln_w = Vec::with_capacity(slots.len() + 1);
    for &s in &slots {
        ln_w.push(prior.ln_kappa_join(partition.cluster(s).expect("live").size()));
    }
    ln_w.push(prior.ln_new_at(partition.n() + 1, slots.len()));
    let total = log_sum_exp(&ln_w);
    let mut entries: Vec<(&K::Stat, f64)> = slots
        .iter()
        .zip(&ln_w)
        .map(|(&s, w)| (partition.cluster(s).expect("live").stat(), w - total))
        .collect();
    entries.push((&empty, ln_w[slots.len()] - total));
    let mut out = Vec::with_capacity(K::n_new(new));
    kernel.ln_predictives_new(new, &entries, &mut |_, ln_terms| {
        out.push(log_sum_exp(ln_terms));
        Ok(())
    })?;
    Ok(out)
}

/// For every point `i` of the kernel's data, `ln p(x_i | X_{-i}, c_{-i})` under one draw:
/// the predictive of point `i` with the others partitioned as in `partition`, i.e. the
/// normalised Gibbs weights of joining each other cluster or a new one (MATH §1.3) times the
/// cluster's predictive. Its harmonic mean over posterior draws is exactly the leave-one-out
/// predictive `p(x_i | X_{-i})` (see [`crate::diagnostics::loo`]). Cost: O(n K) predictives
/// and two marginal updates per point.
pub fn ln_loo_predictives<K: ConjugateKernel, P: NrmPrior>(
    kernel: &K,
    partition: &Partition<K>,
    prior: &P,
) -> Vec<f64> {
    let mut p = partition.clone();
    let empty = kernel.empty_stat();
    let mut ln_w = Vec::new();
    let mut terms = Vec::new();
    (0..p.n())
        .map(|i| {
            let home = p.remove(kernel, i);
            ln_w.clear();
            terms.clear();
            for (_, c) in p.clusters() {
                ln_w.push(prior.ln_kappa_join(c.size()));
                terms.push(kernel.ln_predictive(i, c.stat()));
            }
            ln_w.push(prior.ln_new_at(p.n(), p.n_clusters()));
            terms.push(kernel.ln_predictive(i, &empty));
            let total = log_sum_exp(&ln_w);
            let joint: Vec<f64> = ln_w.iter().zip(&terms).map(|(w, t)| w + t).collect();
            let value = log_sum_exp(&joint) - total;
            // Back where it was: its slot if the cluster lives on, else a new one.
            if p.cluster(home).is_some() {
                p.insert(kernel, i, home);
            } else {
                p.insert_new(kernel, i);
            }
            value
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseData;
    use crate::kernel::{ConjugateKernel, NormalWishart, NwHyper, NwStat};
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

    /// The Normal-Wishart weights of new points against many statistics (a sweep cache) are
    /// the per-pair predictives plus their terms, to rounding, for dimensions with unrolled
    /// and general solves; new points of another dimension are refused.
    #[test]
    fn cached_new_point_weights_are_the_pairwise_predictives() {
        for d in [1usize, 3, 9] {
            let n = 30;
            let values: Vec<f64> = (0..n * d)
                .map(|t| ((t * 37) % 17) as f64 * 0.3 + (t % d) as f64 * 2.0)
                .collect();
            let x = Arc::new(DenseData::new(n, d, values).unwrap());
            let hyper = NwHyper::from_data(&x).unwrap();
            let k = NormalWishart::new(x, hyper).unwrap();
            let labels: Vec<usize> = (0..n).map(|i| i % 11).collect();
            let part = Partition::from_labels(&k, &labels).unwrap();
            let empty = k.empty_stat();
            let mut entries: Vec<(&NwStat, f64)> = part
                .slots_by_key()
                .into_iter()
                .map(|s| (part.cluster(s).unwrap().stat(), 0.1 * s as f64))
                .collect();
            entries.push((&empty, -2.0));
            let new = DenseData::new(
                4,
                d,
                (0..4 * d).map(|t| (t % 5) as f64 * 1.7 - 3.0).collect(),
            )
            .unwrap();
            let mut seen = 0;
            k.ln_predictives_new(&new, &entries, &mut |j, w| {
                assert_eq!(w.len(), entries.len());
                for (t, &(s, a)) in entries.iter().enumerate() {
                    let want = a + k.ln_predictive_new(&new, j, s).unwrap();
                    assert!(
                        (w[t] - want).abs() <= 1e-10 * want.abs().max(1.0),
                        "d = {d}, point {j}, entry {t}: {} vs {want}",
                        w[t]
                    );
                }
                seen += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, 4);
            let wrong = DenseData::new(1, d + 1, vec![0.0; d + 1]).unwrap();
            assert!(k
                .ln_predictives_new(&wrong, &entries, &mut |_, _| Ok(()))
                .is_err());
        }
    }
}
