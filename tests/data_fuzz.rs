//! Property tests of the loaders: every parser returns `Ok` or `Err`, never panics, on
//! arbitrary bytes, on text made of the formats' own characters and on mutated valid files;
//! what parses satisfies the data types' invariants; writers and loaders round-trip.

use nrmm::data::load::*;
use nrmm::data::{Dataset, DenseData, SparseCounts};
use proptest::prelude::*;

fn check_dense(x: &DenseData) {
    assert!(x.n() > 0 && x.d() > 0);
    assert_eq!(x.values().len(), x.n() * x.d());
    assert!(x.values().iter().all(|v| v.is_finite()));
}

fn check_counts(x: &SparseCounts) {
    assert!(x.n() > 0);
    let mut nnz = 0;
    for i in 0..x.n() {
        let (ids, counts) = x.row(i);
        assert_eq!(ids.len(), counts.len());
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids not increasing");
        assert!(ids.iter().all(|&w| (w as usize) < x.vocab()));
        assert!(counts.iter().all(|&c| c > 0));
        nnz += ids.len();
    }
    assert_eq!(nnz, x.nnz());
}

/// Runs every parser on `bytes`; a panic fails the property.
fn run_all_parsers(bytes: &[u8]) {
    if let Ok(x) = parse_dense(bytes) {
        check_dense(&x);
    }
    if let Ok(l) = parse_labels(bytes) {
        assert!(!l.is_empty());
    }
    if let Ok(x) = parse_docword(bytes) {
        check_counts(&x);
    }
    for vocab in [None, Some(1), Some(7)] {
        if let Ok(x) = parse_ldac(bytes, vocab) {
            check_counts(&x);
        }
    }
    if let Ok(x) = parse_idx_images(bytes) {
        check_dense(&x);
    }
    let _ = parse_idx_labels(bytes);
    let _ = detect_format(std::path::Path::new("input"), bytes);
    match parse_dataset(bytes, None) {
        Ok(Dataset::Dense(x)) => check_dense(&x),
        Ok(Dataset::Counts(x)) => check_counts(&x),
        Err(_) => {}
    }
}

const VALID: [&[u8]; 6] = [
    b"1.5 -2 3e4\n# c\n0 .5 7\n",
    b"1,2\n3,4\n5,6\n",
    b"3\n5\n4\n1 1 2\n1 4 1\n3 2 7\n3 5 1\n",
    b"2 0:1 4:2\n0\n1 2:3\n",
    b"3\n-1\n0\n12\n",
    // IDX: 2 images of 2 x 2 bytes.
    b"\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x02\x01\x02\x03\x04\x05\x06\x07\x08",
];

#[derive(Clone, Debug)]
enum Mutation {
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![
        any::<u8>(),
        prop::sample::select(b"0123456789 \n:,-.#e".to_vec()),
        Just(0xffu8),
    ];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<usize>(), byte).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(base: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut v = base.to_vec();
    for m in mutations {
        let len = v.len();
        match *m {
            Mutation::Set(i, b) if len > 0 => v[i % len] = b,
            Mutation::Insert(i, b) => v.insert(i % (len + 1), b),
            Mutation::Delete(i) if len > 0 => {
                v.remove(i % len);
            }
            Mutation::Truncate(i) => v.truncate(i % (len + 1)),
            _ => {}
        }
    }
    v
}

proptest! {
    #[test]
    fn parsers_never_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        run_all_parsers(&bytes);
    }

    #[test]
    fn parsers_never_panic_on_format_like_text(
        bytes in prop::collection::vec(
            prop::sample::select(b"0123456789 \t\r\n:,-+.#eEinfa".to_vec()),
            0..300,
        )
    ) {
        run_all_parsers(&bytes);
    }

    #[test]
    fn parsers_never_panic_on_mutated_valid_files(
        which in 0..VALID.len(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        run_all_parsers(&apply(VALID[which], &mutations));
    }

    #[test]
    fn idx_headers_with_any_dimensions_are_handled(
        magic_low in any::<u8>(),
        dims in prop::collection::vec(any::<u32>(), 0..6),
        payload in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut bytes = vec![0, 0, 8, magic_low];
        for d in &dims {
            bytes.extend_from_slice(&d.to_be_bytes());
        }
        bytes.extend_from_slice(&payload);
        run_all_parsers(&bytes);
    }

    #[test]
    fn dense_text_round_trips_exactly(
        (n, d, values) in (1usize..6, 1usize..5).prop_flat_map(|(n, d)| {
            (Just(n), Just(d), prop::collection::vec(
                any::<f64>().prop_filter("finite, loadable", |v| v.abs() <= nrmm::data::MAX_MAGNITUDE), n * d))
        })
    ) {
        let x = DenseData::new(n, d, values).unwrap();
        let mut text = Vec::new();
        write_dense_to(&mut text, &x).unwrap();
        let y = parse_dense(&text).unwrap();
        prop_assert_eq!(x.values().len(), y.values().len());
        for (a, b) in x.values().iter().zip(y.values()) {
            prop_assert_eq!(a.to_bits(), b.to_bits());
        }
    }

    #[test]
    fn docword_and_labels_round_trip(
        rows in prop::collection::vec(
            prop::collection::vec((0u32..20, 1u32..1000), 0..6), 1..6),
        labels in prop::collection::vec(any::<i64>(), 1..20),
    ) {
        let x = SparseCounts::from_rows(20, &rows).unwrap();
        let mut text = Vec::new();
        write_docword_to(&mut text, &x).unwrap();
        prop_assert_eq!(parse_docword(&text).unwrap(), x);
        let mut text = Vec::new();
        write_labels_to(&mut text, &labels).unwrap();
        prop_assert_eq!(parse_labels(&text).unwrap(), labels);
    }
}
