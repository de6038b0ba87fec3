//! Effective sample size and split R-hat over one or several chains (Vehtari, Gelman,
//! Simpson, Carpenter & Bürkner 2021, "Rank-normalization, folding, and localization: an
//! improved R-hat for assessing convergence of MCMC").

use statrs::distribution::{ContinuousCDF, Normal};

/// Effective sample size of one scalar series: [`ess_chains`] of a single chain (Geyer's
/// initial monotone sequence estimator on the autocorrelations).
///
/// A constant series returns its length: a chain stuck on one value of a discrete quantity
/// carries no information about its own variance, and is neither infinitely informative nor
/// worthless for the purposes of a noise floor. Cost: O(N · L) for the L lags used.
pub fn effective_sample_size(x: &[f64]) -> f64 {
    ess_chains(&[x])
}

/// Multi-chain effective sample size (Vehtari et al. 2021, eqs. 10-11; Stan's estimator).
///
/// With M chains of common length N (longer chains are cut to the shortest), within-chain
/// variance W, and `var⁺ = (N-1)/N · W + B/N`, the combined autocorrelation at lag t is
/// `ρ_t = 1 - (W - mean_m acov_m(t)) / var⁺`; Geyer's initial positive sequence of pair sums,
/// made monotone, gives `τ = -1 + 2 Σ_k P_k` and ESS = `M N / τ`, capped at `M N log10(M N)`.
/// Fewer than 4 draws per chain, or zero variance, return `M N`. Cost: O(M N L).
pub fn ess_chains(chains: &[&[f64]]) -> f64 {
    let m = chains.len();
    let n = chains.iter().map(|c| c.len()).min().unwrap_or(0);
    let total = (m * n) as f64;
    if m == 0 || n < 4 {
        return total;
    }
    let means: Vec<f64> = chains.iter().map(|c| mean(&c[..n])).collect();
    let variances: Vec<f64> = chains
        .iter()
        .zip(&means)
        .map(|(c, mu)| c[..n].iter().map(|x| (x - mu).powi(2)).sum::<f64>() / (n as f64 - 1.0))
        .collect();
    let w = mean(&variances);
    let b_over_n = if m > 1 { variance(&means) } else { 0.0 };
    let var_plus = (n as f64 - 1.0) / n as f64 * w + b_over_n;
    if var_plus <= 0.0 || !var_plus.is_finite() {
        return total;
    }
    // acov_m(t) with the biased (1/N) normalisation, as in Stan.
    let acov = |t: usize| -> f64 {
        chains
            .iter()
            .zip(&means)
            .map(|(c, mu)| {
                c[..n - t]
                    .iter()
                    .zip(&c[t..n])
                    .map(|(a, b)| (a - mu) * (b - mu))
                    .sum::<f64>()
                    / n as f64
            })
            .sum::<f64>()
            / m as f64
    };
    let rho = |t: usize| -> f64 {
        if t == 0 {
            1.0
        } else {
            1.0 - (w - acov(t)) / var_plus
        }
    };
    let mut sum_pairs = 0.0;
    let mut prev = f64::INFINITY;
    let mut t = 0;
    while t + 1 < n {
        let pair = rho(t) + rho(t + 1);
        if pair <= 0.0 {
            break;
        }
        let pair = pair.min(prev);
        sum_pairs += pair;
        prev = pair;
        t += 2;
    }
    let tau = (-1.0 + 2.0 * sum_pairs).max(1.0 / total.log10().max(1.0));
    (total / tau).min(total * total.log10().max(1.0))
}

/// Rank-normalised split R-hat (Vehtari et al. 2021, §4.2): each chain is split in halves,
/// draws are replaced by normal scores of their pooled ranks, and the classic `sqrt(var⁺ / W)`
/// is computed for the bulk and for the folded draws `|x - median|`; the larger is returned.
/// Values above 1.01 flag chains that have not mixed. Needs at least 4 draws per chain
/// (returns NaN otherwise). Cost: O(S log S) for S draws.
pub fn split_rhat(chains: &[&[f64]]) -> f64 {
    let split = split_chains(chains);
    if split.is_empty() || split[0].len() < 2 {
        return f64::NAN;
    }
    let refs: Vec<&[f64]> = split.iter().map(Vec::as_slice).collect();
    let bulk = rhat_plain(&rank_normalise(&refs));
    let median = {
        let mut all: Vec<f64> = refs.iter().flat_map(|c| c.iter().copied()).collect();
        all.sort_by(f64::total_cmp);
        let s = all.len();
        if s % 2 == 1 {
            all[s / 2]
        } else {
            0.5 * (all[s / 2 - 1] + all[s / 2])
        }
    };
    let folded: Vec<Vec<f64>> = refs
        .iter()
        .map(|c| c.iter().map(|x| (x - median).abs()).collect())
        .collect();
    let folded_refs: Vec<&[f64]> = folded.iter().map(Vec::as_slice).collect();
    let tail = rhat_plain(&rank_normalise(&folded_refs));
    bulk.max(tail)
}

/// Bulk effective sample size: [`ess_chains`] of the rank-normalised split chains
/// (Vehtari et al. 2021, §4.3).
pub fn ess_bulk(chains: &[&[f64]]) -> f64 {
    let split = split_chains(chains);
    let refs: Vec<&[f64]> = split.iter().map(Vec::as_slice).collect();
    let z = rank_normalise(&refs);
    let zr: Vec<&[f64]> = z.iter().map(Vec::as_slice).collect();
    ess_chains(&zr)
}

/// Tail effective sample size: the smaller ESS of the indicators `x ≤ q_0.05` and
/// `x ≥ q_0.95` over the split chains (Vehtari et al. 2021, §4.3).
pub fn ess_tail(chains: &[&[f64]]) -> f64 {
    let split = split_chains(chains);
    let mut all: Vec<f64> = split.iter().flat_map(|c| c.iter().copied()).collect();
    if all.is_empty() {
        return 0.0;
    }
    all.sort_by(f64::total_cmp);
    let q = |p: f64| all[((p * (all.len() - 1) as f64).round()) as usize];
    let (lo, hi) = (q(0.05), q(0.95));
    let ess_of = |f: &dyn Fn(f64) -> bool| {
        let ind: Vec<Vec<f64>> = split
            .iter()
            .map(|c| c.iter().map(|&x| f64::from(u8::from(f(x)))).collect())
            .collect();
        let r: Vec<&[f64]> = ind.iter().map(Vec::as_slice).collect();
        ess_chains(&r)
    };
    ess_of(&|x| x <= lo).min(ess_of(&|x| x >= hi))
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Unbiased sample variance; exactly zero for a constant sequence (the mean of equal values
/// can round away from them, and R-hat divides by the within-chain variance).
fn variance(x: &[f64]) -> f64 {
    if x.iter().all(|&v| v == x[0]) {
        return 0.0;
    }
    let mu = mean(x);
    x.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / (x.len() as f64 - 1.0)
}

/// Each chain cut to the common length (even) and split into its two halves.
fn split_chains(chains: &[&[f64]]) -> Vec<Vec<f64>> {
    let n = chains.iter().map(|c| c.len()).min().unwrap_or(0) / 2 * 2;
    if n < 4 {
        return Vec::new();
    }
    chains
        .iter()
        .flat_map(|c| [c[..n / 2].to_vec(), c[n / 2..n].to_vec()])
        .collect()
}

/// Normal scores of pooled ranks: `Φ⁻¹((r - 3/8) / (S + 1/4))`, ties given their average rank.
fn rank_normalise(chains: &[&[f64]]) -> Vec<Vec<f64>> {
    let mut order: Vec<(f64, usize, usize)> = chains
        .iter()
        .enumerate()
        .flat_map(|(m, c)| c.iter().enumerate().map(move |(i, &x)| (x, m, i)))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let s = order.len() as f64;
    let normal = Normal::standard();
    let mut out: Vec<Vec<f64>> = chains.iter().map(|c| vec![0.0; c.len()]).collect();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && order[end].0 == order[start].0 {
            end += 1;
        }
        let avg_rank = (start + end + 1) as f64 / 2.0;
        let z = normal.inverse_cdf((avg_rank - 0.375) / (s + 0.25));
        for &(_, m, i) in &order[start..end] {
            out[m][i] = z;
        }
        start = end;
    }
    out
}

fn rhat_plain(chains: &[Vec<f64>]) -> f64 {
    let n = chains[0].len() as f64;
    let means: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    let w = mean(&chains.iter().map(|c| variance(c)).collect::<Vec<_>>());
    let b_over_n = variance(&means);
    if w <= 0.0 {
        return if b_over_n > 0.0 { f64::INFINITY } else { 1.0 };
    }
    (((n - 1.0) / n * w + b_over_n) / w).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{uniform_open01, SeedPlan};

    fn ar1(seed: u64, phi: f64, n: usize, offset: f64) -> Vec<f64> {
        let mut rng = SeedPlan::new(seed).chain(0);
        let mut v = 0.0;
        (0..n)
            .map(|_| {
                let (u1, u2) = (uniform_open01(&mut rng), uniform_open01(&mut rng));
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                v = phi * v + (1.0 - phi * phi).sqrt() * z;
                v + offset
            })
            .collect()
    }

    /// AR(1) with coefficient φ has τ = (1 + φ)/(1 - φ); the estimate's relative standard
    /// error at N = 2·10⁵ is about 2-3%, so 10% is a loose but meaningful bound.
    #[test]
    fn ar1_matches_theory() {
        for phi in [0.0, 0.5, 0.8] {
            let n = 200_000;
            let x = ar1(11, phi, n, 0.0);
            let expected = n as f64 * (1.0 - phi) / (1.0 + phi);
            let got = effective_sample_size(&x);
            assert!(
                (got / expected - 1.0).abs() < 0.1,
                "φ {phi}: ESS {got} vs {expected}"
            );
        }
    }

    #[test]
    fn multi_chain_ess_and_rhat_on_mixed_chains() {
        let phi = 0.6;
        let chains: Vec<Vec<f64>> = (0..4).map(|s| ar1(20 + s, phi, 50_000, 0.0)).collect();
        let refs: Vec<&[f64]> = chains.iter().map(Vec::as_slice).collect();
        let expected = 200_000.0 * (1.0 - phi) / (1.0 + phi);
        for (name, got) in [("plain", ess_chains(&refs)), ("bulk", ess_bulk(&refs))] {
            assert!(
                (got / expected - 1.0).abs() < 0.1,
                "{name}: {got} vs {expected}"
            );
        }
        // Indicators of the 5% tails are less autocorrelated than the series; the tail ESS
        // sits between the bulk ESS and the total.
        let tail = ess_tail(&refs);
        assert!(tail > 0.5 * expected && tail < 200_000.0, "tail {tail}");
        let r = split_rhat(&refs);
        assert!(r < 1.01, "R-hat {r}");
    }

    #[test]
    fn rhat_flags_chains_that_disagree() {
        let a = ar1(30, 0.5, 5000, 0.0);
        let b = ar1(31, 0.5, 5000, 1.0);
        assert!(split_rhat(&[&a, &b]) > 1.1);
        // A trend inside one chain is caught by splitting it.
        let trend: Vec<f64> = (0..5000).map(|i| i as f64 / 1000.0).collect();
        assert!(split_rhat(&[&trend]) > 1.5);
    }

    /// Chains each stuck at its own number of clusters (a run on 784-dimensional images kept
    /// K = 8, 9, 9, 7): within-chain variance zero, between-chain variance not, so R-hat is
    /// infinite, not a large finite number made of the rounding of a mean of equal values.
    #[test]
    fn chains_constant_at_different_values_have_infinite_rhat() {
        let chains: Vec<Vec<f64>> = [8.0, 9.0, 9.0, 7.0].iter().map(|&k| vec![k; 500]).collect();
        let refs: Vec<&[f64]> = chains.iter().map(Vec::as_slice).collect();
        assert_eq!(split_rhat(&refs), f64::INFINITY);
        // The same value in every chain: nothing disagrees.
        let same = [vec![3.0; 500], vec![3.0; 500]];
        assert_eq!(split_rhat(&[&same[0], &same[1]]), 1.0);
        // A constant chain's variance is exactly zero whatever its value's rounding.
        assert_eq!(variance(&[0.1; 7]), 0.0);
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(effective_sample_size(&[2.0; 10]), 10.0);
        assert_eq!(ess_chains(&[]), 0.0);
        assert!(split_rhat(&[&[1.0, 2.0]]).is_nan());
    }
}
