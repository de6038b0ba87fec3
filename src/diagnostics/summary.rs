//! The convergence summary of one scalar quantity over several chains (log joint, number of
//! clusters, a hyperparameter), as `run` and `diagnose` report it.

use super::ess::{ess_bulk, ess_tail, split_rhat};

/// Posterior mean and standard deviation, bulk and tail effective sample sizes and
/// rank-normalised split R-hat of one quantity over chains (Vehtari et al. 2021; see
/// [`ess_bulk`], [`ess_tail`], [`split_rhat`]). Statistics that need more draws than there are
/// are NaN (`null` in JSON).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SeriesSummary {
    /// Number of chains.
    pub chains: usize,
    /// Draws over all chains.
    pub draws: usize,
    /// Mean over all draws.
    pub mean: f64,
    /// Standard deviation over all draws.
    pub sd: f64,
    /// Bulk effective sample size.
    pub ess_bulk: f64,
    /// Tail effective sample size (5% and 95% quantiles).
    pub ess_tail: f64,
    /// Rank-normalised split R-hat (bulk and folded, the larger); infinite when every chain
    /// kept one value but not all the same one (`null` in JSON, with a warning in the run's
    /// summary).
    pub rhat: f64,
}

impl SeriesSummary {
    /// The summary of `chains` (post-burn-in draws of each chain, equally spaced within a
    /// chain; see [`common_spacing`] for chains thinned differently). Cost O(S log S + S L)
    /// for S draws and L autocorrelation lags.
    pub fn of(chains: &[&[f64]]) -> Self {
        let draws: usize = chains.iter().map(|c| c.len()).sum();
        let (mean, sd) = if draws == 0 {
            (f64::NAN, f64::NAN)
        } else {
            let mean = chains.iter().flat_map(|c| c.iter()).sum::<f64>() / draws as f64;
            let ss: f64 = chains
                .iter()
                .flat_map(|c| c.iter())
                .map(|x| (x - mean) * (x - mean))
                .sum();
            let sd = if draws > 1 {
                (ss / (draws - 1) as f64).sqrt()
            } else {
                f64::NAN
            };
            (mean, sd)
        };
        let enough = chains.iter().all(|c| c.len() >= 4) && !chains.is_empty();
        SeriesSummary {
            chains: chains.len(),
            draws,
            mean,
            sd,
            ess_bulk: if enough { ess_bulk(chains) } else { f64::NAN },
            ess_tail: if enough { ess_tail(chains) } else { f64::NAN },
            rhat: if enough { split_rhat(chains) } else { f64::NAN },
        }
    }
}

/// Chains recorded at different spacings (`(values, sweeps between values)`) brought to a
/// common one for multi-chain diagnostics: a chain whose spacing divides the coarsest keeps
/// every `coarsest / spacing`-th value, counted back from its last; others are left as they are.
/// Returns the values and the common spacing.
pub fn common_spacing(chains: &[(&[f64], u64)]) -> (Vec<Vec<f64>>, u64) {
    let coarsest = chains.iter().map(|&(_, s)| s.max(1)).max().unwrap_or(1);
    let out = chains
        .iter()
        .map(|&(values, spacing)| {
            let spacing = spacing.max(1);
            if coarsest % spacing != 0 {
                return values.to_vec();
            }
            let step = (coarsest / spacing) as usize;
            let offset = values.len().saturating_sub(1) % step;
            values.iter().skip(offset).step_by(step).copied().collect()
        })
        .collect();
    (out, coarsest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_and_degenerate_cases() {
        let s = SeriesSummary::of(&[&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]]);
        assert_eq!((s.chains, s.draws), (2, 8));
        assert!((s.mean - 4.5).abs() < 1e-12);
        assert!((s.sd - 6.0f64.sqrt()).abs() < 1e-12);
        assert!(s.rhat > 1.5, "two chains that disagree: {}", s.rhat);
        let few = SeriesSummary::of(&[&[1.0, 2.0]]);
        assert!(few.ess_bulk.is_nan() && few.rhat.is_nan());
        let none = SeriesSummary::of(&[]);
        assert_eq!(none.draws, 0);
        assert!(none.mean.is_nan());
        let json = serde_json::to_string(&few).unwrap();
        assert!(json.contains("\"rhat\":null"), "{json}");
    }

    #[test]
    fn spacing_is_made_common_from_the_end() {
        let a: Vec<f64> = (1..=8).map(f64::from).collect();
        let b = [10.0, 20.0, 30.0];
        let (out, s) = common_spacing(&[(&a, 1), (&b, 4)]);
        assert_eq!(s, 4);
        assert_eq!(out[0], vec![4.0, 8.0]);
        assert_eq!(out[1], b.to_vec());
        let (out, _) = common_spacing(&[(&a, 2), (&b, 3)]);
        assert_eq!(out[0], a, "3 is not a multiple of 2: left as it is");
    }
}
