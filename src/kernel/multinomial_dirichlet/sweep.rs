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

use super::{MdStat, MultinomialDirichlet};
use crate::kernel::sweep_cache::{EntrySlots, EntryTerms, SweepCache, BLOCK};
use crate::math::ln_gamma;

/// The largest vocabulary the kernel offers a sweep cache for: a row of counts is then at
/// most 256 KiB.
pub(crate) const MAX_VOCAB: usize = 1 << 16;

/// One cluster entry: its row of counts, total count `N` with `ln Γ(Vβ + N)`, size, and
/// join and member terms.
#[derive(Clone, Copy, Debug)]
struct Entry {
    row: usize,
    total: u64,
    ln_gamma_total: f64,
    size: usize,
    join: f64,
    member: f64,
}

/// The Multinomial-Dirichlet sweep cache (see the module documentation).
#[derive(Debug)]
pub(crate) struct MdSweepCache {
    /// The kernel (its data, word table and per-document terms are shared, not copied).
    kernel: MultinomialDirichlet,
    vocab: usize,
    /// The cluster entries' slots; the new cluster's entry follows them.
    slots: EntrySlots,
    entries: Vec<Entry>,
    /// Row-major counts, `counts[r · vocab + w]` for row `r`.
    counts: Vec<u32>,
    /// Each row's word ids (its non-zero columns).
    ids: Vec<Vec<u32>>,
    /// Rows without an entry (all zero).
    free_rows: Vec<usize>,
    /// The new cluster's join term.
    new_join: f64,
    /// The last point weighed by `weigh`, and the points of the last block.
    last: usize,
    block: [usize; BLOCK],
}

impl MdSweepCache {
    pub(crate) fn new(kernel: &MultinomialDirichlet) -> Self {
        MdSweepCache {
            kernel: kernel.clone(),
            vocab: kernel.hyper().vocab(),
            slots: EntrySlots::default(),
            entries: Vec::new(),
            counts: Vec::new(),
            ids: Vec::new(),
            free_rows: Vec::new(),
            new_join: f64::NEG_INFINITY,
            last: 0,
            block: [0; BLOCK],
        }
    }

    /// `Σ_{w ∈ y_i} term(C_w, y_w)` over document `i`'s words against entry `e`'s counts.
    #[inline]
    fn word_sum(&self, i: usize, e: usize, term: impl Fn(u64, u64) -> f64) -> f64 {
        let (ids, counts) = self.kernel.data().row(i);
        let r = self.entries[e].row;
        let row = &self.counts[r * self.vocab..(r + 1) * self.vocab];
        ids.iter()
            .zip(counts)
            .map(|(&w, &y)| term(u64::from(row[w as usize]), u64::from(y)))
            .sum()
    }

    /// The weight of data point `i` against entry `e` (cluster entries only).
    fn weight(&self, i: usize, e: usize) -> f64 {
        let k = &self.kernel;
        let (n, c_y, _) = k.doc_terms_of(i);
        let words = self.word_sum(i, e, |c, y| k.t(c + y) - k.t(c));
        let x = &self.entries[e];
        x.join + c_y + x.ln_gamma_total - ln_gamma(k.v_beta() + (x.total + n) as f64) + words
    }

    /// The weight of member `i` of entry `e` without itself, or `None` when the entry's
    /// cluster has fewer than two points.
    fn member_weight(&self, i: usize, e: usize) -> Option<f64> {
        let x = &self.entries[e];
        if x.size < 2 || x.member.is_nan() {
            return None;
        }
        let k = &self.kernel;
        let (n, c_y, _) = k.doc_terms_of(i);
        let words = self.word_sum(i, e, |c, y| {
            debug_assert!(c >= y, "point {i} is not a member of entry {e}");
            k.t(c) - k.t(c - y)
        });
        Some(
            x.member + c_y + ln_gamma(k.v_beta() + (x.total - n) as f64) - x.ln_gamma_total + words,
        )
    }

    /// The weight of data point `i` against the new cluster's (empty) entry.
    fn new_weight(&self, i: usize) -> f64 {
        let k = &self.kernel;
        let (n, c_y, ln_word) = k.doc_terms_of(i);
        self.new_join + c_y + k.ln_gamma_v_beta() - ln_gamma(k.v_beta() + n as f64) + ln_word
    }

    /// Clears row `r` (the words it holds) and frees it.
    fn free_row(&mut self, r: usize) {
        let row = &mut self.counts[r * self.vocab..(r + 1) * self.vocab];
        for &w in &self.ids[r] {
            row[w as usize] = 0;
        }
        self.ids[r].clear();
        self.free_rows.push(r);
    }

    /// A clear row: a freed one, or a new one.
    fn take_row(&mut self) -> usize {
        self.free_rows.pop().unwrap_or_else(|| {
            self.counts.resize(self.counts.len() + self.vocab, 0);
            self.ids.push(Vec::new());
            self.ids.len() - 1
        })
    }

    /// An entry for `stat` with `terms` in a clear row.
    fn entry(&mut self, stat: &MdStat, terms: EntryTerms) -> Entry {
        let r = self.take_row();
        let row = &mut self.counts[r * self.vocab..(r + 1) * self.vocab];
        for &(w, c) in stat.words() {
            row[w as usize] = c;
        }
        self.ids[r].extend(stat.words().iter().map(|&(w, _)| w));
        Entry {
            row: r,
            total: stat.total(),
            ln_gamma_total: ln_gamma(self.kernel.v_beta() + stat.total() as f64),
            size: stat.len(),
            join: terms.join,
            member: terms.member,
        }
    }
}

impl SweepCache<MdStat> for MdSweepCache {
    fn reset(&mut self) {
        for e in std::mem::take(&mut self.entries) {
            self.free_row(e.row);
        }
        self.slots.clear();
    }

    fn set(&mut self, slot: usize, entry: Option<(&MdStat, EntryTerms)>) {
        match entry {
            Some((stat, terms)) => {
                let new = self.entry(stat, terms);
                if let Some(e) = self.slots.entry(slot) {
                    let old = std::mem::replace(&mut self.entries[e], new);
                    self.free_row(old.row);
                } else {
                    let e = self.slots.insert(slot);
                    self.entries.insert(e, new);
                }
            }
            None => {
                if let Some(e) = self.slots.remove(slot) {
                    let old = self.entries.remove(e);
                    self.free_row(old.row);
                }
            }
        }
    }

    fn set_new(&mut self, empty: &MdStat, ln_a: f64) {
        debug_assert!(empty.is_empty());
        self.new_join = ln_a;
    }

    fn entries(&self) -> usize {
        self.entries.len()
    }

    fn entry_slots(&self) -> &[usize] {
        self.slots.slots()
    }

    fn entry_of(&self, slot: usize) -> Option<usize> {
        self.slots.entry(slot)
    }

    fn weigh(&mut self, i: usize, out: &mut Vec<f64>) {
        out.clear();
        out.extend((0..self.entries.len()).map(|e| self.weight(i, e)));
        out.push(self.new_weight(i));
        self.last = i;
    }

    fn weigh_block(&mut self, points: &[usize], out: &mut Vec<f64>) {
        debug_assert!(!points.is_empty() && points.len() <= BLOCK);
        let entries = self.entries.len();
        out.resize((entries + 1) * BLOCK, 0.0);
        for b in 0..BLOCK {
            // Lanes past the block repeat its first point: finite values, never read.
            let i = points.get(b).copied().unwrap_or(points[0]);
            self.block[b] = i;
            for e in 0..entries {
                out[e * BLOCK + b] = self.weight(i, e);
            }
            out[entries * BLOCK + b] = self.new_weight(i);
        }
    }

    fn member(&self, entry: usize) -> Option<f64> {
        self.member_weight(self.last, entry)
    }

    fn block_members(&self, slots: &[usize], own: &mut [usize; BLOCK], out: &mut [f64; BLOCK]) {
        debug_assert!(slots.len() <= BLOCK);
        out.fill(f64::NAN);
        for (b, &slot) in slots.iter().enumerate() {
            let e = self.slots.entry(slot).expect("a slot with an entry");
            own[b] = e;
            out[b] = self.member_weight(self.block[b], e).unwrap_or(f64::NAN);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::data::SparseCounts;
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
