//! A reader of NumPy `.npy` files holding a 2-D array of reals or integers.
//!
//! The format (NumPy's `numpy.lib.format`, versions 1 to 3): the magic `\x93NUMPY`, a major and
//! a minor version byte, the header's length (2 bytes little-endian in version 1, 4 bytes in
//! versions 2 and 3), the header — a Python dictionary literal
//! `{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }` padded with spaces and a newline
//! — then the values, row-major or (with `fortran_order`) column-major.
//!
//! Read: little-endian `f8`, `f4`, `i8` and `i4` (`<f8`, `<f4`, `<i8`, `<i4`, also `=` or `|`
//! for the byte order, taken as little-endian, the order of every machine nrmm runs on), C or
//! Fortran order, two dimensions. Everything else (big-endian data, other types, other ranks,
//! object arrays, a truncated payload or trailing bytes) is an error saying what was found and
//! how to convert it. Values must be finite and within [`super::MAX_MAGNITUDE`], or NaN, NumPy's
//! missing value: an array with a NaN is read as a table of real columns with missing entries
//! ([`npy_dataset_from_bytes`]); errors name the row and column.
//!
//! Cost: one pass over the payload; memory is the matrix (8 bytes per value), whatever the
//! header claims, since the payload's size is checked against the shape first.

use std::path::Path;

use super::table::{Column, ColumnType, TableData};
use super::{Dataset, DenseData};
use crate::error::{Error, Result};

/// The first bytes of every `.npy` file.
pub const NPY_MAGIC: &[u8] = b"\x93NUMPY";

fn err(origin: &Path, message: impl Into<String>) -> Error {
    Error::parse(origin, 0, message)
}

/// An element type the reader converts to `f64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    F8,
    F4,
    I8,
    I4,
}

impl Dtype {
    fn size(self) -> usize {
        match self {
            Dtype::F8 | Dtype::I8 => 8,
            Dtype::F4 | Dtype::I4 => 4,
        }
    }

    fn read(self, b: &[u8]) -> f64 {
        match self {
            Dtype::F8 => f64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
            Dtype::F4 => f64::from(f32::from_le_bytes(b.try_into().unwrap_or([0; 4]))),
            // Integers beyond 2^53 round to the nearest double, as NumPy's astype does.
            Dtype::I8 => i64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as f64,
            Dtype::I4 => f64::from(i32::from_le_bytes(b.try_into().unwrap_or([0; 4]))),
        }
    }
}

const CONVERT: &str = "convert it with numpy: np.save(path, a.astype('<f8'))";

fn dtype(descr: &str, origin: &Path) -> Result<Dtype> {
    let (order, code) = descr.split_at(descr.len().min(1));
    let t = match code {
        "f8" => Dtype::F8,
        "f4" => Dtype::F4,
        "i8" => Dtype::I8,
        "i4" => Dtype::I4,
        _ => {
            return Err(err(
                origin,
                format!(
                    "the .npy element type '{descr}' is not read, expected little-endian f8, \
                     f4, i8 or i4 ('<f8', '<f4', '<i8', '<i4'): {CONVERT}"
                ),
            ))
        }
    };
    match order {
        "<" | "=" | "|" => Ok(t),
        ">" => Err(err(
            origin,
            format!("the .npy data are big-endian ('{descr}'), expected little-endian: {CONVERT}"),
        )),
        _ => Err(err(
            origin,
            format!("the .npy element type '{descr}' has no byte order, expected '<{code}'"),
        )),
    }
}

/// The text after `'key':` in the header dictionary (either quote style), trimmed.
fn field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = [format!("'{key}'"), format!("\"{key}\"")]
        .iter()
        .find_map(|k| header.find(k.as_str()).map(|i| i + k.len()))?;
    header[at..]
        .trim_start()
        .strip_prefix(':')
        .map(str::trim_start)
}

/// The header's `descr`, `fortran_order` and `shape`.
fn parse_header(header: &str, origin: &Path) -> Result<(Dtype, bool, Vec<usize>)> {
    let missing = |what: &str| {
        err(
            origin,
            format!("the .npy header lacks '{what}' (header: {})", header.trim()),
        )
    };
    let descr = field(header, "descr").ok_or_else(|| missing("descr"))?;
    let quote = descr.chars().next().filter(|&c| c == '\'' || c == '"');
    let descr = quote
        .and_then(|q| descr[1..].split(q).next())
        .ok_or_else(|| {
            err(
                origin,
                "the .npy element type is not a plain string (a structured array?), expected \
                 one of '<f8', '<f4', '<i8', '<i4'",
            )
        })?;
    let dtype = dtype(descr, origin)?;
    let fortran = field(header, "fortran_order").ok_or_else(|| missing("fortran_order"))?;
    let fortran = if fortran.starts_with("True") {
        true
    } else if fortran.starts_with("False") {
        false
    } else {
        return Err(err(
            origin,
            "the .npy header's fortran_order is neither True nor False",
        ));
    };
    let shape = field(header, "shape").ok_or_else(|| missing("shape"))?;
    let dims = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| err(origin, "the .npy header's shape is not a tuple"))?;
    let dims = dims
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_end_matches('L').parse::<usize>().map_err(|_| {
                err(
                    origin,
                    format!("the .npy shape holds '{s}', expected sizes"),
                )
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    Ok((dtype, fortran, dims))
}

/// Parses a `.npy` file (see the module documentation) into an `n × d` matrix; `origin` names
/// the input in errors, which a NaN is too (see [`npy_dataset_from_bytes`] for NaN as
/// missing).
pub fn npy_from_bytes(bytes: &[u8], origin: &Path) -> Result<DenseData> {
    let (n, d, values) = npy_values(bytes, origin)?;
    if let Some(k) = values.iter().position(|v| v.is_nan()) {
        return Err(err(
            origin,
            format!(
                "the value at row {} column {} is NaN: not a finite number",
                k / d + 1,
                k % d + 1
            ),
        ));
    }
    DenseData::new(n, d, values)
}

/// Parses a `.npy` file as data: an `n × d` matrix when every value is a number; a table of
/// `d` real columns named by their numbers from 1 when a value is NaN, each NaN a missing
/// entry (NumPy's way of writing one; [`TableData`], marginalised exactly by the `mixed`
/// kernel). `keep` gives, for the number of columns, which to keep (the others are left out
/// before a column is checked to have an observed value). Errors name `origin`, and the row
/// and column of a bad value. Cost: one pass over the payload.
pub fn npy_dataset_from_bytes(
    bytes: &[u8],
    origin: &Path,
    keep: impl FnOnce(usize) -> Result<Vec<bool>>,
) -> Result<Dataset> {
    let (n, d, values) = npy_values(bytes, origin)?;
    let keep = keep(d)?;
    if keep.len() != d {
        return Err(Error::DimensionMismatch(format!(
            "{}: {} columns chosen of {d}",
            origin.display(),
            keep.len()
        )));
    }
    let kept: Vec<usize> = (0..d).filter(|&j| keep[j]).collect();
    if kept.is_empty() {
        return Err(err(origin, "every column is skipped, so no values remain"));
    }
    if !values.iter().any(|v| v.is_nan()) {
        if kept.len() == d {
            return Ok(Dataset::Dense(DenseData::new(n, d, values)?));
        }
        let mut dense = Vec::with_capacity(n * kept.len());
        for i in 0..n {
            dense.extend(kept.iter().map(|&j| values[i * d + j]));
        }
        return Ok(Dataset::Dense(DenseData::new(n, kept.len(), dense)?));
    }
    let columns = kept
        .iter()
        .map(|&j| Column {
            name: (j + 1).to_string(),
            kind: ColumnType::Real,
            levels: Vec::new(),
            values: (0..n).map(|i| values[i * d + j]).collect(),
        })
        .collect();
    TableData::new(columns)
        .map(Dataset::Table)
        .map_err(|e| err(origin, e.to_string()))
}

/// The `n × d` values of a `.npy` file, row-major, NaN kept; any other value that is not a
/// finite number within [`super::MAX_MAGNITUDE`] is an error naming its row and column.
fn npy_values(bytes: &[u8], origin: &Path) -> Result<(usize, usize, Vec<f64>)> {
    let rest = bytes.strip_prefix(NPY_MAGIC).ok_or_else(|| {
        err(
            origin,
            "not a .npy file: it does not start with the magic \\x93NUMPY",
        )
    })?;
    let (&major, rest) = rest
        .split_first()
        .ok_or_else(|| err(origin, "truncated .npy file: it ends after the magic"))?;
    let rest = rest
        .get(1..)
        .ok_or_else(|| err(origin, "truncated .npy file: it ends in its version"))?;
    let width = match major {
        1 => 2,
        2 | 3 => 4,
        v => {
            return Err(err(
                origin,
                format!(".npy format version {v}, expected 1, 2 or 3"),
            ))
        }
    };
    let len_bytes = rest
        .get(..width)
        .ok_or_else(|| err(origin, "truncated .npy file: it ends in its header length"))?;
    let header_len = len_bytes
        .iter()
        .rev()
        .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
    let rest = &rest[width..];
    let header = rest.get(..header_len).ok_or_else(|| {
        err(
            origin,
            format!(
                "truncated .npy file: its header should hold {header_len} bytes, {} remain",
                rest.len()
            ),
        )
    })?;
    let header =
        std::str::from_utf8(header).map_err(|_| err(origin, "the .npy header is not text"))?;
    let payload = &rest[header_len..];
    let (dtype, fortran, dims) = parse_header(header, origin)?;
    let (n, d) = match dims[..] {
        [n, d] => (n, d),
        _ => {
            return Err(err(
                origin,
                format!(
                    "the .npy array has shape {dims:?}, expected 2 dimensions (points x \
                     values); reshape it, e.g. a.reshape(len(a), -1)"
                ),
            ))
        }
    };
    let size = n
        .checked_mul(d)
        .and_then(|v| v.checked_mul(dtype.size()))
        .ok_or_else(|| err(origin, format!("the .npy shape ({n}, {d}) overflows")))?;
    if payload.len() != size {
        let what = if payload.len() < size {
            "truncated .npy file"
        } else {
            "trailing bytes in the .npy file"
        };
        return Err(err(
            origin,
            format!(
                "{what}: shape ({n}, {d}) of {}-byte values needs {size} bytes of data, found {}",
                dtype.size(),
                payload.len()
            ),
        ));
    }
    if n == 0 || d == 0 {
        return Err(err(
            origin,
            format!("the .npy array of shape ({n}, {d}) holds no data"),
        ));
    }
    let mut values = vec![0.0; n * d];
    for (k, chunk) in payload.chunks_exact(dtype.size()).enumerate() {
        // Fortran order stores column after column.
        let (i, j) = if fortran {
            (k % n, k / n)
        } else {
            (k / d, k % d)
        };
        let v = dtype.read(chunk);
        if !v.is_nan() && (!v.is_finite() || v.abs() > super::MAX_MAGNITUDE) {
            let why = if v.is_finite() {
                super::magnitude_hint()
            } else {
                "not a finite number".to_string()
            };
            return Err(err(
                origin,
                format!("the value at row {} column {} is {v}: {why}", i + 1, j + 1),
            ));
        }
        values[i * d + j] = v;
    }
    Ok((n, d, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, fortran: bool, shape: &str, payload: &[u8]) -> Vec<u8> {
        let mut header = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = NPY_MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn origin() -> &'static Path {
        Path::new("x.npy")
    }

    #[test]
    fn every_type_and_order_reads_the_same_matrix() {
        let want = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let c: Vec<u8> = want.iter().flat_map(|v: &f64| v.to_le_bytes()).collect();
        let x = npy_from_bytes(&npy("<f8", false, "(2, 3)", &c), origin()).unwrap();
        assert_eq!((x.n(), x.d()), (2, 3));
        assert_eq!(x.values(), want);
        let f: Vec<u8> = [0, 3, 1, 4, 2, 5]
            .iter()
            .flat_map(|&k| (want[k] as f32).to_le_bytes())
            .collect();
        let y = npy_from_bytes(&npy("<f4", true, "(2, 3)", &f), origin()).unwrap();
        assert_eq!(y.values(), want);
        let i: Vec<u8> = want
            .iter()
            .flat_map(|&v| (v as i64).to_le_bytes())
            .collect();
        assert_eq!(
            npy_from_bytes(&npy("<i8", false, "(2, 3)", &i), origin())
                .unwrap()
                .values(),
            want
        );
        let i: Vec<u8> = want
            .iter()
            .flat_map(|&v| (v as i32).to_le_bytes())
            .collect();
        assert_eq!(
            npy_from_bytes(&npy("|i4", false, "(2L, 3L)", &i), origin())
                .unwrap()
                .values(),
            want
        );
    }

    #[test]
    fn malformed_files_say_what_is_wrong() {
        let c: Vec<u8> = [1.0f64, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let msg = |bytes: &[u8]| npy_from_bytes(bytes, origin()).unwrap_err().to_string();
        let good = npy("<f8", false, "(1, 2)", &c);
        assert!(msg(&good[..good.len() - 3]).contains("truncated .npy file"));
        assert!(msg(&good[..20]).contains("truncated .npy file"));
        assert!(msg(&good[..7]).contains("truncated"));
        let mut long = good.clone();
        long.push(0);
        assert!(msg(&long).contains("trailing bytes"));
        let m = msg(&npy(">f8", false, "(1, 2)", &c));
        assert!(m.contains("big-endian") && m.contains("astype"), "{m}");
        let m = msg(&npy("<c16", false, "(1, 1)", &c));
        assert!(m.contains("'<c16' is not read"), "{m}");
        let m = msg(&npy("<f8", false, "(2,)", &c));
        assert!(m.contains("expected 2 dimensions"), "{m}");
        let m = msg(&npy("<f8", false, "(0, 2)", &[]));
        assert!(m.contains("holds no data"), "{m}");
        let nan: Vec<u8> = [1.0f64, f64::NAN]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let m = msg(&npy("<f8", false, "(1, 2)", &nan));
        assert!(m.contains("row 1 column 2"), "{m}");
        let big: Vec<u8> = [1e200f64, 1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert!(msg(&npy("<f8", false, "(1, 2)", &big)).contains("rescale"));
        assert!(msg(b"\x93NUMPY\x09\x00").contains("version 9"));
        assert!(msg(b"PK\x03\x04").contains("magic"));
        let mut odd = good.clone();
        odd[8] = 0xff;
        odd[9] = 0xff;
        assert!(msg(&odd).contains("truncated"));
    }

    #[test]
    fn nan_entries_read_as_a_table_of_real_columns_with_missing_entries() {
        let all = |d: usize| Ok(vec![true; d]);
        // 3 x 3, Fortran order: column 1 holds one NaN, column 3 two; infinity stays an error.
        let x = [
            1.0f64,
            f64::NAN,
            3.0,
            4.0,
            5.0,
            6.0,
            f64::NAN,
            8.0,
            f64::NAN,
        ];
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let file = npy("<f8", true, "(3, 3)", &bytes);
        let Dataset::Table(t) = npy_dataset_from_bytes(&file, origin(), all).unwrap() else {
            panic!("a NaN makes a table");
        };
        assert_eq!((t.n(), t.d()), (3, 3));
        assert_eq!(t.missing_per_column(), vec![1, 0, 2]);
        assert!(t.columns().iter().all(|c| c.kind == ColumnType::Real));
        assert_eq!(t.value(2, 0), Some(3.0));
        assert_eq!(t.value(1, 0), None);
        assert_eq!(t.value(1, 2), Some(8.0));
        let header = t.describe();
        assert!(header.contains("3 missing entries") && header.contains("1 real, 1 missing"));
        // Left out before the check: column 3 alone has an observed value (row 2).
        let skip_2 = |d: usize| Ok((0..d).map(|j| j != 1).collect());
        let Dataset::Table(t) = npy_dataset_from_bytes(&file, origin(), skip_2).unwrap() else {
            panic!("a NaN makes a table");
        };
        assert_eq!(t.columns()[1].name, "3");
        // Without NaN the matrix is dense, as before, with skipped columns left out.
        let c: Vec<u8> = [1.0f64, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let good = npy("<f8", false, "(1, 2)", &c);
        let skip_1 = |d: usize| Ok((0..d).map(|j| j != 0).collect());
        match npy_dataset_from_bytes(&good, origin(), skip_1).unwrap() {
            Dataset::Dense(x) => assert_eq!(x.values(), [2.0]),
            _ => panic!("no NaN, no table"),
        }
        // A column of NaN only is refused, naming it.
        let empty: Vec<u8> = [f64::NAN, 1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let e = npy_dataset_from_bytes(&npy("<f8", false, "(1, 2)", &empty), origin(), all)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.npy") && e.contains("column \"1\" has no observed value"),
            "{e}"
        );
        let inf: Vec<u8> = [f64::NAN, f64::INFINITY]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let e = npy_dataset_from_bytes(&npy("<f8", false, "(1, 2)", &inf), origin(), all)
            .unwrap_err()
            .to_string();
        assert!(e.contains("row 1 column 2"), "{e}");
    }
}
