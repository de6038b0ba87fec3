//! The exact layout of a [`Partition`], serialisable, for checkpoints.
//!
//! Samplers visit clusters in slot order and members in member-list order, and a new cluster
//! takes the most recently freed slot; two partitions with the same clusters but different
//! layouts therefore continue differently under the same random stream. A snapshot keeps the
//! whole layout (per slot its ordered member list, and the stack of free slots), so that a
//! restored partition continues exactly as the original would. Labels and positions follow
//! from the member lists; statistics are rebuilt from the members.

use super::{check_points, compact, fresh_revision, Cluster, Partition, Slot, UNASSIGNED};
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;

/// The layout of a partition: per slot its ordered member list (`None` for a free slot), and
/// the free-slot stack (the last entry is reused first).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionSnapshot {
    /// Number of points.
    pub n: usize,
    /// Per slot, the members in list order; `None` for a free slot.
    pub slots: Vec<Option<Vec<usize>>>,
    /// Free slots, in the order they were freed.
    pub free: Vec<Slot>,
}

impl<K: ConjugateKernel> Partition<K> {
    /// The layout of the partition. Cost O(n + slots).
    pub fn snapshot(&self) -> PartitionSnapshot {
        PartitionSnapshot {
            n: self.n(),
            slots: self
                .slots
                .iter()
                .map(|c| c.as_ref().map(|c| c.member_indices().collect()))
                .collect(),
            free: self.free.clone(),
        }
    }

    /// The partition with the layout of `snapshot` over `kernel`'s data, each statistic built
    /// from its members in list order by [`ConjugateKernel::stat_of`].
    ///
    /// Errors unless the snapshot is consistent with the data: `n` equals the kernel's number
    /// of points, every point is in exactly one live slot, no live slot is empty, and the free
    /// stack holds exactly the free slots, each once. Cost O(n + slots + Σ_c stat_of).
    pub fn restore(kernel: &K, snapshot: &PartitionSnapshot) -> Result<Self> {
        let n = kernel.n_points();
        if snapshot.n != n {
            return Err(Error::DimensionMismatch(format!(
                "a partition snapshot of {} points for data of {n} points",
                snapshot.n
            )));
        }
        check_points(n)?;
        let mut label = vec![UNASSIGNED; n];
        let mut pos = vec![0; n];
        let mut slots = Vec::with_capacity(snapshot.slots.len());
        let mut n_clusters = 0;
        for (s, members) in snapshot.slots.iter().enumerate() {
            let Some(members) = members else {
                slots.push(None);
                continue;
            };
            if members.is_empty() {
                return Err(Error::Usage(format!(
                    "partition snapshot: live slot {s} has no members"
                )));
            }
            for (p, &i) in members.iter().enumerate() {
                if i >= n {
                    return Err(Error::Usage(format!(
                        "partition snapshot: slot {s} holds point {i}, but there are {n} points"
                    )));
                }
                if label[i] != UNASSIGNED {
                    return Err(Error::Usage(format!(
                        "partition snapshot: point {i} is in slots {} and {s}",
                        label[i]
                    )));
                }
                label[i] = compact(s);
                pos[i] = compact(p);
            }
            let stat = kernel.stat_of(members);
            let ln_m = kernel.ln_marginal(&stat);
            slots.push(Some(Cluster {
                members: members.iter().map(|&i| compact(i)).collect(),
                stat,
                ln_m,
            }));
            n_clusters += 1;
        }
        if let Some(i) = label.iter().position(|&l| l == UNASSIGNED) {
            return Err(Error::Usage(format!(
                "partition snapshot: point {i} is in no cluster"
            )));
        }
        let mut on_stack = vec![false; slots.len()];
        for &s in &snapshot.free {
            if s >= slots.len() || slots[s].is_some() || on_stack[s] {
                return Err(Error::Usage(format!(
                    "partition snapshot: free slot {s} is live, out of range or listed twice"
                )));
            }
            on_stack[s] = true;
        }
        if snapshot.free.len() != slots.len() - n_clusters {
            return Err(Error::Usage(
                "partition snapshot: a free slot is missing from the free stack".into(),
            ));
        }
        Ok(Partition {
            label,
            pos,
            slots,
            free: snapshot.free.clone(),
            n_clusters,
            revision: fresh_revision(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseData;
    use crate::kernel::{NormalWishart, NwHyper};
    use std::sync::Arc;

    fn kernel(n: usize) -> NormalWishart {
        let x = DenseData::new(n, 1, (0..n).map(|i| i as f64 * 0.7).collect()).unwrap();
        NormalWishart::new(
            Arc::new(x),
            NwHyper::new(vec![0.0], vec![1.0], 0.1, 3.0).unwrap(),
        )
        .unwrap()
    }

    /// A layout with a free slot and member lists out of index order survives the round trip,
    /// and the restored partition makes the same choices as the original afterwards.
    #[test]
    fn round_trip_keeps_the_layout() {
        let k = kernel(6);
        let mut p = Partition::from_labels(&k, &[0, 1, 2, 0, 1, 2]).unwrap();
        p.remove(&k, 0);
        p.insert(&k, 0, 2);
        p.remove(&k, 1);
        p.insert(&k, 1, 2);
        p.remove(&k, 4);
        p.insert(&k, 4, 0);
        // Slot 1 is now free; members of slot 2 are in move order.
        let snap = p.snapshot();
        assert_eq!(snap.free, vec![1]);
        let q = Partition::restore(&k, &snap).unwrap();
        q.validate(&k, 1e-12).unwrap();
        assert_eq!(q.snapshot(), snap);
        for s in p.slots() {
            assert_eq!(
                p.cluster(s).unwrap().members(),
                q.cluster(s).unwrap().members()
            );
        }
        let (mut p, mut q) = (p, q);
        p.remove(&k, 5);
        q.remove(&k, 5);
        assert_eq!(p.insert_new(&k, 5), q.insert_new(&k, 5));
        let json = serde_json::to_string(&snap).unwrap();
        let back: PartitionSnapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(back, snap);
    }

    #[test]
    fn inconsistent_snapshots_are_refused() {
        let k = kernel(3);
        let good = Partition::from_labels(&k, &[0, 1, 1]).unwrap().snapshot();
        let cases = [
            PartitionSnapshot {
                n: 4,
                ..good.clone()
            },
            PartitionSnapshot {
                slots: vec![Some(vec![0, 1]), Some(vec![1, 2])],
                ..good.clone()
            },
            PartitionSnapshot {
                slots: vec![Some(vec![0]), Some(vec![1])],
                ..good.clone()
            },
            PartitionSnapshot {
                slots: vec![Some(vec![0, 7]), Some(vec![1, 2])],
                ..good.clone()
            },
            PartitionSnapshot {
                slots: vec![Some(vec![0, 1, 2]), Some(vec![])],
                ..good.clone()
            },
            PartitionSnapshot {
                slots: vec![Some(vec![0, 1, 2]), None],
                free: vec![],
                ..good.clone()
            },
            PartitionSnapshot {
                free: vec![0],
                ..good.clone()
            },
            PartitionSnapshot {
                slots: vec![Some(vec![0, 1, 2]), None],
                free: vec![1, 1],
                ..good.clone()
            },
        ];
        for bad in cases {
            assert!(Partition::restore(&k, &bad).is_err(), "{bad:?}");
        }
        assert!(Partition::restore(&k, &good).is_ok());
    }
}
