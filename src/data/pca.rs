//! Principal component analysis: fit the top-k principal axes of a training set, project new
//! points on them and map projections back.
//!
//! Fitting centres the training matrix `X` (n × d) at its column means, forms the scatter
//! matrix `S = (X - 1 x̄ᵀ)ᵀ (X - 1 x̄ᵀ)` (one blocked matrix product) and takes its symmetric
//! eigendecomposition (nalgebra's Householder tridiagonalisation and implicit symmetric QR).
//! The principal axes are the eigenvectors of the k largest eigenvalues `λ_j`, and the
//! variance explained by axis `j` is `λ_j / (n - 1)`, an eigenvalue of the unbiased sample
//! covariance. These are the right singular vectors and squared singular values of the centred
//! data; the eigensolver is used rather than nalgebra's SVD because the latter (0.34, with
//! singular vectors requested) can return wrong singular values, e.g. for the rank-deficient
//! matrices that centring produces whenever n ≤ d (upstream issue dimforge/nalgebra#1172).
//! Forming `S` squares the condition number, which only affects the accuracy of eigenvalues
//! far below the largest, never those of the leading axes PCA keeps. As a guard, the
//! eigenvalues must sum to `trace S`. Each axis is only defined up to sign; the sign is fixed
//! so that the entry of largest magnitude is positive, so that fits are reproducible.
//!
//! Cost: fitting is O(n d² + d³) time and O(n d + d²) memory (one centred copy of the data and
//! the scatter); projecting m points is O(m d k).

use super::DenseData;
use crate::error::{Error, Result};

/// A fitted principal component analysis: the training mean, the top-k principal axes and
/// the variance each explains.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pca {
    d: usize,
    k: usize,
    mean: Vec<f64>,
    /// `k × d`, row-major: row `j` is the `j`-th principal axis (unit length).
    components: Vec<f64>,
    explained: Vec<f64>,
    total_variance: f64,
}

impl Pca {
    /// Fits the top `k` principal axes of `x` (one point per row); see the module
    /// documentation for the algorithm and cost.
    ///
    /// Errors if `k` is 0, larger than the dimension `d`, or larger than the number of points
    /// (further axes would not be determined by the data), if there are fewer than 2 points,
    /// or if the eigensolver does not converge or fails its trace check.
    pub fn fit(x: &DenseData, k: usize) -> Result<Self> {
        let (n, d) = (x.n(), x.d());
        if n < 2 {
            return Err(Error::Empty(format!(
                "principal component analysis needs at least 2 points, got {n}"
            )));
        }
        if k == 0 || k > d || k > n {
            return Err(Error::param(
                "number of principal components k",
                k,
                &format!(
                    "1 <= k <= min(d, n) = {} for {n} points of dimension {d}",
                    d.min(n)
                ),
            ));
        }
        let mut mean = vec![0.0; d];
        for i in 0..n {
            for (m, v) in mean.iter_mut().zip(x.row(i)) {
                *m += v;
            }
        }
        for m in &mut mean {
            *m /= n as f64;
        }
        let centred = nalgebra::DMatrix::from_fn(n, d, |i, j| x.row(i)[j] - mean[j]);
        let scatter = centred.tr_mul(&centred);
        drop(centred);
        let trace = scatter.trace();
        // The iteration cap only turns a runaway into an error; convergence takes a few
        // sweeps per eigenvalue.
        let eigen = nalgebra::SymmetricEigen::try_new(scatter, 5.0 * f64::EPSILON, 1000 * d)
            .ok_or_else(|| {
                Error::Numerical(format!(
                    "the eigendecomposition of the scatter of {n} points of dimension {d} did \
                     not converge"
                ))
            })?;
        let sum: f64 = eigen.eigenvalues.iter().sum();
        if (sum - trace).abs() > 1e-8 * trace.abs().max(f64::MIN_POSITIVE) {
            return Err(Error::Numerical(format!(
                "the eigenvalues of the scatter of {n} points of dimension {d} sum to {sum}, \
                 its trace is {trace}"
            )));
        }
        let mut order: Vec<usize> = (0..d).collect();
        order.sort_by(|&a, &b| eigen.eigenvalues[b].total_cmp(&eigen.eigenvalues[a]));
        let scale = 1.0 / (n - 1) as f64;
        // Rounding can leave the eigenvalues of a null direction slightly negative.
        let explained = order[..k]
            .iter()
            .map(|&j| eigen.eigenvalues[j].max(0.0) * scale)
            .collect();
        let mut components = Vec::with_capacity(k * d);
        for &j in &order[..k] {
            let axis = eigen.eigenvectors.column(j);
            let largest = axis
                .iter()
                .fold(0.0f64, |a, &v| if v.abs() > a.abs() { v } else { a });
            let sign = if largest < 0.0 { -1.0 } else { 1.0 };
            components.extend(axis.iter().map(|v| sign * v));
        }
        Ok(Pca {
            d,
            k,
            mean,
            components,
            explained,
            total_variance: trace * scale,
        })
    }

    /// Dimension of the original space.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// Number of principal axes kept.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The training mean (length d).
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Principal axis `j < k` (unit length, length d), in decreasing order of explained
    /// variance. Panics if `j >= k`.
    pub fn component(&self, j: usize) -> &[f64] {
        &self.components[j * self.d..(j + 1) * self.d]
    }

    /// Variance of the training data along each kept axis (the top-k eigenvalues of the
    /// unbiased sample covariance), in decreasing order.
    pub fn explained_variance(&self) -> &[f64] {
        &self.explained
    }

    /// Total variance of the training data (trace of the unbiased sample covariance).
    pub fn total_variance(&self) -> f64 {
        self.total_variance
    }

    /// Fraction of the total variance each kept axis explains (all zero for constant data).
    pub fn explained_variance_ratio(&self) -> Vec<f64> {
        self.explained
            .iter()
            .map(|v| {
                if self.total_variance > 0.0 {
                    v / self.total_variance
                } else {
                    0.0
                }
            })
            .collect()
    }

    /// Coordinates of each point of `x` on the kept axes: `z_j = (x - x̄) · v_j`, an `m × k`
    /// matrix. Errors if the points do not have dimension d. Cost: O(m d k).
    pub fn transform(&self, x: &DenseData) -> Result<DenseData> {
        if x.d() != self.d {
            return Err(Error::DimensionMismatch(format!(
                "projecting points of dimension {} with a principal component analysis fitted \
                 in dimension {}",
                x.d(),
                self.d
            )));
        }
        let mut out = Vec::with_capacity(x.n() * self.k);
        let mut centred = vec![0.0; self.d];
        for i in 0..x.n() {
            for ((c, v), m) in centred.iter_mut().zip(x.row(i)).zip(&self.mean) {
                *c = v - m;
            }
            for axis in self.components.chunks_exact(self.d) {
                out.push(axis.iter().zip(&centred).map(|(a, c)| a * c).sum());
            }
        }
        DenseData::new(x.n(), self.k, out)
    }

    /// Maps coordinates on the kept axes back to the original space: `x̄ + Σ_j z_j v_j` (the
    /// projection of a point on the affine span of the axes, for `z` from
    /// [`Pca::transform`]). Errors if the rows of `z` do not have length k. Cost: O(m d k).
    pub fn inverse_transform(&self, z: &DenseData) -> Result<DenseData> {
        if z.d() != self.k {
            return Err(Error::DimensionMismatch(format!(
                "mapping back coordinates of dimension {} with a principal component analysis \
                 of {} components",
                z.d(),
                self.k
            )));
        }
        let mut out = Vec::with_capacity(z.n() * self.d);
        for i in 0..z.n() {
            let start = out.len();
            out.extend_from_slice(&self.mean);
            let point = &mut out[start..];
            for (&zj, axis) in z.row(i).iter().zip(self.components.chunks_exact(self.d)) {
                for (p, a) in point.iter_mut().zip(axis) {
                    *p += zj * a;
                }
            }
        }
        DenseData::new(z.n(), self.d, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeedPlan;
    use rand_distr::{Distribution, StandardNormal};

    /// `n` points `c + Σ_j a_ij b_j` on a rank-`r` affine subspace of dimension `d`.
    fn low_rank(n: usize, d: usize, r: usize, seed: u64) -> DenseData {
        let mut rng = SeedPlan::new(seed).chain(0);
        let mut draw = |m: usize| -> Vec<f64> {
            (0..m)
                .map(|_| StandardNormal.sample(&mut rng))
                .collect::<Vec<f64>>()
        };
        let basis = draw(r * d);
        let centre = draw(d);
        let coef = draw(n * r);
        let mut values = Vec::with_capacity(n * d);
        for i in 0..n {
            for j in 0..d {
                let v: f64 = (0..r).map(|t| coef[i * r + t] * basis[t * d + j]).sum();
                values.push(centre[j] + v);
            }
        }
        DenseData::new(n, d, values).unwrap()
    }

    #[test]
    fn low_rank_data_is_reconstructed_exactly() {
        let x = low_rank(40, 7, 3, 11);
        let pca = Pca::fit(&x, 3).unwrap();
        let back = pca.inverse_transform(&pca.transform(&x).unwrap()).unwrap();
        for (a, b) in x.values().iter().zip(back.values()) {
            assert!((a - b).abs() < 1e-10, "{a} vs {b}");
        }
        // All the variance lies in the three axes.
        let kept: f64 = pca.explained_variance().iter().sum();
        assert!((kept - pca.total_variance()).abs() < 1e-10 * pca.total_variance());
        let ratio: f64 = pca.explained_variance_ratio().iter().sum();
        assert!((ratio - 1.0).abs() < 1e-12);
    }

    /// Four points in five dimensions (centred rank 3) on which nalgebra 0.34's SVD with
    /// vectors returns a wrong third singular value: three axes must hold all the variance.
    #[test]
    fn wide_rank_deficient_data_is_reconstructed_exactly() {
        let x = DenseData::new(
            4,
            5,
            vec![
                8.22370066567739,
                6.032383401825288,
                0.0,
                9.89808423831545,
                -0.711476383863876,
                3.7619913146935318,
                3.748285216154227,
                0.0,
                -7.19148545860223,
                -9.369077585636827,
                2.97767835308212,
                4.1284919728870735,
                -8.6948113351676,
                -4.017245496673586,
                9.278076018169681,
                -0.8793057872969405,
                6.177105140782249,
                -9.844831562198902,
                1.3822326295408083,
                -3.231094703013889,
            ],
        )
        .unwrap();
        let pca = Pca::fit(&x, 3).unwrap();
        let back = pca.inverse_transform(&pca.transform(&x).unwrap()).unwrap();
        for (a, b) in x.values().iter().zip(back.values()) {
            assert!((a - b).abs() < 1e-10, "{a} vs {b}");
        }
        // Squared singular values 218.2575..., 193.7918..., 69.6269... (divided by n - 1).
        let ev = pca.explained_variance();
        for (v, s2) in ev
            .iter()
            .zip([218.2575021946177, 193.79177828476264, 69.62692588476786])
        {
            assert!((v * 3.0 - s2).abs() < 1e-9 * s2, "{v}");
        }
    }

    #[test]
    fn components_are_orthonormal_and_sorted() {
        let x = low_rank(60, 9, 9, 5);
        let pca = Pca::fit(&x, 6).unwrap();
        for a in 0..6 {
            for b in 0..6 {
                let dot: f64 = pca
                    .component(a)
                    .iter()
                    .zip(pca.component(b))
                    .map(|(u, v)| u * v)
                    .sum();
                let expected = if a == b { 1.0 } else { 0.0 };
                assert!((dot - expected).abs() < 1e-12, "<v{a}, v{b}> = {dot}");
            }
        }
        let ev = pca.explained_variance();
        assert!(ev.windows(2).all(|w| w[0] >= w[1]));
        // The projections are uncorrelated with the explained variances as variances.
        let z = pca.transform(&x).unwrap();
        for (j, &e) in ev.iter().enumerate() {
            let var: f64 = (0..z.n()).map(|i| z.row(i)[j].powi(2)).sum::<f64>() / 59.0;
            assert!((var - e).abs() < 1e-10 * e);
        }
    }

    /// Four points in the plane whose principal axes are the diagonals.
    #[test]
    fn matches_a_hand_computed_two_dimensional_case() {
        // Points (3,3), (-3,-3), (1,-1), (-1,1): mean 0; scatter [[20, 16], [16, 20]], so the
        // unbiased covariance (divide by 3) has eigenvalues 36/3 = 12 along (1,1)/√2 and
        // 4/3 along (1,-1)/√2.
        let x = DenseData::from_rows(&[
            vec![3.0, 3.0],
            vec![-3.0, -3.0],
            vec![1.0, -1.0],
            vec![-1.0, 1.0],
        ])
        .unwrap();
        let pca = Pca::fit(&x, 2).unwrap();
        assert_eq!(pca.mean(), &[0.0, 0.0]);
        let ev = pca.explained_variance();
        assert!((ev[0] - 12.0).abs() < 1e-12 && (ev[1] - 4.0 / 3.0).abs() < 1e-12);
        assert!((pca.total_variance() - 40.0 / 3.0).abs() < 1e-12);
        let h = std::f64::consts::FRAC_1_SQRT_2;
        // Signs: the largest-magnitude entry of each axis is positive.
        let v0 = pca.component(0);
        assert!((v0[0] - h).abs() < 1e-12 && (v0[1] - h).abs() < 1e-12);
        let v1 = pca.component(1);
        assert!((v1[0].abs() - h).abs() < 1e-12 && (v1[0] + v1[1]).abs() < 1e-12);
        let z = pca.transform(&x).unwrap();
        assert!((z.row(0)[0] - 6.0 * h).abs() < 1e-12);
        assert!(z.row(0)[1].abs() < 1e-12);
    }

    #[test]
    fn bad_requests_are_errors() {
        let x = low_rank(5, 3, 2, 1);
        assert!(matches!(
            Pca::fit(&x, 0),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            Pca::fit(&x, 4),
            Err(Error::InvalidParameter { .. })
        ));
        let few = low_rank(3, 8, 2, 1);
        assert!(matches!(
            Pca::fit(&few, 4),
            Err(Error::InvalidParameter { .. })
        ));
        let one = DenseData::new(1, 2, vec![1.0, 2.0]).unwrap();
        assert!(matches!(Pca::fit(&one, 1), Err(Error::Empty(_))));
        let pca = Pca::fit(&x, 2).unwrap();
        let wrong = DenseData::new(1, 4, vec![0.0; 4]).unwrap();
        assert!(matches!(
            pca.transform(&wrong),
            Err(Error::DimensionMismatch(_))
        ));
        assert!(matches!(
            pca.inverse_transform(&x),
            Err(Error::DimensionMismatch(_))
        ));
    }
}
