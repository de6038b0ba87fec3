//! Weighted Multinomial-Dirichlet statistics for SVA (MATH §2.2 with real-valued counts,
//! §6.5).
//!
//! A component that has absorbed documents `y_j` with weights `ρ_j` holds the weighted pooled
//! counts `C_w = Σ_j ρ_j y_jw` (sorted sparse pairs), their total `N = Σ_w C_w`, the weight
//! `w = Σ_j ρ_j` and the weighted sum of the documents' log multinomial coefficients. Its
//! posterior is `Dir(β + C_w)`, and the predictive of a document `y` with `N_y` words is
//!
//! `ln p(y | S) = ln (N_y; y) + ln Γ(Vβ + N) - ln Γ(Vβ + N + N_y)
//!               + Σ_{w ∈ y} [ln Γ(β + C_w + y_w) - ln Γ(β + C_w)]`,
//!
//! which only visits the document's own words. Each `ln Γ(a + k) - ln Γ(a)` with a small
//! integer `k` is computed as the logarithm of the rising product `a (a+1) … (a+k-1)`, exact
//! to rounding and free of the cancellation of two large `ln Γ` values (P2).

use crate::data::SparseCounts;
use crate::error::{Error, Result};
use crate::kernel::MultinomialDirichlet;
use crate::kernel::SvaKernel;
use crate::math::ln_gamma;

/// Largest `k` for which `ln Γ(a + k) - ln Γ(a)` is a rising product (the product of 16
/// factors below 2⁶⁴ each stays far from overflow).
const RISING_PRODUCT_MAX: u64 = 16;

/// `ln Γ(a + k) - ln Γ(a)` for `a > 0` and an integer `k ≥ 0`.
#[inline]
fn ln_rising(a: f64, k: u64) -> f64 {
    if k <= RISING_PRODUCT_MAX {
        let mut prod = 1.0;
        for t in 0..k {
            prod *= a + t as f64;
        }
        prod.ln()
    } else {
        ln_gamma(a + k as f64) - ln_gamma(a)
    }
}

/// A weighted Multinomial-Dirichlet statistic (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct SoftMd {
    w: f64,
    total: f64,
    ln_norm: f64,
    words: Vec<(u32, f64)>,
}

impl SoftMd {
    /// Total weight absorbed.
    pub fn weight(&self) -> f64 {
        self.w
    }

    /// Weighted pooled counts `(word id, C_w)`, sorted by id, all > 0.
    pub fn words(&self) -> &[(u32, f64)] {
        &self.words
    }

    /// Weighted total count `N`.
    pub fn total(&self) -> f64 {
        self.total
    }
}

/// A document loaded for SVA: its words, counts, total and log multinomial coefficient.
#[derive(Clone, Debug, Default)]
pub struct MdPoint {
    ids: Vec<u32>,
    counts: Vec<u32>,
    total: u64,
    ln_coef: f64,
}

impl MdPoint {
    fn load(&mut self, ids: &[u32], counts: &[u32]) {
        self.ids.clear();
        self.ids.extend_from_slice(ids);
        self.counts.clear();
        self.counts.extend_from_slice(counts);
        self.total = counts.iter().map(|&c| c as u64).sum();
        let ln_fact: f64 = counts.iter().map(|&c| ln_gamma(c as f64 + 1.0)).sum();
        self.ln_coef = ln_gamma(self.total as f64 + 1.0) - ln_fact;
    }
}

/// The posterior of one component: the word distribution `φ ~ Dir(β + C_w)`, with the
/// mixture weight it carries. Words absent from `counts` have parameter β.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MdPosterior {
    /// Total responsibility `w_k` absorbed.
    pub weight: f64,
    /// The prior concentration β of every word.
    pub beta: f64,
    /// Vocabulary size V.
    pub vocab: usize,
    /// Weighted pooled counts `(word id, C_w)` of the words seen, sorted by id.
    pub counts: Vec<(u32, f64)>,
}

impl SvaKernel for MultinomialDirichlet {
    type Soft = SoftMd;
    type Point = MdPoint;
    type Posterior = MdPosterior;

    fn soft_empty(&self) -> Result<SoftMd> {
        Ok(SoftMd::default())
    }

    fn soft_weight(s: &SoftMd) -> f64 {
        s.w
    }

    fn new_point(&self) -> MdPoint {
        MdPoint::default()
    }

    /// Copies the document and computes its log multinomial coefficient. Cost: O(m) `ln Γ`.
    fn load_point(&self, i: usize, p: &mut MdPoint) {
        let (ids, counts) = self.data().row(i);
        p.load(ids, counts);
    }

    /// Errors if a word id is outside the kernel's vocabulary. Cost: O(m) `ln Γ`.
    fn load_new(&self, data: &SparseCounts, j: usize, p: &mut MdPoint) -> Result<()> {
        let (ids, counts) = data.row(j);
        let vocab = self.hyper().vocab();
        if let Some(&w) = ids.iter().find(|&&w| w as usize >= vocab) {
            return Err(Error::param(
                &format!("word id of new document {}", j + 1),
                w as usize + 1,
                &format!("a word of the model's vocabulary 1..={vocab}"),
            ));
        }
        p.load(ids, counts);
        Ok(())
    }

    /// The predictive of the module documentation. Each of the document's m words is found
    /// by binary search in the rest of the component's M sorted words. Cost: O(m log M) and
    /// 2 `ln Γ` plus one logarithm per word; no allocation.
    fn soft_ln_predictive(&self, p: &MdPoint, s: &SoftMd) -> f64 {
        let beta = self.hyper().beta();
        let v_beta = self.hyper().vocab() as f64 * beta;
        let mut acc =
            p.ln_coef + ln_gamma(v_beta + s.total) - ln_gamma(v_beta + s.total + p.total as f64);
        let mut lo = 0;
        for (&id, &y) in p.ids.iter().zip(&p.counts) {
            lo += s.words[lo..].partition_point(|&(w, _)| w < id);
            let c = match s.words.get(lo) {
                Some(&(w, c)) if w == id => c,
                _ => 0.0,
            };
            acc += ln_rising(beta + c, y as u64);
        }
        acc
    }

    /// Adds `ρ y_w` to each word's count: in place when every word is already present,
    /// otherwise by one backward merge into the grown vector. Cost: O(m log M) without new
    /// words, O(M + m) with.
    fn soft_add(&self, s: &mut SoftMd, p: &MdPoint, weight: f64) {
        let mut missing = 0;
        let mut lo = 0;
        for (&id, &y) in p.ids.iter().zip(&p.counts) {
            lo += s.words[lo..].partition_point(|&(w, _)| w < id);
            match s.words.get_mut(lo) {
                Some((w, c)) if *w == id => {
                    *c += weight * y as f64;
                }
                _ => missing += 1,
            }
        }
        if missing > 0 {
            // Present words were already bumped; only the new ones are inserted.
            let old = s.words.len();
            s.words.resize(old + missing, (0, 0.0));
            let (mut i, mut j, mut k) = (old, p.ids.len(), old + missing);
            while j > 0 {
                let id = p.ids[j - 1];
                if i > 0 && s.words[i - 1].0 > id {
                    k -= 1;
                    s.words[k] = s.words[i - 1];
                    i -= 1;
                } else if i > 0 && s.words[i - 1].0 == id {
                    k -= 1;
                    s.words[k] = s.words[i - 1];
                    i -= 1;
                    j -= 1;
                } else {
                    k -= 1;
                    s.words[k] = (id, weight * p.counts[j - 1] as f64);
                    j -= 1;
                }
            }
        }
        s.w += weight;
        s.total += weight * p.total as f64;
        s.ln_norm += weight * p.ln_coef;
    }

    /// Merge-join of the two count lists; the prior has no statistic of its own, so it is
    /// counted once. Cost: O(M_a + M_b).
    fn soft_merge(&self, a: &mut SoftMd, b: &SoftMd) {
        let mut words = Vec::with_capacity(a.words.len() + b.words.len());
        let (mut i, mut j) = (0, 0);
        while i < a.words.len() || j < b.words.len() {
            match (a.words.get(i), b.words.get(j)) {
                (Some(&(wa, ca)), Some(&(wb, cb))) if wa == wb => {
                    words.push((wa, ca + cb));
                    i += 1;
                    j += 1;
                }
                (Some(&x), Some(&(wb, _))) if x.0 < wb => {
                    words.push(x);
                    i += 1;
                }
                (Some(&x), None) => {
                    words.push(x);
                    i += 1;
                }
                (_, Some(&y)) => {
                    words.push(y);
                    j += 1;
                }
                (None, None) => break,
            }
        }
        a.words = words;
        a.w += b.w;
        a.total += b.total;
        a.ln_norm += b.ln_norm;
    }

    /// `Σ ρ_j ln (N_j; y_j) + ln Γ(Vβ) - ln Γ(Vβ + N) + Σ_w [ln Γ(β + C_w) - ln Γ(β)]` (MATH
    /// §2.2 with real counts). Cost: O(M) `ln Γ`.
    fn soft_ln_marginal(&self, s: &SoftMd) -> f64 {
        if s.w == 0.0 {
            return 0.0;
        }
        let beta = self.hyper().beta();
        let v_beta = self.hyper().vocab() as f64 * beta;
        let ln_gamma_beta = ln_gamma(beta);
        s.ln_norm + ln_gamma(v_beta) - ln_gamma(v_beta + s.total)
            + s.words
                .iter()
                .map(|&(_, c)| ln_gamma(beta + c) - ln_gamma_beta)
                .sum::<f64>()
    }

    /// Cost: O(M) (a copy of the counts).
    fn posterior(&self, s: &SoftMd) -> MdPosterior {
        MdPosterior {
            weight: s.w,
            beta: self.hyper().beta(),
            vocab: self.hyper().vocab(),
            counts: s.words.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rising_product_equals_ln_gamma_difference() {
        for &a in &[0.1, 0.7, 3.25, 120.5] {
            for k in [0u64, 1, 2, 7, 16, 17, 40] {
                let direct = ln_gamma(a + k as f64) - ln_gamma(a);
                assert!(
                    (ln_rising(a, k) - direct).abs() < 1e-11 * direct.abs().max(1.0),
                    "a = {a}, k = {k}"
                );
            }
        }
    }
}
