//! The prior whose predictive rule weighs SVA's components: the Dirichlet process (Lin's
//! algorithm as published), or a Gibbs-type prior, the Pitman-Yor process or the mixture of
//! finite mixtures (MATH §1.8), through its urn.

use crate::prior::{Mfm, NrmPrior, PitmanYor, Prior};

/// Which predictive rule SVA weighs its components by (MATH §6.5). After `n` points in `K`
/// components of soft weights `w_k` (the sums of their responsibilities), the next point's
/// prior weight of component `k` and of a new one are:
///
/// - [`SvaPrior::Dp`]: `w_k` and the configuration's `α` (Lin 2013);
/// - [`SvaPrior::PitmanYor`]: `w_k - σ min(1, w_k)` and `θ + Kσ`, the Pitman-Yor urn's
///   `n_k - σ` and `θ + Kσ` at whole counts, kept positive for a component of less than one
///   point of weight (as the urn's `(1 - σ) n_k` for `n_k < 1`);
/// - [`SvaPrior::Mfm`]: `w_k + γ` and `γ V(n+1, K+1) / V(n+1, K)`, the MFM's urn (Miller &
///   Harrison 2018, eq. 3.7).
///
/// The first point opens the first component whatever its weight.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum SvaPrior {
    /// The Dirichlet process with the configuration's `alpha`.
    #[default]
    Dp,
    /// The Pitman-Yor process at its `θ` and `σ` (hyperpriors, if any, are not used).
    PitmanYor(PitmanYor),
    /// The mixture of finite mixtures at its `γ` and law of `K`.
    Mfm(Mfm),
}

impl SvaPrior {
    /// The rule of a sampler's prior: Pitman-Yor's and the MFM's urns, the DP's for the DP
    /// and NGGP (whose SVA start takes `α` as a DP concentration).
    pub fn of(prior: &Prior) -> SvaPrior {
        match prior {
            Prior::PitmanYor(p) => SvaPrior::PitmanYor(p.clone()),
            Prior::Mfm(p) => SvaPrior::Mfm(p.clone()),
            Prior::Dp(_) | Prior::Nggp(_) => SvaPrior::Dp,
        }
    }

    /// Whether it is the DP's rule (the default, left out of a configuration's JSON).
    pub fn is_dp(&self) -> bool {
        matches!(self, SvaPrior::Dp)
    }

    /// The log prior weight of a component of soft weight `w > 0`. Cost: O(1).
    pub fn ln_join(&self, w: f64) -> f64 {
        match self {
            SvaPrior::Dp => w.ln(),
            SvaPrior::PitmanYor(p) => (w - p.sigma() * w.min(1.0)).ln(),
            SvaPrior::Mfm(p) => (w + p.gamma()).ln(),
        }
    }

    /// The log prior weight of a new component for the point after `seen` points in `k`
    /// components; `alpha` is the DP's concentration. For `k = 0` any finite value (the
    /// point opens the first component): `0` for Pitman-Yor, `ln γ` for the MFM. Cost: O(1),
    /// a cached series for the MFM.
    pub fn ln_new(&self, alpha: f64, seen: usize, k: usize) -> f64 {
        match self {
            SvaPrior::Dp => alpha.ln(),
            SvaPrior::PitmanYor(p) => p.ln_new_at(seen + 1, k),
            SvaPrior::Mfm(p) => p.ln_new_at(seen + 1, k),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prior::KPrior;

    /// At whole counts the rules are the urns: the weights are the prior's predictive
    /// probabilities `p(point n+1 joins k | partition)` up to one common factor, which the
    /// EPPF's ratios give.
    #[test]
    fn at_whole_counts_the_rules_are_the_urns() {
        let sizes = [3usize, 1, 4];
        let n: usize = sizes.iter().sum();
        let priors: Vec<Prior> = vec![
            PitmanYor::fixed(0.7, 0.3).unwrap().into(),
            PitmanYor::fixed(-0.2, 0.4).unwrap().into(),
            Mfm::new(1.3, KPrior::Poisson { lambda: 2.0 }, None)
                .unwrap()
                .into(),
            Mfm::new(0.4, KPrior::Geometric { p: 0.3 }, None)
                .unwrap()
                .into(),
        ];
        for prior in priors {
            let rule = SvaPrior::of(&prior);
            let base = prior.ln_eppf(&sizes).unwrap();
            // Joining block j, then opening a new block.
            let mut eppf = Vec::new();
            let mut rule_w = Vec::new();
            for j in 0..sizes.len() {
                let mut s = sizes.to_vec();
                s[j] += 1;
                eppf.push(prior.ln_eppf(&s).unwrap() - base);
                rule_w.push(rule.ln_join(sizes[j] as f64));
            }
            let mut s = sizes.to_vec();
            s.push(1);
            eppf.push(prior.ln_eppf(&s).unwrap() - base);
            rule_w.push(rule.ln_new(f64::NAN, n, sizes.len()));
            let shift = eppf[0] - rule_w[0];
            for (e, r) in eppf.iter().zip(&rule_w) {
                assert!(
                    (e - r - shift).abs() < 1e-10,
                    "{prior:?}: {eppf:?} {rule_w:?}"
                );
            }
        }
    }

    #[test]
    fn weights_stay_positive_below_one_point() {
        let py = SvaPrior::PitmanYor(PitmanYor::fixed(1.0, 0.9).unwrap());
        for w in [1e-6, 0.05, 0.5, 0.95, 1.0] {
            assert!(py.ln_join(w).is_finite(), "{w}");
        }
        assert!(SvaPrior::Dp.ln_join(0.3) == 0.3f64.ln());
    }
}
