//! The categorical draw from many log weights (one per cluster) in vectors, for
//! [`super::Chooser::choose_log_wide`].
//!
//! Algorithm: the maximum `m`, the shifted exponentials `p_i = exp(w_i - m)` with the
//! branch-free [`crate::vecmath::exp_shifted`] (zero below `e^-708`), their total `T` as
//! [`LANES`] running lane sums added pairwise, a target `u T` from one open uniform `u`, and
//! a walk that skips whole groups of [`LANES`] by their pairwise sums before walking the
//! weights of the group that holds the target one by one (zero weights are never chosen).
//! Every step is the same operation in the same order at every [`crate::simd::Level`], so
//! the choice is too.

use crate::simd::multiversion;
use crate::vecmath;

/// Weights per group of the walk.
const LANES: usize = 8;

/// Shifted log weights below this count as zero: `e^-708 ≈ 3.3e-308` is the smallest
/// exponential that is a normal number, and any number of such weights added to the
/// largest one (which is 1) leaves the total unchanged, so the draw is the same.
const NEGLIGIBLE: f64 = -708.0;

/// The weight of a draw from a log weight less the largest, `x ≤ 0`: `e^x`, or zero below
/// `e^NEGLIGIBLE` (exponentials that would come out subnormal, slow on every CPU, are never
/// taken). Branch-free.
#[inline(always)]
fn exp_weight(x: f64) -> f64 {
    let y = vecmath::exp_shifted(if x < NEGLIGIBLE { NEGLIGIBLE } else { x });
    if x < NEGLIGIBLE {
        0.0
    } else {
        y
    }
}

/// [`exp_weight`] of each value, in place: a fixed length, so that the loop is vector
/// operations.
#[inline(always)]
fn exp_weights<const N: usize>(v: &mut [f64; N]) {
    for x in v.iter_mut() {
        *x = exp_weight(*x);
    }
}

/// The sum of one group of [`LANES`] values, pairwise.
#[inline(always)]
fn group_sum(v: &[f64]) -> f64 {
    ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))
}

multiversion! {
    /// Draws an index with probability proportional to `exp(ln_w[i])` from the open uniform
    /// `u`, with `e` as scratch; returns the index and its log probability, or `None` when a
    /// weight is NaN or `+∞`, or every weight is `-∞`.
    pub(crate) fn draw_log_weights(ln_w: &[f64], e: &mut Vec<f64>, u: f64) -> Option<(usize, f64)> {
        let n = ln_w.len();
        e.clear();
        e.extend_from_slice(ln_w);
        e.resize(n.div_ceil(LANES) * LANES, f64::NEG_INFINITY);
        let mut lane_max = [f64::NEG_INFINITY; LANES];
        for group in e.chunks_exact(LANES) {
            for l in 0..LANES {
                lane_max[l] = if group[l] > lane_max[l] { group[l] } else { lane_max[l] };
            }
        }
        let max = lane_max.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !max.is_finite() {
            return None;
        }
        // One flat loop, so that the compiler vectorises it along the weights (a loop over
        // groups is vectorised across groups, leaving a short vector to scalar code).
        for v in e.iter_mut() {
            *v = exp_weight(*v - max);
        }
        let mut lane_sum = [0.0f64; LANES];
        for group in e.chunks_exact(LANES) {
            for l in 0..LANES {
                lane_sum[l] += group[l];
            }
        }
        // The largest weight contributes exp(0) = 1, so the total is at least 1 unless a
        // weight is NaN.
        let total = group_sum(&lane_sum);
        if total.is_nan() {
            return None;
        }
        let ln_total = if total == 1.0 { max } else { max + vecmath::ln_at_least_one(total) };
        let target = u * total;
        let mut acc = 0.0;
        let mut last_positive_group = 0;
        let mut found = None;
        for (g, group) in e.chunks_exact(LANES).enumerate() {
            let s = group_sum(group);
            if s > 0.0 {
                last_positive_group = g;
                if target < acc + s {
                    found = Some(g);
                    break;
                }
                acc += s;
            }
        }
        // Rounding can leave the target at or past the last sum: the last positive weight
        // is then the draw, as in the walk of `RngChooser::choose_log`.
        let g = found.unwrap_or(last_positive_group);
        let group = &e[g * LANES..(g + 1) * LANES];
        let mut pick = None;
        for (l, &p) in group.iter().enumerate() {
            if p > 0.0 {
                acc += p;
                pick = Some(g * LANES + l);
                if found.is_some() && target < acc {
                    break;
                }
            }
        }
        let i = pick.expect("a group with a positive sum has a positive weight");
        Some((i, ln_w[i] - ln_total))
    }
}

/// Points of a [`BlockDraws`]: one per lane of a vector of 8 doubles.
pub(crate) const POINTS: usize = 8;

/// The draws of up to [`POINTS`] points prepared together, each the draw of
/// [`draw_log_weights`] from its own weights, bit for bit, up to its uniform.
///
/// A sweep that weighs the next points of its order against one state (with the points in
/// vector lanes, `ln_w[e · POINTS + b]` the weight of point `b` against entry `e`) prepares
/// their draws at once: the maximum, the shifted exponentials, the lane and group sums, the
/// total and its logarithm, and the running sums of the walk, each the same operations in
/// the same order as [`draw_log_weights`] makes them, one point per lane; so what one
/// point's draw computes as a chain of dependent operations, a block computes at the
/// arithmetic's throughput. Only the comparison with the target, which needs the point's
/// uniform, is left to [`BlockDraws::pick`], called in the sweep's order. Cost of
/// [`BlockDraws::prepare`]: one exponential per (point, entry) in vectors and O(entries)
/// vector additions; of a pick, O(groups + [`LANES`]) comparisons without branches.
#[derive(Clone, Debug, Default)]
pub(crate) struct BlockDraws {
    /// Groups of [`LANES`] entries.
    groups: usize,
    /// The shifted exponentials `p[e · POINTS + b]`, entries padded with zeros to whole groups.
    p: Vec<f64>,
    /// The pairwise sum of each group, `sums[g · POINTS + b]`.
    sums: Vec<f64>,
    /// The walk's running sum after each group, `ends[g · POINTS + b]`: the group sums added
    /// in order.
    ends: Vec<f64>,
    /// The walk's running sum after each entry within its group, `runs[e · POINTS + b]`: the
    /// running sum before the group plus the group's weights, added in order.
    runs: Vec<f64>,
    /// Each point's total of the shifted exponentials.
    total: [f64; POINTS],
    /// Each point's log normaliser (largest weight plus the logarithm of the total), NaN
    /// for a point whose weights cannot be drawn from.
    ln_total: [f64; POINTS],
}

impl BlockDraws {
    /// Prepares the draws of the points in the lanes of `ln_w` (`entries` weights per point,
    /// laid out as `ln_w[e · POINTS + b]`), at the CPU's best [`crate::simd::Level`].
    pub(crate) fn prepare(&mut self, ln_w: &[f64], entries: usize) {
        debug_assert_eq!(ln_w.len(), entries * POINTS);
        self.groups = entries.div_ceil(LANES);
        self.p.resize(self.groups * LANES * POINTS, 0.0);
        self.runs.resize(self.groups * LANES * POINTS, 0.0);
        self.sums.resize(self.groups * POINTS, 0.0);
        self.ends.resize(self.groups * POINTS, 0.0);
        prepare_block(
            ln_w,
            Prepared {
                p: &mut self.p,
                runs: &mut self.runs,
                sums: &mut self.sums,
                ends: &mut self.ends,
                total: &mut self.total,
                ln_total: &mut self.ln_total,
            },
        );
    }

    /// The draw of point `b` from the open uniform `u`: the index and log probability that
    /// [`draw_log_weights`] gives for the point's weights (`ln_w` as given to
    /// [`BlockDraws::prepare`]) and `u`, or `None` where it gives `None`. Cost: O(groups +
    /// [`LANES`]).
    pub(crate) fn pick(&self, ln_w: &[f64], b: usize, u: f64) -> Option<(usize, f64)> {
        // Once, so that no lane index below needs a bounds check.
        assert!(b < POINTS, "lane {b} of a block of {POINTS}");
        let ln_total = self.ln_total[b];
        if ln_total.is_nan() {
            return None;
        }
        let target = u * self.total[b];
        // The walk of `draw_log_weights`, its running sums prepared in lanes. They add the
        // group sums (then the weights) in order, skipping zeros, whose addition would leave
        // them unchanged anyway; so they never decrease, and the first sum past the target
        // is at the count of those at or below it (never at a zero term): no branch on the
        // target's random place.
        let count = |sums: &[[f64; POINTS]]| {
            sums.iter()
                .map(|s| (s[b] <= target) as usize)
                .sum::<usize>()
        };
        let g = count(&self.ends.as_chunks::<POINTS>().0[..self.groups]);
        if g < self.groups {
            let l = count(&self.runs.as_chunks::<POINTS>().0[g * LANES..][..LANES]);
            if l < LANES {
                let i = g * LANES + l;
                return Some((i, ln_w[i * POINTS + b] - ln_total));
            }
        }
        // Rounding left the target at or past the last sum (of all, or of the group): the
        // last positive weight (of the last group with one) is then the draw.
        let g = if g < self.groups {
            g
        } else {
            (0..self.groups)
                .rev()
                .find(|&k| self.sums[k * POINTS + b] > 0.0)
                .expect("the largest weight is positive")
        };
        let l = (0..LANES)
            .rev()
            .find(|&l| self.p[(g * LANES + l) * POINTS + b] > 0.0)
            .expect("a group with a positive sum has a positive weight");
        let i = g * LANES + l;
        Some((i, ln_w[i * POINTS + b] - ln_total))
    }
}

/// The buffers [`prepare_block`] fills (see [`BlockDraws`]), sized for whole groups.
struct Prepared<'a> {
    p: &'a mut [f64],
    runs: &'a mut [f64],
    sums: &'a mut [f64],
    ends: &'a mut [f64],
    total: &'a mut [f64; POINTS],
    ln_total: &'a mut [f64; POINTS],
}

/// One value per point of a block.
type Lanes = [f64; POINTS];

/// `a + b` per point (a loop the compiler makes one vector operation).
#[inline(always)]
fn add(a: &Lanes, b: &Lanes) -> Lanes {
    let mut s = [0.0; POINTS];
    for k in 0..POINTS {
        s[k] = a[k] + b[k];
    }
    s
}

/// The pairwise sum of one group of [`LANES`] entries per point, as [`group_sum`] adds them.
#[inline(always)]
fn group_sum_lanes(v: &[Lanes]) -> Lanes {
    add(
        &add(&add(&v[0], &v[1]), &add(&v[2], &v[3])),
        &add(&add(&v[4], &v[5]), &add(&v[6], &v[7])),
    )
}

multiversion! {
    /// The body of [`BlockDraws::prepare`]. Every loop runs over the points of a block (or
    /// whole chunks of values), so that each is vector operations without bounds checks; a
    /// point's values take the same operations in the same order as [`draw_log_weights`].
    fn prepare_block(ln_w: &[f64], out: Prepared<'_>) {
        let Prepared { p, runs, sums, ends, total, ln_total } = out;
        let (ln_w, _) = ln_w.as_chunks::<POINTS>();
        let (p, _) = p.as_chunks_mut::<POINTS>();
        let (sums, _) = sums.as_chunks_mut::<POINTS>();
        let (runs, _) = runs.as_chunks_mut::<POINTS>();
        let (ends, _) = ends.as_chunks_mut::<POINTS>();
        let mut max = [f64::NEG_INFINITY; POINTS];
        for w in ln_w {
            for b in 0..POINTS {
                max[b] = if w[b] > max[b] { w[b] } else { max[b] };
            }
        }
        for (w, p) in ln_w.iter().zip(p.iter_mut()) {
            for b in 0..POINTS {
                p[b] = w[b] - max[b];
            }
        }
        // The padding to a whole group weighs zero, as `draw_log_weights`'s does: the zeros
        // that `exp_weight` gives its `-∞`, without computing them (a quarter of the
        // exponentials at 6 clusters).
        let (real, padding) = p.split_at_mut(ln_w.len());
        padding.fill([0.0; POINTS]);
        // Four vectors of exponentials at a time: their chains of multiply-adds are
        // independent, and the processor overlaps them. The entries left over go two at a
        // time through a copy padded with `-∞`, so that they too take the vector loop (a
        // loop over single entries is left scalar, with a branch per value).
        let (quads, rest) = real.as_flattened_mut().as_chunks_mut::<{ 4 * POINTS }>();
        for v in quads {
            exp_weights(v);
        }
        for part in rest.chunks_mut(2 * POINTS) {
            let mut v = [f64::NEG_INFINITY; 2 * POINTS];
            v[..part.len()].copy_from_slice(part);
            exp_weights(&mut v);
            part.copy_from_slice(&v[..part.len()]);
        }
        // The lane sums of `draw_log_weights`, entry e into lane e mod LANES: group by group,
        // the padding's zeros included, which leave a sum of non-negative terms unchanged.
        let mut lane_sum = [[0.0f64; POINTS]; LANES];
        for group in p.chunks_exact(LANES) {
            for (s, v) in lane_sum.iter_mut().zip(group) {
                *s = add(s, v);
            }
        }
        let mut acc = [0.0f64; POINTS];
        for (((v, run), sum), end) in p
            .chunks_exact(LANES)
            .zip(runs.chunks_exact_mut(LANES))
            .zip(sums.iter_mut())
            .zip(ends.iter_mut())
        {
            *sum = group_sum_lanes(v);
            let mut within = acc;
            for (v, run) in v.iter().zip(run.iter_mut()) {
                within = add(&within, v);
                *run = within;
            }
            acc = add(&acc, sum);
            *end = acc;
        }
        // Local arrays, so that the loops below are vector operations.
        let sum = group_sum_lanes(&lane_sum);
        *total = sum;
        // The logarithm of every lane, then selects: a branch on a total of exactly 1 would
        // keep the loop from being one vector operation.
        let mut ln_t = [0.0f64; POINTS];
        for b in 0..POINTS {
            ln_t[b] = vecmath::ln_at_least_one(sum[b]);
        }
        let mut ln = [0.0f64; POINTS];
        for b in 0..POINTS {
            let l = if sum[b] == 1.0 { max[b] } else { max[b] + ln_t[b] };
            // The cases in which `draw_log_weights` refuses the weights.
            let refused = !max[b].is_finite() || sum[b].is_nan();
            ln[b] = if refused { f64::NAN } else { l };
        }
        *ln_total = ln;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::log_sum_exp;
    use crate::rng::{uniform_open01, SeedPlan};
    use crate::simd::{with_level, Level};

    /// Frequencies over many draws match the normalised weights, zero weights are never
    /// drawn, and the log probability is the log-sum-exp normalisation to rounding.
    #[test]
    fn draws_follow_the_weights() {
        let ln_w: Vec<f64> = (0..21)
            .map(|k| {
                if k % 5 == 2 {
                    f64::NEG_INFINITY
                } else {
                    (k as f64 * 0.37).sin() * 2.0
                }
            })
            .collect();
        let total = log_sum_exp(&ln_w);
        let mut rng = SeedPlan::new(4).chain(0);
        let mut e = Vec::new();
        let mut counts = [0usize; 21];
        let draws = 200_000;
        for _ in 0..draws {
            let (i, lp) = draw_log_weights(&ln_w, &mut e, uniform_open01(&mut rng)).unwrap();
            assert!((lp - (ln_w[i] - total)).abs() < 1e-13);
            counts[i] += 1;
        }
        for (k, &c) in counts.iter().enumerate() {
            let p = (ln_w[k] - total).exp();
            let sd = (p * (1.0 - p) / draws as f64).sqrt();
            let f = c as f64 / draws as f64;
            assert!((f - p).abs() <= 5.0 * sd + 1e-12, "weight {k}: {f} vs {p}");
        }
    }

    /// The choice at the edges of the cumulative sums and with extreme weights is the same
    /// at every level the CPU has; bad weights are refused.
    #[test]
    fn every_level_makes_the_same_choice() {
        let mut rng = SeedPlan::new(9).chain(0);
        let mut e = Vec::new();
        for round in 0..3000 {
            let len = 1 + round % 40;
            let ln_w: Vec<f64> = (0..len)
                .map(|k| {
                    if k % 7 == 3 {
                        f64::NEG_INFINITY
                    } else {
                        800.0 * (uniform_open01(&mut rng) - 0.5)
                    }
                })
                .collect();
            let u = match round % 3 {
                0 => f64::EPSILON / 4.0,
                1 => 1.0 - f64::EPSILON / 4.0,
                _ => uniform_open01(&mut rng),
            };
            let want = with_level(Level::Portable, || draw_log_weights(&ln_w, &mut e, u));
            for level in Level::ALL {
                let got = with_level(level, || draw_log_weights(&ln_w, &mut e, u));
                assert_eq!(
                    got.map(|(i, lp)| (i, lp.to_bits())),
                    want.map(|(i, lp)| (i, lp.to_bits()))
                );
            }
            if let Some((i, _)) = want {
                assert!(ln_w[i] > f64::NEG_INFINITY);
            }
        }
        for bad in [
            &[f64::NEG_INFINITY, f64::NEG_INFINITY][..],
            &[0.0, f64::NAN],
            &[f64::INFINITY, 0.0],
            &[],
        ] {
            assert!(draw_log_weights(bad, &mut e, 0.5).is_none());
        }
    }

    /// A block's prepared draws are [`draw_log_weights`]'s, index and log probability to the
    /// bit, for every lane, at every level: weights of many magnitudes with `-∞` entries,
    /// lengths across group boundaries, uniforms at the edges, and refused weights (all
    /// `-∞`, NaN, `+∞`) in some lanes.
    #[test]
    fn block_draws_are_the_single_draws() {
        let mut rng = SeedPlan::new(11).chain(0);
        let mut e = Vec::new();
        let mut block = BlockDraws::default();
        for round in 0..1500 {
            let entries = 1 + round % 37;
            let mut ln_w = vec![0.0; entries * POINTS];
            for (k, w) in ln_w.iter_mut().enumerate() {
                *w = match (k / POINTS) % 7 {
                    3 => f64::NEG_INFINITY,
                    5 => 10.0 * (uniform_open01(&mut rng) - 0.5),
                    _ => 800.0 * (uniform_open01(&mut rng) - 0.5),
                };
            }
            match round % 5 {
                1 => (0..entries).for_each(|k| ln_w[k * POINTS + 2] = f64::NEG_INFINITY),
                2 => ln_w[(entries / 2) * POINTS + 5] = f64::NAN,
                3 => ln_w[(entries - 1) * POINTS + 7] = f64::INFINITY,
                _ => {}
            }
            for level in Level::ALL {
                with_level(level, || block.prepare(&ln_w, entries));
                for b in 0..POINTS {
                    let u = match (round + b) % 3 {
                        0 => f64::EPSILON / 4.0,
                        1 => 1.0 - f64::EPSILON / 4.0,
                        _ => uniform_open01(&mut rng),
                    };
                    let column: Vec<f64> = ln_w.iter().skip(b).step_by(POINTS).copied().collect();
                    let want = with_level(Level::Portable, || draw_log_weights(&column, &mut e, u));
                    let got = block.pick(&ln_w, b, u);
                    assert_eq!(
                        got.map(|(i, lp)| (i, lp.to_bits())),
                        want.map(|(i, lp)| (i, lp.to_bits())),
                        "{level:?}, round {round}, lane {b}"
                    );
                }
            }
        }
    }
}
