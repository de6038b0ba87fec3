//! Losses between two partitions of the same points; their posterior expected loss over a
//! set of partition draws is [`super::DrawSet`]'s.
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
}
