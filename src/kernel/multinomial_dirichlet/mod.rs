//! The Multinomial-Dirichlet kernel: bags of words under a symmetric Dirichlet prior on the
//! word distribution (MATH §2.2, P19).
//!
//! With pooled counts `C_w`, total `N_S` and the per-document multinomial coefficients,
//!
//! `ln m(S) = Σ_{i∈S} [ln Γ(N_i+1) - Σ_w ln Γ(y_iw+1)] + ln Γ(Vβ) - ln Γ(Vβ + N_S)
//!            + Σ_{w: C_w>0} [ln Γ(β + C_w) - ln Γ(β)]`.
//!
//! A statistic keeps the sorted sparse `(word id, C_w)` pairs, `N_S`, the coefficient sum and
//! the word sum `Σ_w T(C_w)` with `T(k) = ln Γ(β+k) - ln Γ(β)`, the last kept incrementally so
//! that `ln_marginal` is O(1). Unions and predictives need only the words two sparse vectors
//! share: `T(a+b) - T(a) - T(b)` per common word, found by a merge-join that walks the shorter
//! vector and gallops (exponential then binary search) through the longer one, so the cost is
//! O(m log(M/m)) for lengths m ≤ M, with no allocation. `T(k)` is tabulated for small k.

use std::sync::Arc;

mod params;
mod soft;
mod sweep;

pub use params::MdParam;
pub use soft::{MdPoint, MdPosterior, SoftMd};

use super::hyperprior::HyperKernel;
use super::settings::KernelSettings;
use super::sweep_cache::SweepCache;
use super::{ConjugateKernel, Kernel, PredictiveKernel};
use crate::data::{Dataset, SparseCounts};
use crate::error::{Error, Result};
use crate::math::ln_gamma;
use sweep::{MdSweepCache, MAX_VOCAB};

/// Largest count for which `ln Γ(β + k) - ln Γ(β)` is tabulated (32 KiB of table; larger
/// pooled counts are rare and get an exact `ln Γ` call).
const WORD_TABLE_MAX: usize = 4095;

/// Hyperparameters of the symmetric Dirichlet prior `Dir(β, …, β)` over a vocabulary of
/// `vocab` words (MATH §2.2), validated (also when deserialised).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "RawDirichletHyper")]
pub struct DirichletHyper {
    beta: f64,
    vocab: usize,
}

/// The serialised form, validated by [`DirichletHyper::new`] on the way in.
#[derive(serde::Deserialize)]
struct RawDirichletHyper {
    beta: f64,
    vocab: usize,
}

impl TryFrom<RawDirichletHyper> for DirichletHyper {
    type Error = Error;

    fn try_from(raw: RawDirichletHyper) -> Result<Self> {
        DirichletHyper::new(raw.beta, raw.vocab)
    }
}

impl DirichletHyper {
    /// The reference code's concentration β = 0.1.
    pub const REFERENCE_BETA: f64 = 0.1;

    /// Validated hyperparameters: `beta` finite and > 0, `vocab` > 0.
    pub fn new(beta: f64, vocab: usize) -> Result<Self> {
        if !(beta > 0.0 && beta.is_finite()) {
            return Err(Error::param("beta", beta, "a finite number > 0"));
        }
        if vocab == 0 {
            return Err(Error::param("vocab", vocab, "a vocabulary size > 0"));
        }
        Ok(DirichletHyper { beta, vocab })
    }

    /// Dirichlet concentration β per word.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Vocabulary size V.
    pub fn vocab(&self) -> usize {
        self.vocab
    }
}

/// Sufficient statistic of a cluster of documents under [`MultinomialDirichlet`].
///
/// Holds the number of documents, the pooled counts as `(word id, count)` pairs sorted by
/// strictly increasing id with every count > 0, the total count `N_S`, the sum of the
/// documents' log multinomial coefficients, and `Σ_w [ln Γ(β + C_w) - ln Γ(β)]`.
#[derive(Debug)]
pub struct MdStat {
    n: usize,
    total: u64,
    ln_norm: f64,
    ln_word: f64,
    words: Vec<(u32, u32)>,
}

impl Clone for MdStat {
    fn clone(&self) -> Self {
        MdStat {
            n: self.n,
            total: self.total,
            ln_norm: self.ln_norm,
            ln_word: self.ln_word,
            words: self.words.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.n = source.n;
        self.total = source.total;
        self.ln_norm = source.ln_norm;
        self.ln_word = source.ln_word;
        self.words.clone_from(&source.words);
    }
}

impl MdStat {
    /// Number of documents summarised.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the statistic summarises no document.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Pooled counts, sorted by word id, all > 0.
    pub fn words(&self) -> &[(u32, u32)] {
        &self.words
    }

    /// Total count `N_S`.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// `Σ_{i∈S} [ln Γ(N_i+1) - Σ_w ln Γ(y_iw+1)]`, the log multinomial coefficients.
    pub fn ln_multinomial_coef(&self) -> f64 {
        self.ln_norm
    }

    /// `Σ_{w: C_w>0} [ln Γ(β + C_w) - ln Γ(β)]`.
    pub fn ln_word_term(&self) -> f64 {
        self.ln_word
    }
}

/// Per-document constants computed once at construction.
#[derive(Clone, Copy, Debug)]
struct DocTerms {
    total: u64,
    ln_norm: f64,
    ln_word: f64,
}

/// The Multinomial-Dirichlet conjugate kernel over a sparse count data set (MATH §2.2).
///
/// Construction validates the data against the vocabulary, precomputes each document's
/// total, log multinomial coefficient and `Σ_w T(y_w)`, and tabulates `T(k)` for
/// `k ≤ min(total count, 4095)`. Cost: O(nnz) `ln Γ` calls; shared between clones.
#[derive(Clone)]
pub struct MultinomialDirichlet {
    data: Arc<SparseCounts>,
    hyper: DirichletHyper,
    docs: Arc<[DocTerms]>,
    word_table: Arc<[f64]>,
    ln_gamma_beta: f64,
    v_beta: f64,
    ln_gamma_v_beta: f64,
}

impl std::fmt::Debug for MultinomialDirichlet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultinomialDirichlet")
            .field("n", &self.data.n())
            .field("nnz", &self.data.nnz())
            .field("hyper", &self.hyper)
            .finish_non_exhaustive()
    }
}

impl MultinomialDirichlet {
    /// The kernel over `data` with concentration `beta` and the data's own vocabulary size.
    /// See [`MultinomialDirichlet::with_hyper`].
    pub fn new(data: Arc<SparseCounts>, beta: f64) -> Result<Self> {
        let hyper = DirichletHyper::new(beta, data.vocab())?;
        Self::with_hyper(data, hyper)
    }

    /// The kernel over `data` with hyperparameters `hyper` (whose vocabulary may be larger
    /// than the data's). Errors if a document has a word id `≥ hyper.vocab()`, ids that are
    /// not strictly increasing or a zero count, or if the corpus holds more than `u32::MAX`
    /// words (pooled counts are 32-bit). Cost: O(nnz + min(total, 4095)) `ln Γ` calls.
    pub fn with_hyper(data: Arc<SparseCounts>, hyper: DirichletHyper) -> Result<Self> {
        let beta = hyper.beta;
        let ln_gamma_beta = ln_gamma(beta);
        let mut corpus_total: u64 = 0;
        for doc in 0..data.n() {
            let (ids, counts) = data.row(doc);
            validate_doc(ids, counts, hyper.vocab, &format!("document {}", doc + 1))?;
            corpus_total += counts.iter().map(|&c| c as u64).sum::<u64>();
        }
        if corpus_total > u32::MAX as u64 {
            return Err(Error::TooLarge(format!(
                "the corpus holds {corpus_total} words; pooled counts are limited to {}",
                u32::MAX
            )));
        }
        let table_len = (corpus_total as usize).min(WORD_TABLE_MAX) + 1;
        let word_table: Arc<[f64]> = (0..table_len)
            .map(|k| ln_gamma(beta + k as f64) - ln_gamma_beta)
            .collect();
        let v_beta = hyper.vocab as f64 * beta;
        let mut kernel = MultinomialDirichlet {
            data,
            hyper,
            docs: Arc::from(Vec::new()),
            word_table,
            ln_gamma_beta,
            v_beta,
            ln_gamma_v_beta: ln_gamma(v_beta),
        };
        let docs: Arc<[DocTerms]> = (0..kernel.data.n())
            .map(|doc| {
                let (_, counts) = kernel.data.row(doc);
                kernel.doc_terms(counts)
            })
            .collect();
        kernel.docs = docs;
        Ok(kernel)
    }

    /// The hyperparameters.
    pub fn hyper(&self) -> &DirichletHyper {
        &self.hyper
    }

    /// The data set.
    pub fn data(&self) -> &Arc<SparseCounts> {
        &self.data
    }

    /// `ln p(y | X_S)` for a document `y` given as parallel slices of strictly increasing
    /// word ids and their counts, not necessarily in the data set (zero counts are allowed
    /// and contribute nothing). Same formula and cost as [`ConjugateKernel::ln_predictive`]
    /// plus one `ln Γ` per word. Errors on slices of different lengths, unsorted or repeated
    /// ids, or an id outside the vocabulary.
    pub fn ln_predictive_doc(&self, ids: &[u32], counts: &[u32], s: &MdStat) -> Result<f64> {
        if ids.len() != counts.len() {
            return Err(Error::DimensionMismatch(format!(
                "a document with {} word ids and {} counts",
                ids.len(),
                counts.len()
            )));
        }
        check_sorted_in_vocab(ids, self.hyper.vocab, "the document")?;
        let terms = self.doc_terms(counts);
        let doc = Doc { ids, counts };
        Ok(self.ln_predictive_terms(&terms, doc, s))
    }

    /// Data document `i`'s precomputed total, log multinomial coefficient and `Σ_w T(y_w)`.
    pub(super) fn doc_terms_of(&self, i: usize) -> (u64, f64, f64) {
        let d = &self.docs[i];
        (d.total, d.ln_norm, d.ln_word)
    }

    /// `ln Γ(V β)`.
    pub(super) fn ln_gamma_v_beta(&self) -> f64 {
        self.ln_gamma_v_beta
    }

    /// `V β`, the Dirichlet's total concentration.
    pub(super) fn v_beta(&self) -> f64 {
        self.v_beta
    }

    /// Document `i`'s log multinomial coefficient `ln Γ(N_i+1) - Σ_w ln Γ(y_iw+1)`
    /// (precomputed at construction). Cost: O(1).
    pub fn doc_ln_multinomial_coef(&self, i: usize) -> f64 {
        self.docs[i].ln_norm
    }

    /// `T(k) = ln Γ(β + k) - ln Γ(β)`, from the table when `k` is small.
    #[inline]
    pub(super) fn t(&self, k: u64) -> f64 {
        match self.word_table.get(k as usize) {
            Some(&v) => v,
            None => ln_gamma(self.hyper.beta + k as f64) - self.ln_gamma_beta,
        }
    }

    /// A document's total, log multinomial coefficient and `Σ_w T(y_w)`.
    fn doc_terms(&self, counts: &[u32]) -> DocTerms {
        let total: u64 = counts.iter().map(|&c| c as u64).sum();
        let ln_fact_sum: f64 = counts.iter().map(|&c| ln_gamma(c as f64 + 1.0)).sum();
        DocTerms {
            total,
            ln_norm: ln_gamma(total as f64 + 1.0) - ln_fact_sum,
            ln_word: counts.iter().map(|&c| self.t(c as u64)).sum(),
        }
    }

    /// `Σ_{w common} [T(a_w + b_w) - T(a_w) - T(b_w)]`: the word-term correction of a union.
    #[inline]
    fn cross_term(&self, a: impl SparseView, b: impl SparseView) -> f64 {
        let mut cross = 0.0;
        for_each_common(&a, &b, |i, j| {
            let (ca, cb) = (a.count(i) as u64, b.count(j) as u64);
            cross += self.t(ca + cb) - self.t(ca) - self.t(cb);
        });
        cross
    }

    /// `ln m(S ∪ {y}) - ln m(S)` for a document with precomputed terms.
    #[inline]
    fn ln_predictive_terms(&self, doc_terms: &DocTerms, doc: impl SparseView, s: &MdStat) -> f64 {
        doc_terms.ln_norm + ln_gamma(self.v_beta + s.total as f64)
            - ln_gamma(self.v_beta + (s.total + doc_terms.total) as f64)
            + doc_terms.ln_word
            + self.cross_term(&s.words[..], doc)
    }

    /// Adds `other`'s counts into the sorted `words` and returns the union's word-term
    /// correction. Pass 1 finds the common words (galloping join); if every word of `other`
    /// is already present the counts are bumped in place, otherwise one backward in-place
    /// merge inserts the new ids. Cost: O(m log(M/m)) without new words, O(M + m) with.
    fn merge_counts(&self, words: &mut Vec<(u32, u32)>, other: impl SparseView) -> f64 {
        let mut cross = 0.0;
        let mut common = 0usize;
        for_each_common(&&words[..], &other, |i, j| {
            let (ca, cb) = (words[i].1 as u64, other.count(j) as u64);
            cross += self.t(ca + cb) - self.t(ca) - self.t(cb);
            common += 1;
        });
        let missing = other.len() - common;
        if missing == 0 {
            let mut pos = 0;
            for j in 0..other.len() {
                let id = other.id(j);
                pos = gallop(words.len(), |k| words[k].0, pos, id);
                words[pos].1 += other.count(j);
                pos += 1;
            }
        } else {
            let old_len = words.len();
            words.resize(old_len + missing, (0, 0));
            let (mut i, mut j, mut k) = (old_len, other.len(), old_len + missing);
            while j > 0 {
                let (id, c) = (other.id(j - 1), other.count(j - 1));
                k -= 1;
                if i > 0 && words[i - 1].0 > id {
                    words[k] = words[i - 1];
                    i -= 1;
                } else if i > 0 && words[i - 1].0 == id {
                    words[k] = (id, words[i - 1].1 + c);
                    i -= 1;
                    j -= 1;
                } else {
                    words[k] = (id, c);
                    j -= 1;
                }
            }
        }
        cross
    }

    /// Subtracts a document's counts (all present in `words`) and returns
    /// `Σ_w [T(C_w) - T(C_w - y_w) - T(y_w)]`; words whose count reaches zero are dropped.
    /// Cost: O(m log(M/m)), plus O(M) when a word disappears.
    fn unmerge_counts(&self, words: &mut Vec<(u32, u32)>, doc: Doc<'_>) -> f64 {
        let mut cross = 0.0;
        let mut emptied = false;
        let mut pos = 0;
        for j in 0..doc.len() {
            let id = doc.id(j);
            pos = gallop(words.len(), |k| words[k].0, pos, id);
            let found = pos < words.len() && words[pos].0 == id;
            debug_assert!(found, "removing word {id} that the statistic does not hold");
            if !found {
                continue;
            }
            let (c, y) = (words[pos].1, doc.count(j));
            debug_assert!(
                y <= c,
                "removing more of word {id} than the statistic holds"
            );
            let y = y.min(c);
            cross += self.t(c as u64) - self.t((c - y) as u64) - self.t(y as u64);
            words[pos].1 = c - y;
            emptied |= c == y;
            pos += 1;
        }
        if emptied {
            words.retain(|&(_, c)| c > 0);
        }
        cross
    }

    fn doc(&self, i: usize) -> Doc<'_> {
        let (ids, counts) = self.data.row(i);
        Doc { ids, counts }
    }
}

impl ConjugateKernel for MultinomialDirichlet {
    type Stat = MdStat;

    fn n_points(&self) -> usize {
        self.data.n()
    }

    fn empty_stat(&self) -> MdStat {
        MdStat {
            n: 0,
            total: 0,
            ln_norm: 0.0,
            ln_word: 0.0,
            words: Vec::new(),
        }
    }

    /// The batch statistic: all `(word, count)` pairs of the documents sorted by id and
    /// summed, and `Σ_w T(C_w)` from the pooled counts. Cost: O(nnz log nnz) with one
    /// allocation, instead of O(n · M) for a chain of adds.
    fn stat_of(&self, points: &[usize]) -> MdStat {
        let mut words: Vec<(u32, u32)> = points
            .iter()
            .flat_map(|&i| {
                let (ids, counts) = self.data.row(i);
                ids.iter().copied().zip(counts.iter().copied())
            })
            .collect();
        words.sort_unstable_by_key(|&(w, _)| w);
        words.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
        let mut s = MdStat {
            n: points.len(),
            total: 0,
            ln_norm: 0.0,
            ln_word: words.iter().map(|&(_, c)| self.t(c as u64)).sum(),
            words,
        };
        for &i in points {
            s.total += self.docs[i].total;
            s.ln_norm += self.docs[i].ln_norm;
        }
        s
    }

    fn count(&self, s: &MdStat) -> usize {
        s.n
    }

    /// Merges the document's counts into the pooled counts and updates the running sums.
    /// Cost: O(m log(M/m)) for a document of m words into M, O(M + m) if it brings new
    /// words.
    fn add(&self, s: &mut MdStat, i: usize) {
        let terms = self.docs[i];
        let cross = self.merge_counts(&mut s.words, self.doc(i));
        s.n += 1;
        s.total += terms.total;
        s.ln_norm += terms.ln_norm;
        s.ln_word += terms.ln_word + cross;
    }

    /// Subtracts the document's counts; removing the last document restores the empty
    /// statistic exactly. Cost: as [`ConjugateKernel::add`].
    fn remove(&self, s: &mut MdStat, i: usize) {
        debug_assert!(
            s.n > 0,
            "remove from an empty Multinomial-Dirichlet statistic"
        );
        if s.n <= 1 {
            s.n = 0;
            s.total = 0;
            s.ln_norm = 0.0;
            s.ln_word = 0.0;
            s.words.clear();
            return;
        }
        let terms = self.docs[i];
        let cross = self.unmerge_counts(&mut s.words, self.doc(i));
        s.n -= 1;
        s.total -= terms.total;
        s.ln_norm -= terms.ln_norm;
        s.ln_word -= terms.ln_word + cross;
    }

    /// Sorted merge of the pooled counts. Cost: O(M + m).
    fn merge(&self, a: &mut MdStat, b: &MdStat) {
        if b.n == 0 {
            return;
        }
        if a.n == 0 {
            a.clone_from(b);
            return;
        }
        let cross = self.merge_counts(&mut a.words, &b.words[..]);
        a.n += b.n;
        a.total += b.total;
        a.ln_norm += b.ln_norm;
        a.ln_word += b.ln_word + cross;
    }

    /// MATH §2.2 from the running sums: O(1) (one `ln Γ`).
    fn ln_marginal(&self, s: &MdStat) -> f64 {
        if s.n == 0 {
            return 0.0;
        }
        s.ln_norm + self.ln_gamma_v_beta - ln_gamma(self.v_beta + s.total as f64) + s.ln_word
    }

    /// Both statistics' sums plus the correction over the words they share, found by a
    /// galloping merge-join. Cost: O(m log(M/m)), no allocation.
    fn ln_marginal_pair(&self, a: &MdStat, b: &MdStat) -> f64 {
        if a.n == 0 {
            return self.ln_marginal(b);
        }
        if b.n == 0 {
            return self.ln_marginal(a);
        }
        a.ln_norm + b.ln_norm + self.ln_gamma_v_beta
            - ln_gamma(self.v_beta + (a.total + b.total) as f64)
            + a.ln_word
            + b.ln_word
            + self.cross_term(&a.words[..], &b.words[..])
    }

    /// `ln N_i!/Π y! + ln Γ(Vβ + N_S) - ln Γ(Vβ + N_S + N_i) + Σ_w T(y_w)
    /// + Σ_{w common} [T(C_w + y_w) - T(C_w) - T(y_w)]`. Cost: O(m log(M/m)) lookups and two
    /// `ln Γ`, no allocation.
    fn ln_predictive(&self, i: usize, s: &MdStat) -> f64 {
        self.ln_predictive_terms(&self.docs[i], self.doc(i), s)
    }

    /// The dense-count sweep cache (a row of counts per cluster, 4 bytes a word) for
    /// vocabularies of at most 65,536 words; none above (the sparse predictive then).
    fn sweep_cache(&self) -> Option<Box<dyn SweepCache<MdStat>>> {
        (self.hyper.vocab <= MAX_VOCAB)
            .then(|| Box::new(MdSweepCache::new(self)) as Box<dyn SweepCache<MdStat>>)
    }
}

/// Read access to a sparse vector sorted by strictly increasing id.
trait SparseView {
    fn len(&self) -> usize;
    fn id(&self, k: usize) -> u32;
    fn count(&self, k: usize) -> u32;
}

impl SparseView for &[(u32, u32)] {
    #[inline]
    fn len(&self) -> usize {
        <[(u32, u32)]>::len(self)
    }
    #[inline]
    fn id(&self, k: usize) -> u32 {
        self[k].0
    }
    #[inline]
    fn count(&self, k: usize) -> u32 {
        self[k].1
    }
}

impl<V: SparseView> SparseView for &V {
    #[inline]
    fn len(&self) -> usize {
        (**self).len()
    }
    #[inline]
    fn id(&self, k: usize) -> u32 {
        (**self).id(k)
    }
    #[inline]
    fn count(&self, k: usize) -> u32 {
        (**self).count(k)
    }
}

/// A document as parallel slices of ids and counts.
#[derive(Clone, Copy)]
struct Doc<'a> {
    ids: &'a [u32],
    counts: &'a [u32],
}

impl SparseView for Doc<'_> {
    #[inline]
    fn len(&self) -> usize {
        self.ids.len()
    }
    #[inline]
    fn id(&self, k: usize) -> u32 {
        self.ids[k]
    }
    #[inline]
    fn count(&self, k: usize) -> u32 {
        self.counts[k]
    }
}

/// The first index `k ≥ lo` with `key(k) ≥ target` (or `len`), for keys increasing in `k`:
/// exponential search from `lo`, then binary search in the bracket. O(log(distance)).
#[inline]
fn gallop(len: usize, key: impl Fn(usize) -> u32, lo: usize, target: u32) -> usize {
    if lo >= len || key(lo) >= target {
        return lo;
    }
    // Invariant: key(below) < target.
    let mut below = lo;
    let mut step = 1;
    let mut above = loop {
        let probe = below + step;
        if probe >= len {
            break len;
        }
        if key(probe) >= target {
            break probe;
        }
        below = probe;
        step *= 2;
    };
    let mut first = below + 1;
    while first < above {
        let mid = first + (above - first) / 2;
        if key(mid) < target {
            first = mid + 1;
        } else {
            above = mid;
        }
    }
    first
}

/// Calls `f(i, j)` for every pair with `a.id(i) == b.id(j)`, in increasing id order, walking
/// the shorter vector and galloping through the longer one.
#[inline]
fn for_each_common<A: SparseView, B: SparseView>(a: &A, b: &B, mut f: impl FnMut(usize, usize)) {
    if a.len() <= b.len() {
        let mut pos = 0;
        for i in 0..a.len() {
            let id = a.id(i);
            pos = gallop(b.len(), |k| b.id(k), pos, id);
            if pos == b.len() {
                break;
            }
            if b.id(pos) == id {
                f(i, pos);
                pos += 1;
            }
        }
    } else {
        let mut pos = 0;
        for j in 0..b.len() {
            let id = b.id(j);
            pos = gallop(a.len(), |k| a.id(k), pos, id);
            if pos == a.len() {
                break;
            }
            if a.id(pos) == id {
                f(pos, j);
                pos += 1;
            }
        }
    }
}

fn check_sorted_in_vocab(ids: &[u32], vocab: usize, what: &str) -> Result<()> {
    for (k, &id) in ids.iter().enumerate() {
        if id as usize >= vocab {
            return Err(Error::param(
                &format!("word id in {what}"),
                id,
                &format!("an id below the vocabulary size {vocab}"),
            ));
        }
        if k > 0 && ids[k - 1] >= id {
            return Err(Error::param(
                &format!("word id in {what}"),
                id,
                &format!(
                    "ids in strictly increasing order (it follows {})",
                    ids[k - 1]
                ),
            ));
        }
    }
    Ok(())
}

fn validate_doc(ids: &[u32], counts: &[u32], vocab: usize, what: &str) -> Result<()> {
    check_sorted_in_vocab(ids, vocab, what)?;
    if let Some(k) = counts.iter().position(|&c| c == 0) {
        return Err(Error::param(
            &format!("count of word {} in {what}", ids[k]),
            0,
            "a count > 0 (absent words are omitted)",
        ));
    }
    Ok(())
}

/// The Multinomial-Dirichlet kernel's one hyperparameter for hyperpriors: the concentration
/// `β` (free by default, log-normal centred on the kernel's `β`; see [`super::hyperprior`]).
impl HyperKernel for MultinomialDirichlet {
    const HYPER_NAMES: &'static [&'static str] = &["md_beta"];

    /// `β`.
    fn hyper_values(&self) -> Vec<f64> {
        vec![self.hyper.beta]
    }

    fn hyper_offset(&self, _j: usize) -> f64 {
        0.0
    }

    fn hyper_default_sd(&self, _j: usize) -> f64 {
        2.0
    }

    fn hyper_free_by_default(&self, _j: usize) -> bool {
        true
    }

    /// `ln m(S)` at `β = h[0]` from the pooled counts (MATH §2.2). Cost: one `ln Γ` per
    /// distinct word of the statistic.
    fn ln_marginal_at(&self, s: &MdStat, h: &[f64]) -> f64 {
        if s.n == 0 {
            return 0.0;
        }
        let beta = h[0];
        let v_beta = self.hyper.vocab as f64 * beta;
        let ln_gamma_beta = ln_gamma(beta);
        let words: f64 = s
            .words
            .iter()
            .map(|&(_, c)| ln_gamma(beta + c as f64) - ln_gamma_beta)
            .sum();
        s.ln_norm + ln_gamma(v_beta) - ln_gamma(v_beta + s.total as f64) + words
    }

    /// The kernel at `β = h[0]` over the same corpus. Errors unless `h` holds one finite
    /// value > 0. Cost: as [`MultinomialDirichlet::with_hyper`].
    fn with_hyper_values(&self, h: &[f64]) -> Result<Self> {
        if h.len() != 1 {
            return Err(Error::DimensionMismatch(format!(
                "{} Multinomial-Dirichlet hyperparameter values, expected 1 (beta)",
                h.len()
            )));
        }
        Self::with_hyper(
            self.data.clone(),
            DirichletHyper::new(h[0], self.hyper.vocab)?,
        )
    }

    /// Recomputes `Σ_w [ln Γ(β + C_w) - ln Γ(β)]`. Cost: one table look-up per distinct word.
    fn refresh_stat(&self, s: &mut MdStat) {
        s.ln_word = s.words.iter().map(|&(_, c)| self.t(c as u64)).sum();
    }
}

/// New points are documents over the training data's vocabulary (or a shorter one).
impl PredictiveKernel for MultinomialDirichlet {
    type NewData = SparseCounts;

    fn n_new(data: &SparseCounts) -> usize {
        data.n()
    }

    fn ln_predictive_new(&self, data: &SparseCounts, j: usize, s: &Self::Stat) -> Result<f64> {
        let (ids, counts) = data.row(j);
        self.ln_predictive_doc(ids, counts, s)
    }
}

/// Dirichlet concentration of the Multinomial-Dirichlet kernel when none is given.
pub const DEFAULT_BETA: f64 = 0.1;

/// The Multinomial-Dirichlet kernel as models and front ends name and build it.
impl Kernel for MultinomialDirichlet {
    const NAME: &'static str = "md";
    const ABOUT: &'static str = "Multinomial-Dirichlet on count vectors";
    const TITLE: &'static str = "Multinomial-Dirichlet kernel";
    const DATA: &'static str = "counts";

    /// `β` given or [`DEFAULT_BETA`] over count data; the Normal-Wishart settings are
    /// refused. Cost: the kernel's construction.
    fn build(settings: &KernelSettings, data: Dataset) -> Result<Self> {
        match data {
            Dataset::Counts(c) => {
                if settings.xi.is_some()
                    || settings.psi.is_some()
                    || settings.r.is_some()
                    || settings.nu.is_some()
                {
                    return Err(Error::Usage(
                        "`nw_*` hyperparameters (`nw_xi`, `nw_psi`, `nw_r`, `nw_nu`) belong to \
                         the Normal-Wishart kernel, but the data are counts"
                            .into(),
                    ));
                }
                MultinomialDirichlet::new(Arc::new(c), settings.beta.unwrap_or(DEFAULT_BETA))
            }
            Dataset::Table(_) => Err(super::settings::table_refused("md")),
            Dataset::Dense(_) => Err(Error::Usage(
                "`kernel` md needs count data (docword or LDA-C), but the data are a real matrix"
                    .into(),
            )),
        }
    }

    fn dim(&self) -> usize {
        self.hyper().vocab()
    }

    fn points_of(data: &Dataset) -> Option<&SparseCounts> {
        match data {
            Dataset::Counts(c) => Some(c),
            Dataset::Dense(_) | Dataset::Table(_) => None,
        }
    }

    fn check_new(&self, new: &SparseCounts) -> Result<()> {
        let vocab = self.hyper().vocab();
        if new.vocab() > vocab {
            return Err(Error::DimensionMismatch(format!(
                "`new` has a vocabulary of {} words, but the training data have {vocab}",
                new.vocab()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gallop_finds_the_first_not_smaller_key() {
        let keys = [1u32, 3, 3, 7, 9, 12, 20, 21, 40];
        for lo in 0..=keys.len() {
            for target in 0..45 {
                let expected = (lo..keys.len())
                    .find(|&k| keys[k] >= target)
                    .unwrap_or(keys.len());
                assert_eq!(
                    gallop(keys.len(), |k| keys[k], lo, target),
                    expected,
                    "lo {lo} target {target}"
                );
            }
        }
    }

    #[test]
    fn common_words_in_both_walking_directions() {
        let a: &[(u32, u32)] = &[(2, 1), (5, 1), (9, 1)];
        let b: &[(u32, u32)] = &[(1, 1), (2, 1), (3, 1), (9, 1), (10, 1)];
        let mut seen = Vec::new();
        for_each_common(&a, &b, |i, j| seen.push((i, j)));
        assert_eq!(seen, vec![(0, 1), (2, 3)]);
        seen.clear();
        for_each_common(&b, &a, |i, j| seen.push((i, j)));
        assert_eq!(seen, vec![(1, 0), (3, 2)]);
    }

    #[test]
    fn word_table_matches_ln_gamma_and_falls_back_beyond() {
        let data = SparseCounts::from_rows(10, &[vec![(0, 5000)], vec![(1, 3)]]).unwrap();
        let k = MultinomialDirichlet::new(Arc::new(data), 0.3).unwrap();
        assert_eq!(k.word_table.len(), WORD_TABLE_MAX + 1);
        for c in [0u64, 1, 2, 17, 4095, 4096, 10_000] {
            let direct = ln_gamma(0.3 + c as f64) - ln_gamma(0.3);
            assert!(
                (k.t(c) - direct).abs() < 1e-12 * direct.abs().max(1.0),
                "{c}"
            );
        }
    }
}
