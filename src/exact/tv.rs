//! The total variation distance of a Markov chain's visited partitions from the exact
//! posterior, next to its noise floor: the TV a perfect sampler would show with the chain's
//! effective number of draws (MATH §7.1, "Error bars").
//!
//! **Effective size by batch means of the partition indicators.** Each chain is cut into
//! `batches` consecutive batches of a common length `L`. For every partition `s` the sample
//! variance `S²_s` of its batch frequencies over all batches of all chains (so differences
//! between chains count as well) estimates `τ_s p_s (1 - p_s) / L`. The pooled
//! autocorrelation time is `τ = L Σ_s S²_s / Σ_s p̂_s (1 - p̂_s)`, the ratio of the total
//! variance of the frequency vector to that of independent draws, and `N_eff = N / τ`. This
//! is the quantity the TV needs: `E[TV] ≈ Σ_s sqrt(τ_s p_s (1 - p_s) / (2π N))` weighs each
//! partition's own autocorrelation time, which the pooled `τ` averages with the same weights
//! `p_s (1 - p_s)` (up to the square root). It is consistent when `L` is long next to the
//! chain's autocorrelation times (Flegal & Jones 2010).
//!
//! **Noise floor.** [`ExactPosterior::expected_tv_exact`] at `N_eff` draws: the expected TV of
//! `N_eff` independent draws from the posterior. An exact sampler's TV sits at this floor (its
//! TV concentrates: it is a sum of many nearly independent terms); a biased one stays above it
//! however long it runs.

use super::compare::EmpiricalPartitions;
use super::posterior::ExactPosterior;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// What [`ExactPosterior::chain_tv`] measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainTv {
    /// Draws used (pooled over chains; each chain cut to `batches · batch_len`).
    pub draws: u64,
    /// The common batch length `L`.
    pub batch_len: usize,
    /// The pooled autocorrelation time `τ` of the partition indicators.
    pub tau: f64,
    /// The effective number of draws `N / τ`.
    pub n_eff: f64,
    /// Total variation distance over partitions.
    pub tv: f64,
    /// Total variation distance over the number of blocks `K`.
    pub tv_k: f64,
    /// The noise floor: the exact expected TV of `round(N_eff)` (at least 1) independent draws.
    pub expected_tv: f64,
}

impl ChainTv {
    /// `tv / expected_tv`: about 1 for an exact sampler, well above 1 for a biased one.
    pub fn ratio_to_floor(&self) -> f64 {
        self.tv / self.expected_tv
    }
}

impl ExactPosterior {
    /// The TV of the partitions visited by `chains` (each a sequence of enumeration indices,
    /// [`ExactPosterior::index_of`], after any burn-in) from this posterior, with the chains'
    /// pooled effective size and the noise floor at that size (see the module documentation).
    ///
    /// Every chain is cut into `batches` batches of `L = min_c len_c / batches` draws; draws
    /// after the first `batches · L` of a chain are left out, so give chains of equal length.
    /// A sample that never leaves one partition carries no information on its own variance:
    /// its effective size is taken as 1.
    ///
    /// Cost: `O(N + chains · batches · distinct)` plus [`ExactPosterior::expected_tv_exact`]
    /// (`O(B_n)`), one count vector of `B_n` entries. Errors for no chains, `batches = 0`, fewer
    /// than two batches in all, a chain shorter than `batches`, or an index that is not a
    /// partition of this posterior.
    pub fn chain_tv<C: AsRef<[usize]>>(&self, chains: &[C], batches: usize) -> Result<ChainTv> {
        if chains.is_empty() {
            return Err(Error::Empty(
                "no chains to compare with the exact posterior".into(),
            ));
        }
        if batches == 0 || chains.len() * batches < 2 {
            return Err(Error::param(
                "batches",
                batches,
                "at least 1 per chain and at least 2 in all, for a batch-means variance",
            ));
        }
        let n_part = self.n_partitions();
        let min_len = chains.iter().map(|c| c.as_ref().len()).min().unwrap_or(0);
        let batch_len = min_len / batches;
        if batch_len == 0 {
            return Err(Error::param(
                "chain length",
                min_len,
                &format!("at least one draw per batch ({batches} batches)"),
            ));
        }
        if let Some(&bad) = chains
            .iter()
            .flat_map(|c| c.as_ref()[..batches * batch_len].iter())
            .find(|&&s| s >= n_part)
        {
            return Err(Error::param(
                "partition index",
                bad,
                &format!("an enumeration index below B_n = {n_part}"),
            ));
        }
        let mut totals = vec![0u64; n_part];
        for c in chains {
            for &s in &c.as_ref()[..batches * batch_len] {
                totals[s] += 1;
            }
        }
        let draws = (chains.len() * batches * batch_len) as u64;
        let p_hat = |s: usize| totals[s] as f64 / draws as f64;
        let sum_p_hat_sq: f64 = (0..n_part)
            .filter(|&s| totals[s] > 0)
            .map(|s| p_hat(s).powi(2))
            .sum();
        // Σ_s (f_bs - p̂_s)² = Σ_s f_bs² - 2 Σ_s f_bs p̂_s + Σ_s p̂_s², with only the partitions
        // a batch visits in the first two sums.
        let mut counts = vec![0u32; n_part];
        let mut touched = Vec::new();
        let mut sq_dev_sum = 0.0;
        for c in chains {
            for batch in c.as_ref()[..batches * batch_len].chunks_exact(batch_len) {
                for &s in batch {
                    if counts[s] == 0 {
                        touched.push(s);
                    }
                    counts[s] += 1;
                }
                let mut dev = sum_p_hat_sq;
                for &s in &touched {
                    let f = f64::from(counts[s]) / batch_len as f64;
                    dev += f * f - 2.0 * f * p_hat(s);
                    counts[s] = 0;
                }
                touched.clear();
                sq_dev_sum += dev.max(0.0);
            }
        }
        let n_batches = (chains.len() * batches) as f64;
        let var_sum = sq_dev_sum / (n_batches - 1.0);
        let iid_sum = 1.0 - sum_p_hat_sq;
        let tau = if iid_sum > 0.0 {
            (batch_len as f64 * var_sum / iid_sum).max(1e-9)
        } else {
            draws as f64
        };
        let n_eff = draws as f64 / tau;
        let mut empirical = EmpiricalPartitions::new(self.n_points())?;
        for (s, &c) in totals.iter().enumerate().filter(|(_, &c)| c > 0) {
            empirical.add(self.rgs_at(s)?, c)?;
        }
        Ok(ChainTv {
            draws,
            batch_len,
            tau,
            n_eff,
            tv: self.tv_distance(&empirical)?,
            tv_k: self.tv_k(&empirical)?,
            expected_tv: self.expected_tv_exact(n_eff.round().max(1.0) as u64)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::dp_ln_eppf;
    use crate::rng::SeedPlan;

    /// The DP(α = 1) prior over partitions of 5 points (52 partitions), as a posterior.
    fn prior5() -> ExactPosterior {
        ExactPosterior::prior(5, dp_ln_eppf(5, 1.0).unwrap()).unwrap()
    }

    /// `chains` chains of `len` i.i.d. draws, each repeated `repeat` times in a row.
    fn iid_chains(
        post: &ExactPosterior,
        chains: usize,
        len: usize,
        repeat: usize,
    ) -> Vec<Vec<usize>> {
        let sampler = post.sampler();
        (0..chains)
            .map(|c| {
                let mut rng = SeedPlan::new(17).chain(c as u64);
                let mut v = Vec::with_capacity(len);
                while v.len() < len {
                    let s = sampler.draw_index(&mut rng);
                    for _ in 0..repeat.min(len - v.len()) {
                        v.push(s);
                    }
                }
                v
            })
            .collect()
    }

    /// Independent draws: `τ` near 1 and the TV at its floor. With 80 batches of 1000 draws the
    /// relative standard error of the pooled variance is about `sqrt(2 / (79 · 51))` per
    /// partition, well under the 25% allowed.
    #[test]
    fn independent_draws_have_unit_tau_and_sit_at_the_floor() {
        let post = prior5();
        let chains = iid_chains(&post, 4, 20_000, 1);
        let m = post.chain_tv(&chains, 20).unwrap();
        assert_eq!(m.draws, 80_000);
        assert_eq!(m.batch_len, 1000);
        assert!((m.tau - 1.0).abs() < 0.25, "tau {}", m.tau);
        assert!(m.tv < 1.5 * m.expected_tv, "{m:?}");
        assert!(m.tv > 0.5 * m.expected_tv, "{m:?}");
    }

    /// Every draw repeated 5 times: `τ` near 5, so the floor is that of a fifth of the draws.
    #[test]
    fn repeated_draws_have_tau_of_the_repeat() {
        let post = prior5();
        let chains = iid_chains(&post, 4, 50_000, 5);
        let m = post.chain_tv(&chains, 20).unwrap();
        assert!((m.tau - 5.0).abs() < 1.25, "tau {}", m.tau);
        let iid = post.chain_tv(&iid_chains(&post, 4, 10_000, 1), 20).unwrap();
        assert!(
            (m.expected_tv / iid.expected_tv - 1.0).abs() < 0.15,
            "{m:?} vs {iid:?}"
        );
    }

    /// A chain that never moves: effective size 1, TV `1 - p(that partition)`.
    #[test]
    fn a_stuck_chain_has_one_effective_draw() {
        let post = prior5();
        let m = post.chain_tv(&[vec![3usize; 400]], 4).unwrap();
        assert_eq!(m.n_eff, 1.0);
        assert!((m.tv - (1.0 - post.probabilities()[3])).abs() < 1e-12);
    }

    /// Longer chains are cut to the shortest's batches.
    #[test]
    fn chains_are_cut_to_common_batches() {
        let post = prior5();
        let m = post
            .chain_tv(&[vec![0usize; 105], vec![1usize; 99]], 3)
            .unwrap();
        assert_eq!(m.batch_len, 33);
        assert_eq!(m.draws, 198);
    }

    #[test]
    fn bad_input_is_an_error() {
        let post = prior5();
        let none: [Vec<usize>; 0] = [];
        assert!(matches!(post.chain_tv(&none, 10), Err(Error::Empty(_))));
        assert!(post.chain_tv(&[vec![0usize; 10]], 0).is_err());
        assert!(post.chain_tv(&[vec![0usize; 10]], 1).is_err());
        assert!(post.chain_tv(&[vec![0usize; 3]], 4).is_err());
        let err = post.chain_tv(&[vec![0usize, 52, 1, 2]], 2).unwrap_err();
        assert!(err.to_string().contains("52"), "{err}");
    }
}
