//! NumPy arrays and tables (a data frame's columns as text) to the library's data sets, and
//! the model's settings to its kernel and prior.

use crate::error::IntoPy;
use nrmm::data::{Dataset, DenseData, SparseCounts};
use nrmm::model::ModelSpec;
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A data set as the Python half hands it over: a dense `float64` matrix (real vectors), the
/// compressed-row parts of a count matrix `(indptr, indices, counts, n_features)` as `int64`,
/// or a table: its columns by name as text (`None` where missing) with the `name:type`
/// entries that fix some columns' types.
#[derive(FromPyObject)]
pub enum Input<'py> {
    /// Points as rows.
    Dense(PyReadonlyArray2<'py, f64>),
    /// Documents as rows of word counts.
    Counts(
        (
            PyReadonlyArray1<'py, i64>,
            PyReadonlyArray1<'py, i64>,
            PyReadonlyArray1<'py, i64>,
            usize,
        ),
    ),
    /// A table's columns as text, and types given by name.
    Table((Columns, Vec<String>)),
}

/// A table's columns as the Python half hands them over: name and entries as text.
pub type Columns = Vec<(String, Vec<Option<String>>)>;

/// How messages name the rows of a table handed over from Python (`X (rows from 1):3: ...`).
const TABLE_ORIGIN: &str = "X (rows from 1)";

impl Input<'_> {
    /// The library's data set (a copy: the library owns its data). Errors name the row and
    /// column of a value the library refuses (1-based, as its messages are).
    pub fn dataset(&self) -> PyResult<Dataset> {
        match self {
            Input::Dense(x) => {
                let view = x.as_array();
                let (n, d) = view.dim();
                DenseData::new(n, d, view.iter().copied().collect())
                    .map(Dataset::Dense)
                    .py_err()
            }
            Input::Table((columns, types)) => {
                nrmm::data::table::table_from_tokens(columns, types, TABLE_ORIGIN)
                    .map(Dataset::Table)
                    .py_err()
            }
            Input::Counts((indptr, indices, counts, vocab)) => {
                let (indptr, indices, counts) =
                    (indptr.as_slice()?, indices.as_slice()?, counts.as_slice()?);
                let n = indptr.len().saturating_sub(1);
                let mut triplets = Vec::with_capacity(counts.len());
                for doc in 0..n {
                    let (lo, hi) = (indptr[doc], indptr[doc + 1]);
                    if lo < 0 || hi < lo || hi as usize > indices.len() {
                        return Err(PyValueError::new_err(format!(
                            "sparse matrix: row {} has offsets {lo}..{hi} outside its {} stored \
                             values",
                            doc + 1,
                            indices.len()
                        )));
                    }
                    for k in lo as usize..hi as usize {
                        let word = u32::try_from(indices[k]).map_err(|_| {
                            PyValueError::new_err(format!(
                                "sparse matrix: column index {} in row {} is not a valid word id",
                                indices[k],
                                doc + 1
                            ))
                        })?;
                        let count = u32::try_from(counts[k]).map_err(|_| {
                            PyValueError::new_err(format!(
                                "invalid count in row {} column {} = {}: expected a \
                                 non-negative integer below 2^32",
                                doc + 1,
                                word as u64 + 1,
                                counts[k]
                            ))
                        })?;
                        triplets.push((doc as u32, word, count));
                    }
                }
                SparseCounts::from_triplets(n, *vocab, triplets)
                    .map(Dataset::Counts)
                    .py_err()
            }
        }
    }
}

impl Input<'_> {
    /// New points for a model fitted on `train`: a table's new rows matched to the training
    /// table's columns, types and levels by name ([`nrmm::data::table::align_tokens`], so that
    /// a column missing in every new row is fine), anything else as [`Input::dataset`].
    pub fn new_points(&self, train: &Dataset) -> PyResult<Dataset> {
        match (self, train) {
            (Input::Table((columns, _)), Dataset::Table(t)) => {
                nrmm::data::table::align_tokens(columns, t)
                    .map(Dataset::Table)
                    .py_err()
            }
            _ => self.dataset(),
        }
    }
}

/// The model's settings from their JSON form: an object whose keys are the library's
/// [`ModelSpec`] fields, each overriding the default (the Python half sends only known keys).
pub fn model_spec(json: &str) -> PyResult<ModelSpec> {
    overlay(&ModelSpec::default(), json, "model setting")
}

/// `base` with the fields of the JSON object `json` replaced or added (`what` names them in
/// errors).
pub fn overlay<T: serde::Serialize + serde::de::DeserializeOwned>(
    base: &T,
    json: &str,
    what: &str,
) -> PyResult<T> {
    let bad = |e: serde_json::Error| PyValueError::new_err(format!("{what}s: {e}"));
    let mut value = serde_json::to_value(base).map_err(bad)?;
    let given: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(json).map_err(bad)?;
    let fields = value
        .as_object_mut()
        .expect("settings serialise as an object");
    fields.extend(given);
    serde_json::from_value(value).map_err(bad)
}
