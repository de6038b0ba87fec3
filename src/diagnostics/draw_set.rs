//! Partition draws held for point estimates and credible balls, with the points that share
//! their cluster in every draw held once, as one weighted **atom**.
//!
//! **Why atoms.** Points `i` and `j` with the same cluster in every draw are exchangeable in
//! every expected loss over the draws, and for the VI and Binder's loss (with any `a` in
//! (0, 2)) some minimiser never separates them: put `t` of an atom's `w` points in cluster `k`
//! and `w - t` in cluster `k'`, the rest fixed; the expected loss is, up to constants,
//! `(2 - a) [f(A + t) + f(B + w - t)] - (2/M) Σ_m [f(C_m + t) + f(D_m + w - t)]` with `f`
//! convex (`x log x` or `x²`), `A`, `B` the two clusters' other points and `C_m ≤ A`,
//! `D_m ≤ B` their points in the atom's cluster of draw `m`. Its second derivative in `t` is
//! at most `(2 - a - 2) [f''(A + t) + f''(B + w - t)] < 0` for `x log x` (`f''` falls, so
//! `f''(C_m + t) ≥ f''(A + t)`) and `(2 - a - 2) · 4 < 0` for `x²`: concave, so the least
//! loss is at `t = 0` or `t = w`, and moving an atom's points together never raises the
//! loss. A search over atoms ([`super::salso`]) therefore loses nothing for these losses,
//! and costs O(atoms) instead of O(n) per scan; on a concentrated posterior of many points
//! the atoms are few (every point of a cluster that never changes is one atom). One minus
//! the ARI is not linear in the draws, and the search over atoms restricts its minimiser.
//!
//! **Building.** [`DrawSetBuilder`] takes the draws one at a time, refining the atoms: an
//! atom of the draws so far splits by its points' clusters in the new draw, its pieces
//! numbered in the order of their first points, and each piece records its parent and its
//! column in the draw. [`DrawSetBuilder::finish`] walks each final atom's parents back to
//! read its columns. Memory: `n` atom labels, `8 A_m` bytes per draw `m` of `A_m` atoms
//! while building, then `4 A M` for the table; the draws themselves are not kept, so a
//! million points and a hundred draws cost a few megabytes when the atoms are few.

use super::partition_loss::PartitionLoss;
use crate::data::canonical_labels;
use crate::error::{Error, Result};
use std::collections::HashMap;

/// `M` partition draws of `n` points, each relabelled canonically, with the points that share
/// their cluster in every draw held as one atom (see the module documentation): draw `m`'s
/// cluster `l` is column `offset_m + l`, and `column(a, m)` is atom `a`'s column in draw `m`.
/// Memory: `4 A M` bytes for `A` atoms, `4 n` for the points' atoms.
#[derive(Clone, Debug)]
pub struct DrawSet {
    n: usize,
    draws: usize,
    /// Per draw, its first column.
    offsets: Vec<u32>,
    /// Per draw, its number of clusters.
    clusters: Vec<u32>,
    /// `columns[a * draws + m]`: the column of atom `a` in draw `m`.
    columns: Vec<u32>,
    /// Per atom, its number of points.
    weights: Vec<u32>,
    /// Per point, its atom.
    atom_of: Vec<u32>,
}

/// No piece yet in a refinement list.
const NONE: u32 = u32::MAX;

/// Builds a [`DrawSet`] from draws given one at a time (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct DrawSetBuilder {
    /// Per point (or per weighted unit, see [`DrawSetBuilder::weighted`]) its atom so far.
    atom_of: Vec<u32>,
    /// Per unit its weight.
    weights: Vec<u32>,
    /// Atoms so far.
    atoms: usize,
    /// Per draw, each atom's parent among the previous draw's atoms and its column.
    steps: Vec<(Vec<u32>, Vec<u32>)>,
    offsets: Vec<u32>,
    clusters: Vec<u32>,
    /// Columns so far.
    total: u64,
}

impl DrawSetBuilder {
    /// A builder for draws of `n` points.
    pub fn new(n: usize) -> Self {
        DrawSetBuilder::weighted(vec![1; n])
    }

    /// A builder for draws of units of the given weights (each a group of points).
    fn weighted(weights: Vec<u32>) -> Self {
        DrawSetBuilder {
            atom_of: vec![0; weights.len()],
            atoms: usize::from(!weights.is_empty()),
            weights,
            ..DrawSetBuilder::default()
        }
    }

    /// Adds a draw (labels of any values, one per point). Errors when its length differs
    /// from the builder's points, or the columns overflow 32 bits. Cost O(n), O(n log K) when
    /// the labels are not canonical (numbered by first appearance).
    pub fn add(&mut self, labels: &[usize]) -> Result<()> {
        let n = self.atom_of.len();
        if labels.len() != n {
            return Err(Error::DimensionMismatch(format!(
                "partition draw {} has {} labels, the draws before it {n}",
                self.steps.len(),
                labels.len()
            )));
        }
        // Draws from a run's files are canonical already: checked in one pass, not relabelled.
        let canonical: std::borrow::Cow<[usize]> = if is_canonical(labels) {
            labels.into()
        } else {
            canonical_labels(labels).into()
        };
        let k = canonical.iter().max().map_or(0, |x| x + 1) as u64;
        if self.total + k > u64::from(u32::MAX) {
            return Err(Error::TooLarge(format!(
                "{} draws with more than {} clusters in all",
                self.steps.len() + 1,
                u32::MAX
            )));
        }
        let offset = self.total as u32;
        // Per atom so far the first of its pieces in this draw, each piece linking to the next.
        let mut first = vec![NONE; self.atoms];
        let mut pieces: Vec<(u32, u32)> = Vec::new(); // (label, next piece)
        let (mut parents, mut columns) = (Vec::new(), Vec::new());
        for (atom, &label) in self.atom_of.iter_mut().zip(canonical.iter()) {
            let label = label as u32;
            let mut at = first[*atom as usize];
            let mut last = NONE;
            while at != NONE && pieces[at as usize].0 != label {
                last = at;
                at = pieces[at as usize].1;
            }
            if at == NONE {
                at = pieces.len() as u32;
                pieces.push((label, NONE));
                parents.push(*atom);
                columns.push(offset + label);
                if last == NONE {
                    first[*atom as usize] = at;
                } else {
                    pieces[last as usize].1 = at;
                }
            }
            *atom = at;
        }
        self.atoms = pieces.len();
        self.steps.push((parents, columns));
        self.offsets.push(offset);
        self.clusters.push(k as u32);
        self.total += k;
        Ok(())
    }

    /// The draw set. Errors on no draws or no points. Cost O(A M + n).
    pub fn finish(self) -> Result<DrawSet> {
        if self.steps.is_empty() {
            return Err(Error::Empty("no partition draws".into()));
        }
        if self.atom_of.is_empty() {
            return Err(Error::Empty("partition draws of no points".into()));
        }
        let m = self.steps.len();
        let atoms = self.atoms;
        let mut columns = vec![0u32; atoms * m];
        for a in 0..atoms {
            let mut at = a;
            for (d, (parents, cols)) in self.steps.iter().enumerate().rev() {
                columns[a * m + d] = cols[at];
                at = parents[at] as usize;
            }
        }
        let mut weights = vec![0u32; atoms];
        for (&a, &w) in self.atom_of.iter().zip(&self.weights) {
            weights[a as usize] += w;
        }
        Ok(DrawSet {
            n: self.weights.iter().map(|&w| w as usize).sum(),
            draws: m,
            offsets: self.offsets,
            clusters: self.clusters,
            columns,
            weights,
            atom_of: self.atom_of,
        })
    }
}

/// Whether `labels` are canonical: each new label the next number from 0. Cost O(n).
fn is_canonical(labels: &[usize]) -> bool {
    let mut next = 0;
    for &l in labels {
        if l == next {
            next += 1;
        } else if l > next {
            return false;
        }
    }
    true
}

impl DrawSet {
    /// The draws `draws` (label vectors of one length, labels of any values). Errors on no
    /// draws, no points, or draws of different lengths. Cost O(n M log K + A M).
    pub fn new(draws: &[Vec<usize>]) -> Result<Self> {
        let first = draws
            .first()
            .ok_or_else(|| Error::Empty("no partition draws".into()))?;
        let mut builder = DrawSetBuilder::new(first.len());
        for labels in draws {
            builder.add(labels)?;
        }
        builder.finish()
    }

    /// Every `stride`-th draw from the first (`stride` at least 1), the atoms merged where the
    /// dropped draws alone told them apart. Cost O(A M).
    pub fn every(&self, stride: usize) -> Result<Self> {
        let stride = stride.max(1);
        let mut builder = DrawSetBuilder::weighted(self.weights.clone());
        let mut labels = vec![0usize; self.atoms()];
        for m in (0..self.draws).step_by(stride) {
            for (a, label) in labels.iter_mut().enumerate() {
                *label = self.columns[a * self.draws + m] as usize;
            }
            builder.add(&labels)?;
        }
        let inner = builder.finish()?;
        Ok(DrawSet {
            atom_of: self
                .atom_of
                .iter()
                .map(|&a| inner.atom_of[a as usize])
                .collect(),
            n: self.n,
            ..inner
        })
    }

    /// Number of points.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of draws.
    pub fn len(&self) -> usize {
        self.draws
    }

    /// Whether there are no draws (never: a draw set has at least one).
    pub fn is_empty(&self) -> bool {
        self.draws == 0
    }

    /// Number of atoms: groups of points with the same cluster in every draw.
    pub fn atoms(&self) -> usize {
        self.weights.len()
    }

    /// Atom `a`'s number of points.
    pub(crate) fn weight(&self, a: usize) -> u32 {
        self.weights[a]
    }

    /// Point `i`'s atom.
    pub fn atom_of(&self, i: usize) -> usize {
        self.atom_of[i] as usize
    }

    /// Columns over all draws (the sum of their numbers of clusters).
    pub(crate) fn total_columns(&self) -> usize {
        self.offsets.last().map_or(0, |&o| o as usize)
            + self.clusters.last().map_or(0, |&k| k as usize)
    }

    /// Draw `m`'s columns, one per cluster.
    pub(crate) fn draw_columns(&self, m: usize) -> std::ops::Range<usize> {
        let start = self.offsets[m] as usize;
        start..start + self.clusters[m] as usize
    }

    /// Atom `a`'s column in each draw, `M` entries.
    pub(crate) fn atom_columns(&self, a: usize) -> &[u32] {
        &self.columns[a * self.draws..(a + 1) * self.draws]
    }

    /// Draw `m`'s number of clusters.
    pub fn n_clusters(&self, m: usize) -> usize {
        self.clusters[m] as usize
    }

    /// Draw `m`'s canonical labels. Cost O(n).
    pub fn labels(&self, m: usize) -> Vec<usize> {
        self.atom_of
            .iter()
            .map(|&a| (self.columns[a as usize * self.draws + m] - self.offsets[m]) as usize)
            .collect()
    }

    /// Errors unless `labels` labels the draws' `n` points.
    fn check(&self, labels: &[usize]) -> Result<()> {
        if labels.len() != self.n {
            return Err(Error::DimensionMismatch(format!(
                "a partition of {} labels against draws of {} points",
                labels.len(),
                self.n
            )));
        }
        Ok(())
    }

    /// The loss `L(labels, draw m)` for every draw, `labels` the estimate. Cost
    /// O(n + M (G + K K_m)), `G` the distinct pairs of an estimate's cluster and an atom
    /// (the atoms when the estimate keeps them whole), one draw's contingency table at a time.
    pub fn losses(&self, loss: PartitionLoss, labels: &[usize]) -> Result<Vec<f64>> {
        loss.validate()?;
        self.check(labels)?;
        let estimate: std::borrow::Cow<[usize]> = if is_canonical(labels) {
            labels.into()
        } else {
            canonical_labels(labels).into()
        };
        let k = estimate.iter().max().map_or(0, |x| x + 1);
        let mut rows = vec![0u32; k];
        // The points by (estimate cluster, atom): per atom, the cluster of its first point
        // and how many of its points share it, in arrays (an estimate mostly keeps atoms
        // whole); the other pairs in a map. The counts are integers, so their order does
        // not matter. O(n) array steps instead of n hashes: a million points per call.
        let mut first = vec![NONE; self.atoms()];
        let mut same = vec![0u32; self.atoms()];
        let mut other: HashMap<(usize, u32), u32> = HashMap::new();
        for (&c, &a) in estimate.iter().zip(&self.atom_of) {
            rows[c] += 1;
            let f = &mut first[a as usize];
            if *f == NONE {
                *f = c as u32;
            }
            if *f == c as u32 {
                same[a as usize] += 1;
            } else {
                *other.entry((c, a)).or_insert(0) += 1;
            }
        }
        let mut groups: Vec<(usize, usize, u32)> = (0..self.atoms())
            .filter(|&a| same[a] > 0)
            .map(|a| (first[a] as usize, a, same[a]))
            .collect();
        groups.extend(other.into_iter().map(|((c, a), w)| (c, a as usize, w)));
        let a_sum: f64 = rows.iter().map(|&x| loss.f(x)).sum();
        let mut cells: Vec<u32> = Vec::new();
        let mut cols: Vec<u32> = Vec::new();
        let mut out = Vec::with_capacity(self.draws);
        for m in 0..self.draws {
            let km = self.clusters[m] as usize;
            cells.clear();
            cells.resize(k * km, 0);
            cols.clear();
            cols.resize(km, 0);
            for &(c, a, w) in &groups {
                let l = (self.columns[a * self.draws + m] - self.offsets[m]) as usize;
                cells[c * km + l] += w;
                cols[l] += w;
            }
            let b_sum: f64 = cols.iter().map(|&x| loss.f(x)).sum();
            let s_sum: f64 = cells.iter().map(|&x| loss.f(x)).sum();
            out.push(loss.combine(a_sum, b_sum, s_sum, self.n));
        }
        Ok(out)
    }

    /// The posterior expected loss of `labels`: the mean of [`DrawSet::losses`].
    pub fn expected_loss(&self, loss: PartitionLoss, labels: &[usize]) -> Result<f64> {
        let losses = self.losses(loss, labels)?;
        Ok(losses.iter().sum::<f64>() / losses.len() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draw_sets_refuse_ragged_or_empty_draws() {
        assert!(DrawSet::new(&[]).is_err());
        assert!(DrawSet::new(&[vec![]]).is_err());
        assert!(DrawSet::new(&[vec![0, 1], vec![0]]).is_err());
        let set = DrawSet::new(&[vec![5, 5, 7], vec![1, 2, 3]]).unwrap();
        assert_eq!(set.labels(0), vec![0, 0, 1]);
        assert_eq!(set.labels(1), vec![0, 1, 2]);
        assert_eq!(set.total_columns(), 5);
        assert!(set.expected_loss(PartitionLoss::VI, &[0, 0]).is_err());
    }

    /// Points with the same cluster in every draw share an atom, numbered by first point;
    /// every draw's labels come back from the atoms; thinning merges the atoms only the
    /// dropped draws told apart.
    #[test]
    fn atoms_group_the_points_that_never_part() {
        let draws = vec![
            vec![0, 0, 1, 1, 2, 2, 0],
            vec![3, 3, 3, 4, 4, 4, 3],
            vec![0, 0, 1, 1, 1, 2, 0],
        ];
        let set = DrawSet::new(&draws).unwrap();
        // {0, 1, 6}, {2}, {3}, {4}, {5}.
        assert_eq!(set.atoms(), 5);
        let atoms: Vec<usize> = (0..7).map(|i| set.atom_of(i)).collect();
        assert_eq!(atoms, vec![0, 0, 1, 2, 3, 4, 0]);
        assert_eq!(
            (0..5).map(|a| set.weight(a)).collect::<Vec<_>>(),
            vec![3, 1, 1, 1, 1]
        );
        for (m, d) in draws.iter().enumerate() {
            assert_eq!(set.labels(m), canonical_labels(d));
        }
        // Draws 0 and 2: {0, 1, 6}, {2, 3}, {4}, {5}.
        let thin = set.every(2).unwrap();
        assert_eq!(thin.len(), 2);
        assert_eq!(thin.atoms(), 4);
        assert_eq!(thin.labels(1), canonical_labels(&draws[2]));
        for loss in [
            PartitionLoss::VI,
            PartitionLoss::BINDER,
            PartitionLoss::OneMinusAri,
        ] {
            let estimate = [0, 1, 1, 2, 0, 0, 1];
            let direct: Vec<f64> = [0, 2]
                .iter()
                .map(|&m| loss.between(&estimate, &draws[m]).unwrap())
                .collect();
            assert_eq!(thin.losses(loss, &estimate).unwrap(), direct);
        }
    }
}
