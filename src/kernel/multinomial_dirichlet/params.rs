//! Explicit component parameters of the Multinomial-Dirichlet kernel.

use rand::Rng;

use super::{MdStat, MultinomialDirichlet};
use crate::error::Result;
use crate::kernel::{ln_gamma_variate, ConjugateKernel, ParametricKernel};
use crate::math::ln_gamma;

/// A topic: log word probabilities `ln φ_w` over the whole vocabulary (they sum to one in
/// linear scale).
#[derive(Clone, Debug, PartialEq)]
pub struct MdParam {
    ln_phi: Vec<f64>,
}

impl MdParam {
    /// `ln φ_w` for every word id `w < V`.
    pub fn ln_phi(&self) -> &[f64] {
        &self.ln_phi
    }
}

impl ParametricKernel for MultinomialDirichlet {
    type Param = MdParam;
    /// The statistic itself: a document's word counts are already what the draw needs.
    type Moments = MdStat;

    fn new_moments(&self) -> MdStat {
        self.empty_stat()
    }

    fn moments_add(&self, m: &mut MdStat, i: usize) {
        self.add(m, i);
    }

    fn moments_merge(&self, a: &mut MdStat, b: &MdStat) {
        self.merge(a, b);
    }

    fn moments_count(&self, m: &MdStat) -> usize {
        m.len()
    }

    fn sample_moments<R: Rng + ?Sized>(
        &self,
        m: &MdStat,
        rng: &mut R,
        out: &mut MdParam,
    ) -> Result<()> {
        self.sample_posterior(m, rng, out)
    }

    fn new_param(&self) -> MdParam {
        MdParam {
            ln_phi: vec![0.0; self.hyper().vocab()],
        }
    }

    /// `φ ~ Dir(β + C_1, …, β + C_V)` (MATH §2.2) as normalised Gamma variates drawn in log
    /// space ([`ln_gamma_variate`]), so a tiny `β` cannot underflow a word to probability
    /// zero. Cost: O(V) Gamma draws.
    fn sample_posterior<R: Rng + ?Sized>(
        &self,
        s: &Self::Stat,
        rng: &mut R,
        out: &mut MdParam,
    ) -> Result<()> {
        let v = self.hyper().vocab();
        let beta = self.hyper().beta();
        out.ln_phi.resize(v, 0.0);
        let mut words = s.words().iter().peekable();
        for (w, slot) in out.ln_phi.iter_mut().enumerate() {
            let mut a = beta;
            if let Some(&&(id, c)) = words.peek() {
                if id as usize == w {
                    a += f64::from(c);
                    words.next();
                }
            }
            *slot = ln_gamma_variate(a, rng)?;
        }
        let total = crate::math::log_sum_exp(&out.ln_phi);
        for x in &mut out.ln_phi {
            *x -= total;
        }
        Ok(())
    }

    /// `ln [N_i! / Π_w y_iw!] + Σ_w y_iw ln φ_w` over the document's non-zero words.
    /// Cost: O(nnz of the document), no allocation.
    #[inline]
    fn ln_f(&self, i: usize, theta: &MdParam) -> f64 {
        let (ids, counts) = self.data().row(i);
        let mut acc = self.doc_ln_multinomial_coef(i);
        for (&w, &c) in ids.iter().zip(counts) {
            acc += f64::from(c) * theta.ln_phi[w as usize];
        }
        acc
    }

    /// `ln Γ(Vβ + N_S) - Σ_w ln Γ(β + C_w) + Σ_w (β + C_w - 1) ln φ_w`, with the sums over
    /// zero counts folded into `V ln Γ(β)` and `(β - 1) Σ_w ln φ_w`. Cost: O(V).
    fn ln_posterior_density(&self, s: &Self::Stat, theta: &MdParam) -> f64 {
        let v = self.hyper().vocab() as f64;
        let beta = self.hyper().beta();
        let sum_ln_phi: f64 = theta.ln_phi.iter().sum();
        let counts: f64 = s
            .words()
            .iter()
            .map(|&(w, c)| f64::from(c) * theta.ln_phi[w as usize])
            .sum();
        ln_gamma(v * beta + s.total() as f64) - v * ln_gamma(beta) - s.ln_word_term()
            + (beta - 1.0) * sum_ln_phi
            + counts
    }
}
