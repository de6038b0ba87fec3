//! Loading the real data sets of `../shared/data` (see its README). Each test prints a message
//! and returns when its folder is absent; `NRMM_DATA_DIR` points the tests at another copy.

use crate::support;
use support::data_dir;

use nrmm::data::generate::toy_like;
use nrmm::data::load::*;
use nrmm::data::{canonical_labels, Dataset, DenseData};

fn mean_and_covariance(x: &DenseData) -> (Vec<f64>, Vec<f64>) {
    let (n, d) = (x.n(), x.d());
    let mut mean = vec![0.0; d];
    for i in 0..n {
        for (m, v) in mean.iter_mut().zip(x.row(i)) {
            *m += v / n as f64;
        }
    }
    let mut cov = vec![0.0; d * d];
    for i in 0..n {
        let r = x.row(i);
        for a in 0..d {
            for b in 0..d {
                cov[a * d + b] += (r[a] - mean[a]) * (r[b] - mean[b]) / (n - 1) as f64;
            }
        }
    }
    (mean, cov)
}

fn cluster_sizes(labels: &[usize]) -> Vec<usize> {
    let mut sizes = vec![0; labels.iter().max().map_or(0, |m| m + 1)];
    for &l in labels {
        sizes[l] += 1;
    }
    sizes
}

/// Mean over clusters of the average per-axis standard deviation within the cluster.
fn mean_within_cluster_sd(x: &DenseData, labels: &[usize]) -> f64 {
    let k = cluster_sizes(labels).len();
    let mut total = 0.0;
    for c in 0..k {
        let rows: Vec<Vec<f64>> = (0..x.n())
            .filter(|&i| labels[i] == c)
            .map(|i| x.row(i).to_vec())
            .collect();
        let (_, cov) = mean_and_covariance(&DenseData::from_rows(&rows).unwrap());
        let d = x.d();
        total += (0..d).map(|a| cov[a * d + a].sqrt()).sum::<f64>() / d as f64;
    }
    total / k as f64
}

#[test]
fn toy_set_loads_with_its_13_clusters_and_reference_moments() {
    let Some(dir) = data_dir("toy") else { return };
    let x = load_dense(dir.join("X.txt")).unwrap();
    assert_eq!((x.n(), x.d()), (1300, 2));
    let labels = canonical_labels(&load_labels(dir.join("gt_labels.txt"), x.n()).unwrap());
    assert_eq!(cluster_sizes(&labels), vec![100; 13]);
    // REFERENCE_FIGURES.md: data mean and raw covariance of the toy set.
    let (mean, cov) = mean_and_covariance(&x);
    assert!((mean[0] + 0.00280009).abs() < 1e-8 && (mean[1] - 0.00053204).abs() < 1e-8);
    for (got, want) in cov.iter().zip([0.692965, 0.004281, 0.004281, 0.691627]) {
        assert!((got - want).abs() < 1e-6, "covariance {got} vs {want}");
    }
    assert_eq!(
        load_dataset(dir.join("X.txt"), None).unwrap(),
        Dataset::Dense(x)
    );
}

#[test]
fn toy_like_resembles_the_real_toy_set() {
    let Some(dir) = data_dir("toy") else { return };
    let real = load_dense(dir.join("X.txt")).unwrap();
    let real_labels = canonical_labels(&load_labels(dir.join("gt_labels.txt"), real.n()).unwrap());
    let (synthetic, labels) = toy_like(1);
    let (_, cov_real) = mean_and_covariance(&real);
    let (_, cov_syn) = mean_and_covariance(&synthetic);
    for a in [0, 3] {
        let ratio = cov_syn[a] / cov_real[a];
        assert!(
            (0.85..1.15).contains(&ratio),
            "overall variance ratio {ratio}"
        );
    }
    let sd_real = mean_within_cluster_sd(&real, &real_labels);
    let sd_syn = mean_within_cluster_sd(&synthetic, &labels);
    assert!(
        (sd_syn / sd_real - 1.0).abs() < 0.2,
        "within-cluster sd {sd_syn} vs real {sd_real}"
    );
}

#[test]
fn ten_k_set_loads_with_119_labels() {
    let Some(dir) = data_dir("10k") else { return };
    let x = load_dense(dir.join("X.txt")).unwrap();
    assert_eq!((x.n(), x.d()), (10_000, 6));
    let labels = canonical_labels(&load_labels(dir.join("gt_labels.txt"), x.n()).unwrap());
    let sizes = cluster_sizes(&labels);
    assert_eq!(sizes.len(), 119);
    assert_eq!(*sizes.iter().min().unwrap(), 3);
    assert_eq!(*sizes.iter().max().unwrap(), 412);
}

#[test]
fn reuters_loads_as_lda_c_with_its_vocabulary() {
    let Some(dir) = data_dir("reuters") else {
        return;
    };
    let vocab = std::fs::read_to_string(dir.join("reuters.tokens"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(vocab, 4258);
    let path = dir.join("reuters.ldac");
    let x = load_ldac(&path, Some(vocab)).unwrap();
    assert_eq!((x.n(), x.vocab()), (395, 4258));
    assert!((0..x.n()).all(|i| !x.row(i).0.is_empty()));
    let inferred = load_ldac(&path, None).unwrap();
    assert!(inferred.vocab() <= vocab);
    assert_eq!(inferred.nnz(), x.nnz());
    match load_dataset(&path, None).unwrap() {
        Dataset::Counts(c) => assert_eq!(c, inferred),
        other => panic!("expected counts, got {other:?}"),
    }
}

#[test]
fn mnist_loads_from_idx() {
    let Some(dir) = data_dir("mnist10k") else {
        return;
    };
    let images = dir.join("images-idx3-ubyte");
    let x = load_idx_images(&images).unwrap();
    assert_eq!((x.n(), x.d()), (10_000, 784));
    assert!(x
        .values()
        .iter()
        .all(|&v| (0.0..=255.0).contains(&v) && v.fract() == 0.0));
    assert!(x.values().contains(&255.0));
    let labels = load_labels(dir.join("labels-idx1-ubyte"), x.n()).unwrap();
    assert_eq!(
        labels,
        load_idx_labels(dir.join("labels-idx1-ubyte")).unwrap()
    );
    let mut digits = canonical_labels(&labels);
    digits.sort_unstable();
    digits.dedup();
    assert_eq!(digits.len(), 10);
    assert!(labels.iter().all(|l| (0..10).contains(l)));
    assert_eq!(detect_format(&images, b"\0\0\x08\x03"), Format::Idx);
    assert!(load_dataset(dir.join("labels-idx1-ubyte"), None).is_err());
}
