//! Principal component analysis (`nrmm::data::pca`): properties on random data, and a fit on
//! real MNIST digits (`../shared/data/mnist10k`; the test prints a message and returns when
//! the folder is absent, `NRMM_DATA_DIR` points it at another copy).

use nrmm::data::load::load_idx_images;
use nrmm::data::pca::Pca;
use nrmm::data::DenseData;
use proptest::prelude::*;

use crate::support;
use support::data_dir;

/// Mean over points of the squared distance between each point and its reconstruction.
fn mean_squared_residual(x: &DenseData, pca: &Pca) -> f64 {
    let back = pca.inverse_transform(&pca.transform(x).unwrap()).unwrap();
    x.values()
        .iter()
        .zip(back.values())
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        / x.n() as f64
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Projection is idempotent, and the residual of the reconstruction is the variance left
    /// out: `Σ_i ‖x_i - x̂_i‖² = (n - 1)(total - Σ_{j<k} λ_j)` (Eckart-Young).
    #[test]
    fn residual_equals_the_variance_left_out(
        (n, d, values, k) in (2usize..12, 1usize..6).prop_flat_map(|(n, d)| (
            Just(n),
            Just(d),
            prop::collection::vec(-10.0f64..10.0, n * d),
            1..=n.min(d),
        ))
    ) {
        let x = DenseData::new(n, d, values).unwrap();
        let pca = Pca::fit(&x, k).unwrap();
        let left_out = pca.total_variance() - pca.explained_variance().iter().sum::<f64>();
        let residual = mean_squared_residual(&x, &pca) * n as f64 / (n - 1) as f64;
        let scale = pca.total_variance().max(1.0);
        prop_assert!((residual - left_out).abs() < 1e-9 * scale, "{residual} vs {left_out}");
        let z = pca.transform(&x).unwrap();
        let again = pca.transform(&pca.inverse_transform(&z).unwrap()).unwrap();
        for (a, b) in z.values().iter().zip(again.values()) {
            prop_assert!((a - b).abs() < 1e-9 * scale.sqrt());
        }
    }
}

/// PCA-50 of 2,000 real digits: the first axes explain most of the variance, as is well known
/// for MNIST (the top 50 of 784 axes hold roughly 80% of it), and the residual identity holds
/// at this size.
#[test]
fn mnist_principal_components() {
    let Some(dir) = data_dir("mnist10k") else {
        return;
    };
    let all = load_idx_images(dir.join("images-idx3-ubyte")).unwrap();
    let n = 2000;
    let x = DenseData::new(
        n,
        all.d(),
        all.values()[..n * all.d()]
            .iter()
            .map(|v| v / 255.0)
            .collect(),
    )
    .unwrap();
    let pca = Pca::fit(&x, 50).unwrap();
    let ratio: f64 = pca.explained_variance_ratio().iter().sum();
    assert!((0.75..0.9).contains(&ratio), "top-50 ratio {ratio}");
    let ev = pca.explained_variance();
    assert!(ev.windows(2).all(|w| w[0] >= w[1]));
    let left_out = pca.total_variance() - ev.iter().sum::<f64>();
    let residual = mean_squared_residual(&x, &pca) * n as f64 / (n - 1) as f64;
    assert!((residual - left_out).abs() < 1e-8 * pca.total_variance());
}
