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
use crate::chooser::{BlockDraws, POINTS};
use crate::error::{Error, Result};
use crate::kernel::sweep_cache::BLOCK;
use crate::kernel::{ConjugateKernel, ParametricKernel, PointIndex};
use crate::prior::NrmPrior;
use crate::rng::{uniform_open01, NrmmRng, SeedPlan};

/// Points per chunk of a label pass (one RNG stream and one scratch buffer each).
pub const CHUNK: usize = 4096;

/// Points per chunk of a statistics reduction (one set of group statistics each).
pub const STAT_CHUNK: usize = 1 << 16;

/// How many points ahead a pass that gathers scattered points asks for the one it will read
/// ([`ParametricKernel::prefetch`]): enough loads in flight to cover a trip to memory.
pub const GATHER_AHEAD: usize = 16;

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
    for_each_run_from(seed, first, out, scratch, |start, part, s, rng| {
        for (j, o) in part.iter_mut().enumerate() {
            f(start + j, o, s, rng)?;
        }
        Ok(())
    })
}

/// The runs behind [`for_each_point_from`]: `f(start, run, scratch, rng)` for each run of
/// `out` inside one chunk (`run[j]` is `out[start + j]`), with the chunk's stream entered
/// where [`for_each_point_from`] enters it, so a run may take its points in blocks as long
/// as it draws in position order. The first error in position order is returned.
pub fn for_each_run_from<T, S, F>(
    seed: u64,
    first: u64,
    out: &mut [T],
    scratch: impl Fn() -> S + Sync,
    f: F,
) -> Result<()>
where
    T: Send,
    F: Fn(usize, &mut [T], &mut S, &mut NrmmRng) -> Result<()> + Sync,
{
    let plan = SeedPlan::new(seed);
    let chunk = CHUNK as u64;
    let run = |start: usize, part: &mut [T]| -> Result<()> {
        let key = first + start as u64;
        let mut rng = plan.task(0, 0, key / chunk);
        if !key.is_multiple_of(chunk) {
            rng.set_word_pos(2 * u128::from(key % chunk));
        }
        f(start, part, &mut scratch(), &mut rng)
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

// A block's weights are laid out as the draws read them.
const _: () = assert!(BLOCK == POINTS);

/// A block pass's scratch: the caller's own, one block's weights and its prepared draws.
struct BlockScratch<S> {
    own: S,
    w: Vec<f64>,
    draws: BlockDraws,
}

/// A pass of categorical draws over positions `first..first + out.len()` (point `j` of the
/// kernel is position `first + j`, as in [`for_each_point_from`]) whose weights come in
/// blocks: for each block of up to [`BLOCK`] consecutive points from `j0`,
/// `weigh(own, j0, count, w)` writes point `j0 + b`'s log weight of option `e` into
/// `w[e · BLOCK + b]` for `options` options (lanes past `count` finite, not read); the
/// block's draws are prepared together (the chooser's block draws) and picked in position
/// order, each from one open uniform, and `then(j, z, &mut out[j], rng)` runs after point
/// `j`'s draw `z` (it may draw more from the same stream; a pass whose `then` draws is only
/// independent of how the sequence is cut when `first = 0`). `own()` makes one per-run
/// scratch for `weigh`.
/// Each point's draw is that of [`crate::chooser::Chooser::choose_log_wide`] from its own
/// weights, so it does not depend on the block it falls in, the thread count or the CPU's
/// level. Errors when a point's weights are NaN or all `-∞`. Cost: `weigh` per block, one
/// exponential per (point, option) in vectors, O(options) per pick.
#[allow(clippy::too_many_arguments)]
pub fn block_pass_from<T, S, W, F>(
    seed: u64,
    first: u64,
    options: usize,
    out: &mut [T],
    own: impl Fn() -> S + Sync,
    weigh: W,
    then: F,
) -> Result<()>
where
    T: Send,
    W: Fn(&mut S, usize, usize, &mut Vec<f64>) + Sync,
    F: Fn(usize, usize, &mut T, &mut NrmmRng) -> Result<()> + Sync,
{
    let scratch = || BlockScratch {
        own: own(),
        w: Vec::new(),
        draws: BlockDraws::default(),
    };
    for_each_run_from(seed, first, out, scratch, |start, run, s, rng| {
        for (c, block) in run.chunks_mut(BLOCK).enumerate() {
            let j0 = start + c * BLOCK;
            weigh(&mut s.own, j0, block.len(), &mut s.w);
            s.draws.prepare(&s.w, options);
            for (b, o) in block.iter_mut().enumerate() {
                let u = uniform_open01(rng);
                let Some((z, _)) = s.draws.pick(&s.w, b, u) else {
                    let point: Vec<f64> = (0..options).map(|e| s.w[e * BLOCK + b]).collect();
                    return Err(crate::math::bad_log_weights(&point));
                };
                then(j0 + b, z, o, rng)?;
            }
        }
        Ok(())
    })
}

/// The restricted Gibbs label pass of the uncollapsed samplers: [`block_pass_from`] with
/// point `j`'s weight of cluster `k` `ln_w[k] + ln f(x_j | params[k])`, weighed in vectors
/// with the points in lanes ([`ParametricKernel::ln_f_block`]). Cost: one likelihood and one
/// exponential per (point, cluster), in vectors, and O(K) per pick.
pub fn label_pass_from<K, T, F>(
    kernel: &K,
    seed: u64,
    first: u64,
    ln_w: &[f64],
    params: &[K::Param],
    out: &mut [T],
    then: F,
) -> Result<()>
where
    K: ParametricKernel,
    T: Send,
    F: Fn(usize, usize, &mut T, &mut NrmmRng) -> Result<()> + Sync,
{
    block_pass_from(
        seed,
        first,
        ln_w.len(),
        out,
        || (),
        |_, j0, count, w| kernel.ln_f_block(j0, count, ln_w, params, w),
        then,
    )
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

/// Draws side 1 with probability `1 / (1 + exp(w0 - w1))` (a two-option categorical draw) and
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

/// The [`ParametricKernel::Moments`] of `n_groups` groups, as [`group_stats`]: point `j` is
/// in group `groups[j]` ([`NO_GROUP`] skips it); chunks of
/// [`STAT_CHUNK`] entries are accumulated in index order and added in chunk order, so the
/// result does not depend on the thread count. Cost: one `moments_add` per point (O(d²) for
/// Normal-Wishart, without the factor updates of [`ConjugateKernel::add`]).
pub fn group_moments<K: ParametricKernel>(
    kernel: &K,
    groups: &[u32],
    n_groups: usize,
) -> Vec<K::Moments> {
    grouped(
        |j| j,
        groups,
        n_groups,
        || kernel.new_moments(),
        |m, i| kernel.moments_add(m, i),
        |t, p| kernel.moments_merge(t, p),
    )
}

/// [`group_moments`] of the points `points` (in either width, [`PointIndex`]): entry `j` is
/// point `points[j]` in group `groups[j]`.
pub fn group_moments_of<K: ParametricKernel, I: PointIndex>(
    kernel: &K,
    points: &[I],
    groups: &[u32],
    n_groups: usize,
) -> Vec<K::Moments> {
    grouped(
        |j| {
            // The points of a launch's sample lie anywhere: ask for those a few entries on.
            if let Some(ahead) = points.get(j + GATHER_AHEAD) {
                kernel.prefetch(ahead.index());
            }
            points[j].index()
        },
        groups,
        n_groups,
        || kernel.new_moments(),
        |m, i| kernel.moments_add(m, i),
        |t, p| kernel.moments_merge(t, p),
    )
}

/// The statistics of `n_groups` groups: point `j` belongs to group `groups[j]` ([`NO_GROUP`]
/// skips it). Each chunk of [`STAT_CHUNK`] entries
/// adds its points in index order; the chunk results are merged in chunk order, so the result
/// does not depend on the thread count. Cost: one `add` per point and one `merge` per group
/// and chunk.
pub fn group_stats<K: ConjugateKernel>(
    kernel: &K,
    groups: &[u32],
    n_groups: usize,
) -> Vec<K::Stat> {
    grouped(
        |j| j,
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
    point: impl Fn(usize) -> usize + Sync,
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
                let i = point(base + j);
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
                    *o = u32::from(uniform_open01(rng) * (w[0] + w[1]) < w[0]);
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

    /// A label pass draws each point as the chain's wide draw would from the point's own
    /// weights and uniform (the block it falls in does not matter), the same labels on any
    /// thread count, and the same labels whatever positions a data-parallel rank starts at.
    #[test]
    fn label_pass_draws_each_point_from_its_own_weights() {
        use crate::chooser::{Chooser, RngChooser};
        use crate::data::DenseData;
        use crate::kernel::{DiagHyper, Diagonal};
        let n = 2 * CHUNK + 21;
        let rows: Vec<Vec<f64>> = (0..n)
            .map(|i| vec![(i % 7) as f64 * 1.5, ((i * 13) % 5) as f64])
            .collect();
        let data = std::sync::Arc::new(DenseData::from_rows(&rows).unwrap());
        let hyper = DiagHyper::from_data(&data, 1.0, 1.0, 2.0).unwrap();
        let kernel = Diagonal::new(data, hyper.clone()).unwrap();
        let mut rng = SeedPlan::new(4).chain(0);
        let params: Vec<_> = (0..5)
            .map(|_| {
                let mut p = kernel.new_param();
                kernel.sample_prior(&mut rng, &mut p).unwrap();
                p
            })
            .collect();
        let ln_w = [-0.5, -1.0, -2.0, -0.1, -3.0];
        let pass = |first: u64, len: usize, threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut out = vec![0u32; len];
            pool.install(|| {
                label_pass_from(
                    &kernel,
                    21,
                    first,
                    &ln_w,
                    &params,
                    &mut out,
                    |_, z, o, _| {
                        *o = z as u32;
                        Ok(())
                    },
                )
            })
            .unwrap();
            out
        };
        let whole = pass(0, n, 1);
        assert_eq!(pass(0, n, 3), whole);
        // The draws the chain's wide draw makes from each point's weights and the stream
        // position of the point.
        let plan = SeedPlan::new(21);
        for (i, &z) in whole.iter().enumerate() {
            let mut s = plan.task(0, 0, (i / CHUNK) as u64);
            s.set_word_pos(2 * (i % CHUNK) as u128);
            let w: Vec<f64> = (0..5)
                .map(|k| ln_w[k] + kernel.ln_f(i, &params[k]))
                .collect();
            let (want, _) = RngChooser::new(&mut s).choose_log_wide(&w).unwrap();
            assert_eq!(z as usize, want, "point {i}");
        }
        // A rank holding points `start..end` only (its kernel's point j is point start + j)
        // draws what the whole pass draws for them.
        for (start, end) in [(0, 5000), (5000, n), (CHUNK - 3, CHUNK + 9)] {
            let part = std::sync::Arc::new(DenseData::from_rows(&rows[start..end]).unwrap());
            let local = Diagonal::new(part, hyper.clone()).unwrap();
            let mut out = vec![0u32; end - start];
            label_pass_from(
                &local,
                21,
                start as u64,
                &ln_w,
                &params,
                &mut out,
                |_, z, o, _| {
                    *o = z as u32;
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(out, whole[start..end], "points {start}..{end}");
        }
    }

    #[test]
    fn two_option_draws_are_normalised_and_reject_nan() {
        let mut gen = SeedPlan::new(5).chain(0);
        for t in 0..200 {
            let w = [-((7 + t) % 11) as f64 * 1.7, -((3 * t) % 13) as f64 * 0.9];
            let ln_b = side_log_probs(w[0], w[1]).unwrap();
            assert!((ln_b[0].exp() + ln_b[1].exp() - 1.0).abs() < 1e-15);
            let want = (w[1] - w[0]).exp() / (1.0 + (w[1] - w[0]).exp());
            assert!((ln_b[1].exp() - want).abs() < 1e-15);
            let (side, ln_b2) = draw_side(w[0], w[1], &mut gen).unwrap();
            assert!(side < 2 && ln_b2 == ln_b);
        }
        assert!(side_log_probs(f64::NAN, 0.0).is_err());
        assert!(draw_side(f64::INFINITY, f64::INFINITY, &mut gen).is_err());
    }

    /// A label pass refuses a point whose weights are all `-∞`.
    #[test]
    fn label_pass_rejects_bad_weights() {
        let mut out = vec![0u8; 3];
        let r = block_pass_from(
            1,
            0,
            2,
            &mut out,
            || (),
            |_, _, _, w| {
                w.clear();
                w.resize(2 * BLOCK, f64::NEG_INFINITY);
            },
            |_, _, _, _| Ok(()),
        );
        assert!(r.is_err());
    }
}
