//! Data sets: dense real matrices (one point per row) and sparse count matrices (bags of
//! words), their loaders, seeded synthetic generators and principal component analysis.

pub mod fingerprint;
pub mod generate;
pub mod load;
pub mod npy;
pub mod pca;
pub mod synthetic;
pub mod table;

pub use fingerprint::Fingerprint;
pub use table::{ColumnType, TableData};

use crate::error::{Error, Result};

/// The largest magnitude a value of a dense data set may have. The Normal-Wishart statistics
/// square values and sum the squares over points (`Σ x xᵀ`), and a square beyond `1e308`
/// overflows to infinity and turns the marginals into `NaN`; `1e150` leaves room for sums over
/// up to `1e8` points. Data that large should be rescaled, which changes nothing but units.
pub const MAX_MAGNITUDE: f64 = 1e150;

/// Why a value beyond [`MAX_MAGNITUDE`] is refused and what to do, for error messages.
pub fn magnitude_hint() -> String {
    format!(
        "beyond the magnitude {MAX_MAGNITUDE:e} that nrmm accepts (squares and sums of squares \
         of larger values overflow): rescale the data (divide the column by a power of ten)"
    )
}

/// A dense `n × d` matrix of finite `f64`, row-major: row `i` is point `i`. The values are
/// shared between clones (a clone of 10⁵ × 128 points costs no 100 MB), and never change.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DenseData {
    n: usize,
    d: usize,
    values: std::sync::Arc<Vec<f64>>,
}

impl DenseData {
    /// Builds a matrix from row-major values; errors on empty input, a length that is not
    /// `n · d`, or a value that is not finite or exceeds [`MAX_MAGNITUDE`].
    pub fn new(n: usize, d: usize, values: Vec<f64>) -> Result<Self> {
        if n == 0 || d == 0 {
            return Err(Error::Empty(format!(
                "a dense data set needs n > 0 and d > 0, got {n} x {d}"
            )));
        }
        if values.len() != n * d {
            return Err(Error::DimensionMismatch(format!(
                "{} values for a {n} x {d} matrix (expected {})",
                values.len(),
                n * d
            )));
        }
        if let Some(pos) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::param(
                &format!("row {} column {}", pos / d + 1, pos % d + 1),
                values[pos],
                "a finite number",
            ));
        }
        if let Some(pos) = values.iter().position(|v| v.abs() > MAX_MAGNITUDE) {
            return Err(Error::param(
                &format!("row {} column {}", pos / d + 1, pos % d + 1),
                values[pos],
                &format!("a value {}", magnitude_hint()),
            ));
        }
        Ok(DenseData {
            n,
            d,
            values: std::sync::Arc::new(values),
        })
    }

    /// Builds a matrix from rows of equal length.
    pub fn from_rows(rows: &[Vec<f64>]) -> Result<Self> {
        let d = rows.first().map_or(0, Vec::len);
        if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != d) {
            return Err(Error::DimensionMismatch(format!(
                "row {} has {} values, row 1 has {d}",
                i + 1,
                r.len()
            )));
        }
        Self::new(rows.len(), d, rows.concat())
    }

    /// Number of points.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Dimension of each point.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Point `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.d..(i + 1) * self.d]
    }

    /// All values, row-major, as the clones of this matrix share them (for the kernels'
    /// registry of centred copies, which knows values by their allocation).
    pub(crate) fn shared_values(&self) -> &std::sync::Arc<Vec<f64>> {
        &self.values
    }

    /// All values, row-major.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The columns (0-based, increasing) whose values are not all equal. Cost: O(N d).
    pub fn varying_columns(&self) -> Vec<usize> {
        let first = self.row(0);
        let mut varies = vec![false; self.d];
        for i in 1..self.n {
            for ((v, a), b) in varies.iter_mut().zip(self.row(i)).zip(first) {
                *v |= a != b;
            }
        }
        (0..self.d).filter(|&j| varies[j]).collect()
    }

    /// The matrix of the columns `columns` (0-based, in that order) of every point. Errors
    /// if a column is out of range or none is given. Cost: O(N · |columns|).
    pub fn select_columns(&self, columns: &[usize]) -> Result<DenseData> {
        if let Some(&j) = columns.iter().find(|&&j| j >= self.d) {
            return Err(Error::DimensionMismatch(format!(
                "column {} of a matrix of {} columns",
                j + 1,
                self.d
            )));
        }
        let mut values = Vec::with_capacity(self.n * columns.len());
        for i in 0..self.n {
            let row = self.row(i);
            values.extend(columns.iter().map(|&j| row[j]));
        }
        DenseData::new(self.n, columns.len(), values)
    }
}

/// A sparse `n × vocab` matrix of non-negative integer counts (documents × words), in
/// compressed-row form with word ids strictly increasing within a row and counts > 0.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SparseCounts {
    vocab: usize,
    offsets: Vec<usize>,
    ids: Vec<u32>,
    counts: Vec<u32>,
}

impl SparseCounts {
    /// Builds a matrix from rows of `(word id, count)` pairs in any order; duplicate ids in a
    /// row are summed and zero counts dropped. Errors if a word id is `>= vocab`, or there
    /// are no rows.
    pub fn from_rows(vocab: usize, rows: &[Vec<(u32, u32)>]) -> Result<Self> {
        if rows.is_empty() {
            return Err(Error::Empty(
                "a count data set needs at least one document".into(),
            ));
        }
        let mut offsets = Vec::with_capacity(rows.len() + 1);
        let mut ids = Vec::new();
        let mut counts = Vec::new();
        offsets.push(0);
        for (r, row) in rows.iter().enumerate() {
            let mut sorted = row.clone();
            sorted.sort_unstable_by_key(|&(w, _)| w);
            for (w, c) in sorted {
                if w as usize >= vocab {
                    return Err(Error::param(
                        &format!("word id in document {}", r + 1),
                        w,
                        &format!("an id below the vocabulary size {vocab}"),
                    ));
                }
                if c == 0 {
                    continue;
                }
                if ids.len() > offsets[r] && *ids.last().unwrap() == w {
                    *counts.last_mut().unwrap() += c;
                } else {
                    ids.push(w);
                    counts.push(c);
                }
            }
            offsets.push(ids.len());
        }
        Ok(SparseCounts {
            vocab,
            offsets,
            ids,
            counts,
        })
    }

    /// Builds an `n × vocab` matrix from `(document, word id, count)` triplets (0-based) in any
    /// order; duplicate `(document, word)` pairs are summed and zero counts dropped, so rows
    /// may be empty. Errors if a document is `>= n`, a word id is `>= vocab`, a summed count
    /// overflows `u32`, or `n == 0`.
    ///
    /// Cost: one `O(nnz log nnz)` sort of the triplets in place and one pass; no per-row
    /// allocation, which is why the loaders use it rather than [`SparseCounts::from_rows`].
    pub fn from_triplets(
        n: usize,
        vocab: usize,
        mut triplets: Vec<(u32, u32, u32)>,
    ) -> Result<Self> {
        if n == 0 {
            return Err(Error::Empty(
                "a count data set needs at least one document".into(),
            ));
        }
        if let Some(&(doc, _, _)) = triplets.iter().find(|t| t.0 as usize >= n) {
            return Err(Error::param(
                "document index",
                doc,
                &format!("an index below the number of documents {n}"),
            ));
        }
        if let Some(&(doc, w, _)) = triplets.iter().find(|t| t.1 as usize >= vocab) {
            return Err(Error::param(
                &format!("word id in document {}", doc as usize + 1),
                w,
                &format!("an id below the vocabulary size {vocab}"),
            ));
        }
        triplets.sort_unstable_by_key(|&(d, w, _)| (d, w));
        let mut offsets = Vec::with_capacity(n + 1);
        let mut ids = Vec::with_capacity(triplets.len());
        let mut counts: Vec<u32> = Vec::with_capacity(triplets.len());
        offsets.push(0);
        let mut last: Option<(u32, u32)> = None;
        for (doc, w, c) in triplets {
            if c == 0 {
                continue;
            }
            while offsets.len() <= doc as usize {
                offsets.push(ids.len());
            }
            match counts.last_mut() {
                Some(total) if last == Some((doc, w)) => {
                    *total = total.checked_add(c).ok_or_else(|| {
                        Error::param(
                            &format!("count of word {w} in document {}", doc as usize + 1),
                            format!("{} + {c}", *total),
                            "a total below 2^32",
                        )
                    })?;
                }
                _ => {
                    ids.push(w);
                    counts.push(c);
                    last = Some((doc, w));
                }
            }
        }
        offsets.resize(n + 1, ids.len());
        Ok(SparseCounts {
            vocab,
            offsets,
            ids,
            counts,
        })
    }

    /// Number of documents.
    pub fn n(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Vocabulary size.
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// Document `i` as parallel slices of (strictly increasing) word ids and counts.
    #[inline]
    pub fn row(&self, i: usize) -> (&[u32], &[u32]) {
        let (a, b) = (self.offsets[i], self.offsets[i + 1]);
        (&self.ids[a..b], &self.counts[a..b])
    }

    /// Total number of non-zero entries.
    pub fn nnz(&self) -> usize {
        self.ids.len()
    }
}

/// A data set of either kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Dataset {
    /// Real vectors (Normal-Wishart kernel).
    Dense(DenseData),
    /// Count vectors (Multinomial-Dirichlet kernel).
    Counts(SparseCounts),
    /// A table of typed columns with missing entries (the product kernel).
    Table(TableData),
}

impl Dataset {
    /// What the points are, for messages: "real vectors" or "counts".
    pub fn kind_name(&self) -> &'static str {
        match self {
            Dataset::Dense(_) => "real vectors",
            Dataset::Counts(_) => "counts",
            Dataset::Table(_) => "a table of typed columns",
        }
    }

    /// Number of points or documents.
    pub fn n(&self) -> usize {
        match self {
            Dataset::Dense(x) => x.n(),
            Dataset::Counts(x) => x.n(),
            Dataset::Table(x) => x.n(),
        }
    }
}

/// Relabels labels of any ordered type (file labels may be 1-based or negative) as `0..K` in
/// order of first appearance: the restricted growth string of the partition they describe.
/// Cost: `O(n log K)`.
pub fn canonical_labels<L: Copy + Ord>(labels: &[L]) -> Vec<usize> {
    let mut map = std::collections::BTreeMap::new();
    labels
        .iter()
        .map(|l| {
            let next = map.len();
            *map.entry(*l).or_insert(next)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triplets_are_sorted_summed_and_checked() {
        let x = SparseCounts::from_triplets(
            4,
            6,
            vec![
                (2, 5, 1),
                (0, 3, 2),
                (2, 1, 4),
                (0, 3, 5),
                (0, 0, 0),
                (3, 2, 1),
            ],
        )
        .unwrap();
        assert_eq!((x.n(), x.vocab(), x.nnz()), (4, 6, 4));
        assert_eq!(x.row(0), (&[3u32][..], &[7u32][..]));
        assert_eq!(x.row(1), (&[][..], &[][..]));
        assert_eq!(x.row(2), (&[1u32, 5][..], &[4u32, 1][..]));
        assert_eq!(x.row(3), (&[2u32][..], &[1u32][..]));
        let same = SparseCounts::from_rows(
            6,
            &[
                vec![(3, 2), (3, 5)],
                vec![],
                vec![(5, 1), (1, 4)],
                vec![(2, 1)],
            ],
        )
        .unwrap();
        assert_eq!(x, same);
        let trailing_empty = SparseCounts::from_triplets(3, 2, vec![(0, 1, 1)]).unwrap();
        assert_eq!((trailing_empty.n(), trailing_empty.row(2).0.len()), (3, 0));
    }

    #[test]
    fn bad_triplets_are_errors() {
        assert!(matches!(
            SparseCounts::from_triplets(0, 2, vec![]),
            Err(Error::Empty(_))
        ));
        assert!(SparseCounts::from_triplets(2, 2, vec![(2, 0, 1)]).is_err());
        assert!(SparseCounts::from_triplets(2, 2, vec![(0, 2, 1)]).is_err());
        assert!(matches!(
            SparseCounts::from_triplets(1, 2, vec![(0, 1, u32::MAX), (0, 1, 1)]),
            Err(Error::InvalidParameter { .. })
        ));
    }
}
