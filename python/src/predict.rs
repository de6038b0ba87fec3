//! Prediction for new points from a fitted model's draws: cluster probabilities under the
//! point estimate and the posterior predictive density averaged over the draws; and the log
//! joint of a labelled clustering.

use crate::convert::{model_spec, Input};
use crate::error::IntoPy;
use nrmm::data::Dataset;
use nrmm::diagnostics::{cluster_log_probabilities, ln_predictive_density, PredictiveKernel};
use nrmm::kernel::HyperKernel;
use nrmm::math::ln_add_exp;
use nrmm::model::AnyKernel;
use nrmm::model::Model;
use nrmm::partition::Partition;
use nrmm::prior::Prior;
use nrmm::{Error, Result};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use std::collections::BTreeMap;

/// One draw as Python hands it over: canonical labels of the training points and the
/// hyperparameter values by name.
type PyDraw<'py> = (PyReadonlyArray1<'py, i64>, BTreeMap<String, f64>);

/// Cluster log probabilities (m × (K + 1)) and log predictive densities (m).
type Predictions<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray1<f64>>);

/// A draw in the library's terms.
struct Draw {
    labels: Vec<i64>,
    hyper: BTreeMap<String, f64>,
}

impl Draw {
    fn of(d: &PyDraw<'_>) -> PyResult<Self> {
        Ok(Draw {
            labels: d.0.as_slice()?.to_vec(),
            hyper: d.1.clone(),
        })
    }
}

/// Cluster log probabilities (m × (K + 1), the last column a new cluster) under `estimate`,
/// and the log predictive density of each new point averaged over `draws`. Cost:
/// O((1 + S) · m · K) predictive evaluations.
fn predict_with<K: PredictiveKernel + HyperKernel>(
    kernel: &K,
    base: &Prior,
    estimate: &Draw,
    draws: &[Draw],
    new: &K::NewData,
) -> Result<(Vec<Vec<f64>>, Vec<f64>)> {
    let moved = kernel.at_values(&estimate.hyper)?;
    let k = moved.as_ref().unwrap_or(kernel);
    let partition = Partition::from_labels(k, &estimate.labels)?;
    let ln_probs =
        cluster_log_probabilities(k, &partition, &base.at_values(&estimate.hyper)?, new)?;
    let mut ln_sum = vec![f64::NEG_INFINITY; ln_probs.len()];
    for d in draws {
        let moved = kernel.at_values(&d.hyper)?;
        let k = moved.as_ref().unwrap_or(kernel);
        let state = [(
            Partition::from_labels(k, &d.labels)?,
            base.at_values(&d.hyper)?,
        )];
        for (s, v) in ln_sum
            .iter_mut()
            .zip(ln_predictive_density(k, &state, new)?)
        {
            *s = ln_add_exp(*s, v);
        }
    }
    let ln_draws = (draws.len().max(1) as f64).ln();
    Ok((ln_probs, ln_sum.into_iter().map(|s| s - ln_draws).collect()))
}

/// Checks that the new points fit the training data's kind and dimension.
fn check_new(kernel: &AnyKernel, new: &Dataset) -> Result<()> {
    let mismatch = |what: String| Err(Error::DimensionMismatch(what));
    match (kernel, new) {
        (AnyKernel::Nw(_) | AnyKernel::Diag(_), Dataset::Dense(x)) if x.d() != kernel.dim() => {
            mismatch(format!(
                "X has {} features, but the model was fitted on {}",
                x.d(),
                kernel.dim()
            ))
        }
        (AnyKernel::Md(_), Dataset::Counts(c)) if c.vocab() > kernel.dim() => mismatch(format!(
            "X has a vocabulary of {} words, but the model was fitted on {}",
            c.vocab(),
            kernel.dim()
        )),
        (AnyKernel::Nw(_) | AnyKernel::Diag(_), Dataset::Counts(_)) => Err(Error::Usage(
            "X holds counts, but the model was fitted on real vectors".into(),
        )),
        (AnyKernel::Md(_), Dataset::Dense(_)) => Err(Error::Usage(
            "X holds real vectors, but the model was fitted on counts".into(),
        )),
        _ => Ok(()),
    }
}

/// Predictions for the points of `new` under a model fitted on `train`: the log probability of
/// joining each cluster of the point estimate `estimate` (canonical labels and hyperparameters;
/// the last column is a new cluster), and the log posterior predictive density averaged over
/// `draws`. Returns `(ln_probabilities (m × (K+1)), ln_density (m))`; the lock is released.
#[pyfunction]
pub fn predict<'py>(
    py: Python<'py>,
    train: Input<'py>,
    model_json: &str,
    estimate: PyDraw<'py>,
    draws: Vec<PyDraw<'py>>,
    new: Input<'py>,
) -> PyResult<Predictions<'py>> {
    let spec = model_spec(model_json)?;
    let (train, new) = (train.dataset()?, new.dataset()?);
    let estimate = Draw::of(&estimate)?;
    let draws = draws.iter().map(Draw::of).collect::<PyResult<Vec<_>>>()?;
    let (ln_probs, ln_density) = py
        .detach(|| -> Result<_> {
            let model = Model::build(&spec, train)?;
            check_new(&model.kernel, &new)?;
            let p = &model.prior;
            match (&model.kernel, &new) {
                (AnyKernel::Nw(k), Dataset::Dense(x)) => predict_with(k, p, &estimate, &draws, x),
                (AnyKernel::Diag(k), Dataset::Dense(x)) => predict_with(k, p, &estimate, &draws, x),
                (AnyKernel::Md(k), Dataset::Counts(c)) => predict_with(k, p, &estimate, &draws, c),
                _ => unreachable!("checked by check_new"),
            }
        })
        .map_err(crate::error::rename)
        .py_err()?;
    let m = ln_probs.len();
    let width = ln_probs.first().map_or(0, Vec::len);
    let flat: Vec<f64> = ln_probs.into_iter().flatten().collect();
    Ok((
        flat.into_pyarray(py).reshape([m, width])?,
        ln_density.into_pyarray(py),
    ))
}

/// The log joint `ln p(X, partition)` of `data` clustered by `labels` under the model of
/// `model_json` with its initial hyperparameters.
#[pyfunction]
pub fn log_joint(
    py: Python<'_>,
    data: Input<'_>,
    model_json: &str,
    labels: PyReadonlyArray1<'_, i64>,
) -> PyResult<f64> {
    let spec = model_spec(model_json)?;
    let data = data.dataset()?;
    let labels = labels.as_slice()?.to_vec();
    py.detach(|| -> Result<f64> {
        let model = Model::build(&spec, data)?;
        let prior = &model.prior;
        nrmm::with_kernel!(&model.kernel, |k| {
            let partition = Partition::from_labels(k, &labels)?;
            Ok(partition.ln_joint(prior))
        })
    })
    .py_err()
}
