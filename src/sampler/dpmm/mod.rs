//! DPMM.jl's samplers (MATH §6.4): Chang & Fisher's (2013) sub-cluster split/merge sampler and
//! the direct, quasi-direct and quasi-collapsed Gibbs variants, all parallel over points
//! through the deterministic [`engine`].
//!
//! - [`subcluster`]: [`SubCluster`], the exact sub-cluster sampler (restricted Gibbs plus
//!   sub-cluster-launched split/merge proposals), and the DPMM.jl-faithful variant with
//!   persistent sub-labels.
//! - [`direct`]: [`Direct`], [`QuasiDirect`] and [`QuasiCollapsed`], approximate parallel
//!   Gibbs samplers.

pub mod direct;
pub mod engine;
pub mod subcluster;

pub use direct::{Direct, QuasiCollapsed, QuasiDirect};
pub use subcluster::{DpmmOptions, Splittable, SubCluster, SubClusterOptions, LAUNCH_SAMPLE};

use rayon::prelude::*;

use crate::kernel::ConjugateKernel;
use crate::partition::{Partition, Slot};

/// A label of an uncollapsed pass as its buffer holds it: `u32`, or `u8` where every label
/// is below 256 (one byte a point instead of four; a million points' labels take 1 MB).
pub(crate) trait PassLabel: Copy + Ord + Send + Sync + 'static {
    /// Label `z`, which the caller keeps below the type's bound.
    fn of(z: usize) -> Self;

    /// The label.
    fn get(self) -> u32;
}

impl PassLabel for u32 {
    #[inline(always)]
    fn of(z: usize) -> Self {
        z as u32
    }

    #[inline(always)]
    fn get(self) -> u32 {
        self
    }
}

impl PassLabel for u8 {
    #[inline(always)]
    fn of(z: usize) -> Self {
        debug_assert!(z <= u8::MAX as usize);
        z as u8
    }

    #[inline(always)]
    fn get(self) -> u32 {
        u32::from(self)
    }
}

/// Points per chunk of [`apply_labels`]' parallel scan.
const SCAN_CHUNK: usize = 1 << 16;

/// One chunk of that scan: how many points stay in each cluster, and the points that move
/// with their new labels, in index order.
type Scanned = (Vec<usize>, Vec<(usize, u32)>);

/// Moves every point `i` to the cluster `slots[labels[i]]`, or, for `labels[i] ==
/// slots.len()`, to one new cluster shared by every such point; clusters left without points
/// disappear.
///
/// Points that move are updated one by one in index order (a removal and an insertion, O(d²)
/// for Normal-Wishart), which after the first few iterations touches few points; while no
/// cluster empties and none is new, each cluster replays its own share of them in parallel
/// with the others ([`Partition::move_points`], the same result bit for bit). When a
/// cluster would lose every point and receive others, or when more than a quarter of the
/// points move, the partition is rebuilt from the labels instead (batch statistics, O(n d²)).
/// Either way the result depends only on the labels and the previous layout.
pub(crate) fn apply_labels<K: ConjugateKernel, L: PassLabel>(
    kernel: &K,
    partition: &mut Partition<K>,
    slots: &[Slot],
    labels: &[L],
) {
    let k = slots.len();
    let mut index_of = vec![u32::MAX; partition.slot_capacity()];
    for (j, &s) in slots.iter().enumerate() {
        index_of[s] = j as u32;
    }
    // Who stays and who moves, by chunks of points in parallel, gathered in index order.
    let scanned: Vec<Scanned> = labels
        .par_chunks(SCAN_CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let mut stayers = vec![0usize; k];
            let mut moved = Vec::new();
            for (j, &l) in chunk.iter().enumerate() {
                let (i, l) = (c * SCAN_CHUNK + j, l.get());
                if index_of[partition.slot_of(i)] == l {
                    stayers[l as usize] += 1;
                } else {
                    moved.push((i, l));
                }
            }
            (stayers, moved)
        })
        .collect();
    let mut stayers = vec![0usize; k];
    // Points each cluster receives (`k`: the new one).
    let mut incoming = vec![0usize; k + 1];
    let mut movers = Vec::new();
    for (st, moved) in scanned {
        for (t, x) in stayers.iter_mut().zip(st) {
            *t += x;
        }
        for &(_, l) in &moved {
            incoming[l as usize] += 1;
        }
        movers.extend(moved);
    }
    if movers.is_empty() {
        return;
    }
    let emptied_target = (0..k).any(|j| stayers[j] == 0 && incoming[j] > 0);
    if emptied_target || movers.len() * 4 > labels.len() {
        partition
            .rebuild_from_labels(kernel, labels)
            .expect("one label per point");
        return;
    }
    // Each member list grows once, to what it receives, rather than by doubling.
    for (j, &s) in slots.iter().enumerate() {
        if incoming[j] > 0 {
            partition.reserve_members(s, incoming[j]);
        }
    }
    if incoming[k] == 0 && stayers.iter().all(|&m| m > 0) {
        // No cluster empties and none is new: every cluster replays its own moves at once.
        // The pairs have one size and alignment, so the collect reuses `movers`' buffer.
        let moves: Vec<(usize, Slot)> = movers
            .into_iter()
            .map(|(i, l)| (i, slots[l as usize]))
            .collect();
        partition
            .move_points(kernel, &moves)
            .expect("every cluster keeps a point and every target is live");
        return;
    }
    let mut new_slot = None;
    for (i, l) in movers {
        partition.remove(kernel, i);
        if (l as usize) < k {
            partition.insert(kernel, i, slots[l as usize]);
        } else {
            match new_slot {
                Some(s) => partition.insert(kernel, i, s),
                None => {
                    let s = partition.insert_new(kernel, i);
                    partition.reserve_members(s, incoming[k] - 1);
                    new_slot = Some(s);
                }
            }
        }
    }
}
