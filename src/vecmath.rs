//! Branch-free `ln` and `exp` for the samplers' vectorised hot loops.
//!
//! The C library's `log` and `exp` are scalar calls with branches, which a loop over
//! clusters cannot vectorise; in a collapsed Gibbs sweep they took over half the time. These
//! are plain arithmetic on the bits of the argument (exponent split, polynomial, no table, no
//! branch: special cases are selects), so a loop that calls them vectorises, and with
//! `mul_add` throughout they give the same bits at every [`crate::simd::Level`].
//!
//! Accuracy (tested against the standard library over their whole domain): within 1 unit in
//! the last place of `f64::ln` and `f64::exp`, and exact at the special values (`ln 1 = 0`,
//! `exp 0 = 1`, infinities, zeros, NaN).

/// `ln 2` split for Cody-Waite reduction: the high part has 32 trailing zero bits, so
/// `k · LN2_HI` is exact for every exponent `k`.
const LN2_HI: f64 = 0.693_147_180_369_123_8;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// The minimax coefficients of `ln` on `[√2/2, √2]` in `s = f / (2 + f)` (fdlibm `e_log.c`,
/// Sun Microsystems 1993; error below 1 ulp).
const LG1: f64 = 0.666_666_666_666_673_5;
const LG2: f64 = 0.399_999_999_994_094_2;
const LG3: f64 = 0.285_714_287_436_623_9;
const LG4: f64 = 0.222_221_984_321_497_84;
const LG5: f64 = 0.181_835_721_616_180_5;
const LG6: f64 = 0.153_138_376_992_093_73;
const LG7: f64 = 0.147_981_986_051_165_86;

/// `2^54`, which lifts a subnormal argument of `ln` into the normal range.
const TWO_54: f64 = 18_014_398_509_481_984.0;

/// Natural logarithm, within 1 ulp of `f64::ln` for every `x`: `-∞` at zero, NaN below zero
/// or at NaN, `+∞` at `+∞`.
///
/// Algorithm (fdlibm): `x = 2^k (1 + f)` with `1 + f` in `[√2/2, √2)`, found by integer
/// arithmetic on the bits; `ln(1 + f) = 2 artanh(s)` with `s = f / (2 + f)`, a degree-14
/// minimax polynomial in `s`; `k ln 2` added in two parts. Cost: one division, about 15
/// multiply-adds, no branch.
#[inline(always)]
pub fn ln(x: f64) -> f64 {
    let subnormal = x < f64::MIN_POSITIVE;
    let xs = if subnormal { x * TWO_54 } else { x };
    let y = ln_normal(xs, if subnormal { 54.0 } else { 0.0 });
    // The special values, as selects (no branch): zero, negative, NaN and +∞.
    let y = if x == 0.0 { f64::NEG_INFINITY } else { y };
    let y = if x < 0.0 || x.is_nan() { f64::NAN } else { y };
    if x == f64::INFINITY {
        x
    } else {
        y
    }
}

/// [`ln`] of `x ≥ 1` (such as `1 + t` with `t ≥ 0`), the same bits for every such `x`, `+∞`
/// and NaN included, without the selects for zero, negative and subnormal arguments.
#[inline(always)]
pub fn ln_at_least_one(x: f64) -> f64 {
    let y = ln_normal(x, 0.0);
    // +∞ and NaN give themselves, as in `ln`.
    if x < f64::INFINITY {
        y
    } else {
        x
    }
}

/// The logarithm of `2^-lift · xs` for a positive normal `xs` (fdlibm, see [`ln`]).
#[inline(always)]
fn ln_normal(xs: f64, lift: f64) -> f64 {
    // Adding 1 - √2/2 to the significand's bits carries into the exponent exactly when the
    // significand is at least √2, so k and f land in the reduced range.
    let ix = xs
        .to_bits()
        .wrapping_add(0x3ff0_0000_0000_0000 - 0x3fe6_a09e_667f_3bcd);
    let k_biased = f64::from_bits((ix >> 52) | 0x4330_0000_0000_0000) - 4_503_599_627_371_519.0;
    let k = k_biased - lift;
    let f = f64::from_bits((ix & 0x000f_ffff_ffff_ffff) + 0x3fe6_a09e_667f_3bcd) - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * w.mul_add(w.mul_add(LG6, LG4), LG2);
    let t2 = z * w.mul_add(w.mul_add(w.mul_add(LG7, LG5), LG3), LG1);
    let r = t2 + t1;
    let low = k.mul_add(LN2_LO, s * (hfsq + r));
    k.mul_add(LN2_HI, f - (hfsq - low))
}

/// `log2 e`, for the reduction of `exp`.
const LOG2_E: f64 = std::f64::consts::LOG2_E;
/// `ln 2` split for `exp`'s reduction: the high part has enough trailing zeros that
/// `k · EXP_LN2_HI` is exact for `|k| ≤ 1100`.
const EXP_LN2_HI: f64 = 6.931_457_519_531_25e-1;
const EXP_LN2_LO: f64 = 1.428_606_820_309_417_3e-6;
/// `1.5 · 2^52`: adding it rounds to an integer held in the low bits of the significand.
const SHIFTER: f64 = 6_755_399_441_055_744.0;
/// The coefficients `q_0..q_9` of `Q` in `e^r ≈ 1 + r + r² Q(r)` on the reduced interval
/// `|r| ≤ ln 2 / 2`: the minimax polynomial of degree 9 for the error relative to `e^r`
/// (Remez exchange in 50-digit arithmetic), which stays below `3.7 · 10⁻¹⁸ < 2⁻⁵⁷`; with
/// the coefficients rounded to doubles, below `1.2 · 10⁻¹⁷ < 2⁻⁵⁶` (a tenth of an ulp).
const EXP_Q: [f64; 10] = [
    0.500_000_000_000_001_1,
    0.166_666_666_666_664_13,
    0.041_666_666_666_530_267,
    0.008_333_333_333_494_335,
    0.001_388_888_894_359_801_3,
    0.000_198_412_695_067_776_53,
    2.480_149_313_582_44e-5,
    2.755_758_626_748_264_2e-6,
    2.763_023_405_959_419_7e-7,
    2.500_007_218_526_422e-8,
];

/// The exponential, within 1 ulp of `f64::exp` for every `x` (subnormal results included):
/// `0` at `-∞`, `+∞` at and beyond the overflow threshold, NaN at NaN.
///
/// Algorithm: `x = k ln 2 + r` with `|r| ≤ ln 2 / 2` (Cody-Waite, `k` rounded by the
/// `1.5 · 2^52` shifter), `e^r = 1 + r(1 + r Q(r))` with `Q` the degree-9 minimax
/// polynomial of `EXP_Q` (approximation error below 2⁻⁵⁶ relative), and `2^k` applied as
/// two exact powers of two so that results in the subnormal range are rounded once. Cost:
/// about 14 multiply-adds, no branch, no division.
#[inline(always)]
pub fn exp(x: f64) -> f64 {
    // Clamp (NaN passes through: both comparisons are false) so that k stays in range.
    let xc = if x < -746.0 { -746.0 } else { x };
    let xc = if xc > 710.0 { 710.0 } else { xc };
    let (p, ki) = exp_reduced(xc);
    let k1 = ki >> 1;
    let k2 = ki - k1;
    let two_k1 = f64::from_bits(((k1 + 1023) as u64) << 52);
    let two_k2 = f64::from_bits(((k2 + 1023) as u64) << 52);
    let y = p * two_k1 * two_k2;
    if x.is_nan() {
        x
    } else {
        y
    }
}

/// [`exp`] of `x` in `[-708, 0]`, such as a log weight less the largest (the draws skip
/// anything below `e^-708`): the same bits there, NaN at NaN. The result is a normal
/// number, so `2^k` is applied in one multiplication, exact as `exp`'s two are, and no
/// clamp is needed. Cost: about 14 multiply-adds, one multiplication, no branch.
#[inline(always)]
pub fn exp_shifted(x: f64) -> f64 {
    let (p, ki) = exp_reduced(x);
    p * f64::from_bits(((ki + 1023) as u64) << 52)
}

/// `e^r` on the reduced interval and `k`, for `x = k ln 2 + r` (see [`exp`]).
#[inline(always)]
fn exp_reduced(x: f64) -> (f64, i64) {
    let t = x.mul_add(LOG2_E, SHIFTER);
    let k = t - SHIFTER;
    let r = (-k).mul_add(EXP_LN2_HI, x);
    let r = (-k).mul_add(EXP_LN2_LO, r);
    let mut q = EXP_Q[9];
    for &c in EXP_Q[..9].iter().rev() {
        q = q.mul_add(r, c);
    }
    let p = q.mul_add(r, 1.0).mul_add(r, 1.0);
    // k as an integer: the low bits of t's significand (two's complement around the shifter).
    let ki = (t.to_bits() as i64).wrapping_sub(SHIFTER.to_bits() as i64);
    (p, ki)
}

crate::simd::multiversion! {
    /// `ln Σ exp(x_i)`, shifted by the largest `x` (`-∞` when all are, `+∞` when one is, NaN
    /// when one is NaN and none `+∞`), with [`exp`] and [`ln_at_least_one`] at the CPU's
    /// best level: the exponentials in vectors, summed in four lanes added pairwise.
    /// Within a few ulps of [`crate::math::log_sum_exp`]. Cost: one exponential per value.
    pub fn log_sum_exp(xs: &[f64]) -> f64 {
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !max.is_finite() {
            return max;
        }
        let (chunks, rest) = xs.as_chunks::<4>();
        let mut lanes = [0.0f64; 4];
        for c in chunks {
            for l in 0..4 {
                lanes[l] += exp(c[l] - max);
            }
        }
        let mut sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
        for &x in rest {
            sum += exp(x - max);
        }
        // The largest term is exp(0) = 1, so the sum is at least 1 (or NaN).
        max + ln_at_least_one(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeedPlan;
    use rand::{Rng, RngExt};

    /// The distance in units in the last place between two finite doubles of the same sign.
    fn ulps(a: f64, b: f64) -> u64 {
        if a == b {
            return 0;
        }
        assert!(
            a.is_finite() && b.is_finite() && (a >= 0.0) == (b >= 0.0),
            "{a} vs {b}"
        );
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    /// Every positive double class: random bit patterns (all exponents, subnormals included),
    /// a dense sweep of the range a sampler uses (`1 + t`, t up to 1e12), and the edges.
    #[test]
    fn ln_is_within_one_ulp_of_std_everywhere() {
        let mut rng = SeedPlan::new(1).chain(0);
        let mut worst = 0;
        let mut check = |x: f64| {
            let (got, want) = (ln(x), x.ln());
            let u = ulps(got, want);
            assert!(u <= 1, "ln({x:e}) = {got:e}, std {want:e} ({u} ulps)");
            worst = worst.max(u);
        };
        for _ in 0..400_000 {
            let bits = rng.next_u64() & 0x7fff_ffff_ffff_ffff;
            let x = f64::from_bits(bits);
            if x.is_finite() && x > 0.0 {
                check(x);
            }
        }
        for _ in 0..400_000 {
            let t = 10f64.powf(rng.random_range(-18.0..12.0));
            check(1.0 + t);
        }
        for x in [
            f64::MIN_POSITIVE,
            f64::MIN_POSITIVE * 0.5,
            f64::from_bits(1),
            f64::MAX,
            1.0,
            2.0,
            std::f64::consts::SQRT_2,
            std::f64::consts::FRAC_1_SQRT_2,
            1.0 + f64::EPSILON,
            1.0 - f64::EPSILON / 2.0,
        ] {
            check(x);
        }
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert_eq!(ln(-0.0), f64::NEG_INFINITY);
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
        assert!(ln(-1.0).is_nan() && ln(f64::NAN).is_nan() && ln(f64::NEG_INFINITY).is_nan());
        assert!(worst <= 1);
    }

    /// The whole domain: random arguments over the finite range of results (subnormal ones
    /// included), a dense sweep of `[-40, 0]` where a sampler's shifted weights lie, and the
    /// edges and special values.
    #[test]
    fn exp_is_within_one_ulp_of_std_everywhere() {
        let mut rng = SeedPlan::new(2).chain(0);
        let check = |x: f64| {
            let (got, want) = (exp(x), x.exp());
            if want == 0.0 || want.is_infinite() {
                assert_eq!(got, want, "exp({x:e})");
                return;
            }
            // In the subnormal range an ulp is an absolute 2^-1074.
            let u = ulps(got, want);
            assert!(u <= 1, "exp({x:e}) = {got:e}, std {want:e} ({u} ulps)");
        };
        for _ in 0..400_000 {
            check(rng.random_range(-746.0..710.0));
        }
        for _ in 0..400_000 {
            check(rng.random_range(-40.0..0.0));
        }
        for x in [
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            f64::EPSILON,
            709.78,
            709.8,
            -708.4,
            -708.5,
            -745.1,
            -745.2,
            -1000.0,
            1000.0,
        ] {
            check(x);
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp(f64::INFINITY), f64::INFINITY);
        assert!(exp(f64::NAN).is_nan());
    }

    /// The variants for a restricted domain give `ln`'s and `exp`'s bits on it.
    #[test]
    fn restricted_variants_match_on_their_domain() {
        let mut rng = SeedPlan::new(3).chain(0);
        for _ in 0..400_000 {
            let x = 1.0 + 10f64.powf(rng.random_range(-18.0..300.0));
            assert_eq!(ln_at_least_one(x).to_bits(), ln(x).to_bits(), "ln({x:e})");
            let x = rng.random_range(-708.0..0.0);
            assert_eq!(exp_shifted(x).to_bits(), exp(x).to_bits(), "exp({x:e})");
            let x = -(10f64.powf(rng.random_range(-300.0..0.0)));
            assert_eq!(exp_shifted(x).to_bits(), exp(x).to_bits(), "exp({x:e})");
        }
        for x in [1.0, 1.0 + f64::EPSILON, 2.0, f64::MAX, f64::INFINITY] {
            assert_eq!(ln_at_least_one(x).to_bits(), ln(x).to_bits(), "ln({x:e})");
        }
        assert!(ln_at_least_one(f64::NAN).is_nan());
        for x in [0.0, -0.0, -708.0, -707.9, -1e-300, -f64::EPSILON] {
            assert_eq!(exp_shifted(x).to_bits(), exp(x).to_bits(), "exp({x:e})");
        }
        assert!(exp_shifted(f64::NAN).is_nan());
    }

    /// The vector log-sum-exp is the scalar one to a few ulps, over lengths with and without
    /// a remainder past the lanes, and keeps its special values; every level gives the same
    /// bits.
    #[test]
    fn log_sum_exp_matches_the_scalar_one() {
        let mut rng = crate::rng::SeedPlan::new(12).chain(0);
        for len in [1usize, 3, 4, 7, 64, 1001] {
            let xs: Vec<f64> = (0..len)
                .map(|_| 40.0 * crate::rng::uniform_open01(&mut rng) - 30.0)
                .collect();
            let want = crate::math::log_sum_exp(&xs);
            let got = log_sum_exp(&xs);
            assert!(
                (got - want).abs() <= 8.0 * f64::EPSILON * want.abs().max(1.0),
                "{len}"
            );
            for level in crate::simd::Level::ALL
                .into_iter()
                .filter(|l| l.available())
            {
                let at = crate::simd::with_level(level, || log_sum_exp(&xs));
                assert_eq!(at.to_bits(), got.to_bits(), "{len} at {level:?}");
            }
        }
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp(&[f64::NEG_INFINITY; 5]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp(&[0.0, f64::INFINITY]), f64::INFINITY);
        assert!(log_sum_exp(&[0.0, f64::NAN, 1.0, 2.0, 3.0]).is_nan());
        assert_eq!(log_sum_exp(&[-3.0, f64::NEG_INFINITY]), -3.0);
    }
}
