//! The library's errors as Python exceptions.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::PyErr;

/// `e` as the Python exception a caller expects: `OSError` for a file that cannot be read or
/// written, `ValueError` (with the library's message) for everything else, which is bad input
/// or a model the data cannot support.
pub fn to_py(e: nrmm::Error) -> PyErr {
    match e {
        nrmm::Error::Io { .. } | nrmm::Error::Write { .. } => PyOSError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// Shorthand: a library result as a Python result.
pub trait IntoPy<T> {
    /// The result with its error converted by [`to_py`].
    fn py_err(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for nrmm::Result<T> {
    fn py_err(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}

/// The Python spelling of a parameter the library names by its field name, where the two
/// differ.
fn python_name(field: &str) -> Option<String> {
    let name = match field {
        "chains" => "n_chains",
        "seed" => "random_state",
        "out" => "run_dir",
        "kind" => "sampler",
        _ => return None,
    };
    Some(name.to_string())
}

/// `e` with its parameters named as the Python estimator names them.
pub fn rename(e: nrmm::Error) -> nrmm::Error {
    e.rename_parameters(&python_name)
}
