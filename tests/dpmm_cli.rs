//! DPMM.jl's samplers on the `nrmm` command line: `--sampler subcluster`, `subcluster-dpmm`,
//! `direct`, `quasi-direct` and `quasi-collapsed` in `run` and `check-exact`, and the
//! rejection of NGGP by the samplers that support only the Dirichlet process.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use nrmm::data::generate::data_set_b;
use nrmm::data::load;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_nrmm");

/// A fresh directory under the system temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "nrmm-dpmm-cli-{}-{tag}-{}",
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

/// Runs `nrmm args`, asserts success with a silent standard error, returns standard output.
fn ok(args: &[&str]) -> String {
    let out = nrmm(args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "nrmm {args:?} failed: {stderr}");
    assert!(stderr.is_empty(), "nrmm {args:?} wrote to stderr: {stderr}");
    stdout
}

/// Runs `nrmm args`, asserts the exit status and one `error:` line containing every `needle`.
fn fails(args: &[&str], status: i32, needles: &[&str]) {
    let out = nrmm(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(status), "nrmm {args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{stderr} lacks {n}");
    }
}

/// Data set B written as a dense file.
fn set_b(dir: &TempDir) -> String {
    let path = dir.arg("b.txt");
    load::write_dense(&path, &data_set_b()).unwrap();
    path
}

fn check_exact_json(args: &[&str]) -> (f64, f64) {
    let mut all = vec!["check-exact", "--json", "--sweeps", "20000", "--seed", "4"];
    all.extend_from_slice(args);
    let v: Value = serde_json::from_str(&ok(&all)).unwrap();
    (
        v["tv"].as_f64().unwrap(),
        v["tv_noise_floor"].as_f64().unwrap(),
    )
}

/// `nrmm run` of `sampler` on data set B: two chains of 30 sweeps, labels and summary written.
fn run_sampler(sampler: &str) {
    let dir = TempDir::new(sampler);
    let data = set_b(&dir);
    let out = dir.arg("out");
    let stdout = ok(&[
        "run",
        "--data",
        &data,
        "--sampler",
        sampler,
        "--sweeps",
        "30",
        "--chains",
        "2",
        "--seed",
        "3",
        "--out",
        &out,
    ]);
    assert!(stdout.contains("chain 1: 30 sweeps"), "{stdout}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{out}/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["sampler"], sampler);
    assert_eq!(
        load::load_labels(format!("{out}/chain-0/labels.txt"), 7)
            .unwrap()
            .len(),
        7
    );
}

/// `subcluster`: runs, and `check-exact` puts it at the noise floor.
#[test]
fn subcluster_runs_and_is_exact() {
    run_sampler("subcluster");
    let (tv, floor) = check_exact_json(&["--sampler", "subcluster"]);
    assert!(tv < 2.0 * floor, "subcluster: TV {tv}, floor {floor}");
}

/// `subcluster-dpmm`: runs, and `check-exact` shows its bias.
#[test]
fn subcluster_dpmm_runs_and_is_biased() {
    run_sampler("subcluster-dpmm");
    let (tv, floor) = check_exact_json(&["--sampler", "subcluster-dpmm"]);
    assert!(tv > 3.0 * floor, "subcluster-dpmm: TV {tv}, floor {floor}");
}

/// `direct`: runs; NGGP is refused with one error line.
#[test]
fn direct_runs_and_refuses_nggp() {
    run_sampler("direct");
    let dir = TempDir::new("direct-nggp");
    let data = set_b(&dir);
    let out = dir.arg("out");
    fails(
        &[
            "run",
            "--data",
            &data,
            "--sampler",
            "direct",
            "--prior",
            "nggp",
            "--sweeps",
            "5",
            "--out",
            &out,
        ],
        1,
        &["direct", "NGGP"],
    );
}

/// `quasi-direct`: runs, also under NGGP.
#[test]
fn quasi_direct_runs() {
    run_sampler("quasi-direct");
    let (tv, _) = check_exact_json(&["--sampler", "quasi-direct", "--prior", "nggp"]);
    assert!(tv.is_finite());
}

/// `quasi-collapsed`: runs and `check-exact` reports a finite TV.
#[test]
fn quasi_collapsed_runs() {
    run_sampler("quasi-collapsed");
    let (tv, _) = check_exact_json(&["--sampler", "quasi-collapsed"]);
    assert!(tv.is_finite());
}
