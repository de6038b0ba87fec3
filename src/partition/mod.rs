//! The clustering state shared by every marginal sampler: one label per point plus, per
//! cluster, its members, its kernel statistic and its cached log marginal (MATH §1.3, P17).
//!
//! Clusters live in slots; a freed slot is reused last-in first-out, so the slot layout is a
//! deterministic function of the history of moves, never of addresses or hash order. The
//! canonical key of a cluster is its smallest member index, used wherever an order must not
//! depend on the history (output labels, ordered merges).

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::kernel::{ConjugateKernel, PointIndex};
use crate::prior::NrmPrior;

mod snapshot;
pub use snapshot::PartitionSnapshot;

/// Slot index of a cluster inside a [`Partition`].
pub type Slot = usize;

/// Points per chunk of [`batch_stat`].
const BATCH_CHUNK: usize = 1 << 16;

/// A point's slot, its position in a member list, or a point in a member list, as a
/// [`Partition`] stores them: 4 bytes instead of 8 per point (a chain over 10⁶ points holds
/// three per point), which bounds a partition to [`MAX_POINTS`] points.
type Compact = u32;

/// The label of a point that is in no cluster (between [`Partition::remove`] and an insert).
const UNASSIGNED: Compact = Compact::MAX;

/// Points from which [`Partition::canonical_labels_as`] labels in parallel.
const PARALLEL_LABELS: usize = 1 << 15;

/// The most points a [`Partition`] holds: slots and positions are stored in 32 bits, with
/// one value kept for an unassigned point.
pub const MAX_POINTS: usize = UNASSIGNED as usize;

/// `x` (a slot, a position or a point, below [`MAX_POINTS`] since a partition holds no more
/// points) as stored.
#[inline]
fn compact(x: usize) -> Compact {
    debug_assert!(x < MAX_POINTS);
    x as Compact
}

/// An error unless `n` points fit a [`Partition`].
fn check_points(n: usize) -> Result<()> {
    if n > MAX_POINTS {
        return Err(Error::Usage(format!(
            "{n} points: a partition holds at most {MAX_POINTS} (its labels are 32-bit); \
             split the data or subsample it"
        )));
    }
    Ok(())
}

/// The statistic of `points` (in either width, [`PointIndex`]), [`ConjugateKernel::stat_of`]
/// of fixed chunks of 65,536 points in parallel, merged in chunk order: the same on any thread
/// count and in either width, and on one chunk exactly `stat_of`. A cluster of a million
/// points is summarised on every core instead of one. Cost: one `stat_of` per chunk, spread
/// over the threads, and one `merge` per chunk after the first.
pub fn batch_stat<K: ConjugateKernel, I: PointIndex>(kernel: &K, points: &[I]) -> K::Stat {
    if points.len() <= BATCH_CHUNK {
        return I::stat_of(kernel, points);
    }
    let parts: Vec<K::Stat> = points
        .par_chunks(BATCH_CHUNK)
        .map(|chunk| I::stat_of(kernel, chunk))
        .collect();
    let mut parts = parts.into_iter();
    let mut total = parts.next().expect("at least two chunks");
    for part in parts {
        kernel.merge(&mut total, &part);
    }
    total
}

/// One cluster: members (unordered, in 32 bits), sufficient statistic and cached `ln m(X_c)`.
#[derive(Clone, Debug)]
pub struct Cluster<S> {
    members: Vec<Compact>,
    stat: S,
    ln_m: f64,
}

impl<S> Cluster<S> {
    /// Number of points.
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// Member indices, in no particular order, in 32 bits (a partition holds at most
    /// [`MAX_POINTS`] points): `i as usize` is the point.
    pub fn members(&self) -> &[u32] {
        &self.members
    }

    /// Member indices as `usize`, in the order of [`Cluster::members`].
    pub fn member_indices(&self) -> impl ExactSizeIterator<Item = usize> + Clone + '_ {
        self.members.iter().map(|&i| i as usize)
    }

    /// The kernel statistic.
    pub fn stat(&self) -> &S {
        &self.stat
    }

    /// Cached `ln m(X_c)`.
    pub fn ln_marginal(&self) -> f64 {
        self.ln_m
    }

    /// Canonical key: the smallest member index. Cost O(size).
    pub fn key(&self) -> usize {
        self.members
            .iter()
            .copied()
            .min()
            .map_or(usize::MAX, |i| i as usize)
    }
}

/// The source of [`Partition::revision`] numbers, shared by every partition of the process
/// so that two partitions with different histories never share a number.
static REVISIONS: AtomicU64 = AtomicU64::new(0);

/// A revision number never handed out before.
fn fresh_revision() -> u64 {
    REVISIONS.fetch_add(1, Ordering::Relaxed)
}

/// Labels plus per-cluster statistics for a data set held by a kernel `K`.
///
/// Invariants (checked by [`Partition::validate`]): every point is in exactly one live
/// cluster, `label[i]` is that cluster's slot, `pos[i]` its position in the member list, each
/// statistic equals the batch statistic of its members, and no live cluster is empty.
/// Memory: 12 bytes per point, 4 each for `label`, `pos` and its entry in a member list
/// (32-bit, see [`MAX_POINTS`]), beside the statistics.
#[derive(Clone, Debug)]
pub struct Partition<K: ConjugateKernel> {
    label: Vec<Compact>,
    pos: Vec<Compact>,
    slots: Vec<Option<Cluster<K::Stat>>>,
    free: Vec<Slot>,
    n_clusters: usize,
    revision: u64,
}

impl<K: ConjugateKernel> Partition<K> {
    /// A partition from labels (any integers; equal labels share a cluster). Slots are
    /// assigned in order of first appearance. Errors if the length differs from the data.
    pub fn from_labels<L: Copy + Ord>(kernel: &K, labels: &[L]) -> Result<Self> {
        Self::check_labels(kernel, labels)?;
        Ok(Self::build(kernel, labels, Vec::new(), Vec::new()))
    }

    /// Makes this partition the one [`Partition::from_labels`] builds from `labels`, reusing
    /// its per-point buffers and freeing its member lists before the new ones are made, so
    /// that a rebuild never holds two partitions (12 bytes a point each) at once. Errors as
    /// `from_labels` does, leaving the partition unchanged. Cost: as `from_labels`.
    pub fn rebuild_from_labels<L: Copy + Ord>(&mut self, kernel: &K, labels: &[L]) -> Result<()> {
        Self::check_labels(kernel, labels)?;
        let label = std::mem::take(&mut self.label);
        let pos = std::mem::take(&mut self.pos);
        self.slots = Vec::new();
        *self = Self::build(kernel, labels, label, pos);
        Ok(())
    }

    /// Errors unless `labels` holds one label per point of `kernel`, at most [`MAX_POINTS`].
    fn check_labels<L>(kernel: &K, labels: &[L]) -> Result<()> {
        let n = kernel.n_points();
        if labels.len() != n {
            return Err(Error::DimensionMismatch(format!(
                "{} labels for {n} data points",
                labels.len()
            )));
        }
        check_points(n)
    }

    /// The partition of checked `labels`, its `label` and `pos` written into the given
    /// buffers (cleared first).
    fn build<L: Copy + Ord>(
        kernel: &K,
        labels: &[L],
        mut label: Vec<Compact>,
        mut pos: Vec<Compact>,
    ) -> Self {
        // Canonical labels as `crate::data::canonical_labels` numbers them, stored compact,
        // and each member list allocated at its size: no transient copy of the labels at
        // 8 bytes a point, no member list grown by doubling.
        let mut number = std::collections::BTreeMap::new();
        let mut sizes: Vec<usize> = Vec::new();
        label.clear();
        label.extend(labels.iter().map(|l| {
            let next = number.len();
            let c = *number.entry(*l).or_insert(next);
            if c == sizes.len() {
                sizes.push(0);
            }
            sizes[c] += 1;
            compact(c)
        }));
        let k = sizes.len();
        let mut members: Vec<Vec<Compact>> = sizes.iter().map(|&m| Vec::with_capacity(m)).collect();
        pos.clear();
        pos.extend(label.iter().enumerate().map(|(i, &c)| {
            let m = &mut members[c as usize];
            m.push(compact(i));
            compact(m.len() - 1)
        }));
        let slots = members
            .into_par_iter()
            .map(|m| {
                let stat = batch_stat(kernel, &m);
                let ln_m = kernel.ln_marginal(&stat);
                Some(Cluster {
                    members: m,
                    stat,
                    ln_m,
                })
            })
            .collect();
        Partition {
            label,
            pos,
            slots,
            free: Vec::new(),
            n_clusters: k,
            revision: fresh_revision(),
        }
    }

    /// All points in one cluster. Panics beyond [`MAX_POINTS`] points (use
    /// [`Partition::from_labels`] for the error instead).
    pub fn single(kernel: &K) -> Self {
        Self::from_labels(kernel, &vec![0u8; kernel.n_points()]).expect("lengths agree")
    }

    /// Every point in its own cluster. Panics beyond [`MAX_POINTS`] points (as
    /// [`Partition::single`]).
    pub fn singletons(kernel: &K) -> Self {
        let labels: Vec<usize> = (0..kernel.n_points()).collect();
        Self::from_labels(kernel, &labels).expect("lengths agree")
    }

    /// Number of points.
    pub fn n(&self) -> usize {
        self.label.len()
    }

    /// An identifier of which points share clusters: every change of a point's cluster
    /// (remove, insert, split, merge) gives the partition a number never used before by any
    /// partition of this process, and a clone keeps its original's. Equal revisions therefore
    /// mean equal clusters (in the same slots), which lets a move that keeps structures of
    /// its own in step with the partition (such as trees) check in O(1) that nothing else
    /// changed it. Statistics and member order are not covered. Cost: O(1).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Recomputes every live cluster's statistic with `refresh` and its cached log marginal
    /// under `kernel`, after the kernel's hyperparameters changed (see
    /// [`crate::kernel::HyperKernel::refresh_stat`]). Members, slots and the revision stay as
    /// they are. Cost: one `refresh` per cluster (O(K d³) for the Normal-Wishart kernel).
    pub fn refresh_stats(&mut self, kernel: &K, mut refresh: impl FnMut(&mut K::Stat)) {
        for c in self.slots.iter_mut().flatten() {
            refresh(&mut c.stat);
            c.ln_m = kernel.ln_marginal(&c.stat);
        }
    }

    /// Recomputes every live cluster's statistic from its members and its cached log marginal
    /// under `kernel`, after the kernel's data changed (latent values redrawn,
    /// [`ConjugateKernel::redraw_latent`]). Members, slots and the revision stay as they are.
    /// Cost: one batch statistic per cluster, O(n) `add`s.
    pub fn rebuild_stats(&mut self, kernel: &K) {
        for c in self.slots.iter_mut().flatten() {
            c.stat = batch_stat(kernel, &c.members);
            c.ln_m = kernel.ln_marginal(&c.stat);
        }
    }

    /// Number of non-empty clusters.
    pub fn n_clusters(&self) -> usize {
        self.n_clusters
    }

    /// The slot of point `i`'s cluster.
    #[inline]
    pub fn slot_of(&self, i: usize) -> Slot {
        self.label[i] as Slot
    }

    /// The cluster in `slot`, if live.
    #[inline]
    pub fn cluster(&self, slot: Slot) -> Option<&Cluster<K::Stat>> {
        self.slots.get(slot).and_then(Option::as_ref)
    }

    /// Live slots in increasing slot order (deterministic).
    pub fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(s, c)| c.as_ref().map(|_| s))
    }

    /// Live clusters with their slots, in increasing slot order (deterministic): the same
    /// order as [`Partition::slots`], without a second lookup per slot.
    #[inline]
    pub fn clusters(&self) -> impl Iterator<Item = (Slot, &Cluster<K::Stat>)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(s, c)| c.as_ref().map(|c| (s, c)))
    }

    /// Upper bound (exclusive) on slot indices, for slot-indexed scratch buffers.
    pub fn slot_capacity(&self) -> usize {
        self.slots.len()
    }

    /// Live slots ordered by canonical key (smallest member). Cost O(n).
    pub fn slots_by_key(&self) -> Vec<Slot> {
        let mut keyed: Vec<(usize, Slot)> = self
            .slots()
            .map(|s| (self.slots[s].as_ref().map_or(usize::MAX, Cluster::key), s))
            .collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, s)| s).collect()
    }

    /// Labels `0..K` numbered by canonical key (the cluster of point 0 is 0, the next new
    /// cluster met in index order is 1, ...): the restricted growth string of the partition.
    /// Cost: O(n).
    pub fn canonical_labels(&self) -> Vec<usize> {
        self.canonical_labels_as(|c| c as usize)
    }

    /// [`Partition::canonical_labels`] in 32 bits (they fit: [`MAX_POINTS`]), half the memory,
    /// for a copy held while the partition changes. Cost: O(n).
    pub fn compact_canonical_labels(&self) -> Vec<u32> {
        self.canonical_labels_as(|c| c)
    }

    /// The canonical labels through `f` (a narrower type that holds every label below
    /// [`Partition::n_clusters`]). Above [`PARALLEL_LABELS`] points the slots are numbered
    /// by their smallest members ([`Partition::slots_by_key`], the order of first
    /// appearance) and the points labelled in parallel, the same labels: a draw of a chain of a million points is labelled
    /// every recorded sweep. Cost: O(n), in parallel for many points.
    pub fn canonical_labels_as<T: Send>(&self, f: impl Fn(u32) -> T + Sync) -> Vec<T> {
        if self.label.len() < PARALLEL_LABELS {
            let mut number = vec![UNASSIGNED; self.slots.len()];
            let mut next = 0;
            return self
                .label
                .iter()
                .map(|&s| {
                    let c = &mut number[s as usize];
                    if *c == UNASSIGNED {
                        *c = next;
                        next += 1;
                    }
                    f(*c)
                })
                .collect();
        }
        let mut number = vec![UNASSIGNED; self.slots.len()];
        for (k, s) in self.slots_by_key().into_iter().enumerate() {
            number[s] = k as Compact;
        }
        self.label
            .par_iter()
            .with_min_len(PARALLEL_LABELS / 2)
            .map(|&s| f(number[s as usize]))
            .collect()
    }

    /// Cluster sizes in slot order.
    pub fn sizes(&self) -> Vec<usize> {
        self.slots()
            .map(|s| self.slots[s].as_ref().map_or(0, Cluster::size))
            .collect()
    }

    /// The log joint under `prior` (MATH §1.2): `const + Σ_c [ln κ(n_c) + ln m(X_c)]`, with
    /// `ln V(n, K)` added to the constant for a Gibbs-type prior ([`NrmPrior::ln_v_k`]).
    pub fn ln_joint<P: NrmPrior>(&self, prior: &P) -> f64 {
        let mut total = prior.ln_joint_const(self.n());
        if prior.k_dependent() {
            total += prior.ln_v_k(self.n(), self.n_clusters());
        }
        for c in self.slots.iter().flatten() {
            total += prior.ln_kappa(c.size()) + c.ln_m;
        }
        total
    }

    /// Exchanges the clusterings of `self` and `other`, two partitions of the same data under
    /// kernels with the same statistics (a kernel and its [`crate::kernel::Tempered`] copy, or
    /// two tempered copies): labels, members and statistics change places, and each cached
    /// `ln m(X_c)` is recomputed by its partition's own kernel (`kernel` for `self`,
    /// `other_kernel` for `other`), as an insert would have left it. Both get fresh
    /// revisions. The swap move of parallel tempering. Cost: O(1) moves and one `ln_marginal`
    /// per cluster.
    pub fn exchange<K2: ConjugateKernel<Stat = K::Stat>>(
        &mut self,
        kernel: &K,
        other: &mut Partition<K2>,
        other_kernel: &K2,
    ) {
        std::mem::swap(&mut self.label, &mut other.label);
        std::mem::swap(&mut self.pos, &mut other.pos);
        std::mem::swap(&mut self.slots, &mut other.slots);
        std::mem::swap(&mut self.free, &mut other.free);
        std::mem::swap(&mut self.n_clusters, &mut other.n_clusters);
        self.revision = fresh_revision();
        other.revision = fresh_revision();
        for c in self.slots.iter_mut().flatten() {
            c.ln_m = kernel.ln_marginal(&c.stat);
        }
        for c in other.slots.iter_mut().flatten() {
            c.ln_m = other_kernel.ln_marginal(&c.stat);
        }
    }

    /// `Σ_c ln m(X_c)` under `kernel`, which shares the partition's statistics (the
    /// untempered kernel of a [`crate::kernel::Tempered`] partition): the log likelihood
    /// that tempering scales. Cost: one `ln_marginal` per cluster.
    pub fn ln_likelihood_under<K2: ConjugateKernel<Stat = K::Stat>>(&self, kernel: &K2) -> f64 {
        self.slots
            .iter()
            .flatten()
            .map(|c| kernel.ln_marginal(&c.stat))
            .sum()
    }

    /// Removes point `i` from its cluster, freeing the slot if it empties; returns the slot.
    /// The point is then unassigned until [`Partition::insert`] or [`Partition::insert_new`].
    pub fn remove(&mut self, kernel: &K, i: usize) -> Slot {
        self.revision = fresh_revision();
        let s = self.slot_of(i);
        let c = self.slots[s].as_mut().expect("point's cluster is live");
        let p = self.pos[i];
        c.members.swap_remove(p as usize);
        if let Some(&moved) = c.members.get(p as usize) {
            self.pos[moved as usize] = p;
        }
        if c.members.is_empty() {
            self.slots[s] = None;
            self.free.push(s);
            self.n_clusters -= 1;
        } else {
            kernel.remove(&mut c.stat, i);
            c.ln_m = kernel.ln_marginal(&c.stat);
        }
        self.label[i] = UNASSIGNED;
        s
    }

    /// Adds unassigned point `i` to the live cluster in `slot`.
    pub fn insert(&mut self, kernel: &K, i: usize, slot: Slot) {
        self.revision = fresh_revision();
        let c = self.slots[slot].as_mut().expect("target cluster is live");
        self.pos[i] = compact(c.members.len());
        c.members.push(compact(i));
        kernel.add(&mut c.stat, i);
        c.ln_m = kernel.ln_marginal(&c.stat);
        self.label[i] = compact(slot);
    }

    /// Moves each point `i` of `moves` (pairs `(i, to)`: distinct points, in increasing
    /// index order, each into a live cluster `to` other than its own) and leaves exactly what
    /// [`Partition::remove`] then [`Partition::insert`] for each move, in that order, leave:
    /// the same member orders, positions and statistics, bit for bit. Each cluster replays
    /// its own removals and insertions, in the order of `moves`, in a task of its own, so a
    /// batch spreads over the threads by cluster and its result does not depend on their
    /// number; each cached marginal is computed once, from the final statistic, instead of
    /// after every move. Errors, changing nothing, when a move's target is not live or is the
    /// point's own cluster, or when a cluster would lose every point (the slot it would free
    /// could be reused by a later insertion, an order the tasks cannot replay). Cost:
    /// O(|moves|) statistic updates spread over the touched clusters' tasks, one `ln m` per
    /// touched cluster, and O(|moves|) serial bookkeeping.
    pub fn move_points(&mut self, kernel: &K, moves: &[(usize, Slot)]) -> Result<()> {
        if moves.is_empty() {
            return Ok(());
        }
        // Each cluster's events, in the order of `moves`: a point leaving (false) or
        // entering (true).
        let mut events: Vec<Vec<(Compact, bool)>> = vec![Vec::new(); self.slots.len()];
        let mut left = vec![0usize; self.slots.len()];
        for &(i, to) in moves {
            let from = self.slot_of(i);
            if self.slots.get(to).is_none_or(Option::is_none) || to == from {
                return Err(Error::Usage(format!(
                    "move_points: point {i} cannot move from slot {from} to slot {to}"
                )));
            }
            events[from].push((compact(i), false));
            events[to].push((compact(i), true));
            left[from] += 1;
        }
        for (s, c) in self.slots.iter().enumerate() {
            if c.as_ref().is_some_and(|c| left[s] == c.members.len()) {
                return Err(Error::Usage(format!(
                    "move_points: the cluster in slot {s} would lose every point"
                )));
            }
        }
        self.revision = fresh_revision();
        let pos = &self.pos;
        // Each task's new positions of the points that end in its cluster; a point's position
        // changes only by its own cluster's events, so the tasks never write the same point.
        let written: Vec<Vec<(Compact, Compact)>> = self
            .slots
            .par_iter_mut()
            .zip(events.par_iter())
            .filter(|(_, ev)| !ev.is_empty())
            .map(|(c, ev)| {
                let c = c.as_mut().expect("a slot with events is live");
                let mut moved: rustc_hash::FxHashMap<Compact, Compact> =
                    rustc_hash::FxHashMap::default();
                for &(i, enter) in ev {
                    if enter {
                        moved.insert(i, compact(c.members.len()));
                        c.members.push(i);
                        kernel.add(&mut c.stat, i as usize);
                    } else {
                        let p = moved.remove(&i).unwrap_or(pos[i as usize]);
                        c.members.swap_remove(p as usize);
                        if let Some(&last) = c.members.get(p as usize) {
                            moved.insert(last, p);
                        }
                        kernel.remove(&mut c.stat, i as usize);
                    }
                }
                c.ln_m = kernel.ln_marginal(&c.stat);
                moved.into_iter().collect()
            })
            .collect();
        for (i, p) in written.into_iter().flatten() {
            self.pos[i as usize] = p;
        }
        for &(i, to) in moves {
            self.label[i] = compact(to);
        }
        Ok(())
    }

    /// Makes room in the member list of the live cluster in `slot` for `additional` more
    /// points, exactly: a list that grew by doubling as points arrive one at a time could hold
    /// twice its size (4 bytes a point) until the partition is rebuilt. Cost: at most one
    /// reallocation of the list.
    pub fn reserve_members(&mut self, slot: Slot, additional: usize) {
        let c = self.slots[slot].as_mut().expect("target cluster is live");
        c.members.reserve_exact(additional);
    }

    /// Moves point `i` to the back of its cluster's member list without touching statistics:
    /// the member order that [`Partition::remove`] followed by [`Partition::insert`] into the
    /// same cluster leaves. A Gibbs update that keeps a point where it was uses it so that the
    /// member order, which split-merge moves read, is the same as if the point had been taken
    /// out and put back. Cost: O(1).
    pub fn requeue(&mut self, i: usize) {
        // The swap with the last member that a removal and reinsertion amount to.
        let c = self.slots[self.label[i] as Slot].as_mut().expect("live");
        let (p, last) = (self.pos[i], c.members.len() - 1);
        let moved = c.members[last];
        c.members.swap(p as usize, last);
        self.pos[moved as usize] = p;
        self.pos[i] = compact(last);
    }

    /// Puts unassigned point `i` in a new cluster; returns its slot (the most recently freed
    /// slot, else a new one).
    pub fn insert_new(&mut self, kernel: &K, i: usize) -> Slot {
        self.revision = fresh_revision();
        let stat = kernel.stat_of(&[i]);
        let ln_m = kernel.ln_marginal(&stat);
        let cluster = Cluster {
            members: vec![compact(i)],
            stat,
            ln_m,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s] = Some(cluster);
                s
            }
            None => {
                self.slots.push(Some(cluster));
                self.slots.len() - 1
            }
        };
        self.pos[i] = 0;
        self.label[i] = compact(slot);
        self.n_clusters += 1;
        slot
    }

    /// Moves `points` (all in the cluster at `slot`, not all of it) into a new cluster and
    /// returns the new slot. Both statistics are rebuilt from their members in one batch,
    /// which is cheaper than |points| downdates and keeps no drift. Cost: O(n_c) adds.
    pub fn split_off(&mut self, kernel: &K, slot: Slot, points: &[usize]) -> Slot {
        self.split_off_points(kernel, slot, points)
    }

    /// [`Partition::split_off`] of points listed in 32 bits, as member lists hold them.
    pub fn split_off_compact(&mut self, kernel: &K, slot: Slot, points: &[u32]) -> Slot {
        self.split_off_points(kernel, slot, points)
    }

    /// [`Partition::split_off`] in either width ([`PointIndex`]).
    fn split_off_points<I: PointIndex>(&mut self, kernel: &K, slot: Slot, points: &[I]) -> Slot {
        let first = points[0].index();
        self.remove(kernel, first);
        let new = self.insert_new(kernel, first);
        // The new member list at its size, and the old one cut to its own (a cluster of a
        // million points split in six would otherwise keep its whole list's capacity).
        self.members_mut(new).reserve_exact(points.len() - 1);
        for &i in &points[1..] {
            self.detach_member(slot, i.index());
            self.attach_member(new, i.index());
        }
        self.members_mut(slot).shrink_to_fit();
        self.refresh(kernel, slot);
        self.refresh(kernel, new);
        new
    }

    /// Moves every point of the cluster at `src` into the cluster at `dst` and frees `src`.
    /// Cost: one statistic merge plus O(n_src) bookkeeping.
    pub fn merge_clusters(&mut self, kernel: &K, dst: Slot, src: Slot) {
        self.revision = fresh_revision();
        let gone = self.slots[src].take().expect("source cluster is live");
        self.free.push(src);
        self.n_clusters -= 1;
        let c = self.slots[dst].as_mut().expect("target cluster is live");
        c.members.reserve_exact(gone.members.len());
        for &i in &gone.members {
            self.pos[i as usize] = compact(c.members.len());
            c.members.push(i);
            self.label[i as usize] = compact(dst);
        }
        kernel.merge(&mut c.stat, &gone.stat);
        c.ln_m = kernel.ln_marginal(&c.stat);
    }

    /// The member list of the live cluster at `slot`.
    fn members_mut(&mut self, slot: Slot) -> &mut Vec<Compact> {
        &mut self.slots[slot].as_mut().expect("live").members
    }

    /// Unlinks point `i` from the member list of `slot` without touching statistics.
    fn detach_member(&mut self, slot: Slot, i: usize) {
        let c = self.slots[slot].as_mut().expect("live");
        let p = self.pos[i];
        c.members.swap_remove(p as usize);
        if let Some(&moved) = c.members.get(p as usize) {
            self.pos[moved as usize] = p;
        }
    }

    /// Links point `i` into the member list of `slot` without touching statistics.
    fn attach_member(&mut self, slot: Slot, i: usize) {
        let c = self.slots[slot].as_mut().expect("live");
        self.pos[i] = compact(c.members.len());
        c.members.push(compact(i));
        self.label[i] = compact(slot);
    }

    /// Rebuilds the statistic and cached marginal of `slot` from its members.
    fn refresh(&mut self, kernel: &K, slot: Slot) {
        let c = self.slots[slot].as_mut().expect("live");
        c.stat = batch_stat(kernel, &c.members);
        c.ln_m = kernel.ln_marginal(&c.stat);
    }

    /// Checks every invariant against a fresh computation; `tol` bounds the relative error of
    /// cached log marginals. Cost O(n + Σ_c stat_of).
    pub fn validate(&self, kernel: &K, tol: f64) -> Result<()> {
        let mut seen = vec![false; self.n()];
        let mut live = 0;
        for (s, c) in self.slots.iter().enumerate() {
            let Some(c) = c else { continue };
            live += 1;
            if c.members.is_empty() {
                return Err(Error::Numerical(format!("cluster in slot {s} is empty")));
            }
            for (p, &i) in c.members.iter().enumerate() {
                let i = i as usize;
                if i >= self.n() || seen[i] || self.slot_of(i) != s || self.pos[i] as usize != p {
                    return Err(Error::Numerical(format!("point {i} is misfiled")));
                }
                seen[i] = true;
            }
            let fresh = kernel.ln_marginal(&kernel.stat_of_compact(&c.members));
            if (fresh - c.ln_m).abs() > tol * fresh.abs().max(1.0) {
                return Err(Error::Numerical(format!(
                    "cluster {s}: cached ln m {} differs from fresh {fresh}",
                    c.ln_m
                )));
            }
        }
        if live != self.n_clusters || seen.iter().any(|&b| !b) {
            return Err(Error::Numerical(
                "cluster count or coverage is wrong".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseData;
    use crate::kernel::{NormalWishart, NwHyper};
    use std::sync::Arc;

    fn kernel() -> NormalWishart {
        let rows: Vec<Vec<f64>> = (0..8)
            .map(|i| vec![i as f64 * 0.3, (i % 3) as f64 - 1.0])
            .collect();
        let data = DenseData::from_rows(&rows).unwrap();
        let hyper = NwHyper::from_data(&data).unwrap();
        NormalWishart::new(Arc::new(data), hyper).unwrap()
    }

    #[test]
    fn canonical_labels_of_many_points_are_those_of_first_appearance() {
        let n = PARALLEL_LABELS + 1000;
        let rows: Vec<Vec<f64>> = (0..n).map(|i| vec![(i % 17) as f64]).collect();
        let data = DenseData::from_rows(&rows).unwrap();
        let k = NormalWishart::new(
            Arc::new(data),
            NwHyper::new(vec![0.0], vec![1.0], 0.1, 3.0).unwrap(),
        )
        .unwrap();
        // Labels whose clusters first appear out of label order, one of them late.
        let mut labels: Vec<usize> = (0..n).map(|i| (i * 7 + 3) % 5 + 1).collect();
        labels[n - 3] = 9;
        let mut p = Partition::from_labels(&k, &labels).unwrap();
        // The first point moved to the late cluster: it comes first now.
        p.remove(&k, 0);
        let late = p.slot_of(n - 3);
        p.insert(&k, 0, late);
        labels[0] = 9;
        let expected = crate::data::canonical_labels(&labels);
        assert_eq!(p.canonical_labels(), expected);
        let compact: Vec<usize> = p
            .compact_canonical_labels()
            .iter()
            .map(|&c| c as usize)
            .collect();
        assert_eq!(compact, expected);
    }

    #[test]
    fn clusters_follow_slot_order() {
        let k = kernel();
        let mut p = Partition::from_labels(&k, &[0, 1, 0, 2, 1, 0, 2, 3]).unwrap();
        // Free slot 1 so that live slots are not contiguous.
        p.remove(&k, 1);
        p.remove(&k, 4);
        p.insert(&k, 1, 0);
        p.insert(&k, 4, 2);
        let slots: Vec<Slot> = p.slots().collect();
        let pairs: Vec<(Slot, usize)> = p.clusters().map(|(s, c)| (s, c.size())).collect();
        assert_eq!(slots, vec![0, 2, 3]);
        assert_eq!(pairs, vec![(0, 4), (2, 3), (3, 1)]);
    }

    /// A rebuild in place is the partition `from_labels` builds, whatever the partition held
    /// before (freed slots, grown member lists), bit for bit in its statistics; a wrong number
    /// of labels errors and leaves the partition as it was.
    #[test]
    fn rebuild_from_labels_is_from_labels() {
        let k = kernel();
        let labels = [3u8, 3, 1, 0, 1, 3, 0, 0];
        let mut p = Partition::from_labels(&k, &[0, 1, 0, 2, 1, 0, 2, 3]).unwrap();
        p.remove(&k, 7);
        p.reserve_members(0, 5);
        p.insert(&k, 7, 0);
        p.rebuild_from_labels(&k, &labels).unwrap();
        let fresh = Partition::from_labels(&k, &labels).unwrap();
        assert_eq!(p.snapshot(), fresh.snapshot());
        assert_eq!(p.n_clusters(), fresh.n_clusters());
        for ((s, a), (t, b)) in p.clusters().zip(fresh.clusters()) {
            assert_eq!(s, t);
            assert_eq!(a.ln_marginal().to_bits(), b.ln_marginal().to_bits());
        }
        p.validate(&k, 1e-12).unwrap();
        let before = p.snapshot();
        assert!(p.rebuild_from_labels(&k, &labels[..7]).is_err());
        assert_eq!(p.snapshot(), before);
    }

    /// A kernel over `n` points in 3 dimensions, spread so that statistics differ in every
    /// bit when their updates come in another order.
    fn wide_kernel(n: usize) -> NormalWishart {
        let rows: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                let x = i as f64;
                vec![
                    (x * 0.37).sin() * 3.1,
                    (x * 0.11).cos() + x * 0.01,
                    (x % 7.0) - 2.9,
                ]
            })
            .collect();
        let data = DenseData::from_rows(&rows).unwrap();
        let hyper = NwHyper::from_data(&data).unwrap();
        NormalWishart::new(Arc::new(data), hyper).unwrap()
    }

    /// Every cluster of `a` and `b` the same: slot, members in order, positions, statistic
    /// and cached marginal bit for bit.
    fn assert_same_layout(a: &Partition<NormalWishart>, b: &Partition<NormalWishart>) {
        assert_eq!(a.label, b.label);
        assert_eq!(a.pos, b.pos);
        assert_eq!(a.free, b.free);
        assert_eq!(a.n_clusters, b.n_clusters);
        for ((s, x), (t, y)) in a.clusters().zip(b.clusters()) {
            assert_eq!(s, t);
            assert_eq!(x.members(), y.members());
            assert_eq!(format!("{:?}", x.stat()), format!("{:?}", y.stat()));
            assert_eq!(x.ln_marginal().to_bits(), y.ln_marginal().to_bits());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// `move_points` leaves what a removal and an insertion per move, in order, leave, bit
        /// for bit (member orders, positions, statistics, marginals), on one thread and on
        /// four; a batch that would empty a cluster errors and changes nothing.
        #[test]
        fn moving_points_at_once_is_moving_them_one_by_one(
            labels in proptest::collection::vec(0u8..5, 40..120),
            targets in proptest::collection::vec(proptest::option::weighted(0.3, 0u8..5), 120),
        ) {
            let k = wide_kernel(labels.len());
            let start = Partition::from_labels(&k, &labels).unwrap();
            let slot_of_label: Vec<Option<Slot>> = (0u8..5)
                .map(|l| labels.iter().position(|&x| x == l).map(|i| start.slot_of(i)))
                .collect();
            // Moves to live clusters other than the point's own, each cluster keeping a point.
            let mut moves = Vec::new();
            let mut left = vec![0usize; start.slot_capacity()];
            for (i, t) in targets.iter().take(labels.len()).enumerate() {
                let Some(to) = t.and_then(|l| slot_of_label[l as usize]) else { continue };
                let from = start.slot_of(i);
                if to != from && left[from] + 1 < start.cluster(from).unwrap().size() {
                    left[from] += 1;
                    moves.push((i, to));
                }
            }
            let mut serial = start.clone();
            for &(i, to) in &moves {
                serial.remove(&k, i);
                serial.insert(&k, i, to);
            }
            for threads in [1, 4] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let mut batch = start.clone();
                pool.install(|| batch.move_points(&k, &moves)).unwrap();
                assert_same_layout(&batch, &serial);
                batch.validate(&k, 1e-9).unwrap();
            }
            // Every point of a cluster leaving it is refused, and nothing moves.
            let (slot, c) = start.clusters().next().unwrap();
            let other = start.slots().find(|&s| s != slot);
            if let Some(to) = other {
                let all: Vec<(usize, Slot)> = {
                    let mut m: Vec<usize> = c.member_indices().collect();
                    m.sort_unstable();
                    m.into_iter().map(|i| (i, to)).collect()
                };
                let mut refused = start.clone();
                proptest::prop_assert!(refused.move_points(&k, &all).is_err());
                assert_same_layout(&refused, &start);
            }
        }
    }

    #[test]
    fn revisions_change_with_membership_and_are_never_reused() {
        let k = kernel();
        let mut p = Partition::from_labels(&k, &[0, 1, 0, 2, 1, 0, 2, 3]).unwrap();
        let other = Partition::from_labels(&k, &[0, 1, 0, 2, 1, 0, 2, 3]).unwrap();
        assert_ne!(
            p.revision(),
            other.revision(),
            "two partitions, two histories"
        );
        let copy = p.clone();
        assert_eq!(
            copy.revision(),
            p.revision(),
            "a clone holds the same clusters"
        );
        let mut seen = vec![p.revision(), other.revision()];
        let mut record = |p: &Partition<NormalWishart>| {
            assert!(
                !seen.contains(&p.revision()),
                "revision {} reused",
                p.revision()
            );
            seen.push(p.revision());
        };
        let s = p.remove(&k, 1);
        record(&p);
        p.insert(&k, 1, s);
        record(&p);
        p.remove(&k, 7);
        record(&p);
        let new = p.insert_new(&k, 7);
        record(&p);
        p.merge_clusters(&k, 0, new);
        record(&p);
        let split = p.split_off(&k, 0, &[2, 5]);
        record(&p);
        let before = p.revision();
        p.requeue(2);
        assert_eq!(p.revision(), before, "member order is not membership");
        assert!(p.cluster(split).is_some());
        let restored = Partition::restore(&k, &p.snapshot()).unwrap();
        assert_ne!(restored.revision(), p.revision());
    }

    /// Member lists hold points in 32 bits: after every kind of change each list entry is a
    /// point filed under that slot at that position, the widened list reads the same points,
    /// and the statistics of a list are those of its `usize` copy, bit for bit.
    #[test]
    fn member_lists_in_32_bits_stay_consistent() {
        let k = kernel();
        let mut p = Partition::from_labels(&k, &[0, 1, 0, 2, 1, 0, 2, 3]).unwrap();
        p.remove(&k, 6);
        let s = p.insert_new(&k, 6);
        p.merge_clusters(&k, 0, s);
        let new = p.split_off_compact(&k, 0, &[2u32, 6]);
        let other = p.split_off(&k, 1, &[4usize]);
        p.requeue(5);
        p.remove(&k, 3);
        p.insert(&k, 3, new);
        p.validate(&k, 1e-12).unwrap();
        assert!(p.cluster(other).is_some());
        let mut seen = 0;
        for (s, c) in p.clusters() {
            let wide: Vec<usize> = c.member_indices().collect();
            assert_eq!(wide.len(), c.size());
            for (pos, (&m, &w)) in c.members().iter().zip(&wide).enumerate() {
                assert_eq!(m as usize, w);
                assert_eq!((p.slot_of(w), p.pos[w] as usize), (s, pos));
            }
            let (compact, plain) = (batch_stat(&k, c.members()), batch_stat(&k, &wide));
            assert_eq!(
                k.ln_marginal(&compact).to_bits(),
                k.ln_marginal(&plain).to_bits()
            );
            assert_eq!(c.key(), *wide.iter().min().unwrap());
            seen += c.size();
        }
        assert_eq!(seen, p.n());
        let restored = Partition::restore(&k, &p.snapshot()).unwrap();
        for (s, c) in p.clusters() {
            assert_eq!(restored.cluster(s).unwrap().members(), c.members());
        }
    }

    /// [`ConjugateKernel::stat_of_compact`] and a batch statistic over several chunks give
    /// the statistics of the same points as `usize`, bit for bit, for the kernels that read
    /// 32-bit lists themselves and for the default that widens them.
    #[test]
    fn statistics_of_32_bit_lists_match_to_the_bit() {
        use crate::kernel::beta_bernoulli::BetaBernoulli;
        use crate::kernel::{DiagHyper, Diagonal, Tempered};
        let n = 2 * BATCH_CHUNK + 77;
        let x: Vec<f64> = (0..2 * n)
            .map(|j| ((j * 7919) % 1013) as f64 * 0.01 - (j % 5) as f64)
            .collect();
        let data = Arc::new(DenseData::new(n, 2, x).unwrap());
        let nw = NormalWishart::new(data.clone(), NwHyper::from_data(&data).unwrap()).unwrap();
        let diag = Diagonal::new(
            data.clone(),
            DiagHyper::from_data(&data, 1.0, 0.1, 3.0).unwrap(),
        )
        .unwrap();
        let wide: Vec<usize> = (0..n).filter(|i| i % 3 != 1).rev().collect();
        let narrow: Vec<u32> = wide.iter().map(|&i| i as u32).collect();
        let bits = |v: f64| v.to_bits();
        assert_eq!(
            bits(nw.ln_marginal(&batch_stat(&nw, &narrow))),
            bits(nw.ln_marginal(&batch_stat(&nw, &wide)))
        );
        assert_eq!(
            bits(nw.ln_marginal(&nw.stat_of_compact(&narrow))),
            bits(nw.ln_marginal(&nw.stat_of(&wide)))
        );
        assert_eq!(
            bits(diag.ln_marginal(&diag.stat_of_compact(&narrow))),
            bits(diag.ln_marginal(&diag.stat_of(&wide)))
        );
        let binary: Vec<f64> = (0..2 * 300).map(|j| ((j * 31) % 7 % 2) as f64).collect();
        let bb = BetaBernoulli::new(&DenseData::new(300, 2, binary).unwrap(), 0.7).unwrap();
        let few: Vec<u32> = (0..300).filter(|i| i % 4 != 0).collect();
        let few_wide: Vec<usize> = few.iter().map(|&i| i as usize).collect();
        assert_eq!(
            bits(bb.ln_marginal(&bb.stat_of_compact(&few))),
            bits(bb.ln_marginal(&bb.stat_of(&few_wide)))
        );
        let hot = Tempered::new(nw.clone(), 0.5).unwrap();
        assert_eq!(
            bits(hot.ln_marginal(&hot.stat_of_compact(&narrow[..100]))),
            bits(hot.ln_marginal(&hot.stat_of(&wide[..100])))
        );
    }

    #[test]
    fn requeue_leaves_the_order_of_a_removal_and_reinsertion() {
        let k = kernel();
        let labels = [0, 0, 1, 0, 0, 1, 0, 1];
        let mut moved = Partition::from_labels(&k, &labels).unwrap();
        let mut requeued = moved.clone();
        for i in [1, 6, 0, 1] {
            let s = moved.remove(&k, i);
            moved.insert(&k, i, s);
            requeued.requeue(i);
        }
        for s in moved.slots() {
            assert_eq!(
                moved.cluster(s).unwrap().members(),
                requeued.cluster(s).unwrap().members()
            );
        }
        requeued.validate(&k, 1e-12).unwrap();
    }
}
