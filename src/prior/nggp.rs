//! (to be written)

/// `ln V_{n,k}` of the NGGP EPPF (MATH §1.4), by quadrature over `t = ln u` (MATH §7.1).
pub fn ln_v(n: usize, k: usize, alpha: f64, sigma: f64) -> crate::Result<f64> {
    let _ = (n, k, alpha, sigma);
    Err(crate::Error::Numerical("not yet implemented".into()))
}
