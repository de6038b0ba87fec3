//! Set-partition enumeration: counts, validity, canonical keys and the index (MATH §7.1).

use nrmm::exact::{bell_number, for_each_partition, Rgs, RgsIndex, SetPartitions, MAX_EXACT_N};
use proptest::prelude::*;

/// OEIS A000110.
const BELL: [u64; 13] = [
    1, 1, 2, 5, 15, 52, 203, 877, 4140, 21147, 115975, 678570, 4213597,
];

#[test]
fn enumeration_counts_equal_bell_numbers_and_every_rgs_is_valid_and_distinct() {
    for (n, &bell) in BELL.iter().enumerate().take(11) {
        let partitions = SetPartitions::new(n).unwrap();
        assert_eq!(partitions.len() as u64, bell);
        assert_eq!(bell_number(n).unwrap(), bell);
        let mut count = 0u64;
        let mut previous: Option<Rgs> = None;
        for rgs in partitions {
            assert_eq!(rgs.len(), n);
            assert_eq!(
                Rgs::new(rgs.labels()).unwrap(),
                rgs,
                "{rgs} is not a valid RGS"
            );
            // Strictly increasing lexicographic order: every string is distinct.
            if let Some(prev) = previous {
                assert!(prev < rgs, "{prev} then {rgs} at n = {n}");
            }
            previous = Some(rgs);
            count += 1;
        }
        assert_eq!(count, bell, "n = {n}");
        let mut visited = 0u64;
        for_each_partition(n, |view| {
            assert_eq!(view.index() as u64, visited);
            assert_eq!(view.block_sizes().iter().sum::<usize>(), n);
            visited += 1;
        })
        .unwrap();
        assert_eq!(visited, bell);
    }
}

#[test]
fn twelve_points_is_the_limit() {
    assert_eq!(MAX_EXACT_N, 12);
    assert_eq!(RgsIndex::new(12).unwrap().n_partitions() as u64, BELL[12]);
    let err = SetPartitions::new(13).unwrap_err();
    assert!(matches!(err, nrmm::Error::TooLarge(_)), "{err}");
}

#[test]
fn every_partition_is_found_at_its_index() {
    let index = RgsIndex::new(9).unwrap();
    for (k, rgs) in SetPartitions::new(9).unwrap().enumerate() {
        assert_eq!(index.index_of(&rgs).unwrap(), k);
    }
}

proptest! {
    #[test]
    fn relabelled_label_vectors_give_the_same_rgs(
        labels in prop::collection::vec(0u8..7, 0..=12),
        shuffle in Just((0u32..7).collect::<Vec<_>>()).prop_shuffle(),
        offset in 0u32..1000,
    ) {
        let rgs = Rgs::from_labels(&labels).unwrap();
        let relabelled: Vec<u32> = labels.iter().map(|&a| shuffle[a as usize] * 13 + offset).collect();
        prop_assert_eq!(Rgs::from_labels(&relabelled).unwrap(), rgs);
        // Canonical form is valid, idempotent and describes the same partition.
        prop_assert_eq!(Rgs::new(rgs.labels()).unwrap(), rgs);
        prop_assert_eq!(Rgs::from_labels(rgs.labels()).unwrap(), rgs);
        for i in 0..labels.len() {
            for j in 0..labels.len() {
                prop_assert_eq!(rgs.same_block(i, j), labels[i] == labels[j]);
            }
        }
        prop_assert_eq!(rgs.to_string().parse::<Rgs>().unwrap(), rgs);
    }

    #[test]
    fn index_round_trips(n in 0usize..=12, fraction in 0.0f64..1.0) {
        let index = RgsIndex::new(n).unwrap();
        let k = ((index.n_partitions() as f64 * fraction) as usize).min(index.n_partitions() - 1);
        let rgs = index.rgs_at(k).unwrap();
        prop_assert_eq!(rgs.len(), n);
        prop_assert_eq!(index.index_of(&rgs).unwrap(), k);
        if k + 1 < index.n_partitions() {
            prop_assert!(rgs < index.rgs_at(k + 1).unwrap());
        }
    }
}
