//! A table's missing entries filled from a fitted model's draws, and its clusters' profiles
//! (the library's [`nrmm::impute::impute`]).

use crate::convert::{model_spec, Input};
use crate::error::IntoPy;
use crate::predict::{draw_of, PyDraw};
use nrmm::impute::Imputation;
use nrmm::model::Model;
use nrmm::predict::LabelledDraw;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One filled entry as Python takes it: row (from 0), column name, the value as text (a
/// level's name, or the number), the value as a number (the number, or the level's code),
/// the level's probability, the predictive mean and standard deviation (`None` where they
/// do not apply).
type PyFilled = (
    usize,
    String,
    String,
    f64,
    Option<f64>,
    Option<f64>,
    Option<f64>,
);

/// A draw with labels as cluster indices, refusing negative ones.
fn indexed(d: &PyDraw<'_>) -> PyResult<LabelledDraw<usize>> {
    let (labels, hyper) = draw_of(d)?;
    let labels = labels
        .iter()
        .map(|&l| {
            usize::try_from(l).map_err(|_| {
                PyValueError::new_err(format!("invalid cluster label {l}: expected one >= 0"))
            })
        })
        .collect::<PyResult<Vec<usize>>>()?;
    Ok((labels, hyper))
}

/// The missing entries of the table `train` filled over `draws` under the model of
/// `model_json`, and the profiles of the clusters of `estimate` (labels and
/// hyperparameters). Returns a dict: `filled` (a list of [`PyFilled`], row by row),
/// `profiles` (JSON: per cluster its size and each column's predictive law), `draws` (how
/// many were averaged). The lock is released while the library works.
#[pyfunction]
pub fn impute<'py>(
    py: Python<'py>,
    train: Input<'py>,
    model_json: &str,
    estimate: PyDraw<'py>,
    draws: Vec<PyDraw<'py>>,
) -> PyResult<Bound<'py, PyDict>> {
    let spec = model_spec(model_json)?;
    let train = train.dataset()?;
    let (labels, hyper) = indexed(&estimate)?;
    let draws = draws.iter().map(indexed).collect::<PyResult<Vec<_>>>()?;
    let done = py
        .detach(|| {
            let model = Model::build(&spec, train)?;
            nrmm::impute::impute(&model, draws.into_iter().map(Ok), (&labels, &hyper))
        })
        .py_err()?;
    let out = PyDict::new(py);
    out.set_item("filled", py_filled(&done))?;
    let profiles = serde_json::to_string(&done.profiles)
        .map_err(|e| PyValueError::new_err(format!("profiles: {e}")))?;
    out.set_item("profiles", profiles)?;
    out.set_item("draws", done.draws)?;
    Ok(out)
}

/// The missing entries of the new rows `new` (matched to the training table's columns by
/// name) filled over `draws` of the model of `model_json` fitted on `train`, from each row's
/// posterior predictive given its observed entries (the library's
/// [`nrmm::impute::impute_new`]). Returns a dict: `filled` (as [`impute`]'s, rows counted
/// among the new rows) and `draws`. The lock is released while the library works.
#[pyfunction]
pub fn impute_new<'py>(
    py: Python<'py>,
    train: Input<'py>,
    model_json: &str,
    draws: Vec<PyDraw<'py>>,
    new: Input<'py>,
) -> PyResult<Bound<'py, PyDict>> {
    let spec = model_spec(model_json)?;
    let train = train.dataset()?;
    let new = new.new_points(&train)?;
    let draws = draws.iter().map(indexed).collect::<PyResult<Vec<_>>>()?;
    let done = py
        .detach(|| {
            let model = Model::build(&spec, train)?;
            nrmm::impute::impute_new(&model, &new, draws.into_iter().map(Ok))
        })
        .map_err(|e| {
            crate::error::rename(e).rename_parameters(&|n| (n == "new").then(|| "X".into()))
        })
        .py_err()?;
    let out = PyDict::new(py);
    out.set_item("filled", py_filled(&done))?;
    out.set_item("draws", done.draws)?;
    Ok(out)
}

/// The filled entries of `done` as Python takes them.
fn py_filled(done: &Imputation) -> Vec<PyFilled> {
    done.filled
        .iter()
        .map(|f| {
            let column = done
                .table
                .columns()
                .iter()
                .find(|c| c.name == f.column)
                .expect("a filled entry's column is the table's");
            (
                f.row,
                f.column.clone(),
                f.value.clone(),
                column.values[f.row],
                f.probability,
                f.mean,
                f.sd,
            )
        })
        .collect()
}
