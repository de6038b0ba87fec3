//! `ln V_{n,k}` of the NGGP (MATH §1.4, §7.1): against the closed form for small n, the
//! recursion `V_{n,k} = (n - kσ) V_{n+1,k} + V_{n+1,k+1}` up to n of a few hundred and at
//! n = 10^5, and the joint `p(Π, u)` of the prior's weights integrated over u.

use nrmm::math::{ln_add_exp, ln_gamma};
use nrmm::prior::{ln_v, Nggp, NrmPrior};

/// Γ(s, x) for real s (possibly ≤ 0) and x > 0: the regularised-free upper incomplete gamma.
/// For s > 0 `statrs`; otherwise Legendre's continued fraction by the modified Lentz method,
/// which converges for every x > 0 and has no cancellation for s ≤ 0.
fn upper_gamma(s: f64, x: f64) -> f64 {
    if s > 0.0 {
        return statrs::function::gamma::gamma_ui(s, x);
    }
    let tiny = 1e-300;
    let mut b = x + 1.0 - s;
    let mut c = 1.0 / tiny;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..100_000 {
        let an = -(i as f64) * (i as f64 - s);
        b += 2.0;
        d = an * d + b;
        if d.abs() < tiny {
            d = tiny;
        }
        c = b + an / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            return (-x + s * x.ln()).exp() * h;
        }
    }
    panic!("continued fraction for Gamma({s}, {x}) did not converge");
}

/// ln V_{n,k} by the closed form of MATH §1.4,
/// `I_n(k) = e^α / (σ Γ(n)) Σ_i C(n-1, i) (-1)^i α^{i/σ - k} Γ(k - i/σ, α)`, summed with
/// Neumaier compensation. Returns the value and the condition number Σ|terms| / |sum|.
fn ln_v_closed(n: usize, k: usize, alpha: f64, sigma: f64) -> (f64, f64) {
    let (mut sum, mut comp, mut abs_sum) = (0.0f64, 0.0f64, 0.0f64);
    for i in 0..n {
        let ln_binom = ln_gamma(n as f64) - ln_gamma(i as f64 + 1.0) - ln_gamma((n - i) as f64);
        let s = k as f64 - i as f64 / sigma;
        let term = (ln_binom + (i as f64 / sigma - k as f64) * alpha.ln()).exp()
            * upper_gamma(s, alpha)
            * if i % 2 == 0 { 1.0 } else { -1.0 };
        abs_sum += term.abs();
        let t = sum + term;
        comp += if sum.abs() >= term.abs() {
            (sum - t) + term
        } else {
            (term - t) + sum
        };
        sum = t;
    }
    let total = sum + comp;
    assert!(total > 0.0, "closed form lost all digits at n {n}, k {k}");
    let ln_i = alpha - sigma.ln() - ln_gamma(n as f64) + total.ln();
    (k as f64 * (alpha * sigma).ln() + ln_i, abs_sum / total)
}

#[test]
fn ln_v_matches_the_closed_form_for_small_n() {
    let mut checked = 0;
    for &alpha in &[0.5, 1.0, 2.5] {
        for &sigma in &[0.25, 0.5, 0.75] {
            for n in 1..=10 {
                for k in 1..=n {
                    let (closed, cond) = ln_v_closed(n, k, alpha, sigma);
                    let quad = ln_v(n, k, alpha, sigma).unwrap();
                    // The closed form carries about 1e-15 × cond of relative error.
                    let tol = 1e-12 + 1e-14 * cond;
                    assert!(
                        (closed - quad).abs() < tol,
                        "n {n} k {k} alpha {alpha} sigma {sigma}: {quad} vs {closed} (cond {cond:e})"
                    );
                    if tol < 1e-9 {
                        checked += 1;
                    }
                }
            }
        }
    }
    // The comparison must be sharp for most cases, not loosened by cancellation everywhere.
    assert!(checked > 400, "only {checked} sharp comparisons");
}

/// |ln V_{n,k} - ln[(n - kσ) V_{n+1,k} + V_{n+1,k+1}]|.
fn recursion_gap(n: usize, k: usize, alpha: f64, sigma: f64) -> f64 {
    let lhs = ln_v(n, k, alpha, sigma).unwrap();
    let a = (n as f64 - k as f64 * sigma).ln() + ln_v(n + 1, k, alpha, sigma).unwrap();
    let b = ln_v(n + 1, k + 1, alpha, sigma).unwrap();
    (lhs - ln_add_exp(a, b)).abs()
}

#[test]
fn ln_v_satisfies_the_recursion_up_to_a_few_hundred() {
    for &(alpha, sigma) in &[(1.0, 0.5), (0.05, 0.01), (20.0, 0.99), (3.0, 0.2)] {
        for n in (1..=30).chain([64, 150, 300]) {
            let ks: Vec<usize> = if n <= 30 {
                (1..=n).collect()
            } else {
                vec![1, 2, n / 10, n / 2, n - 1, n]
            };
            for k in ks {
                let gap = recursion_gap(n, k, alpha, sigma);
                assert!(
                    gap < 1e-11,
                    "n {n} k {k} alpha {alpha} sigma {sigma}: gap {gap:e}"
                );
            }
        }
    }
}

#[test]
fn ln_v_handles_a_hundred_thousand_points() {
    let n = 100_000;
    for &(alpha, sigma) in &[(1.0, 0.5), (0.01, 0.01), (50.0, 0.99)] {
        for k in [1, 30, 5_000, n] {
            let v = ln_v(n, k, alpha, sigma).unwrap();
            assert!(v.is_finite());
            // ln V is of order -ln Γ(n) ≈ -1.05e6: rounding allows about 1e-9 absolute.
            let gap = recursion_gap(n, k.min(n - 1).max(1), alpha, sigma);
            assert!(
                gap < 1e-8,
                "n {n} k {k} alpha {alpha} sigma {sigma}: gap {gap:e}"
            );
        }
    }
    assert!(ln_v(1_000_000, 10, 1.0, 0.5).unwrap().is_finite());
}

#[test]
fn prior_joint_integrates_over_u_to_the_eppf() {
    // p(Π) = ∫ p(Π, u) du, with the joint built from the trait's ln κ and constant; in t = ln u
    // the integrand gets the Jacobian e^t. Plain trapezoid on a fine wide grid.
    let mut p = Nggp::fixed(1.7, 0.35, 1.0).unwrap();
    for sizes in [vec![1], vec![3, 1, 1], vec![4, 2, 2, 1], vec![9]] {
        let zeros = vec![0.0; sizes.len()];
        let h = 0.01;
        let terms: Vec<f64> = (-6000..=6000)
            .map(|i| {
                let t = i as f64 * h;
                p.set_ln_u(t).unwrap();
                p.ln_joint(&sizes, &zeros) + t
            })
            .collect();
        let ln_int = nrmm::math::log_sum_exp(&terms) + h.ln();
        let eppf = p.ln_eppf(&sizes).unwrap();
        assert!(
            (ln_int - eppf).abs() < 1e-9,
            "{sizes:?}: {ln_int} vs {eppf}"
        );
    }
}
