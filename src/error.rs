//! The crate's single error type.
//!
//! Every message names what was wrong and what to change: the file and line of bad input, the
//! parameter and its admissible range, the matrix that is not positive definite.

use std::path::PathBuf;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in `nrmm`, from reading a file to a numerical breakdown.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be created or written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file that failed.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A file's content does not follow its format.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file being read (`<input>` for in-memory text).
        path: PathBuf,
        /// 1-based line number (0 for binary formats or whole-file problems).
        line: usize,
        /// What was found and what was expected.
        message: String,
    },
    /// A parameter is outside its admissible range.
    #[error("invalid {name} = {value}: expected {expected}")]
    InvalidParameter {
        /// Parameter name as the user sees it (e.g. `alpha`, `--nw-nu`).
        name: String,
        /// The offending value, formatted.
        value: String,
        /// The admissible range or form.
        expected: String,
    },
    /// Two inputs that must agree in size do not.
    #[error("dimension mismatch: {0}")]
    DimensionMismatch(String),
    /// A matrix required to be symmetric positive definite is not.
    #[error("{0} is not symmetric positive definite")]
    NotPositiveDefinite(String),
    /// Input is empty where data is required.
    #[error("empty input: {0}")]
    Empty(String),
    /// A request exceeds what the algorithm can handle (e.g. exact enumeration for large n).
    #[error("too large: {0}")]
    TooLarge(String),
    /// A numerical procedure failed (non-finite value, quadrature or slice sampler breakdown).
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// A user request that is well-formed but cannot be honoured as given.
    #[error("{0}")]
    Usage(String),
}

impl Error {
    /// Shorthand for [`Error::InvalidParameter`].
    pub fn param(name: &str, value: impl std::fmt::Display, expected: &str) -> Self {
        Error::InvalidParameter {
            name: name.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }

    /// Shorthand for [`Error::Parse`].
    pub fn parse(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            message: message.into(),
        }
    }
}
