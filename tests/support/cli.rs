//! Shared helpers of the command-line tests: running the `nrmm` binary, temporary
//! directories, and the assertions every verb's tests make (success with a silent standard
//! error; failure as one `error:` line with the documented exit status, never a panic).

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use nrmm::data::generate::data_set_b;
use nrmm::data::load;
use serde_json::Value;

/// The `nrmm` binary Cargo built for this test.
pub const BIN: &str = env!("CARGO_BIN_EXE_nrmm");

/// A fresh directory under the system temporary directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty directory named after the process, `tag` and a counter, so parallel tests
    /// never share one.
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "nrmm-cli-{}-{tag}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temporary directory");
        TempDir(dir)
    }

    /// The path of `name` inside the directory, as a command-line argument.
    pub fn arg(&self, name: &str) -> String {
        self.0
            .join(name)
            .to_str()
            .expect("temporary paths are UTF-8")
            .to_string()
    }

    /// Writes `text` to `name` and returns its path as an argument.
    pub fn write(&self, name: &str, text: &str) -> String {
        std::fs::write(self.0.join(name), text).expect("write a test file");
        self.arg(name)
    }

    /// The contents of `name` inside the directory.
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.0.join(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `nrmm args` with no standard input and returns its output.
pub fn nrmm<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the nrmm binary runs")
}

/// Bytes of an output stream as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Standard error without the line `run` opens with (`run: DP(α = 1) mixture, ...`: the model,
/// sampler, chains and budget it is about to run).
pub fn without_run_header(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with("run: "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Runs `nrmm args`, asserts success with nothing on standard error but `run`'s header (no
/// progress bar off a terminal), and returns standard output.
pub fn ok(args: &[&str]) -> String {
    let out = nrmm(args);
    let (stdout, stderr) = (text(&out.stdout), without_run_header(&text(&out.stderr)));
    assert!(
        out.status.success(),
        "nrmm {args:?} failed ({}): {stderr}",
        out.status
    );
    assert!(stderr.is_empty(), "nrmm {args:?} wrote to stderr: {stderr}");
    stdout
}

/// Asserts that `nrmm args` fails with exit status `code` and exactly one line on standard
/// error, `error: ...`, containing every needle, without a panic; returns the line.
pub fn fails(args: &[&str], code: i32, needles: &[&str]) -> String {
    failure(args, code, needles).1
}

/// [`fails`], also asserting that nothing was written to standard output.
pub fn fails_no_stdout(args: &[&str], code: i32, needles: &[&str]) -> String {
    let (out, stderr) = failure(args, code, needles);
    assert!(
        out.stdout.is_empty(),
        "nrmm {args:?} wrote to stdout: {}",
        text(&out.stdout)
    );
    stderr
}

fn failure(args: &[&str], code: i32, needles: &[&str]) -> (Output, String) {
    let out = nrmm(args);
    let stderr = without_run_header(&text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(code),
        "nrmm {args:?}: status {} with stderr {stderr}",
        out.status
    );
    assert!(
        !stderr.contains("panicked"),
        "nrmm {args:?} panicked: {stderr}"
    );
    assert_eq!(
        stderr.lines().count(),
        1,
        "nrmm {args:?}: not one line: {stderr}"
    );
    assert!(stderr.starts_with("error: "), "nrmm {args:?}: {stderr}");
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "nrmm {args:?}: {stderr:?} lacks {needle:?}"
        );
    }
    (out, stderr)
}

/// Data set B (MATH §5.3) written as a dense file in `dir`; returns its path.
pub fn set_b(dir: &TempDir) -> String {
    let path = dir.arg("b.txt");
    load::write_dense(&path, &data_set_b()).expect("write data set B");
    path
}

/// `nrmm check-exact --json` over 20000 sweeps (seed 4) with `args` appended; returns the
/// total variation distance and its noise floor.
pub fn check_exact_json(args: &[&str]) -> (f64, f64) {
    let mut all = vec!["check-exact", "--json", "--sweeps", "20000", "--seed", "4"];
    all.extend_from_slice(args);
    let v: Value = serde_json::from_str(&ok(&all)).expect("check-exact prints JSON");
    (
        v["tv"].as_f64().expect("tv"),
        v["tv_noise_floor"].as_f64().expect("tv_noise_floor"),
    )
}
