//! Which points each rank holds, and reading a rank's share of a data set.
//!
//! Points are numbered globally `0..n`; rank `r` holds the contiguous range
//! `starts[r]..starts[r+1]`. Every range but the last starts and ends on a multiple of the
//! reduction block (see [`super::DataParallel`]), so that each block of points lies on one
//! rank and the chain does not depend on the number of ranks.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::comm::Comm;
use super::wire::all_gather_u64;
use crate::data::load::parse_dense;
use crate::data::DenseData;
use crate::error::{Error, Result};
use crate::sampler::dpmm::engine::CHUNK;

/// The global numbering of points and each rank's range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Points per reduction block.
    pub block: usize,
    /// `starts[r]` is the first global index of rank `r`; `starts[size]` is `n`.
    pub starts: Vec<usize>,
}

impl Layout {
    /// `n` points over `ranks` ranks, whole blocks of `block` points each, as even as whole
    /// blocks allow (a rank may get none when there are fewer blocks than ranks). Errors if
    /// `block` or `ranks` is 0.
    pub fn even(n: usize, block: usize, ranks: usize) -> Result<Self> {
        if block == 0 || ranks == 0 {
            return Err(Error::Usage(format!(
                "a layout needs a block and ranks > 0, got block {block}, {ranks} ranks"
            )));
        }
        let blocks = n.div_ceil(block);
        let starts = (0..=ranks)
            .map(|r| (blocks * r / ranks * block).min(n))
            .collect();
        Ok(Layout { block, starts })
    }

    /// The layout of shards of the given sizes, in rank order. Errors (naming the shard) if a
    /// shard other than the last does not hold a whole number of blocks, which would make
    /// the chain depend on how the data is split.
    pub fn of_shards(sizes: &[usize], block: usize, names: &[String]) -> Result<Self> {
        let mut starts = vec![0];
        for (r, &s) in sizes.iter().enumerate() {
            if r + 1 < sizes.len() && !s.is_multiple_of(block) {
                return Err(Error::Usage(format!(
                    "{}: {s} points, but every shard except the last must hold a multiple of \
                     {block} points (the reduction block) so that the chain does not depend \
                     on how the data is split; move {} points to the next shard, or give one \
                     file and let each rank read its rows",
                    names.get(r).map_or("a shard", String::as_str),
                    s % block
                )));
            }
            starts.push(starts[r] + s);
        }
        Ok(Layout { block, starts })
    }

    /// Total number of points.
    pub fn n(&self) -> usize {
        *self.starts.last().expect("at least one rank")
    }

    /// The global range of rank `r`.
    pub fn range(&self, r: usize) -> std::ops::Range<usize> {
        self.starts[r]..self.starts[r + 1]
    }
}

/// Where a rank's points come from: one file that every rank reads its rows of, or one file
/// per rank (`{rank}` in the pattern).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// One dense text file (as [`crate::data::load::parse_dense`] reads it); rank `r` keeps
    /// the rows of its range of [`Layout::even`].
    Rows(PathBuf),
    /// A pattern with `{rank}`, one dense text file per rank, in rank order.
    Shards(String),
}

impl Source {
    /// `Shards` when `data` contains `{rank}`, `Rows` otherwise.
    pub fn from_arg(data: &str) -> Self {
        if data.contains("{rank}") {
            Source::Shards(data.to_string())
        } else {
            Source::Rows(PathBuf::from(data))
        }
    }
}

/// Reads this rank's share: its points and the layout of all ranks. Every rank must call it
/// (the shard sizes are exchanged). Rows of one file are counted by every rank (a scan of
/// the file without parsing) and parsed only by the rank that keeps them. Errors name the
/// file and line.
pub fn read_share(comm: &dyn Comm, source: &Source, block: usize) -> Result<(DenseData, Layout)> {
    if block == 0 || !block.is_multiple_of(CHUNK) {
        return Err(Error::param(
            "block",
            block,
            &format!("a positive multiple of {CHUNK} (a label pass's block)"),
        ));
    }
    match source {
        Source::Rows(path) => {
            // Two scans: the count of data lines, then this rank's lines only.
            let n = data_lines(path, None)?.0;
            let layout = Layout::even(n, block, comm.size())?;
            if let Some(r) = (0..comm.size()).find(|&r| layout.range(r).is_empty()) {
                return Err(Error::Usage(format!(
                    "{}: rank {r} would hold no point: {n} points in blocks of {block} give \
                     fewer blocks than the {} ranks; use fewer ranks or a smaller `block`",
                    path.display(),
                    comm.size()
                )));
            }
            let lines = data_lines(path, Some(layout.range(comm.rank())))?.1;
            let data = parse_lines(path, &lines)?;
            Ok((data, layout))
        }
        Source::Shards(pattern) => {
            let path = PathBuf::from(pattern.replace("{rank}", &comm.rank().to_string()));
            let lines = data_lines(&path, Some(0..usize::MAX))?.1;
            if lines.is_empty() {
                return Err(Error::Usage(format!(
                    "{}: no data lines; every rank needs a shard with points",
                    path.display()
                )));
            }
            let data = parse_lines(&path, &lines)?;
            let sizes: Vec<usize> = all_gather_u64(comm, &[data.n() as u64])?
                .into_iter()
                .map(|s| s as usize)
                .collect();
            let names: Vec<String> = (0..comm.size())
                .map(|r| pattern.replace("{rank}", &r.to_string()))
                .collect();
            let layout = Layout::of_shards(&sizes, block, &names)?;
            Ok((data, layout))
        }
    }
}

/// Kept data lines: their text, each ending in a newline, and each one's 1-based line number
/// in the file. One string rather than one per line, so that reading a share holds its text
/// once.
#[derive(Default)]
struct Lines {
    text: String,
    numbers: Vec<usize>,
}

impl Lines {
    fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }
}

/// The number of data lines of a text file (blank lines, `#` comments and a first line without
/// any number, a header, left out) and those whose 0-based data-line index is in `keep`.
fn data_lines(path: &Path, keep: Option<std::ops::Range<usize>>) -> Result<(usize, Lines)> {
    let file = std::fs::File::open(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = Lines::default();
    let mut count = 0;
    let mut first = true;
    for (no, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if first {
            first = false;
            let numeric = t
                .split(|c: char| c == ',' || c.is_whitespace())
                .any(|f| f.trim_matches('"').parse::<f64>().is_ok());
            if !numeric {
                continue;
            }
        }
        if keep.as_ref().is_some_and(|k| k.contains(&count)) {
            out.text.push_str(&line);
            out.text.push('\n');
            out.numbers.push(no + 1);
        }
        count += 1;
    }
    Ok((count, out))
}

/// Parses the given data lines as one dense matrix; a parse error names the file and the
/// line's number in it.
fn parse_lines(path: &Path, lines: &Lines) -> Result<DenseData> {
    if lines.is_empty() {
        return DenseData::new(0, 0, Vec::new());
    }
    parse_dense(lines.text.as_bytes()).map_err(|e| match e {
        Error::Parse { line, message, .. } => Error::Parse {
            path: path.to_path_buf(),
            line: lines
                .numbers
                .get(line.saturating_sub(1))
                .copied()
                .unwrap_or(0),
            message,
        },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_layouts_cut_on_blocks() {
        let l = Layout::even(10, 4, 2).unwrap();
        assert_eq!(l.starts, vec![0, 4, 10]);
        let l = Layout::even(10, 4, 4).unwrap();
        assert_eq!(l.starts, vec![0, 0, 4, 8, 10]);
        assert_eq!(l.n(), 10);
        assert!(Layout::of_shards(&[4, 3], 4, &[]).is_ok());
        let e = Layout::of_shards(&[5, 3], 4, &["s0".into(), "s1".into()]).unwrap_err();
        assert!(e.to_string().contains("s0: 5 points"), "{e}");
    }
}
