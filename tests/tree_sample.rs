//! SampleSub (MATH §4.1) and StocInsert (MATH §4.2) enumerated through `PathEnumerator`:
//! forward probabilities sum to one and match the formulas, each reverse evaluation equals
//! the forward probability, and replaying a StocInsert path reproduces both its probability
//! and its trees.

use crate::tree_support;

use std::collections::BTreeSet;

use nrmm::kernel::ConjugateKernel;
use nrmm::prior::{Dp, Nggp, NrmPrior, Prior};
use nrmm::rng::SeedPlan;
use nrmm::sampler::{PathEnumerator, RngChooser};
use nrmm::tree::{Candidates, Forest, IbhcMode, NewickInfo, NodeKey, StocChoice};
use tree_support::*;

/// One tree over all points (inserted in a scrambled order) and an exact-IBHC forest.
fn forests<K: ConjugateKernel, P: NrmPrior>(kernel: &K, prior: &P, seed: u64) -> Vec<Forest<K>> {
    let n = kernel.n_points();
    assert!(!n.is_multiple_of(5));
    let order: Vec<usize> = (0..n).map(|i| (i * 5 + 3) % n).collect();
    let mut single = Forest::new(kernel, prior);
    let root = single.build_tree(kernel, &order).unwrap();
    single.register_root(root).unwrap();
    let mut rng = SeedPlan::new(seed).chain(0);
    let ibhc = Forest::ibhc(
        kernel,
        prior,
        IbhcMode::Exact,
        &mut RngChooser::new(&mut rng),
    )
    .unwrap();
    vec![single, ibhc]
}

fn priors() -> [Prior; 2] {
    [
        Dp::new(1.0).unwrap().into(),
        Nggp::fixed(1.2, 0.4, 1.5).unwrap().into(),
    ]
}

/// `P_sub(v) = (d_v + d_max) / Σ_v' (d_v' + d_max)` in plain arithmetic (small data keeps
/// every `d` in range).
fn direct_probabilities<K: ConjugateKernel>(
    f: &Forest<K>,
    top: NodeKey,
    cand: Candidates,
) -> Vec<(NodeKey, f64)> {
    let nodes: Vec<NodeKey> = f
        .subtree(top)
        .unwrap()
        .into_iter()
        .filter(|&k| cand == Candidates::AllNodes || !f.node(k).unwrap().is_leaf())
        .collect();
    let d: Vec<f64> = nodes
        .iter()
        .map(|&k| f.node(k).unwrap().ln_d().exp())
        .collect();
    let d_max = d.iter().copied().fold(0.0, f64::max);
    let total: f64 = d.iter().map(|v| v + d_max).sum();
    nodes
        .into_iter()
        .zip(d)
        .map(|(k, v)| (k, (v + d_max) / total))
        .collect()
}

fn check_sample_sub<K: ConjugateKernel>(f: &mut Forest<K>) {
    let roots: Vec<NodeKey> = f.roots().collect();
    for root in roots {
        for top in f.subtree(root).unwrap() {
            for cand in [Candidates::AllNodes, Candidates::InternalNodes] {
                let mut e = PathEnumerator::new();
                let mut total = 0.0;
                let mut drawn = BTreeSet::new();
                while e.next_path() {
                    let (v, lp) = f.sample_sub(top, cand, &mut e).unwrap();
                    assert!(close(lp, e.ln_prob(), 1e-14));
                    let rev = f.ln_prob_sub(top, v, cand).unwrap();
                    assert!(close(rev, lp, 1e-12), "reverse {rev} vs forward {lp}");
                    assert!(drawn.insert(v), "each node is one path");
                    total += lp.exp();
                }
                assert!((total - 1.0).abs() < 1e-12, "paths sum to {total}");
                if f.node(top).unwrap().is_leaf() {
                    assert_eq!(drawn.len(), 1);
                    continue;
                }
                let direct = direct_probabilities(f, top, cand);
                assert_eq!(drawn.len(), direct.len(), "every candidate is drawn");
                for (k, p) in direct {
                    let lp = f.ln_prob_sub(top, k, cand).unwrap();
                    assert!(
                        (lp.exp() - p).abs() < 1e-12,
                        "P_sub = {}, formula {p}",
                        lp.exp()
                    );
                }
                if cand == Candidates::InternalNodes {
                    let leaf = f
                        .subtree(top)
                        .unwrap()
                        .into_iter()
                        .find(|&k| f.node(k).unwrap().is_leaf());
                    assert_eq!(
                        f.ln_prob_sub(top, leaf.unwrap(), cand).unwrap(),
                        f64::NEG_INFINITY
                    );
                }
            }
        }
    }
}

#[test]
fn sample_sub_enumerates_to_one_and_reverse_equals_forward() {
    let nw = nw_kernel(&data_b());
    let md = md_kernel(8, &docs(), 0.3);
    for prior in priors() {
        for seed in 0..3 {
            for mut f in forests(&nw, &prior, seed) {
                check_sample_sub(&mut f);
            }
            for mut f in forests(&md, &prior, seed) {
                check_sample_sub(&mut f);
            }
        }
    }
}

/// Splits the first tree of `base` with size ≥ 2 at every internal node `a` in turn
/// (Destroy at `a`, then its children as `S₀`), and enumerates StocInsert of the queue.
fn check_stoc_insert<K: ConjugateKernel, P: NrmPrior>(base: &Forest<K>, kernel: &K, prior: &P) {
    let Some(root) = base.roots().find(|&r| base.node(r).unwrap().size() >= 3) else {
        return;
    };
    for a in base.subtree(root).unwrap() {
        if base.node(a).unwrap().is_leaf() {
            continue;
        }
        let mut g = base.clone();
        g.unregister_root(root).unwrap();
        let mut queue = Vec::new();
        g.destroy(a, &mut queue).unwrap();
        let s0 = g.split_root(a).unwrap();

        let mut e = PathEnumerator::new();
        let mut total = 0.0;
        let mut partitions = BTreeSet::new();
        let mut paths = 0;
        let mut choices = Vec::new();
        while e.next_path() {
            let mut h = g.clone();
            let mut trees = s0.to_vec();
            let ln_q = h
                .stoc_insert(kernel, &mut trees, &queue, &mut e, &mut choices)
                .unwrap();
            assert!(close(ln_q, e.ln_prob(), 1e-13));
            assert_eq!(choices.len(), queue.len());
            total += ln_q.exp();
            paths += 1;
            for &t in &trees {
                h.validate_tree(kernel, prior, t).unwrap();
            }

            // Replaying the same decisions from the same start gives the same probability
            // and the same trees.
            let mut h2 = g.clone();
            let mut trees2 = s0.to_vec();
            let ln_r = h2
                .stoc_insert_replay(kernel, &mut trees2, &queue, &choices)
                .unwrap();
            assert_eq!(ln_r, ln_q);
            assert_eq!(trees, trees2);
            for (&t, &t2) in trees.iter().zip(&trees2) {
                assert_eq!(
                    h.tree_to_newick(t, NewickInfo::LnD).unwrap(),
                    h2.tree_to_newick(t2, NewickInfo::LnD).unwrap()
                );
            }

            let mut blocks: Vec<Vec<usize>> = trees.iter().map(|&t| points_of(&h, t)).collect();
            blocks.sort();
            partitions.insert(blocks);
        }
        assert!(
            (total - 1.0).abs() < 1e-12,
            "StocInsert paths sum to {total}"
        );
        // Given the split node, each decision sequence gives its own partition (MATH §5.2).
        assert_eq!(partitions.len(), paths);
        // Item j joins one of the r trees present or starts a new one: the number of
        // decision sequences is f(0, 2) with f(j, r) = r f(j+1, r) + f(j+1, r+1), f(m, r) = 1.
        fn sequences(j: usize, m: usize, r: usize) -> usize {
            if j == m {
                1
            } else {
                r * sequences(j + 1, m, r) + sequences(j + 1, m, r + 1)
            }
        }
        assert_eq!(paths, sequences(0, queue.len(), 2));
    }
}

#[test]
fn stoc_insert_paths_sum_to_one_and_replay_exactly() {
    let nw = nw_kernel(&data_b());
    let md = md_kernel(8, &docs(), 0.3);
    for prior in priors() {
        for seed in 0..2 {
            for f in forests(&nw, &prior, seed) {
                check_stoc_insert(&f, &nw, &prior);
            }
            for f in forests(&md, &prior, seed) {
                check_stoc_insert(&f, &md, &prior);
            }
        }
    }
}

/// One queued leaf and two trees: the three outcomes have probabilities
/// `d(x, s_l)⁻¹ / (1 + Σ d⁻¹)` and `1 / (1 + Σ d⁻¹)` (MATH §4.2).
#[test]
fn stoc_insert_probabilities_follow_the_formula() {
    let kernel = nw_kernel(&data_b());
    let prior = Dp::new(1.0).unwrap();
    let mut f = Forest::new(&kernel, &prior);
    let s1 = f.build_tree(&kernel, &[0, 1, 2]).unwrap();
    let s2 = f.build_tree(&kernel, &[3, 4, 6]).unwrap();
    let x = f.make_leaf(&kernel, 5).unwrap();
    let inv: Vec<f64> = [s1, s2]
        .iter()
        .map(|&s| (-f.ln_d_pair(&kernel, x, s).unwrap()).exp())
        .collect();
    let z = 1.0 + inv[0] + inv[1];
    let expected = [
        (StocChoice::Join(0), inv[0] / z),
        (StocChoice::Join(1), inv[1] / z),
        (StocChoice::New, 1.0 / z),
    ];
    let mut e = PathEnumerator::new();
    let mut seen = 0;
    let mut choices = Vec::new();
    while e.next_path() {
        let mut g = f.clone();
        let mut trees = vec![s1, s2];
        let ln_q = g
            .stoc_insert(&kernel, &mut trees, &[x], &mut e, &mut choices)
            .unwrap();
        let (_, p) = expected[seen];
        assert_eq!(choices, vec![expected[seen].0]);
        assert!((ln_q.exp() - p).abs() < 1e-12);
        assert_eq!(trees.len(), if seen == 2 { 3 } else { 2 });
        seen += 1;
    }
    assert_eq!(seen, 3);

    // With no tree yet the item starts one with probability 1 and no draw.
    let mut trees = Vec::new();
    let mut e = PathEnumerator::new();
    assert!(e.next_path());
    let ln_q = f
        .stoc_insert(&kernel, &mut trees, &[x], &mut e, &mut choices)
        .unwrap();
    assert_eq!(
        (ln_q, trees, choices.clone()),
        (0.0, vec![x], vec![StocChoice::New])
    );
    assert!(!e.next_path(), "no decision was opened");
}

/// SampleSub keeps the weights of large unchanged subtrees between draws: the draws of a
/// forest that sampled before (cache warm) equal those of the same forest built anew without
/// ever sampling, node and log probability to the bit, also after the subtree changed (Detach
/// and Insert under it), after a rolled-back undo record, and after a recompute.
#[test]
fn sample_sub_cache_draws_as_fresh_weights() {
    let rows: Vec<Vec<f64>> = (0..60)
        .map(|i| {
            let c = (i % 3) as f64 * 4.0;
            vec![
                c + ((i * 7) % 11) as f64 * 0.1,
                c - ((i * 5) % 13) as f64 * 0.1,
            ]
        })
        .collect();
    let kernel = nw_kernel(&rows);
    let n = rows.len();
    // The changes so far: Some(point) moved by Detach and Insert, None a recompute at the
    // prior of that step.
    let mut history: Vec<(usize, Option<usize>)> = Vec::new();
    let build = |history: &[(usize, Option<usize>)]| {
        let mut f = Forest::new(&kernel, &Dp::new(1.0).unwrap());
        let root = f.build_tree(&kernel, &(0..n).collect::<Vec<_>>()).unwrap();
        f.register_root(root).unwrap();
        for &(step, change) in history {
            match change {
                Some(i) => {
                    let leaf = f.leaf_of(i).unwrap();
                    f.detach_leaf(&kernel, leaf).unwrap();
                    let top = f.roots().next().unwrap();
                    f.insert(&kernel, top, leaf).unwrap();
                }
                None => f.recompute(&Dp::new(0.3 + step as f64 * 0.1).unwrap()),
            }
        }
        f
    };
    let draw = |f: &mut Forest<_>, rng: &mut nrmm::rng::NrmmRng| {
        let top = f.roots().next().unwrap();
        [Candidates::AllNodes, Candidates::InternalNodes].map(|cand| {
            let (v, lp) = f.sample_sub(top, cand, &mut RngChooser::new(rng)).unwrap();
            let mut points = Vec::new();
            f.points(v, &mut points).unwrap();
            (points, lp.to_bits())
        })
    };
    let mut warm = build(&history);
    let mut rng = SeedPlan::new(4).chain(0);
    draw(&mut warm, &mut rng);
    for step in 0..12 {
        let mut cold = build(&history);
        let mut rng_cold = rng.clone();
        assert_eq!(
            draw(&mut warm, &mut rng),
            draw(&mut cold, &mut rng_cold),
            "step {step}"
        );
        match step % 3 {
            0 => history.push((step, Some((step * 7) % n))),
            1 => {
                warm.begin_undo().unwrap();
                let leaf = warm.leaf_of((step * 11) % n).unwrap();
                warm.detach_leaf(&kernel, leaf).unwrap();
                let top = warm.roots().next().unwrap();
                warm.insert(&kernel, top, leaf).unwrap();
                draw(&mut warm, &mut rng.clone());
                warm.rollback();
                continue;
            }
            _ => history.push((step, None)),
        }
        let &(s, change) = history.last().unwrap();
        match change {
            Some(i) => {
                let leaf = warm.leaf_of(i).unwrap();
                warm.detach_leaf(&kernel, leaf).unwrap();
                let top = warm.roots().next().unwrap();
                warm.insert(&kernel, top, leaf).unwrap();
            }
            None => warm.recompute(&Dp::new(0.3 + s as f64 * 0.1).unwrap()),
        }
    }
}
