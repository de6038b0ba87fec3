//! Set partitions of `{0, .., n-1}` as restricted growth strings (MATH §7.1, "Enumeration").
//!
//! A partition is written canonically as its restricted growth string (RGS): `a_0 = 0` and
//! `a_i ≤ 1 + max_{j<i} a_j`, where `a_i` is the block of point `i` and blocks are numbered by
//! their first point. Every label vector maps to exactly one RGS (relabel blocks in order of
//! first appearance), so the RGS is the key under which partitions are counted and compared.
//!
//! Enumeration runs in lexicographic order of the RGS. [`RgsIndex`] turns an RGS into its
//! position in that order and back in `O(n)` with a table of completion counts, so a
//! distribution over all partitions is a plain `Vec` and needs no hash map.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// The largest number of points for which partitions are enumerated.
///
/// The number of set partitions of `n` points is the Bell number `B_n`: `B_10 = 115,975`,
/// `B_12 = 4,213,597`, `B_13 = 27,644,437`. An exact posterior stores two `f64` per partition,
/// so `n = 12` (67 MB) is the practical limit.
pub const MAX_EXACT_N: usize = 12;

/// The characters of an RGS written as a string: block `b` is the `b`-th character.
const RGS_DIGITS: &[u8; MAX_EXACT_N] = b"0123456789ab";

/// Errors with [`Error::TooLarge`] when `n` exceeds [`MAX_EXACT_N`], saying why.
pub(crate) fn check_n(n: usize) -> Result<()> {
    if n > MAX_EXACT_N {
        return Err(Error::TooLarge(format!(
            "exact enumeration supports at most {MAX_EXACT_N} points, got {n}: the number of set \
             partitions is the Bell number B_n (B_12 = 4,213,597, B_13 = 27,644,437), each needing \
             its own probability; check samplers on a subset of at most {MAX_EXACT_N} points"
        )));
    }
    Ok(())
}

/// The Bell number `B_n`, the number of set partitions of `n` points.
///
/// Computed with the Bell triangle (each row starts with the last entry of the previous row,
/// each further entry adds its left neighbour and the entry above it), in `O(n²)` additions.
/// Errors with [`Error::TooLarge`] for `n > 25`, where `B_n` exceeds `u64`.
pub fn bell_number(n: usize) -> Result<u64> {
    if n == 0 {
        return Ok(1);
    }
    // Row k starts with B_k and ends with B_{k+1}; stopping at row n-1 keeps every entry ≤ B_n.
    let mut row = vec![1u64];
    for _ in 1..n {
        let mut next = Vec::with_capacity(row.len() + 1);
        next.push(row[row.len() - 1]);
        for &above in &row {
            let left = next[next.len() - 1];
            next.push(left.checked_add(above).ok_or_else(|| {
                Error::TooLarge(format!(
                    "the Bell number B_{n} does not fit in 64 bits (the largest that does is B_25)"
                ))
            })?);
        }
        row = next;
    }
    Ok(row[row.len() - 1])
}

/// A set partition of at most [`MAX_EXACT_N`] points in canonical form: its restricted growth
/// string (`labels()[i]` is the block of point `i`, blocks numbered by first appearance).
///
/// `Copy` and allocation-free. For equal lengths, `Ord` is the lexicographic order of the
/// strings, which is the order of enumeration. `Display` writes one character per point
/// (`0`-`9`, then `a`, `b` for blocks 10 and 11), e.g. `0010` for `{0,1,3}{2}`; `FromStr`
/// reads it back.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rgs {
    len: u8,
    labels: [u8; MAX_EXACT_N],
}

impl Rgs {
    /// Checks that `labels` is a restricted growth string (`labels[0] = 0`, each label at most
    /// one more than every label before it) of at most [`MAX_EXACT_N`] points.
    pub fn new(labels: &[u8]) -> Result<Self> {
        check_n(labels.len())?;
        let mut n_blocks = 0u8;
        for (i, &a) in labels.iter().enumerate() {
            if a > n_blocks {
                return Err(Error::param(
                    &format!("restricted growth string {labels:?} at position {i}"),
                    a,
                    &format!(
                        "a block label at most {n_blocks} (one more than the largest before it)"
                    ),
                ));
            }
            n_blocks = n_blocks.max(a + 1);
        }
        let mut out = [0u8; MAX_EXACT_N];
        out[..labels.len()].copy_from_slice(labels);
        Ok(Rgs {
            len: labels.len() as u8,
            labels: out,
        })
    }

    /// The canonical form of any label vector: blocks renumbered `0, 1, ..` in order of first
    /// appearance, so that label vectors describing the same partition give equal results.
    ///
    /// Cost `O(n·K)` comparisons, no allocation. Errors for more than [`MAX_EXACT_N`] points.
    pub fn from_labels<T: PartialEq>(labels: &[T]) -> Result<Self> {
        check_n(labels.len())?;
        let mut first_point = [0usize; MAX_EXACT_N];
        let mut n_blocks = 0usize;
        let mut out = [0u8; MAX_EXACT_N];
        for (i, label) in labels.iter().enumerate() {
            let block = match (0..n_blocks).find(|&b| labels[first_point[b]] == *label) {
                Some(b) => b,
                None => {
                    first_point[n_blocks] = i;
                    n_blocks += 1;
                    n_blocks - 1
                }
            };
            out[i] = block as u8;
        }
        Ok(Rgs {
            len: labels.len() as u8,
            labels: out,
        })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True for the partition of zero points.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The restricted growth string: the block of each point.
    pub fn labels(&self) -> &[u8] {
        &self.labels[..self.len()]
    }

    /// Number of blocks `K`.
    pub fn n_blocks(&self) -> usize {
        self.labels().iter().max().map_or(0, |&m| m as usize + 1)
    }

    /// Whether points `i` and `j` share a block (panics if either is out of range).
    pub fn same_block(&self, i: usize, j: usize) -> bool {
        self.labels()[i] == self.labels()[j]
    }

    /// Block sizes in block order (by first point).
    pub fn block_sizes(&self) -> Vec<usize> {
        let mut sizes = vec![0usize; self.n_blocks()];
        for &a in self.labels() {
            sizes[a as usize] += 1;
        }
        sizes
    }

    /// The blocks as sorted point lists, in block order.
    pub fn blocks(&self) -> Vec<Vec<usize>> {
        let mut blocks = vec![Vec::new(); self.n_blocks()];
        for (i, &a) in self.labels().iter().enumerate() {
            blocks[a as usize].push(i);
        }
        blocks
    }
}

impl fmt::Display for Rgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &a in self.labels() {
            write!(f, "{}", RGS_DIGITS[a as usize] as char)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Rgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rgs(\"{self}\")")
    }
}

impl FromStr for Rgs {
    type Err = Error;

    /// Reads the form written by `Display`: one character `0`-`9`, `a`, `b` per point.
    fn from_str(s: &str) -> Result<Self> {
        let mut labels = [0u8; MAX_EXACT_N];
        let mut len = 0usize;
        for (i, c) in s.chars().enumerate() {
            check_n(i + 1)?;
            labels[i] = match c.to_digit(MAX_EXACT_N as u32) {
                Some(d) => d as u8,
                None => {
                    return Err(Error::param(
                        &format!("restricted growth string \"{s}\" at position {i}"),
                        c,
                        "a block digit 0-9, a or b",
                    ))
                }
            };
            len = i + 1;
        }
        Rgs::new(&labels[..len])
    }
}

/// A borrowed view of one partition during enumeration: its position in enumeration order,
/// its RGS, and its blocks as bitmasks (bit `i` set when point `i` is in the block) with their
/// sizes, blocks in RGS order.
#[derive(Clone, Copy, Debug)]
pub struct PartitionView<'a> {
    index: usize,
    labels: &'a [u8],
    masks: &'a [u32],
    sizes: &'a [usize],
}

impl<'a> PartitionView<'a> {
    /// Position in enumeration (lexicographic RGS) order; equals [`RgsIndex::index_of`].
    pub fn index(&self) -> usize {
        self.index
    }

    /// The restricted growth string.
    pub fn labels(&self) -> &'a [u8] {
        self.labels
    }

    /// Number of points.
    pub fn n_points(&self) -> usize {
        self.labels.len()
    }

    /// Number of blocks `K`.
    pub fn n_blocks(&self) -> usize {
        self.sizes.len()
    }

    /// Block sizes `n_c`, in block order.
    pub fn block_sizes(&self) -> &'a [usize] {
        self.sizes
    }

    /// Block bitmasks, in block order.
    pub fn block_masks(&self) -> &'a [u32] {
        self.masks
    }

    /// Whether points `i` and `j` share a block (panics if either is out of range).
    pub fn same_block(&self, i: usize, j: usize) -> bool {
        self.labels[i] == self.labels[j]
    }

    /// The partition as an owned key.
    pub fn rgs(&self) -> Rgs {
        let mut labels = [0u8; MAX_EXACT_N];
        labels[..self.labels.len()].copy_from_slice(self.labels);
        Rgs {
            len: self.labels.len() as u8,
            labels,
        }
    }
}

/// Allocation-free walk over all set partitions of `n ≤ 12` points in lexicographic RGS order.
///
/// Algorithm: the successor of an RGS increments the rightmost position `i ≥ 1` whose label
/// does not yet open a new block (`a_i ≤ max_{j<i} a_j`) and resets every later label to 0.
/// Block bitmasks and sizes are updated only for the positions that changed, so one step
/// costs `O(n - i)`: amortised a few operations per partition.
#[derive(Clone, Debug)]
pub struct PartitionCursor {
    n: usize,
    index: usize,
    labels: [u8; MAX_EXACT_N],
    prefix_max: [u8; MAX_EXACT_N],
    masks: [u32; MAX_EXACT_N],
    sizes: [usize; MAX_EXACT_N],
    n_blocks: usize,
}

impl PartitionCursor {
    /// A cursor on the first partition of `n` points (one block holding everything, or the
    /// empty partition for `n = 0`). Errors with [`Error::TooLarge`] for `n > 12`.
    pub fn new(n: usize) -> Result<Self> {
        check_n(n)?;
        let mut masks = [0u32; MAX_EXACT_N];
        let mut sizes = [0usize; MAX_EXACT_N];
        if n > 0 {
            masks[0] = (1u32 << n) - 1;
            sizes[0] = n;
        }
        Ok(PartitionCursor {
            n,
            index: 0,
            labels: [0; MAX_EXACT_N],
            prefix_max: [0; MAX_EXACT_N],
            masks,
            sizes,
            n_blocks: usize::from(n > 0),
        })
    }

    /// The current partition.
    pub fn view(&self) -> PartitionView<'_> {
        PartitionView {
            index: self.index,
            labels: &self.labels[..self.n],
            masks: &self.masks[..self.n_blocks],
            sizes: &self.sizes[..self.n_blocks],
        }
    }

    /// Moves to the next partition; returns false (and stays put) after the last one.
    pub fn advance(&mut self) -> bool {
        let Some(i) = (1..self.n)
            .rev()
            .find(|&i| self.labels[i] <= self.prefix_max[i - 1])
        else {
            return false;
        };
        for j in i..self.n {
            let b = self.labels[j] as usize;
            self.masks[b] &= !(1u32 << j);
            self.sizes[b] -= 1;
        }
        let new_label = self.labels[i] + 1;
        let max = self.prefix_max[i - 1].max(new_label);
        self.labels[i] = new_label;
        self.masks[new_label as usize] |= 1u32 << i;
        self.sizes[new_label as usize] += 1;
        for j in i + 1..self.n {
            self.labels[j] = 0;
            self.masks[0] |= 1u32 << j;
            self.sizes[0] += 1;
        }
        self.prefix_max[i..self.n].fill(max);
        self.n_blocks = max as usize + 1;
        self.index += 1;
        true
    }
}

/// Calls `visit` on every set partition of `n ≤ 12` points, in enumeration order, without
/// allocating. Errors with [`Error::TooLarge`] for `n > 12`.
pub fn for_each_partition<F: FnMut(PartitionView<'_>)>(n: usize, mut visit: F) -> Result<()> {
    let mut cursor = PartitionCursor::new(n)?;
    loop {
        visit(cursor.view());
        if !cursor.advance() {
            return Ok(());
        }
    }
}

/// Iterator over the set partitions of `n ≤ 12` points as [`Rgs`] keys, in enumeration order.
#[derive(Clone, Debug)]
pub struct SetPartitions {
    cursor: PartitionCursor,
    started: bool,
    remaining: usize,
}

impl SetPartitions {
    /// All `B_n` partitions of `n` points. Errors with [`Error::TooLarge`] for `n > 12`.
    pub fn new(n: usize) -> Result<Self> {
        Ok(SetPartitions {
            cursor: PartitionCursor::new(n)?,
            started: false,
            remaining: bell_number(n)? as usize,
        })
    }
}

impl Iterator for SetPartitions {
    type Item = Rgs;

    fn next(&mut self) -> Option<Rgs> {
        if self.remaining == 0 {
            return None;
        }
        if self.started {
            self.cursor.advance();
        }
        self.started = true;
        self.remaining -= 1;
        Some(self.cursor.view().rgs())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for SetPartitions {}

/// Position of a partition in enumeration order, and back, in `O(n)` (MATH §7.1: key
/// partitions by the canonical RGS).
///
/// Uses the completion counts `D(r, m)`: the number of ways to finish an RGS with `r`
/// positions left when `m` blocks are open, `D(0, m) = 1`,
/// `D(r, m) = m·D(r-1, m) + D(r-1, m+1)` (join one of `m` blocks, or open a new one).
/// In lexicographic order, a label `a ≤ m` at a position with `r` positions after it is
/// preceded by `a·D(r, m)` strings sharing the prefix, so the index is
/// `Σ_i a_i·D(n-1-i, m_i)`. `D(n, 0) = B_n`.
#[derive(Clone, Debug)]
pub struct RgsIndex {
    n: usize,
    completions: [[u64; MAX_EXACT_N + 2]; MAX_EXACT_N + 1],
}

impl RgsIndex {
    /// The index for partitions of `n` points. Errors with [`Error::TooLarge`] for `n > 12`.
    pub fn new(n: usize) -> Result<Self> {
        check_n(n)?;
        Ok(RgsIndex {
            n,
            completions: Self::completions_table(n),
        })
    }

    fn completions_table(n: usize) -> [[u64; MAX_EXACT_N + 2]; MAX_EXACT_N + 1] {
        let mut d = [[0u64; MAX_EXACT_N + 2]; MAX_EXACT_N + 1];
        d[0] = [1; MAX_EXACT_N + 2];
        for r in 1..=n {
            for m in 0..=n {
                d[r][m] = m as u64 * d[r - 1][m] + d[r - 1][m + 1];
            }
        }
        d
    }

    /// Number of points.
    pub fn n_points(&self) -> usize {
        self.n
    }

    /// Number of partitions, `B_n`.
    pub fn n_partitions(&self) -> usize {
        self.completions[self.n][0] as usize
    }

    /// The enumeration position of `rgs`. Errors if it has a different number of points.
    pub fn index_of(&self, rgs: &Rgs) -> Result<usize> {
        if rgs.len() != self.n {
            return Err(Error::DimensionMismatch(format!(
                "partition {rgs} has {} points, the enumeration has {}",
                rgs.len(),
                self.n
            )));
        }
        let mut index = 0u64;
        let mut open = 0usize;
        for (i, &a) in rgs.labels().iter().enumerate() {
            index += a as u64 * self.completions[self.n - 1 - i][open];
            if a as usize == open {
                open += 1;
            }
        }
        Ok(index as usize)
    }

    /// The partition at enumeration position `index`. Errors if `index ≥ B_n`.
    pub fn rgs_at(&self, index: usize) -> Result<Rgs> {
        if index >= self.n_partitions() {
            return Err(Error::param(
                "partition index",
                index,
                &format!("an index below B_{} = {}", self.n, self.n_partitions()),
            ));
        }
        let mut rest = index as u64;
        let mut labels = [0u8; MAX_EXACT_N];
        let mut open = 0usize;
        for (i, label) in labels.iter_mut().enumerate().take(self.n) {
            let block = self.completions[self.n - 1 - i][open];
            let a = (rest / block).min(open as u64);
            rest -= a * block;
            *label = a as u8;
            if a as usize == open {
                open += 1;
            }
        }
        Ok(Rgs {
            len: self.n as u8,
            labels,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BELL: [u64; 14] = [
        1, 1, 2, 5, 15, 52, 203, 877, 4140, 21147, 115975, 678570, 4213597, 27644437,
    ];

    #[test]
    fn bell_numbers_match_known_values() {
        for (n, &b) in BELL.iter().enumerate() {
            assert_eq!(bell_number(n).unwrap(), b, "B_{n}");
        }
        assert_eq!(bell_number(25).unwrap(), 4_638_590_332_229_999_353);
        assert!(matches!(bell_number(26), Err(Error::TooLarge(_))));
        for (n, &b) in BELL.iter().enumerate().take(MAX_EXACT_N + 1) {
            assert_eq!(RgsIndex::new(n).unwrap().n_partitions() as u64, b);
        }
    }

    #[test]
    fn cursor_masks_and_sizes_follow_labels() {
        let n = 7;
        let mut cursor = PartitionCursor::new(n).unwrap();
        let mut count = 0;
        loop {
            let v = cursor.view();
            assert_eq!(v.index(), count);
            let rgs = v.rgs();
            assert_eq!(v.n_blocks(), rgs.n_blocks());
            assert_eq!(v.block_sizes(), &rgs.block_sizes()[..]);
            for (b, &mask) in v.block_masks().iter().enumerate() {
                let expected: u32 = rgs.blocks()[b].iter().map(|&i| 1u32 << i).sum();
                assert_eq!(mask, expected, "{rgs} block {b}");
            }
            count += 1;
            if !cursor.advance() {
                break;
            }
        }
        assert_eq!(count, 877);
        assert!(!cursor.advance());
        assert_eq!(cursor.view().labels(), &[0, 1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn index_and_rgs_round_trip_in_enumeration_order() {
        let index = RgsIndex::new(8).unwrap();
        for (k, rgs) in SetPartitions::new(8).unwrap().enumerate() {
            assert_eq!(index.index_of(&rgs).unwrap(), k);
            assert_eq!(index.rgs_at(k).unwrap(), rgs);
        }
        assert!(index.rgs_at(4140).is_err());
        assert!(index.index_of(&Rgs::new(&[0, 1]).unwrap()).is_err());
    }

    #[test]
    fn too_many_points_is_refused_with_the_reason() {
        for err in [
            PartitionCursor::new(13).unwrap_err(),
            SetPartitions::new(13).unwrap_err(),
            RgsIndex::new(13).unwrap_err(),
            Rgs::from_labels(&[0u32; 13]).unwrap_err(),
        ] {
            let msg = err.to_string();
            assert!(matches!(err, Error::TooLarge(_)), "{msg}");
            assert!(
                msg.contains("at most 12") && msg.contains("4,213,597"),
                "{msg}"
            );
        }
    }

    #[test]
    fn invalid_strings_are_rejected() {
        assert!(Rgs::new(&[1]).is_err());
        assert!(Rgs::new(&[0, 2]).is_err());
        assert!(Rgs::new(&[0, 1, 0, 3]).is_err());
        assert!(Rgs::new(&[0, 1, 0, 2]).is_ok());
        assert!(Rgs::new(&[]).unwrap().is_empty());
        assert!("0x".parse::<Rgs>().is_err());
        assert!("1".parse::<Rgs>().is_err());
        assert!("0000000000000".parse::<Rgs>().is_err());
    }

    #[test]
    fn display_round_trips_and_shows_blocks() {
        let rgs = Rgs::from_labels(&[7, 7, 3, 7, 9, 3, 1, 2, 4, 5, 6, 8]).unwrap();
        assert_eq!(rgs.to_string(), "001021345678");
        let wide = Rgs::new(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]).unwrap();
        assert_eq!(wide.to_string(), "0123456789ab");
        for r in [rgs, wide, Rgs::new(&[]).unwrap()] {
            assert_eq!(r.to_string().parse::<Rgs>().unwrap(), r);
        }
        assert_eq!(format!("{rgs:?}"), "Rgs(\"001021345678\")");
        let small = Rgs::from_labels(&["x", "y", "x", "z"]).unwrap();
        assert_eq!(small.blocks(), vec![vec![0, 2], vec![1], vec![3]]);
        assert_eq!(small.block_sizes(), vec![2, 1, 1]);
        assert!(small.same_block(0, 2) && !small.same_block(0, 1));
    }
}
