//! Loaders and writers: round trips through files, format detection, and every error class
//! with the input name, line and message it reports.

use std::path::{Path, PathBuf};

use nrmm::data::load::*;
use nrmm::data::{canonical_labels, Dataset, DenseData, SparseCounts};
use nrmm::Error;

/// A scratch directory unique to this test process and test name, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("nrmm-data-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The parts of a parse error; fails the test on any other outcome.
fn parse_error<T: std::fmt::Debug>(result: nrmm::Result<T>) -> (PathBuf, usize, String) {
    match result {
        Err(Error::Parse {
            path,
            line,
            message,
        }) => (path, line, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

/// Asserts a parse error on in-memory input at `line` whose message contains every fragment.
fn assert_parse_error<T: std::fmt::Debug>(
    result: nrmm::Result<T>,
    line: usize,
    fragments: &[&str],
) {
    let (path, got_line, message) = parse_error(result);
    assert_eq!(path, Path::new(INPUT_NAME));
    assert_eq!(got_line, line, "line of {message:?}");
    for f in fragments {
        assert!(message.contains(f), "{message:?} lacks {f:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Dense.

#[test]
fn dense_parses_whitespace_commas_comments_and_crlf() {
    let x = parse_dense(b"# comment\n1 2\n\n\t3.5   -4e-2 \r\n.5 5.\n").unwrap();
    assert_eq!((x.n(), x.d()), (3, 2));
    assert_eq!(x.values(), &[1.0, 2.0, 3.5, -0.04, 0.5, 5.0]);
    let y = parse_dense(b"1, 2\n3 ,4\n").unwrap();
    assert_eq!(y.values(), &[1.0, 2.0, 3.0, 4.0]);
    let single = parse_dense(b"7").unwrap();
    assert_eq!((single.n(), single.d()), (1, 1));
}

#[test]
fn dense_ragged_rows_name_both_lines() {
    let text = b"1 2\n3 4\n5 6\n7 8\n9 10\n11 12\n1 2 3\n";
    assert_parse_error(parse_dense(text), 7, &["3 values, expected 2 like line 1"]);
    assert_parse_error(
        parse_dense(b"# header\n\n1,2\n3\n"),
        4,
        &["1 value, expected 2 like line 3"],
    );
}

#[test]
fn dense_rejects_non_finite_and_unparsable_values() {
    assert_parse_error(
        parse_dense(b"1 2\n3 NaN\n"),
        2,
        &["value 2", "NaN", "finite"],
    );
    assert_parse_error(parse_dense(b"1 inf\n"), 1, &["value 2", "inf", "finite"]);
    assert_parse_error(
        parse_dense(b"1 2\n-infinity 0\n"),
        2,
        &["value 1", "finite"],
    );
    assert_parse_error(
        parse_dense(b"1 2\n3 x4\n"),
        2,
        &["value 2", "\"x4\"", "not a number"],
    );
    assert_parse_error(
        parse_dense(b"1 2\n3,4\n"),
        2,
        &["\"3,4\"", "line 1 has no commas"],
    );
    assert_parse_error(parse_dense(b"1,2\n3,,4\n"), 2, &["value 2 is empty"]);
    assert_parse_error(parse_dense(b"1,2,\n"), 1, &["value 3 is empty"]);
    assert_parse_error(parse_dense(b"1 \xff\n"), 1, &["value 2", "not a number"]);
}

/// Text of several parallel chunks (over 12 MiB) with comments, blank lines and `\r\n`
/// scattered: the values in line order, and the first error in line order with its line
/// number, as a reading line by line gives them.
#[test]
fn dense_text_of_many_chunks_reads_in_line_order() {
    let mut text = b"a,b,c\n".to_vec();
    let (mut want, mut lines) = (Vec::new(), 1);
    let mut line_of_row = Vec::new();
    for i in 0..1_000_000u32 {
        match i % 997 {
            0 => text.extend_from_slice(b"# a comment, 1, 2\n"),
            1 => text.extend_from_slice(b"\n"),
            _ => {}
        }
        if i % 997 < 2 {
            lines += 1;
        }
        let row = [
            f64::from(i) * 0.25,
            -f64::from(i % 1000),
            f64::from(i) * 1e-3,
        ];
        let end: &[u8] = if i % 5 == 0 { b"\r\n" } else { b"\n" };
        text.extend_from_slice(format!("{}, {},{}", row[0], row[1], row[2]).as_bytes());
        text.extend_from_slice(end);
        lines += 1;
        want.extend_from_slice(&row);
        line_of_row.push(lines);
    }
    assert!(text.len() > 3 << 22, "{} bytes", text.len());
    let table = parse_table(&text, &DenseOptions::default()).unwrap();
    assert_eq!((table.data.n(), table.data.d()), (1_000_000, 3));
    assert_eq!(table.data.values(), &want[..]);
    assert_eq!(table.columns.unwrap(), ["a", "b", "c"]);
    // Two bad rows in different chunks: the earlier one is named, with its line.
    let mut bad = text.clone();
    let at = |row: usize, bad: &[u8]| {
        let line = line_of_row[row];
        let mut start = 0;
        for _ in 1..line {
            start += bad[start..].iter().position(|&b| b == b'\n').unwrap() + 1;
        }
        start
    };
    let late = at(650_000, &bad);
    bad[late] = b'x';
    let early = at(400_123, &bad);
    bad[early..early + 1].copy_from_slice(b";");
    assert_parse_error(parse_dense(&bad), line_of_row[400_123], &["value 1"]);
    let mut binary = text;
    let spot = at(555_555, &binary);
    binary[spot] = 0;
    assert_parse_error(parse_dense(&binary), line_of_row[555_555], &["binary data"]);
}

#[test]
fn dense_rejects_empty_input() {
    assert_parse_error(parse_dense(b""), 0, &["empty"]);
    assert_parse_error(
        parse_dense(b"\n  \n# only a comment\n"),
        0,
        &["blank or comment"],
    );
}

#[test]
fn dense_file_errors_name_the_file() {
    let dir = Scratch::new("dense-name");
    let path = dir.file("bad.txt");
    std::fs::write(&path, "1 2\n3\n").unwrap();
    let (got, line, _) = parse_error(load_dense(&path));
    assert_eq!((got, line), (path.clone(), 2));
    let shown = load_dense(&path).unwrap_err().to_string();
    assert!(
        shown.starts_with(&format!("{}:2: ", path.display())),
        "{shown}"
    );
    match load_dense(dir.file("missing.txt")) {
        Err(Error::Io { path, .. }) => assert_eq!(path, dir.file("missing.txt")),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

#[test]
fn dense_round_trips_bit_for_bit() {
    let dir = Scratch::new("dense-rt");
    let values = vec![
        0.0,
        -0.0,
        1.0,
        -2.5,
        0.1,
        1e-300,
        -1e150,
        f64::MIN_POSITIVE,
        nrmm::data::MAX_MAGNITUDE,
        123456.789,
        -0.046570427344523074,
        7e-6,
    ];
    let x = DenseData::new(4, 3, values).unwrap();
    let path = dir.file("x.txt");
    write_dense(&path, &x).unwrap();
    let y = load_dense(&path).unwrap();
    assert_eq!(x.values().len(), y.values().len());
    for (a, b) in x.values().iter().zip(y.values()) {
        assert_eq!(a.to_bits(), b.to_bits(), "{a} read back as {b}");
    }
    let mut buf = Vec::new();
    write_dense_to(&mut buf, &x).unwrap();
    assert_eq!(read_dense(&buf[..]).unwrap(), y);
}

#[test]
fn writers_replace_files_atomically_and_leave_no_temporaries() {
    let dir = Scratch::new("atomic");
    let path = dir.file("out.txt");
    std::fs::write(&path, "old content that is longer than the new one\n").unwrap();
    write_labels(&path, &[3usize, 1, 2]).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "3\n1\n2\n");
    let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().collect();
    assert_eq!(left.len(), 1, "temporary files left behind");
    match write_labels(dir.file("no/such/dir/x.txt"), &[1]) {
        Err(Error::Write { path, .. }) => assert_eq!(path, dir.file("no/such/dir/x.txt")),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Labels.

#[test]
fn labels_parse_any_integers_and_canonicalise() {
    let labels = parse_labels(b"# truth\n3\n-1\n3\n\n0\n-1\n").unwrap();
    assert_eq!(labels, vec![3, -1, 3, 0, -1]);
    assert_eq!(canonical_labels(&labels), vec![0, 1, 0, 2, 1]);
}

#[test]
fn labels_errors_say_what_was_expected() {
    assert_parse_error(parse_labels(b"1\n2.5\n"), 2, &["\"2.5\"", "not an integer"]);
    assert_parse_error(parse_labels(b"1\n2 3\n"), 2, &["2 values", "one integer"]);
    assert_parse_error(parse_labels(b"\n\n"), 0, &["no labels"]);
}

#[test]
fn label_count_must_match_the_data() {
    let dir = Scratch::new("labels-count");
    let path = dir.file("labels.txt");
    write_labels(&path, &[1i64, 2, 2, -7]).unwrap();
    assert_eq!(load_labels(&path, 4).unwrap(), vec![1, 2, 2, -7]);
    match load_labels(&path, 5) {
        Err(Error::DimensionMismatch(m)) => {
            assert!(m.contains("4 labels"), "{m}");
            assert!(m.contains("5 points"), "{m}");
            assert!(m.contains("labels.txt"), "{m}");
        }
        other => panic!("expected a dimension mismatch, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// UCI docword.

const DOCWORD: &[u8] = b"3\n5\n4\n1 1 2\n1 4 1\n3 2 7\n3 5 1\n";

#[test]
fn docword_parses_and_keeps_empty_documents() {
    let x = parse_docword(DOCWORD).unwrap();
    assert_eq!((x.n(), x.vocab(), x.nnz()), (3, 5, 4));
    assert_eq!(x.row(0), (&[0u32, 3][..], &[2u32, 1][..]));
    assert_eq!(x.row(1), (&[][..], &[][..]));
    assert_eq!(x.row(2), (&[1u32, 4][..], &[7u32, 1][..]));
    let unsorted = parse_docword(b"2\n3\n3\n2 1 1\n1 3 2\n1 3 1\n").unwrap();
    assert_eq!(unsorted.row(0), (&[2u32][..], &[3u32][..]));
}

#[test]
fn docword_errors_name_line_and_expectation() {
    assert_parse_error(
        parse_docword(b"3\n5\n1\n4 1 1\n"),
        4,
        &["document id 4", "1..=3"],
    );
    assert_parse_error(parse_docword(b"3\n5\n1\n0 1 1\n"), 4, &["document id 0"]);
    assert_parse_error(
        parse_docword(b"3\n5\n1\n1 6 1\n"),
        4,
        &["word id 6", "1..=5"],
    );
    assert_parse_error(
        parse_docword(b"3\n5\n1\n1 -2 1\n"),
        4,
        &["word id -2", "negative"],
    );
    assert_parse_error(
        parse_docword(b"3\n5\n1\n1 2 -1\n"),
        4,
        &["count -1", "negative"],
    );
    assert_parse_error(
        parse_docword(b"3\n5\n1\n1 2 1.5\n"),
        4,
        &["count", "not an integer"],
    );
    assert_parse_error(
        parse_docword(b"3\n5\n1\n1 2 x\n"),
        4,
        &["count", "not a number"],
    );
    assert_parse_error(parse_docword(b"3\n5\n1\n1 2\n"), 4, &["2 values", "three"]);
    assert_parse_error(
        parse_docword(b"3\n5\n3\n1 1 1\n2 2 2\n"),
        6,
        &["end of input", "NNZ = 3", "found 2"],
    );
    assert_parse_error(
        parse_docword(b"3\n5\n1\n1 1 1\n2 2 2\n"),
        5,
        &["more entries", "NNZ = 1"],
    );
    assert_parse_error(parse_docword(b"3\n5\n"), 3, &["end of input", "NNZ"]);
    assert_parse_error(
        parse_docword(b""),
        1,
        &["end of input", "number of documents"],
    );
    assert_parse_error(parse_docword(b"3 5 1\n"), 1, &["several values"]);
    assert_parse_error(parse_docword(b"x\n5\n0\n"), 1, &["not a number", "header"]);
    assert_parse_error(parse_docword(b"0\n5\n0\n"), 0, &["D = 0"]);
    assert_parse_error(parse_docword(b"2\n0\n0\n"), 0, &["W = 0"]);
    assert_parse_error(
        parse_docword(b"100000000\n5\n0\n"),
        0,
        &["D = 100000000", "corrupt"],
    );
}

#[test]
fn docword_round_trips() {
    let dir = Scratch::new("docword-rt");
    let x = SparseCounts::from_rows(
        7,
        &[
            vec![(0, 3), (6, 1)],
            vec![],
            vec![(2, 5)],
            vec![(1, 1), (3, 2), (5, u32::MAX)],
        ],
    )
    .unwrap();
    let path = dir.file("docword.test.txt");
    write_docword(&path, &x).unwrap();
    assert_eq!(load_docword(&path).unwrap(), x);
    assert_eq!(
        load_dataset(&path, None).unwrap(),
        Dataset::Counts(x.clone())
    );
    let mut buf = Vec::new();
    write_docword_to(&mut buf, &x).unwrap();
    assert_eq!(read_docword(&buf[..]).unwrap(), x);
}

// ---------------------------------------------------------------------------------------------
// LDA-C.

#[test]
fn ldac_parses_and_infers_or_checks_the_vocabulary() {
    let text = b"2 0:1 4:2\n0\n1 2:3\n";
    let x = parse_ldac(text, None).unwrap();
    assert_eq!((x.n(), x.vocab(), x.nnz()), (3, 5, 3));
    assert_eq!(x.row(1).0.len(), 0);
    assert_eq!(x.row(2), (&[2u32][..], &[3u32][..]));
    assert_eq!(parse_ldac(text, Some(10)).unwrap().vocab(), 10);
    assert_parse_error(
        parse_ldac(text, Some(4)),
        1,
        &["word id 4", "4 words", "0..=3"],
    );
    assert!(matches!(
        parse_ldac(text, Some(0)),
        Err(Error::InvalidParameter { .. })
    ));
    assert_eq!(
        read_ldac(&text[..], None).unwrap(),
        parse_ldac(text, None).unwrap()
    );
}

#[test]
fn ldac_errors_name_line_and_expectation() {
    assert_parse_error(
        parse_ldac(b"1 0:1\n3 1:1 2:2\n", None),
        2,
        &["M = 3", "found 2"],
    );
    assert_parse_error(parse_ldac(b"1 0:1\n2 1:1 2:2 3:1\n", None), 2, &["found 3"]);
    assert_parse_error(
        parse_ldac(b"1 0:1\n1 5\n", None),
        2,
        &["pair 1", "\"5\"", "id:count"],
    );
    assert_parse_error(
        parse_ldac(b"1 -1:2\n", None),
        1,
        &["word id -1", "negative"],
    );
    assert_parse_error(parse_ldac(b"1 1:-2\n", None), 1, &["count -2", "negative"]);
    assert_parse_error(
        parse_ldac(b"1 1:0.5\n", None),
        1,
        &["count", "not an integer"],
    );
    assert_parse_error(parse_ldac(b"1 1:\n", None), 1, &["count", "not a number"]);
    assert_parse_error(parse_ldac(b"x 1:1\n", None), 1, &["number of pairs M"]);
    assert_parse_error(parse_ldac(b"", None), 0, &["empty"]);
    assert_parse_error(parse_ldac(b"0\n0\n", None), 0, &["vocabulary size"]);
    // A file cut off mid-line shows as a pair count that does not match M.
    assert_parse_error(parse_ldac(b"2 0:1 3:4\n3 1:1 2", None), 2, &["pair 2"]);
}

// ---------------------------------------------------------------------------------------------
// IDX.

fn idx(magic: u32, dims: &[u32], payload: &[u8]) -> Vec<u8> {
    let mut out = magic.to_be_bytes().to_vec();
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(payload);
    out
}

#[test]
fn idx_images_and_labels_parse() {
    let images = idx(
        2051,
        &[2, 2, 3],
        &[0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255],
    );
    let x = parse_idx_images(&images).unwrap();
    assert_eq!((x.n(), x.d()), (2, 6));
    assert_eq!(x.row(1), &[250.0, 251.0, 252.0, 253.0, 254.0, 255.0]);
    assert_eq!(parse_dataset(&images, None).unwrap(), Dataset::Dense(x));
    let labels = idx(2049, &[3], &[7, 0, 9]);
    assert_eq!(parse_idx_labels(&labels).unwrap(), vec![7, 0, 9]);
    assert_eq!(parse_labels(&labels).unwrap(), vec![7, 0, 9]);
}

#[test]
fn idx_errors_are_clear() {
    assert_parse_error(
        parse_idx_images(&idx(2049, &[3], &[1, 2, 3])),
        0,
        &["2049", "label file", "2051"],
    );
    assert_parse_error(
        parse_idx_labels(&idx(2051, &[1, 1, 1], &[1])),
        0,
        &["3-D", "2049"],
    );
    assert_parse_error(
        parse_idx_images(b"1 2\n3 4\n"),
        0,
        &["not an IDX file", "2051"],
    );
    assert_parse_error(
        parse_idx_images(&idx(0x0D03, &[1, 1, 1], &[0; 4])),
        0,
        &["element type 0x0d", "0x08"],
    );
    assert_parse_error(
        parse_idx_images(&[0, 0, 8]),
        0,
        &["truncated IDX header", "3 bytes"],
    );
    assert_parse_error(
        parse_idx_images(&idx(2051, &[2], &[])[..8]),
        0,
        &["truncated IDX header", "3 dimensions"],
    );
    assert_parse_error(
        parse_idx_images(&idx(2051, &[2, 2, 2], &[0; 7])),
        0,
        &["truncated IDX payload", "8 bytes", "found 7"],
    );
    assert_parse_error(
        parse_idx_images(&idx(2051, &[1, 2, 2], &[0; 6])),
        0,
        &["2 bytes after"],
    );
    assert_parse_error(
        parse_idx_images(&idx(0x0805, &[u32::MAX; 5], &[])),
        0,
        &["overflow"],
    );
    assert_parse_error(
        parse_idx_images(&idx(2051, &[0, 28, 28], &[])),
        0,
        &["no data"],
    );
    assert_parse_error(parse_idx_labels(&idx(2049, &[0], &[])), 0, &["no data"]);
}

// ---------------------------------------------------------------------------------------------
// Detection and dispatch.

#[test]
fn formats_are_detected_from_name_and_content() {
    let p = Path::new;
    assert_eq!(
        detect_format(p("x"), &idx(2051, &[1, 1, 1], &[0])),
        Format::Idx
    );
    assert_eq!(detect_format(p("a.ldac"), b"1 2\n"), Format::Ldac);
    assert_eq!(
        detect_format(p("docword.nips.txt"), b"1 2\n"),
        Format::Docword
    );
    assert_eq!(
        detect_format(p("train-images-idx3-ubyte"), b""),
        Format::Idx
    );
    assert_eq!(
        detect_format(p("corpus.txt"), b"\n2 1:1 3:1\n"),
        Format::Ldac
    );
    assert_eq!(detect_format(p("c.txt"), DOCWORD), Format::Docword);
    assert_eq!(detect_format(p("X.txt"), b"1 2\n3 4\n"), Format::Dense);
    assert_eq!(detect_format(p("X.txt"), b"1\n2\n3\n4\n"), Format::Dense);
    assert_eq!(detect_format(p("X.csv"), b"1,2\n"), Format::Dense);
    assert_eq!(detect_format(p("X.txt"), b""), Format::Dense);
    for f in [Format::Dense, Format::Docword, Format::Ldac, Format::Idx] {
        assert_eq!(f.to_string().parse::<Format>().unwrap(), f);
    }
    assert!(matches!(
        "parquet".parse::<Format>(),
        Err(Error::InvalidParameter { .. })
    ));
}

#[test]
fn datasets_load_in_the_detected_or_given_format() {
    let dir = Scratch::new("dataset");
    let dense = dir.file("points.csv");
    std::fs::write(&dense, "1,2\n3,4\n").unwrap();
    match load_dataset(&dense, None).unwrap() {
        Dataset::Dense(x) => assert_eq!(x.values(), &[1.0, 2.0, 3.0, 4.0]),
        other => panic!("expected dense data, got {other:?}"),
    }
    let ldac = dir.file("corpus.ldac");
    std::fs::write(&ldac, "1 3:2\n").unwrap();
    assert_eq!(load_dataset(&ldac, None).unwrap().n(), 1);
    // A forced format wins over detection, and its parser reports the mismatch.
    let (path, line, _) = parse_error(load_dataset(&ldac, Some(Format::Dense)));
    assert_eq!((path, line), (ldac, 1));
    assert_parse_error(parse_dataset(b"1 2\n", Some(Format::Idx)), 0, &["IDX"]);
    assert_parse_error(
        parse_dataset(b"1 2\n", Some(Format::Docword)),
        1,
        &["several"],
    );
}

// ---------------------------------------------------------------------------------------------
// Speed (run with `cargo test --release --test integration data_load:: -- --ignored --nocapture`).

#[test]
#[ignore = "timing run; prints figures"]
fn dense_loader_speed_on_a_million_points() {
    let dir = Scratch::new("speed");
    let n = 1_000_000;
    let values: Vec<f64> = (0..2 * n)
        .map(|i| ((i as f64 * 0.618_033_988_749_895).fract() - 0.5) * 3.0)
        .collect();
    let x = DenseData::new(n, 2, values).unwrap();
    let path = dir.file("big.txt");
    let t = std::time::Instant::now();
    write_dense(&path, &x).unwrap();
    let write_s = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let y = load_dense(&path).unwrap();
    let load_s = t.elapsed().as_secs_f64();
    assert_eq!(y, x);
    let mb = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
    println!("1e6 x 2 dense ({mb:.1} MB): write {write_s:.3} s, load {load_s:.3} s");
}
