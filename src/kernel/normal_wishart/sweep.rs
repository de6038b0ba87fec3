//! The Normal-Wishart [`SweepCache`] (of the kernel's statistics, and of SVA's weighted ones
//! through [`NwPredictive`]): every cluster's Student-t predictive
//! `a + pc(n) - ½ ln|Ψ_n| - (ν_n + 1)/2 · ln(1 + r_n/(r_n+1) ‖L_n⁻¹(y - ξ_n)‖²)` (MATH §2.1)
//! for one point at once, in vectors of [`LANES`] clusters.
//!
//! # Layout
//!
//! Entries (clusters) are grouped by [`LANES`]. A group is `items` vectors of [`LANES`]
//! values, one per quantity: the strict lower triangle of the factor `L_n` by rows
//! (`L_10, L_20, L_21, …`), the reciprocals `1 / L_jj`, the centre `ξ_n`, then the offset
//! `a + pc(n) - ½ ln|Ψ_n|`, the power `(ν_n + 1)/2` and the scale `r_n/(r_n+1)`, then the
//! member predictive's offset `b + pc(n-1) - ½ ln|Ψ_n|`, power `ν_{n-1}/2` and scale
//! `r_n/r_{n-1}`: `items = d(d-1)/2 + 2d + 6`. An entry without a cluster (a free slot, or
//! padding) has a zero factor, centre, power and scale and an offset of `-∞`, so its weight
//! is exactly `-∞`, and a member offset of NaN.
//!
//! # The solve
//!
//! Row-oriented forward substitution, `z_j = (y_j - ξ_j - Σ_{k<j} L_jk z_k) / L_jj`, each
//! step a `mul_add` across the lanes, then `q = Σ z_j²` by `mul_add` and the weight
//! `offset - power · ln(1 + scale · q)` with [`crate::vecmath::ln_at_least_one`]. For
//! `d ≤ 8` the dimension is a compile-time constant and `z` lives in registers. Each `q` is
//! kept: for a member of the entry's cluster, the same `q` gives the predictive without it,
//! `offset' + power' · ln(1 - scale' · q)` (the determinant lemma run backwards, MATH §2.1),
//! so the member's own weight costs one logarithm, in vectors across a block's points.

use super::{NormalWishart, NwStat};
use crate::kernel::cholesky::DOWNDATE_MIN_DET_RATIO;
use crate::kernel::sweep_cache::{EntrySlots, EntryTerms, SweepCache, BLOCK, LANES};
use crate::simd::multiversion;
use crate::vecmath;

/// A Normal-Wishart posterior whose Student-t predictive the cache copies: the kernel's
/// statistic ([`NwStat`]), or SVA's weighted one, whose predictive has the same form with a
/// real-valued count.
pub(crate) trait NwPredictive {
    /// The lower factor of `Ψ_n` (column layout of [`super::cholesky`]), the centre `ξ_n`, the
    /// reciprocals `1 / L_jj`, and the offset `pc(n) - ½ ln|Ψ_n|`, power `(ν_n + 1)/2` and
    /// scale `r_n/(r_n+1)` of the predictive.
    fn predictive_cache(&self) -> (&[f64], &[f64], &[f64], [f64; 3]);

    /// The member predictive's constants (see [`NwStat::member_constants`]); NaN when the
    /// statistic has none.
    fn member_constants(&self) -> [f64; 3];
}

impl NwPredictive for NwStat {
    fn predictive_cache(&self) -> (&[f64], &[f64], &[f64], [f64; 3]) {
        NwStat::predictive_cache(self)
    }

    fn member_constants(&self) -> [f64; 3] {
        NwStat::member_constants(self)
    }
}

/// The Normal-Wishart sweep cache (see the module documentation).
#[derive(Debug)]
pub(crate) struct NwSweepCache {
    d: usize,
    /// The data centred by ξ, `n × d` row-major: a point's `y`.
    centred: crate::kernel::centred::Centred,
    /// Values per entry.
    items: usize,
    /// The cluster entries' slots; the new cluster's entry follows them.
    slots: EntrySlots,
    /// Group-major table: value `t` of entry `e` at `table[(e / LANES) · items + t][e % LANES]`.
    table: Vec<[f64; LANES]>,
    /// The new cluster's values, rewritten when the entries before it change in number.
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
    /// The last weighed point's `q` against each entry (padded to whole groups).
    q: Vec<f64>,
    /// The last weighed block's `q`, `block_q[e · BLOCK + b]` for point `b` and entry `e`.
    block_q: Vec<f64>,
    /// A block's points, one vector per coordinate (point `b` in lane `b`).
    block_y: Vec<[f64; BLOCK]>,
    /// The solution `z` of the general-dimension solve of a block.
    block_z: Vec<[f64; BLOCK]>,
}

impl NwSweepCache {
    pub(crate) fn new(kernel: &NormalWishart) -> Self {
        let d = kernel.dim();
        let items = d * (d - 1) / 2 + 2 * d + 6;
        let mut new_entry = vec![0.0; items];
        write_empty(&mut new_entry);
        let empty_entry = new_entry.clone();
        let empty_group = empty_entry.iter().map(|&x| [x; LANES]).collect();
        NwSweepCache {
            d,
            centred: kernel.centred_data().clone(),
            items,
            slots: EntrySlots::default(),
            table: Vec::new(),
            new_entry,
            scratch: vec![0.0; items],
            empty_group,
            empty_entry,
            z: vec![[0.0; LANES]; d],
            q: Vec::new(),
            block_q: Vec::new(),
            block_y: vec![[0.0; BLOCK]; d],
            block_z: vec![[0.0; BLOCK]; d],
        }
    }

    /// [`SweepCache::weigh`] of a point given by its coordinates centred at the kernel's ξ
    /// (a point outside the data set, such as a new point to predict). Cost: as `weigh`.
    pub(crate) fn weigh_centred(&mut self, y: &[f64], out: &mut Vec<f64>) {
        debug_assert_eq!(y.len(), self.d);
        weigh_point(
            self.slots.len() + 1,
            &self.table,
            self.items,
            y,
            &mut self.z,
            &mut self.q,
            out,
        );
    }

    /// Entries the table has room for: the clusters, the new cluster, padding to a full
    /// group.
    fn capacity(&self) -> usize {
        self.table.len() / self.items * LANES
    }

    /// Writes the values of `stat` with additive terms `terms` into the scratch entry.
    fn values<S: NwPredictive>(&mut self, stat: &S, terms: EntryTerms) {
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
        v[t + 2 * d] = terms.join + offset;
        v[t + 2 * d + 1] = power;
        v[t + 2 * d + 2] = scale;
        let [m_offset, m_power, m_scale] = stat.member_constants();
        v[t + 2 * d + 3] = terms.member + m_offset;
        v[t + 2 * d + 4] = m_power;
        v[t + 2 * d + 5] = m_scale;
    }

    /// Value `t` of entry `e`.
    fn value(&self, e: usize, t: usize) -> f64 {
        self.table[e / LANES * self.items + t][e % LANES]
    }

    /// The member constants (offset with the member term, power, scale) of entry `e`.
    fn member_constants(&self, e: usize) -> [f64; 3] {
        let t = self.items - 3;
        [self.value(e, t), self.value(e, t + 1), self.value(e, t + 2)]
    }

    /// Makes room for `entries` entries, filling new room with entries without a cluster.
    fn grow_to(&mut self, entries: usize) {
        if entries > self.capacity() {
            let groups = entries.div_ceil(LANES);
            while self.table.len() < groups * self.items {
                self.table.extend_from_slice(&self.empty_group);
            }
        }
    }

    /// Copies entry `from`'s values into entry `to`.
    fn copy_entry(&mut self, from: usize, to: usize) {
        let items = self.items;
        let (gf, lf) = (from / LANES * items, from % LANES);
        let (gt, lt) = (to / LANES * items, to % LANES);
        for t in 0..items {
            self.table[gt + t][lt] = self.table[gf + t][lf];
        }
    }

    /// Writes the new cluster's values into entry `entries` (behind the clusters).
    fn place_new(&mut self) {
        self.grow_to(self.slots.len() + 1);
        write_entry(
            &mut self.table,
            self.items,
            self.slots.len(),
            &self.new_entry,
        );
    }
}

/// The weights of the centred point `y` against the first `entries` entries of `table` into
/// `out` (resized to `entries`), its `q` against each into `q`.
fn weigh_point(
    entries: usize,
    table: &[[f64; LANES]],
    items: usize,
    y: &[f64],
    z: &mut [[f64; LANES]],
    q: &mut Vec<f64>,
    out: &mut Vec<f64>,
) {
    // Every value is written below (no clearing first).
    out.resize(entries.div_ceil(LANES) * LANES, 0.0);
    q.resize(out.len(), 0.0);
    let groups = &table[..entries.div_ceil(LANES) * items];
    weigh_groups(groups, items, y, z, out, q);
    out.truncate(entries);
}

/// Writes `values` (one entry's values) into entry `e` of a group-major `table` of `items`
/// values per entry; the entry must fit.
fn write_entry(table: &mut [[f64; LANES]], items: usize, e: usize, values: &[f64]) {
    let (g, lane) = (e / LANES, e % LANES);
    for (v, &x) in table[g * items..(g + 1) * items].iter_mut().zip(values) {
        v[lane] = x;
    }
}

/// An entry without a cluster: zero factor, reciprocals, centre, power and scale, and an
/// offset of `-∞`, so that its weight is `-∞ - 0 · ln 1 = -∞` exactly; no member weight
/// (a member offset of NaN).
fn write_empty(values: &mut [f64]) {
    values.fill(0.0);
    let offset = values.len() - 6;
    values[offset] = f64::NEG_INFINITY;
    values[offset + 3] = f64::NAN;
}

/// A member's weight from its `q` and the member constants of its entry (see the module
/// documentation): `offset + power · ln ρ` with `ρ = 1 - scale · q`, the determinant ratio
/// of the downdate that would take the point out; NaN (no weight) when `ρ` is below
/// [`DOWNDATE_MIN_DET_RATIO`] or NaN, as the kernel declines then. Branch-free, the same
/// bits at every level.
#[inline(always)]
fn member_weight(q: f64, [offset, power, scale]: [f64; 3]) -> f64 {
    let rho = 1.0 - q * scale;
    let ok = rho >= DOWNDATE_MIN_DET_RATIO;
    let w = power.mul_add(vecmath::ln(if ok { rho } else { 1.0 }), offset);
    if ok {
        w
    } else {
        f64::NAN
    }
}

impl<S: NwPredictive> SweepCache<S> for NwSweepCache {
    fn reset(&mut self) {
        self.table.clear();
        self.slots.clear();
        self.place_new();
    }

    fn set(&mut self, slot: usize, entry: Option<(&S, EntryTerms)>) {
        match entry {
            Some((stat, terms)) => {
                let e = self.slots.entry(slot).unwrap_or_else(|| {
                    // A new cluster entry at its place in slot order: the entries after it
                    // (and the new cluster's) move back by one.
                    let e = self.slots.insert(slot);
                    let entries = self.slots.len();
                    self.grow_to(entries + 1);
                    for from in (e..entries - 1).rev() {
                        self.copy_entry(from, from + 1);
                    }
                    self.place_new();
                    e
                });
                self.values(stat, terms);
                write_entry(&mut self.table, self.items, e, &self.scratch);
            }
            None => {
                if let Some(e) = self.slots.remove(slot) {
                    // The entries after it (and the new cluster's) move forward by one, and
                    // the new cluster's old place is emptied.
                    let entries = self.slots.len();
                    for from in e + 1..=entries {
                        self.copy_entry(from, from - 1);
                    }
                    self.place_new();
                    write_entry(&mut self.table, self.items, entries + 1, &self.empty_entry);
                }
            }
        }
    }

    fn set_new(&mut self, empty: &S, ln_a: f64) {
        let terms = EntryTerms {
            join: ln_a,
            member: f64::NAN,
        };
        self.values(empty, terms);
        self.new_entry.copy_from_slice(&self.scratch);
        self.place_new();
    }

    fn entries(&self) -> usize {
        self.slots.len()
    }

    fn entry_slots(&self) -> &[usize] {
        self.slots.slots()
    }

    fn entry_of(&self, slot: usize) -> Option<usize> {
        self.slots.entry(slot)
    }

    fn weigh(&mut self, i: usize, out: &mut Vec<f64>) {
        let d = self.d;
        let y = &self.centred[i * d..(i + 1) * d];
        weigh_point(
            self.slots.len() + 1,
            &self.table,
            self.items,
            y,
            &mut self.z,
            &mut self.q,
            out,
        );
    }

    fn weigh_block(&mut self, points: &[usize], out: &mut Vec<f64>) {
        debug_assert!(points.len() <= BLOCK);
        let d = self.d;
        // Every value is written below.
        out.resize((self.slots.len() + 1) * BLOCK, 0.0);
        self.block_q.resize(out.len(), 0.0);
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
            &mut self.block_q,
        );
    }

    fn member(&self, entry: usize) -> Option<f64> {
        let w = member_one(self.q[entry], self.member_constants(entry));
        (!w.is_nan()).then_some(w)
    }

    fn block_members(&self, slots: &[usize], own: &mut [usize; BLOCK], out: &mut [f64; BLOCK]) {
        debug_assert!(slots.len() <= BLOCK);
        // Lanes past the block: q = 0 with NaN constants, which weigh NaN.
        let mut q = [0.0; BLOCK];
        let mut constants = [[f64::NAN; BLOCK]; 3];
        for (b, &slot) in slots.iter().enumerate() {
            let e = self.slots.entry(slot).expect("a slot with an entry");
            own[b] = e;
            q[b] = self.block_q[e * BLOCK + b];
            let group = &self.table[e / LANES * self.items..][..self.items];
            for (c, v) in constants.iter_mut().zip(&group[self.items - 3..]) {
                c[b] = v[e % LANES];
            }
        }
        member_lanes(&q, &constants, out);
    }
}

multiversion! {
    /// [`member_weight`] at the CPU's best level (where the multiply-adds are instructions,
    /// not calls to the C library's `fma`).
    fn member_one(q: f64, constants: [f64; 3]) -> f64 {
        member_weight(q, constants)
    }
}

multiversion! {
    /// [`member_weight`] of every lane, at the CPU's best level.
    fn member_lanes(q: &[f64; BLOCK], constants: &[[f64; BLOCK]; 3], out: &mut [f64; BLOCK]) {
        for b in 0..BLOCK {
            out[b] = member_weight(q[b], [constants[0][b], constants[1][b], constants[2][b]]);
        }
    }
}

multiversion! {
    /// The weights of the point `y` against every group of `groups` into `out` (one value per
    /// lane), and its `q` into `q`, at the CPU's best level.
    fn weigh_groups(
        groups: &[[f64; LANES]],
        items: usize,
        y: &[f64],
        z: &mut [[f64; LANES]],
        out: &mut [f64],
        q: &mut [f64],
    ) {
        match y.len() {
            1 => weigh_fixed::<1>(groups, items, y, out, q),
            2 => weigh_fixed::<2>(groups, items, y, out, q),
            3 => weigh_fixed::<3>(groups, items, y, out, q),
            4 => weigh_fixed::<4>(groups, items, y, out, q),
            5 => weigh_fixed::<5>(groups, items, y, out, q),
            6 => weigh_fixed::<6>(groups, items, y, out, q),
            7 => weigh_fixed::<7>(groups, items, y, out, q),
            8 => weigh_fixed::<8>(groups, items, y, out, q),
            _ => weigh_any(groups, items, y, z, out, q),
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
fn weigh_fixed<const D: usize>(
    groups: &[[f64; LANES]],
    items: usize,
    y: &[f64],
    out: &mut [f64],
    q_out: &mut [f64],
) {
    let strict = D * (D - 1) / 2;
    let y = &y[..D];
    for ((group, out), q_out) in groups
        .chunks_exact(items)
        .zip(out.chunks_exact_mut(LANES))
        .zip(q_out.chunks_exact_mut(LANES))
    {
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
        q_out.copy_from_slice(&q);
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
    q_out: &mut [f64],
) {
    let d = y.len();
    let strict = d * (d - 1) / 2;
    for ((group, out), q_out) in groups
        .chunks_exact(items)
        .zip(out.chunks_exact_mut(LANES))
        .zip(q_out.chunks_exact_mut(LANES))
    {
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
        q_out.copy_from_slice(&q);
    }
}

multiversion! {
    /// The weights of the points in the lanes of `y` (one vector per coordinate) against
    /// every entry, entry `e` into `out[e · BLOCK..(e + 1) · BLOCK]` (and the points' `q` into
    /// `q` alike), at the CPU's best level: each entry's values broadcast, the same operations
    /// per (point, entry) as [`weigh_groups`].
    fn weigh_points(
        groups: &[[f64; LANES]],
        items: usize,
        y: &[[f64; BLOCK]],
        z: &mut [[f64; BLOCK]],
        out: &mut [f64],
        q: &mut [f64],
    ) {
        match y.len() {
            1 => points_fixed::<1>(groups, items, y, out, q),
            2 => points_fixed::<2>(groups, items, y, out, q),
            3 => points_fixed::<3>(groups, items, y, out, q),
            4 => points_fixed::<4>(groups, items, y, out, q),
            5 => points_fixed::<5>(groups, items, y, out, q),
            6 => points_fixed::<6>(groups, items, y, out, q),
            7 => points_fixed::<7>(groups, items, y, out, q),
            8 => points_fixed::<8>(groups, items, y, out, q),
            _ => points_any(groups, items, y, z, out, q),
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
    q_out: &mut [f64],
) {
    let strict = D * (D - 1) / 2;
    let y: [[f64; BLOCK]; D] = std::array::from_fn(|j| y[j]);
    let q_out = q_out.as_chunks_mut::<BLOCK>().0;
    for (e, (out, q_out)) in out
        .as_chunks_mut::<BLOCK>()
        .0
        .iter_mut()
        .zip(q_out)
        .enumerate()
    {
        // The values the weights read, a slice of a length known at compile time, so that
        // reading them needs no bounds checks.
        let group = &groups[e / LANES * items..][..strict + 2 * D + 3];
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
        *q_out = q;
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
    q_out: &mut [f64],
) {
    let d = y.len();
    let strict = d * (d - 1) / 2;
    let q_out = q_out.as_chunks_mut::<BLOCK>().0;
    for (e, (out, q_out)) in out
        .as_chunks_mut::<BLOCK>()
        .0
        .iter_mut()
        .zip(q_out)
        .enumerate()
    {
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
        *q_out = q;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseData;
    use crate::kernel::{ConjugateKernel, NwHyper};
    use crate::rng::{uniform_open01, SeedPlan};
    use crate::simd::{with_level, Level};
    use std::sync::Arc;

    /// A kernel over 60 random points in `d` dimensions, with statistics of eleven subsets
    /// (subset `c`: the points `i ≡ c mod 11` that are not multiples of 3).
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
    /// (unrolled up to 8, general beyond): cluster entries in slot order whatever the order
    /// their slots were set in, none for a removed one, a table grown past several groups,
    /// and the new cluster's entry last; a member's weight without itself is
    /// `b + ln_predictive_member` to rounding (none for the new cluster); every level gives
    /// the same bits, and so does a block of points, members included.
    #[test]
    fn weights_are_the_kernels_predictives_at_every_level() {
        for d in [1, 2, 3, 6, 8, 9, 11] {
            let (kernel, stats) = setup(d);
            let empty = kernel.empty_stat();
            let mut cache: Box<dyn SweepCache<NwStat>> = Box::new(NwSweepCache::new(&kernel));
            cache.reset();
            cache.set_new(&empty, -0.75);
            // Statistic c in slot 2c, set from the last, then slot 8 (statistic 4) removed,
            // slot 13 never set.
            let terms = |c: usize| EntryTerms {
                join: 0.1 * c as f64,
                member: -0.2 * c as f64,
            };
            for (c, stat) in stats.iter().enumerate().rev() {
                cache.set(2 * c, Some((stat, terms(c))));
            }
            cache.set(8, None);
            cache.set(13, None);
            assert_eq!(cache.entries(), 10);
            assert_eq!(cache.entry_of(8), None);
            assert_eq!(cache.entry_slots(), &[0, 2, 4, 6, 10, 12, 14, 16, 18, 20]);
            // The statistic of each entry, `None` for the new cluster.
            let stat_of: Vec<Option<usize>> = (0..11)
                .map(|e| cache.entry_slots().get(e).map(|s| s / 2))
                .collect();
            for (e, c) in stat_of.iter().enumerate().take(10) {
                let c = c.expect("a cluster entry");
                assert_ne!(c, 4);
                assert_eq!(cache.entry_of(2 * c), Some(e));
            }
            for i in [0, 7, 31, 59] {
                let mut out = Vec::new();
                cache.weigh(i, &mut out);
                assert_eq!(out.len(), 11);
                for (e, &w) in out.iter().enumerate() {
                    let want = match stat_of[e] {
                        Some(c) => 0.1 * c as f64 + kernel.ln_predictive(i, &stats[c]),
                        None => -0.75 + kernel.ln_predictive(i, &empty),
                    };
                    assert!(
                        (w - want).abs() <= 1e-12 * want.abs().max(1.0),
                        "d {d}, point {i}, entry {e}: {w} vs {want}"
                    );
                }
                // The point's own subset (statistic 4 has no entry).
                let c = i % 11;
                let own = cache.entry_of(2 * c);
                let member = own.and_then(|e| cache.member(e));
                let want = kernel
                    .ln_predictive_member(i, &stats[c])
                    .map(|lp| -0.2 * c as f64 + lp);
                match (member, want) {
                    (None, _) if own.is_none() => {}
                    (Some(w), Some(want)) => assert!(
                        (w - want).abs() <= 1e-12 * want.abs().max(1.0),
                        "d {d}, point {i}: member {w} vs {want}"
                    ),
                    // Multiples of 3 are in no subset: their "member" weight is of a
                    // cluster without them, which a downdate may refuse.
                    (None, None) => {}
                    _ if i % 3 == 0 => {}
                    other => panic!("d {d}, point {i}: member {other:?}"),
                }
                assert_eq!(
                    cache.member(10),
                    None,
                    "the new cluster has no member weight"
                );
                for level in Level::ALL {
                    let mut again = Vec::new();
                    with_level(level, || cache.weigh(i, &mut again));
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&again), bits(&out), "d {d}, {level:?}");
                    assert_eq!(
                        own.and_then(|e| cache.member(e)).map(f64::to_bits),
                        member.map(f64::to_bits),
                        "d {d}, {level:?}"
                    );
                }
            }
            // Blocks of every length up to BLOCK, each lane the point's own weights, and its
            // entry and member weight in the slot of its subset (statistic 4 has none: the
            // next one's).
            for len in 1..=BLOCK {
                let points: Vec<usize> = (0..len).map(|b| (7 * b + len) % 60).collect();
                let slots: Vec<usize> = points
                    .iter()
                    .map(|&i| if i % 11 == 4 { 10 } else { 2 * (i % 11) })
                    .collect();
                for level in Level::ALL {
                    let mut block = Vec::new();
                    let mut members = [0.0; BLOCK];
                    let mut entries = [0; BLOCK];
                    with_level(level, || {
                        cache.weigh_block(&points, &mut block);
                        cache.block_members(&slots, &mut entries, &mut members);
                    });
                    assert_eq!(block.len(), 11 * BLOCK);
                    assert!(members[len..].iter().all(|m| m.is_nan()));
                    for (b, &slot) in slots.iter().enumerate() {
                        assert_eq!(Some(entries[b]), cache.entry_of(slot));
                    }
                    for (b, &i) in points.iter().enumerate() {
                        let mut out = Vec::new();
                        with_level(level, || cache.weigh(i, &mut out));
                        for (e, &w) in out.iter().enumerate() {
                            assert_eq!(
                                block[e * BLOCK + b].to_bits(),
                                w.to_bits(),
                                "d {d}, {level:?}, block of {len}, point {i}, entry {e}"
                            );
                        }
                        let member = cache.member(entries[b]);
                        assert_eq!(
                            member.map_or(f64::NAN.to_bits(), f64::to_bits),
                            members[b].to_bits(),
                            "d {d}, {level:?}, block of {len}, point {i}: member"
                        );
                    }
                }
            }
        }
    }
}
