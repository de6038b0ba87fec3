//! The deterministic data-parallel engine of the uncollapsed samplers (MATH §6.4).
//!
//! Per-point label draws given per-cluster quantities are conditionally independent, so they
//! run in parallel (rayon) over fixed chunks of [`CHUNK`] consecutive points. Chunk `c` draws
//! from its own stream `SeedPlan::new(seed).task(0, 0, c)`, where `seed` is one `u64` drawn
//! from the chain's stream for this pass ([`pass_seed`]): the draws depend on the chunk's
//! canonical id, never on which thread runs it, so results are bit-identical for any thread
//! count. Per-group statistics are rebuilt by a reduction over fixed chunks of
//! [`STAT_CHUNK`] points, each accumulated in index order and merged in chunk order.

use rayon::prelude::*;

use super::super::Chooser;
use crate::error::{Error, Result};
use crate::kernel::{ConjugateKernel, ParametricKernel};
use crate::prior::NrmPrior;
use crate::rng::{uniform_open01, NrmmRng, SeedPlan};

/// Points per chunk of a label pass (one RNG stream and one scratch buffer each).
pub const CHUNK: usize = 4096;

/// Points per chunk of a statistics reduction (one set of group statistics each).
pub const STAT_CHUNK: usize = 1 << 16;

/// Group id that a reduction skips.
pub const NO_GROUP: u32 = u32::MAX;

/// One seed for a parallel pass, drawn from the chain's stream. Errors when the chooser has
/// no stream (exact enumeration), which these continuous moves cannot support.
pub fn pass_seed(chooser: &mut dyn Chooser, who: &str) -> Result<u64> {
    match chooser.rng() {
        Some(rng) => Ok(rand::Rng::next_u64(rng)),
        None => Err(Error::Usage(format!(
            "{who} draws continuous parameters and needs the chain's random stream; it cannot \
             be run under path enumeration"
        ))),
    }
}

/// The chain's stream, or the same error as [`pass_seed`].
pub fn chain_rng<'a>(chooser: &'a mut dyn Chooser, who: &str) -> Result<&'a mut NrmmRng> {
    chooser.rng().ok_or_else(|| {
        Error::Usage(format!(
            "{who} draws continuous parameters and needs the chain's random stream; it cannot \
             be run under path enumeration"
        ))
    })
}

/// Runs `f(index, &mut out[index], scratch, rng)` for every index of `out`, in parallel over
/// chunks of [`CHUNK`]; each chunk gets a fresh `scratch()` and its own stream derived from
/// `seed` and the chunk id. The first error in chunk order is returned. Cost: one call of
/// `f` per element plus one `scratch()` and one stream per chunk.
pub fn for_each_point<T, S, F>(
    seed: u64,
    out: &mut [T],
    scratch: impl Fn() -> S + Sync,
    f: F,
) -> Result<()>
where
    T: Send,
    F: Fn(usize, &mut T, &mut S, &mut NrmmRng) -> Result<()> + Sync,
{
    for_each_point_from(seed, 0, out, scratch, f)
}

/// [`for_each_point`] for the positions `first..first + out.len()` of a longer sequence, as
/// a data-parallel rank holding part of the points runs it: `out[j]` is position
/// `first + j`, whose chunk is `(first + j) / CHUNK`. Each run of `out` inside one chunk gets
/// a fresh `scratch()` and the chunk's stream entered at word `2 ((first + j) mod CHUNK)`,
/// which is where the stream of the whole sequence stands at that position when every
/// position draws one `u64` (one [`uniform_open01`]): such draws do not depend on how the
/// sequence is cut. With `first = 0` it is [`for_each_point`] exactly. The first error in
/// position order is returned.
pub fn for_each_point_from<T, S, F>(
    seed: u64,
    first: u64,
    out: &mut [T],
    scratch: impl Fn() -> S + Sync,
    f: F,
) -> Result<()>
where
    T: Send,
    F: Fn(usize, &mut T, &mut S, &mut NrmmRng) -> Result<()> + Sync,
{
    let plan = SeedPlan::new(seed);
    let chunk = CHUNK as u64;
    let run = |start: usize, part: &mut [T]| -> Result<()> {
        let key = first + start as u64;
        let mut rng = plan.task(0, 0, key / chunk);
        if !key.is_multiple_of(chunk) {
            rng.set_word_pos(2 * u128::from(key % chunk));
        }
        let mut s = scratch();
        for (j, o) in part.iter_mut().enumerate() {
            f(start + j, o, &mut s, &mut rng)?;
        }
        Ok(())
    };
    // The first run ends at the first chunk boundary; the others are whole chunks.
    let head = ((chunk - first % chunk) % chunk) as usize;
    let head = head.min(out.len());
    let (head_run, rest) = out.split_at_mut(head);
    let mut runs: Vec<(usize, &mut [T])> = Vec::new();
    if head > 0 {
        runs.push((0, head_run));
    }
    runs.extend(
        rest.chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, r)| (head + c * CHUNK, r)),
    );
    // A single run goes on the calling thread: same stream, no scheduling overhead.
    if runs.len() <= 1 {
        return runs.pop().map_or(Ok(()), |(start, r)| run(start, r));
    }
    let results: Vec<Result<()>> = runs.into_par_iter().map(|(s, r)| run(s, r)).collect();
    results.into_iter().collect()
}

/// The restricted Gibbs draw of one point's cluster: `w[k] = ln_w[k] + ln f(x_i | θ_k)`, then
/// [`pick_log_mut`] with the uniform `u`. The threaded and the data-parallel sub-cluster
/// samplers both draw labels with it. Cost: `K` kernel evaluations and at most `K` `exp`.
#[inline]
pub fn restricted_label<K: ParametricKernel>(
    kernel: &K,
    i: usize,
    ln_w: &[f64],
    params: &[K::Param],
    w: &mut [f64],
    u: f64,
) -> Result<u32> {
    for (k, slot) in w.iter_mut().enumerate() {
        *slot = ln_w[k] + kernel.ln_f(i, &params[k]);
    }
    Ok(pick_log_mut(w, u)? as u32)
}

/// The two sub-cluster sides' log weights of point `i`: `ln π_s + ln f(x_i | θ_s)`.
#[inline]
pub fn side_weights<K: ParametricKernel>(
    kernel: &K,
    i: usize,
    ln_pi: &[f64; 2],
    theta: &[K::Param; 2],
) -> (f64, f64) {
    (
        ln_pi[0] + kernel.ln_f(i, &theta[0]),
        ln_pi[1] + kernel.ln_f(i, &theta[1]),
    )
}

/// The shape of the jump posterior of an occupied atom with `n` points:
/// `κ(n+1, u)/κ(n, u)·(1+u) = exp(ln κ_join(n))` (`n` for the DP, `n - σ` for NGGP). Errors
/// when it is not a positive finite number.
pub fn jump_shape<P: NrmPrior>(prior: &P, n: usize) -> Result<f64> {
    let shape = prior.ln_kappa_join(n).exp();
    if shape > 0.0 && shape.is_finite() {
        Ok(shape)
    } else {
        Err(Error::Numerical(format!(
            "jump posterior shape {shape} for a cluster of {n} points"
        )))
    }
}

/// Draws an index with probability proportional to `exp(ln_w[k])` and returns it with its log
/// probability: max-shift, one open uniform, cumulative walk skipping zero weights (MATH P9).
/// Errors when a weight is NaN or none is positive. Cost: one `exp` per option.
#[inline]
pub fn draw_log<R: rand::Rng + ?Sized>(ln_w: &[f64], rng: &mut R) -> Result<(usize, f64)> {
    let max = ln_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() || ln_w.iter().any(|w| w.is_nan()) {
        return Err(crate::math::bad_log_weights(ln_w));
    }
    let total: f64 = ln_w.iter().map(|&w| (w - max).exp()).sum();
    let target = uniform_open01(rng) * total;
    let mut acc = 0.0;
    let mut pick = 0;
    for (k, &w) in ln_w.iter().enumerate() {
        let p = (w - max).exp();
        if p > 0.0 {
            acc += p;
            pick = k;
            if target < acc {
                break;
            }
        }
    }
    Ok((pick, ln_w[pick] - max - total.ln()))
}

/// Log weights this far below the largest are treated as zero by [`draw_log_mut`]: each such
/// term is below `e^{-44} ≈ 7.8e-20` of the largest, so even a thousand of them sum to less
/// than half a unit in the last place of the total, and the floating-point draw is the same.
pub const NEGLIGIBLE_LN_WEIGHT: f64 = -44.0;

/// [`draw_log`] for hot loops: overwrites `w` with the shifted exponentials and returns only
/// the index, computing each `exp` once and none for weights below
/// [`NEGLIGIBLE_LN_WEIGHT`] relative to the largest (the usual case for a point far from
/// most clusters). The same law as [`draw_log`] to floating-point resolution. Errors when a
/// weight is NaN or none is positive. Cost: at most one `exp` per option, no allocation.
#[inline]
pub fn draw_log_mut<R: rand::Rng + ?Sized>(w: &mut [f64], rng: &mut R) -> Result<usize> {
    pick_log_mut(w, uniform_open01(rng))
}

/// [`draw_log_mut`] given its open uniform `u` in (0, 1): the index whose cumulative share of
/// `exp(w)` first exceeds `u`, `w` overwritten with the shifted exponentials (weights below
/// [`NEGLIGIBLE_LN_WEIGHT`] relative to the largest as zero). Errors when a weight is NaN or
/// none is positive. Cost: at most one `exp` per option.
#[inline]
pub fn pick_log_mut(w: &mut [f64], u: f64) -> Result<usize> {
    let mut max = f64::NEG_INFINITY;
    let mut nan = false;
    for &v in w.iter() {
        max = max.max(v);
        nan |= v.is_nan();
    }
    if !max.is_finite() || nan {
        return Err(crate::math::bad_log_weights(w));
    }
    let mut total = 0.0;
    for v in w.iter_mut() {
        let shifted = *v - max;
        *v = if shifted < NEGLIGIBLE_LN_WEIGHT {
            0.0
        } else {
            shifted.exp()
        };
        total += *v;
    }
    let target = u * total;
    let mut acc = 0.0;
    let mut pick = 0;
    for (k, &p) in w.iter().enumerate() {
        if p > 0.0 {
            acc += p;
            pick = k;
            if target < acc {
                break;
            }
        }
    }
    Ok(pick)
}

/// Draws side 1 with probability `1 / (1 + exp(w0 - w1))` (the two-option [`draw_log`]) and
/// returns it with `ln P(side 0)` and `ln P(side 1)`. Errors when the difference is NaN.
/// Cost: one `exp` and one `ln_1p`.
#[inline]
pub fn draw_side<R: rand::Rng + ?Sized>(w0: f64, w1: f64, rng: &mut R) -> Result<(u8, [f64; 2])> {
    let ln_b = side_log_probs(w0, w1)?;
    Ok((u8::from(uniform_open01(rng) < ln_b[1].exp()), ln_b))
}

/// `(ln b₀, ln b₁)` with `b_s ∝ exp(w_s)`, stable for any finite difference. Errors when the
/// difference is NaN (both infinite or one NaN). Cost: one `exp` and one `ln_1p`.
#[inline]
pub fn side_log_probs(w0: f64, w1: f64) -> Result<[f64; 2]> {
    let diff = w1 - w0;
    if diff.is_nan() {
        return Err(Error::Numerical(format!(
            "sub-cluster side weights are not comparable: {w0}, {w1}"
        )));
    }
    // ln(1 + e^{-|diff|}) is the log normaliser relative to the larger weight.
    let lse = (-diff.abs()).exp().ln_1p();
    Ok(if diff > 0.0 {
        [-diff - lse, -lse]
    } else {
        [-lse, diff - lse]
    })
}

/// The [`ParametricKernel::Moments`] of `n_groups` groups, as [`group_stats`]: entry `j` is
/// point `points[j]` (or `j`) in group `groups[j]` ([`NO_GROUP`] skips it); chunks of
/// [`STAT_CHUNK`] entries are accumulated in index order and added in chunk order, so the
/// result does not depend on the thread count. Cost: one `moments_add` per point (O(d²) for
/// Normal-Wishart, without the factor updates of [`ConjugateKernel::add`]).
pub fn group_moments<K: ParametricKernel>(
    kernel: &K,
    points: Option<&[usize]>,
    groups: &[u32],
    n_groups: usize,
) -> Vec<K::Moments> {
    grouped(
        points,
        groups,
        n_groups,
        || kernel.new_moments(),
        |m, i| kernel.moments_add(m, i),
        |t, p| kernel.moments_merge(t, p),
    )
}

/// The statistics of `n_groups` groups: point `points[j]` (or `j` when `points` is `None`)
/// belongs to group `groups[j]` ([`NO_GROUP`] skips it). Each chunk of [`STAT_CHUNK`] entries
/// adds its points in index order; the chunk results are merged in chunk order, so the result
/// does not depend on the thread count. Cost: one `add` per point and one `merge` per group
/// and chunk.
pub fn group_stats<K: ConjugateKernel>(
    kernel: &K,
    points: Option<&[usize]>,
    groups: &[u32],
    n_groups: usize,
) -> Vec<K::Stat> {
    grouped(
        points,
        groups,
        n_groups,
        || kernel.empty_stat(),
        |s, i| kernel.add(s, i),
        |t, p| kernel.merge(t, p),
    )
}

/// The reduction behind [`group_stats`] and [`group_moments`]: per chunk of [`STAT_CHUNK`]
/// entries, one accumulator per group filled in index order (chunks in parallel), then the
/// chunk accumulators merged in chunk order.
fn grouped<T: Send>(
    points: Option<&[usize]>,
    groups: &[u32],
    n_groups: usize,
    empty: impl Fn() -> T + Sync,
    add: impl Fn(&mut T, usize) + Sync,
    merge: impl Fn(&mut T, &T),
) -> Vec<T> {
    let accumulate = |c: usize, chunk: &[u32]| {
        let mut acc: Vec<T> = (0..n_groups).map(|_| empty()).collect();
        let base = c * STAT_CHUNK;
        for (j, &g) in chunk.iter().enumerate() {
            if g != NO_GROUP {
                let i = points.map_or(base + j, |p| p[base + j]);
                add(&mut acc[g as usize], i);
            }
        }
        acc
    };
    if groups.len() <= STAT_CHUNK {
        return accumulate(0, groups);
    }
    let partials: Vec<Vec<T>> = groups
        .par_chunks(STAT_CHUNK)
        .enumerate()
        .map(|(c, chunk)| accumulate(c, chunk))
        .collect();
    let mut iter = partials.into_iter();
    let mut total = iter
        .next()
        .unwrap_or_else(|| (0..n_groups).map(|_| empty()).collect());
    for part in iter {
        for (t, p) in total.iter_mut().zip(&part) {
            merge(t, p);
        }
    }
    total
}

/// How many entries of `groups` fall in each of `n_groups` groups. Cost: O(len).
pub fn group_counts(groups: &[u32], n_groups: usize) -> Vec<usize> {
    let mut counts = vec![0usize; n_groups];
    for &g in groups {
        if g != NO_GROUP {
            counts[g as usize] += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(threads: usize) -> Vec<u32> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut out = vec![0u32; 3 * CHUNK + 17];
            for_each_point(
                11,
                &mut out,
                || vec![0.0; 3],
                |i, o, w: &mut Vec<f64>, rng| {
                    w[0] = (i % 5) as f64;
                    w[1] = 1.0;
                    w[2] = f64::NEG_INFINITY;
                    *o = draw_log(w, rng)?.0 as u32;
                    Ok(())
                },
            )
            .unwrap();
            out
        })
    }

    #[test]
    fn draws_do_not_depend_on_the_thread_count() {
        let one = run(1);
        assert!(one.iter().all(|&k| k < 2));
        assert_eq!(one, run(2));
        assert_eq!(one, run(4));
    }

    #[test]
    fn a_sequence_cut_anywhere_draws_the_same_uniforms() {
        let draw = |first: u64, len: usize| {
            let mut out = vec![0.0; len];
            for_each_point_from(
                9,
                first,
                &mut out,
                || (),
                |_, o, _, rng| {
                    *o = uniform_open01(rng);
                    Ok(())
                },
            )
            .unwrap();
            out
        };
        let whole = draw(0, 3 * CHUNK + 17);
        for cuts in [
            vec![5000, 9000],
            vec![1, CHUNK],
            vec![CHUNK - 1, 2 * CHUNK + 3],
        ] {
            let mut parts = Vec::new();
            let mut start = 0;
            for &c in cuts.iter().chain([whole.len()].iter()) {
                parts.extend(draw(start as u64, c - start));
                start = c;
            }
            assert_eq!(parts, whole, "cut at {cuts:?}");
        }
        let mut plain = vec![0.0; whole.len()];
        for_each_point(
            9,
            &mut plain,
            || (),
            |_, o, _, rng| {
                *o = uniform_open01(rng);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(plain, whole);
    }

    #[test]
    fn in_place_and_two_option_draws_match_draw_log() {
        let mut gen = SeedPlan::new(5).chain(0);
        for t in 0..200 {
            let w: Vec<f64> = (0..1 + t % 6)
                .map(|k| -((k * 7 + t) % 11) as f64 * 1.7)
                .collect();
            let (mut a, mut b) = (
                SeedPlan::new(t as u64).chain(1),
                SeedPlan::new(t as u64).chain(1),
            );
            let (k, _) = draw_log(&w, &mut a).unwrap();
            let mut buf = w.clone();
            assert_eq!(draw_log_mut(&mut buf, &mut b).unwrap(), k);
            if w.len() == 2 {
                let ln_b = side_log_probs(w[0], w[1]).unwrap();
                assert!((ln_b[0].exp() + ln_b[1].exp() - 1.0).abs() < 1e-15);
                let (_, lp) = draw_log(&w, &mut gen).unwrap();
                let (side, ln_b2) = draw_side(w[0], w[1], &mut gen).unwrap();
                assert!(side < 2 && ln_b2 == ln_b && lp <= 0.0);
            }
        }
        assert!(side_log_probs(f64::NAN, 0.0).is_err());
        assert!(draw_log_mut(&mut [f64::NEG_INFINITY], &mut gen).is_err());
    }

    #[test]
    fn negligible_weights_are_never_drawn() {
        let mut rng = SeedPlan::new(3).chain(0);
        for _ in 0..1000 {
            let mut w = [0.0, NEGLIGIBLE_LN_WEIGHT - 1.0, -3.0];
            assert_ne!(draw_log_mut(&mut w, &mut rng).unwrap(), 1);
        }
    }

    #[test]
    fn draw_log_rejects_bad_weights() {
        let mut rng = SeedPlan::new(1).chain(0);
        assert!(draw_log(&[f64::NEG_INFINITY], &mut rng).is_err());
        assert!(draw_log(&[0.0, f64::NAN], &mut rng).is_err());
        let (k, lp) = draw_log(&[f64::NEG_INFINITY, 0.0], &mut rng).unwrap();
        assert_eq!((k, lp), (1, 0.0));
    }
}
