//! The inputs people have: CSV with a header row and columns to skip, NumPy `.npy` arrays and
//! gzip-compressed files, each read to the same matrix as plain text, and each malformed case
//! an error that says what is wrong.

use std::io::Write;
use std::path::{Path, PathBuf};

use nrmm::data::load::*;
use nrmm::data::Dataset;
use nrmm::Error;

fn message(e: Error) -> String {
    e.to_string()
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// A version 1 `.npy` file of `descr` values (already encoded) with `shape`.
pub(crate) fn npy(descr: &str, fortran: bool, shape: &str, payload: &[u8]) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(payload);
    out
}

/// `values` as little-endian `f8` bytes.
pub(crate) fn f8(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("nrmm-formats-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dense(l: Loaded) -> (usize, usize, Vec<f64>, Option<Vec<String>>) {
    match l.dataset {
        Dataset::Dense(x) => (x.n(), x.d(), x.values().to_vec(), l.columns),
        Dataset::Counts(_) | Dataset::Table(_) => panic!("expected dense data"),
    }
}

fn opts(header: bool, skip: &[&str]) -> LoadOptions {
    LoadOptions {
        format: None,
        dense: DenseOptions {
            header,
            skip_columns: skip.iter().map(|s| s.to_string()).collect(),
            types: Vec::new(),
        },
    }
}

fn parse(bytes: &[u8], o: &LoadOptions) -> nrmm::Result<Loaded> {
    parse_dataset_named(bytes, Path::new("x.csv"), o)
}

#[test]
fn csv_headers_are_detected_or_forced_and_columns_skipped() {
    let csv = b"id,\"sepal length\",width\n7,0.5,2\n8,1.5,3\n";
    let (n, d, v, cols) = dense(parse(csv, &opts(false, &["id"])).unwrap());
    assert_eq!((n, d), (2, 2));
    assert_eq!(v, [0.5, 2.0, 1.5, 3.0]);
    assert_eq!(cols.unwrap(), ["sepal length", "width"]);
    // By number, and in whitespace-separated text.
    let (_, d, v, _) = dense(parse(b"a b c\n1 2 3\n", &opts(false, &["1", "3"])).unwrap());
    assert_eq!((d, v), (1, vec![2.0]));
    // A numeric header needs --header; without it the line is data.
    let years = b"1990,1991\n1,2\n";
    assert_eq!(dense(parse(years, &opts(false, &[])).unwrap()).0, 2);
    let (n, _, _, cols) = dense(parse(years, &opts(true, &[])).unwrap());
    assert_eq!(
        (n, cols.unwrap()),
        (1, vec!["1990".to_string(), "1991".into()])
    );
    // Skipping a column that holds ids that are not numbers.
    let (_, d, _, _) = dense(parse(b"name,x\nA1,1\nB2,2\n", &opts(false, &["name"])).unwrap());
    assert_eq!(d, 1);
}

#[test]
fn malformed_tables_say_what_is_wrong() {
    let m = |bytes: &[u8], o: &LoadOptions| message(parse(bytes, o).unwrap_err());
    let e = m(b"x,y\n", &opts(false, &[]));
    assert!(e.contains("only a header (line 1)"), "{e}");
    let e = m(b"# comment\nx,y\n\n", &opts(false, &[]));
    assert!(e.contains("only a header (line 2)"), "{e}");
    let e = m(b"x,y\n1,2,3\n", &opts(false, &[]));
    assert!(
        e.contains("x.csv:2") && e.contains("like the header on line 1"),
        "{e}"
    );
    let e = m(b"x,y\n1,2\n", &opts(false, &["z"]));
    assert!(e.contains("\"z\"") && e.contains("x, y"), "{e}");
    let e = m(b"1,2\n", &opts(false, &["z"]));
    assert!(e.contains("no header"), "{e}");
    let e = m(b"1,2\n", &opts(false, &["3"]));
    assert!(e.contains("column 3") && e.contains("2 columns"), "{e}");
    let e = m(b"x,y\n1,2\n", &opts(false, &["x", "2"]));
    assert!(e.contains("no values remain"), "{e}");
    let e = m(b"x,y\n1,1e200\n", &opts(false, &[]));
    assert!(
        e.contains("x.csv:2") && e.contains("value 2") && e.contains("rescale"),
        "{e}"
    );
    // A data line with a typo is not mistaken for a header.
    let e = m(b"1,2,x\n1,2,3\n", &opts(false, &[]));
    assert!(e.contains("x.csv:1") && e.contains("not a number"), "{e}");
    // Header flags do not apply to count data.
    let e = message(
        parse_dataset_named(b"2 0:1 4:2\n", Path::new("x.ldac"), &opts(true, &[])).unwrap_err(),
    );
    assert!(e.contains("--header"), "{e}");
}

#[test]
fn npy_files_load_in_both_orders_and_refuse_what_they_cannot_read() {
    let dir = Scratch::new("npy");
    let want = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let c = dir.file("c.npy", &npy("<f8", false, "(3, 2)", &f8(&want)));
    let (n, d, v, _) = dense(load_dataset_with(&c, &LoadOptions::default()).unwrap());
    assert_eq!((n, d, v.as_slice()), (3, 2, &want[..]));
    // The same matrix in Fortran order, named without the extension: detected by its magic.
    let fortran: Vec<f64> = [0, 2, 4, 1, 3, 5].iter().map(|&k| want[k]).collect();
    let f = dir.file("f.bin", &npy("<f8", true, "(3, 2)", &f8(&fortran)));
    assert_eq!(
        dense(load_dataset_with(&f, &LoadOptions::default()).unwrap()).2,
        want
    );
    let (_, d, v, _) = dense(load_dataset_with(&c, &opts(false, &["1"])).unwrap());
    assert_eq!((d, v), (1, vec![2.0, 4.0, 6.0]));
    let m = |bytes: &[u8]| {
        message(load_dataset_with(dir.file("bad.npy", bytes), &LoadOptions::default()).unwrap_err())
    };
    let good = npy("<f8", false, "(3, 2)", &f8(&want));
    let e = m(&good[..good.len() - 5]);
    assert!(
        e.contains("bad.npy") && e.contains("truncated .npy file"),
        "{e}"
    );
    let e = m(&good[..9]);
    assert!(e.contains("truncated"), "{e}");
    let e = m(&npy("<U8", false, "(3, 2)", &f8(&want)));
    assert!(
        e.contains("'<U8' is not read") && e.contains("astype"),
        "{e}"
    );
    let e = m(&npy(">f8", false, "(3, 2)", &f8(&want)));
    assert!(e.contains("big-endian"), "{e}");
    let e = m(&npy("<f8", false, "(6,)", &f8(&want)));
    assert!(e.contains("expected 2 dimensions"), "{e}");
    let e = m(&npy("<f8", false, "(1, 2, 3)", &f8(&want)));
    assert!(e.contains("expected 2 dimensions"), "{e}");
    let e = m(b"\x93NUMPY");
    assert!(e.contains("truncated"), "{e}");
    let e = message(load_dataset_with(&c, &opts(true, &[])).unwrap_err());
    assert!(e.contains("--header"), "{e}");
}

/// An `.npy` array with NaN reads as a table of real columns named by number, NaN missing,
/// with skipped columns left out; `--types` is refused for `.npy`, saying what to do.
#[test]
fn npy_files_with_nan_read_as_tables_with_missing_entries() {
    let dir = Scratch::new("npy-nan");
    let x = [1.0, f64::NAN, 3.0, 4.0, f64::NAN, f64::NAN, 7.0, 8.0, 9.0];
    let p = dir.file("m.npy", &npy("<f8", false, "(3, 3)", &f8(&x)));
    let Dataset::Table(t) = load_dataset_with(&p, &LoadOptions::default())
        .unwrap()
        .dataset
    else {
        panic!("NaN makes a table");
    };
    assert_eq!(t.missing_per_column(), vec![0, 2, 1]);
    let names: Vec<&str> = t.columns().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["1", "2", "3"]);
    let Dataset::Table(t) = load_dataset_with(&p, &opts(false, &["2"])).unwrap().dataset else {
        panic!("NaN makes a table");
    };
    let names: Vec<&str> = t.columns().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["1", "3"]);
    assert_eq!(t.value(2, 1), Some(9.0));
    let typed = LoadOptions {
        dense: DenseOptions {
            types: vec!["1:cat".to_string()],
            ..DenseOptions::default()
        },
        ..LoadOptions::default()
    };
    let e = message(load_dataset_with(&p, &typed).unwrap_err());
    assert!(
        e.contains("m.npy") && e.contains("--types") && e.contains("CSV"),
        "{e}"
    );
}

#[test]
fn gzip_files_read_as_what_they_hold() {
    let dir = Scratch::new("gzip");
    let text = b"x,y\n1,2\n3,4.5\n";
    let plain = dense(parse(text, &LoadOptions::default()).unwrap());
    let p = dir.file("x.csv.gz", &gz(text));
    assert_eq!(
        dense(load_dataset_with(&p, &LoadOptions::default()).unwrap()),
        plain
    );
    // Counts, labels, IDX and npy too; the format is detected after decompression.
    let docword = b"2\n3\n2\n1 1 2\n2 3 1\n";
    let p = dir.file("docword.x.txt.gz", &gz(docword));
    assert_eq!(
        load_dataset(&p, None).unwrap(),
        parse_dataset(docword, None).unwrap()
    );
    let p = dir.file("y.txt.gz", &gz(b"1\n2\n2\n"));
    assert_eq!(load_labels(&p, 3).unwrap(), [1, 2, 2]);
    let idx = b"\x00\x00\x08\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x02\x07\x09";
    let p = dir.file("images-idx3-ubyte.gz", &gz(idx));
    assert!(
        matches!(load_dataset(&p, None).unwrap(), Dataset::Dense(x) if x.values() == [7.0, 9.0])
    );
    let p = dir.file(
        "a.npy.gz",
        &gz(&npy("<i4", false, "(1, 2)", &[3, 0, 0, 0, 4, 0, 0, 0])),
    );
    assert_eq!(
        dense(load_dataset_with(&p, &LoadOptions::default()).unwrap()).2,
        [3.0, 4.0]
    );
    // Malformed: truncated, damaged, compressed twice.
    let full = gz(text);
    let e = message(parse(&full[..full.len() - 6], &LoadOptions::default()).unwrap_err());
    assert!(e.contains("not a complete gzip stream"), "{e}");
    let mut damaged = full.clone();
    damaged[12] ^= 0xff;
    assert!(parse(&damaged, &LoadOptions::default()).is_err());
    let e = message(parse(&gz(&full), &LoadOptions::default()).unwrap_err());
    assert!(e.contains("compressed twice"), "{e}");
}

#[test]
fn binary_input_to_a_text_reader_is_named_not_echoed() {
    let bytes = b"1 2\n3 4\n\x7fELF\x02\x01\x00\x00";
    let e = message(parse_dense(bytes).unwrap_err());
    assert!(
        e.contains("<input>:3") && e.contains("binary data") && e.contains("0x7f"),
        "{e}"
    );
    assert!(!e.contains("ELF"), "{e}");
    for parse in [parse_docword, |b: &[u8]| parse_ldac(b, None)] {
        let e = message(parse(b"3\n\x01\n").unwrap_err());
        assert!(e.contains("binary data"), "{e}");
    }
    let e = message(parse_labels(b"1\n\x1b[31m\n").unwrap_err());
    assert!(e.contains("binary data") && e.contains(":2"), "{e}");
}
