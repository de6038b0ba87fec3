//! Agreement between two clusterings of the same points: adjusted Rand index and normalised
//! mutual information, from their contingency table.

use crate::data::canonical_labels;
use crate::error::{Error, Result};

/// The contingency table of two labelings: counts `n_ij` of points with label `i` in `a` and
/// `j` in `b`, plus the row and column sums. Labels of any ordered type.
struct Contingency {
    cells: Vec<u64>,
    rows: Vec<u64>,
    cols: Vec<u64>,
    n: u64,
}

impl Contingency {
    fn new<A: Copy + Ord, B: Copy + Ord>(a: &[A], b: &[B]) -> Result<Self> {
        if a.len() != b.len() {
            return Err(Error::DimensionMismatch(format!(
                "{} labels against {} labels",
                a.len(),
                b.len()
            )));
        }
        if a.is_empty() {
            return Err(Error::Empty("no labels to compare".into()));
        }
        let (ca, cb) = (canonical_labels(a), canonical_labels(b));
        let ka = ca.iter().max().map_or(0, |m| m + 1);
        let kb = cb.iter().max().map_or(0, |m| m + 1);
        let mut cells = vec![0u64; ka * kb];
        let (mut rows, mut cols) = (vec![0u64; ka], vec![0u64; kb]);
        for (&i, &j) in ca.iter().zip(&cb) {
            cells[i * kb + j] += 1;
            rows[i] += 1;
            cols[j] += 1;
        }
        Ok(Contingency {
            cells,
            rows,
            cols,
            n: a.len() as u64,
        })
    }
}

fn pairs(x: u64) -> f64 {
    (x as f64) * (x as f64 - 1.0) / 2.0
}

/// Adjusted Rand index (Hubert & Arabie 1985): the Rand index corrected for chance, 1 for
/// identical partitions, about 0 for independent ones. Two single-cluster (or two
/// all-singleton) labelings are identical and give 1. Cost: O(n + K_a K_b).
pub fn adjusted_rand_index<A: Copy + Ord, B: Copy + Ord>(a: &[A], b: &[B]) -> Result<f64> {
    let t = Contingency::new(a, b)?;
    let index: f64 = t.cells.iter().map(|&c| pairs(c)).sum();
    let sum_a: f64 = t.rows.iter().map(|&c| pairs(c)).sum();
    let sum_b: f64 = t.cols.iter().map(|&c| pairs(c)).sum();
    let expected = sum_a * sum_b / pairs(t.n).max(1.0);
    let max = 0.5 * (sum_a + sum_b);
    if max == expected {
        return Ok(1.0);
    }
    Ok((index - expected) / (max - expected))
}

/// Normalised mutual information `I(A; B) / ((H(A) + H(B)) / 2)` (the arithmetic-mean
/// normalisation, scikit-learn's default), in [0, 1]; 1 when both labelings have a single
/// cluster. Cost: O(n + K_a K_b).
pub fn normalized_mutual_information<A: Copy + Ord, B: Copy + Ord>(
    a: &[A],
    b: &[B],
) -> Result<f64> {
    let t = Contingency::new(a, b)?;
    let n = t.n as f64;
    let entropy = |counts: &[u64]| -> f64 {
        counts
            .iter()
            .filter(|&&c| c > 0)
            .map(|&c| {
                let p = c as f64 / n;
                -p * p.ln()
            })
            .sum()
    };
    let (ha, hb) = (entropy(&t.rows), entropy(&t.cols));
    if ha == 0.0 && hb == 0.0 {
        return Ok(1.0);
    }
    let kb = t.cols.len();
    let mut mi = 0.0;
    for (idx, &c) in t.cells.iter().enumerate() {
        if c > 0 {
            let (i, j) = (idx / kb, idx % kb);
            let c = c as f64;
            mi += c / n * (c * n / (t.rows[i] as f64 * t.cols[j] as f64)).ln();
        }
    }
    Ok((mi / (0.5 * (ha + hb))).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values by hand: a = {0,1,2}{3,4,5}, b = {0,1}{2,3}{4,5}. Contingency [[2,1,0],[0,1,2]]:
    /// Σ C(n_ij,2) = 2, Σ C(a_i,2) = 6, Σ C(b_j,2) = 3, C(6,2) = 15; expected = 18/15 = 1.2,
    /// max = 4.5, ARI = 0.8 / 3.3. NMI: I = (4/6) ln 2 ... computed from the definition.
    #[test]
    fn hand_computed_values() {
        let a = [0, 0, 0, 1, 1, 1];
        let b = [5, 5, 7, 7, 9, 9];
        let ari = adjusted_rand_index(&a, &b).unwrap();
        assert!((ari - 0.8 / 3.3).abs() < 1e-12, "{ari}");
        let (l2, l3) = (2f64.ln(), 3f64.ln());
        // H(a) = ln 2, H(b) = ln 3; I = Σ p ln(p / (p_a p_b)) with cells 2/6,1/6,1/6,2/6.
        let mi = 2.0 * (2.0 / 6.0) * (2.0f64 / 6.0 / (0.5 * (1.0 / 3.0))).ln()
            + 2.0 * (1.0 / 6.0) * (1.0f64 / 6.0 / (0.5 * (1.0 / 3.0))).ln();
        let nmi = normalized_mutual_information(&a, &b).unwrap();
        assert!((nmi - mi / (0.5 * (l2 + l3))).abs() < 1e-12, "{nmi}");
    }

    #[test]
    fn identical_and_degenerate() {
        let a = [3, 3, 1, 1, 2];
        let b = [0, 0, 9, 9, 4];
        assert!((adjusted_rand_index(&a, &b).unwrap() - 1.0).abs() < 1e-15);
        assert!((normalized_mutual_information(&a, &b).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(adjusted_rand_index(&[0, 0], &[1, 1]).unwrap(), 1.0);
        assert!(adjusted_rand_index(&[0, 1], &[0]).is_err());
        assert!(adjusted_rand_index::<u8, u8>(&[], &[]).is_err());
    }
}
