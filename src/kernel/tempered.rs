//! A kernel's likelihood tempered by an inverse temperature `β ∈ (0, 1]`: [`Tempered`] wraps
//! any [`ConjugateKernel`] and multiplies every log marginal and log predictive by `β`, so
//! that every collapsed move built on the kernel targets the tempered posterior
//! `π_β(Π) ∝ p(Π) Π_c m(X_c)^β` unchanged (MATH §6.6, parallel tempering).
//!
//! **Why the collapsed moves need no change.** Collapsed Gibbs, SAMS, Jain-Neal and TG-SAMS
//! reach the data only through the kernel's statistics (`add`, `remove`, `merge`, `stat_of`)
//! and through `ln m` and its differences (`ln_marginal`, `ln_marginal_pair`, the
//! predictives and the sweep cache's weights); the partition's cached `ln m(X_c)` is the
//! kernel's `ln_marginal` too. Statistics are delegated unchanged and every log-likelihood
//! quantity is `β` times the inner kernel's, so each move's weights and acceptance ratios are
//! those of the tempered target: `β ln m(X_c)` takes the place of `ln m(X_c)` everywhere, and
//! the prior's weights are untouched. Checked by enumeration for every collapsed move
//! (`tests/tempering_exact.rs`).
//!
//! **What it refuses.** A kernel with latent values (the product kernel's full-covariance
//! block over rows with missing entries): its redraw of the missing values is a Gibbs step of
//! the untempered joint, which the wrapper would not temper ([`Tempered::new`] errors). The
//! samplers that draw component parameters (the sub-cluster and direct samplers) weigh points
//! by densities given parameters, not by marginals; they are refused by the ladder's schedule
//! (`SamplerSettings::collapsed_schedule`).

use super::sweep_cache::{EntryTerms, SweepCache, BLOCK};
use super::{ConjugateKernel, Probe};
use crate::error::{Error, Result};

/// `inner`'s likelihood raised to the power `β` (see the module documentation). Its
/// statistics are the inner kernel's; a partition over it caches `β ln m(X_c)`.
#[derive(Clone, Debug)]
pub struct Tempered<K> {
    inner: K,
    beta: f64,
}

impl<K: ConjugateKernel> Tempered<K> {
    /// `inner` at inverse temperature `beta`. Errors unless `0 < beta ≤ 1`, or if the kernel
    /// holds latent values. Cost: O(1).
    pub fn new(inner: K, beta: f64) -> Result<Self> {
        if !(beta > 0.0 && beta <= 1.0) {
            return Err(Error::param(
                "temperatures",
                beta,
                "inverse temperatures in (0, 1]",
            ));
        }
        if inner.has_latent() {
            return Err(Error::Usage(
                "tempering: the kernel draws missing real entries inside the sweep (the mixed \
                 block over rows with missing values), a step of the untempered joint; run \
                 without `temperatures`, or with independent real columns"
                    .into(),
            ));
        }
        Ok(Tempered { inner, beta })
    }

    /// The inverse temperature `β`.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The untempered kernel.
    pub fn inner(&self) -> &K {
        &self.inner
    }
}

impl<K: ConjugateKernel> ConjugateKernel for Tempered<K> {
    type Stat = K::Stat;

    fn n_points(&self) -> usize {
        self.inner.n_points()
    }

    fn empty_stat(&self) -> K::Stat {
        self.inner.empty_stat()
    }

    fn stat_of(&self, points: &[usize]) -> K::Stat {
        self.inner.stat_of(points)
    }

    fn stat_of_compact(&self, points: &[u32]) -> K::Stat {
        self.inner.stat_of_compact(points)
    }

    fn count(&self, s: &K::Stat) -> usize {
        self.inner.count(s)
    }

    fn add(&self, s: &mut K::Stat, i: usize) {
        self.inner.add(s, i)
    }

    fn remove(&self, s: &mut K::Stat, i: usize) {
        self.inner.remove(s, i)
    }

    fn merge(&self, a: &mut K::Stat, b: &K::Stat) {
        self.inner.merge(a, b)
    }

    fn ln_marginal(&self, s: &K::Stat) -> f64 {
        self.beta * self.inner.ln_marginal(s)
    }

    fn ln_marginal_pair(&self, a: &K::Stat, b: &K::Stat) -> f64 {
        self.beta * self.inner.ln_marginal_pair(a, b)
    }

    fn ln_predictive(&self, i: usize, s: &K::Stat) -> f64 {
        self.beta * self.inner.ln_predictive(i, s)
    }

    /// `β` times the inner bound: still a bound, since `β > 0` and rounding is monotone.
    fn ln_predictive_max(&self, s: &K::Stat) -> f64 {
        self.beta * self.inner.ln_predictive_max(s)
    }

    fn ln_predictive_probed(&self, i: usize, s: &K::Stat) -> (f64, Probe) {
        let (lp, probe) = self.inner.ln_predictive_probed(i, s);
        (self.beta * lp, probe)
    }

    fn add_probed(&self, s: &mut K::Stat, i: usize, probe: &Probe) {
        self.inner.add_probed(s, i, probe)
    }

    fn ln_predictive_member(&self, i: usize, s: &K::Stat) -> Option<f64> {
        self.inner
            .ln_predictive_member(i, s)
            .map(|lp| self.beta * lp)
    }

    fn ln_predictive_pair(&self, i: usize, a: &K::Stat, b: &K::Stat) -> [(f64, Probe); 2] {
        self.inner
            .ln_predictive_pair(i, a, b)
            .map(|(lp, probe)| (self.beta * lp, probe))
    }

    fn ln_predictive_member_pair(
        &self,
        i: usize,
        own: &K::Stat,
        other: &K::Stat,
    ) -> (Option<f64>, (f64, Probe)) {
        let (member, (lp, probe)) = self.inner.ln_predictive_member_pair(i, own, other);
        (member.map(|m| self.beta * m), (self.beta * lp, probe))
    }

    fn sweep_cache(&self) -> Option<Box<dyn SweepCache<K::Stat>>> {
        let inner = self.inner.sweep_cache()?;
        Some(Box::new(TemperedCache {
            inner,
            beta: self.beta,
            join: Vec::new(),
            member: Vec::new(),
            new_join: 0.0,
        }))
    }
}

/// The inner kernel's [`SweepCache`] with its entries' additive terms held outside it: the
/// inner cache weighs with terms 0 (NaN member terms kept NaN, so that it declines the same
/// members), which gives `ln p` itself, and each weight is `a_e + β ln p`.
struct TemperedCache<S> {
    inner: Box<dyn SweepCache<S>>,
    beta: f64,
    /// Each slot's join term (NaN for a slot without an entry).
    join: Vec<f64>,
    /// Each slot's member term.
    member: Vec<f64>,
    /// The new cluster's term.
    new_join: f64,
}

impl<S> std::fmt::Debug for TemperedCache<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemperedCache")
            .field("inner", &self.inner)
            .field("beta", &self.beta)
            .finish_non_exhaustive()
    }
}

impl<S> TemperedCache<S> {
    /// `a + β w` for every entry's weight `w` in `out` (a weight per entry and the new
    /// cluster's, `lanes` values each).
    fn temper(&self, out: &mut [f64], lanes: usize) {
        let slots = self.inner.entry_slots();
        for (e, group) in out.chunks_mut(lanes).enumerate() {
            let a = match slots.get(e) {
                Some(&slot) => self.join[slot],
                None => self.new_join,
            };
            for w in group {
                *w = a + self.beta * *w;
            }
        }
    }
}

impl<S: 'static> SweepCache<S> for TemperedCache<S> {
    fn reset(&mut self) {
        self.inner.reset();
        self.join.clear();
        self.member.clear();
    }

    fn set(&mut self, slot: usize, entry: Option<(&S, EntryTerms)>) {
        match entry {
            Some((stat, terms)) => {
                if slot >= self.join.len() {
                    self.join.resize(slot + 1, f64::NAN);
                    self.member.resize(slot + 1, f64::NAN);
                }
                self.join[slot] = terms.join;
                self.member[slot] = terms.member;
                let bare = EntryTerms {
                    join: 0.0,
                    member: if terms.member.is_nan() { f64::NAN } else { 0.0 },
                };
                self.inner.set(slot, Some((stat, bare)));
            }
            None => self.inner.set(slot, None),
        }
    }

    fn set_new(&mut self, empty: &S, ln_a: f64) {
        self.new_join = ln_a;
        self.inner.set_new(empty, 0.0);
    }

    fn entries(&self) -> usize {
        self.inner.entries()
    }

    fn entry_slots(&self) -> &[usize] {
        self.inner.entry_slots()
    }

    fn entry_of(&self, slot: usize) -> Option<usize> {
        self.inner.entry_of(slot)
    }

    fn weigh(&mut self, i: usize, out: &mut Vec<f64>) {
        self.inner.weigh(i, out);
        self.temper(out, 1);
    }

    fn weigh_block(&mut self, points: &[usize], out: &mut Vec<f64>) {
        self.inner.weigh_block(points, out);
        self.temper(out, BLOCK);
    }

    fn member(&self, entry: usize) -> Option<f64> {
        let slot = self.inner.entry_slots()[entry];
        self.inner
            .member(entry)
            .map(|w| self.member[slot] + self.beta * w)
    }

    fn block_members(&self, slots: &[usize], own: &mut [usize; BLOCK], out: &mut [f64; BLOCK]) {
        self.inner.block_members(slots, own, out);
        for (b, &slot) in slots.iter().enumerate() {
            out[b] = self.member[slot] + self.beta * out[b];
        }
    }
}
