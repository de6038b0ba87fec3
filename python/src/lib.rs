//! The native half of the Python package `nrmm`: NumPy arrays and tables in, the library's
//! model, exact posterior, predictive and imputation out. The estimator classes, their
//! parameters and their scikit-learn conventions live in the Python half (`nrmm/`); this
//! module only translates.
//!
//! Every function returns the library's errors as Python exceptions ([`error`]): bad input as
//! `ValueError` with the library's message, a file that cannot be read or written as
//! `OSError`. Long work runs with the interpreter's lock released.

mod convert;
mod error;
mod exact;
mod fit;
mod impute;
mod predict;

use pyo3::prelude::*;

/// The module `nrmm._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(exact::exact_posterior, m)?)?;
    m.add_function(wrap_pyfunction!(fit::fit, m)?)?;
    m.add_function(wrap_pyfunction!(predict::predict, m)?)?;
    m.add_function(wrap_pyfunction!(predict::log_joint, m)?)?;
    m.add_function(wrap_pyfunction!(impute::impute, m)?)?;
    m.add_function(wrap_pyfunction!(impute::impute_new, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
