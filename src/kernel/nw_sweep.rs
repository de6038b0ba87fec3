//! The Normal-Wishart [`SweepCache`]: every cluster's Student-t predictive
//! `a + pc(n) - ½ ln|Ψ_n| - (ν_n + 1)/2 · ln(1 + r_n/(r_n+1) ‖L_n⁻¹(y - ξ_n)‖²)` (MATH §2.1)
//! for one point at once, in vectors of [`LANES`] clusters.
//!
//! # Layout
//!
//! Entries (clusters) are grouped by [`LANES`]. A group is `items` vectors of [`LANES`]
//! values, one per quantity: the strict lower triangle of the factor `L_n` by rows
//! (`L_10, L_20, L_21, …`), the reciprocals `1 / L_jj`, the centre `ξ_n`, then the offset
//! `a + pc(n) - ½ ln|Ψ_n|`, the power `(ν_n + 1)/2` and the scale `r_n/(r_n+1)`: `items =
//! d(d-1)/2 + 2d + 3`. An entry without a cluster (a free slot, or padding) has a zero factor,
//! centre, power and scale and an offset of `-∞`, so its weight is exactly `-∞`.
//!
//! # The solve
//!
//! Row-oriented forward substitution, `z_j = (y_j - ξ_j - Σ_{k<j} L_jk z_k) / L_jj`, each
//! step a `mul_add` across the lanes, then `q = Σ z_j²` by `mul_add` and the weight
//! `offset - power · ln(1 + scale · q)` with [`crate::vecmath::ln_at_least_one`]. For
//! `d ≤ 8` the dimension is a compile-time constant and `z` lives in registers.

use std::sync::Arc;

use super::normal_wishart::{NormalWishart, NwStat};
use super::sweep_cache::{SweepCache, BLOCK, LANES};
use crate::simd::multiversion;
use crate::vecmath;

/// The Normal-Wishart sweep cache (see the module documentation).
#[derive(Debug)]
pub(crate) struct NwSweepCache {
    d: usize,
    /// The data centred by ξ, `n × d` row-major: a point's `y`.
    centred: Arc<[f64]>,
    /// Values per entry.
    items: usize,
    /// Slot entries; the new cluster's entry is entry `slots`.
    slots: usize,
    /// Group-major table: value `t` of entry `e` at `table[(e / LANES) · items + t][e % LANES]`.
    table: Vec<[f64; LANES]>,
    /// The new cluster's values, rewritten when the table grows past them.
    new_entry: Vec<f64>,
    /// One entry's values, as [`NwSweepCache::values`] writes them.
    scratch: Vec<f64>,
    /// A group of entries without a cluster, copied into new room: kept, because at high
    /// dimension a group is hundreds of kilobytes, and allocating it on every growth (every
    /// sweep's reset) cost page faults comparable to the sweep's arithmetic.
    empty_group: Vec<[f64; LANES]>,
    /// One entry without a cluster.
    empty_entry: Vec<f64>,
    /// The solution `z` of the general-dimension solve, one vector per coordinate.
    z: Vec<[f64; LANES]>,
    /// A block's points, one vector per coordinate (point `b` in lane `b`).
    block_y: Vec<[f64; BLOCK]>,
    /// The solution `z` of the general-dimension solve of a block.
    block_z: Vec<[f64; BLOCK]>,
}

impl NwSweepCache {
    pub(crate) fn new(kernel: &NormalWishart) -> Self {
        let d = kernel.dim();
        let items = d * (d - 1) / 2 + 2 * d + 3;
        let mut new_entry = vec![0.0; items];
        write_empty(&mut new_entry);
        let empty_entry = new_entry.clone();
        let empty_group = empty_entry.iter().map(|&x| [x; LANES]).collect();
        NwSweepCache {
            d,
            centred: kernel.centred_data().clone(),
            items,
            slots: 0,
            table: Vec::new(),
            new_entry,
            scratch: vec![0.0; items],
            empty_group,
            empty_entry,
            z: vec![[0.0; LANES]; d],
            block_y: vec![[0.0; BLOCK]; d],
            block_z: vec![[0.0; BLOCK]; d],
        }
    }

    /// Entries the table has room for: the slots, the new cluster, padding to a full group.
    fn capacity(&self) -> usize {
        self.table.len() / self.items * LANES
    }

    /// Writes `values` (one entry's `items` values) into entry `e`, which must fit.
    fn write(&mut self, e: usize, values: &[f64]) {
        let (g, lane) = (e / LANES, e % LANES);
        let group = &mut self.table[g * self.items..(g + 1) * self.items];
        for (v, &x) in group.iter_mut().zip(values) {
            v[lane] = x;
        }
    }

    /// Writes the values of `stat` with additive term `ln_a` into the scratch entry.
    fn values(&mut self, stat: &NwStat, ln_a: f64) {
        let d = self.d;
        let (chol, centre, inv_diag, [offset, power, scale]) = stat.predictive_cache();
        let v = &mut self.scratch;
        let mut t = 0;
        for j in 0..d {
            for k in 0..j {
                v[t] = chol[k * d + j];
                t += 1;
            }
        }
        v[t..t + d].copy_from_slice(inv_diag);
        v[t + d..t + 2 * d].copy_from_slice(centre);
        v[t + 2 * d] = ln_a + offset;
        v[t + 2 * d + 1] = power;
        v[t + 2 * d + 2] = scale;
    }

    /// Makes room for entry `e` (and the new cluster's after it), filling new room with
    /// entries without a cluster.
    fn grow_to(&mut self, entries: usize) {
        if entries > self.capacity() {
            let groups = entries.div_ceil(LANES);
            while self.table.len() < groups * self.items {
                self.table.extend_from_slice(&self.empty_group);
            }
        }
    }
}

/// An entry without a cluster: zero factor, reciprocals, centre, power and scale, and an
/// offset of `-∞`, so that its weight is `-∞ - 0 · ln 1 = -∞` exactly.
fn write_empty(values: &mut [f64]) {
    values.fill(0.0);
    let offset = values.len() - 3;
    values[offset] = f64::NEG_INFINITY;
}

impl SweepCache<NwStat> for NwSweepCache {
    fn reset(&mut self, slots: usize) {
        self.table.clear();
        self.slots = slots;
        self.grow_to(slots + 1);
        let new_entry = std::mem::take(&mut self.new_entry);
        self.write(slots, &new_entry);
        self.new_entry = new_entry;
    }

    fn set(&mut self, slot: usize, entry: Option<(&NwStat, f64)>) {
        if slot >= self.slots {
            // The new cluster's entry moves behind the last slot; the entries between stay
            // without a cluster.
            self.grow_to(slot + 2);
            let empty = std::mem::take(&mut self.empty_entry);
            self.write(self.slots, &empty);
            self.empty_entry = empty;
            self.slots = slot + 1;
            let new_entry = std::mem::take(&mut self.new_entry);
            self.write(self.slots, &new_entry);
            self.new_entry = new_entry;
        }
        match entry {
            Some((stat, ln_a)) => {
                self.values(stat, ln_a);
                let values = std::mem::take(&mut self.scratch);
                self.write(slot, &values);
                self.scratch = values;
            }
            None => {
                let empty = std::mem::take(&mut self.empty_entry);
                self.write(slot, &empty);
                self.empty_entry = empty;
            }
        }
    }

    fn set_new(&mut self, empty: &NwStat, ln_a: f64) {
        self.values(empty, ln_a);
        self.new_entry.copy_from_slice(&self.scratch);
        if self.capacity() > self.slots {
            let new_entry = std::mem::take(&mut self.new_entry);
            self.write(self.slots, &new_entry);
            self.new_entry = new_entry;
        }
    }

    fn slots(&self) -> usize {
        self.slots
    }

    fn weigh(&mut self, i: usize, out: &mut Vec<f64>) {
        let d = self.d;
        let entries = self.slots + 1;
        out.clear();
        out.resize(entries.div_ceil(LANES) * LANES, 0.0);
        let y = &self.centred[i * d..(i + 1) * d];
        let groups = &self.table[..entries.div_ceil(LANES) * self.items];
        weigh_groups(groups, self.items, y, &mut self.z, out);
        out.truncate(entries);
    }

    fn weigh_block(&mut self, points: &[usize], out: &mut Vec<f64>) {
        debug_assert!(points.len() <= BLOCK);
        let d = self.d;
        // Every value is written below.
        out.resize((self.slots + 1) * BLOCK, 0.0);
        // Lanes without a point repeat the first point: finite values, never read.
        for (b, &i) in points
            .iter()
            .chain(std::iter::repeat(&points[0]))
            .take(BLOCK)
            .enumerate()
        {
            for (j, y) in self.block_y.iter_mut().enumerate() {
                y[b] = self.centred[i * d + j];
            }
        }
        weigh_points(
            &self.table,
            self.items,
            &self.block_y,
            &mut self.block_z,
            out,
        );
    }
}

multiversion! {
    /// The weights of the point `y` against every group of `groups` into `out` (one value per
    /// lane), at the CPU's best level.
    fn weigh_groups(
        groups: &[[f64; LANES]],
        items: usize,
        y: &[f64],
        z: &mut [[f64; LANES]],
        out: &mut [f64],
    ) {
        match y.len() {
            1 => weigh_fixed::<1>(groups, items, y, out),
            2 => weigh_fixed::<2>(groups, items, y, out),
            3 => weigh_fixed::<3>(groups, items, y, out),
            4 => weigh_fixed::<4>(groups, items, y, out),
            5 => weigh_fixed::<5>(groups, items, y, out),
            6 => weigh_fixed::<6>(groups, items, y, out),
            7 => weigh_fixed::<7>(groups, items, y, out),
            8 => weigh_fixed::<8>(groups, items, y, out),
            _ => weigh_any(groups, items, y, z, out),
        }
    }
}

/// The weight of each lane from its `q = ‖L⁻¹(y - ξ)‖²`: `offset - power · ln(1 + scale · q)`.
#[inline(always)]
fn finish(tail: &[[f64; LANES]], q: &[f64; LANES], out: &mut [f64]) {
    let (offset, power, scale) = (&tail[0], &tail[1], &tail[2]);
    for l in 0..LANES {
        let t = scale[l].mul_add(q[l], 1.0);
        out[l] = (-power[l]).mul_add(vecmath::ln_at_least_one(t), offset[l]);
    }
}

/// [`weigh_groups`] for the dimension `D`: `z` in registers.
#[inline(always)]
fn weigh_fixed<const D: usize>(groups: &[[f64; LANES]], items: usize, y: &[f64], out: &mut [f64]) {
    let strict = D * (D - 1) / 2;
    let y = &y[..D];
    for (group, out) in groups.chunks_exact(items).zip(out.chunks_exact_mut(LANES)) {
        let (lower, rest) = group.split_at(strict);
        let (inv, rest) = rest.split_at(D);
        let (centre, tail) = rest.split_at(D);
        let mut z = [[0.0f64; LANES]; D];
        let mut q = [0.0f64; LANES];
        let mut t = 0;
        for j in 0..D {
            let mut acc = [0.0f64; LANES];
            for l in 0..LANES {
                acc[l] = y[j] - centre[j][l];
            }
            for zk in z.iter().take(j) {
                let ljk = &lower[t];
                for l in 0..LANES {
                    acc[l] = (-ljk[l]).mul_add(zk[l], acc[l]);
                }
                t += 1;
            }
            for l in 0..LANES {
                let zj = acc[l] * inv[j][l];
                z[j][l] = zj;
                q[l] = zj.mul_add(zj, q[l]);
            }
        }
        finish(tail, &q, out);
    }
}

/// [`weigh_groups`] for any dimension, with `z` in memory (the same operations in the same
/// order as [`weigh_fixed`]).
#[inline(always)]
fn weigh_any(
    groups: &[[f64; LANES]],
    items: usize,
    y: &[f64],
    z: &mut [[f64; LANES]],
    out: &mut [f64],
) {
    let d = y.len();
    let strict = d * (d - 1) / 2;
    for (group, out) in groups.chunks_exact(items).zip(out.chunks_exact_mut(LANES)) {
        let (lower, rest) = group.split_at(strict);
        let (inv, rest) = rest.split_at(d);
        let (centre, tail) = rest.split_at(d);
        let mut q = [0.0f64; LANES];
        let mut t = 0;
        for j in 0..d {
            let mut acc = [0.0f64; LANES];
            for l in 0..LANES {
                acc[l] = y[j] - centre[j][l];
            }
            let (solved, rest) = z.split_at_mut(j);
            for zk in solved.iter() {
                let ljk = &lower[t];
                for l in 0..LANES {
                    acc[l] = (-ljk[l]).mul_add(zk[l], acc[l]);
                }
                t += 1;
            }
            for l in 0..LANES {
                let zj = acc[l] * inv[j][l];
                rest[0][l] = zj;
                q[l] = zj.mul_add(zj, q[l]);
            }
        }
        finish(tail, &q, out);
    }
}

multiversion! {
    /// The weights of the points in the lanes of `y` (one vector per coordinate) against
    /// every entry, entry `e` into `out[e · BLOCK..(e + 1) · BLOCK]`, at the CPU's best level:
    /// each entry's values broadcast, the same operations per (point, entry) as
    /// [`weigh_groups`].
    fn weigh_points(
        groups: &[[f64; LANES]],
        items: usize,
        y: &[[f64; BLOCK]],
        z: &mut [[f64; BLOCK]],
        out: &mut [f64],
    ) {
        match y.len() {
            1 => points_fixed::<1>(groups, items, y, out),
            2 => points_fixed::<2>(groups, items, y, out),
            3 => points_fixed::<3>(groups, items, y, out),
            4 => points_fixed::<4>(groups, items, y, out),
            5 => points_fixed::<5>(groups, items, y, out),
            6 => points_fixed::<6>(groups, items, y, out),
            7 => points_fixed::<7>(groups, items, y, out),
            8 => points_fixed::<8>(groups, items, y, out),
            _ => points_any(groups, items, y, z, out),
        }
    }
}

/// The weight of each point from its `q`: [`finish`] with the entry's values broadcast.
#[inline(always)]
fn finish_points(offset: f64, power: f64, scale: f64, q: &[f64; BLOCK], out: &mut [f64; BLOCK]) {
    for b in 0..BLOCK {
        let t = scale.mul_add(q[b], 1.0);
        out[b] = (-power).mul_add(vecmath::ln_at_least_one(t), offset);
    }
}

/// [`weigh_points`] for the dimension `D`: the points and `z` in registers.
#[inline(always)]
fn points_fixed<const D: usize>(
    groups: &[[f64; LANES]],
    items: usize,
    y: &[[f64; BLOCK]],
    out: &mut [f64],
) {
    let strict = D * (D - 1) / 2;
    let y: [[f64; BLOCK]; D] = std::array::from_fn(|j| y[j]);
    for (e, out) in out.as_chunks_mut::<BLOCK>().0.iter_mut().enumerate() {
        let group = &groups[e / LANES * items..(e / LANES + 1) * items];
        let at = |t: usize| group[t][e % LANES];
        let mut z = [[0.0f64; BLOCK]; D];
        let mut q = [0.0f64; BLOCK];
        let mut t = 0;
        for j in 0..D {
            let centre = at(strict + D + j);
            let mut acc = [0.0f64; BLOCK];
            for b in 0..BLOCK {
                acc[b] = y[j][b] - centre;
            }
            for zk in z.iter().take(j) {
                let ljk = at(t);
                for b in 0..BLOCK {
                    acc[b] = (-ljk).mul_add(zk[b], acc[b]);
                }
                t += 1;
            }
            let inv = at(strict + j);
            for b in 0..BLOCK {
                let zj = acc[b] * inv;
                z[j][b] = zj;
                q[b] = zj.mul_add(zj, q[b]);
            }
        }
        let tail = strict + 2 * D;
        finish_points(at(tail), at(tail + 1), at(tail + 2), &q, out);
    }
}

/// [`weigh_points`] for any dimension, with `z` in memory (the same operations in the same
/// order as [`points_fixed`]).
#[inline(always)]
fn points_any(
    groups: &[[f64; LANES]],
    items: usize,
    y: &[[f64; BLOCK]],
    z: &mut [[f64; BLOCK]],
    out: &mut [f64],
) {
    let d = y.len();
    let strict = d * (d - 1) / 2;
    for (e, out) in out.as_chunks_mut::<BLOCK>().0.iter_mut().enumerate() {
        let group = &groups[e / LANES * items..(e / LANES + 1) * items];
        let at = |t: usize| group[t][e % LANES];
        let mut q = [0.0f64; BLOCK];
        let mut t = 0;
        for (j, yj) in y.iter().enumerate() {
            let centre = at(strict + d + j);
            let mut acc = [0.0f64; BLOCK];
            for b in 0..BLOCK {
                acc[b] = yj[b] - centre;
            }
            let (solved, rest) = z.split_at_mut(j);
            for zk in solved.iter() {
                let ljk = at(t);
                for b in 0..BLOCK {
                    acc[b] = (-ljk).mul_add(zk[b], acc[b]);
                }
                t += 1;
            }
            let inv = at(strict + j);
            for b in 0..BLOCK {
                let zj = acc[b] * inv;
                rest[0][b] = zj;
                q[b] = zj.mul_add(zj, q[b]);
            }
        }
        let tail = strict + 2 * d;
        finish_points(at(tail), at(tail + 1), at(tail + 2), &q, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseData;
    use crate::kernel::{ConjugateKernel, NwHyper};
    use crate::rng::{uniform_open01, SeedPlan};
    use crate::simd::{with_level, Level};

    /// A kernel over 60 random points in `d` dimensions, with its empty statistic and
    /// statistics of a few subsets.
    fn setup(d: usize) -> (NormalWishart, Vec<NwStat>) {
        let mut rng = SeedPlan::new(d as u64).chain(0);
        let rows: Vec<Vec<f64>> = (0..60)
            .map(|i| {
                (0..d)
                    .map(|j| 3.0 * ((i % 3) as f64) * ((j % 2) as f64) + uniform_open01(&mut rng))
                    .collect()
            })
            .collect();
        let data = DenseData::from_rows(&rows).unwrap();
        let hyper = NwHyper::from_data(&data).unwrap();
        let kernel = NormalWishart::new(Arc::new(data), hyper).unwrap();
        let stats = (0..11)
            .map(|c| {
                let members: Vec<usize> = (0..60).filter(|i| i % 11 == c && i % 3 != 0).collect();
                kernel.stat_of(&members)
            })
            .collect();
        (kernel, stats)
    }

    /// Every entry weighs as `ln_a + ln_predictive`, to rounding, for every dimension form
    /// (unrolled up to 8, general beyond), with free slots at `-∞`, a table grown slot by
    /// slot past several groups, and the new cluster's entry last; every level gives the same
    /// bits, and so does a block of points.
    #[test]
    fn weights_are_the_kernels_predictives_at_every_level() {
        for d in [1, 2, 3, 6, 8, 9, 11] {
            let (kernel, stats) = setup(d);
            let empty = kernel.empty_stat();
            let mut cache = NwSweepCache::new(&kernel);
            cache.reset(3);
            cache.set_new(&empty, -0.75);
            // Slots 0..11 from the statistics, slot 4 freed again, slots 12 and 13 never set.
            for (s, stat) in stats.iter().enumerate() {
                cache.set(s, Some((stat, 0.1 * s as f64)));
            }
            cache.set(4, None);
            cache.set(13, None);
            assert_eq!(cache.slots(), 14);
            for i in [0, 7, 31, 59] {
                let mut out = Vec::new();
                cache.weigh(i, &mut out);
                assert_eq!(out.len(), 15);
                for (s, &w) in out.iter().enumerate() {
                    let want = match s {
                        4 | 11..=13 => f64::NEG_INFINITY,
                        14 => -0.75 + kernel.ln_predictive(i, &empty),
                        _ => 0.1 * s as f64 + kernel.ln_predictive(i, &stats[s]),
                    };
                    if want == f64::NEG_INFINITY {
                        assert_eq!(w, want, "d {d}, point {i}, slot {s}");
                    } else {
                        assert!(
                            (w - want).abs() <= 1e-12 * want.abs().max(1.0),
                            "d {d}, point {i}, slot {s}: {w} vs {want}"
                        );
                    }
                }
                for level in Level::ALL {
                    let mut again = Vec::new();
                    with_level(level, || cache.weigh(i, &mut again));
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&again), bits(&out), "d {d}, {level:?}");
                }
            }
            // Blocks of every length up to BLOCK, each lane the point's own weights.
            for len in 1..=BLOCK {
                let points: Vec<usize> = (0..len).map(|b| (7 * b + len) % 60).collect();
                for level in Level::ALL {
                    let mut block = Vec::new();
                    with_level(level, || cache.weigh_block(&points, &mut block));
                    assert_eq!(block.len(), 15 * BLOCK);
                    for (b, &i) in points.iter().enumerate() {
                        let mut out = Vec::new();
                        with_level(level, || cache.weigh(i, &mut out));
                        for (s, &w) in out.iter().enumerate() {
                            assert_eq!(
                                block[s * BLOCK + b].to_bits(),
                                w.to_bits(),
                                "d {d}, {level:?}, block of {len}, point {i}, slot {s}"
                            );
                        }
                    }
                }
            }
        }
    }
}
