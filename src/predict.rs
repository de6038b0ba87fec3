//! Prediction for new points from a fitted model: the probability of joining each cluster of a
//! point estimate (or a new one), and the posterior predictive density averaged over draws;
//! and the leave-one-out predictive fit of the training points (LPML, WAIC, PSIS-LOO) by which
//! two runs' models are compared. One copy for every front end (the command line's `predict`
//! and `diagnose --predictive`, the Python package).

use crate::data::Dataset;
use crate::diagnostics::{
    cluster_log_probabilities, ln_loo_predictives, ln_predictive_density, predictive_fit,
    PredictiveFit,
};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::math::ln_add_exp;
use crate::model::{AnyKernel, Model};
use crate::partition::Partition;
use crate::prior::Prior;
use crate::run::summary::DrawSource;
use crate::run::{HyperState, RunDir, Summary};
use rayon::prelude::*;

/// A partition of the training points (any integer labels) with the hyperparameters it was
/// drawn with.
pub type LabelledDraw<L> = (Vec<L>, HyperState);

/// What [`predict`] finds for the new points.
#[derive(Clone, Debug, PartialEq)]
pub struct Predictions {
    /// Per new point, the log probability of joining each cluster of the estimate (canonical
    /// label order) and, last, a new cluster.
    pub ln_probs: Vec<Vec<f64>>,
    /// Per new point, the log posterior predictive density averaged over the draws (`-inf`
    /// without draws).
    pub ln_density: Vec<f64>,
}

impl Predictions {
    /// The predictions as CSV with `k` clusters: `point,label,probability,ln_predictive_density`
    /// (the most probable cluster; `k` is a new one) then `p_0 ... p_{k-1},p_new`.
    pub fn csv(&self, k: usize) -> String {
        use std::fmt::Write;
        let mut out = String::from("point,label,probability,ln_predictive_density");
        for c in 0..k {
            let _ = write!(out, ",p_{c}");
        }
        out.push_str(",p_new\n");
        for (i, (lp, d)) in self.ln_probs.iter().zip(&self.ln_density).enumerate() {
            let (best, &ln_p) = lp
                .iter()
                .enumerate()
                .max_by(|x, y| x.1.total_cmp(y.1))
                .expect("at least the new-cluster option");
            let _ = write!(out, "{i},{best},{:.6},{d:.6}", ln_p.exp());
            for p in lp {
                let _ = write!(out, ",{:.6}", p.exp());
            }
            out.push('\n');
        }
        out
    }
}

/// Errors unless `new` holds points of the kind and dimension of the model's data
/// ([`Kernel::new_points`]). The new points are named `` `new` `` in the message, for front
/// ends to rename.
pub fn check_new(kernel: &AnyKernel, new: &Dataset) -> Result<()> {
    crate::with_kernel!(kernel, |k| k.new_points(new).map(|_| ()))
}

/// Predictions for the points of `new` under `model` (for a table's run, new rows matched to
/// its columns and levels by name, [`crate::data::table::align_to`], missing entries
/// marginalised): cluster probabilities under the point
/// estimate `estimate` (labels of the training points and its hyperparameters) and the
/// predictive density averaged over `draws`, consumed one at a time. Each draw's prior and
/// kernel are the model's moved to its hyperparameters. Cost: O((1 + draws) · m · K)
/// predictive evaluations.
pub fn predict<L: Copy + Ord>(
    model: &Model,
    new: &Dataset,
    estimate: (&[L], &HyperState),
    draws: impl IntoIterator<Item = Result<LabelledDraw<L>>>,
) -> Result<Predictions> {
    let p = &model.prior;
    // New rows for a table's run take its columns, types and level codes by name.
    // New points of a model that left constant columns out lose the same columns.
    let aligned;
    let new = match (&model.kernel, new, &model.columns) {
        (AnyKernel::Mixed(k), Dataset::Table(_) | Dataset::Dense(_), _) => {
            aligned = Dataset::Table(crate::data::table::align_to(new, k.table())?);
            &aligned
        }
        (_, Dataset::Dense(x), Some(columns)) => {
            aligned = Dataset::Dense(columns.select(x)?);
            &aligned
        }
        _ => new,
    };
    crate::with_kernel!(&model.kernel, |k| predict_with(
        k,
        p,
        k.new_points(new)?,
        estimate,
        draws
    ))
}

/// Predictions for the points of `new` from the run `run`, whose data `model` was built
/// over: cluster probabilities under the run's point estimate after `burn_in` sweeps of each
/// chain (default: the run's own) and the predictive density over its draws, read one chain
/// at a time. Returns them with the number of clusters of the estimate. Errors if the data
/// have changed since the run, or no partition draw is left after the burn-in.
pub fn predict_run(
    run: &RunDir,
    model: &Model,
    new: &Dataset,
    burn_in: Option<u64>,
) -> Result<(Predictions, usize)> {
    let dir = run.dir.display();
    if model.fingerprint != run.record.fingerprint {
        return Err(Error::Usage(format!(
            "the data {dir} was run on have changed since: its draws no longer describe them"
        )));
    }
    let report = Summary::of(std::slice::from_ref(run), burn_in)?;
    let estimate = report.point_estimate.as_ref().ok_or_else(|| {
        Error::Usage(format!(
            "{dir} has no partition draws after its burn-in: lower `burn_in`"
        ))
    })?;
    let draws = report.sources.iter().flat_map(|s| match s.read() {
        Ok(d) => (d.into_iter()).map(|d| Ok((d.labels, d.hyper))).collect(),
        Err(e) => vec![Err(e)],
    });
    let rows = predict(model, new, (&estimate.labels, &estimate.hyper), draws)?;
    Ok((rows, estimate.n_clusters))
}

/// [`predict`] for one kernel type.
fn predict_with<K: Kernel, L: Copy + Ord>(
    kernel: &K,
    base: &Prior,
    new: &K::NewData,
    (labels, hyper): (&[L], &HyperState),
    draws: impl IntoIterator<Item = Result<LabelledDraw<L>>>,
) -> Result<Predictions> {
    // Each draw's kernel and prior: the model's moved to the draw's values.
    let at = |h: &HyperState| -> Result<(Option<K>, Prior)> {
        Ok((
            h.kernel.map(|h| kernel.at(&h)).transpose()?,
            base.at(h.prior)?,
        ))
    };
    let (moved, prior) = at(hyper)?;
    let k = moved.as_ref().unwrap_or(kernel);
    let partition = Partition::from_labels(k, labels)?;
    let ln_probs = cluster_log_probabilities(k, &partition, &prior, new)?;
    let mut ln_sum = vec![f64::NEG_INFINITY; ln_probs.len()];
    let mut n_draws = 0usize;
    for d in draws {
        let (labels, hyper) = d?;
        let (moved, prior) = at(&hyper)?;
        let k = moved.as_ref().unwrap_or(kernel);
        let state = [(Partition::from_labels(k, &labels)?, prior)];
        for (s, v) in ln_sum
            .iter_mut()
            .zip(ln_predictive_density(k, &state, new)?)
        {
            *s = ln_add_exp(*s, v);
        }
        n_draws += 1;
    }
    let ln_draws = (n_draws.max(1) as f64).ln();
    Ok(Predictions {
        ln_probs,
        ln_density: ln_sum.into_iter().map(|s| s - ln_draws).collect(),
    })
}

/// The leave-one-out predictive fit ([`crate::diagnostics::loo`]) of `model`'s data from the
/// partition draws of `sources` (a summary's, after its burn-in): per draw, each point's
/// predictive given the others' partition and the draw's hyperparameters
/// ([`ln_loo_predictives`]), the draws in parallel. Errors without draws or if a draw does not
/// label the model's points. Cost: O(S n K) predictives for S draws.
pub fn predictive_fit_of(model: &Model, sources: &[DrawSource]) -> Result<PredictiveFit> {
    crate::run::check::refuse_latent(model, "the leave-one-out predictive fit")?;
    let mut draws = Vec::new();
    for source in sources {
        draws.extend(source.read()?.into_iter().map(|d| (d.labels, d.hyper)));
    }
    if draws.is_empty() {
        return Err(Error::Usage(
            "no partition draws after the burn-in: no predictive fit (lower `burn_in`)".into(),
        ));
    }
    let p = &model.prior;
    let rows = crate::with_kernel!(&model.kernel, |k| loo_rows(k, p, &draws))?;
    predictive_fit(&rows)
}

/// Each draw's [`ln_loo_predictives`] under the model's kernel and prior moved to the draw's
/// hyperparameters.
fn loo_rows<K: Kernel>(
    kernel: &K,
    base: &Prior,
    draws: &[LabelledDraw<usize>],
) -> Result<Vec<Vec<f64>>> {
    draws
        .par_iter()
        .map(|(labels, hyper)| {
            let moved = hyper.kernel.map(|h| kernel.at(&h)).transpose()?;
            let k = moved.as_ref().unwrap_or(kernel);
            let prior = base.at(hyper.prior)?;
            let partition = Partition::from_labels(k, labels)?;
            Ok(ln_loo_predictives(k, &partition, &prior))
        })
        .collect()
}
