//! The partition that minimises the posterior expected loss over partition draws, found by a
//! SALSO-style search (Dahl, Johnson & Müller 2022, "Search algorithms and loss functions for
//! Bayesian clustering", JCGS): **s**equential **al**location of the points in a random order,
//! each to the cluster (or a new one) that least increases the expected loss of the points
//! placed so far; **s**weetening scans that move single points while the loss falls; zealous
//! updates that dissolve one cluster at a time and reallocate its points, kept only when the
//! loss falls; and many independent runs (**o**ptimisation by restarts), the best kept. Every
//! other run starts instead from the points spread uniformly over `k` clusters, `k` uniform up
//! to the most clusters of any draw (salso's alternative to sequential allocation): a
//! sequential allocation opens clusters freely among the first few points, and on diffuse
//! posteriors sweetening alone cannot merge them back.
//!
//! **Written here rather than taken from the crate `dahl-salso`.** The method's author
//! publishes SALSO in Rust (`dahl-salso`, MIT/Apache). Version 0.6 depends on `rand` 0.8 and
//! 0.7 on `rand` 0.9, beside this crate's 0.10, and both on `ndarray`, `rand_pcg`,
//! `crossbeam` and `num_cpus`, running their own threads beside rayon's; docs.rs counts under
//! 1% of its items documented. This search holds the draws once in the [`DrawSet`] that the
//! expected losses and credible balls read too, draws every random choice from the user's
//! seed through the crate's one generator, and is checked against enumeration here.
//!
//! **Atoms.** The search places the [`DrawSet`]'s atoms, not its points: the points that
//! share their cluster in every draw move together, as one point of their number's weight.
//! For the VI and Binder's loss some minimiser keeps every atom whole (the loss is concave in
//! how an atom's points divide between two clusters, see [`super::draw_set`]), so nothing is
//! lost; for one minus the ARI the search is restricted to such partitions. Where every point
//! is its own atom the search is the one over points.
//!
//! **State.** Each run keeps, per cluster `k` of the estimate, its count in every column of
//! the [`DrawSet`] (the draws' clusters side by side): `N_kl` for every draw at once. Placing
//! atom `i` of weight `w` in cluster `k` raises `n_k` and, per draw `m`, the one count
//! `N_k,c⁽ᵐ⁾ᵢ` by `w`, so the change of every loss of [`PartitionLoss`] is
//! `f(n_k + w) - f(n_k)` and `Σ_m [f(N + w) - f(N)]`: O(M) per candidate cluster,
//! O(M (K + 1)) per atom, O(A M (K + 1)) per scan, for `A` atoms, `M` draws and `K`
//! clusters. Memory per run: `4 K C` bytes for `C` columns. One minus the ARI is not linear
//! in the draws, so each candidate costs two divisions per draw; they go eight candidates at
//! a time in vector lanes (`score_slot_lanes`), each lane's arithmetic and order of addition
//! that of the scalar definition, so the search makes the same moves as a scalar loop would.
//!
//! **Randomness.** Run `r` draws its orders from its own stream of the user's seed
//! ([`SearchSettings::seed`]); the best run wins, ties to the first, so the estimate is the same
//! on any number of threads.

use super::draw_set::DrawSet;
use super::partition_loss::{ari_pairs, one_minus_ari, PartitionLoss};
use crate::error::{Error, Result};
use crate::exact::{bell_number, SetPartitions, MAX_EXACT_N};
use crate::rng::{uniform_index, NrmmRng, SeedPlan};
use crate::simd::multiversion;
use rayon::prelude::*;
use std::sync::Arc;

/// How hard the search tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SearchSettings {
    /// Independent runs, each from its own random order; the best is kept.
    pub runs: usize,
    /// Zealous updates per run: clusters dissolved and reallocated, kept when the loss falls.
    pub zealous: usize,
    /// Most sweetening scans after an allocation (each scan visits every point once).
    pub max_scans: usize,
    /// Most work of each run beyond its first allocation, in point-draw-slot evaluations (an
    /// atom weighed against one candidate cluster in one draw; a scan is `A M (K + 1)`), or
    /// none for no bound: a run that has spent it ends its scan and stops (no more scans,
    /// merges or zealous updates), keeping the partition it holds, whose loss every move
    /// lowered. Counted, not timed, so the estimate is the same on every machine.
    pub max_work: Option<u64>,
    /// The seed of the runs' orders.
    pub seed: u64,
}

impl Default for SearchSettings {
    /// 16 runs with 10 zealous updates each (the defaults of Dahl, Johnson & Müller's salso),
    /// at most 100 scans, no bound on the work, seed 0.
    fn default() -> Self {
        SearchSettings {
            runs: 16,
            zealous: 10,
            max_scans: 100,
            max_work: None,
            seed: 0,
        }
    }
}

/// Point-draw-cluster products `n M K̄` (`K̄` the draws' mean number of clusters, a scan's
/// cost being O(n M K)) up to which a search makes all 16 runs; beyond, the runs shrink in
/// proportion down to [`MIN_RUNS`], so that 5,000 points and 1,000 draws of 10 clusters take
/// a few seconds.
const FULL_SEARCH_WORK: usize = 10_000_000;

/// The fewest runs [`SearchSettings::for_size`] makes.
const MIN_RUNS: usize = 4;

/// Work (point-draw-slot evaluations) that [`SearchSettings::for_size`] gives a whole search,
/// shared among its runs, at the least: one to two seconds of CPU (7-10 ns an evaluation),
/// so that the searches of small and mid-sized problems are rarely cut (of the default runs
/// on iris, wine and the mixed zoo and survey tables, one run of 16 of survey's VI search
/// reached it, with the same estimate as without the bound).
const MIN_SEARCH_WORK: f64 = 2e8;

/// Scans, each of `A M (K̄ + 1)` evaluations at the draws' mean number of clusters `K̄`, that
/// [`SearchSettings::for_size`] gives a whole search where that is more than
/// [`MIN_SEARCH_WORK`]. On a million points' draws (26,614 atoms, 24 draws, K̄ ≈ 6.3) the
/// unbounded searches spent 130 scans (VI), 90 (one minus the ARI, its estimate at 39
/// clusters) and 192 (Binder's, at 66 clusters, each scan ten times the draws'), 24 s of the
/// summary's wall time on two cores; bounded, the VI estimate was the same partition.
const SEARCH_SCANS: f64 = 40.0;

impl SearchSettings {
    /// The default settings with `seed`, and fewer runs for large problems: 16 up to 10⁷
    /// point-draw-cluster products `n M K̄` (`clusters` = `K̄`, the draws' mean number of
    /// clusters), then in proportion, at least 4 (4 at 5,000 points and 1,000 draws of 10
    /// clusters). On concentrated posteriors of many points the runs agree, so fewer lose
    /// little.
    ///
    /// Each run's work is bounded too ([`SearchSettings::max_work`]): the search as a whole
    /// spends at most [`SEARCH_SCANS`] scans of the `atoms` (at `K̄ + 1` candidates each), or
    /// [`MIN_SEARCH_WORK`] evaluations where that is more, shared evenly among the runs.
    pub fn for_size(n: usize, atoms: usize, draws: usize, clusters: f64, seed: u64) -> Self {
        let full = SearchSettings::default().runs;
        let work = ((n.saturating_mul(draws) as f64 * clusters.max(1.0)) as usize).max(1);
        let runs = (full * FULL_SEARCH_WORK / work).clamp(MIN_RUNS, full);
        let scan = atoms as f64 * draws as f64 * (clusters.max(1.0) + 1.0);
        let total = (SEARCH_SCANS * scan).max(MIN_SEARCH_WORK);
        SearchSettings {
            runs,
            max_work: Some((total / runs as f64) as u64),
            seed,
            ..SearchSettings::default()
        }
    }

    /// Errors unless there is at least one run and one scan.
    pub fn validate(&self) -> Result<()> {
        if self.runs == 0 {
            return Err(Error::param("runs", 0, "at least 1 run of the search"));
        }
        if self.max_scans == 0 {
            return Err(Error::param("max_scans", 0, "at least 1 sweetening scan"));
        }
        Ok(())
    }
}

/// The partition that minimises the expected loss, as the search found it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LossEstimate {
    /// The loss minimised.
    pub loss: PartitionLoss,
    /// How it was found: by enumeration (exact) or by the search.
    pub method: String,
    /// Its posterior expected loss over the draws.
    pub expected_loss: f64,
    /// Its number of clusters.
    pub n_clusters: usize,
    /// The draws it was found over.
    pub among: usize,
    /// The search's run that found it (of [`SearchSettings::runs`]); none when enumerated.
    pub run: Option<usize>,
    /// Its canonical labels.
    #[serde(skip)]
    pub labels: Vec<usize>,
}

/// Counts up to which `f` is looked up rather than computed (16 MB of table at most): on a
/// million points' atoms the look-ups, though they miss the cache, took 26 s of CPU where
/// computing `f` beyond 65,536 took 33 s.
const F_TABLE: u32 = 1 << 21;

/// Marks a point not yet placed.
const UNPLACED: u32 = u32::MAX;

/// Relative margin by which a move must lower the loss to be made: rounding in the sums of
/// `x log₂ x` must not make a point swing between two clusters of equal loss.
const IMPROVEMENT: f64 = 1e-12;

/// Most clusters at which merges are tried: choosing one costs O(K² C), a scan's cost at
/// K = 100 for 5,000 points.
const MERGE_MAX_CLUSTERS: usize = 100;

/// Candidate slots scored together by [`score_slot_lanes`], one per lane of a 512-bit vector.
const SLOT_LANES: usize = 8;

multiversion! {
    /// For [`SLOT_LANES`] slots, with `rows[l]` slot `l`'s counts per column and `a_sums[l]`
    /// the estimate's `A` were an atom of weight `w` placed there (`pairs_weight` holds the
    /// pairs `T` with it placed, and `w`), the sums over the draws `m`
    /// of one minus the ARI ([`one_minus_ari`]) of `A`, `B = b[m] + w Y + h` and
    /// `S = s[m] + w N + h`, with `Y` the atom's column count `column_sizes[columns[m]]`, `N`
    /// its cell count `rows[l][columns[m]]` and `h = w (w - 1) / 2` (one minus the ARI's
    /// `f(x + w) - f(x)`, exact in `f64` below 2²⁶ points, as `f` itself; `x` when `w = 1`,
    /// to the bit), each added in the order of the draws. The
    /// arithmetic is the scalar definition's in every lane at every [`crate::simd::Level`]
    /// (divisions are correctly rounded in vectors too), so each sum is too.
    /// Cost: two divisions per slot and draw.
    fn score_slot_lanes(
        rows: &[&[u32]; SLOT_LANES],
        a_sums: &[f64; SLOT_LANES],
        pairs_weight: (f64, f64),
        columns: &[u32],
        column_sizes: &[u32],
        s: &[f64],
        b: &[f64],
    ) -> [f64; SLOT_LANES] {
        let mut sums = [0.0; SLOT_LANES];
        let (pairs, w) = pairs_weight;
        let h = w * (w - 1.0) / 2.0;
        // Rows cut to the columns' length, so that one bounds check per draw covers all.
        let width = column_sizes.len();
        let rows: [&[u32]; SLOT_LANES] = std::array::from_fn(|l| &rows[l][..width]);
        for ((&c, &s), &b) in columns.iter().zip(s).zip(b) {
            let c = c as usize;
            // The draw's B once the atom is placed, whichever slot takes it.
            let b = b + (w * f64::from(column_sizes[c]) + h);
            let cells: [f64; SLOT_LANES] =
                std::array::from_fn(|l| s + (w * f64::from(rows[l][c]) + h));
            for l in 0..SLOT_LANES {
                sums[l] += one_minus_ari(a_sums[l], b, cells[l], pairs);
            }
        }
        sums
    }
}

/// Buffers a run reuses from point to point.
#[derive(Default)]
struct Scratch {
    /// The slots a point may join: the occupied ones and one free slot, in slot order.
    candidates: Vec<usize>,
    /// Per candidate slot its summed loss over the draws (one minus the ARI).
    sums: Vec<f64>,
}

/// One run's partial or complete partition with its counts (see the module documentation).
#[derive(Clone)]
struct Allocation<'a> {
    draws: &'a DrawSet,
    loss: PartitionLoss,
    /// `f(x)` for `x` below `n + 2` and [`F_TABLE`]; counts beyond are computed. One table
    /// ([`f_table`], 16 MB at its largest) shared by a search's runs and their copies.
    f: Arc<[f64]>,
    /// Per atom its cluster slot, or [`UNPLACED`].
    labels: Vec<u32>,
    /// Per cluster slot its counts in every column.
    rows: Vec<Vec<u32>>,
    /// Per cluster slot its size (0 for a free slot).
    sizes: Vec<u32>,
    /// Free slots.
    free: Vec<usize>,
    /// Per column its count among the placed points.
    column_sizes: Vec<u32>,
    /// `A`, `Σ_k f(n_k)`.
    a_sum: f64,
    /// Per draw `B`, `Σ_l f(m_l)` over the placed points.
    b: Vec<f64>,
    /// Per draw `S`, `Σ_kl f(N_kl)`.
    s: Vec<f64>,
    /// Points placed (the placed atoms' weights).
    placed: usize,
    /// Point-draw-slot evaluations made so far ([`SearchSettings::max_work`]).
    work: u64,
    /// The most work before the run stops improving (`u64::MAX`: no bound).
    max_work: u64,
}

impl<'a> Allocation<'a> {
    /// No atom placed yet; `f` is [`f_table`] of `draws` and `loss`.
    fn empty(draws: &'a DrawSet, loss: PartitionLoss, f: Arc<[f64]>) -> Self {
        Allocation {
            draws,
            loss,
            f,
            labels: vec![UNPLACED; draws.atoms()],
            rows: Vec::new(),
            sizes: Vec::new(),
            free: Vec::new(),
            column_sizes: vec![0; draws.total_columns()],
            a_sum: 0.0,
            b: vec![0.0; draws.len()],
            s: vec![0.0; draws.len()],
            placed: 0,
            work: 0,
            max_work: u64::MAX,
        }
    }

    /// Whether the run has spent its work ([`SearchSettings::max_work`]).
    fn spent(&self) -> bool {
        self.work >= self.max_work
    }

    /// `f(x)`, from the table where it holds `x`; the same value either way.
    #[inline(always)]
    fn f(&self, x: u32) -> f64 {
        match self.f.get(x as usize) {
            Some(&v) => v,
            None => self.loss.f(x),
        }
    }

    /// `f(x + w) - f(x)`: the change when a count `x` grows by `w`.
    #[inline(always)]
    fn step(&self, x: u32, w: u32) -> f64 {
        self.f(x + w) - self.f(x)
    }

    /// Places unplaced atom `i` in slot `k` (a free slot opens). Cost O(M).
    fn add(&mut self, i: usize, k: usize) {
        if self.sizes[k] == 0 {
            self.free.retain(|&s| s != k);
        }
        let w = self.draws.weight(i);
        let columns = self.draws.atom_columns(i);
        for (m, &c) in columns.iter().enumerate() {
            let c = c as usize;
            let x = self.rows[k][c];
            self.s[m] += self.step(x, w);
            self.rows[k][c] = x + w;
            let y = self.column_sizes[c];
            self.b[m] += self.step(y, w);
            self.column_sizes[c] = y + w;
        }
        self.a_sum += self.step(self.sizes[k], w);
        self.sizes[k] += w;
        self.labels[i] = k as u32;
        self.placed += w as usize;
    }

    /// Removes placed atom `i` from its cluster (an emptied slot is freed). Cost O(M).
    fn remove(&mut self, i: usize) {
        let k = self.labels[i] as usize;
        let w = self.draws.weight(i);
        let columns = self.draws.atom_columns(i);
        for (m, &c) in columns.iter().enumerate() {
            let c = c as usize;
            let x = self.rows[k][c] - w;
            self.s[m] -= self.step(x, w);
            self.rows[k][c] = x;
            let y = self.column_sizes[c] - w;
            self.b[m] -= self.step(y, w);
            self.column_sizes[c] = y;
        }
        self.sizes[k] -= w;
        self.a_sum -= self.step(self.sizes[k], w);
        if self.sizes[k] == 0 {
            self.free.push(k);
        }
        self.labels[i] = UNPLACED;
        self.placed -= w as usize;
    }

    /// A free slot, opened if none is.
    fn free_slot(&mut self) -> usize {
        if self.free.is_empty() {
            self.open_slots(self.rows.len() + 1);
        }
        self.free[self.free.len() - 1]
    }

    /// Opens free slots until there are `k` in all.
    fn open_slots(&mut self, k: usize) {
        while self.rows.len() < k {
            self.rows.push(vec![0; self.draws.total_columns()]);
            self.sizes.push(0);
            self.free.push(self.rows.len() - 1);
        }
    }

    /// The expected loss over the placed points, from the running sums. Cost O(M).
    fn expected(&self) -> f64 {
        let m = self.draws.len() as f64;
        if self.loss.is_linear() {
            let b = self.b.iter().sum::<f64>() / m;
            let s = self.s.iter().sum::<f64>() / m;
            self.loss.combine(self.a_sum, b, s, self.placed)
        } else {
            self.b
                .iter()
                .zip(&self.s)
                .map(|(&b, &s)| self.loss.combine(self.a_sum, b, s, self.placed))
                .sum::<f64>()
                / m
        }
    }

    /// For unplaced atom `i`, the slot whose choice gives the least expected loss over the
    /// placed atoms and `i`, with that loss up to a term common to all slots; `keep` (a free
    /// slot, or `i`'s former cluster) wins unless another is lower by [`IMPROVEMENT`]. Occupied
    /// slots are tried in order, then a new cluster. Cost O(M (K + 1)).
    fn best_slot(&mut self, i: usize, keep: Option<usize>, scratch: &mut Scratch) -> usize {
        let new = self.free_slot();
        let keep = keep.unwrap_or(new);
        let keep = if self.sizes[keep] == 0 { new } else { keep };
        scratch.candidates.clear();
        scratch
            .candidates
            .extend((0..self.sizes.len()).filter(|&k| self.sizes[k] > 0 || k == new));
        let linear = self.loss.is_linear();
        if !linear {
            self.score_one_minus_ari(i, scratch);
        }
        let w = self.draws.weight(i);
        let columns = self.draws.atom_columns(i);
        self.work += (columns.len() * scratch.candidates.len()) as u64;
        let m = self.draws.len() as f64;
        let n = self.placed + w as usize;
        let value = |j: usize| -> f64 {
            if !linear {
                return scratch.sums[j] / m;
            }
            let k = scratch.candidates[j];
            let row = &self.rows[k];
            let a_sum = self.a_sum + self.step(self.sizes[k], w);
            let ds: f64 = columns.iter().map(|&c| self.step(row[c as usize], w)).sum();
            // The loss's change, the draws' B being common to all slots.
            self.loss.combine(a_sum - self.a_sum, 0.0, ds / m, n)
        };
        let keep_at = scratch
            .candidates
            .iter()
            .position(|&k| k == keep)
            .expect("the kept slot is occupied or the free one");
        let keep_value = value(keep_at);
        let mut best = (keep_value, keep);
        for (j, &k) in scratch.candidates.iter().enumerate() {
            if j == keep_at {
                continue;
            }
            let v = value(j);
            if v < best.0 {
                best = (v, k);
            }
        }
        if best.1 != keep && best.0 + IMPROVEMENT * (best.0.abs() + keep_value.abs()) >= keep_value
        {
            return keep;
        }
        best.1
    }

    /// For unplaced atom `i` and each slot of `scratch.candidates`, the sum over the draws of
    /// one minus the ARI with `i` placed there, into `scratch.sums`: per draw
    /// [`one_minus_ari`] of `A` with the slot grown, `B` with `i`'s column grown and `S` with
    /// `i`'s cell grown, each by `i`'s weight, added in the order of the draws, so that each sum is the one a loop
    /// over the draws per slot makes, bit for bit. [`SLOT_LANES`] slots go together
    /// ([`score_slot_lanes`]), one per vector lane, their sums in registers. Cost O(M (K + 1)).
    fn score_one_minus_ari(&self, i: usize, scratch: &mut Scratch) {
        let w = self.draws.weight(i);
        let columns = self.draws.atom_columns(i);
        let pairs = ari_pairs((self.placed + w as usize) as f64);
        let Scratch { candidates, sums } = scratch;
        sums.clear();
        for group in candidates.chunks(SLOT_LANES) {
            // Lanes past the group's slots repeat its first; their sums are dropped.
            let slot = |l: usize| group.get(l).copied().unwrap_or(group[0]);
            let rows: [&[u32]; SLOT_LANES] = std::array::from_fn(|l| &self.rows[slot(l)][..]);
            let a_sums = std::array::from_fn(|l| self.a_sum + self.step(self.sizes[slot(l)], w));
            let lanes = score_slot_lanes(
                &rows,
                &a_sums,
                (pairs, f64::from(w)),
                columns,
                &self.column_sizes,
                &self.s,
                &self.b,
            );
            sums.extend_from_slice(&lanes[..group.len()]);
        }
    }

    /// Places the unplaced atoms `order` one by one, each in its best slot.
    fn allocate(&mut self, order: &[usize], scratch: &mut Scratch) {
        for &i in order {
            let k = self.best_slot(i, None, scratch);
            self.add(i, k);
        }
    }

    /// Sweetening: scans over the atoms in random orders, moving each to its best slot, until
    /// a scan moves none, `max_scans` have run or the run's work is spent. Returns the scans
    /// run.
    fn sweeten(&mut self, max_scans: usize, rng: &mut NrmmRng, scratch: &mut Scratch) -> usize {
        for scan in 1..=max_scans {
            if self.spent() {
                return scan - 1;
            }
            let mut moved = 0;
            for i in shuffled(self.labels.len(), rng) {
                let from = self.labels[i] as usize;
                self.remove(i);
                let to = self.best_slot(i, Some(from), scratch);
                self.add(i, to);
                moved += usize::from(to != from);
            }
            if moved == 0 {
                return scan;
            }
        }
        max_scans
    }

    /// The expected loss after merging the clusters of slots `k` and `j`. Cost O(C + M).
    fn merged(&self, k: usize, j: usize) -> f64 {
        let (rk, rj) = (&self.rows[k], &self.rows[j]);
        let f = |x: u32| self.f(x);
        let a_sum =
            self.a_sum + f(self.sizes[k] + self.sizes[j]) - f(self.sizes[k]) - f(self.sizes[j]);
        let s = (0..self.draws.len()).map(|m| {
            let ds: f64 = self
                .draws
                .draw_columns(m)
                .filter(|&c| rk[c] > 0 && rj[c] > 0)
                .map(|c| f(rk[c] + rj[c]) - f(rk[c]) - f(rj[c]))
                .sum();
            (m, self.s[m] + ds)
        });
        let m = self.draws.len() as f64;
        if self.loss.is_linear() {
            let b = self.b.iter().sum::<f64>() / m;
            let s = s.map(|(_, s)| s).sum::<f64>() / m;
            self.loss.combine(a_sum, b, s, self.placed)
        } else {
            s.map(|(d, s)| self.loss.combine(a_sum, self.b[d], s, self.placed))
                .sum::<f64>()
                / m
        }
    }

    /// Merges the cluster of slot `j` into that of slot `k`. Cost O(A M).
    fn merge(&mut self, k: usize, j: usize) {
        let members: Vec<usize> = (0..self.labels.len())
            .filter(|&i| self.labels[i] as usize == j)
            .collect();
        for i in members {
            self.remove(i);
            self.add(i, k);
        }
    }

    /// Merges of two clusters, the best first, while one lowers the expected loss by
    /// [`IMPROVEMENT`], each followed by sweetening; only while there are at most
    /// [`MERGE_MAX_CLUSTERS`] clusters. Sequential allocation and single-point moves cannot
    /// join two clusters whose points each prefer their own: merges can. Cost per merge
    /// O(K² (C + M)) to choose it.
    fn merge_while_better(&mut self, max_scans: usize, rng: &mut NrmmRng, scratch: &mut Scratch) {
        loop {
            let occupied: Vec<usize> = (0..self.sizes.len())
                .filter(|&k| self.sizes[k] > 0)
                .collect();
            if occupied.len() < 2 || occupied.len() > MERGE_MAX_CLUSTERS || self.spent() {
                return;
            }
            // Weighing a pair reads every draw's columns ([`Allocation::merged`]).
            let pairs = occupied.len() * (occupied.len() - 1) / 2;
            self.work += (pairs * self.draws.total_columns()) as u64;
            let now = self.expected();
            let mut best = (now, None);
            for (a, &k) in occupied.iter().enumerate() {
                for &j in &occupied[a + 1..] {
                    let v = self.merged(k, j);
                    if v < best.0 {
                        best = (v, Some((k, j)));
                    }
                }
            }
            match best {
                (v, Some((k, j))) if v + IMPROVEMENT * (v.abs() + now.abs()) < now => {
                    self.merge(k, j);
                    self.sweeten(max_scans, rng, scratch);
                }
                _ => return,
            }
        }
    }

    /// Sweetening, then merges while they help.
    fn polish(&mut self, max_scans: usize, rng: &mut NrmmRng, scratch: &mut Scratch) {
        self.sweeten(max_scans, rng, scratch);
        self.merge_while_better(max_scans, rng, scratch);
    }

    /// Canonical labels of a complete allocation's points. Cost O(n).
    /// Each atom's cluster: the partition as the atoms hold it (A numbers, not n).
    fn into_atom_labels(self) -> Vec<u32> {
        self.labels
    }
}

/// `f(x)` of `loss` for the counts `x` a search over `draws` tabulates: below `n + 2` and
/// [`F_TABLE`].
fn f_table(draws: &DrawSet, loss: PartitionLoss) -> Arc<[f64]> {
    (0..(draws.n() as u32 + 2).min(F_TABLE))
        .map(|x| loss.f(x))
        .collect()
}

/// The canonical labels of the points of `draws` whose atoms are in the clusters
/// `atom_labels`. Cost: O(n log K).
fn point_labels(draws: &DrawSet, atom_labels: &[u32]) -> Vec<usize> {
    let points: Vec<u32> = (0..draws.n())
        .map(|i| atom_labels[draws.atom_of(i)])
        .collect();
    crate::data::canonical_labels(&points)
}

/// The numbers `0..n` in an order drawn uniformly (Fisher-Yates).
fn shuffled(n: usize, rng: &mut NrmmRng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, uniform_index(rng, i + 1));
    }
    order
}

/// What one run found.
struct RunResult {
    /// The expected loss of its partition.
    expected: f64,
    /// Each atom's cluster (the points' labels follow from them: [`point_labels`]).
    atom_labels: Vec<u32>,
    /// Whether it stopped at its bound on work ([`SearchSettings::max_work`]).
    bounded: bool,
}

/// One run: a sequential allocation, sweetening, then zealous updates each followed by
/// sweetening and kept when the loss falls, all after the allocation within the run's work
/// ([`SearchSettings::max_work`]).
fn run(
    draws: &DrawSet,
    loss: PartitionLoss,
    f: &Arc<[f64]>,
    settings: &SearchSettings,
    sequential: bool,
    rng: &mut NrmmRng,
) -> RunResult {
    let mut scratch = Scratch::default();
    let mut state = Allocation::empty(draws, loss, Arc::clone(f));
    if sequential {
        let order = shuffled(draws.atoms(), rng);
        state.allocate(&order, &mut scratch);
    } else {
        // Uniformly into `k` clusters, `k` uniform up to the most any draw has: sweetening
        // from a coarse start reaches optima that a sequential allocation, which opens
        // clusters freely among the first few points, walks past.
        let most = (0..draws.len())
            .map(|m| draws.n_clusters(m))
            .max()
            .unwrap_or(1);
        let k = 1 + uniform_index(rng, most);
        state.open_slots(k);
        for i in 0..draws.atoms() {
            state.add(i, uniform_index(rng, k));
        }
    }
    // The bound counts from here: a run always has a complete partition to improve on.
    state.work = 0;
    state.max_work = settings.max_work.unwrap_or(u64::MAX);
    state.polish(settings.max_scans, rng, &mut scratch);
    let mut attempts = 0;
    'zealous: while attempts < settings.zealous {
        let occupied: Vec<usize> = (0..state.sizes.len())
            .filter(|&k| state.sizes[k] > 0)
            .collect();
        if occupied.len() < 2 {
            break;
        }
        let mut improved = false;
        for pick in shuffled(occupied.len(), rng) {
            if attempts == settings.zealous || state.spent() {
                break 'zealous;
            }
            attempts += 1;
            let k = occupied[pick];
            let before = state.expected();
            let saved = state.clone();
            let members: Vec<usize> = shuffled(draws.atoms(), rng)
                .into_iter()
                .filter(|&i| state.labels[i] as usize == k)
                .collect();
            for &i in &members {
                state.remove(i);
            }
            state.allocate(&members, &mut scratch);
            state.polish(settings.max_scans, rng, &mut scratch);
            let after = state.expected();
            if after + IMPROVEMENT * (after.abs() + before.abs()) < before {
                improved = true;
                // The clusters are renumbered: pick again among the new ones.
                break;
            }
            // The attempt's work was spent though its partition is not kept.
            let work = state.work;
            state = saved;
            state.work = work;
        }
        if !improved {
            break;
        }
    }
    RunResult {
        expected: state.expected(),
        bounded: state.spent(),
        atom_labels: state.into_atom_labels(),
    }
}

/// Most partition-draw pairs scored when every partition is tried: `B_n M`, 4,140 × 1,207
/// at n = 8, well under a second.
const ENUMERATION_WORK: u64 = 5_000_000;

/// The partition minimising the posterior expected `loss` over `draws`: by trying every set
/// partition when that is cheap (the Bell number `B_n` times the draws at
/// most 5·10⁶, so n ≤ 8 for up to 1,207 draws), where it is exact, else by
/// [`search_expected_loss`]. Errors on an invalid loss or settings. Cost: O(B_n M (n + K²))
/// enumerating, the search's otherwise.
pub fn minimise_expected_loss(
    draws: &DrawSet,
    loss: PartitionLoss,
    settings: &SearchSettings,
) -> Result<LossEstimate> {
    loss.validate()?;
    settings.validate()?;
    let enumerable = draws.n() <= MAX_EXACT_N
        && bell_number(draws.n())?.saturating_mul(draws.len() as u64) <= ENUMERATION_WORK;
    if !enumerable {
        return search_expected_loss(draws, loss, settings);
    }
    let mut best: Option<(f64, Vec<usize>)> = None;
    for rgs in SetPartitions::new(draws.n())? {
        let labels: Vec<usize> = rgs.labels().iter().map(|&l| usize::from(l)).collect();
        let value = draws.expected_loss(loss, &labels)?;
        if best.as_ref().is_none_or(|b| value < b.0) {
            best = Some((value, labels));
        }
    }
    let (expected_loss, labels) = best.expect("every n has a partition");
    Ok(LossEstimate {
        loss,
        method: format!("enumeration of all {} partitions", bell_number(draws.n())?),
        expected_loss,
        n_clusters: labels.iter().max().map_or(0, |m| m + 1),
        among: draws.len(),
        run: None,
        labels,
    })
}

/// The partition minimising the posterior expected `loss` over `draws` as the SALSO-style
/// search of the module documentation finds it, with its expected loss recomputed from the
/// draws. Runs in parallel (rayon); the result does not depend on the number of threads.
/// Errors on an invalid loss or settings. Cost: O(A M (K + 1)) per scan for `A` atoms, a few
/// scans per allocation, `runs × (1 + zealous)` allocations, and O(n) for the labels.
pub fn search_expected_loss(
    draws: &DrawSet,
    loss: PartitionLoss,
    settings: &SearchSettings,
) -> Result<LossEstimate> {
    loss.validate()?;
    settings.validate()?;
    let plan = SeedPlan::new(settings.seed);
    let f = f_table(draws, loss);
    // Each run keeps its partition by atoms; only the best is spelled out per point (on a
    // million points, 8 MB a run otherwise).
    let results: Vec<RunResult> = (0..settings.runs)
        .into_par_iter()
        .map(|r| {
            // Stream `r` of a key no chain uses (chains use the chain streams).
            let mut rng = plan.task(u64::MAX, u64::MAX, r as u64);
            run(draws, loss, &f, settings, r % 2 == 0, &mut rng)
        })
        .collect();
    let bounded = results.iter().filter(|r| r.bounded).count();
    let (run, best) = results
        .into_iter()
        .enumerate()
        .min_by(|a, b| a.1.expected.total_cmp(&b.1.expected).then(a.0.cmp(&b.0)))
        .expect("at least one run");
    let labels = point_labels(draws, &best.atom_labels);
    let expected_loss = draws.expected_loss(loss, &labels)?;
    let method = match bounded {
        0 => format!("salso search, best of {} runs", settings.runs),
        b => format!(
            "salso search, best of {} runs ({b} stopped at the bound on work)",
            settings.runs
        ),
    };
    Ok(LossEstimate {
        loss,
        method,
        expected_loss,
        n_clusters: labels.iter().max().map_or(0, |m| m + 1),
        among: draws.len(),
        run: Some(run),
        labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::{with_level, Level};

    /// The slots' sums of one minus the ARI scored in vector lanes equal, bit for bit, a loop
    /// over the draws per slot of the scalar definition (`PartitionLoss::combine`), at every
    /// level this CPU runs, for 4, 10 and 19 candidate slots (a group of [`SLOT_LANES`] part
    /// full, one full and one part, two full and one part), for atoms of one point and of
    /// several (each base point repeated once to three times; the atom scored has three).
    #[test]
    fn vector_scores_of_one_minus_ari_equal_the_scalar_loop() {
        let mut rng = SeedPlan::new(7).chain(0);
        for (n, k, m, repeat) in [
            (40, 3, 5, false),
            (50, 9, 23, false),
            (60, 18, 37, false),
            (50, 9, 23, true),
        ] {
            let times = |p: usize| if repeat { 3 - (n - 1 - p) % 3 } else { 1 };
            let draws: Vec<Vec<usize>> = (0..m)
                .map(|_| {
                    (0..n)
                        .flat_map(|p| std::iter::repeat_n(uniform_index(&mut rng, k + 2), times(p)))
                        .collect()
                })
                .collect();
            let set = DrawSet::new(&draws).unwrap();
            let loss = PartitionLoss::OneMinusAri;
            let mut state = Allocation::empty(&set, loss, f_table(&set, loss));
            state.open_slots(k);
            let i = set.atoms() - 1;
            assert_eq!(set.weight(i), if repeat { 3 } else { 1 });
            for atom in 0..i {
                state.add(atom, atom % k);
            }
            let new = state.free_slot();
            let candidates: Vec<usize> = (0..state.sizes.len())
                .filter(|&s| state.sizes[s] > 0 || s == new)
                .collect();
            assert_eq!(candidates.len(), k + 1);
            let w = set.weight(i);
            let scalar: Vec<u64> = candidates
                .iter()
                .map(|&slot| {
                    let a_sum = state.a_sum + state.step(state.sizes[slot], w);
                    set.atom_columns(i)
                        .iter()
                        .enumerate()
                        .map(|(d, &c)| {
                            let c = c as usize;
                            let b = state.b[d] + state.step(state.column_sizes[c], w);
                            let s = state.s[d] + state.step(state.rows[slot][c], w);
                            state.loss.combine(a_sum, b, s, state.placed + w as usize)
                        })
                        .sum::<f64>()
                        .to_bits()
                })
                .collect();
            for level in Level::ALL {
                let mut scratch = Scratch {
                    candidates: candidates.clone(),
                    ..Scratch::default()
                };
                with_level(level, || state.score_one_minus_ari(i, &mut scratch));
                let lanes: Vec<u64> = scratch.sums.iter().map(|v| v.to_bits()).collect();
                assert_eq!(lanes, scalar, "{level:?}, {} slots", k + 1);
            }
        }
    }
}
