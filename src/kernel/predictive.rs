//! Predictives of points outside a kernel's own data set, for prediction and held-out
//! densities ([`crate::diagnostics::cluster_log_probabilities`]).

use super::ConjugateKernel;
use crate::error::Result;

/// A kernel that can evaluate the predictive of points outside its own data set.
pub trait PredictiveKernel: ConjugateKernel {
    /// The type of a set of new points.
    type NewData;

    /// Number of points in `data`.
    fn n_new(data: &Self::NewData) -> usize;

    /// `ln p(x*_j | X_S)` for point `j` of `data`.
    fn ln_predictive_new(&self, data: &Self::NewData, j: usize, s: &Self::Stat) -> Result<f64>;

    /// For every point `j` of `data` in order, `each(j, w)` with
    /// `w[t] = entries[t].1 + ln p(x*_j | entries[t].0)`: the weights of a new point against
    /// many statistics, which Normal-Wishart computes against a sweep cache built once
    /// ([`crate::kernel::SweepCache`]: the predictives in vectors of statistics, with the
    /// vector logarithm) and the default by [`PredictiveKernel::ln_predictive_new`] per pair.
    /// Each weight equals the pair's predictive plus its term to rounding. Errors as
    /// `ln_predictive_new` or `each`. Cost: one predictive per (point, entry).
    fn ln_predictives_new(
        &self,
        data: &Self::NewData,
        entries: &[(&Self::Stat, f64)],
        each: &mut dyn FnMut(usize, &[f64]) -> Result<()>,
    ) -> Result<()> {
        let mut w = Vec::with_capacity(entries.len());
        for j in 0..Self::n_new(data) {
            w.clear();
            for &(s, a) in entries {
                w.push(a + self.ln_predictive_new(data, j, s)?);
            }
            each(j, &w)?;
        }
        Ok(())
    }
}
