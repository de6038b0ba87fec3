//! The Multinomial-Dirichlet [`SweepCache`]: every cluster's word counts laid out densely
//! over the vocabulary, so that a document's predictive against a cluster is one lookup per
//! word of the document instead of a merge of two sorted word lists.
//!
//! With `T(k) = ln Γ(β + k) - ln Γ(β)` (so `T(0) = 0`), the predictive of document `y`
//! (total `n`, log multinomial coefficient `c_y`) given a cluster with counts `C` (total `N`)
//! is (MATH §2.2)
//!
//! `c_y + ln Γ(Vβ + N) - ln Γ(Vβ + N + n) + Σ_{w ∈ y} [T(C_w + y_w) - T(C_w)]`,
//!
//! the sum over the document's words only (a word the cluster lacks adds `T(y_w)`), and the
//! predictive of a member without itself, from the same counts, is
//! `c_y + ln Γ(Vβ + N - n) - ln Γ(Vβ + N) + Σ_{w ∈ y} [T(C_w) - T(C_w - y_w)]`.
//!
//! Each entry holds its counts in a row of `V` counts, with the list of the words it holds
//! (to clear the row when the entry changes); rows are reached through the entry's row index,
//! so inserting or removing an entry moves a few numbers per entry, never a row (a freed row
//! is cleared and reused). Setting an entry costs O(words of the old and the new statistic).
//! Memory: `4 V` bytes per row, so the kernel offers the cache only for vocabularies of at
//! most [`MAX_VOCAB`] words.

use std::sync::Arc;

use super::multinomial_dirichlet::{MdStat, MultinomialDirichlet};
use super::sweep_cache::{EntryTerms, SweepCache, BLOCK};
use crate::data::SparseCounts;
use crate::math::ln_gamma;

/// The largest vocabulary the kernel offers a sweep cache for: a row of counts is then at
/// most 256 KiB.
pub(crate) const MAX_VOCAB: usize = 1 << 16;

/// Marks a slot without an entry.
const NO_ENTRY: usize = usize::MAX;

/// The Multinomial-Dirichlet sweep cache (see the module documentation).
#[derive(Debug)]
pub(crate) struct MdSweepCache {
    data: Arc<SparseCounts>,
    vocab: usize,
    beta: f64,
    ln_gamma_beta: f64,
    v_beta: f64,
    /// `T(k)` for small `k` (the kernel's table).
    word_table: Arc<[f64]>,
    /// Each data document's log multinomial coefficient and total.
    doc_norm: Arc<[(f64, u64)]>,
    /// Cluster entries; the new cluster's follows them.
    entries: usize,
    entry_of: Vec<usize>,
    slot_at: Vec<usize>,
    /// Row-major counts, `counts[r · vocab + w]` for row `r`.
    counts: Vec<u32>,
    /// Each row's word ids (its non-zero columns).
    ids: Vec<Vec<u32>>,
    /// Rows without an entry (all zero).
    free_rows: Vec<usize>,
    /// Each entry's row, total count `N`, `ln Γ(Vβ + N)`, statistic size, join term and
    /// member term.
    row: Vec<usize>,
    total: Vec<u64>,
    ln_gamma_total: Vec<f64>,
    size: Vec<usize>,
    join: Vec<f64>,
    member_join: Vec<f64>,
    /// The new cluster's join term.
    new_join: f64,
    /// The last point weighed by `weigh`, and the points of the last block.
    last: usize,
    block: [usize; BLOCK],
}

impl MdSweepCache {
    pub(crate) fn new(kernel: &MultinomialDirichlet) -> Self {
        let data = kernel.data().clone();
        let doc_norm: Arc<[(f64, u64)]> = (0..data.n())
            .map(|i| {
                let (_, counts) = data.row(i);
                (
                    kernel.doc_ln_multinomial_coef(i),
                    counts.iter().map(|&c| u64::from(c)).sum(),
                )
            })
            .collect();
        let beta = kernel.hyper().beta();
        let vocab = kernel.hyper().vocab();
        MdSweepCache {
            data,
            vocab,
            beta,
            ln_gamma_beta: ln_gamma(beta),
            v_beta: vocab as f64 * beta,
            word_table: kernel.word_table().clone(),
            doc_norm,
            entries: 0,
            entry_of: Vec::new(),
            slot_at: Vec::new(),
            counts: Vec::new(),
            ids: Vec::new(),
            free_rows: Vec::new(),
            row: Vec::new(),
            total: Vec::new(),
            ln_gamma_total: Vec::new(),
            size: Vec::new(),
            join: Vec::new(),
            member_join: Vec::new(),
            new_join: f64::NEG_INFINITY,
            last: 0,
            block: [0; BLOCK],
        }
    }

    /// `T(k)`, from the table when `k` is small.
    #[inline]
    fn t(&self, k: u32) -> f64 {
        match self.word_table.get(k as usize) {
            Some(&v) => v,
            None => ln_gamma(self.beta + f64::from(k)) - self.ln_gamma_beta,
        }
    }

    /// Entry `e`'s counts.
    #[inline]
    fn counts_of(&self, e: usize) -> &[u32] {
        let r = self.row[e];
        &self.counts[r * self.vocab..(r + 1) * self.vocab]
    }

    /// The weight of data point `i` against entry `e` (cluster entries only).
    fn weight(&self, i: usize, e: usize) -> f64 {
        let (ids, counts) = self.data.row(i);
        let (c_y, n) = self.doc_norm[i];
        let row = self.counts_of(e);
        let mut words = 0.0;
        for (&w, &y) in ids.iter().zip(counts) {
            let c = row[w as usize];
            words += self.t(c + y) - self.t(c);
        }
        let big_n = self.total[e] as f64;
        self.join[e] + c_y + self.ln_gamma_total[e] - ln_gamma(self.v_beta + big_n + n as f64)
            + words
    }

    /// The weight of data point `i` against the new cluster's (empty) entry.
    fn new_weight(&self, i: usize) -> f64 {
        let (ids, counts) = self.data.row(i);
        let (c_y, n) = self.doc_norm[i];
        let words: f64 = counts.iter().zip(ids).map(|(&y, _)| self.t(y)).sum();
        self.new_join + c_y + ln_gamma(self.v_beta) - ln_gamma(self.v_beta + n as f64) + words
    }

    /// The weight of member `i` of entry `e` without itself, or `None` when the entry's
    /// cluster has fewer than two points.
    fn member_weight(&self, i: usize, e: usize) -> Option<f64> {
        if self.size[e] < 2 || self.member_join[e].is_nan() {
            return None;
        }
        let (ids, counts) = self.data.row(i);
        let (c_y, n) = self.doc_norm[i];
        let row = self.counts_of(e);
        let mut words = 0.0;
        for (&w, &y) in ids.iter().zip(counts) {
            let c = row[w as usize];
            debug_assert!(c >= y, "point {i} is not a member of entry {e}");
            words += self.t(c) - self.t(c - y);
        }
        let big_n = self.total[e] as f64;
        Some(
            self.member_join[e] + c_y + ln_gamma(self.v_beta + big_n - n as f64)
                - self.ln_gamma_total[e]
                + words,
        )
    }

    /// Clears row `r` (the words it holds).
    fn clear_row(&mut self, r: usize) {
        let row = &mut self.counts[r * self.vocab..(r + 1) * self.vocab];
        for &w in &self.ids[r] {
            row[w as usize] = 0;
        }
        self.ids[r].clear();
    }

    /// A clear row: a freed one, or a new one.
    fn take_row(&mut self) -> usize {
        self.free_rows.pop().unwrap_or_else(|| {
            self.counts.resize(self.counts.len() + self.vocab, 0);
            self.ids.push(Vec::new());
            self.ids.len() - 1
        })
    }

    /// Writes `stat` and `terms` into entry `e`, whose row is clear.
    fn write(&mut self, e: usize, stat: &MdStat, terms: EntryTerms) {
        let r = self.row[e];
        let row = &mut self.counts[r * self.vocab..(r + 1) * self.vocab];
        for &(w, c) in stat.words() {
            row[w as usize] = c;
        }
        self.ids[r].extend(stat.words().iter().map(|&(w, _)| w));
        self.total[e] = stat.total();
        self.ln_gamma_total[e] = ln_gamma(self.v_beta + stat.total() as f64);
        self.size[e] = stat.len();
        self.join[e] = terms.join;
        self.member_join[e] = terms.member;
    }

    /// Records the entries of the slots from entry `from` on.
    fn renumber(&mut self, from: usize) {
        for (e, &slot) in self.slot_at.iter().enumerate().skip(from) {
            self.entry_of[slot] = e;
        }
    }
}

impl SweepCache<MdStat> for MdSweepCache {
    fn reset(&mut self) {
        for e in 0..self.entries {
            let r = self.row[e];
            self.clear_row(r);
            self.free_rows.push(r);
        }
        self.row.clear();
        self.total.clear();
        self.ln_gamma_total.clear();
        self.size.clear();
        self.join.clear();
        self.member_join.clear();
        self.entries = 0;
        self.entry_of.clear();
        self.slot_at.clear();
    }

    fn set(&mut self, slot: usize, entry: Option<(&MdStat, EntryTerms)>) {
        let e = self.entry_of.get(slot).copied().unwrap_or(NO_ENTRY);
        match entry {
            Some((stat, terms)) => {
                let e = if e == NO_ENTRY {
                    if slot >= self.entry_of.len() {
                        self.entry_of.resize(slot + 1, NO_ENTRY);
                    }
                    let e = self.slot_at.partition_point(|&s| s < slot);
                    self.entries += 1;
                    let r = self.take_row();
                    self.row.insert(e, r);
                    self.total.insert(e, 0);
                    self.ln_gamma_total.insert(e, 0.0);
                    self.size.insert(e, 0);
                    self.join.insert(e, f64::NEG_INFINITY);
                    self.member_join.insert(e, f64::NAN);
                    self.slot_at.insert(e, slot);
                    self.renumber(e);
                    e
                } else {
                    self.clear_row(self.row[e]);
                    e
                };
                self.write(e, stat, terms);
            }
            None if e != NO_ENTRY => {
                // The entry's row is cleared and freed; the entries after it move forward.
                let r = self.row.remove(e);
                self.clear_row(r);
                self.free_rows.push(r);
                self.entry_of[slot] = NO_ENTRY;
                self.total.remove(e);
                self.ln_gamma_total.remove(e);
                self.size.remove(e);
                self.join.remove(e);
                self.member_join.remove(e);
                self.entries -= 1;
                self.slot_at.remove(e);
                self.renumber(e);
            }
            None => {}
        }
    }

    fn set_new(&mut self, empty: &MdStat, ln_a: f64) {
        debug_assert!(empty.is_empty());
        self.new_join = ln_a;
    }

    fn entries(&self) -> usize {
        self.entries
    }

    fn entry_slots(&self) -> &[usize] {
        &self.slot_at
    }

    fn entry_of(&self, slot: usize) -> Option<usize> {
        self.entry_of.get(slot).copied().filter(|&e| e != NO_ENTRY)
    }

    fn weigh(&mut self, i: usize, out: &mut Vec<f64>) {
        out.clear();
        out.extend((0..self.entries).map(|e| self.weight(i, e)));
        out.push(self.new_weight(i));
        self.last = i;
    }

    fn weigh_block(&mut self, points: &[usize], out: &mut Vec<f64>) {
        debug_assert!(!points.is_empty() && points.len() <= BLOCK);
        out.resize((self.entries + 1) * BLOCK, 0.0);
        for b in 0..BLOCK {
            // Lanes past the block repeat its first point: finite values, never read.
            let i = points.get(b).copied().unwrap_or(points[0]);
            self.block[b] = i;
            for e in 0..self.entries {
                out[e * BLOCK + b] = self.weight(i, e);
            }
            out[self.entries * BLOCK + b] = self.new_weight(i);
        }
    }

    fn member(&self, entry: usize) -> Option<f64> {
        self.member_weight(self.last, entry)
    }

    fn block_members(&self, slots: &[usize], own: &mut [usize; BLOCK], out: &mut [f64; BLOCK]) {
        debug_assert!(slots.len() <= BLOCK);
        out.fill(f64::NAN);
        for (b, &slot) in slots.iter().enumerate() {
            let e = self.entry_of[slot];
            debug_assert_ne!(e, NO_ENTRY, "slot {slot} has no entry");
            own[b] = e;
            out[b] = self.member_weight(self.block[b], e).unwrap_or(f64::NAN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ConjugateKernel;

    /// Every entry weighs as `ln_a + ln_predictive`, and a member without itself as
    /// `b + ln_predictive` of its cluster without it, to rounding: entries in slot order
    /// whatever the order their slots were set in, none for a removed one, re-set entries
    /// (a row cleared and rewritten), a freed row reused, the new cluster last, and a block the same as single
    /// points.
    #[test]
    fn weights_are_the_kernels_predictives() {
        let docs: Vec<Vec<(u32, u32)>> = (0..24u32)
            .map(|i| {
                (0..5u32)
                    .filter(|w| (i + w) % 3 != 0)
                    .map(|w| ((w * 7 + i) % 40, 1 + (i * w) % 4))
                    .collect::<std::collections::BTreeMap<_, _>>()
                    .into_iter()
                    .collect()
            })
            .collect();
        let data = Arc::new(SparseCounts::from_rows(40, &docs).unwrap());
        let kernel = MultinomialDirichlet::new(data, 0.3).unwrap();
        let members = |c: usize| -> Vec<usize> { (0..24).filter(|i| i % 6 == c).collect() };
        let stats: Vec<MdStat> = (0..6).map(|c| kernel.stat_of(&members(c))).collect();
        let mut cache = kernel.sweep_cache().unwrap();
        cache.reset();
        cache.set_new(&kernel.empty_stat(), -0.75);
        let terms = |c: usize| EntryTerms {
            join: 0.1 * c as f64,
            member: -0.2 * c as f64,
        };
        for c in (0..6).rev() {
            cache.set(3 * c, Some((&stats[0], terms(0))));
            cache.set(3 * c, Some((&stats[c], terms(c))));
        }
        // Slot 6 (statistic 2) removed, its row reused by slot 1.
        cache.set(6, None);
        assert_eq!(cache.entry_of(6), None);
        cache.set(1, Some((&stats[2], terms(2))));
        assert_eq!(cache.entry_slots(), &[0, 1, 3, 9, 12, 15]);
        let stat_of = [0usize, 2, 1, 3, 4, 5];
        let slot_of = |c: usize| if c == 2 { 1 } else { 3 * c };
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-10 * b.abs().max(1.0);
        let mut w = Vec::new();
        let mut block = Vec::new();
        for i in 0..24 {
            cache.weigh(i, &mut w);
            assert_eq!(w.len(), 7);
            for (e, &c) in stat_of.iter().enumerate() {
                let want = terms(c).join + kernel.ln_predictive(i, &stats[c]);
                assert!(
                    close(w[e], want),
                    "point {i}, entry {e}: {} vs {want}",
                    w[e]
                );
                let member = cache.member(e);
                if i % 6 == c {
                    let mut without = stats[c].clone();
                    kernel.remove(&mut without, i);
                    let want = terms(c).member + kernel.ln_predictive(i, &without);
                    assert!(close(member.unwrap(), want), "member {i} of entry {e}");
                }
            }
            let want = -0.75 + kernel.ln_predictive(i, &kernel.empty_stat());
            assert!(close(w[6], want), "point {i}, new cluster");
            cache.weigh_block(&[i, (i + 1) % 24], &mut block);
            for (e, &x) in w.iter().enumerate() {
                assert_eq!(block[e * BLOCK].to_bits(), x.to_bits());
            }
            {
                let slot = slot_of(i % 6);
                let mut own = [0; BLOCK];
                let mut out = [0.0; BLOCK];
                cache.block_members(&[slot], &mut own, &mut out);
                assert_eq!(own[0], cache.entry_of(slot).unwrap());
                assert_eq!(out[0].to_bits(), cache.member(own[0]).unwrap().to_bits());
            }
        }
    }
}
