//! Tables as people have them: columns of different types (real numbers, binary answers,
//! categories named by words, counts) with missing entries, read from CSV or whitespace text
//! with a header and typed by their values ([`TableData`], [`ColumnType`]).
//!
//! **Missing entries** are an empty field, `NA`, `NaN` or `?` (any case). A missing entry is
//! kept as missing, never filled or dropped with its row; the kernels marginalise it exactly
//! under missing at random ([`crate::kernel::product`]).
//!
//! **Types, inferred from a column's observed values** ([`ColumnType::infer`]), in order:
//! at most two distinct values (numbers or words) is binary; words are categorical; integers
//! `≥ 0` with at most [`MAX_INTEGER_LEVELS`] distinct values are categorical (levels named by
//! the numbers: legs, months, ratings); other integers `≥ 0` with a mean of at most
//! [`MAX_COUNT_MEAN`] are counts (small counts, where a Poisson law is apt; larger integers
//! such as ages or blood pressures behave as real numbers); any other numbers are real. A
//! column mixing numbers and words is refused, naming a line of each, unless its type is
//! given. Types given by name (`name:real|binary|cat|count`) override the inference.
//!
//! Levels of a binary or categorical column are sorted (numerically when they are all numbers,
//! else by their text) and coded `0..L`; their names are kept for every output.
//!
//! Cost: one pass over the text, then O(N log N) per column for its distinct values.

use std::collections::BTreeMap;
use std::path::Path;

use super::load::{
    check_text, gunzip, is_blank, is_comment, numbered_lines, parse_f64, perr, show, split_fields,
    Separator,
};
use crate::error::{Error, Result};

/// Integers `≥ 0` with at most this many distinct values are taken as categories
/// ([`ColumnType::infer`]).
pub const MAX_INTEGER_LEVELS: usize = 10;

/// Integers `≥ 0` with more distinct values are counts when their mean is at most this
/// ([`ColumnType::infer`]); above it they are taken as real numbers.
pub const MAX_COUNT_MEAN: f64 = 10.0;

/// The type of a column, which chooses its kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// Real numbers (Normal-Gamma).
    Real,
    /// Two values (Beta-Bernoulli).
    Binary,
    /// Categories (Dirichlet-categorical).
    #[serde(rename = "cat")]
    Categorical,
    /// Integer counts `≥ 0` (Gamma-Poisson).
    Count,
}

impl ColumnType {
    /// Every type, in the order `--types` lists them.
    pub const ALL: [ColumnType; 4] = [
        ColumnType::Real,
        ColumnType::Binary,
        ColumnType::Categorical,
        ColumnType::Count,
    ];

    /// Its name in `--types` and in run headers.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Real => "real",
            ColumnType::Binary => "binary",
            ColumnType::Categorical => "cat",
            ColumnType::Count => "count",
        }
    }

    /// The type named `name` (see [`ColumnType::name`]).
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether its values are level codes with names.
    pub fn has_levels(self) -> bool {
        matches!(self, ColumnType::Binary | ColumnType::Categorical)
    }

    /// The type of a column whose observed values are `numbers` (all of them numbers) or
    /// words, with `distinct` distinct values (see the module documentation). Cost: O(N).
    fn infer(numbers: Option<&[f64]>, distinct: usize) -> Self {
        if distinct <= 2 {
            return ColumnType::Binary;
        }
        let Some(v) = numbers else {
            return ColumnType::Categorical;
        };
        if v.iter().all(|&x| x >= 0.0 && x.fract() == 0.0) {
            if distinct <= MAX_INTEGER_LEVELS {
                return ColumnType::Categorical;
            }
            if v.iter().sum::<f64>() / v.len() as f64 <= MAX_COUNT_MEAN {
                return ColumnType::Count;
            }
        }
        ColumnType::Real
    }
}

/// One column of a table.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// Its name: the header's, or its number from 1 without a header.
    pub name: String,
    /// Its type.
    pub kind: ColumnType,
    /// The names of its levels by code (binary and categorical columns; empty otherwise).
    pub levels: Vec<String>,
    /// Its values by row: the number (real, count) or the level's code; NaN where missing.
    pub values: Vec<f64>,
}

impl Column {
    /// The number of missing entries.
    pub fn missing(&self) -> usize {
        self.values.iter().filter(|v| v.is_nan()).count()
    }

    /// The number of levels a kernel gives it: its levels, at least 2 for a binary column
    /// (one value seen of two possible).
    pub fn n_levels(&self) -> usize {
        match self.kind {
            ColumnType::Binary => self.levels.len().max(2),
            _ => self.levels.len(),
        }
    }

    /// Value `v` of this column as text: the level's name, or the number.
    pub fn show(&self, v: f64) -> String {
        if v.is_nan() {
            return String::new();
        }
        match self.kind {
            ColumnType::Binary | ColumnType::Categorical => self
                .levels
                .get(v as usize)
                .cloned()
                .unwrap_or_else(|| format!("level {v}")),
            _ => format!("{v}"),
        }
    }
}

/// A table of `n` rows and typed columns with missing entries (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct TableData {
    n: usize,
    columns: Vec<Column>,
}

impl TableData {
    /// A table of the given columns, checked: at least one column and one row, columns of
    /// equal length, level codes below their number of levels, counts integers `≥ 0`, real
    /// values finite (NaN missing) within [`super::MAX_MAGNITUDE`], and every column with an
    /// observed value. Errors name the column. Cost: O(N d).
    pub fn new(columns: Vec<Column>) -> Result<Self> {
        Self::checked(columns, true)
    }

    /// [`TableData::new`], requiring an observed value in every column when `observed`.
    fn checked(columns: Vec<Column>, observed: bool) -> Result<Self> {
        let n = columns.first().map_or(0, |c| c.values.len());
        if n == 0 {
            return Err(Error::Empty(format!(
                "a table needs rows and columns, got {n} x {}",
                columns.len()
            )));
        }
        for c in &columns {
            if c.values.len() != n {
                return Err(Error::DimensionMismatch(format!(
                    "column \"{}\" has {} values, the first column {n}",
                    c.name,
                    c.values.len()
                )));
            }
            if observed && c.missing() == n {
                return Err(Error::Usage(format!(
                    "column \"{}\" has no observed value: leave it out (--skip-columns)",
                    c.name
                )));
            }
            let bad = c.values.iter().position(|&v| {
                !v.is_nan()
                    && match c.kind {
                        ColumnType::Real => !(v.is_finite() && v.abs() <= super::MAX_MAGNITUDE),
                        ColumnType::Count => !(v >= 0.0 && v.fract() == 0.0 && v < 4e9),
                        _ => !(v >= 0.0 && v.fract() == 0.0 && (v as usize) < c.n_levels()),
                    }
            });
            if let Some(i) = bad {
                return Err(Error::param(
                    &format!("row {} of column \"{}\"", i + 1, c.name),
                    c.values[i],
                    match c.kind {
                        ColumnType::Real => "a finite number of moderate magnitude",
                        ColumnType::Count => "an integer count >= 0",
                        _ => "a level code below the number of levels",
                    },
                ));
            }
        }
        Ok(TableData { n, columns })
    }

    /// Number of rows.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of columns.
    pub fn d(&self) -> usize {
        self.columns.len()
    }

    /// The columns.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Entry `(i, j)`: `None` where missing.
    pub fn value(&self, i: usize, j: usize) -> Option<f64> {
        let v = self.columns[j].values[i];
        (!v.is_nan()).then_some(v)
    }

    /// The missing entries per column.
    pub fn missing_per_column(&self) -> Vec<usize> {
        self.columns.iter().map(Column::missing).collect()
    }

    /// Whether every column is real and no entry is missing (a plain real matrix).
    pub fn is_plain_real(&self) -> bool {
        self.columns
            .iter()
            .all(|c| c.kind == ColumnType::Real && c.missing() == 0)
    }

    /// Its columns with their types (and levels) and missing entries, for run headers: one
    /// line.
    pub fn describe(&self) -> String {
        let total: usize = self.missing_per_column().iter().sum();
        let mut out = format!(
            "table of {} rows x {} columns, {total} missing entries ({:.1} %):",
            self.n,
            self.d(),
            100.0 * total as f64 / (self.n * self.d()) as f64
        );
        for c in &self.columns {
            let levels = if c.kind.has_levels() {
                let shown: Vec<&str> = c.levels.iter().take(6).map(String::as_str).collect();
                let more = if c.levels.len() > 6 { ", ..." } else { "" };
                format!(" ({}{more})", shown.join(", "))
            } else {
                String::new()
            };
            let missing = match c.missing() {
                0 => String::new(),
                m => format!(", {m} missing"),
            };
            let sep = if out.ends_with(':') { " " } else { "; " };
            out.push_str(&format!(
                "{sep}{} {}{levels}{missing}",
                c.name,
                c.kind.name()
            ));
        }
        out
    }

    /// The rows `rows` of this table, with the same columns, types and levels. Cost: O(rows d).
    pub fn select_rows(&self, rows: &[usize]) -> Result<Self> {
        let columns = self
            .columns
            .iter()
            .map(|c| Column {
                values: rows.iter().map(|&i| c.values[i]).collect(),
                ..c.clone()
            })
            .collect();
        Self::new(columns)
    }
}

/// A complete matrix of numbers as a table when more than half of its varying columns hold
/// exactly two distinct values (yes/no answers coded 1/0): those columns (and constant ones)
/// typed binary, as [`ColumnType::infer`] types them in a text table, with their levels named
/// by the numbers in increasing order; every other column real, whatever its values (a
/// matrix's integer columns stay numbers). Columns are named by their number from 1. `None`
/// otherwise, and the matrix stays a matrix; errors as [`TableData::new`] does. With `any`
/// (the product kernel asked for), one two-valued column suffices.
///
/// Why: a Gaussian on a column of two values fits clusters whose variance in it collapses,
/// which a Bernoulli does not. Why only a matrix that is mostly such columns: among many real
/// columns a few two-valued ones are usually real measurements that took two values (pixels
/// lit in a handful of 8 × 8 digit images), and a table's real columns lack the Gaussian
/// kernels' pilot scale (on those digits, ARI 0.14 as a table against 0.48 as a matrix).
/// Cost: O(N d) with at most three distinct values kept per column.
pub fn with_binary_columns(x: &super::DenseData, any: bool) -> Result<Option<TableData>> {
    // Up to three distinct values per column, in increasing order: two is binary.
    let distinct = |j: usize| {
        let mut seen: Vec<f64> = Vec::with_capacity(3);
        for i in 0..x.n() {
            let v = x.row(i)[j];
            if !seen.contains(&v) {
                seen.push(v);
                if seen.len() > 2 {
                    break;
                }
            }
        }
        seen.sort_by(f64::total_cmp);
        seen
    };
    let values: Vec<Vec<f64>> = (0..x.d()).map(distinct).collect();
    let two = values.iter().filter(|v| v.len() == 2).count();
    let varying = values.iter().filter(|v| v.len() > 1).count();
    if two == 0 || (!any && 2 * two <= varying) {
        return Ok(None);
    }
    let columns = values
        .iter()
        .enumerate()
        .map(|(j, levels)| {
            let column = (0..x.n()).map(|i| x.row(i)[j]);
            if levels.len() <= 2 {
                Column {
                    name: (j + 1).to_string(),
                    kind: ColumnType::Binary,
                    levels: levels.iter().map(|v| format!("{v}")).collect(),
                    values: column
                        .map(|v| if v == levels[0] { 0.0 } else { 1.0 })
                        .collect(),
                }
            } else {
                Column {
                    name: (j + 1).to_string(),
                    kind: ColumnType::Real,
                    levels: Vec::new(),
                    values: column.collect(),
                }
            }
        })
        .collect();
    TableData::new(columns).map(Some)
}

/// New rows `new` (a table, or a matrix of numbers taken column by column) as a table with the
/// columns, types and level codes of `training`, for prediction: columns matched by name (a
/// matrix's by position), levels by name (a number read as a level by its text, so that a
/// column of `1`, `2`, `3` inferred as counts in a few new rows still names the levels `1`,
/// `2`, `3`), and a column of levels whose names are numbers read as numbers where the
/// training column is real or counts (a few new rows often hold two values, inferred binary).
/// Missing entries stay missing. Errors name `` `new` `` (for front ends to rename to the
/// file), the row, the column and the value: a column missing or extra, a level the training
/// table does not have, a word where numbers are expected. Cost: O(rows · d · log L).
pub fn align_to(new: &super::Dataset, training: &TableData) -> Result<TableData> {
    let given: Vec<Column> = match new {
        super::Dataset::Table(t) => t.columns.clone(),
        super::Dataset::Dense(x) => {
            if x.d() != training.d() {
                return Err(Error::DimensionMismatch(format!(
                    "`new` has {} columns, but the training table has {} ({})",
                    x.d(),
                    training.d(),
                    names_of(training)
                )));
            }
            training
                .columns
                .iter()
                .enumerate()
                .map(|(j, c)| Column {
                    name: c.name.clone(),
                    kind: ColumnType::Real,
                    levels: Vec::new(),
                    values: (0..x.n()).map(|i| x.row(i)[j]).collect(),
                })
                .collect()
        }
        super::Dataset::Counts(_) => {
            return Err(Error::Usage(
                "`new` holds sparse counts, but the run's data are a table: give the new rows \
                 as a table with the training table's columns"
                    .into(),
            ))
        }
    };
    align_columns(given, training)
}

/// The columns `given` (by name) as a table with the columns, types and level codes of
/// `training` ([`align_to`]).
fn align_columns(given: Vec<Column>, training: &TableData) -> Result<TableData> {
    if let Some(extra) = given
        .iter()
        .find(|g| !training.columns.iter().any(|c| c.name == g.name))
    {
        return Err(Error::Usage(format!(
            "`new` has a column \"{}\" that the training table lacks (its columns: {})",
            extra.name,
            names_of(training)
        )));
    }
    let columns = training
        .columns
        .iter()
        .map(|c| {
            let g = given.iter().find(|g| g.name == c.name).ok_or_else(|| {
                Error::Usage(format!(
                    "`new` lacks the training table's column \"{}\" (its columns: {}): give \
                     it, with empty fields where values are missing",
                    c.name,
                    names_of(training)
                ))
            })?;
            let values = g
                .values
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    if v.is_nan() {
                        return Ok(f64::NAN);
                    }
                    // The entry as the training column reads it: its text for levels, its
                    // number otherwise.
                    let text = g.show(v);
                    let bad = |expected: String| {
                        Error::Usage(format!(
                            "row {} of `new`, column \"{}\": \"{text}\" is not {expected}",
                            i + 1,
                            c.name
                        ))
                    };
                    if c.kind.has_levels() {
                        let level = c.levels.iter().position(|l| *l == text).ok_or_else(|| {
                            bad(format!(
                                "a level of the run's table (levels: {})",
                                c.levels.join(", ")
                            ))
                        })?;
                        Ok(level as f64)
                    } else if g.kind.has_levels() {
                        text.parse::<f64>()
                            .map_err(|_| bad(format!("a number ({} column)", c.kind.name())))
                    } else {
                        Ok(v)
                    }
                })
                .collect::<Result<Vec<f64>>>()?;
            Ok(Column {
                values,
                ..c.clone()
            })
        })
        .collect::<Result<Vec<Column>>>()?;
    // A column missing in every new row is fine: the predictive marginalises it.
    TableData::checked(columns, false)
}

/// The column names of `t`, comma-separated.
fn names_of(t: &TableData) -> String {
    t.columns
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A field for CSV: quoted when it holds a comma or a quote (quotes doubled).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Writes `t` as CSV to `out`: a header of the column names, then one row per line with
/// categories by name, numbers as they read back exactly, missing entries empty.
pub fn write_table_to<W: std::io::Write>(out: &mut W, t: &TableData) -> std::io::Result<()> {
    let names: Vec<String> = t.columns.iter().map(|c| csv_field(&c.name)).collect();
    writeln!(out, "{}", names.join(","))?;
    for i in 0..t.n {
        let row: Vec<String> = t
            .columns
            .iter()
            .map(|c| csv_field(&c.show(c.values[i])))
            .collect();
        writeln!(out, "{}", row.join(","))?;
    }
    Ok(())
}

/// Writes `t` as CSV to `path` ([`write_table_to`]), atomically.
pub fn write_table(path: impl AsRef<Path>, t: &TableData) -> Result<()> {
    super::load::write_atomically(path.as_ref(), |w| write_table_to(w, t))
}

/// Whether a field is a missing value: empty, `NA`, `NaN`, `N/A` or `?` (any case).
pub fn is_missing(token: &[u8]) -> bool {
    token.is_empty()
        || token == b"?"
        || token.eq_ignore_ascii_case(b"na")
        || token.eq_ignore_ascii_case(b"nan")
        || token.eq_ignore_ascii_case(b"n/a")
}

/// Parses a `--types` entry list (`name:type`), checked against the type names.
pub fn parse_types(specs: &[String]) -> Result<Vec<(String, ColumnType)>> {
    specs
        .iter()
        .map(|spec| {
            let (name, kind) = spec
                .rsplit_once(':')
                .ok_or_else(|| Error::param("types", spec, "entries name:type, e.g. legs:count"))?;
            let kind = ColumnType::named(kind.trim()).ok_or_else(|| {
                Error::param(
                    "types",
                    spec,
                    "a type among real, binary, cat, count after the colon",
                )
            })?;
            Ok((name.trim().to_string(), kind))
        })
        .collect()
}

/// A table from columns of text as a front end holds them (a data frame's values written as
/// text, `None` where missing), read and typed exactly as [`table_from_text`] reads a CSV
/// file with a header of these names and these fields: the same missing values, the same
/// inference, the same `types` (`name:type`). Errors name `origin` and the row as the line
/// (rows counted from 1). Cost: O(N log N) per column.
pub fn table_from_tokens(
    columns: &[(String, Vec<Option<String>>)],
    types: &[String],
    origin: &str,
) -> Result<TableData> {
    let origin = Path::new(origin);
    let types = parse_types(types)?;
    let n = columns.first().map_or(0, |c| c.1.len());
    if let Some((name, c)) = columns.iter().find(|c| c.1.len() != n) {
        return Err(Error::DimensionMismatch(format!(
            "{}: column \"{name}\" has {} values, the first column {n}",
            origin.display(),
            c.len()
        )));
    }
    if n == 0 {
        return Err(Error::Empty(format!(
            "{}: a table needs rows and columns, got {n} x {}",
            origin.display(),
            columns.len()
        )));
    }
    let names: Vec<String> = columns.iter().map(|c| c.0.clone()).collect();
    let raw: Vec<RawColumn> = columns
        .iter()
        .map(|(_, tokens)| RawColumn {
            tokens: tokens
                .iter()
                .map(|t| t.as_deref().map(str::as_bytes).filter(|t| !is_missing(t)))
                .collect(),
            lines: (1..=n).collect(),
        })
        .collect();
    typed_table(&names, &raw, true, 0, &[], &types, origin).map(|t| t.0)
}

/// New rows given as columns of text by name (`None` where missing; see
/// [`table_from_tokens`]) as a table with the columns, types and level codes of `training`:
/// each entry read as [`align_to`] reads a column of levels, a number by its value's text (so
/// that `2.0` names the level `2`), so that a column missing in every new row is fine. Cost:
/// O(rows · d · log L).
pub fn align_tokens(
    columns: &[(String, Vec<Option<String>>)],
    training: &TableData,
) -> Result<TableData> {
    let given = columns
        .iter()
        .map(|(name, tokens)| {
            let mut levels: Vec<String> = Vec::new();
            let values = tokens
                .iter()
                .map(|t| {
                    let Some(t) = t.as_deref().filter(|t| !is_missing(t.as_bytes())) else {
                        return f64::NAN;
                    };
                    let text =
                        parse_f64(t.as_bytes()).map_or_else(|| t.to_string(), |v| format!("{v}"));
                    let code = levels.iter().position(|l| *l == text).unwrap_or_else(|| {
                        levels.push(text);
                        levels.len() - 1
                    });
                    code as f64
                })
                .collect();
            Column {
                name: name.clone(),
                kind: ColumnType::Categorical,
                levels,
                values,
            }
        })
        .collect();
    align_columns(given, training)
}

/// The raw fields of one column as read: the token of each row (`None` where missing) and the
/// line it came from.
struct RawColumn<'a> {
    tokens: Vec<Option<&'a [u8]>>,
    lines: Vec<usize>,
}

/// Reads a table from text: a header (forced by `header`, else a first line without any
/// number), columns `skip`ped (1-based numbers or names), types given by `types` (by name, or
/// number from 1) or inferred. Errors name `origin`, the line and the column. Cost: one pass,
/// then a sort per column.
pub(super) fn table_from_text(
    bytes: &[u8],
    origin: &Path,
    header: bool,
    skip: &[String],
    types: &[String],
) -> Result<(TableData, Vec<String>)> {
    let bytes = &*gunzip(bytes, origin)?;
    check_text(bytes, origin, "a table")?;
    let types = parse_types(types)?;
    let mut fields = Vec::new();
    let mut layout: Option<(Separator, usize, Vec<String>, bool)> = None;
    let mut raw: Vec<RawColumn> = Vec::new();
    for (line_no, line) in numbered_lines(bytes) {
        if is_blank(line) || is_comment(line) {
            continue;
        }
        let Some((sep, first, _, _)) = &layout else {
            let sep = if line.contains(&b',') {
                Separator::Comma
            } else {
                Separator::Whitespace
            };
            split_fields(line, sep, &mut fields);
            let has_header = header || fields.iter().all(|f| parse_f64(f).is_none());
            let names: Vec<String> = if has_header {
                fields
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect()
            } else {
                (1..=fields.len()).map(|j| j.to_string()).collect()
            };
            raw = (0..fields.len())
                .map(|_| RawColumn {
                    tokens: Vec::new(),
                    lines: Vec::new(),
                })
                .collect();
            layout = Some((sep, line_no, names, has_header));
            if has_header {
                continue;
            }
            push_row(&fields, line_no, &mut raw);
            continue;
        };
        split_fields(line, *sep, &mut fields);
        if fields.len() != raw.len() {
            return Err(perr(
                origin,
                line_no,
                format!(
                    "{} fields, expected {} like line {first}",
                    fields.len(),
                    raw.len()
                ),
            ));
        }
        push_row(&fields, line_no, &mut raw);
    }
    let Some((_, first, names, has_header)) = layout else {
        return Err(perr(origin, 0, "the input holds no line of data"));
    };
    if raw.first().is_none_or(|c| c.tokens.is_empty()) {
        return Err(perr(
            origin,
            0,
            format!("the input holds only a header (line {first}), expected one row per line"),
        ));
    }
    typed_table(&names, &raw, has_header, first, skip, &types, origin)
}

/// The table of the raw columns `raw` named `names` (from a header when `has_header`, whose
/// line is `first`): columns `skip`ped, types given by `types` or inferred
/// ([`typed_column`]). Errors name `origin` and the line.
fn typed_table(
    names: &[String],
    raw: &[RawColumn],
    has_header: bool,
    first: usize,
    skip: &[String],
    types: &[(String, ColumnType)],
    origin: &Path,
) -> Result<(TableData, Vec<String>)> {
    let mut skipped = vec![false; names.len()];
    for s in skip {
        let j = names
            .iter()
            .position(|n| n == s)
            .or_else(|| {
                s.parse::<usize>()
                    .ok()
                    .filter(|&k| (1..=names.len()).contains(&k))
                    .map(|k| k - 1)
            })
            .ok_or_else(|| {
                perr(
                    origin,
                    first,
                    format!(
                        "cannot skip column \"{s}\": the columns are {}",
                        names.join(", ")
                    ),
                )
            })?;
        skipped[j] = true;
    }
    for (name, _) in types {
        let known = names.iter().any(|n| n == name)
            || name
                .parse::<usize>()
                .is_ok_and(|k| (1..=names.len()).contains(&k));
        if !known {
            return Err(Error::param(
                "types",
                name,
                &format!("a column of {} ({})", origin.display(), names.join(", ")),
            ));
        }
    }
    let mut columns = Vec::new();
    let mut kept = Vec::new();
    for (j, (name, col)) in names.iter().zip(raw).enumerate() {
        if skipped[j] {
            continue;
        }
        let given = types
            .iter()
            .find(|(n, _)| n == name || n.parse::<usize>() == Ok(j + 1))
            .map(|&(_, t)| t);
        if !has_header && given.is_none() {
            // Without a header, words are taken for a mistake in a matrix of numbers (a
            // table of words names its columns).
            if let Some(i) = col
                .tokens
                .iter()
                .position(|t| t.is_some_and(|t| parse_f64(t).is_none()))
            {
                return Err(perr(
                    origin,
                    col.lines[i],
                    format!(
                        "value {} of column {} is not a number, and there is no header line of \
                         column names that would make the text a table",
                        show(col.tokens[i].unwrap_or_default()),
                        j + 1
                    ),
                ));
            }
        }
        columns.push(typed_column(name, col, given, origin)?);
        kept.push(name.to_string());
    }
    if columns.is_empty() {
        return Err(perr(
            origin,
            first,
            "every column is skipped, so no values remain",
        ));
    }
    Ok((TableData::new(columns)?, kept))
}

/// Appends one row's fields to the raw columns.
fn push_row<'a>(fields: &[&'a [u8]], line: usize, raw: &mut [RawColumn<'a>]) {
    for (c, &f) in raw.iter_mut().zip(fields) {
        c.tokens.push((!is_missing(f)).then_some(f));
        c.lines.push(line);
    }
}

/// The column `name` from its raw tokens, typed `given` or inferred. Cost: O(N log N).
fn typed_column(
    name: &str,
    col: &RawColumn,
    given: Option<ColumnType>,
    origin: &Path,
) -> Result<Column> {
    let numbers: Vec<Option<f64>> = col.tokens.iter().map(|t| t.and_then(parse_f64)).collect();
    let word = col
        .tokens
        .iter()
        .zip(&numbers)
        .position(|(t, v)| t.is_some() && v.is_none());
    let number = numbers.iter().position(Option::is_some);
    let all_numbers = word.is_none();
    // Distinct observed values: by number when all are numbers (so that 1 and 1.0 agree), by
    // text otherwise.
    let mut distinct: BTreeMap<String, f64> = BTreeMap::new();
    for (t, v) in col.tokens.iter().zip(&numbers) {
        if let Some(t) = t {
            let key = match v {
                Some(v) if all_numbers => format!("{v}"),
                _ => String::from_utf8_lossy(t).into_owned(),
            };
            distinct.entry(key).or_insert(v.unwrap_or(f64::NAN));
        }
    }
    if distinct.is_empty() {
        return Err(Error::Usage(format!(
            "{}: column \"{name}\" has no observed value: leave it out (--skip-columns {name})",
            origin.display()
        )));
    }
    let observed: Vec<f64> = numbers.iter().flatten().copied().collect();
    let kind = match given {
        Some(t) => t,
        None => {
            if let (Some(w), Some(k)) = (word, number) {
                return Err(perr(
                    origin,
                    col.lines[w],
                    format!(
                        "column \"{name}\" holds {}, which is not a number, here and numbers \
                         elsewhere (line {}, {}): fix the value, or give --types {name}:cat to \
                         read every value as a category",
                        show(col.tokens[w].unwrap_or_default()),
                        col.lines[k],
                        show(col.tokens[k].unwrap_or_default())
                    ),
                ));
            }
            // A column of numbers holds finite numbers of moderate magnitude, whatever its
            // type, as a matrix of numbers does.
            if let Some(i) = numbers.iter().position(|v| {
                v.is_some_and(|v| !(v.is_finite() && v.abs() <= super::MAX_MAGNITUDE))
            }) {
                return Err(perr(
                    origin,
                    col.lines[i],
                    format!(
                        "column \"{name}\" holds {}, expected a finite number {}",
                        show(col.tokens[i].unwrap_or_default()),
                        super::magnitude_hint()
                    ),
                ));
            }
            ColumnType::infer(all_numbers.then_some(&observed[..]), distinct.len())
        }
    };
    let bad = |i: usize, expected: &str| {
        perr(
            origin,
            col.lines[i],
            format!(
                "column \"{name}\" ({}) holds {}, expected {expected}",
                kind.name(),
                show(col.tokens[i].unwrap_or_default())
            ),
        )
    };
    let values: Vec<f64> = match kind {
        ColumnType::Real | ColumnType::Count => {
            let mut out = Vec::with_capacity(col.tokens.len());
            for (i, (t, v)) in col.tokens.iter().zip(&numbers).enumerate() {
                out.push(match (t, v) {
                    (None, _) => f64::NAN,
                    (Some(_), None) => return Err(bad(i, "a number")),
                    (Some(_), Some(v)) if v.abs() > super::MAX_MAGNITUDE => {
                        return Err(bad(i, &format!("a value {}", super::magnitude_hint())))
                    }
                    (Some(_), Some(v))
                        if kind == ColumnType::Count
                            && !(*v >= 0.0 && v.fract() == 0.0 && *v < 4e9) =>
                    {
                        return Err(bad(i, "an integer count >= 0"))
                    }
                    (Some(_), Some(v)) => *v,
                });
            }
            out
        }
        ColumnType::Binary | ColumnType::Categorical => {
            if kind == ColumnType::Binary && distinct.len() > 2 {
                return Err(Error::Usage(format!(
                    "{}: column \"{name}\" is given as binary but holds {} distinct values: give \
                     it as cat",
                    origin.display(),
                    distinct.len()
                )));
            }
            // Levels in numeric order when all are numbers, else by text (the map's order).
            let mut levels: Vec<(String, f64)> = distinct.into_iter().collect();
            if all_numbers {
                levels.sort_by(|a, b| a.1.total_cmp(&b.1));
            }
            let code: BTreeMap<&str, usize> = levels
                .iter()
                .enumerate()
                .map(|(k, (l, _))| (l.as_str(), k))
                .collect();
            let values = col
                .tokens
                .iter()
                .zip(&numbers)
                .map(|(t, v)| match (t, v) {
                    (None, _) => f64::NAN,
                    (Some(_), Some(v)) if all_numbers => code[format!("{v}").as_str()] as f64,
                    (Some(t), _) => code[String::from_utf8_lossy(t).as_ref()] as f64,
                })
                .collect();
            return Ok(Column {
                name: name.to_string(),
                kind,
                levels: levels.into_iter().map(|(l, _)| l).collect(),
                values,
            });
        }
    };
    Ok(Column {
        name: name.to_string(),
        kind,
        levels: Vec::new(),
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, types: &[&str]) -> Result<TableData> {
        let types: Vec<String> = types.iter().map(|s| s.to_string()).collect();
        table_from_text(text.as_bytes(), Path::new("t.csv"), false, &[], &types).map(|t| t.0)
    }

    #[test]
    fn types_are_inferred_and_missing_entries_kept() {
        let t = read(
            "x,yes,legs,n,colour\n1.5,yes,4,0,red\nNA,no,2,1,blue\n2.5,,4,12,green\n\
             3,yes,?,3,red\n-1,no,6,NaN,\n",
            &[],
        )
        .unwrap();
        let kinds: Vec<ColumnType> = t.columns().iter().map(|c| c.kind).collect();
        use ColumnType::*;
        assert_eq!(kinds, [Real, Binary, Categorical, Categorical, Categorical]);
        assert_eq!(t.missing_per_column(), [1, 1, 1, 1, 1]);
        assert_eq!(t.columns()[1].levels, ["no", "yes"]);
        assert_eq!(t.columns()[2].levels, ["2", "4", "6"]);
        assert_eq!(t.value(0, 2), Some(1.0));
        assert_eq!(t.value(3, 2), None);
        assert_eq!(t.columns()[4].levels, ["blue", "green", "red"]);
    }

    #[test]
    fn a_matrix_types_its_two_valued_columns_binary_and_nothing_else() {
        let x = crate::data::DenseData::new(
            4,
            4,
            vec![
                1.5, 2.0, 0.0, 7.0, //
                2.5, -1.0, 3.0, 7.0, //
                3.5, 2.0, 3.0, 7.0, //
                4.5, 2.0, 0.0, 7.0,
            ],
        )
        .unwrap();
        let t = with_binary_columns(&x, false).unwrap().unwrap();
        let kinds: Vec<ColumnType> = t.columns().iter().map(|c| c.kind).collect();
        use ColumnType::{Binary, Real};
        assert_eq!(kinds, [Real, Binary, Binary, Binary]);
        assert_eq!(t.columns()[1].levels, ["-1", "2"]);
        assert_eq!(t.columns()[1].values, [1.0, 0.0, 1.0, 1.0]);
        assert_eq!(t.columns()[2].values, [0.0, 1.0, 1.0, 0.0]);
        assert_eq!(t.columns()[3].levels, ["7"]);
        assert_eq!(t.columns()[0].values, [1.5, 2.5, 3.5, 4.5]);
        assert_eq!(t.columns()[0].name, "1");
        // Fewer than half of the varying columns with two values, or none: a matrix.
        let mostly_real =
            crate::data::DenseData::new(3, 3, vec![1.0, 0.0, 4.0, 2.0, 1.0, 5.0, 3.0, 0.0, 6.0])
                .unwrap();
        assert!(with_binary_columns(&mostly_real, false).unwrap().is_none());
        assert!(with_binary_columns(&mostly_real, true).unwrap().is_some());
        let plain = crate::data::DenseData::new(3, 2, vec![1.0, 5.0, 2.0, 5.0, 3.0, 5.0]).unwrap();
        assert!(with_binary_columns(&plain, true).unwrap().is_none());
    }

    #[test]
    fn small_integers_with_many_values_are_counts() {
        let rows: String = (0..40).map(|i| format!("{}\n", i % 13)).collect();
        let t = read(&format!("k\n{rows}"), &[]).unwrap();
        assert_eq!(t.columns()[0].kind, ColumnType::Count);
        let rows: String = (0..40).map(|i| format!("{}\n", 60 + i % 13)).collect();
        assert_eq!(
            read(&format!("k\n{rows}"), &[]).unwrap().columns()[0].kind,
            ColumnType::Real
        );
    }

    #[test]
    fn given_types_override_and_bad_values_name_the_line() {
        let t = read("a,b\n1,2\n2,3\n3,4\n", &["a:cat", "2:count"]).unwrap();
        assert_eq!(t.columns()[0].kind, ColumnType::Categorical);
        assert_eq!(t.columns()[1].kind, ColumnType::Count);
        let e = read("a,b\n1,x\n2,y\n3,4\n", &[]).unwrap_err().to_string();
        assert!(e.contains("t.csv:2") && e.contains("--types b:cat"), "{e}");
        let e = read("a\n1\n-2\n3\n", &["a:count"]).unwrap_err().to_string();
        assert!(e.contains("t.csv:3") && e.contains("count"), "{e}");
        let e = read("a\n1\n2\n", &["z:real"]).unwrap_err().to_string();
        assert!(e.contains("types"), "{e}");
        let e = read("a,b\n1,\n2,NA\n", &[]).unwrap_err().to_string();
        assert!(e.contains("no observed value"), "{e}");
        let e = read("a,b\n1,2\n2\n", &[]).unwrap_err().to_string();
        assert!(e.contains("t.csv:3") && e.contains("1 fields"), "{e}");
    }

    /// Columns of text as a data frame gives them.
    fn tokens(text: &str) -> Vec<(String, Vec<Option<String>>)> {
        let mut lines = text.lines().map(|l| l.split(',').collect::<Vec<_>>());
        let names = lines.next().unwrap();
        let rows: Vec<Vec<&str>> = lines.collect();
        names
            .iter()
            .enumerate()
            .map(|(j, n)| {
                let col = rows
                    .iter()
                    .map(|r| Some(r[j]).filter(|t| !t.is_empty()).map(String::from))
                    .collect();
                (n.to_string(), col)
            })
            .collect()
    }

    #[test]
    fn tokens_read_as_the_same_text_does() {
        let text = "x,yes,legs,n,colour\n1.5,yes,4.0,0,red\nNA,no,2,1,blue\n2.5,,4,12,green\n\
                    3,yes,?,3,red\n-1,no,6,NaN,\n";
        for types in [&[][..], &["n:count", "2:cat"][..]] {
            let owned: Vec<String> = types.iter().map(|s| s.to_string()).collect();
            let from_tokens = table_from_tokens(&tokens(text), &owned, "X").unwrap();
            // Compared as text: missing entries are NaN.
            let from_text = read(text, types).unwrap();
            assert_eq!(format!("{from_tokens:?}"), format!("{from_text:?}"));
        }
        let e = table_from_tokens(&tokens("a,b\n1,x\n2,3\n"), &[], "X")
            .unwrap_err()
            .to_string();
        assert!(e.contains("X:1") && e.contains("--types b:cat"), "{e}");
        let e = table_from_tokens(&tokens("a,b\n1,\n2,\n"), &[], "X")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no observed value"), "{e}");
    }

    #[test]
    fn new_rows_as_tokens_align_by_name_and_value() {
        let training = read("x,legs,colour\n1.5,4,red\n2,2,blue\n2.5,6,red\n", &[]).unwrap();
        // Columns in another order, a number written as a float naming a level, a column
        // missing in every new row.
        let new = align_tokens(&tokens("colour,x,legs\n,3,2.0\nred,,\n"), &training).unwrap();
        assert_eq!(new.value(0, 0), Some(3.0));
        assert_eq!(new.value(0, 1), Some(0.0));
        assert_eq!(new.value(0, 2), None);
        assert_eq!(new.value(1, 2), Some(1.0));
        let e = align_tokens(&tokens("x,legs,colour\n1,5,red\n"), &training)
            .unwrap_err()
            .to_string();
        assert!(e.contains("legs") && e.contains("\"5\""), "{e}");
    }
}
