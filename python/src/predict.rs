//! Prediction for new points from a fitted model's draws: cluster probabilities under the
//! point estimate and the posterior predictive density averaged over the draws; and the log
//! joint of a labelled clustering.

use crate::convert::{model_spec, Input};
use crate::error::IntoPy;
use nrmm::model::Model;
use nrmm::partition::Partition;
use nrmm::predict::{LabelledDraw, Predictions};
use nrmm::run::HyperState;
use nrmm::Result;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::collections::BTreeMap;

/// One draw as Python hands it over: canonical labels of the training points and the
/// hyperparameter values by name.
pub type PyDraw<'py> = (PyReadonlyArray1<'py, i64>, BTreeMap<String, f64>);

/// Cluster log probabilities (m × (K + 1)) and log predictive densities (m).
type PyPredictions<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray1<f64>>);

/// A draw's labels and hyperparameters, typed from the values by name (the one place where
/// Python's names become values). Errors name a missing hyperparameter.
pub fn draw_of(d: &PyDraw<'_>) -> PyResult<LabelledDraw<i64>> {
    let hyper = HyperState::try_from(d.1.clone()).map_err(PyValueError::new_err)?;
    Ok((d.0.as_slice()?.to_vec(), hyper))
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
) -> PyResult<PyPredictions<'py>> {
    let spec = model_spec(model_json)?;
    let train = train.dataset()?;
    let new = new.new_points(&train)?;
    let estimate = draw_of(&estimate)?;
    let draws = draws.iter().map(draw_of).collect::<PyResult<Vec<_>>>()?;
    let Predictions {
        ln_probs,
        ln_density,
    } = py
        .detach(|| -> Result<_> {
            let model = Model::build(&spec, train)?;
            let (labels, hyper) = estimate;
            let draws = draws.into_iter().map(Ok);
            nrmm::predict::predict(&model, &new, (&labels, &hyper), draws)
        })
        .map_err(|e| {
            crate::error::rename(e).rename_parameters(&|n| (n == "new").then(|| "X".into()))
        })
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
