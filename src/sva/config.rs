//! The settings of an SVA fit, validated before any work is done.

use super::SvaPrior;
use crate::error::{Error, Result};

/// Settings of SVA (MATH §6.5). Build with [`SvaConfig::new`] (plain SVA) or
/// [`SvaConfig::with_prune_merge`] (SVA-PM), adjust the public fields if needed; every fit
/// validates them first ([`SvaConfig::validate`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SvaConfig {
    /// DP concentration α > 0: the weight `w_{K+1} = α` of the new component (the DP's rule
    /// only).
    pub alpha: f64,
    /// New-component threshold ε in (0, 1): a component is created when the new one's
    /// responsibility exceeds it.
    pub epsilon: f64,
    /// Pruning and merging (SVA-PM); `None` for plain SVA.
    pub prune_merge: Option<PruneMerge>,
    /// The predictive rule weighing the components ([`SvaPrior`]): the DP's by default.
    #[serde(default, skip_serializing_if = "SvaPrior::is_dp")]
    pub prior: SvaPrior,
}

/// The prune-and-merge settings of SVA-PM (MATH §6.5).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PruneMerge {
    /// ε_r in [0, 1): a component whose share `w_k / Σ_l w_l` falls below it is removed.
    pub prune_threshold: f64,
    /// ε_d in [0, 1]: two components whose mean responsibility difference
    /// `d_ρ(k, k') = (1/i) Σ_{j≤i} |ρ_j(k) - ρ_j(k')|` falls below it are merged.
    pub merge_threshold: f64,
    /// Points between two checks, at least 1 (raised to the current K, so that the O(K²)
    /// check costs O(K) per point).
    pub check_interval: usize,
}

impl Default for PruneMerge {
    /// ε_r = 1e-3, ε_d = 0.01, a check every 100 points.
    ///
    /// ε_d must stay below the smallest share of a cluster worth keeping: two components
    /// with disjoint responsibilities are `(w_k + w_l) / i` apart, so any two whose joint
    /// share is below ε_d are merged whatever their overlap.
    fn default() -> Self {
        PruneMerge {
            prune_threshold: 1e-3,
            merge_threshold: 0.01,
            check_interval: 100,
        }
    }
}

impl PruneMerge {
    /// The settings given, each one not given at its default ([`PruneMerge::default`]).
    pub fn given(
        prune_threshold: Option<f64>,
        merge_threshold: Option<f64>,
        check_interval: Option<usize>,
    ) -> Self {
        let d = PruneMerge::default();
        PruneMerge {
            prune_threshold: prune_threshold.unwrap_or(d.prune_threshold),
            merge_threshold: merge_threshold.unwrap_or(d.merge_threshold),
            check_interval: check_interval.unwrap_or(d.check_interval),
        }
    }
}

impl SvaConfig {
    /// The default new-component threshold ε.
    pub const DEFAULT_EPSILON: f64 = 0.1;

    /// Plain SVA with concentration `alpha` and ε = [`SvaConfig::DEFAULT_EPSILON`].
    pub fn new(alpha: f64) -> Self {
        SvaConfig {
            alpha,
            epsilon: Self::DEFAULT_EPSILON,
            prune_merge: None,
            prior: SvaPrior::Dp,
        }
    }

    /// SVA-PM with concentration `alpha`, ε = [`SvaConfig::DEFAULT_EPSILON`] and the
    /// default [`PruneMerge`] settings.
    pub fn with_prune_merge(alpha: f64) -> Self {
        SvaConfig {
            prune_merge: Some(PruneMerge::default()),
            ..Self::new(alpha)
        }
    }

    /// Checks every setting; the error names the setting, its value and the admissible
    /// range. Cost: O(1).
    pub fn validate(&self) -> Result<()> {
        if self.prior.is_dp() && !(self.alpha > 0.0 && self.alpha.is_finite()) {
            return Err(Error::param("alpha", self.alpha, "a finite number > 0"));
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) {
            return Err(Error::param(
                "epsilon",
                self.epsilon,
                "a new-component threshold in (0, 1)",
            ));
        }
        if let Some(pm) = &self.prune_merge {
            if !(pm.prune_threshold >= 0.0 && pm.prune_threshold < 1.0) {
                return Err(Error::param(
                    "prune_threshold",
                    pm.prune_threshold,
                    "a share of the total weight in [0, 1)",
                ));
            }
            if !(0.0..=1.0).contains(&pm.merge_threshold) {
                return Err(Error::param(
                    "merge_threshold",
                    pm.merge_threshold,
                    "a mean responsibility difference in [0, 1]",
                ));
            }
            if pm.check_interval == 0 {
                return Err(Error::param(
                    "check_interval",
                    pm.check_interval,
                    "at least 1 point between checks",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_name_the_setting() {
        SvaConfig::new(1.0).validate().unwrap();
        SvaConfig::with_prune_merge(0.5).validate().unwrap();
        let bad = |c: SvaConfig, name: &str| {
            let m = c.validate().unwrap_err().to_string();
            assert!(m.contains(name), "{m}");
        };
        bad(SvaConfig::new(0.0), "alpha");
        bad(SvaConfig::new(f64::NAN), "alpha");
        bad(SvaConfig::new(f64::INFINITY), "alpha");
        for eps in [0.0, 1.0, -0.1, f64::NAN] {
            bad(
                SvaConfig {
                    epsilon: eps,
                    ..SvaConfig::new(1.0)
                },
                "epsilon",
            );
        }
        let pm = |f: &dyn Fn(&mut PruneMerge)| {
            let mut c = SvaConfig::with_prune_merge(1.0);
            f(c.prune_merge.as_mut().unwrap());
            c
        };
        bad(pm(&|p| p.prune_threshold = 1.0), "prune_threshold");
        bad(pm(&|p| p.prune_threshold = -1e-9), "prune_threshold");
        bad(pm(&|p| p.merge_threshold = 1.5), "merge_threshold");
        bad(pm(&|p| p.merge_threshold = f64::NAN), "merge_threshold");
        bad(pm(&|p| p.check_interval = 0), "check_interval");
    }
}
