//! Numerical building blocks of the priors: log rising factorials, the trapezoidal rule for
//! `ln ∫ exp(g)` over the real line (MATH §7.1), and composite Gauss–Legendre rules on
//! sub-intervals of (0, 1).

use crate::error::{Error, Result};
use crate::math::ln_gamma;

/// `ln Γ(a + n) - ln Γ(a) = ln a(a+1)···(a+n-1)` for `a > 0`, without the cancellation of
/// two large `ln Γ` values (MATH P2).
///
/// Small `n`: a direct sum of logarithms. `a < 20`: the `ln Γ` difference, whose absolute
/// error is then that of `ln Γ(a + n)` alone. `a ≥ 20`: the difference of Stirling series,
/// `(a - ½) ln(1 + n/a) + n ln(a + n) - n + T(a + n) - T(a)` with
/// `T(x) = Σ_k B_{2k} / (2k(2k-1) x^{2k-1})` to `x^{-11}` (truncation error below 1e-19).
/// Cost: O(1) (at most 16 logarithms).
pub(crate) fn ln_rising(a: f64, n: usize) -> f64 {
    if n <= 16 {
        return (0..n).map(|j| (a + j as f64).ln()).sum();
    }
    let nf = n as f64;
    if a < 20.0 {
        return ln_gamma(a + nf) - ln_gamma(a);
    }
    let b = a + nf;
    (a - 0.5) * (nf / a).ln_1p() + nf * b.ln() - nf + stirling_tail(b) - stirling_tail(a)
}

/// `ln Γ(x + h) - ln Γ(x)` for real `x > 0`, `h ≥ 0`, without the cancellation of two large
/// `ln Γ` values: for `x ≥ 20` the difference of Stirling series (as [`ln_rising`]), else the
/// `ln Γ` difference, whose terms are then small unless `h` is large. Cost: O(1).
pub(crate) fn ln_gamma_ratio(x: f64, h: f64) -> f64 {
    if x < 20.0 {
        return ln_gamma(x + h) - ln_gamma(x);
    }
    let b = x + h;
    (x - 0.5) * (h / x).ln_1p() + h * b.ln() - h + stirling_tail(b) - stirling_tail(x)
}

/// The tail `ln Γ(x) - [(x - ½) ln x - x + ½ ln 2π]` of Stirling's series, for `x ≥ 20`.
fn stirling_tail(x: f64) -> f64 {
    let r = 1.0 / x;
    let r2 = r * r;
    r * (1.0 / 12.0
        + r2 * (-1.0 / 360.0
            + r2 * (1.0 / 1260.0
                + r2 * (-1.0 / 1680.0 + r2 * (1.0 / 1188.0 + r2 * (-691.0 / 360_360.0))))))
}

/// Relative agreement of successive trapezoidal sums at which integration stops (MATH §7.1).
const TRAPEZOID_TOL: f64 = 1e-12;
/// How far (in log units) below the peak the integration range extends (MATH §7.1).
const TAIL_DROP: f64 = 40.0;
/// Cap on the number of integrand evaluations of one trapezoidal integral.
const MAX_EVALS: usize = 1 << 22;

/// `ln ∫_ℝ exp(g(t)) dt` for a unimodal `g` whose tails fall off (MATH §7.1).
///
/// Algorithm: bracket the maximum from `start` by doubling steps and locate it by golden
/// section; measure the half-widths at which `g` has dropped by ½ on each side (about one
/// standard deviation) and the distances at which it has dropped by 40; apply the trapezoidal
/// rule on the grid anchored at the mode with step the smaller half-width over that range,
/// halving the step (reusing the previous nodes) until two successive halvings each change
/// the result by at most 1e-12 relative. For an analytic integrand the trapezoidal rule
/// converges geometrically, so this takes three or four halvings; asking for two quiet
/// halvings in a row guards against a coincidental agreement while a narrow feature away
/// from the mode (a kink of `softplus`, say) is still under-resolved.
///
/// `magnitude(t)` bounds the sum of the absolute values of the terms that make up `g(t)`:
/// rounding makes `g` uncertain by about `ε · magnitude`, so the tolerance is raised to
/// `4 ε · magnitude(t*)` when that exceeds 1e-12 (integrands with terms of order 10^5 and
/// more). Cost: typically 200–600 evaluations of `g`.
///
/// Errors if `g` is NaN or `+inf` somewhere evaluated, is `-inf` at `start`, does not decay,
/// or the rule does not converge within the evaluation cap.
pub(crate) fn ln_integrate_line<G, M>(g: G, magnitude: M, start: f64) -> Result<f64>
where
    G: FnMut(f64) -> f64,
    M: Fn(f64) -> f64,
{
    let mut g = g;
    let mut evals = 0usize;
    let mut f = |t: f64| -> Result<f64> {
        evals += 1;
        if evals > MAX_EVALS {
            return Err(Error::Numerical(format!(
                "quadrature: more than {MAX_EVALS} integrand evaluations"
            )));
        }
        let v = g(t);
        if v.is_nan() || v == f64::INFINITY {
            return Err(Error::Numerical(format!(
                "quadrature: log-integrand is {v} at t = {t}"
            )));
        }
        Ok(v)
    };

    let (a, b) = bracket_max(&mut f, start)?;
    let (t_star, g_star) = golden_max(&mut f, a, b)?;
    let tol = TRAPEZOID_TOL.max(4.0 * f64::EPSILON * magnitude(t_star).abs());
    let half_left = drop_distance(&mut f, t_star, g_star, -1.0, 0.5, 1.0 / 64.0, 24)?;
    let half_right = drop_distance(&mut f, t_star, g_star, 1.0, 0.5, 1.0 / 64.0, 24)?;
    let cut_left = drop_distance(&mut f, t_star, g_star, -1.0, TAIL_DROP, half_left, 6)?;
    let cut_right = drop_distance(&mut f, t_star, g_star, 1.0, TAIL_DROP, half_right, 6)?;

    let h0 = half_left.min(half_right);
    let jl = (cut_left / h0).ceil();
    let jr = (cut_right / h0).ceil();
    if jl + jr > MAX_EVALS as f64 {
        return Err(Error::Numerical(format!(
            "quadrature: range [{}, {}] needs more than {MAX_EVALS} nodes at step {h0}",
            t_star - cut_left,
            t_star + cut_right
        )));
    }
    let (jl, jr) = (jl as i64, jr as i64);
    let mut sum = 0.0;
    for j in -jl..=jr {
        sum += (f(t_star + j as f64 * h0)? - g_star).exp();
    }
    let mut h = h0;
    let mut ln_prev = (h * sum).ln();
    let mut quiet = 0;
    for level in 1..=30u32 {
        h *= 0.5;
        let lo = -(jl << level) + 1;
        let hi = jr << level;
        let mut i = lo;
        while i < hi {
            sum += (f(t_star + i as f64 * h)? - g_star).exp();
            i += 2;
        }
        let ln_cur = (h * sum).ln();
        if (ln_cur - ln_prev).abs() <= tol {
            quiet += 1;
            if quiet == 2 {
                return Ok(g_star + ln_cur);
            }
        } else {
            quiet = 0;
        }
        ln_prev = ln_cur;
    }
    Err(Error::Numerical(
        "quadrature: trapezoidal rule did not converge".into(),
    ))
}

/// An interval `(a, b)` containing a maximiser of the unimodal `f`, found by walking from
/// `x0` uphill with doubling steps.
fn bracket_max<F: FnMut(f64) -> Result<f64>>(f: &mut F, x0: f64) -> Result<(f64, f64)> {
    let f0 = f(x0)?;
    if f0 == f64::NEG_INFINITY {
        return Err(Error::Numerical(format!(
            "quadrature: log-integrand is -inf at the start t = {x0}"
        )));
    }
    let mut step = 1.0;
    let f_right = f(x0 + step)?;
    let dir = if f_right >= f0 {
        1.0
    } else if f(x0 - step)? >= f0 {
        -1.0
    } else {
        return Ok((x0 - step, x0 + step));
    };
    let mut prev = x0;
    let mut cur = x0 + dir * step;
    let mut f_cur = if dir > 0.0 { f_right } else { f(cur)? };
    loop {
        step *= 2.0;
        let next = cur + dir * step;
        if !next.is_finite() {
            return Err(Error::Numerical(
                "quadrature: log-integrand does not decay (no maximum found)".into(),
            ));
        }
        let f_next = f(next)?;
        if f_next < f_cur {
            return Ok(if dir > 0.0 {
                (prev, next)
            } else {
                (next, prev)
            });
        }
        prev = cur;
        cur = next;
        f_cur = f_next;
    }
}

/// Golden-section search for the maximum of the unimodal `f` on `[a, b]`, to a relative
/// precision of about 1e-9 in the abscissa; returns `(t*, f(t*))`.
fn golden_max<F: FnMut(f64) -> Result<f64>>(f: &mut F, a: f64, b: f64) -> Result<(f64, f64)> {
    let inv_phi = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (a, b);
    let mut c = b - inv_phi * (b - a);
    let mut d = a + inv_phi * (b - a);
    let mut fc = f(c)?;
    let mut fd = f(d)?;
    for _ in 0..300 {
        if (b - a) <= 1e-9 * (1.0 + a.abs().max(b.abs())) {
            break;
        }
        if fc >= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - inv_phi * (b - a);
            fc = f(c)?;
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + inv_phi * (b - a);
            fd = f(d)?;
        }
    }
    let (t, v) = if fc >= fd { (c, fc) } else { (d, fd) };
    if v == f64::NEG_INFINITY {
        return Err(Error::Numerical(
            "quadrature: log-integrand is -inf at its located maximum".into(),
        ));
    }
    Ok((t, v))
}

/// The distance `d > 0` from the mode `t*` in direction `dir` at which `f` first falls below
/// `f* - drop`, to a relative precision of `2^{-bisections}` (from above).
#[allow(clippy::too_many_arguments)]
fn drop_distance<F: FnMut(f64) -> Result<f64>>(
    f: &mut F,
    t_star: f64,
    f_star: f64,
    dir: f64,
    drop: f64,
    d0: f64,
    bisections: u32,
) -> Result<f64> {
    let target = f_star - drop;
    let mut d = d0;
    // Shrink the first guess until it is inside the drop (a very narrow peak).
    while f(t_star + dir * d)? < target {
        let next = 0.5 * d;
        if t_star + dir * next == t_star {
            return Ok(d);
        }
        d = next;
    }
    let mut inside = d;
    loop {
        d *= 2.0;
        let t = t_star + dir * d;
        if !t.is_finite() {
            return Err(Error::Numerical(
                "quadrature: log-integrand does not decay in the tail".into(),
            ));
        }
        if f(t)? < target {
            break;
        }
        inside = d;
    }
    let mut outside = d;
    for _ in 0..bisections {
        let mid = 0.5 * (inside + outside);
        if f(t_star + dir * mid)? >= target {
            inside = mid;
        } else {
            outside = mid;
        }
    }
    Ok(outside)
}

/// Nodes and weights of the `m`-point Gauss–Legendre rule on `[-1, 1]`, by Newton's method on
/// the three-term recurrence of the Legendre polynomials (exact for polynomials of degree
/// `< 2m`). Cost: O(m²).
pub(crate) fn gauss_legendre(m: usize) -> (Vec<f64>, Vec<f64>) {
    let mut nodes = vec![0.0; m];
    let mut weights = vec![0.0; m];
    let mf = m as f64;
    for i in 0..m {
        let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (mf + 0.5)).cos();
        let mut dp = 0.0;
        for _ in 0..100 {
            let (mut p0, mut p1) = (1.0, x);
            for k in 2..=m {
                let kf = k as f64;
                let p2 = ((2.0 * kf - 1.0) * x * p1 - (kf - 1.0) * p0) / kf;
                p0 = p1;
                p1 = p2;
            }
            dp = mf * (x * p1 - p0) / (x * x - 1.0);
            let dx = p1 / dp;
            x -= dx;
            if dx.abs() <= 1e-16 {
                break;
            }
        }
        nodes[i] = x;
        weights[i] = 2.0 / ((1.0 - x * x) * dp * dp);
    }
    (nodes, weights)
}

/// A composite Gauss–Legendre rule on `[lo, hi] ⊂ (0, 1)` with `points` nodes per panel and
/// panels graded geometrically towards 0 and 1: each panel is no wider than its distance to
/// the nearer of 0 and 1, and no wider than `max_width`. Integrands with singularities at
/// 0 or 1 only (as the `σ` integrands of MATH §7.1) then converge geometrically in `points`
/// on every panel. Returns `(nodes, ln weights)`.
pub(crate) fn graded_rule(lo: f64, hi: f64, points: usize, max_width: f64) -> (Vec<f64>, Vec<f64>) {
    let mut breaks = vec![lo, hi];
    let mut p = 2.0 * lo;
    while p < 0.5 && p < hi {
        breaks.push(p);
        p *= 2.0;
    }
    let mut q = 1.0 - 2.0 * (1.0 - hi);
    while q > 0.5 && q > lo {
        breaks.push(q);
        q = 1.0 - 2.0 * (1.0 - q);
    }
    if lo < 0.5 && 0.5 < hi {
        breaks.push(0.5);
    }
    breaks.sort_by(f64::total_cmp);
    breaks.dedup();
    let (gx, gw) = gauss_legendre(points);
    let mut nodes = Vec::new();
    let mut ln_weights = Vec::new();
    for pair in breaks.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let pieces = ((b - a) / max_width).ceil().max(1.0) as usize;
        let width = (b - a) / pieces as f64;
        for piece in 0..pieces {
            let left = a + piece as f64 * width;
            let half = 0.5 * width;
            for (x, w) in gx.iter().zip(&gw) {
                nodes.push(left + half * (1.0 + x));
                ln_weights.push((half * w).ln());
            }
        }
    }
    (nodes, ln_weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_rising_matches_products_in_every_branch() {
        for &a in &[1e-3, 0.5, 3.0, 19.9, 20.0, 57.3, 1e4, 1e12] {
            for &n in &[0usize, 1, 5, 16, 17, 40, 300] {
                let direct: f64 = (0..n).map(|j| (a + j as f64).ln()).sum();
                let got = ln_rising(a, n);
                assert!(
                    (got - direct).abs() <= 1e-13 * direct.abs().max(1.0),
                    "a = {a}, n = {n}: {got} vs {direct}"
                );
            }
        }
    }

    #[test]
    fn ln_gamma_ratio_matches_ln_gamma_differences() {
        for &x in &[0.3, 5.0, 19.99, 20.0, 300.5] {
            for &h in &[0.0, 0.25, 1.0, 7.5] {
                let want = ln_gamma(x + h) - ln_gamma(x);
                let got = ln_gamma_ratio(x, h);
                assert!(
                    (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                    "x = {x}, h = {h}: {got} vs {want}"
                );
            }
        }
        // Far beyond where ln Γ differences keep digits: Γ(x + 1) / Γ(x) = x, in two halves.
        for &x in &[1e7, 3.3e9] {
            let got = ln_gamma_ratio(x, 0.5) + ln_gamma_ratio(x + 0.5, 0.5);
            assert!((got - f64::ln(x)).abs() < 1e-14 * f64::ln(x), "x = {x}");
        }
    }

    #[test]
    fn gauss_legendre_is_exact_for_polynomials() {
        for m in [1usize, 4, 16] {
            let (x, w) = gauss_legendre(m);
            assert!((w.iter().sum::<f64>() - 2.0).abs() < 1e-14);
            for deg in 0..2 * m {
                let got: f64 = x.iter().zip(&w).map(|(x, w)| w * x.powi(deg as i32)).sum();
                let exact = if deg % 2 == 1 {
                    0.0
                } else {
                    2.0 / (deg as f64 + 1.0)
                };
                assert!((got - exact).abs() < 1e-14, "m = {m}, degree {deg}");
            }
        }
    }

    #[test]
    fn graded_rule_integrates_beta_kernels() {
        // ∫_{lo}^{hi} x^{-1/2} dx and a kernel with a log-singular derivative at 1.
        let (lo, hi) = (1e-6, 0.999);
        let (x, lw) = graded_rule(lo, hi, 16, 1.0 / 16.0);
        let got: f64 = x.iter().zip(&lw).map(|(x, lw)| (lw.exp()) / x.sqrt()).sum();
        let exact = 2.0 * (hi.sqrt() - lo.sqrt());
        assert!((got - exact).abs() < 1e-13 * exact);
        let got: f64 = x
            .iter()
            .zip(&lw)
            .map(|(x, lw)| lw.exp() * (1.0 - x).sqrt())
            .sum();
        let exact = 2.0 / 3.0 * ((1.0 - lo).powf(1.5) - (1.0 - hi).powf(1.5));
        assert!((got - exact).abs() < 1e-13 * exact);
    }

    #[test]
    fn trapezoid_integrates_known_log_integrands() {
        // Gaussian, narrow and wide, far from the start.
        for &(mu, s) in &[(0.0, 1.0), (37.0, 0.003), (-500.0, 80.0)] {
            let g = |t: f64| -0.5 * ((t - mu) / s).powi(2);
            let got = ln_integrate_line(g, |t| g(t).abs(), 0.0).unwrap();
            let exact = (s * (2.0 * std::f64::consts::PI).sqrt()).ln();
            assert!(
                (got - exact).abs() < 1e-12,
                "mu {mu}, s {s}: {got} vs {exact}"
            );
        }
        // Gumbel-type integrand exp(k t - e^t): ∫ = Γ(k), slowly decaying left tail.
        for &k in &[0.05, 1.0, 30.0] {
            let got = ln_integrate_line(|t: f64| k * t - t.exp(), |t| (k * t).abs() + t.exp(), 0.0)
                .unwrap();
            assert!((got - ln_gamma(k)).abs() < 1e-11, "k = {k}");
        }
        // Beta integral in logistic coordinates: ∫ e^{at}/(1+e^t)^{a+b} dt = B(a, b).
        let (a, b) = (2.5, 0.01);
        let sp = crate::math::softplus;
        let got = ln_integrate_line(
            |t: f64| a * t - (a + b) * sp(t),
            |t| (a * t).abs() + (a + b) * sp(t),
            0.0,
        )
        .unwrap();
        let exact = ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b);
        assert!((got - exact).abs() < 1e-11, "{got} vs {exact}");
    }

    #[test]
    fn trapezoid_reports_bad_integrands() {
        let one = |_: f64| 1.0;
        assert!(ln_integrate_line(|t: f64| t, one, 0.0).is_err());
        assert!(ln_integrate_line(|_| f64::NAN, one, 0.0).is_err());
        let hole = |t: f64| if t == 0.0 { f64::NEG_INFINITY } else { -t * t };
        assert!(ln_integrate_line(hole, one, 0.0).is_err());
    }
}
