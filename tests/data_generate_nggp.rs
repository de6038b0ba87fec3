//! The NGGP partition generator (sequential generalised CRP, MATH §7.2) against the exact NGGP
//! EPPF `p(Π) = V_{n,K} Π_c Γ(n_c − σ)/Γ(1 − σ)` (MATH §1.4), enumerated over every partition
//! of a few points with `V` from `prior::nggp::ln_v`.

use std::collections::HashMap;

use nrmm::data::canonical_labels;
use nrmm::data::generate::{nggp_partitions, partition_nggp};
use nrmm::math::ln_gamma;
use nrmm::prior::nggp::ln_v;
use nrmm::rng::SeedPlan;

/// Restricted growth strings of all set partitions of `n` (MATH §7.1).
fn all_partitions(n: usize) -> Vec<Vec<usize>> {
    let mut out = vec![vec![0]];
    for _ in 1..n {
        out = out
            .into_iter()
            .flat_map(|p| {
                let k = p.iter().max().unwrap() + 1;
                (0..=k).map(move |c| {
                    let mut q = p.clone();
                    q.push(c);
                    q
                })
            })
            .collect();
    }
    out
}

fn exact_probability(p: &[usize], alpha: f64, sigma: f64) -> f64 {
    let k = p.iter().max().unwrap() + 1;
    let mut ln_p = ln_v(p.len(), k, alpha, sigma).unwrap();
    for c in 0..k {
        let size = p.iter().filter(|&&x| x == c).count();
        ln_p += ln_gamma(size as f64 - sigma) - ln_gamma(1.0 - sigma);
    }
    ln_p.exp()
}

#[test]
fn nggp_partitions_follow_the_exact_eppf() {
    let (n, draws) = (5usize, 20_000usize);
    for (alpha, sigma, seed) in [(1.0, 0.5, 21u64), (2.5, 0.2, 22)] {
        let parts = all_partitions(n);
        let exact: Vec<f64> = parts
            .iter()
            .map(|p| exact_probability(p, alpha, sigma))
            .collect();
        let total: f64 = exact.iter().sum();
        assert!((total - 1.0).abs() < 1e-8, "EPPF sums to {total}");

        let mut sampler = nggp_partitions(alpha, sigma).unwrap();
        let mut rng = SeedPlan::new(seed).chain(0);
        let mut freq: HashMap<Vec<usize>, usize> = HashMap::new();
        for _ in 0..draws {
            let labels = sampler.sample(n, &mut rng).unwrap();
            assert_eq!(canonical_labels(&labels), labels);
            *freq.entry(labels).or_default() += 1;
        }
        // Law of K, then every partition (52 cells: a bound of 4.5 se keeps the family-wise
        // false alarm rate below 0.1%).
        let mut by_k_exact = [0.0; 6];
        let mut by_k_seen = [0.0; 6];
        for (p, &prob) in parts.iter().zip(&exact) {
            let k = p.iter().max().unwrap() + 1;
            let seen = *freq.get(p).unwrap_or(&0) as f64 / draws as f64;
            by_k_exact[k] += prob;
            by_k_seen[k] += seen;
            let se = (prob * (1.0 - prob) / draws as f64).sqrt();
            assert!(
                (seen - prob).abs() < 4.5 * se,
                "alpha {alpha} sigma {sigma} {p:?}: seen {seen}, exact {prob}"
            );
        }
        for k in 1..=n {
            let p = by_k_exact[k];
            let se = (p * (1.0 - p) / draws as f64).sqrt();
            assert!(
                (by_k_seen[k] - p).abs() < 4.5 * se,
                "alpha {alpha} sigma {sigma}: P(K = {k}) seen {}, exact {p}",
                by_k_seen[k]
            );
        }
    }
}

#[test]
fn one_shot_nggp_draws_are_reproducible() {
    let draw = |seed| partition_nggp(30, 1.0, 0.4, &mut SeedPlan::new(seed).chain(0)).unwrap();
    let a = draw(5);
    assert_eq!(a.len(), 30);
    assert_eq!(a, draw(5));
}
