//! Running pairwise sums for the merge test of SVA-PM (MATH §6.5).
//!
//! The merge distance of components k and l after i points is
//! `d_ρ(k, l) = (1/i) Σ_{j≤i} |ρ_j(k) - ρ_j(l)|`. Since `|a - b| = a + b - 2 min(a, b)` and the
//! weight of a component is `W_k = Σ_j ρ_j(k)`, it equals
//! `(W_k + W_l - 2 S(k, l)) / i` with `S(k, l) = Σ_j min(ρ_j(k), ρ_j(l))`. A point adds to
//! `S` only for pairs whose responsibilities are both non-zero, and after the truncation of
//! negligible responsibilities that is one pair or none for most points, so keeping every
//! `S(k, l)` costs O(m²) per point for m non-zero responsibilities instead of O(K²), and no
//! responsibility history is stored.

/// The symmetric matrix `S(k, l)` over the live components, indexed like them.
#[derive(Clone, Debug, Default)]
pub(crate) struct PairSums {
    k: usize,
    cap: usize,
    s: Vec<f64>,
}

impl PairSums {
    /// Appends a component with no shared history. Amortised O(K) (O(K²) when the capacity
    /// doubles).
    pub(crate) fn push(&mut self) {
        if self.k == self.cap {
            let cap = (2 * self.cap).max(8);
            let mut s = vec![0.0; cap * cap];
            for a in 0..self.k {
                s[a * cap..a * cap + self.k]
                    .copy_from_slice(&self.s[a * self.cap..a * self.cap + self.k]);
            }
            self.s = s;
            self.cap = cap;
        }
        let k = self.k;
        for a in 0..=k {
            self.s[a * self.cap + k] = 0.0;
            self.s[k * self.cap + a] = 0.0;
        }
        self.k += 1;
    }

    /// `S(a, b)`.
    pub(crate) fn get(&self, a: usize, b: usize) -> f64 {
        self.s[a * self.cap + b]
    }

    /// Adds `v` to `S(a, b)` (a ≠ b).
    pub(crate) fn add(&mut self, a: usize, b: usize, v: f64) {
        self.s[a * self.cap + b] += v;
        self.s[b * self.cap + a] += v;
    }

    fn set(&mut self, a: usize, b: usize, v: f64) {
        self.s[a * self.cap + b] = v;
        self.s[b * self.cap + a] = v;
    }

    /// Removes component `k`, moving the last one into its place (as `Vec::swap_remove`).
    /// Cost: O(K).
    pub(crate) fn swap_remove(&mut self, k: usize) {
        let last = self.k - 1;
        if k != last {
            for a in 0..last {
                if a != k {
                    let v = self.get(last, a);
                    self.set(k, a, v);
                }
            }
            self.set(k, k, 0.0);
        }
        self.k -= 1;
    }

    /// Folds component `from` into `into` (before `from` is removed): for every other l,
    /// `S(into ∪ from, l)` is taken as `S(into, l) + S(from, l)`, capped by the weights, the
    /// exact value when at each point at most one of `into`, `from` and l had a non-zero
    /// responsibility and an upper bound otherwise (`min(a + b, c) ≤ min(a, c) + min(b, c)`).
    /// `weights` are the components' weights after the merge. Cost: O(K).
    pub(crate) fn absorb(&mut self, into: usize, from: usize, weights: &[f64]) {
        for l in 0..self.k {
            if l == into || l == from {
                continue;
            }
            let v = (self.get(into, l) + self.get(from, l))
                .min(weights[l])
                .min(weights[into]);
            self.set(into, l, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_grow_and_swap_remove_keep_entries_aligned() {
        let mut p = PairSums::default();
        for _ in 0..10 {
            p.push();
        }
        for a in 0..10 {
            for b in 0..10 {
                if a != b && a < b {
                    p.add(a, b, (10 * a + b) as f64);
                }
            }
        }
        // Component 9 moves into slot 3.
        p.swap_remove(3);
        assert_eq!(p.get(3, 0), 9.0);
        assert_eq!(p.get(0, 3), 9.0);
        assert_eq!(p.get(3, 5), 59.0);
        assert_eq!(p.get(1, 2), 12.0);
        p.push();
        assert_eq!(p.get(9, 3), 0.0);
        assert_eq!(p.get(3, 9), 0.0);
    }

    #[test]
    fn absorb_adds_rows_capped_by_the_weights() {
        let mut p = PairSums::default();
        for _ in 0..3 {
            p.push();
        }
        p.add(0, 2, 1.5);
        p.add(1, 2, 2.0);
        p.absorb(0, 1, &[10.0, 0.0, 3.0]);
        assert_eq!(p.get(0, 2), 3.0);
    }
}
