//! Losses between two partitions of the same points, and the posterior expected loss of a
//! partition over a set of partition draws ([`DrawSet`]).
//!
//! **The losses.** Write `ĉ` for the estimate and `c` for the truth (a posterior draw), `N_kl`
//! for the points in cluster `k` of `ĉ` and `l` of `c`, `n_k = Σ_l N_kl`, `m_l = Σ_k N_kl`.
//! Every loss here is a function of three sums of one function `f` of the counts,
//! `A = Σ_k f(n_k)` (the estimate's), `B = Σ_l f(m_l)` (the truth's) and `S = Σ_kl f(N_kl)`
//! (both's):
//!
//! * **Binder** with its parameter `a` in (0, 2), `f(x) = x²`: a pair of points together in the
//!   truth and apart in the estimate costs `a`, a pair apart in the truth and together in the
//!   estimate `2 - a`; the sum over ordered pairs divided by `n²` is
//!   `(a B + (2 - a) A - 2 S) / n²`. `a = 1` is Binder's (1978) loss with equal costs, the one
//!   Dahl's (2006) least-squares estimate approximates.
//! * **Variation of Information**, generalised with `a` (Meilă 2007; Dahl, Johnson & Müller
//!   2022), in bits, `f(x) = x log₂ x`: `a H(ĉ | c) + (2 - a) H(c | ĉ)
//!   = (a B + (2 - a) A - 2 S) / n`. `a = 1` is the VI of Wade & Ghahramani (2018).
//! * **One minus the adjusted Rand index** (Hubert & Arabie 1985), `f(x) = x(x-1)/2`:
//!   `1 - (S - A B / T) / ((A + B) / 2 - A B / T)` with `T = n(n-1)/2` pairs; two identical
//!   partitions whose denominator vanishes (both one cluster, or both singletons) have loss 0.
//!
//! In both parametrised losses a larger `a` makes splitting a true cluster dearer, so the
//! estimate that minimises the expected loss has fewer clusters.
//!
//! **Expected loss.** Over `M` draws `c⁽¹⁾ … c⁽ᴹ⁾` the posterior expected loss of `ĉ` is
//! estimated by the mean `(1/M) Σ_m L(ĉ, c⁽ᵐ⁾)`. For Binder and VI it is linear in the draws'
//! `S` and `B`; one minus the ARI is not, so each draw keeps its own.

use crate::data::canonical_labels;
use crate::error::{Error, Result};

/// A loss between an estimated partition and a true one (see the module documentation).
///
/// Files write it by its name ([`PartitionLoss::name`]: `vi`, `binder(a=0.5)`, `1-ari`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum PartitionLoss {
    /// Binder's loss: cost `a` for each pair split by the estimate, `2 - a` for each pair it
    /// joins, over ordered pairs, divided by `n²`.
    Binder {
        /// The cost of a split pair, in (0, 2).
        a: f64,
    },
    /// The generalised Variation of Information, in bits: `a H(ĉ | c) + (2 - a) H(c | ĉ)`.
    Vi {
        /// The weight of the estimate's splits, in (0, 2).
        a: f64,
    },
    /// One minus the adjusted Rand index.
    OneMinusAri,
}

/// `T = n(n-1)/2`, the pairs of `n` points (at least 1), as one minus the ARI divides by it.
#[inline(always)]
pub(crate) fn ari_pairs(n: f64) -> f64 {
    (n * (n - 1.0) / 2.0).max(1.0)
}

/// One minus the ARI from the sums `A`, `B`, `S` of `f(x) = x(x-1)/2` and the pairs `T`
/// ([`ari_pairs`]). The one definition the expected loss and the search's vectorised scoring
/// both use, so that they agree bit for bit. Cost: two divisions.
#[inline(always)]
pub(crate) fn one_minus_ari(a_sum: f64, b_sum: f64, s_sum: f64, pairs: f64) -> f64 {
    let expected = a_sum * b_sum / pairs;
    let max = 0.5 * (a_sum + b_sum);
    // Equal only for two identical trivial partitions (see the module docs).
    if max == expected {
        0.0
    } else {
        1.0 - (s_sum - expected) / (max - expected)
    }
}

impl From<PartitionLoss> for String {
    fn from(loss: PartitionLoss) -> String {
        loss.name()
    }
}

impl TryFrom<String> for PartitionLoss {
    type Error = Error;

    fn try_from(name: String) -> Result<Self> {
        PartitionLoss::named(&name)
    }
}

impl PartitionLoss {
    /// The Variation of Information with equal weights (Wade & Ghahramani 2018).
    pub const VI: PartitionLoss = PartitionLoss::Vi { a: 1.0 };
    /// Binder's loss with equal costs.
    pub const BINDER: PartitionLoss = PartitionLoss::Binder { a: 1.0 };

    /// Errors unless `a` is finite and in (0, 2): at 0 or 2 one kind of error costs nothing
    /// and the minimiser is all singletons or one cluster whatever the draws say.
    pub fn validate(&self) -> Result<()> {
        match *self {
            PartitionLoss::Binder { a } | PartitionLoss::Vi { a } => {
                if a.is_finite() && a > 0.0 && a < 2.0 {
                    Ok(())
                } else {
                    Err(Error::param(
                        "a",
                        a,
                        "a number in (0, 2): the cost of a split pair (2 - a that of a joined pair)",
                    ))
                }
            }
            PartitionLoss::OneMinusAri => Ok(()),
        }
    }

    /// A short name: `vi`, `binder`, `1-ari`, with the parameter when it is not 1
    /// (`vi(a=1.5)`).
    pub fn name(&self) -> String {
        match *self {
            PartitionLoss::Binder { a: 1.0 } => "binder".to_string(),
            PartitionLoss::Binder { a } => format!("binder(a={a})"),
            PartitionLoss::Vi { a: 1.0 } => "vi".to_string(),
            PartitionLoss::Vi { a } => format!("vi(a={a})"),
            PartitionLoss::OneMinusAri => "1-ari".to_string(),
        }
    }

    /// The loss named as [`PartitionLoss::name`] writes it (`vi`, `binder`, `1-ari`, `ari`
    /// for the last, and `vi(a=1.5)` or `binder(a=0.5)` with a parameter), validated.
    pub fn named(name: &str) -> Result<Self> {
        let bad = || {
            Error::param(
                "loss",
                name,
                "vi, binder or 1-ari, the first two optionally with a parameter: vi(a=1.5)",
            )
        };
        let (base, a) = match name.split_once('(') {
            Some((base, rest)) => {
                let value = rest
                    .strip_prefix("a=")
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(bad)?;
                (base, Some(value.trim().parse::<f64>().map_err(|_| bad())?))
            }
            None => (name, None),
        };
        let loss = match (base.trim(), a) {
            ("vi", a) => PartitionLoss::Vi {
                a: a.unwrap_or(1.0),
            },
            ("binder", a) => PartitionLoss::Binder {
                a: a.unwrap_or(1.0),
            },
            ("1-ari" | "ari", None) => PartitionLoss::OneMinusAri,
            _ => return Err(bad()),
        };
        loss.validate()?;
        Ok(loss)
    }

    /// `f(x)` of the module documentation, for a count `x`.
    pub(crate) fn f(&self, x: u32) -> f64 {
        let x = f64::from(x);
        match self {
            PartitionLoss::Binder { .. } => x * x,
            PartitionLoss::Vi { .. } => {
                if x > 0.0 {
                    x * x.log2()
                } else {
                    0.0
                }
            }
            PartitionLoss::OneMinusAri => x * (x - 1.0) / 2.0,
        }
    }

    /// Whether the expected loss is linear in each draw's `S` and `B` (Binder and VI), so that
    /// their means over the draws suffice.
    pub(crate) fn is_linear(&self) -> bool {
        !matches!(self, PartitionLoss::OneMinusAri)
    }

    /// The loss from the sums `A` (estimate), `B` (truth) and `S` (both) of `f` over `n`
    /// points. Cost O(1).
    pub(crate) fn combine(&self, a_sum: f64, b_sum: f64, s_sum: f64, n: usize) -> f64 {
        let n = n as f64;
        match *self {
            PartitionLoss::Binder { a } => (a * b_sum + (2.0 - a) * a_sum - 2.0 * s_sum) / (n * n),
            PartitionLoss::Vi { a } => (a * b_sum + (2.0 - a) * a_sum - 2.0 * s_sum) / n,
            PartitionLoss::OneMinusAri => one_minus_ari(a_sum, b_sum, s_sum, ari_pairs(n)),
        }
    }

    /// The loss of the estimate `estimate` when `truth` is the truth. Labels of any values;
    /// errors when the two differ in length or are empty. Cost O(n + K_estimate K_truth).
    pub fn between(&self, estimate: &[usize], truth: &[usize]) -> Result<f64> {
        self.validate()?;
        if estimate.len() != truth.len() {
            return Err(Error::DimensionMismatch(format!(
                "an estimate of {} labels against a partition of {} labels",
                estimate.len(),
                truth.len()
            )));
        }
        if estimate.is_empty() {
            return Err(Error::Empty("no labels to compare".into()));
        }
        let (e, t) = (canonical_labels(estimate), canonical_labels(truth));
        let ke = e.iter().max().map_or(0, |m| m + 1);
        let kt = t.iter().max().map_or(0, |m| m + 1);
        let mut cells = vec![0u32; ke * kt];
        let (mut rows, mut cols) = (vec![0u32; ke], vec![0u32; kt]);
        for (&i, &j) in e.iter().zip(&t) {
            cells[i * kt + j] += 1;
            rows[i] += 1;
            cols[j] += 1;
        }
        let sum = |v: &[u32]| v.iter().map(|&x| self.f(x)).sum::<f64>();
        Ok(self.combine(sum(&rows), sum(&cols), sum(&cells), e.len()))
    }
}

/// Partition draws held for point estimates and credible balls: `M` draws of `n` points, each
/// relabelled canonically, stored point-major as columns of one table: draw `m`'s cluster `l`
/// is column `offset_m + l`, and `column(i, m)` is point `i`'s column in draw `m`. Memory:
/// `4 n M` bytes (20 MB for 5,000 points and 1,000 draws).
#[derive(Clone, Debug)]
pub struct DrawSet {
    n: usize,
    draws: usize,
    /// Per draw, its first column.
    offsets: Vec<u32>,
    /// Per draw, its number of clusters.
    clusters: Vec<u32>,
    /// `columns[i * draws + m]`: the column of point `i` in draw `m`.
    columns: Vec<u32>,
}

impl DrawSet {
    /// The draws `draws` (label vectors of one length, labels of any values). Errors on no
    /// draws, no points, or draws of different lengths. Cost O(n M).
    pub fn new(draws: &[Vec<usize>]) -> Result<Self> {
        let first = draws
            .first()
            .ok_or_else(|| Error::Empty("no partition draws".into()))?;
        let n = first.len();
        if n == 0 {
            return Err(Error::Empty("partition draws of no points".into()));
        }
        let m = draws.len();
        let mut columns = vec![0u32; n * m];
        let (mut offsets, mut clusters) = (Vec::with_capacity(m), Vec::with_capacity(m));
        let mut total: u64 = 0;
        for (d, labels) in draws.iter().enumerate() {
            if labels.len() != n {
                return Err(Error::DimensionMismatch(format!(
                    "partition draw {d} has {} labels, draw 0 has {n}",
                    labels.len()
                )));
            }
            let canonical = canonical_labels(labels);
            let k = canonical.iter().max().map_or(0, |x| x + 1) as u64;
            if total + k > u64::from(u32::MAX) {
                return Err(Error::TooLarge(format!(
                    "{m} draws with more than {} clusters in all",
                    u32::MAX
                )));
            }
            offsets.push(total as u32);
            clusters.push(k as u32);
            for (i, &l) in canonical.iter().enumerate() {
                columns[i * m + d] = total as u32 + l as u32;
            }
            total += k;
        }
        Ok(DrawSet {
            n,
            draws: m,
            offsets,
            clusters,
            columns,
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

    /// Whether there are no draws (never: [`DrawSet::new`] refuses none).
    pub fn is_empty(&self) -> bool {
        self.draws == 0
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

    /// Point `i`'s column in each draw, `M` entries.
    pub(crate) fn point_columns(&self, i: usize) -> &[u32] {
        &self.columns[i * self.draws..(i + 1) * self.draws]
    }

    /// Draw `m`'s number of clusters.
    pub fn n_clusters(&self, m: usize) -> usize {
        self.clusters[m] as usize
    }

    /// Draw `m`'s canonical labels. Cost O(n).
    pub fn labels(&self, m: usize) -> Vec<usize> {
        (0..self.n)
            .map(|i| (self.columns[i * self.draws + m] - self.offsets[m]) as usize)
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
    /// O(M (n + K K_m)), one draw's contingency table at a time.
    pub fn losses(&self, loss: PartitionLoss, labels: &[usize]) -> Result<Vec<f64>> {
        loss.validate()?;
        self.check(labels)?;
        let estimate = canonical_labels(labels);
        let k = estimate.iter().max().map_or(0, |x| x + 1);
        let mut rows = vec![0u32; k];
        for &c in &estimate {
            rows[c] += 1;
        }
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
            for (i, &c) in estimate.iter().enumerate() {
                let l = (self.columns[i * self.draws + m] - self.offsets[m]) as usize;
                cells[c * km + l] += 1;
                cols[l] += 1;
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
    fn losses_of_known_pairs() {
        let one = [0, 0, 0, 0];
        let single = [0, 1, 2, 3];
        // VI between one cluster and singletons is log2 n; the split costs a, the join 2 - a.
        assert!((PartitionLoss::VI.between(&single, &one).unwrap() - 2.0).abs() < 1e-12);
        let vi = PartitionLoss::Vi { a: 0.5 };
        assert!((vi.between(&single, &one).unwrap() - 1.0).abs() < 1e-12);
        assert!((vi.between(&one, &single).unwrap() - 3.0).abs() < 1e-12);
        // Binder: 12 ordered pairs split of 16.
        let b = PartitionLoss::BINDER.between(&single, &one).unwrap();
        assert!((b - 12.0 / 16.0).abs() < 1e-12);
        assert_eq!(PartitionLoss::OneMinusAri.between(&one, &one).unwrap(), 0.0);
        assert_eq!(
            PartitionLoss::OneMinusAri
                .between(&single, &single)
                .unwrap(),
            0.0
        );
    }

    #[test]
    fn names_round_trip_and_bad_parameters_are_refused() {
        for loss in [
            PartitionLoss::VI,
            PartitionLoss::BINDER,
            PartitionLoss::Vi { a: 1.5 },
            PartitionLoss::Binder { a: 0.25 },
            PartitionLoss::OneMinusAri,
        ] {
            assert_eq!(PartitionLoss::named(&loss.name()).unwrap(), loss);
        }
        for bad in [
            "vi(a=2)",
            "binder(a=0)",
            "vi(a=nan)",
            "vi(1)",
            "ari(a=1)",
            "dahl",
        ] {
            assert!(PartitionLoss::named(bad).is_err(), "{bad}");
        }
        assert!(PartitionLoss::Vi { a: f64::INFINITY }
            .between(&[0], &[0])
            .is_err());
    }

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
}
