//! Multinomial-Dirichlet kernel (MATH §2.2): agreement with a direct dense implementation,
//! conjugacy identities, statistics after random update sequences, validation, and the
//! identities on the real Reuters bag-of-words data.

use crate::kernel_support;

use std::path::PathBuf;
use std::sync::Arc;

use kernel_support::run_update_ops;
use nrmm::data::SparseCounts;
use nrmm::kernel::{ConjugateKernel, DirichletHyper, MdStat, MultinomialDirichlet};
use nrmm::Error;
use proptest::prelude::*;
use statrs::function::gamma::ln_gamma;

/// MATH §2.2 on dense count vectors: every word of the vocabulary, every document.
fn ln_marginal_dense(docs: &[Vec<u64>], beta: f64) -> f64 {
    if docs.is_empty() {
        return 0.0;
    }
    let v = docs[0].len();
    let mut pooled = vec![0u64; v];
    let mut ln_coef = 0.0;
    for y in docs {
        let n: u64 = y.iter().sum();
        ln_coef += ln_gamma(n as f64 + 1.0);
        for (w, &c) in y.iter().enumerate() {
            ln_coef -= ln_gamma(c as f64 + 1.0);
            pooled[w] += c;
        }
    }
    let total: u64 = pooled.iter().sum();
    let vb = v as f64 * beta;
    let mut value = ln_coef + ln_gamma(vb) - ln_gamma(vb + total as f64);
    for &c in &pooled {
        // Zero counts contribute ln Γ(β) - ln Γ(β) = 0; keep them to test that claim.
        value += ln_gamma(beta + c as f64) - ln_gamma(beta);
    }
    value
}

#[derive(Clone, Debug)]
struct Problem {
    vocab: usize,
    docs: Vec<Vec<u64>>,
    beta: f64,
}

impl Problem {
    fn kernel(&self) -> MultinomialDirichlet {
        let rows: Vec<Vec<(u32, u32)>> = self
            .docs
            .iter()
            .map(|y| {
                y.iter()
                    .enumerate()
                    .filter(|(_, &c)| c > 0)
                    .map(|(w, &c)| (w as u32, c as u32))
                    .collect()
            })
            .collect();
        let data = SparseCounts::from_rows(self.vocab, &rows).unwrap();
        MultinomialDirichlet::new(Arc::new(data), self.beta).unwrap()
    }

    fn dense(&self, members: &[usize]) -> Vec<Vec<u64>> {
        members.iter().map(|&i| self.docs[i].clone()).collect()
    }
}

/// Sparse random documents: most counts zero, some small, occasionally large (beyond the
/// lnΓ table) so both paths of T(k) are exercised.
fn problem(max_docs: usize) -> impl Strategy<Value = Problem> {
    (1usize..=30, 1usize..=max_docs).prop_flat_map(|(vocab, n)| {
        let count = prop_oneof![
            6 => Just(0u64),
            3 => 1u64..4,
            1 => 4u64..30,
            1 => 4000u64..5000,
        ];
        (
            prop::collection::vec(prop::collection::vec(count, vocab), n),
            0.01f64..3.0,
        )
            .prop_map(move |(docs, beta)| Problem { vocab, docs, beta })
    })
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

fn assert_matches_batch(k: &MultinomialDirichlet, s: &MdStat, members: &[usize], tol: f64) {
    let batch = k.stat_of(members);
    assert_eq!(s.len(), members.len());
    assert_eq!(s.words(), batch.words());
    assert_eq!(s.total(), batch.total());
    assert!(close(
        s.ln_multinomial_coef(),
        batch.ln_multinomial_coef(),
        tol
    ));
    assert!(close(s.ln_word_term(), batch.ln_word_term(), tol));
    assert!(s.words().windows(2).all(|w| w[0].0 < w[1].0));
    assert!(s.words().iter().all(|&(_, c)| c > 0));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn marginal_equals_dense_formula(p in problem(8), mask in any::<u16>()) {
        let k = p.kernel();
        let members: Vec<usize> = (0..p.docs.len()).filter(|i| mask >> i & 1 == 1).collect();
        let got = k.ln_marginal(&k.stat_of(&members));
        let want = ln_marginal_dense(&p.dense(&members), p.beta);
        prop_assert!(close(got, want, 1e-10), "kernel {got} vs dense {want}");
    }

    #[test]
    fn predictive_is_ratio_of_marginals(p in problem(8), mask in any::<u16>(), pick in any::<usize>()) {
        let k = p.kernel();
        let n = p.docs.len();
        let i = pick % n;
        let members: Vec<usize> = (0..n).filter(|&j| j != i && mask >> j & 1 == 1).collect();
        let s = k.stat_of(&members);
        let mut with_i = s.clone();
        k.add(&mut with_i, i);
        let ratio = k.ln_marginal(&with_i) - k.ln_marginal(&s);
        let pred = k.ln_predictive(i, &s);
        prop_assert!(close(pred, ratio, 1e-10), "predictive {pred} vs ratio {ratio}");
        let (ids, counts) = k.data().row(i);
        let external = k.ln_predictive_doc(ids, counts, &s).unwrap();
        prop_assert!(close(external, pred, 1e-12));
        let mut with_i_dense = p.dense(&members);
        with_i_dense.push(p.docs[i].clone());
        let dense_ratio = ln_marginal_dense(&with_i_dense, p.beta)
            - ln_marginal_dense(&p.dense(&members), p.beta);
        prop_assert!(close(pred, dense_ratio, 1e-9));
    }

    #[test]
    fn pair_marginal_is_marginal_of_union(p in problem(8), labels in prop::collection::vec(0u8..3, 8)) {
        let k = p.kernel();
        let n = p.docs.len();
        let a: Vec<usize> = (0..n).filter(|&i| labels[i] == 0).collect();
        let b: Vec<usize> = (0..n).filter(|&i| labels[i] == 1).collect();
        let union: Vec<usize> = (0..n).filter(|&i| labels[i] <= 1).collect();
        let (sa, sb) = (k.stat_of(&a), k.stat_of(&b));
        let expected = ln_marginal_dense(&p.dense(&union), p.beta);
        prop_assert!(close(k.ln_marginal_pair(&sa, &sb), expected, 1e-10));
        prop_assert!(close(k.ln_marginal_pair(&sb, &sa), expected, 1e-10));
        let mut merged = sa.clone();
        k.merge(&mut merged, &sb);
        assert_matches_batch(&k, &merged, &union, 1e-10);
    }

    #[test]
    fn random_update_sequences_match_batch_statistics(
        p in problem(10),
        ops in prop::collection::vec((0u8..4, any::<usize>(), any::<usize>()), 1..40),
    ) {
        let k = p.kernel();
        let (stats, members) = run_update_ops(&k, &ops)?;
        for c in 0..3 {
            assert_matches_batch(&k, &stats[c], &members[c], 1e-9);
            let want = ln_marginal_dense(&p.dense(&members[c]), p.beta);
            prop_assert!(close(k.ln_marginal(&stats[c]), want, 1e-9));
        }
    }
}

#[test]
fn empty_statistic_and_empty_document() {
    let p = Problem {
        vocab: 4,
        docs: vec![vec![1, 0, 2, 0], vec![0, 3, 1, 0]],
        beta: 0.5,
    };
    let k = p.kernel();
    let empty = k.empty_stat();
    assert_eq!(k.ln_marginal(&empty), 0.0);
    assert_eq!(k.ln_marginal_pair(&empty, &empty), 0.0);
    let s = k.stat_of(&[0]);
    assert!(close(k.ln_predictive(0, &empty), k.ln_marginal(&s), 1e-14));
    // A document with no words has likelihood 1 under every cluster.
    assert!(k.ln_predictive_doc(&[], &[], &s).unwrap().abs() < 1e-14);
    // Zero counts in an external document contribute nothing.
    let with_zero = k.ln_predictive_doc(&[0, 1, 2], &[1, 0, 2], &s).unwrap();
    let without = k.ln_predictive_doc(&[0, 2], &[1, 2], &s).unwrap();
    assert_eq!(with_zero, without);
}

#[test]
fn invalid_inputs_are_errors() {
    for beta in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(
                DirichletHyper::new(beta, 10),
                Err(Error::InvalidParameter { .. })
            ),
            "beta = {beta}"
        );
    }
    assert!(matches!(
        DirichletHyper::new(0.1, 0),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(serde_json::from_str::<DirichletHyper>(r#"{"beta":-1.0,"vocab":5}"#).is_err());
    let good = DirichletHyper::new(0.25, 7).unwrap();
    let text = serde_json::to_string(&good).unwrap();
    assert_eq!(serde_json::from_str::<DirichletHyper>(&text).unwrap(), good);
    let data =
        Arc::new(SparseCounts::from_rows(10, &[vec![(2, 1), (7, 3)], vec![(9, 1)]]).unwrap());
    assert!(MultinomialDirichlet::new(data.clone(), 0.0).is_err());
    // A vocabulary smaller than the data's word ids.
    let small = DirichletHyper::new(0.1, 8).unwrap();
    let msg = MultinomialDirichlet::with_hyper(data.clone(), small)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("document 2") && msg.contains("vocabulary size 8"),
        "{msg}"
    );
    // A larger vocabulary is fine.
    let large = DirichletHyper::new(0.1, 20).unwrap();
    assert!(MultinomialDirichlet::with_hyper(data.clone(), large).is_ok());

    let k = MultinomialDirichlet::new(data, 0.1).unwrap();
    let s = k.stat_of(&[0]);
    let bad: [(&[u32], &[u32]); 4] = [
        (&[1, 2], &[1]),
        (&[3, 2], &[1, 1]),
        (&[2, 2], &[1, 1]),
        (&[2, 10], &[1, 1]),
    ];
    for (ids, counts) in bad {
        assert!(
            k.ln_predictive_doc(ids, counts, &s).is_err(),
            "{ids:?} {counts:?} accepted"
        );
    }
}

/// A cluster word far beyond the lnΓ table, and a large vocabulary.
#[test]
fn large_counts_and_vocabulary() {
    let vocab = 50_000;
    let rows = vec![
        vec![(0, 100_000), (49_999, 3)],
        vec![(0, 7), (12_345, 9000)],
        vec![(12_345, 1)],
    ];
    let data = Arc::new(SparseCounts::from_rows(vocab, &rows).unwrap());
    let beta = 0.1;
    let k = MultinomialDirichlet::new(data, beta).unwrap();
    let mut dense = vec![vec![0u64; vocab]; 3];
    for (d, row) in rows.iter().enumerate() {
        for &(w, c) in row {
            dense[d][w as usize] = c as u64;
        }
    }
    let all = k.stat_of(&[0, 1, 2]);
    assert!(close(
        k.ln_marginal(&all),
        ln_marginal_dense(&dense, beta),
        1e-11
    ));
    let a = k.stat_of(&[0]);
    let b = k.stat_of(&[1, 2]);
    assert!(close(
        k.ln_marginal_pair(&a, &b),
        k.ln_marginal(&all),
        1e-11
    ));
}

// ---------------------------------------------------------------------------------------------
// Real data: the Reuters bag-of-words set.

fn shared_data(sub: &str) -> Option<PathBuf> {
    let root = std::env::var_os("NRMM_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data"));
    let dir = root.join(sub);
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "skipping: data folder {} not found (set NRMM_DATA_DIR to the shared data folder)",
            dir.display()
        );
        None
    }
}

/// LDA-C: `M id:count id:count ...` per line, 0-based ids.
fn read_ldac(path: &std::path::Path) -> Vec<Vec<(u32, u32)>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.split_whitespace()
                .skip(1)
                .map(|pair| {
                    let (w, c) = pair.split_once(':').unwrap();
                    (w.parse().unwrap(), c.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

#[test]
fn reuters_identities_hold_on_real_documents() {
    let Some(dir) = shared_data("reuters") else {
        return;
    };
    let rows = read_ldac(&dir.join("reuters.ldac"));
    let vocab = std::fs::read_to_string(dir.join("reuters.tokens"))
        .unwrap()
        .lines()
        .count();
    let data = Arc::new(SparseCounts::from_rows(vocab, &rows).unwrap());
    let k = MultinomialDirichlet::new(data, DirichletHyper::REFERENCE_BETA).unwrap();
    let n = k.n_points();
    // Three interleaved clusters of about n/3 documents each.
    let clusters: Vec<Vec<usize>> = (0..3).map(|c| (c..n).step_by(3).collect()).collect();
    let stats: Vec<MdStat> = clusters.iter().map(|c| k.stat_of(c)).collect();
    // Dense check of the marginal of 40 documents.
    let some = &clusters[0][..40];
    let mut dense = vec![vec![0u64; vocab]; some.len()];
    for (row, &i) in dense.iter_mut().zip(some) {
        let (ids, counts) = k.data().row(i);
        for (&w, &c) in ids.iter().zip(counts) {
            row[w as usize] = c as u64;
        }
    }
    let want = ln_marginal_dense(&dense, DirichletHyper::REFERENCE_BETA);
    assert!(close(k.ln_marginal(&k.stat_of(some)), want, 1e-11));
    // Pair = union, and predictive = ratio, for every document of cluster 1 against cluster 0.
    let union: Vec<usize> = clusters[0].iter().chain(&clusters[1]).copied().collect();
    let union_marginal = k.ln_marginal(&k.stat_of(&union));
    assert!(close(
        k.ln_marginal_pair(&stats[0], &stats[1]),
        union_marginal,
        1e-11
    ));
    let base = k.ln_marginal(&stats[0]);
    let mut s = stats[0].clone();
    for &i in &clusters[1] {
        let pred = k.ln_predictive(i, &stats[0]);
        k.add(&mut s, i);
        let ratio = k.ln_marginal(&s) - base;
        k.remove(&mut s, i);
        assert!(close(pred, ratio, 1e-9), "doc {i}: {pred} vs {ratio}");
    }
    assert_matches_batch(&k, &s, &clusters[0], 1e-9);
}
