//! Properties of the agreement measures: invariance under relabelling and under a common
//! permutation of the points, symmetry, and bounds.

use nrmm::diagnostics::{adjusted_rand_index, normalized_mutual_information};
use proptest::prelude::*;

fn labelings() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    (2usize..40).prop_flat_map(|n| {
        (
            proptest::collection::vec(0usize..5, n),
            proptest::collection::vec(0usize..7, n),
        )
    })
}

proptest! {
    #[test]
    fn invariant_symmetric_and_bounded((a, b) in labelings(), shift in 1usize..100, seed in 0u64..1000) {
        let ari = adjusted_rand_index(&a, &b).unwrap();
        let nmi = normalized_mutual_information(&a, &b).unwrap();
        prop_assert!(ari <= 1.0 + 1e-12);
        prop_assert!((0.0..=1.0).contains(&nmi));
        // Renaming clusters changes nothing.
        let renamed: Vec<usize> = a.iter().map(|&l| (l * 7 + shift) % 1000).collect();
        prop_assert!((adjusted_rand_index(&renamed, &b).unwrap() - ari).abs() < 1e-12);
        prop_assert!((normalized_mutual_information(&renamed, &b).unwrap() - nmi).abs() < 1e-12);
        // Symmetric in its arguments.
        prop_assert!((adjusted_rand_index(&b, &a).unwrap() - ari).abs() < 1e-12);
        prop_assert!((normalized_mutual_information(&b, &a).unwrap() - nmi).abs() < 1e-12);
        // The same permutation applied to the points of both labelings changes nothing.
        let n = a.len();
        let perm: Vec<usize> = (0..n).map(|i| (i * (2 * (seed as usize) + 1) + shift) % n).collect();
        let is_perm = { let mut s = perm.clone(); s.sort_unstable(); s.dedup(); s.len() == n };
        if is_perm {
            let pa: Vec<usize> = perm.iter().map(|&i| a[i]).collect();
            let pb: Vec<usize> = perm.iter().map(|&i| b[i]).collect();
            prop_assert!((adjusted_rand_index(&pa, &pb).unwrap() - ari).abs() < 1e-12);
            prop_assert!((normalized_mutual_information(&pa, &pb).unwrap() - nmi).abs() < 1e-12);
        }
        // A labeling agrees perfectly with itself.
        prop_assert!((adjusted_rand_index(&a, &a).unwrap() - 1.0).abs() < 1e-12);
    }
}
