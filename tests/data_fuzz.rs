//! Property tests of the loaders: every parser returns `Ok` or `Err`, never panics, on
//! arbitrary bytes, on text made of the formats' own characters and on mutated valid files;
//! what parses satisfies the data types' invariants; writers and loaders round-trip.
//!
//! The fuzz campaign (`campaign`) feeds each format — dense text, CSV with a header, labels,
//! docword, LDA-C, IDX, NumPy `.npy`, gzip — seeded mutations of valid files and random bytes:
//! a short run of it is part of the suite; the full one, a million cases per format, is
//!
//! ```text
//! cargo test --release --test integration data_fuzz:: -- --ignored --nocapture
//! ```
//!
//! (`NRMM_FUZZ_CASES=N` sets the cases per format). It prints the count and the slowest case
//! of each format.

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
    if let Ok(x) = nrmm::data::npy::npy_from_bytes(bytes, std::path::Path::new("x.npy")) {
        check_dense(&x);
    }
    for opts in table_options() {
        if let Ok(t) = parse_table(bytes, &opts) {
            check_dense(&t.data);
            if let Some(c) = &t.columns {
                assert_eq!(c.len(), t.data.d());
            }
        }
    }
    let _ = detect_format(std::path::Path::new("input"), bytes);
    match parse_dataset(bytes, None) {
        Ok(Dataset::Dense(x)) => check_dense(&x),
        Ok(Dataset::Counts(x)) => check_counts(&x),
        Ok(Dataset::Table(t)) => check_table(&t),
        Err(_) => {}
    }
}

/// A table read from any bytes: columns of the table's length, level codes within their
/// levels, every column with an observed entry.
fn check_table(t: &nrmm::data::TableData) {
    for c in t.columns() {
        assert_eq!(c.values.len(), t.n());
        assert!(c.missing() < t.n());
        if c.kind.has_levels() {
            assert!(c
                .values
                .iter()
                .all(|v| v.is_nan() || (*v as usize) < c.n_levels()));
        }
    }
}

/// Header and skipped-column settings the dense reader is fuzzed with.
fn table_options() -> [DenseOptions; 3] {
    [
        DenseOptions::default(),
        DenseOptions {
            header: true,
            skip_columns: vec!["1".into()],
            types: Vec::new(),
        },
        DenseOptions {
            header: false,
            skip_columns: vec!["id".into(), "3".into()],
            types: Vec::new(),
        },
    ]
}

const VALID: [&[u8]; 9] = [
    b"1.5 -2 3e4\n# c\n0 .5 7\n",
    b"1,2\n3,4\n5,6\n",
    b"3\n5\n4\n1 1 2\n1 4 1\n3 2 7\n3 5 1\n",
    b"2 0:1 4:2\n0\n1 2:3\n",
    b"3\n-1\n0\n12\n",
    // IDX: 2 images of 2 x 2 bytes.
    b"\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x02\x01\x02\x03\x04\x05\x06\x07\x08",
    b"id,\"x\",y\na1,1.5,2\nb2,-3,4e2\n",
    // NumPy: a 2 x 2 array of little-endian f8, and of i4 in Fortran order.
    b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }                                                          \n\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00@\x00\x00\x00\x00\x00\x00\x08@\x00\x00\x00\x00\x00\x00\x10@",
    b"\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2), }                                                           \n\x01\x00\x00\x00\x03\x00\x00\x00\x02\x00\x00\x00\x04\x00\x00\x00",
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

#[test]
fn the_valid_seeds_are_valid() {
    assert!(parse_dense(VALID[0]).is_ok());
    assert!(parse_table(VALID[6], &table_options()[2]).is_ok());
    for npy in &VALID[7..9] {
        let x = nrmm::data::npy::npy_from_bytes(npy, std::path::Path::new("x.npy")).unwrap();
        assert_eq!(
            x.values(),
            [1.0, 2.0, 3.0, 4.0],
            "{}",
            String::from_utf8_lossy(npy)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The fuzz campaign.

/// SplitMix64: a small seeded generator, so the campaign needs nothing but its seed.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes the text formats are made of, weighted towards them, and any byte now and then.
const ALPHABET: &[u8] = b"0123456789 \t\r\n:,-+.#eEinfa\"x";

/// One fuzz input: a valid seed mutated 1 to 8 times, or (one case in eight) random bytes.
fn fuzz_case(rng: &mut Mix, seeds: &[Vec<u8>]) -> Vec<u8> {
    if rng.below(8) == 0 {
        let len = rng.below(300);
        return (0..len)
            .map(|_| {
                if rng.below(2) == 0 {
                    ALPHABET[rng.below(ALPHABET.len())]
                } else {
                    rng.next() as u8
                }
            })
            .collect();
    }
    let mut v = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(8) {
        let byte = match rng.below(3) {
            0 => ALPHABET[rng.below(ALPHABET.len())],
            1 => rng.next() as u8,
            _ => [0u8, 0xff, 0x7f, b'9'][rng.below(4)],
        };
        let len = v.len();
        match rng.below(6) {
            0 | 1 if len > 0 => v[rng.below(len)] = byte,
            2 => v.insert(rng.below(len + 1), byte),
            3 if len > 0 => {
                v.remove(rng.below(len));
            }
            4 => v.truncate(rng.below(len + 1)),
            _ => {
                // Duplicate a slice: repeated lines and fields.
                let a = rng.below(len + 1);
                let b = (a + rng.below(32)).min(len);
                let piece = v[a..b].to_vec();
                let at = rng.below(len + 1);
                v.splice(at..at, piece);
            }
        }
    }
    v
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// A format under fuzz: its name, its valid seeds, and what runs its parsers on one input.
struct Target {
    name: &'static str,
    seeds: Vec<Vec<u8>>,
    run: fn(&[u8]),
}

fn targets() -> Vec<Target> {
    let v = |ids: &[usize]| ids.iter().map(|&i| VALID[i].to_vec()).collect::<Vec<_>>();
    vec![
        Target {
            name: "dense text",
            seeds: v(&[0, 1]),
            run: |b| {
                if let Ok(x) = parse_dense(b) {
                    check_dense(&x);
                }
            },
        },
        Target {
            name: "CSV with header",
            seeds: v(&[6, 1]),
            run: |b| {
                for opts in table_options() {
                    if let Ok(t) = parse_table(b, &opts) {
                        check_dense(&t.data);
                    }
                }
            },
        },
        Target {
            name: "labels",
            seeds: v(&[4]),
            run: |b| {
                if let Ok(l) = parse_labels(b) {
                    assert!(!l.is_empty());
                }
            },
        },
        Target {
            name: "docword",
            seeds: v(&[2]),
            run: |b| {
                if let Ok(x) = parse_docword(b) {
                    check_counts(&x);
                }
            },
        },
        Target {
            name: "LDA-C",
            seeds: v(&[3]),
            run: |b| {
                for vocab in [None, Some(7)] {
                    if let Ok(x) = parse_ldac(b, vocab) {
                        check_counts(&x);
                    }
                }
            },
        },
        Target {
            name: "IDX",
            seeds: v(&[5]),
            run: |b| {
                if let Ok(x) = parse_idx_images(b) {
                    check_dense(&x);
                }
                let _ = parse_idx_labels(b);
            },
        },
        Target {
            name: "npy",
            seeds: v(&[7, 8]),
            run: |b| {
                if let Ok(x) = nrmm::data::npy::npy_from_bytes(b, std::path::Path::new("x.npy")) {
                    check_dense(&x);
                }
            },
        },
        Target {
            name: "gzip",
            // Compressed files of every format, mutated in their compressed form.
            seeds: VALID.iter().map(|f| gz(f)).collect(),
            run: |b| {
                for name in ["x.txt.gz", "docword.x.gz", "x.npy.gz"] {
                    match parse_dataset_named(
                        b,
                        std::path::Path::new(name),
                        &LoadOptions::default(),
                    ) {
                        Ok(Loaded {
                            dataset: Dataset::Dense(x),
                            ..
                        }) => check_dense(&x),
                        Ok(Loaded {
                            dataset: Dataset::Counts(x),
                            ..
                        }) => check_counts(&x),
                        Ok(Loaded {
                            dataset: Dataset::Table(t),
                            ..
                        }) => check_table(&t),
                        Err(_) => {}
                    }
                }
                let _ = parse_labels(b);
            },
        },
    ]
}

/// Runs `cases` fuzz inputs per format from `seed`; returns per format the cases run and the
/// slowest case. A panic reports the input that caused it.
fn campaign(cases: u64, seed: u64) -> Vec<(&'static str, u64, std::time::Duration)> {
    let mut report = Vec::new();
    for (t, target) in targets().into_iter().enumerate() {
        let mut rng = Mix(seed ^ (t as u64) << 32);
        let mut slowest = std::time::Duration::ZERO;
        for case in 0..cases {
            let mut input = fuzz_case(&mut rng, &target.seeds);
            // Half of the gzip cases compress a mutated file instead: the parsers behind
            // the decompression get malformed content, not only a failing checksum.
            if target.name == "gzip" && case % 2 == 1 {
                let plain = fuzz_case(&mut rng, &VALID.map(<[u8]>::to_vec));
                input = gz(&plain);
            }
            let start = std::time::Instant::now();
            let run = target.run;
            if std::panic::catch_unwind(|| run(&input)).is_err() {
                panic!(
                    "{}: case {case} panicked on input {:?}",
                    target.name,
                    String::from_utf8_lossy(&input)
                );
            }
            slowest = slowest.max(start.elapsed());
        }
        report.push((target.name, cases, slowest));
    }
    report
}

/// The short campaign of the suite: seconds.
#[test]
fn fuzz_campaign_short() {
    for (name, cases, _) in campaign(3_000, 1) {
        assert_eq!(cases, 3_000, "{name}");
    }
}

/// The full campaign: a million cases per format (see the module documentation).
#[test]
#[ignore = "minutes: cargo test --release --test integration data_fuzz:: -- --ignored --nocapture"]
fn fuzz_campaign_full() {
    let cases = std::env::var("NRMM_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1_000_000);
    let start = std::time::Instant::now();
    for (name, cases, slowest) in campaign(cases, 20_261_125) {
        println!("{name}: {cases} cases, none panicked; slowest case {slowest:?}");
    }
    println!("total {:?}", start.elapsed());
}
