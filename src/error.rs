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

    /// The error in a front end's words: every parameter name that `rename` knows is replaced
    /// by the front end's spelling of it (the command line's `--nw-nu` for `nu`). The library
    /// names parameters by their field names: as the name of an [`Error::InvalidParameter`]
    /// (an index, as in `psi[0][1]`, is kept) and between backticks in free text
    /// ([`rename_in_text`]).
    pub fn rename_parameters(self, rename: &dyn Fn(&str) -> Option<String>) -> Self {
        let text = |s: String| rename_in_text(&s, rename);
        match self {
            Error::InvalidParameter {
                name,
                value,
                expected,
            } => {
                let (base, index) = name.split_at(name.find('[').unwrap_or(name.len()));
                let name = rename(base).map_or_else(|| name.clone(), |n| format!("{n}{index}"));
                Error::InvalidParameter {
                    name,
                    value,
                    expected: text(expected),
                }
            }
            Error::Parse {
                path,
                line,
                message,
            } => Error::Parse {
                path,
                line,
                message: text(message),
            },
            Error::DimensionMismatch(m) => Error::DimensionMismatch(text(m)),
            Error::NotPositiveDefinite(m) => Error::NotPositiveDefinite(text(m)),
            Error::Empty(m) => Error::Empty(text(m)),
            Error::TooLarge(m) => Error::TooLarge(text(m)),
            Error::Numerical(m) => Error::Numerical(text(m)),
            Error::Usage(m) => Error::Usage(text(m)),
            io @ (Error::Io { .. } | Error::Write { .. }) => io,
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

/// `text` with every `` `name` `` that `rename` knows replaced by its spelling (without the
/// backticks); other backticked words are left as they are. Cost: O(length).
pub fn rename_in_text(text: &str, rename: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let Some(close) = rest[open + 1..].find('`') else {
            break;
        };
        let word = &rest[open + 1..open + 1 + close];
        out.push_str(&rest[..open]);
        match rename(word) {
            Some(spelled) => out.push_str(&spelled),
            None => out.push_str(&rest[open..open + close + 2]),
        }
        rest = &rest[open + close + 2..];
    }
    out.push_str(rest);
    out
}

/// `message` folded onto one line: lines trimmed, blank lines dropped, the rest joined by a
/// space, so that a front end reports every failure and note as exactly one line whatever
/// produced it. Cost: O(length).
pub fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_folds_lines_and_drops_blanks() {
        assert_eq!(one_line("a\n\n  b  \nc\n"), "a b c");
        assert_eq!(one_line("single"), "single");
        assert_eq!(one_line(""), "");
    }

    fn flag(name: &str) -> Option<String> {
        (name == "nu" || name == "burn_in").then(|| format!("--{}", name.replace('_', "-")))
    }

    #[test]
    fn parameters_are_renamed_in_names_and_text() {
        assert_eq!(
            rename_in_text("lower `burn_in`, keep `sweep,...` and `x", &flag),
            "lower --burn-in, keep `sweep,...` and `x"
        );
        let e = Error::param("nu[1]", 2, "more than `nu`").rename_parameters(&flag);
        assert_eq!(
            e.to_string(),
            "invalid --nu[1] = 2: expected more than --nu"
        );
    }
}
