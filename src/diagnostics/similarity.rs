//! Posterior similarity (co-clustering) from draws of the partition, and point estimates.

use crate::error::{Error, Result};
use rayon::prelude::*;

/// The posterior similarity matrix `π_ij = P(i ~ j | X)` estimated from draws (each a label
/// vector), stored densely as co-clustering counts of the upper triangle in `u32` (n(n-1)/2
/// entries: 200 MB at n = 10,000). Draws are added one at a time, so they need not be held in
/// memory together. For larger n use [`PairSample`]. Cost: O(Σ_c n_c²) per draw.
#[derive(Clone, Debug)]
pub struct SimilarityMatrix {
    n: usize,
    counts: Vec<u32>,
    draws: u32,
    members: Vec<Vec<usize>>,
}

impl SimilarityMatrix {
    /// An empty matrix over `n` points (no draws yet).
    pub fn new(n: usize) -> Self {
        SimilarityMatrix {
            n,
            counts: vec![0; n * n.saturating_sub(1) / 2],
            draws: 0,
            members: Vec::new(),
        }
    }

    /// Accumulates co-clustering frequencies over `draws`. Errors on no draws or ragged draws.
    pub fn from_draws(draws: &[Vec<usize>]) -> Result<Self> {
        let n = check_draws(draws)?;
        let mut psm = SimilarityMatrix::new(n);
        for d in draws {
            psm.add(d)?;
        }
        Ok(psm)
    }

    /// Adds one draw. Errors if it does not label `n` points.
    pub fn add(&mut self, labels: &[usize]) -> Result<()> {
        self.check(labels)?;
        group(labels, &mut self.members);
        let n = self.n;
        for m in &self.members {
            for (a, &i) in m.iter().enumerate() {
                for &j in &m[a + 1..] {
                    self.counts[tri(n, i.min(j), i.max(j))] += 1;
                }
            }
        }
        self.draws += 1;
        Ok(())
    }

    fn check(&self, labels: &[usize]) -> Result<()> {
        if labels.len() != self.n {
            return Err(Error::DimensionMismatch(format!(
                "a draw of {} labels for a similarity matrix over {} points",
                labels.len(),
                self.n
            )));
        }
        Ok(())
    }

    /// Number of points.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of draws summarised.
    pub fn draws(&self) -> usize {
        self.draws as usize
    }

    /// `P(i ~ j)`; 1 on the diagonal (0 off it before any draw).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        if i == j {
            1.0
        } else {
            f64::from(self.counts[tri(self.n, i.min(j), i.max(j))]) / f64::from(self.draws.max(1))
        }
    }

    /// The part of Dahl's loss `Σ_{i<j} (δ_ij - π_ij)²` of the partition `labels` that depends
    /// on it: `Σ_{i<j same cluster} (1 - 2 π_ij)`. Cost O(Σ_c n_c²).
    pub fn loss(&self, labels: &[usize]) -> Result<f64> {
        self.check(labels)?;
        let mut members = Vec::new();
        group(labels, &mut members);
        let mut loss = 0.0;
        for m in &members {
            for (a, &i) in m.iter().enumerate() {
                for &j in &m[a + 1..] {
                    loss += 1.0 - 2.0 * self.get(i, j);
                }
            }
        }
        Ok(loss)
    }

    /// Dahl's (2006) least-squares point estimate: the index of the draw minimising
    /// `Σ_{i<j} (δ_ij - π_ij)²` ([`SimilarityMatrix::loss`]). Cost: O(Σ_draws Σ_c n_c²).
    pub fn least_squares_draw(&self, draws: &[Vec<usize>]) -> Result<usize> {
        check_draws(draws)?;
        let mut best = (f64::INFINITY, 0);
        for (k, d) in draws.iter().enumerate() {
            let loss = self.loss(d)?;
            if loss < best.0 {
                best = (loss, k);
            }
        }
        Ok(best.1)
    }
}

/// A memory-bounded alternative to [`SimilarityMatrix`] for large n: co-clustering
/// frequencies of a fixed list of pairs (e.g. drawn at random once), O(pairs) memory. Counts
/// and losses are integers until the last division, so they are exact and the same in any
/// order: both are taken over fixed chunks of pairs in parallel (a million-point run's
/// summary observes and scores hundreds of draws at 200,000 pairs each).
#[derive(Clone, Debug)]
pub struct PairSample {
    pairs: Vec<(usize, usize)>,
    together: Vec<u32>,
    draws: u32,
    /// The largest point of any pair (0 with no pairs).
    top: usize,
}

/// Pairs per parallel task of [`PairSample`].
const PAIR_CHUNK: usize = 1 << 14;

impl PairSample {
    /// Tracks the given pairs (each `i ≠ j`).
    pub fn new(pairs: Vec<(usize, usize)>) -> Result<Self> {
        if let Some(&(i, j)) = pairs.iter().find(|(i, j)| i == j) {
            return Err(Error::param(
                "pair",
                format!("({i}, {j})"),
                "two distinct points",
            ));
        }
        let together = vec![0; pairs.len()];
        let top = pairs.iter().map(|&(i, j)| i.max(j)).max().unwrap_or(0);
        Ok(PairSample {
            pairs,
            together,
            draws: 0,
            top,
        })
    }

    /// `m` pairs `i < j` of `0..n` drawn uniformly (with replacement) from `rng`, for an
    /// unbiased estimate of any average over all pairs. Errors for `n < 2`.
    pub fn random<R: rand::Rng + ?Sized>(n: usize, m: usize, rng: &mut R) -> Result<Self> {
        if n < 2 {
            return Err(Error::param("points", n, "at least 2 to form a pair"));
        }
        let pairs = (0..m)
            .map(|_| {
                let i = crate::rng::uniform_index(rng, n);
                let mut j = crate::rng::uniform_index(rng, n - 1);
                if j >= i {
                    j += 1;
                }
                (i.min(j), i.max(j))
            })
            .collect();
        PairSample::new(pairs)
    }

    /// Errors unless every pair lies in a draw of `labels`.
    fn check(&self, labels: &[usize]) -> Result<()> {
        if !self.pairs.is_empty() && self.top >= labels.len() {
            let &(i, j) = self
                .pairs
                .iter()
                .find(|(i, j)| *i.max(j) >= labels.len())
                .expect("the largest point is in a pair");
            return Err(Error::DimensionMismatch(format!(
                "pair ({i}, {j}) outside a draw of {} points",
                labels.len()
            )));
        }
        Ok(())
    }

    /// Number of tracked pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether no pair is tracked.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Dahl's loss restricted to the tracked pairs, `Σ_{(i,j) tracked} (δ_ij - π_ij)²`, of the
    /// partition `labels`. With uniformly drawn pairs it is an unbiased estimate of the full
    /// loss up to a factor, in O(pairs) instead of O(n²) memory. With `M` draws and `c_ij` of
    /// them joining the pair it is `Σ (M δ_ij - c_ij)² / M²`, the sum in integers (exact, in
    /// parallel). Errors if a pair lies outside the draw.
    pub fn loss(&self, labels: &[usize]) -> Result<f64> {
        self.check(labels)?;
        // With no draws every count and π_ij is 0: the loss counts the pairs joined.
        let m = u64::from(self.draws.max(1));
        let sum: u128 = self
            .pairs
            .par_chunks(PAIR_CHUNK)
            .zip(self.together.par_chunks(PAIR_CHUNK))
            .map(|(pairs, together)| {
                pairs
                    .iter()
                    .zip(together)
                    .map(|(&(i, j), &c)| {
                        let delta = if labels[i] == labels[j] { m } else { 0 };
                        u128::from(delta.abs_diff(u64::from(c))).pow(2)
                    })
                    .sum::<u128>()
            })
            .sum();
        Ok(sum as f64 / (m as f64 * m as f64))
    }

    /// The index of the draw with the smallest [`PairSample::loss`]: Dahl's least-squares point
    /// estimate on the tracked pairs. Errors on no draws.
    pub fn least_squares_draw(&self, draws: &[Vec<usize>]) -> Result<usize> {
        check_draws(draws)?;
        let mut best = (f64::INFINITY, 0);
        for (k, d) in draws.iter().enumerate() {
            let loss = self.loss(d)?;
            if loss < best.0 {
                best = (loss, k);
            }
        }
        Ok(best.1)
    }

    /// Adds one draw. Cost: O(pairs), in parallel.
    pub fn observe(&mut self, labels: &[usize]) -> Result<()> {
        self.check(labels)?;
        self.together
            .par_chunks_mut(PAIR_CHUNK)
            .zip(self.pairs.par_chunks(PAIR_CHUNK))
            .for_each(|(together, pairs)| {
                for (t, &(i, j)) in together.iter_mut().zip(pairs) {
                    *t += u32::from(labels[i] == labels[j]);
                }
            });
        self.draws += 1;
        Ok(())
    }

    /// The pairs and their estimated `P(i ~ j)`.
    pub fn probabilities(&self) -> impl Iterator<Item = ((usize, usize), f64)> + '_ {
        let scale = 1.0 / f64::from(self.draws.max(1));
        self.pairs
            .iter()
            .zip(&self.together)
            .map(move |(&p, &c)| (p, f64::from(c) * scale))
    }
}

/// The index of the draw with the largest log joint (the MAP draw among those visited).
pub fn map_draw(ln_joints: &[f64]) -> Option<usize> {
    ln_joints
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_nan())
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i)
}

fn check_draws(draws: &[Vec<usize>]) -> Result<usize> {
    let n = draws
        .first()
        .map(Vec::len)
        .ok_or_else(|| Error::Empty("no draws".into()))?;
    if let Some(d) = draws.iter().find(|d| d.len() != n) {
        return Err(Error::DimensionMismatch(format!(
            "a draw of {} labels among draws of {n}",
            d.len()
        )));
    }
    Ok(n)
}

/// Members of each cluster of one draw, reusing `members`.
fn group(labels: &[usize], members: &mut Vec<Vec<usize>>) {
    let canon = crate::data::canonical_labels(labels);
    let k = canon.iter().max().map_or(0, |m| m + 1);
    members.iter_mut().for_each(Vec::clear);
    members.resize_with(k.max(members.len()), Vec::new);
    members.truncate(k);
    for (i, &c) in canon.iter().enumerate() {
        members[c].push(i);
    }
}

/// Position of pair (i < j) in the row-major upper triangle.
fn tri(n: usize, i: usize, j: usize) -> usize {
    i * (2 * n - i - 1) / 2 + (j - i - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_draws_give_zero_one_similarity() {
        let d = vec![vec![0, 0, 1, 2, 1]; 5];
        let psm = SimilarityMatrix::from_draws(&d).unwrap();
        for i in 0..5 {
            for j in 0..5 {
                let same = d[0][i] == d[0][j];
                assert_eq!(psm.get(i, j), if same { 1.0 } else { 0.0 });
            }
        }
    }

    #[test]
    fn least_squares_picks_the_consensus() {
        let draws = vec![
            vec![0, 0, 1, 1],
            vec![0, 0, 1, 1],
            vec![0, 0, 0, 1],
            vec![0, 1, 2, 3],
        ];
        let psm = SimilarityMatrix::from_draws(&draws).unwrap();
        assert!((psm.get(0, 1) - 0.75).abs() < 1e-7);
        assert!((psm.get(2, 3) - 0.5).abs() < 1e-7);
        assert_eq!(psm.least_squares_draw(&draws).unwrap(), 0);
        let mut pairs = PairSample::new(vec![(0, 1), (2, 3)]).unwrap();
        for d in &draws {
            pairs.observe(d).unwrap();
        }
        let p: Vec<f64> = pairs.probabilities().map(|(_, p)| p).collect();
        assert_eq!(p, vec![0.75, 0.5]);
        assert_eq!(pairs.least_squares_draw(&draws).unwrap(), 0);
        assert_eq!(map_draw(&[-3.0, f64::NAN, -1.0]), Some(2));
        assert!(SimilarityMatrix::from_draws(&[]).is_err());
        // Draws added one at a time give the same matrix; a draw of the wrong size is refused.
        let mut one = SimilarityMatrix::new(4);
        for d in &draws {
            one.add(d).unwrap();
        }
        assert_eq!(one.draws(), 4);
        assert_eq!(one.get(0, 1), psm.get(0, 1));
        assert!(one.add(&[0, 1]).is_err());
        assert!(one.loss(&[0; 5]).is_err());
        assert!(PairSample::new(vec![(1, 1)]).is_err());
    }

    /// With every pair tracked, the sampled loss is the full loss and both estimates agree;
    /// random pairs are distinct points, ordered.
    #[test]
    fn pair_sample_estimate_agrees_with_the_dense_one() {
        let mut rng = crate::rng::SeedPlan::new(3).chain(0);
        let n = 12;
        let draws: Vec<Vec<usize>> = (0..30)
            .map(|_| {
                (0..n)
                    .map(|_| crate::rng::uniform_index(&mut rng, 3))
                    .collect()
            })
            .collect();
        let psm = SimilarityMatrix::from_draws(&draws).unwrap();
        let all: Vec<(usize, usize)> = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .collect();
        let mut pairs = PairSample::new(all).unwrap();
        for d in &draws {
            pairs.observe(d).unwrap();
        }
        assert_eq!(
            pairs.least_squares_draw(&draws).unwrap(),
            psm.least_squares_draw(&draws).unwrap()
        );
        let random = PairSample::random(n, 500, &mut rng).unwrap();
        assert_eq!(random.len(), 500);
        assert!(random.pairs.iter().all(|&(i, j)| i < j && j < n));
        assert!(PairSample::random(1, 5, &mut rng).is_err());
        assert!(random.least_squares_draw(&[vec![0; 3]]).is_err());
    }
}
