//! Shared helpers of the `tree_*` integration tests: small kernels, fresh (cache-free)
//! potentials, and tree-consistent partitions enumerated directly.

// Each test binary includes this module and uses only some of its helpers.
#![allow(dead_code)]

use std::sync::Arc;

use nrmm::data::{DenseData, SparseCounts};
use nrmm::kernel::{ConjugateKernel, MultinomialDirichlet, NormalWishart, NwHyper};
use nrmm::math::log_sum_exp;
use nrmm::prior::NrmPrior;
use nrmm::tree::{Forest, NodeKey};

/// A Normal-Wishart kernel over `rows` with the reference's data-dependent hyperparameters.
pub fn nw_kernel(rows: &[Vec<f64>]) -> NormalWishart {
    let data = DenseData::from_rows(rows).unwrap();
    let hyper = NwHyper::from_data(&data).unwrap();
    NormalWishart::new(Arc::new(data), hyper).unwrap()
}

/// A Multinomial-Dirichlet kernel over `docs` (word id, count) with vocabulary `vocab`.
pub fn md_kernel(vocab: usize, docs: &[Vec<(u32, u32)>], beta: f64) -> MultinomialDirichlet {
    let counts = SparseCounts::from_rows(vocab, docs).unwrap();
    MultinomialDirichlet::new(Arc::new(counts), beta).unwrap()
}

/// Data set B of MATH §5.3 (7 points, 2-D).
pub fn data_b() -> Vec<Vec<f64>> {
    vec![
        vec![0.0, 0.0],
        vec![0.1, -0.08],
        vec![-0.07, 0.12],
        vec![1.0, 1.05],
        vec![1.12, 0.93],
        vec![0.55, 0.5],
        vec![1.05, 1.2],
    ]
}

/// Six short documents over an eight-word vocabulary, two rough topics.
pub fn docs() -> Vec<Vec<(u32, u32)>> {
    vec![
        vec![(0, 3), (1, 1)],
        vec![(0, 2), (1, 2), (2, 1)],
        vec![(3, 2), (4, 2)],
        vec![(4, 1), (5, 3)],
        vec![(1, 1), (3, 1), (5, 1)],
        vec![(6, 2), (7, 1), (0, 1)],
    ]
}

/// `ℓh(S) = ln κ(|S|) + ℓm(S)` from scratch.
pub fn fresh_ln_h<K: ConjugateKernel, P: NrmPrior>(kernel: &K, prior: &P, set: &[usize]) -> f64 {
    prior.ln_kappa(set.len()) + kernel.ln_marginal(&kernel.stat_of(set))
}

/// The points under `key`, sorted.
pub fn points_of<K: ConjugateKernel>(forest: &Forest<K>, key: NodeKey) -> Vec<usize> {
    let mut out = Vec::new();
    forest.points(key, &mut out).unwrap();
    out.sort_unstable();
    out
}

/// All tree-consistent partitions of the subtree of `key` (MATH §3.1): `{S}`, plus the
/// unions of a tree-consistent partition of each child. Enumerated directly by recursion.
pub fn tree_consistent<K: ConjugateKernel>(
    forest: &Forest<K>,
    key: NodeKey,
) -> Vec<Vec<Vec<usize>>> {
    let node = forest.node(key).unwrap();
    let mut out = vec![vec![points_of(forest, key)]];
    if let Some([l, r]) = node.children() {
        let left = tree_consistent(forest, l);
        let right = tree_consistent(forest, r);
        for a in &left {
            for b in &right {
                let mut p = a.clone();
                p.extend(b.iter().cloned());
                out.push(p);
            }
        }
    }
    out
}

/// `ln Σ_{Π tree-consistent} Π_{c∈Π} h(c)`, the definition of `ln φ` (MATH §3.1).
pub fn ln_phi_by_enumeration<K: ConjugateKernel, P: NrmPrior>(
    forest: &Forest<K>,
    kernel: &K,
    prior: &P,
    key: NodeKey,
) -> f64 {
    let terms: Vec<f64> = tree_consistent(forest, key)
        .iter()
        .map(|p| p.iter().map(|c| fresh_ln_h(kernel, prior, c)).sum())
        .collect();
    log_sum_exp(&terms)
}

/// `|a - b| ≤ tol · max(1, |b|)`.
pub fn close(a: f64, b: f64, tol: f64) -> bool {
    a == b || (a - b).abs() <= tol * b.abs().max(1.0)
}
