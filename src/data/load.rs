//! Readers and writers for the data formats `nrmm` consumes.
//!
//! * **Dense matrix** (text, CSV): one point per line, values separated by whitespace or by
//!   commas (decided on the first data line), blank lines and `#` comment lines skipped, fields
//!   optionally in double quotes; a first line without any number is a header of column names
//!   ([`DenseOptions`] forces a header, and leaves out columns by number or name).
//! * **Labels** (text): one integer per line, any sign; or an IDX label file (magic 2049).
//! * **UCI docword** (text): header lines `D`, `W`, `NNZ`, then `NNZ` lines
//!   `docID wordID count`, ids 1-based.
//! * **LDA-C** (text): one document per line, `M id:count id:count ...`, ids 0-based, `M`
//!   pairs.
//! * **IDX** (binary, big-endian): `00 00 08 ndims`, `ndims` 32-bit sizes, then unsigned bytes;
//!   images (magic 2051, `n × rows × cols`) load as a dense `n × (rows·cols)` matrix of grey
//!   levels, labels (magic 2049) as integers.
//! * **NumPy `.npy`**: a 2-D array of little-endian f8, f4, i8 or i4, C or Fortran order
//!   ([`super::npy`]).
//! * **gzip**: any of the above compressed with gzip (recognised by its magic bytes) is
//!   decompressed first.
//!
//! Text formats refuse binary input (a NUL or another control character) with the line and the
//! byte, and values of dense data beyond [`super::MAX_MAGNITUDE`] with the line, column and the
//! advice to rescale.
//!
//! Every format can be read from a path (`load_*`), from any [`Read`] (`read_*`) or from a byte
//! slice (`parse_*`); the last two name the input `<input>` in errors. Every error names the
//! input, the 1-based line (0 for binary formats and whole-input problems), what was found and
//! what was expected.
//!
//! Cost: one read of the whole input into memory (decompressed, for gzip), then one pass with
//! no allocation per value
//! (tokens are byte slices of the input); count formats are sorted once,
//! `O(nnz log nnz)`. Memory allocated while parsing is bounded by a small multiple of the input
//! size plus a constant, whatever a header claims, so arbitrary bytes cannot trigger a huge
//! allocation.
//!
//! The writers ([`write_dense`], [`write_labels`], [`write_docword`]) write through a temporary
//! file in the target's directory and rename it into place, so a reader never sees a half
//! written file; what they write loads back exactly.

use std::fmt::Display;
use std::fs;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::{Dataset, DenseData, SparseCounts};
use crate::error::{Error, Result};
use rayon::prelude::*;

/// The name under which in-memory input (`parse_*`, `read_*`) appears in error messages.
pub const INPUT_NAME: &str = "<input>";

/// A docword header may declare at most this many documents beyond its number of entries
/// (documents without any word). Anything larger is taken as a corrupt header, which keeps the
/// row index of a bogus header from allocating gigabytes.
pub const MAX_EMPTY_DOCUMENTS: usize = 1 << 16;

/// Magic number of an IDX file of unsigned-byte images (`n × rows × cols`).
pub const IDX_IMAGES_MAGIC: u32 = 0x0803;

/// Magic number of an IDX file of unsigned-byte labels (`n`).
pub const IDX_LABELS_MAGIC: u32 = 0x0801;

// ---------------------------------------------------------------------------------------------
// Shared lexing helpers.

fn input_path() -> &'static Path {
    Path::new(INPUT_NAME)
}

pub(super) fn perr(origin: &Path, line: usize, message: impl Into<String>) -> Error {
    Error::parse(origin, line, message)
}

/// Lines with 1-based numbers; `\r\n` endings and a leading UTF-8 byte-order mark tolerated.
pub(super) fn numbered_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix(b"\r").unwrap_or(l)))
}

/// Number of the line after the last one: where "unexpected end of input" is reported.
fn end_line(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count() + 1
}

pub(super) fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

pub(super) fn is_comment(line: &[u8]) -> bool {
    line.trim_ascii_start().first() == Some(&b'#')
}

pub(super) fn tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(u8::is_ascii_whitespace)
        .filter(|t| !t.is_empty())
}

/// Refuses input that is not text: a NUL, another control character than whitespace, or DEL
/// means a binary file given to a text reader, and echoing its bytes would garble the
/// terminal. Names the line and the byte. Cost: O(bytes).
pub(super) fn check_text(bytes: &[u8], origin: &Path, what: &str) -> Result<()> {
    let binary =
        |b: u8| b == 0x7f || (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c));
    // In parallel pieces, the first in byte order reported.
    const PIECE: usize = 1 << 20;
    let first = bytes
        .par_chunks(PIECE)
        .enumerate()
        .find_map_first(|(c, piece)| piece.iter().position(|&b| binary(b)).map(|p| c * PIECE + p));
    match first {
        None => Ok(()),
        Some(at) => Err(perr(
            origin,
            bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1,
            format!(
                "binary data (byte 0x{:02x} at offset {at}), expected {what} as text; binary \
                 inputs are IDX (--format idx) and NumPy .npy (--format npy), and gzip-compressed \
                 text is read as the text it holds",
                bytes[at]
            ),
        )),
    }
}

/// The first bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// `bytes` decompressed if they are a gzip stream (one or several members), as they are
/// otherwise. A gzip stream inside another is refused, which bounds the expansion by deflate's
/// own limit (about 1000-fold). Cost: `O(decompressed bytes)`.
pub(super) fn gunzip<'a>(bytes: &'a [u8], origin: &Path) -> Result<std::borrow::Cow<'a, [u8]>> {
    if !bytes.starts_with(&GZIP_MAGIC) {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|e| {
            perr(
                origin,
                0,
                format!(
                    "gzip-compressed, but not a complete gzip stream ({e}): truncated or damaged?"
                ),
            )
        })?;
    if out.starts_with(&GZIP_MAGIC) {
        return Err(perr(
            origin,
            0,
            "gzip-compressed twice: decompress it once (gunzip) and give the result",
        ));
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// A token quoted for an error message, cut to a readable length, with anything unprintable
/// escaped.
pub(super) fn show(token: &[u8]) -> String {
    const MAX: usize = 40;
    let text: String = String::from_utf8_lossy(&token[..token.len().min(MAX)])
        .chars()
        .flat_map(char::escape_debug)
        .collect();
    if token.len() > MAX {
        format!("\"{text}...\"")
    } else {
        format!("\"{text}\"")
    }
}

pub(super) fn parse_f64(token: &[u8]) -> Option<f64> {
    std::str::from_utf8(token).ok()?.parse().ok()
}

/// A non-negative integer, or a message saying why the token is not one.
fn parse_unsigned(token: &[u8], what: &str) -> std::result::Result<u64, String> {
    let text = std::str::from_utf8(token).unwrap_or("");
    if let Ok(v) = text.parse::<u64>() {
        return Ok(v);
    }
    if let Ok(v) = text.parse::<i64>() {
        return Err(format!(
            "{what} {v} is negative, expected a non-negative integer"
        ));
    }
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{what} {} is too large", show(token)));
    }
    if parse_f64(token).is_some() {
        return Err(format!("{what} {} is not an integer", show(token)));
    }
    Err(format!("{what} {} is not a number", show(token)))
}

fn parse_count(token: &[u8]) -> std::result::Result<u32, String> {
    let v = parse_unsigned(token, "count")?;
    u32::try_from(v).map_err(|_| format!("count {v} is too large (at most {})", u32::MAX))
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_all<R: Read>(mut reader: R) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).map_err(|source| Error::Io {
        path: input_path().to_path_buf(),
        source,
    })?;
    Ok(bytes)
}

// ---------------------------------------------------------------------------------------------
// Dense matrices.

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Separator {
    Whitespace,
    Comma,
}

fn dense_value(
    token: &[u8],
    origin: &Path,
    line: usize,
    column: usize,
    sep: Separator,
    first_line: usize,
) -> Result<f64> {
    if token.is_empty() {
        return Err(perr(
            origin,
            line,
            format!("value {column} is empty (a doubled or trailing comma?)"),
        ));
    }
    match parse_f64(token) {
        Some(v) if v.is_finite() && v.abs() <= super::MAX_MAGNITUDE => Ok(v),
        Some(v) if v.is_finite() || token.iter().any(u8::is_ascii_digit) => Err(perr(
            origin,
            line,
            format!(
                "value {column} ({}) is {}",
                show(token),
                super::magnitude_hint()
            ),
        )),
        Some(v) => Err(perr(
            origin,
            line,
            format!("value {column} is {v}, expected a finite number"),
        )),
        None => {
            let hint = if sep == Separator::Whitespace && token.contains(&b',') {
                format!(" (line {first_line} has no commas, so values are separated by whitespace)")
            } else {
                String::new()
            };
            Err(perr(
                origin,
                line,
                format!("value {column} {} is not a number{hint}", show(token)),
            ))
        }
    }
}

/// How dense text is read: its header and the columns to leave out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DenseOptions {
    /// The first data line is a header of column names even if its fields are numbers.
    /// Without it, a first line none of whose fields is a number is taken as a header.
    pub header: bool,
    /// Columns to leave out (an id column, the labels): 1-based column numbers, or names from
    /// the header.
    pub skip_columns: Vec<String>,
    /// Column types given by the user, `name:type` (`real`, `binary`, `cat`, `count`; a name
    /// from the header or a number from 1): the text is then read as a typed table
    /// ([`super::table`]), with these types and the others inferred.
    pub types: Vec<String>,
}

/// A dense matrix with the names of its columns when its file had a header.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The values.
    pub data: DenseData,
    /// The header's names of the kept columns, if the file had a header.
    pub columns: Option<Vec<String>>,
}

/// The fields of a line of dense text, trimmed, a pair of surrounding double quotes dropped
/// (spreadsheets quote CSV fields), into `out`.
pub(super) fn split_fields<'a>(line: &'a [u8], sep: Separator, out: &mut Vec<&'a [u8]>) {
    out.clear();
    let unquote = |t: &'a [u8]| {
        t.strip_prefix(b"\"")
            .and_then(|t| t.strip_suffix(b"\""))
            .unwrap_or(t)
    };
    match sep {
        Separator::Comma => out.extend(line.split(|&b| b == b',').map(|t| unquote(t.trim_ascii()))),
        Separator::Whitespace => out.extend(tokens(line).map(unquote)),
    }
}

/// The 0-based columns `skip` names among `width` columns with optional header `names`.
fn skipped_columns(
    skip: &[String],
    width: usize,
    names: Option<&[String]>,
    origin: &Path,
    line: usize,
) -> Result<Vec<bool>> {
    let mut skipped = vec![false; width];
    for spec in skip {
        let by_name = names.and_then(|names| names.iter().position(|n| n == spec));
        let j = match (by_name, spec.parse::<usize>()) {
            (Some(j), _) => j,
            (None, Ok(k)) if (1..=width).contains(&k) => k - 1,
            (None, Ok(k)) => {
                return Err(perr(
                    origin,
                    line,
                    format!(
                        "cannot skip column {k}: the lines have {width} columns (numbered from 1)"
                    ),
                ))
            }
            (None, Err(_)) => {
                let known = match names {
                    Some(names) => format!("the header names {}", names.join(", ")),
                    None => "there is no header, so columns are known by number only".to_string(),
                };
                return Err(perr(
                    origin,
                    line,
                    format!("cannot skip column \"{spec}\": {known}"),
                ));
            }
        };
        skipped[j] = true;
    }
    if skipped.iter().all(|&s| s) {
        return Err(perr(
            origin,
            line,
            format!("every one of the {width} columns is skipped, so no values remain"),
        ));
    }
    Ok(skipped)
}

fn dense_from_bytes(bytes: &[u8], origin: &Path) -> Result<DenseData> {
    Ok(table_from_bytes(bytes, origin, &DenseOptions::default())?.data)
}

/// What the first data line of dense text fixes: the separator, its line number, the number of
/// fields, the header's names (if it is a header) and the skipped columns.
type Layout = (Separator, usize, usize, Option<Vec<String>>, Vec<bool>);

fn table_from_bytes(bytes: &[u8], origin: &Path, opts: &DenseOptions) -> Result<Table> {
    let bytes = &*gunzip(bytes, origin)?;
    check_text(bytes, origin, "a matrix of numbers")?;
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // The layout, from the first line that is neither blank nor a comment, read alone; the
    // data lines from there on (that line too, unless it is a header) are read in parallel.
    let mut layout: Option<Layout> = None;
    let mut fields = Vec::new();
    let (mut offset, mut rest) = (0, None);
    for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if !is_blank(line) && !is_comment(line) {
            let sep = if line.contains(&b',') {
                Separator::Comma
            } else {
                Separator::Whitespace
            };
            split_fields(line, sep, &mut fields);
            let is_header = opts.header || fields.iter().all(|f| parse_f64(f).is_none());
            let names: Option<Vec<String>> = is_header.then(|| {
                fields
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect()
            });
            let skipped = skipped_columns(
                &opts.skip_columns,
                fields.len(),
                names.as_deref(),
                origin,
                line_no,
            )?;
            layout = Some((sep, line_no, fields.len(), names, skipped));
            rest = Some(if is_header {
                ((offset + raw.len() + 1).min(body.len()), line_no + 1)
            } else {
                (offset, line_no)
            });
            break;
        }
        offset += raw.len() + 1;
    }
    let (Some((sep, first_line, width, header, skipped)), Some((start, start_line))) =
        (layout, rest)
    else {
        let what = if bytes.is_empty() {
            "the input is empty"
        } else {
            "the input holds only blank or comment lines"
        };
        return Err(perr(
            origin,
            0,
            format!("{what}, expected one point per line"),
        ));
    };
    let d = skipped.iter().filter(|&&s| !s).count();
    let row = Row {
        sep,
        first_line,
        width,
        skipped: &skipped,
        after_header: header.is_some(),
    };
    let values = read_rows(&body[start..], start_line, d, &row, origin)?;
    let n = values.len() / d;
    if n == 0 {
        return Err(perr(
            origin,
            0,
            format!(
                "the input holds only a header (line {first_line}), expected one point per line"
            ),
        ));
    }
    let columns = header.map(|names| {
        names
            .into_iter()
            .zip(&skipped)
            .filter(|(_, &s)| !s)
            .map(|(name, _)| name)
            .collect()
    });
    Ok(Table {
        data: DenseData::new(n, d, values)?,
        columns,
    })
}

/// Bytes of dense text per parallel chunk of [`read_rows`], each cut after a line end.
const PARSE_CHUNK: usize = 1 << 22;

/// The lines of `text` in pieces of about [`PARSE_CHUNK`] bytes, each but the last ending
/// with its line's `\n`, so that no line is cut.
fn line_chunks(text: &[u8]) -> Vec<&[u8]> {
    let mut chunks = Vec::with_capacity(text.len() / PARSE_CHUNK + 1);
    let mut rest = text;
    while rest.len() > PARSE_CHUNK {
        let cut = match rest[PARSE_CHUNK..].iter().position(|&b| b == b'\n') {
            Some(p) => PARSE_CHUNK + p + 1,
            None => rest.len(),
        };
        let (head, tail) = rest.split_at(cut);
        chunks.push(head);
        rest = tail;
    }
    if !rest.is_empty() {
        chunks.push(rest);
    }
    chunks
}

/// The lines of a chunk with their `\r` endings dropped.
fn chunk_lines(chunk: &[u8]) -> impl Iterator<Item = &[u8]> {
    chunk
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

/// The values of every data line of `text` (blank and comment lines skipped), whose first
/// line is line `first` of the input, `d` values a line as `row` reads them, in line order.
/// Chunks of lines ([`line_chunks`]) are read in parallel: a first pass counts each chunk's
/// lines and data lines, so that each chunk knows its line numbers and where its values go;
/// the second parses them into one allocation. The first error in line order is returned, as
/// a reading line by line would give. Cost: `O(bytes)` over the threads, one allocation of
/// the values.
fn read_rows(
    text: &[u8],
    first: usize,
    d: usize,
    row: &Row<'_>,
    origin: &Path,
) -> Result<Vec<f64>> {
    let chunks = line_chunks(text);
    let counts: Vec<(usize, usize)> = chunks
        .par_iter()
        .map(|c| {
            let ends = c.iter().filter(|&&b| b == b'\n').count();
            let rows = chunk_lines(c)
                .filter(|l| !is_blank(l) && !is_comment(l))
                .count();
            (ends, rows)
        })
        .collect();
    let rows: usize = counts.iter().map(|c| c.1).sum();
    let mut values = vec![0.0; rows * d];
    let mut jobs = Vec::with_capacity(chunks.len());
    let (mut line, mut out) = (first, values.as_mut_slice());
    for (chunk, &(ends, rows)) in chunks.iter().zip(&counts) {
        let (mine, later) = out.split_at_mut(rows * d);
        jobs.push((*chunk, line, mine));
        line += ends;
        out = later;
    }
    let results: Vec<Result<()>> = jobs
        .into_par_iter()
        .map(|(chunk, first, out)| {
            let (mut fields, mut parsed) = (Vec::new(), Vec::with_capacity(d));
            let mut slots = out.chunks_exact_mut(d.max(1));
            for (i, line) in chunk_lines(chunk).enumerate() {
                if is_blank(line) || is_comment(line) {
                    continue;
                }
                parsed.clear();
                row.read(line, first + i, origin, &mut fields, &mut parsed)?;
                slots
                    .next()
                    .expect("a slot per data line")
                    .copy_from_slice(&parsed);
            }
            Ok(())
        })
        .collect();
    results.into_iter().collect::<Result<()>>()?;
    Ok(values)
}

/// The layout of the data lines of dense text, fixed by its first data line.
struct Row<'s> {
    sep: Separator,
    first_line: usize,
    width: usize,
    skipped: &'s [bool],
    after_header: bool,
}

impl Row<'_> {
    /// Reads one data line into `values`, checking its width.
    fn read<'a>(
        &self,
        line: &'a [u8],
        line_no: usize,
        origin: &Path,
        fields: &mut Vec<&'a [u8]>,
        values: &mut Vec<f64>,
    ) -> Result<()> {
        split_fields(line, self.sep, fields);
        // Values first, so that a token that is not a number (a separator mix-up) is named
        // before the count of values.
        for (j, token) in fields.iter().enumerate() {
            if !self.skipped.get(j).copied().unwrap_or(false) {
                let v = dense_value(token, origin, line_no, j + 1, self.sep, self.first_line)?;
                values.push(v);
            }
        }
        if fields.len() != self.width {
            let count = fields.len();
            let like = if self.after_header {
                format!("like the header on line {}", self.first_line)
            } else {
                format!("like line {}", self.first_line)
            };
            return Err(perr(
                origin,
                line_no,
                format!(
                    "{count} value{}, expected {} {like}",
                    if count == 1 { "" } else { "s" },
                    self.width
                ),
            ));
        }
        Ok(())
    }
}

/// Parses a dense matrix (one point per line, whitespace- or comma-separated) from bytes;
/// errors name the input `<input>`.
///
/// The separator is decided on the first data line: commas if it has one, whitespace otherwise.
/// Blank lines and lines starting with `#` are skipped; a first line none of whose fields is a
/// number is a header and skipped (see [`parse_table`] to keep its names); fields may be quoted.
/// Non-finite values, values beyond [`super::MAX_MAGNITUDE`], unparsable tokens, rows of a
/// different length than the first, and input without data are errors. Gzip-compressed input
/// is decompressed first. Cost: `O(bytes)`, one allocation for all values.
pub fn parse_dense(bytes: &[u8]) -> Result<DenseData> {
    dense_from_bytes(bytes, input_path())
}

/// Parses dense text as [`parse_dense`] does, with a header forced or detected and columns
/// left out as `opts` says, keeping the header's names of the columns kept.
pub fn parse_table(bytes: &[u8], opts: &DenseOptions) -> Result<Table> {
    table_from_bytes(bytes, input_path(), opts)
}

/// Reads a dense matrix from any reader (see [`parse_dense`]).
pub fn read_dense<R: Read>(reader: R) -> Result<DenseData> {
    parse_dense(&read_all(reader)?)
}

/// Loads a dense matrix from a file (see [`parse_dense`]); errors name the file.
pub fn load_dense(path: impl AsRef<Path>) -> Result<DenseData> {
    let path = path.as_ref();
    dense_from_bytes(&read_file(path)?, path)
}

// ---------------------------------------------------------------------------------------------
// Labels.

fn labels_from_bytes(bytes: &[u8], origin: &Path) -> Result<Vec<i64>> {
    let bytes = &*gunzip(bytes, origin)?;
    if bytes.starts_with(&[0, 0]) {
        return idx_labels_from_bytes(bytes, origin);
    }
    check_text(bytes, origin, "one integer label per line")?;
    let mut labels = Vec::new();
    for (line_no, line) in numbered_lines(bytes) {
        if is_blank(line) || is_comment(line) {
            continue;
        }
        let mut toks = tokens(line);
        let token = toks.next().unwrap_or_default();
        let extra = toks.count();
        if extra > 0 {
            return Err(perr(
                origin,
                line_no,
                format!("{} values, expected one integer label per line", extra + 1),
            ));
        }
        let label = std::str::from_utf8(token)
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            .ok_or_else(|| {
                perr(
                    origin,
                    line_no,
                    format!("label {} is not an integer", show(token)),
                )
            })?;
        labels.push(label);
    }
    if labels.is_empty() {
        return Err(perr(
            origin,
            0,
            "no labels, expected one integer label per line",
        ));
    }
    Ok(labels)
}

/// Parses labels from bytes: one integer per line (any sign; blank and `#` lines skipped), or
/// an IDX label file (recognised by its leading zero bytes). Labels are returned as given; see
/// [`super::canonical_labels`]. Cost: `O(bytes)`.
pub fn parse_labels(bytes: &[u8]) -> Result<Vec<i64>> {
    labels_from_bytes(bytes, input_path())
}

/// Reads labels from any reader (see [`parse_labels`]).
pub fn read_labels<R: Read>(reader: R) -> Result<Vec<i64>> {
    parse_labels(&read_all(reader)?)
}

/// Loads labels from a file (text or IDX, see [`parse_labels`]) for a data set of
/// `expected_n` points; errors if the file holds a different number of labels.
pub fn load_labels(path: impl AsRef<Path>, expected_n: usize) -> Result<Vec<i64>> {
    let path = path.as_ref();
    let labels = labels_from_bytes(&read_file(path)?, path)?;
    if labels.len() != expected_n {
        return Err(Error::DimensionMismatch(format!(
            "{} holds {} labels but the data set has {expected_n} points",
            path.display(),
            labels.len()
        )));
    }
    Ok(labels)
}

// ---------------------------------------------------------------------------------------------
// UCI docword.

fn docword_from_bytes(bytes: &[u8], origin: &Path) -> Result<SparseCounts> {
    const HEADER: [&str; 3] = [
        "the number of documents D",
        "the vocabulary size W",
        "the number of entries NNZ",
    ];
    let bytes = &*gunzip(bytes, origin)?;
    check_text(bytes, origin, "a UCI docword file")?;
    let mut lines = numbered_lines(bytes).filter(|(_, l)| !is_blank(l));
    let mut header = [0u64; 3];
    for (slot, what) in header.iter_mut().zip(HEADER) {
        let Some((line_no, line)) = lines.next() else {
            return Err(perr(
                origin,
                end_line(bytes),
                format!("unexpected end of input, expected {what} on a line of its own"),
            ));
        };
        let mut toks = tokens(line);
        let token = toks.next().unwrap_or_default();
        if toks.next().is_some() {
            return Err(perr(
                origin,
                line_no,
                format!("expected {what} on a line of its own, found several values"),
            ));
        }
        *slot = parse_unsigned(token, what)
            .map_err(|m| perr(origin, line_no, format!("{m} (header line)")))?;
    }
    let [docs, vocab, nnz] = header;
    if docs == 0 || docs > u64::from(u32::MAX) {
        return Err(perr(
            origin,
            0,
            format!(
                "the header declares D = {docs} documents, expected 1..={}",
                u32::MAX
            ),
        ));
    }
    if vocab == 0 || vocab > u64::from(u32::MAX) {
        return Err(perr(
            origin,
            0,
            format!(
                "the header declares W = {vocab} words, expected 1..={}",
                u32::MAX
            ),
        ));
    }
    let capacity = usize::try_from(nnz)
        .unwrap_or(usize::MAX)
        .min(bytes.len() / 6);
    let mut triplets = Vec::with_capacity(capacity);
    for (line_no, line) in lines {
        if triplets.len() as u64 == nnz {
            return Err(perr(
                origin,
                line_no,
                format!("more entries than the header's NNZ = {nnz}"),
            ));
        }
        let mut toks = tokens(line);
        let (Some(t_doc), Some(t_word), Some(t_count), None) =
            (toks.next(), toks.next(), toks.next(), toks.next())
        else {
            return Err(perr(
                origin,
                line_no,
                format!(
                    "{} values, expected three: docID wordID count",
                    tokens(line).count()
                ),
            ));
        };
        let doc = parse_unsigned(t_doc, "document id").map_err(|m| perr(origin, line_no, m))?;
        if doc == 0 || doc > docs {
            return Err(perr(
                origin,
                line_no,
                format!("document id {doc} out of range, expected 1..={docs} (1-based)"),
            ));
        }
        let word = parse_unsigned(t_word, "word id").map_err(|m| perr(origin, line_no, m))?;
        if word == 0 || word > vocab {
            return Err(perr(
                origin,
                line_no,
                format!("word id {word} out of range, expected 1..={vocab} (1-based)"),
            ));
        }
        let count = parse_count(t_count).map_err(|m| perr(origin, line_no, m))?;
        // Both ids were checked against the header, whose D and W fit in u32.
        triplets.push(((doc - 1) as u32, (word - 1) as u32, count));
    }
    if (triplets.len() as u64) < nnz {
        return Err(perr(
            origin,
            end_line(bytes),
            format!(
                "unexpected end of input: the header announces NNZ = {nnz} entries, found {}",
                triplets.len()
            ),
        ));
    }
    if docs > (triplets.len() + MAX_EMPTY_DOCUMENTS) as u64 {
        return Err(perr(
            origin,
            0,
            format!(
                "the header declares D = {docs} documents for only {} entries; more than \
                 {MAX_EMPTY_DOCUMENTS} documents would be empty, so the header looks corrupt",
                triplets.len()
            ),
        ));
    }
    SparseCounts::from_triplets(docs as usize, vocab as usize, triplets)
        .map_err(|e| perr(origin, 0, e.to_string()))
}

/// Parses a UCI bag-of-words `docword` file from bytes: header lines `D`, `W`, `NNZ`, then `NNZ`
/// lines `docID wordID count` with 1-based ids (blank lines skipped). Repeated
/// `(docID, wordID)` pairs are summed.
///
/// Errors: a missing or malformed header, ids outside `1..=D` / `1..=W`, negative, non-integer
/// or oversized counts, more or fewer entries than `NNZ`, and a `D` exceeding the entries by
/// more than [`MAX_EMPTY_DOCUMENTS`]. Cost: `O(bytes + NNZ log NNZ)`.
pub fn parse_docword(bytes: &[u8]) -> Result<SparseCounts> {
    docword_from_bytes(bytes, input_path())
}

/// Reads a UCI docword file from any reader (see [`parse_docword`]).
pub fn read_docword<R: Read>(reader: R) -> Result<SparseCounts> {
    parse_docword(&read_all(reader)?)
}

/// Loads a UCI docword file (see [`parse_docword`]); errors name the file.
pub fn load_docword(path: impl AsRef<Path>) -> Result<SparseCounts> {
    let path = path.as_ref();
    docword_from_bytes(&read_file(path)?, path)
}

// ---------------------------------------------------------------------------------------------
// LDA-C.

fn ldac_from_bytes(bytes: &[u8], origin: &Path, vocab: Option<usize>) -> Result<SparseCounts> {
    let bytes = &*gunzip(bytes, origin)?;
    check_text(bytes, origin, "an LDA-C file")?;
    if vocab == Some(0) {
        return Err(Error::param(
            "vocabulary size",
            0,
            "a positive number of words",
        ));
    }
    if let Some(v) = vocab.filter(|&v| v as u64 > u64::from(u32::MAX)) {
        return Err(Error::param(
            "vocabulary size",
            v,
            "at most 4294967295 words (ids are 32-bit)",
        ));
    }
    let limit = vocab.map_or(u64::from(u32::MAX), |v| v as u64);
    let mut triplets = Vec::new();
    let mut docs = 0usize;
    let mut max_id: Option<u32> = None;
    for (line_no, line) in numbered_lines(bytes) {
        if is_blank(line) {
            continue;
        }
        let mut toks = tokens(line);
        let announced = parse_unsigned(toks.next().unwrap_or_default(), "number of pairs M")
            .map_err(|m| perr(origin, line_no, m))?;
        let doc =
            u32::try_from(docs).map_err(|_| perr(origin, line_no, "more than 2^32 documents"))?;
        let mut found = 0u64;
        for pair in toks {
            found += 1;
            let Some(colon) = pair.iter().position(|&b| b == b':') else {
                return Err(perr(
                    origin,
                    line_no,
                    format!("pair {found} {} is not of the form id:count", show(pair)),
                ));
            };
            let id = parse_unsigned(&pair[..colon], "word id")
                .map_err(|m| perr(origin, line_no, format!("pair {found}: {m}")))?;
            if id >= limit {
                let expected = match vocab {
                    Some(v) => format!("the vocabulary has {v} words (ids 0..={})", v - 1),
                    None => format!("ids must be below {}", u32::MAX),
                };
                return Err(perr(
                    origin,
                    line_no,
                    format!("pair {found}: word id {id} out of range: {expected} (0-based)"),
                ));
            }
            let count = parse_count(&pair[colon + 1..])
                .map_err(|m| perr(origin, line_no, format!("pair {found}: {m}")))?;
            let id = id as u32;
            max_id = Some(max_id.map_or(id, |m| m.max(id)));
            triplets.push((doc, id, count));
        }
        if found != announced {
            return Err(perr(
                origin,
                line_no,
                format!("M = {announced} announces {announced} id:count pairs, found {found}"),
            ));
        }
        docs += 1;
    }
    if docs == 0 {
        let what = if bytes.is_empty() {
            "the input is empty"
        } else {
            "the input holds only blank lines"
        };
        return Err(perr(
            origin,
            0,
            format!("{what}, expected one document per line"),
        ));
    }
    let vocab =
        match (vocab, max_id) {
            (Some(v), _) => v,
            (None, Some(m)) => m as usize + 1,
            (None, None) => return Err(perr(
                origin,
                0,
                "no word ids at all, so the vocabulary size cannot be inferred; give it explicitly",
            )),
        };
    SparseCounts::from_triplets(docs, vocab, triplets).map_err(|e| perr(origin, 0, e.to_string()))
}

/// Parses an LDA-C corpus from bytes: one document per non-blank line,
/// `M id:count id:count ...` with 0-based word ids and exactly `M` pairs. The vocabulary size
/// is `vocab` when given (ids must be below it), else the largest id + 1. Repeated ids within a
/// document are summed.
///
/// Errors: malformed pairs, negative, non-integer or oversized ids and counts, ids out of
/// range, `M` not matching the pairs (also how a cut-off last line shows), empty input.
/// Cost: `O(bytes + nnz log nnz)`.
pub fn parse_ldac(bytes: &[u8], vocab: Option<usize>) -> Result<SparseCounts> {
    ldac_from_bytes(bytes, input_path(), vocab)
}

/// Reads an LDA-C corpus from any reader (see [`parse_ldac`]).
pub fn read_ldac<R: Read>(reader: R, vocab: Option<usize>) -> Result<SparseCounts> {
    parse_ldac(&read_all(reader)?, vocab)
}

/// Loads an LDA-C corpus from a file (see [`parse_ldac`]); errors name the file.
pub fn load_ldac(path: impl AsRef<Path>, vocab: Option<usize>) -> Result<SparseCounts> {
    let path = path.as_ref();
    ldac_from_bytes(&read_file(path)?, path, vocab)
}

// ---------------------------------------------------------------------------------------------
// IDX.

/// Checks an IDX header of unsigned bytes and returns the dimensions and the payload.
fn idx_split<'a>(bytes: &'a [u8], origin: &Path, expected: &str) -> Result<(Vec<usize>, &'a [u8])> {
    if bytes.len() < 4 {
        return Err(perr(
            origin,
            0,
            format!(
                "truncated IDX header: {} bytes, expected at least 4 ({expected})",
                bytes.len()
            ),
        ));
    }
    let magic = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(perr(
            origin,
            0,
            format!(
                "not an IDX file: magic number {magic} (0x{magic:08x}) does not start with two \
                 zero bytes; expected {expected}"
            ),
        ));
    }
    if bytes[2] != 0x08 {
        return Err(perr(
            origin,
            0,
            format!(
                "magic number {magic} (0x{magic:08x}) has element type 0x{:02x}; only unsigned \
                 bytes (0x08) are supported; expected {expected}",
                bytes[2]
            ),
        ));
    }
    let ndims = bytes[3] as usize;
    let header = 4 + 4 * ndims;
    if bytes.len() < header {
        return Err(perr(
            origin,
            0,
            format!(
                "truncated IDX header: {} bytes, the {ndims} dimensions need {header}",
                bytes.len()
            ),
        ));
    }
    let dims: Vec<usize> = bytes[4..header]
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .collect();
    let total = dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            perr(
                origin,
                0,
                format!("IDX dimensions {dims:?} overflow the address space"),
            )
        })?;
    let payload = &bytes[header..];
    if payload.len() < total {
        return Err(perr(
            origin,
            0,
            format!(
                "truncated IDX payload: dimensions {dims:?} need {total} bytes, found {}",
                payload.len()
            ),
        ));
    }
    if payload.len() > total {
        return Err(perr(
            origin,
            0,
            format!(
                "{} bytes after the IDX payload of dimensions {dims:?}; the header and the size \
                 disagree",
                payload.len() - total
            ),
        ));
    }
    if total == 0 {
        return Err(perr(
            origin,
            0,
            format!("IDX dimensions {dims:?} hold no data"),
        ));
    }
    Ok((dims, payload))
}

fn idx_images_from_bytes(bytes: &[u8], origin: &Path) -> Result<DenseData> {
    let bytes = &*gunzip(bytes, origin)?;
    const EXPECTED: &str = "2051 (0x00000803, unsigned-byte images n x rows x cols)";
    if bytes.len() >= 4 && bytes[..4] == IDX_LABELS_MAGIC.to_be_bytes() {
        return Err(perr(
            origin,
            0,
            format!("magic number 2049 marks an IDX label file; expected {EXPECTED}"),
        ));
    }
    let (dims, payload) = idx_split(bytes, origin, EXPECTED)?;
    if dims.len() < 2 {
        return Err(perr(
            origin,
            0,
            format!("{}-D IDX data, expected {EXPECTED}", dims.len()),
        ));
    }
    let n = dims[0];
    let d = payload.len() / n;
    DenseData::new(n, d, payload.iter().map(|&b| f64::from(b)).collect())
}

fn idx_labels_from_bytes(bytes: &[u8], origin: &Path) -> Result<Vec<i64>> {
    let bytes = &*gunzip(bytes, origin)?;
    const EXPECTED: &str = "2049 (0x00000801, unsigned-byte labels)";
    let (dims, payload) = idx_split(bytes, origin, EXPECTED)?;
    if dims.len() != 1 {
        return Err(perr(
            origin,
            0,
            format!("{}-D IDX data, expected {EXPECTED}", dims.len()),
        ));
    }
    Ok(payload.iter().map(|&b| i64::from(b)).collect())
}

/// Parses an IDX image file (magic 2051; more generally unsigned bytes with ≥ 2 dimensions)
/// into an `n × (rows·cols)` matrix of grey levels `0.0..=255.0`, one image per row.
///
/// Errors: a wrong magic number or element type, a truncated header or payload, trailing
/// bytes, dimensions whose product overflows, no data. Cost: `O(bytes)`.
pub fn parse_idx_images(bytes: &[u8]) -> Result<DenseData> {
    idx_images_from_bytes(bytes, input_path())
}

/// Reads an IDX image file from any reader (see [`parse_idx_images`]).
pub fn read_idx_images<R: Read>(reader: R) -> Result<DenseData> {
    parse_idx_images(&read_all(reader)?)
}

/// Loads an IDX image file (see [`parse_idx_images`]); errors name the file.
pub fn load_idx_images(path: impl AsRef<Path>) -> Result<DenseData> {
    let path = path.as_ref();
    idx_images_from_bytes(&read_file(path)?, path)
}

/// Parses an IDX label file (magic 2049: unsigned bytes, one dimension) into labels, with the
/// same error classes as [`parse_idx_images`]. Cost: `O(bytes)`.
pub fn parse_idx_labels(bytes: &[u8]) -> Result<Vec<i64>> {
    idx_labels_from_bytes(bytes, input_path())
}

/// Reads an IDX label file from any reader (see [`parse_idx_labels`]).
pub fn read_idx_labels<R: Read>(reader: R) -> Result<Vec<i64>> {
    parse_idx_labels(&read_all(reader)?)
}

/// Loads an IDX label file (see [`parse_idx_labels`]); errors name the file.
pub fn load_idx_labels(path: impl AsRef<Path>) -> Result<Vec<i64>> {
    let path = path.as_ref();
    idx_labels_from_bytes(&read_file(path)?, path)
}

// ---------------------------------------------------------------------------------------------
// Format detection and dispatch.

/// The on-disk formats a data set can be read from (serialised by [`Format::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Dense text matrix, one point per line (whitespace or commas).
    Dense,
    /// UCI bag-of-words `docword` (1-based `docID wordID count` after a `D W NNZ` header).
    Docword,
    /// LDA-C (`M id:count ...`, 0-based ids), vocabulary size = largest id + 1.
    Ldac,
    /// IDX unsigned-byte images (MNIST style).
    Idx,
    /// NumPy `.npy`, a 2-D array of little-endian f8, f4, i8 or i4 (see [`super::npy`]).
    Npy,
}

impl Format {
    /// The name accepted by [`Format::from_str`] and shown by `Display`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Dense => "dense",
            Format::Docword => "docword",
            Format::Ldac => "ldac",
            Format::Idx => "idx",
            Format::Npy => "npy",
        }
    }
}

impl Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "dense" | "txt" | "csv" => Ok(Format::Dense),
            "docword" | "uci" => Ok(Format::Docword),
            "ldac" | "lda-c" => Ok(Format::Ldac),
            "idx" => Ok(Format::Idx),
            "npy" => Ok(Format::Npy),
            _ => Err(Error::param(
                "format",
                s,
                "one of dense, docword, ldac, idx, npy",
            )),
        }
    }
}

/// Guesses the format of a file from its name and its first bytes (`head`; the whole file or
/// its first few kilobytes).
///
/// `head` is the content after decompression, and a `.gz` ending of the name is ignored.
/// In order: two leading zero bytes mean IDX (text formats never contain NUL), the magic
/// `\x93NUMPY` or an extension `.npy` means NumPy; an extension
/// `.ldac`/`.lda-c` means LDA-C, a name starting with `docword` means UCI docword, an extension
/// `.idx` or `ubyte` in the name means IDX; otherwise the content decides: a `:` on the first
/// non-blank line means LDA-C, three lines holding one integer each followed by a line of three
/// integers mean docword, anything else is a dense matrix. Cost: `O(head)`.
pub fn detect_format(path: &Path, head: &[u8]) -> Format {
    if head.starts_with(&[0, 0]) {
        return Format::Idx;
    }
    if head.starts_with(super::npy::NPY_MAGIC) {
        return Format::Npy;
    }
    // `x.csv.gz` is named like `x.csv` (the content is decompressed before it is looked at).
    let unzipped;
    let path = if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
    {
        unzipped = path.with_extension("");
        &unzipped
    } else {
        path
    };
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
    {
        return Format::Npy;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if ext == "ldac" || ext == "lda-c" {
        return Format::Ldac;
    }
    if name.starts_with("docword") {
        return Format::Docword;
    }
    if ext == "idx" || name.contains("ubyte") {
        return Format::Idx;
    }
    let mut lines = numbered_lines(head)
        .map(|(_, l)| l)
        .filter(|l| !is_blank(l) && !is_comment(l));
    let Some(first) = lines.next() else {
        return Format::Dense;
    };
    if first.contains(&b':') {
        return Format::Ldac;
    }
    let integers = |line: &[u8]| {
        let mut k = 0;
        for t in tokens(line) {
            if !t.iter().all(u8::is_ascii_digit) {
                return None;
            }
            k += 1;
        }
        Some(k)
    };
    let shape: Vec<Option<usize>> = std::iter::once(first)
        .chain(lines.take(3))
        .map(integers)
        .collect();
    if shape == [Some(1), Some(1), Some(1), Some(3)] {
        Format::Docword
    } else {
        Format::Dense
    }
}

/// How a data set is read: its format (detected when `None`) and, for dense text and NumPy
/// arrays, the header and the columns to leave out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// The format, or `None` to detect it ([`detect_format`]).
    pub format: Option<Format>,
    /// Header and skipped columns (dense text; skipped columns by number also for `.npy`).
    pub dense: DenseOptions,
}

/// A data set read with [`LoadOptions`], with the names of its columns when a header gave them.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The data.
    pub dataset: Dataset,
    /// The header's names of the kept columns (dense text with a header only).
    pub columns: Option<Vec<String>>,
}

fn dataset_from_bytes(bytes: &[u8], origin: &Path, opts: &LoadOptions) -> Result<Loaded> {
    let bytes = &*gunzip(bytes, origin)?;
    let format = opts.format.unwrap_or_else(|| detect_format(origin, bytes));
    let dense_only = |what: &str| {
        Error::Usage(format!(
            "{} is {format} data, which has no {what}: --header and --skip-columns apply to \
             dense text (and --skip-columns by number to .npy arrays)",
            origin.display()
        ))
    };
    let plain = |dataset| Loaded {
        dataset,
        columns: None,
    };
    Ok(match format {
        Format::Dense => {
            let typed = |header| {
                super::table::table_from_text(
                    bytes,
                    origin,
                    header,
                    &opts.dense.skip_columns,
                    &opts.dense.types,
                )
                .map(|(t, names)| Loaded {
                    dataset: Dataset::Table(t),
                    columns: Some(names),
                })
            };
            if !opts.dense.types.is_empty() {
                return typed(opts.dense.header);
            }
            // A matrix of numbers reads as before; text that is not one (words, missing
            // values) is read as a typed table, and if it is not one either, the matrix
            // reader's error stands.
            match table_from_bytes(bytes, origin, &opts.dense) {
                Ok(t) => Loaded {
                    dataset: Dataset::Dense(t.data),
                    columns: t.columns,
                },
                Err(e) => match typed(opts.dense.header) {
                    Ok(t) => t,
                    // A column of numbers and words: the typed reader names both and what
                    // to do.
                    Err(mixed) if mixed.to_string().contains("--types") => return Err(mixed),
                    Err(_) => return Err(e),
                },
            }
        }
        Format::Npy => {
            if opts.dense.header {
                return Err(dense_only("header"));
            }
            if !opts.dense.types.is_empty() {
                return Err(Error::Usage(format!(
                    "{} is a .npy array, read as real columns (NaN entries missing): --types \
                     applies to text tables; write the table as CSV to give its columns types",
                    origin.display()
                )));
            }
            let keep = |d| {
                let skipped = skipped_columns(&opts.dense.skip_columns, d, None, origin, 0)?;
                Ok(skipped.iter().map(|&s| !s).collect())
            };
            plain(super::npy::npy_dataset_from_bytes(bytes, origin, keep)?)
        }
        _ if opts.dense != DenseOptions::default() => return Err(dense_only("columns")),
        Format::Docword => plain(Dataset::Counts(docword_from_bytes(bytes, origin)?)),
        Format::Ldac => plain(Dataset::Counts(ldac_from_bytes(bytes, origin, None)?)),
        Format::Idx => plain(Dataset::Dense(idx_images_from_bytes(bytes, origin)?)),
    })
}

/// Parses a data set from bytes in the given format, or in the format [`detect_format`]
/// guesses from the content when `format` is `None`.
pub fn parse_dataset(bytes: &[u8], format: Option<Format>) -> Result<Dataset> {
    let opts = LoadOptions {
        format,
        ..LoadOptions::default()
    };
    Ok(dataset_from_bytes(bytes, input_path(), &opts)?.dataset)
}

/// Parses a data set from bytes read elsewhere (standard input, a network), naming it `name`
/// in errors and format detection, read as `opts` says. Gzip-compressed bytes are
/// decompressed first.
pub fn parse_dataset_named(bytes: &[u8], name: &Path, opts: &LoadOptions) -> Result<Loaded> {
    dataset_from_bytes(bytes, name, opts)
}

/// Loads a data set from a file as `opts` says (see [`load_dataset`]), with the header's
/// column names. Cost: one read of the file and one parse.
pub fn load_dataset_with(path: impl AsRef<Path>, opts: &LoadOptions) -> Result<Loaded> {
    let path = path.as_ref();
    dataset_from_bytes(&read_file(path)?, path, opts)
}

/// Loads a data set from a file in the given format, or in the format [`detect_format`]
/// guesses from the file's name and content. Dense text and IDX images give
/// [`Dataset::Dense`], docword and LDA-C give [`Dataset::Counts`] (for LDA-C the vocabulary
/// size is the largest id + 1; use [`load_ldac`] to fix it). Cost: one read of the file and
/// one parse.
pub fn load_dataset(path: impl AsRef<Path>, format: Option<Format>) -> Result<Dataset> {
    let opts = LoadOptions {
        format,
        ..LoadOptions::default()
    };
    Ok(load_dataset_with(path, &opts)?.dataset)
}

// ---------------------------------------------------------------------------------------------
// Writers.

/// Writes through a temporary sibling file, then renames it over `path`, so that a reader
/// never sees a partial file and a failed write leaves any old file intact.
pub(crate) fn write_atomically(
    path: &Path,
    body: impl FnOnce(&mut BufWriter<fs::File>) -> io::Result<()>,
) -> Result<()> {
    let io_err = |source: io::Error| Error::Write {
        path: path.to_path_buf(),
        source,
    };
    let name = path.file_name().ok_or_else(|| {
        io_err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the output path names no file",
        ))
    })?;
    // Unique per process and per call, so concurrent writers never share a temporary.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}-{serial}", std::process::id()));
    let tmp: PathBuf = path.with_file_name(tmp_name);
    let result = (|| {
        let mut out = BufWriter::new(fs::File::create(&tmp)?);
        body(&mut out)?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        // The temporary may not exist (creation failed); the original error is what matters.
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(io_err)
}

/// Formats a finite value so that it parses back to the same `f64`: plain decimals in the
/// usual range, scientific notation for very large or small magnitudes (both are Rust's
/// shortest round-trip representations).
fn write_value<W: Write>(out: &mut W, v: f64) -> io::Result<()> {
    let a = v.abs();
    if a == 0.0 || (1e-5..1e16).contains(&a) {
        write!(out, "{v}")
    } else {
        write!(out, "{v:e}")
    }
}

/// Writes a dense matrix in the text format of [`parse_dense`] (one point per line, values
/// separated by a space, each printed so that it reads back bit for bit).
pub fn write_dense_to<W: Write>(out: &mut W, data: &DenseData) -> io::Result<()> {
    for i in 0..data.n() {
        for (j, &v) in data.row(i).iter().enumerate() {
            if j > 0 {
                out.write_all(b" ")?;
            }
            write_value(out, v)?;
        }
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes a dense matrix to `path` (see [`write_dense_to`]) via a temporary file and a rename.
pub fn write_dense(path: impl AsRef<Path>, data: &DenseData) -> Result<()> {
    write_atomically(path.as_ref(), |out| write_dense_to(out, data))
}

/// Labels formatted together by one task of [`write_labels_to`].
const LABEL_CHUNK: usize = 1 << 16;

/// Chunks of [`LABEL_CHUNK`] labels formatted at once by [`write_labels_to`] before they are
/// written: 2-3 MB of text held at a time whatever the number of labels.
const LABEL_CHUNKS_AT_ONCE: usize = 32;

/// Writes labels one per line in the text format of [`parse_labels`]. The text is formatted
/// in parallel chunks and written in order, the same bytes as a loop over the labels: a run's
/// summary on millions of points writes a dozen such files, which one thread formatted at a
/// few hundredths of a microsecond a label while the other cores waited. Cost: O(n) work,
/// O(n / threads) time and at most [`LABEL_CHUNKS_AT_ONCE`] chunks of text in memory.
pub fn write_labels_to<W: Write, T: Display + Sync>(out: &mut W, labels: &[T]) -> io::Result<()> {
    for group in labels.chunks(LABEL_CHUNK * LABEL_CHUNKS_AT_ONCE) {
        let texts = group
            .par_chunks(LABEL_CHUNK)
            .map(|chunk| {
                let mut text = Vec::with_capacity(chunk.len() * 3);
                for label in chunk {
                    writeln!(text, "{label}")?;
                }
                Ok(text)
            })
            .collect::<io::Result<Vec<Vec<u8>>>>()?;
        for text in texts {
            out.write_all(&text)?;
        }
    }
    Ok(())
}

/// Writes labels to `path` (see [`write_labels_to`]) via a temporary file and a rename.
pub fn write_labels<T: Display + Sync>(path: impl AsRef<Path>, labels: &[T]) -> Result<()> {
    write_atomically(path.as_ref(), |out| write_labels_to(out, labels))
}

/// Writes counts in the UCI docword format of [`parse_docword`]: `D`, `W`, `NNZ`, then one
/// `docID wordID count` line per non-zero, 1-based, sorted by document then word.
pub fn write_docword_to<W: Write>(out: &mut W, counts: &SparseCounts) -> io::Result<()> {
    writeln!(out, "{}\n{}\n{}", counts.n(), counts.vocab(), counts.nnz())?;
    for doc in 0..counts.n() {
        let (ids, cs) = counts.row(doc);
        for (&w, &c) in ids.iter().zip(cs) {
            writeln!(out, "{} {} {c}", doc + 1, w as usize + 1)?;
        }
    }
    Ok(())
}

/// Writes counts to `path` (see [`write_docword_to`]) via a temporary file and a rename.
pub fn write_docword(path: impl AsRef<Path>, counts: &SparseCounts) -> Result<()> {
    write_atomically(path.as_ref(), |out| write_docword_to(out, counts))
}

/// Creates a directory and its parents (an existing directory is fine).
pub fn create_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path)
        .map_err(|e| Error::Usage(format!("cannot create directory {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_error(e: Error) -> (PathBuf, usize, String) {
        match e {
            Error::Parse {
                path,
                line,
                message,
            } => (path, line, message),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn lines_are_numbered_from_one_and_tolerate_crlf_and_bom() {
        let lines: Vec<_> = numbered_lines(b"\xEF\xBB\xBFa\r\nb\n").collect();
        assert_eq!(lines, vec![(1, &b"a"[..]), (2, &b"b"[..]), (3, &b""[..])]);
        assert_eq!(end_line(b"a\nb\n"), 3);
    }

    #[test]
    fn labels_written_in_parallel_chunks_are_the_text_of_a_loop() {
        // Three groups of chunks, the last part full, with labels of one to seven digits.
        let n = 2 * LABEL_CHUNK * LABEL_CHUNKS_AT_ONCE + LABEL_CHUNK / 3;
        let labels: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761) % 9_999_999)
            .collect();
        let mut expected = String::new();
        for l in &labels {
            expected.push_str(&format!("{l}\n"));
        }
        let mut out = Vec::new();
        write_labels_to(&mut out, &labels).unwrap();
        assert_eq!(out, expected.as_bytes());
        let mut none = Vec::new();
        write_labels_to::<_, u32>(&mut none, &[]).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn unsigned_parser_names_each_failure() {
        assert_eq!(parse_unsigned(b"42", "id"), Ok(42));
        assert!(parse_unsigned(b"-3", "id")
            .unwrap_err()
            .contains("negative"));
        assert!(parse_unsigned(b"2.5", "id")
            .unwrap_err()
            .contains("not an integer"));
        assert!(parse_unsigned(b"abc", "id")
            .unwrap_err()
            .contains("not a number"));
        assert!(parse_unsigned(b"99999999999999999999999", "id")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_count(b"4294967296")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn shown_tokens_are_cut() {
        assert_eq!(show(b"ab"), "\"ab\"");
        assert!(show(&[b'x'; 100]).ends_with("...\""));
    }

    #[test]
    fn values_round_trip_through_text() {
        for v in [
            0.0,
            -0.0,
            1.5,
            -1e-300,
            1e300,
            0.1,
            1e-5,
            9.99e15,
            1e16,
            f64::MIN_POSITIVE,
        ] {
            let mut s = Vec::new();
            write_value(&mut s, v).unwrap();
            assert_eq!(parse_f64(&s), Some(v), "{}", String::from_utf8_lossy(&s));
            assert!(s.len() < 30);
        }
    }

    #[test]
    fn dense_comment_and_blank_lines_do_not_count() {
        let x = parse_dense(b"# header\n\n1 2\n  # indented comment\n3 4\n").unwrap();
        assert_eq!((x.n(), x.d()), (2, 2));
        let (_, line, msg) = parse_error(parse_dense(b"# a\n1 2\n3\n").unwrap_err());
        assert_eq!(line, 3);
        assert_eq!(msg, "1 value, expected 2 like line 2");
    }
}
