//! `nrmm sva` and `nrmm run --init sva` end to end: the files and the summary of a fit on
//! dense and count data, held-out and training predictive densities, agreement with true
//! labels, and every user mistake ending as one `error:` line on standard error with a
//! non-zero exit status, never a panic.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_nrmm");

/// A fresh directory under the system temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "nrmm-sva-cli-{}-{tag}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temporary directory");
        TempDir(dir)
    }

    fn arg(&self, name: &str) -> String {
        self.0.join(name).to_str().expect("UTF-8 path").to_string()
    }

    fn write(&self, name: &str, text: &str) -> String {
        std::fs::write(self.0.join(name), text).expect("write a test file");
        self.arg(name)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.0.join(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn nrmm(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the nrmm binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(args: &[&str]) -> String {
    let out = nrmm(args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "nrmm {args:?} failed: {stderr}");
    assert!(stderr.is_empty(), "nrmm {args:?} wrote to stderr: {stderr}");
    stdout
}

/// Asserts that `nrmm args` fails with `status` and one `error:` line containing every
/// fragment, without a panic.
fn fails(args: &[&str], status: i32, fragments: &[&str]) {
    let out = nrmm(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(status), "nrmm {args:?}: {stderr}");
    assert!(
        !stderr.contains("panicked"),
        "nrmm {args:?} panicked: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    for f in fragments {
        assert!(stderr.contains(f), "nrmm {args:?}: {stderr:?} lacks {f:?}");
    }
}

/// A 2-D data set of three well-separated blobs (with its 1-based labels).
fn blobs(dir: &TempDir) -> (String, String) {
    let mut x = String::new();
    let mut y = String::new();
    let centres = [(0.0, 0.0), (30.0, 0.0), (0.0, 30.0)];
    for i in 0..150 {
        let (cx, cy) = centres[i % 3];
        let a = ((i * 37) % 17) as f64 / 17.0 - 0.5;
        let b = ((i * 53) % 19) as f64 / 19.0 - 0.5;
        x.push_str(&format!("{} {}\n", cx + a, cy + b));
        y.push_str(&format!("{}\n", i % 3 + 1));
    }
    (dir.write("x.txt", &x), dir.write("y.txt", &y))
}

#[test]
fn sva_writes_labels_and_summary() {
    let dir = TempDir::new("dense");
    let (x, y) = blobs(&dir);
    let out = dir.arg("fit");
    let stdout = ok(&[
        "sva",
        "--data",
        &x,
        "--prune-merge",
        "--shuffle-seed",
        "3",
        "--labels",
        &y,
        "--out",
        &out,
    ]);
    assert!(stdout.contains("SVA-PM over 150 points"), "{stdout}");
    assert!(stdout.contains("3 components"), "{stdout}");
    assert!(stdout.contains("ARI 1.0000"), "{stdout}");
    assert!(stdout.contains("(training, 150 points)"), "{stdout}");
    let summary: Value = serde_json::from_str(&dir.read("fit/summary.json")).unwrap();
    assert_eq!(summary["method"], "sva-pm");
    assert_eq!(summary["n_components"], 3);
    assert_eq!(summary["weights"].as_array().unwrap().len(), 3);
    assert_eq!(summary["ari"], 1.0);
    assert_eq!(summary["predictive"]["on"], "training");
    assert!(summary["predictive"]["mean_ln_density"]
        .as_f64()
        .unwrap()
        .is_finite());
    assert!(summary["seconds"].as_f64().unwrap() >= 0.0);
    let labels: Vec<usize> = dir
        .read("fit/labels.txt")
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(labels.len(), 150);
    assert!(labels.iter().all(|&l| l < 3));
    // The same fit again: identical labels.
    let again = dir.arg("again");
    ok(&[
        "sva",
        "--data",
        &x,
        "--prune-merge",
        "--shuffle-seed",
        "3",
        "--out",
        &again,
    ]);
    assert_eq!(dir.read("fit/labels.txt"), dir.read("again/labels.txt"));
}

#[test]
fn sva_reports_a_heldout_density_and_runs_plain_sva() {
    let dir = TempDir::new("heldout");
    let (x, _) = blobs(&dir);
    let h = dir.write("h.txt", "0.1 0.2\n30.2 -0.1\n");
    let stdout = ok(&["sva", "--data", &x, "--heldout", &h, "--epsilon", "0.2"]);
    assert!(stdout.starts_with("SVA over 150 points"), "{stdout}");
    assert!(stdout.contains("(heldout, 2 points)"), "{stdout}");
}

#[test]
fn sva_clusters_count_data() {
    let dir = TempDir::new("counts");
    let docs = dir.arg("docword.txt");
    let labels = dir.arg("truth.txt");
    ok(&[
        "generate",
        "counts",
        "--n",
        "120",
        "--d",
        "200",
        "--k",
        "3",
        "--seed",
        "5",
        "--out",
        &docs,
        "--labels-out",
        &labels,
    ]);
    let stdout = ok(&[
        "sva",
        "--data",
        &docs,
        "--prune-merge",
        "--alpha",
        "0.5",
        "--labels",
        &labels,
    ]);
    assert!(stdout.contains("over 120 points"), "{stdout}");
    assert!(stdout.contains("ARI"), "{stdout}");
}

#[test]
fn run_starts_from_an_sva_fit() {
    let dir = TempDir::new("init");
    let (x, _) = blobs(&dir);
    let out = dir.arg("run");
    ok(&[
        "run", "--data", &x, "--init", "sva", "--sweeps", "5", "--seed", "2", "--out", &out,
    ]);
    let settings = dir.read("run/run.json");
    assert!(settings.contains("\"sva\""), "{settings}");
}

#[test]
fn every_mistake_is_one_line() {
    let dir = TempDir::new("errors");
    let (x, y) = blobs(&dir);
    fails(&["sva"], 2, &["--data"]);
    fails(
        &["sva", "--data", &x, "--prune-threshold", "0.1"],
        2,
        &["--prune-merge"],
    );
    fails(
        &["sva", "--data", &x, "--merge-threshold", "0.1"],
        2,
        &["--prune-merge"],
    );
    fails(&["sva", "--data", &x, "--epsilon", "x"], 2, &["--epsilon"]);
    fails(
        &["sva", "--data", &x, "--epsilon", "0"],
        1,
        &["--epsilon", "(0, 1)"],
    );
    fails(&["sva", "--data", &x, "--epsilon", "1"], 1, &["--epsilon"]);
    fails(&["sva", "--data", &x, "--alpha", "-1"], 1, &["--alpha"]);
    fails(
        &[
            "sva",
            "--data",
            &x,
            "--prune-merge",
            "--prune-threshold",
            "1",
        ],
        1,
        &["--prune-threshold", "[0, 1)"],
    );
    fails(
        &[
            "sva",
            "--data",
            &x,
            "--prune-merge",
            "--merge-threshold",
            "2",
        ],
        1,
        &["--merge-threshold", "[0, 1]"],
    );
    fails(
        &[
            "sva",
            "--data",
            &x,
            "--prune-merge",
            "--check-interval",
            "0",
        ],
        1,
        &["--check-interval"],
    );
    fails(
        &["sva", "--data", &x, "--prior", "nggp"],
        1,
        &["--prior nggp"],
    );
    fails(&["sva", "--data", &x, "--sigma", "0.3"], 1, &["--sigma"]);
    fails(&["sva", "--data", &x, "--u", "2"], 1, &["--u"]);
    fails(
        &["sva", "--data", &x, "--hyperpriors"],
        1,
        &["--hyperpriors"],
    );
    fails(&["sva", "--data", &x, "--beta", "0.5"], 1, &["--beta"]);
    fails(
        &["sva", "--data", &dir.arg("missing.txt")],
        1,
        &["missing.txt"],
    );
    let short = dir.write("short.txt", "1\n2\n");
    fails(&["sva", "--data", &x, "--labels", &short], 1, &["labels"]);
    fails(
        &["sva", "--data", &x, "--labels", &dir.arg("nolabels.txt")],
        1,
        &["nolabels.txt"],
    );
    let wide = dir.write("wide.txt", "1 2 3\n");
    fails(
        &["sva", "--data", &x, "--heldout", &wide],
        1,
        &["dimension"],
    );
    let docs = dir.write("docs.ldac", "2 0:1 3:2\n1 1:4\n");
    fails(
        &["sva", "--data", &x, "--heldout", &docs, "--format", "dense"],
        1,
        &[],
    );
    fails(
        &["sva", "--data", &docs, "--heldout", &x],
        1,
        &["--heldout", "real vectors"],
    );
    let blocker = dir.write("file", "");
    fails(
        &[
            "sva",
            "--data",
            &x,
            "--labels",
            &y,
            "--out",
            &format!("{blocker}/sub"),
        ],
        1,
        &[],
    );
    fails(
        &[
            "run",
            "--data",
            &x,
            "--init",
            "svaa",
            "--out",
            &dir.arg("r"),
        ],
        2,
        &["sva"],
    );
}
