//! Nothing silently wrong, end to end: values that would overflow are refused at loading with
//! their place, no verb prints a non-finite result with exit status 0, resumes never restart a
//! chain silently, checkpoints are tamper-evident and survive one damaged write, and `--out`
//! never overwrites a run unasked.

use std::path::Path;

use serde_json::Value;

use crate::support::cli;
use cli::{fails_no_stdout, nrmm, ok, text, TempDir};

/// A small 2-D data set of `n` points on two well separated groups, with its labels.
fn small(dir: &TempDir, n: usize) -> (String, String) {
    let mut x = String::new();
    let mut y = String::new();
    for i in 0..n {
        let g = i % 2;
        let v = i as f64 * 0.37 % 1.0;
        x.push_str(&format!("{} {}\n", g as f64 * 10.0 + v, v * 2.0 - 1.0));
        y.push_str(&format!("{}\n", g + 1));
    }
    (dir.write("x.txt", &x), dir.write("y.txt", &y))
}

/// The flags of a checkpointed run of two chains on `x`.
fn checkpointed(x: &str, out: &str, sweeps: &str) -> Vec<String> {
    [
        "run",
        "--data",
        x,
        "--chains",
        "2",
        "--checkpoint-every",
        "10",
        "--sweeps",
        sweeps,
        "--seed",
        "3",
        "--out",
        out,
    ]
    .map(str::to_string)
    .to_vec()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn trace_rows(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .count()
        - 1
}

// ---------------------------------------------------------------------------------------------
// 1. Overflow.

#[test]
fn values_that_overflow_are_refused_where_they_are() {
    let dir = TempDir::new("overflow");
    let labels = dir.write("l.txt", "1\n1\n2\n2\n");
    for big in ["1e308", "1e200", "-3e160"] {
        let x = dir.write("big.txt", &format!("1 2\n3 4\n5 {big}\n0 1\n"));
        let said = fails_no_stdout(
            &[
                "loglik", "--data", &x, "--labels", &labels, "--nw-psi", "1,0,0,1", "--nw-xi",
                "0,0",
            ],
            1,
            &["big.txt:3", "value 2", "rescale"],
        );
        assert!(!said.contains("NaN"), "{said}");
        // Without explicit hyperparameters the message is the same (not a covariance puzzle).
        fails_no_stdout(
            &["loglik", "--data", &x, "--labels", &labels],
            1,
            &["big.txt:3", "rescale"],
        );
    }
    // Values at the limit's scale still work and give a finite answer.
    let x = dir.write("ok.txt", "1e100 2e100\n3e100 1e100\n5e100 6e100\n0 1e100\n");
    let out = ok(&[
        "loglik", "--data", &x, "--labels", &labels, "--json", "--kernel", "nw",
    ]);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert!(
        v["log_joint"].as_f64().expect("a number").is_finite(),
        "{out}"
    );
}

/// Hyperparameters whose products with the data overflow are refused too, naming the flag:
/// `--nw-xi 1e170` made the log joint `NaN`.
#[test]
fn hyperparameters_that_overflow_are_refused() {
    let dir = TempDir::new("nonfinite");
    let labels = dir.write("l.txt", "1\n1\n2\n2\n");
    let x = dir.write("x.txt", "1e140 2\n3 4\n5 6\n0 1\n");
    for xi in ["1e170,0", "0,-1e300"] {
        let said = fails_no_stdout(
            &[
                "loglik", "--data", &x, "--labels", &labels, "--nw-psi", "1,0,0,1", "--nw-xi", xi,
            ],
            1,
            &["--nw-xi", "rescale"],
        );
        assert!(!said.contains("NaN"), "{said}");
    }
    fails_no_stdout(
        &[
            "loglik",
            "--data",
            &x,
            "--labels",
            &labels,
            "--nw-psi",
            "1e305,0,0,1",
            "--nw-xi",
            "0,0",
        ],
        1,
        &["--nw-psi", "rescale"],
    );
}

// ---------------------------------------------------------------------------------------------
// 2. A resume that finds no checkpoint.

#[test]
fn a_resume_without_a_checkpoint_refuses() {
    let dir = TempDir::new("nocheckpoint");
    let (x, _) = small(&dir, 30);
    let a = dir.arg("a");
    ok(&strs(&checkpointed(&x, &a, "25")));
    for c in ["chain-1/checkpoint.json", "chain-1/checkpoint.prev.json"] {
        let _ = std::fs::remove_file(dir.0.join("a").join(c));
    }
    let said = fails_no_stdout(
        &["run", "--resume", &a, "--sweeps", "40"],
        1,
        &["chain 1", "no checkpoint", "--force"],
    );
    assert!(!said.contains("chain 0"), "{said}");
    // Nothing was touched: the trace of chain 1 still holds its 25 sweeps.
    assert_eq!(trace_rows(&dir.0.join("a/chain-1/trace.csv")), 25);
}

// ---------------------------------------------------------------------------------------------
// 3. Tamper-evident checkpoints, and the previous one kept.

fn checkpoint_path(dir: &TempDir, run: &str, c: u64) -> std::path::PathBuf {
    dir.0.join(format!("{run}/chain-{c}/checkpoint.json"))
}

#[test]
fn an_edited_checkpoint_is_corrupt() {
    let dir = TempDir::new("tamper");
    let (x, _) = small(&dir, 30);
    let a = dir.arg("a");
    ok(&strs(&checkpointed(&x, &a, "20")));
    let path = checkpoint_path(&dir, "a", 0);
    let own = std::fs::read_to_string(&path).expect("a checkpoint");
    assert!(own.contains("\"sweep\":20"), "{own}");
    // Without a previous checkpoint to fall back to, an edited one is refused as corrupt.
    let _ = std::fs::remove_file(dir.0.join("a/chain-0/checkpoint.prev.json"));
    std::fs::write(&path, own.replace("\"sweep\":20", "\"sweep\":7")).expect("edit");
    fails_no_stdout(
        &["run", "--resume", &a, "--sweeps", "30"],
        1,
        &["chain-0", "checkpoint.json", "corrupt"],
    );
    // So is a truncated one.
    std::fs::write(&path, &own[..own.len() / 2]).expect("truncate");
    fails_no_stdout(
        &["run", "--resume", &a, "--sweeps", "30"],
        1,
        &["checkpoint.json", "corrupt"],
    );
    std::fs::write(&path, &own).expect("restore");
    ok(&["run", "--resume", &a, "--sweeps", "30"]);
}

/// One damaged checkpoint write loses nothing: the resume falls back to the previous
/// checkpoint, says so, and the run then is the run that never failed.
#[test]
fn a_damaged_checkpoint_falls_back_to_the_previous_one() {
    let dir = TempDir::new("fallback");
    let (x, _) = small(&dir, 30);
    let (a, b) = (dir.arg("a"), dir.arg("b"));
    ok(&strs(&checkpointed(&x, &a, "25")));
    let prev = dir.0.join("a/chain-0/checkpoint.prev.json");
    assert!(prev.is_file(), "the previous checkpoint is kept");
    std::fs::write(checkpoint_path(&dir, "a", 0), "{\"format\":\"nrmm-che").expect("damage");
    let out = nrmm(&["run", "--resume", &a, "--sweeps", "40"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("chain 0") && stderr.contains("corrupt") && stderr.contains("sweep 10"),
        "{stderr}"
    );
    ok(&strs(&checkpointed(&x, &b, "40")));
    for c in 0..2 {
        let rows = |run: &str| -> Vec<String> {
            std::fs::read_to_string(dir.0.join(format!("{run}/chain-{c}/trace.csv")))
                .expect("a trace")
                .lines()
                .map(|l| {
                    let mut f: Vec<&str> = l.split(',').collect();
                    f.remove(1);
                    f.join(",")
                })
                .collect()
        };
        assert_eq!(rows("a"), rows("b"), "chain {c}");
        assert_eq!(
            std::fs::read(dir.0.join(format!("a/chain-{c}/labels.txt"))).expect("labels"),
            std::fs::read(dir.0.join(format!("b/chain-{c}/labels.txt"))).expect("labels"),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 4. `--out` of an existing run.

#[test]
fn out_never_overwrites_a_run_unasked() {
    let dir = TempDir::new("overwrite");
    let (x, _) = small(&dir, 20);
    let a = dir.arg("a");
    ok(&strs(&checkpointed(&x, &a, "10")));
    let before = std::fs::read(dir.0.join("a/chain-1/trace.csv")).expect("a trace");
    fails_no_stdout(
        &["run", "--data", &x, "--sweeps", "5", "--out", &a],
        1,
        &["already holds a run", "--force", "--resume"],
    );
    assert_eq!(
        std::fs::read(dir.0.join("a/chain-1/trace.csv")).expect("a trace"),
        before
    );
    // --force replaces the run and leaves nothing of the old one behind.
    std::fs::write(dir.0.join("a/notes.txt"), "mine").expect("a user file");
    ok(&[
        "run", "--data", &x, "--sweeps", "5", "--chains", "1", "--out", &a, "--force",
    ]);
    assert!(!dir.0.join("a/chain-1").exists(), "a stale chain-1/");
    assert!(!dir.0.join("a/chain-0/checkpoint.json").exists());
    assert_eq!(trace_rows(&dir.0.join("a/chain-0/trace.csv")), 5);
    assert_eq!(dir.read("a/notes.txt"), "mine");
    // An empty directory, or one that holds no run, is fine without --force.
    std::fs::create_dir_all(dir.0.join("empty")).expect("a directory");
    ok(&[
        "run",
        "--data",
        &x,
        "--sweeps",
        "3",
        "--out",
        &dir.arg("empty"),
    ]);
}

// ---------------------------------------------------------------------------------------------
// 5. Messages that misled.

#[test]
fn messages_say_what_is_wrong() {
    let dir = TempDir::new("messages");
    let one = dir.write("one.txt", "1 2\n");
    let said = fails_no_stdout(
        &[
            "run",
            "--data",
            &one,
            "--sweeps",
            "3",
            "--out",
            &dir.arg("r1"),
        ],
        1,
        &["at least 2 points", "--nw-xi", "--nw-psi"],
    );
    assert!(!said.contains("empty input"), "{said}");
    // Two points in two dimensions: the default Ψ falls back to the diagonal covariance.
    let two = dir.write("two.txt", "1 2\n3 5\n");
    ok(&[
        "run",
        "--kernel",
        "nw",
        "--data",
        &two,
        "--sweeps",
        "3",
        "--out",
        &dir.arg("r2"),
    ]);
    // Binary input is named as such, and none of its bytes reach the terminal.
    std::fs::write(
        dir.0.join("bin.dat"),
        b"\x7fELF\x02\x01\x01\0\0\0\x03\0>\0\x01\0",
    )
    .unwrap();
    let labels = dir.write("l.txt", "1\n");
    let said = fails_no_stdout(
        &["loglik", "--data", &dir.arg("bin.dat"), "--labels", &labels],
        1,
        &["bin.dat:1", "binary data", "0x7f"],
    );
    assert!(
        said.chars().all(|c| !c.is_control() || c == '\n'),
        "{said:?}"
    );
    let five = dir.write("five.txt", "1 2\n3 5\n0 1\n2 2\n4 1\n");
    fails_no_stdout(
        &["loglik", "--data", &five, "--labels", &dir.arg("bin.dat")],
        1,
        &["binary data"],
    );
    let help = ok(&["run", "--help"]);
    assert!(help.contains("required unless --resume"), "{help}");
    assert!(help.contains("--force"), "{help}");
    let (x, _) = small(&dir, 12);
    let out = ok(&[
        "run",
        "--data",
        &x,
        "--sweeps",
        "20",
        "--out",
        &dir.arg("r3"),
    ]);
    assert!(!out.contains("1 sweeps apart"), "{out}");
    assert!(out.contains("a draw from every sweep"), "{out}");
    let out = ok(&[
        "run",
        "--data",
        &x,
        "--sweeps",
        "2",
        "--out",
        &dir.arg("r4"),
    ]);
    assert!(out.contains("burn-in of 1 sweep per chain"), "{out}");
    let out = ok(&["sva", "--data", &x]);
    assert!(out.contains("of them holding points"), "{out}");
}

// ---------------------------------------------------------------------------------------------
// 6. The inputs people have.

/// Runs `nrmm args` with `input` on standard input.
fn with_stdin(args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new(cli::BIN)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("nrmm starts");
    child
        .stdin
        .take()
        .expect("a pipe")
        .write_all(input)
        .expect("write standard input");
    child.wait_with_output().expect("nrmm ends")
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).expect("compress");
    enc.finish().expect("compress")
}

#[test]
fn csv_npy_gzip_and_standard_input_give_the_same_answer() {
    let dir = TempDir::new("formats");
    let (x, labels) = small(&dir, 12);
    let text = std::fs::read_to_string(&x).expect("the data");
    let reference = ok(&["loglik", "--data", &x, "--labels", &labels]);
    // CSV with a header and an id column, skipped by name.
    let mut csv = String::from("id,\"width\",height\n");
    for (i, line) in text.lines().enumerate() {
        csv.push_str(&format!("p{i},{}\n", line.replace(' ', ",")));
    }
    let c = dir.write("x.csv", &csv);
    let said = ok(&[
        "loglik",
        "--data",
        &c,
        "--skip-columns",
        "id",
        "--labels",
        &labels,
    ]);
    assert_eq!(said, reference);
    // The same CSV compressed, and on standard input.
    std::fs::write(dir.0.join("x.csv.gz"), gz(csv.as_bytes())).expect("write");
    let said = ok(&[
        "loglik",
        "--data",
        &dir.arg("x.csv.gz"),
        "--skip-columns",
        "1",
        "--labels",
        &labels,
    ]);
    assert_eq!(said, reference);
    let out = with_stdin(
        &[
            "loglik",
            "--data",
            "-",
            "--skip-columns",
            "id",
            "--labels",
            &labels,
        ],
        csv.as_bytes(),
    );
    assert!(out.status.success(), "{}", text_of(&out.stderr));
    assert_eq!(text_of(&out.stdout), reference);
    // NumPy, C order.
    let values: Vec<f64> = text
        .split_whitespace()
        .map(|v| v.parse().expect("a number"))
        .collect();
    let mut header = "{'descr': '<f8', 'fortran_order': False, 'shape': (12, 2), }".to_string();
    while !(11 + header.len()).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
    npy.extend_from_slice(header.as_bytes());
    npy.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(dir.0.join("x.npy"), &npy).expect("write");
    assert_eq!(
        ok(&["loglik", "--data", &dir.arg("x.npy"), "--labels", &labels]),
        reference
    );
    std::fs::write(dir.0.join("cut.npy"), &npy[..npy.len() - 8]).expect("write");
    fails_no_stdout(
        &["loglik", "--data", &dir.arg("cut.npy"), "--labels", &labels],
        1,
        &["cut.npy", "truncated .npy file"],
    );
    // A run keeps the header's names of the columns it used, and resumes from standard input.
    let run = dir.arg("run");
    let out = with_stdin(
        &[
            "run",
            "--data",
            "-",
            "--skip-columns",
            "id",
            "--sweeps",
            "10",
            "--checkpoint-every",
            "5",
            "--out",
            &run,
        ],
        csv.as_bytes(),
    );
    assert!(out.status.success(), "{}", text_of(&out.stderr));
    let summary: Value = serde_json::from_str(&dir.read("run/summary.json")).expect("JSON");
    assert_eq!(summary["columns"], serde_json::json!(["width", "height"]));
    let out = with_stdin(&["run", "--resume", &run, "--sweeps", "20"], csv.as_bytes());
    assert!(out.status.success(), "{}", text_of(&out.stderr));
    let out = with_stdin(
        &["run", "--resume", &run, "--sweeps", "30"],
        csv.replacen("p0,", "p0,1", 1).as_bytes(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out.stderr));
    assert!(text_of(&out.stderr).contains("same data"));
}

fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_documents_every_input_format() {
    for verb in ["run", "loglik", "compare"] {
        let help = ok(&[verb, "--help"]);
        for needle in [
            "--header",
            "--skip-columns",
            "npy",
            "gzip",
            "standard input",
        ] {
            assert!(
                help.contains(needle),
                "{verb} --help lacks {needle}: {help}"
            );
        }
    }
    fails_no_stdout(
        &["loglik", "--labels", "l.txt", "--header"],
        1,
        &["--header needs --data"],
    );
}
