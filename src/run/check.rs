//! A sampler against the exact posterior of a tiny data set: the exact posterior over set
//! partitions (hyperparameters fixed or integrated, MATH §7.1), and one chain's post-burn-in
//! partitions compared with it (total variation against the noise floor of a perfect sampler
//! with the chain's effective sample size); and the log joint of a given clustering.

use super::{Chain, SamplerSettings};
use crate::diagnostics::effective_sample_size;
use crate::error::{Error, Result};
use crate::exact::{EmpiricalPartitions, ExactPosterior, SampleComparison};
use crate::kernel::ConjugateKernel;
use crate::model::Model;
use crate::partition::Partition;
use crate::prior::{NrmPrior, PartitionPrior, PartitionPriorSpec, Prior};
use crate::sampler::State;

/// Most points the exact posterior enumerates: 12 points have 4,213,597 partitions (about a
/// second).
pub const EXACT_MAX_POINTS: usize = 12;

/// Most points [`check_sampler`] takes: its sampler must visit the partitions often enough for
/// the comparison to mean something (10 points have 115,975).
pub const CHECK_MAX_POINTS: usize = 10;

/// Fewest sweeps [`check_sampler`] accepts: below it the comparison is noise.
pub const CHECK_MIN_SWEEPS: u64 = 100;

/// The log joint of `model`'s data clustered by `labels` (any integers, one per point) at the
/// model's initial hyperparameters (MATH §1.2), with the number of clusters. Errors if the
/// labels do not fit the data, or if the value is not finite (saying what to rescale). Cost:
/// building the partition's statistics, for Normal-Wishart O(n d² + K d³).
pub fn log_joint<L: Copy + Ord>(model: &Model, labels: &[L]) -> Result<(f64, usize)> {
    refuse_latent(model, "the log joint of given labels")?;
    let (ln_joint, k) = crate::with_kernel!(&model.kernel, |k| {
        let part = Partition::from_labels(k, labels)?;
        (part.ln_joint(&model.prior), part.n_clusters())
    });
    if !ln_joint.is_finite() {
        return Err(Error::Numerical(format!(
            "{} is {ln_joint}: a value of the data or of the hyperparameters is too extreme for \
             double precision; rescale the data (and `nw_xi`, `nw_psi`) to moderate magnitudes",
            model.prior.joint_label()
        )));
    }
    Ok((ln_joint, k))
}

/// The exact partition posterior targeted by samplers running `prior` over `kernel`'s data.
fn posterior<K: ConjugateKernel>(kernel: &K, prior: &Prior) -> Result<ExactPosterior> {
    let n = kernel.n_points();
    if n > EXACT_MAX_POINTS {
        return Err(Error::TooLarge(format!(
            "the exact posterior enumerates all set partitions; {n} points have too many \
             (at most {EXACT_MAX_POINTS}, whose 4,213,597 partitions take about a second)"
        )));
    }
    let weights = PartitionPrior::new(PartitionPriorSpec::from_prior(prior)?, n)?;
    let post = ExactPosterior::new(kernel, move |sizes: &[usize]| {
        weights.ln_weight(sizes).unwrap_or(f64::NAN)
    })?;
    let e_k = post.expected_k();
    if !e_k.is_finite() {
        return Err(Error::Numerical(format!(
            "the exact posterior's E[K] is {e_k}: a value of the data or of the \
             hyperparameters is too extreme for double precision; rescale the data (and \
             `xi`, `psi`) to moderate magnitudes"
        )));
    }
    Ok(post)
}

/// Refuses a kernel with latent values (the product kernel's full-covariance block over rows
/// with missing real entries, [`ConjugateKernel::has_latent`]): `what` needs the marginal of
/// the observed entries, which has no closed form there (a chain draws the missing entries
/// instead).
pub fn refuse_latent(model: &Model, what: &str) -> Result<()> {
    if crate::with_kernel!(&model.kernel, |k| k.has_latent()) {
        return Err(Error::Usage(format!(
            "{what} needs the marginal of the observed entries, which the full-covariance block \
             over rows with missing real entries does not have in closed form (its chains draw \
             the missing entries): give `mixed_real` independent"
        )));
    }
    Ok(())
}

/// Refuses kernel hyperpriors: the enumeration holds the kernel's hyperparameters fixed.
fn refuse_kernel_hyperpriors(model: &Model, verb: &str) -> Result<()> {
    if model.spec.kernel_hyperpriors {
        return Err(Error::Usage(format!(
            "{verb} enumerates partitions with the kernel's hyperparameters fixed; the \
             integral over kernel hyperpriors is not offered here: drop `kernel_hyperpriors`"
        )));
    }
    Ok(())
}

/// The exact posterior over the partitions of `model`'s data (at most [`EXACT_MAX_POINTS`]
/// points). Cost: O(B_n) in the Bell number of the points.
pub fn exact_posterior(model: &Model) -> Result<ExactPosterior> {
    refuse_kernel_hyperpriors(model, "exact")?;
    refuse_latent(model, "the exact posterior")?;
    crate::with_kernel!(&model.kernel, |k| posterior(k, &model.prior))
}

/// How a sampler's chain compares with the exact posterior.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SamplerCheck {
    /// Total variation and the noise floor, per partition.
    pub comparison: SampleComparison,
    /// Effective sample size of the chain's number of clusters.
    pub n_eff: f64,
    /// Partitions counted (after the burn-in of a tenth).
    pub draws: u64,
    /// `P(K = k)` exactly, by `k`.
    pub p_k_exact: Vec<f64>,
    /// The chain's frequencies of `K = k`.
    pub p_k_sampler: Vec<f64>,
}

impl SamplerCheck {
    /// The check as one JSON object: the total variation and its noise floor first, then
    /// every field.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "tv": self.comparison.tv,
            "tv_noise_floor": self.comparison.expected_tv,
            "n_eff": self.n_eff,
            "draws": self.draws,
            "p_k_exact": self.p_k_exact,
            "p_k_sampler": self.p_k_sampler,
            "comparison": self.comparison,
        })
    }

    /// Writes the check as text: the draws and their effective size, the total variation
    /// against its noise floor, and `P(K = k)` exactly and by the sampler side by side.
    pub fn print(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{} draws after 10% burn-in, effective size (of K) {:.0}",
            self.draws, self.n_eff
        )?;
        writeln!(
            out,
            "total variation to the exact posterior: {:.4}   (a perfect sampler of that size: {:.4})",
            self.comparison.tv, self.comparison.expected_tv
        )?;
        writeln!(out, "\n  k   P(K=k) exact   sampler")?;
        let (exact, sampler) = (&self.p_k_exact, &self.p_k_sampler);
        for k in 1..exact.len().max(sampler.len()) {
            let e = exact.get(k).copied().unwrap_or(0.0);
            let s = sampler.get(k).copied().unwrap_or(0.0);
            if e > 0.0 || s > 0.0 {
                writeln!(out, "  {k:>2}   {e:.6}     {s:.6}")?;
            }
        }
        Ok(())
    }
}

/// Runs `sweeps` sweeps of `sampler` from the single-cluster partition of `model`'s data (at
/// most [`CHECK_MAX_POINTS`] points; at least [`CHECK_MIN_SWEEPS`] sweeps, the first tenth
/// burn-in) with the stream of `seed`, and compares its partitions with the exact posterior.
/// Cost: the enumeration plus the sweeps.
pub fn check_sampler(
    model: &Model,
    sampler: &SamplerSettings,
    sweeps: u64,
    seed: u64,
) -> Result<SamplerCheck> {
    if sweeps < CHECK_MIN_SWEEPS {
        return Err(Error::param(
            "sweeps",
            sweeps,
            &format!("at least {CHECK_MIN_SWEEPS}"),
        ));
    }
    refuse_kernel_hyperpriors(model, "check-exact")?;
    refuse_latent(model, "check-exact")?;
    let n = model.n_points();
    if n > CHECK_MAX_POINTS {
        return Err(Error::TooLarge(format!(
            "check-exact compares against every set partition; {n} points are too many \
             (at most {CHECK_MAX_POINTS})"
        )));
    }
    let prior = &model.prior;
    let (post, empirical, ks) = crate::with_kernel!(&model.kernel, |k| {
        let post = posterior(k, prior)?;
        let state = State {
            partition: Partition::single(k),
            prior: prior.clone(),
        };
        let plan = crate::rng::SeedPlan::new(seed);
        let resample = model.spec.resamples_hyper();
        let schedule = sampler.schedule(resample, prior)?;
        let chain = Chain::new(k, state, plan.chain(0), schedule);
        let mut chain = super::ladder::temper(chain, sampler, resample, prior, plan, 0)?;
        let burn_in = sweeps / 10;
        let mut empirical = EmpiricalPartitions::new(n)?;
        // Reserve for the usual run lengths only; a huge count grows the series as it goes.
        let kept = usize::try_from(sweeps - burn_in).unwrap_or(usize::MAX);
        let mut ks = Vec::with_capacity(kept.min(1 << 20));
        for sweep in 0..sweeps {
            chain.sweep()?;
            if sweep >= burn_in {
                let labels = chain.state().partition.canonical_labels();
                empirical.push_labels(&labels)?;
                ks.push(chain.state().partition.n_clusters() as f64);
            }
        }
        Ok::<_, Error>((post, empirical, ks))
    })?;
    let n_eff = effective_sample_size(&ks);
    Ok(SamplerCheck {
        comparison: post.compare(&empirical, n_eff)?,
        n_eff,
        draws: empirical.total(),
        p_k_exact: post.k_probabilities(),
        p_k_sampler: empirical.k_frequencies(),
    })
}
