//! Effective sample size of one scalar chain.

/// Effective sample size of a scalar series by Geyer's (1992) initial monotone sequence
/// estimator: `N / (1 + 2 Σ_t ρ_t)` with the autocorrelations summed in adjacent pairs while
/// the pair sums stay positive, each pair capped by the previous one.
///
/// A constant series has no information about its variance; it returns `N` so that a chain
/// stuck on one value of a discrete quantity is not reported as infinitely informative nor as
/// worthless. Cost: O(N · L) for the L lags used (L stops where the pairs turn negative).
pub fn effective_sample_size(x: &[f64]) -> f64 {
    let n = x.len();
    if n < 4 {
        return n as f64;
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    let centred: Vec<f64> = x.iter().map(|v| v - mean).collect();
    let var = centred.iter().map(|v| v * v).sum::<f64>() / n as f64;
    if var <= 0.0 {
        return n as f64;
    }
    let rho = |lag: usize| -> f64 {
        centred[..n - lag]
            .iter()
            .zip(&centred[lag..])
            .map(|(a, b)| a * b)
            .sum::<f64>()
            / (n as f64 * var)
    };
    let mut sum = 0.0;
    let mut prev_pair = f64::INFINITY;
    let mut lag = 1;
    while lag + 1 < n {
        let pair = rho(lag) + rho(lag + 1);
        if pair <= 0.0 {
            break;
        }
        let pair = pair.min(prev_pair);
        sum += pair;
        prev_pair = pair;
        lag += 2;
    }
    // ρ_0 = 1 sits outside the pairs: τ = -1 + 2 Σ_{pairs from lag 0} = 1 + 2 Σ_{t ≥ 1} ρ_t.
    let tau = (1.0 + 2.0 * sum).max(1.0 / n as f64);
    n as f64 / tau
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{uniform_open01, SeedPlan};

    /// AR(1) with coefficient φ has τ = (1 + φ)/(1 - φ).
    #[test]
    fn ar1_matches_theory() {
        let mut rng = SeedPlan::new(11).chain(0);
        let phi: f64 = 0.8;
        let n = 200_000;
        let mut x = Vec::with_capacity(n);
        let mut v = 0.0;
        for _ in 0..n {
            // Box-Muller normal from two open uniforms.
            let (u1, u2) = (uniform_open01(&mut rng), uniform_open01(&mut rng));
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            v = phi * v + (1.0 - phi * phi).sqrt() * z;
            x.push(v);
        }
        let expected = n as f64 * (1.0 - phi) / (1.0 + phi);
        let got = effective_sample_size(&x);
        assert!(
            (got / expected - 1.0).abs() < 0.1,
            "ESS {got} vs {expected}"
        );
    }

    #[test]
    fn independent_draws_have_full_size() {
        let mut rng = SeedPlan::new(12).chain(0);
        let x: Vec<f64> = (0..50_000).map(|_| uniform_open01(&mut rng)).collect();
        let got = effective_sample_size(&x);
        assert!((got / 50_000.0 - 1.0).abs() < 0.1, "ESS {got}");
        assert_eq!(effective_sample_size(&[2.0; 10]), 10.0);
    }
}
