//! `nrmm run --data-parallel` on the command line: every flag it does not implement refused by
//! name, a stopped run continued to the same chain, a continuation with other settings
//! refused; in the build with the feature `mpi` (run by `.ci/mpi-identity`), the same chain on
//! two ranks, and a stop or the death of one rank leaving a checkpoint that continues to the
//! same chain.

use std::process::{Command, Stdio};

use crate::support::cli;
use cli::{fails, ok, TempDir, BIN};

/// 9000 points of a 2-D mixture: three reduction blocks of 4096 (two ranks hold one and two).
fn data(dir: &TempDir) -> String {
    let x = dir.arg("x.txt");
    ok(&[
        "generate", "gaussian", "--n", "9000", "--d", "2", "--alpha", "2", "--seed", "7", "--out",
        &x,
    ]);
    x
}

/// The flags of every run here, before `--sweeps`, `--out` and any extra.
fn flags(x: &str) -> Vec<String> {
    [
        "run",
        "--data-parallel",
        "--sampler",
        "subcluster",
        "--block",
        "4096",
        "--proposals",
        "3",
        "--launch-scans",
        "3",
        "--seed",
        "5",
        "--data",
        x,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn args<'a>(base: &'a [String], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter()
        .map(String::as_str)
        .chain(extra.iter().copied())
        .collect()
}

/// Every label and every trace column but the timings and byte counts: what must agree
/// between two runs of the same chain.
fn fingerprint(out: &str) -> String {
    let trace = std::fs::read_to_string(format!("{out}/trace.tsv")).expect("trace.tsv");
    let mut text: String = trace
        .lines()
        .map(|l| l.split('\t').take(5).collect::<Vec<_>>().join("\t") + "\n")
        .collect();
    text.push_str(&std::fs::read_to_string(format!("{out}/labels.txt")).expect("labels.txt"));
    text
}

/// The sweep of the checkpoint in `out`.
fn checkpoint_sweep(out: &str) -> u64 {
    let text =
        std::fs::read_to_string(format!("{out}/checkpoint/manifest.json")).expect("manifest");
    let m: serde_json::Value = serde_json::from_str(&text).expect("manifest JSON");
    m["sweep"].as_u64().expect("sweep")
}

#[test]
fn flags_it_does_not_implement_are_refused_by_name() {
    let dir = TempDir::new("dp-refuse");
    let x = data(&dir);
    let base = flags(&x);
    let out = dir.arg("out");
    let cases: &[(&[&str], &[&str])] = &[
        (&["--chains", "4"], &["--chains", "one chain"]),
        (&["--chain-offset", "2"], &["--chain-offset"]),
        (&["--thin", "2"], &["--thin"]),
        (&["--burn-in", "3"], &["--burn-in"]),
        (&["--init", "sva"], &["--init", "--init single"]),
        (
            &["--gibbs-sweeps", "2"],
            &["--gibbs-sweeps", "--launch-scans"],
        ),
        (&["--global-moves", "3"], &["--global-moves"]),
        (&["--kernel", "diag"], &["--kernel diag", "--kernel nw"]),
        (&["--kernel", "md"], &["--kernel md"]),
        (&["--nw-r", "0.5"], &["--nw-r", "scaled defaults"]),
        (
            &["--nw-defaults", "reference"],
            &["--nw-defaults reference"],
        ),
        (&["--kernel-hyperpriors"], &["--kernel-hyperpriors"]),
        (&["--beta", "0.5"], &["--beta", "Multinomial-Dirichlet"]),
        (&["--header"], &["--header"]),
        (&["--skip-columns", "1"], &["--skip-columns"]),
        (&["--format", "npy"], &["--format", "dense"]),
    ];
    for (extra, needles) in cases {
        let mut a = args(&base, &["--sweeps", "2", "--out", &out]);
        a.extend_from_slice(extra);
        let line = fails(&a, 1, needles);
        assert!(line.contains("--data-parallel"), "{line}");
    }
    fails(
        &["run", "--data-parallel", "--resume", &out],
        1,
        &["--resume", "--continue"],
    );
    // Without --sweeps: a time budget would stop the ranks at different sweeps.
    let a = args(&base, &["--seconds", "2", "--out", &out]);
    fails(&a, 1, &["--seconds", "--sweeps"]);
    // Another sampler, and data it cannot read.
    let mut a = args(&base, &["--sweeps", "2", "--out", &out]);
    a[3] = "sams";
    fails(&a, 1, &["--sampler sams", "--sampler subcluster"]);
    for data in ["-", "x.npy", "x.txt.gz"] {
        let mut a = args(&base, &["--sweeps", "2", "--out", &out]);
        let at = a.iter().position(|&s| s == x).expect("--data");
        a[at] = data;
        fails(&a, 1, &["--data", data]);
    }
    assert!(
        !dir.0.join("out").exists(),
        "a refused run wrote its output"
    );
    // A directory of a run without --data-parallel is not mixed with this run's files.
    dir.write("run.json", "{}");
    let here = dir.0.to_str().expect("UTF-8 path");
    let a = args(&base, &["--sweeps", "2", "--out", here, "--force"]);
    fails(&a, 1, &["without --data-parallel", "another --out"]);
}

/// Data-parallel runs take the Pitman-Yor and MFM priors (fixed, and the MFM's `γ` resampled),
/// record them, and a continued run is the uninterrupted chain.
#[test]
fn the_gibbs_type_priors_run_data_parallel() {
    let dir = TempDir::new("dp-gibbs-type");
    let x = data(&dir);
    let base = flags(&x);
    for (name, prior) in [
        (
            "py",
            &["--prior", "py", "--alpha", "-0.2", "--sigma", "0.4"][..],
        ),
        (
            "mfm",
            &[
                "--prior",
                "mfm",
                "--gamma",
                "0.5",
                "--k-prior",
                "poisson:3",
                "--hyperpriors",
            ][..],
        ),
    ] {
        let (whole, part) = (dir.arg(&format!("{name}-whole")), dir.arg(name));
        let mut a = args(&base, &["--sweeps", "6", "--out", &whole]);
        a.extend_from_slice(prior);
        ok(&a);
        let trace = std::fs::read_to_string(format!("{whole}/trace.tsv")).expect("trace");
        assert!(trace.lines().count() > 6, "{name}: {trace}");
        let mut a = args(
            &base,
            &["--sweeps", "3", "--checkpoint-every", "3", "--out", &part],
        );
        a.extend_from_slice(prior);
        ok(&a);
        let mut a = args(&base, &["--sweeps", "6", "--continue", "--out", &part]);
        a.extend_from_slice(prior);
        ok(&a);
        assert_eq!(fingerprint(&part), fingerprint(&whole), "{name}");
    }
}

#[test]
fn a_continued_run_is_the_uninterrupted_chain_and_other_settings_are_refused() {
    let dir = TempDir::new("dp-continue");
    let x = data(&dir);
    let base = flags(&x);
    let (whole, parted) = (dir.arg("whole"), dir.arg("parted"));
    let stdout = ok(&args(&base, &["--sweeps", "10", "--out", &whole]));
    assert!(
        stdout.contains("9000 points on 1 ranks, 10 sweeps"),
        "{stdout}"
    );
    ok(&args(
        &base,
        &["--sweeps", "4", "--checkpoint-every", "2", "--out", &parted],
    ));
    assert_eq!(checkpoint_sweep(&parted), 4);
    // The directory holds a run: neither started again nor replaced without being asked.
    fails(
        &args(&base, &["--sweeps", "4", "--out", &parted]),
        1,
        &["--continue", "--force"],
    );
    for (flag, value, needle) in [
        ("--seed", "6", "--seed 6"),
        ("--proposals", "2", "--proposals 2"),
        ("--alpha", "3", "prior"),
    ] {
        let mut a = args(&base, &["--sweeps", "10", "--out", &parted, "--continue"]);
        match a.iter().position(|&s| s == flag) {
            Some(at) => a[at + 1] = value,
            None => a.extend_from_slice(&[flag, value]),
        }
        fails(&a, 1, &["--continue must repeat", needle]);
    }
    ok(&args(
        &base,
        &[
            "--sweeps",
            "10",
            "--out",
            &parted,
            "--continue",
            "--checkpoint-every",
            "2",
        ],
    ));
    assert_eq!(fingerprint(&parted), fingerprint(&whole));
    fails(
        &args(
            &base,
            &["--sweeps", "10", "--out", &dir.arg("none"), "--continue"],
        ),
        1,
        &["no checkpoint", "without --continue"],
    );
    ok(&args(&base, &["--sweeps", "3", "--out", &whole, "--force"]));
    assert_eq!(checkpoint_sweep(&whole), 3);
}

/// In a build without MPI, processes started by mpirun would each run the whole chain.
#[cfg(not(feature = "mpi"))]
#[test]
fn without_the_mpi_feature_several_launched_processes_are_refused() {
    let dir = TempDir::new("dp-nompi");
    let x = data(&dir);
    let base = flags(&x);
    let out = dir.arg("out");
    let res = Command::new(BIN)
        .args(args(&base, &["--sweeps", "2", "--out", &out]))
        .env("OMPI_COMM_WORLD_SIZE", "3")
        .stdin(Stdio::null())
        .output()
        .expect("nrmm runs");
    let stderr = cli::text(&res.stderr);
    assert_eq!(res.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("without the cargo feature mpi") && stderr.contains("3 processes"));
}

/// `mpirun` with the flags this machine needs (more ranks than cores; as root in CI).
#[cfg(feature = "mpi")]
fn mpirun(ranks: usize) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["--oversubscribe", "-np", &ranks.to_string()]);
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    if root {
        c.arg("--allow-run-as-root");
    }
    c.arg(BIN).stdin(Stdio::null());
    c
}

/// Two ranks run the chain of one process.
#[cfg(feature = "mpi")]
#[test]
fn two_ranks_run_the_chain_of_one_process() {
    let dir = TempDir::new("dp-two");
    let x = data(&dir);
    let base = flags(&x);
    let (one, two) = (dir.arg("one"), dir.arg("two"));
    ok(&args(&base, &["--sweeps", "6", "--out", &one]));
    let res = mpirun(2)
        .args(args(&base, &["--sweeps", "6", "--out", &two]))
        .output()
        .expect("mpirun runs");
    assert!(res.status.success(), "{}", cli::text(&res.stderr));
    assert!(cli::text(&res.stdout).contains("on 2 ranks"));
    assert_eq!(fingerprint(&one), fingerprint(&two));
}

/// Starts a long two-rank run with a checkpoint every 5 sweeps, waits for its first
/// checkpoint, sends `signal` to one rank (not to mpirun), and returns mpirun's output.
#[cfg(feature = "mpi")]
fn signal_one_rank(base: &[String], out: &str, signal: &str) -> std::process::Output {
    let child = mpirun(2)
        .args(args(
            base,
            &[
                "--sweeps",
                "1000000",
                "--checkpoint-every",
                "5",
                "--out",
                out,
            ],
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun starts");
    let manifest = std::path::Path::new(out).join("checkpoint/manifest.json");
    let mut waited = 0;
    while !manifest.exists() {
        assert!(waited < 1200, "no checkpoint after 120 s");
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    }
    // The ranks are mpirun's children (Open MPI starts local ranks directly).
    let children =
        std::fs::read_to_string(format!("/proc/{}/task/{}/children", child.id(), child.id()))
            .expect("mpirun's children");
    let rank: Vec<&str> = children.split_whitespace().collect();
    assert_eq!(rank.len(), 2, "mpirun's children: {children}");
    let status = Command::new("kill")
        .args([signal, rank[1]])
        .status()
        .expect("kill runs");
    assert!(status.success());
    child.wait_with_output().expect("mpirun ends")
}

/// Continues the run in `out` a few sweeps past its checkpoint and checks it against one
/// process's uninterrupted chain of the same length.
#[cfg(feature = "mpi")]
fn continues_to_the_same_chain(dir: &TempDir, base: &[String], out: &str) {
    let total = (checkpoint_sweep(out) + 3).to_string();
    let res = mpirun(2)
        .args(args(
            base,
            &[
                "--sweeps",
                &total,
                "--out",
                out,
                "--continue",
                "--checkpoint-every",
                "5",
            ],
        ))
        .output()
        .expect("mpirun runs");
    assert!(res.status.success(), "{}", cli::text(&res.stderr));
    let whole = dir.arg("whole");
    ok(&args(base, &["--sweeps", &total, "--out", &whole]));
    assert_eq!(fingerprint(out), fingerprint(&whole));
}

/// Ctrl-C on one rank stops every rank at the same sweep, with a checkpoint there.
#[cfg(feature = "mpi")]
#[test]
fn an_interrupt_on_one_rank_stops_all_and_the_run_continues() {
    let dir = TempDir::new("dp-int");
    let x = data(&dir);
    let base = flags(&x);
    let out = dir.arg("out");
    let res = signal_one_rank(&base, &out, "-INT");
    let (stdout, stderr) = (cli::text(&res.stdout), cli::text(&res.stderr));
    assert!(!res.status.success(), "{stdout}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let stopped = checkpoint_sweep(&out);
    assert!(stdout.contains("on 2 ranks"), "{stdout}");
    assert!(
        stderr.contains(&format!("stopped at sweep {stopped}")),
        "{stdout} {stderr}"
    );
    continues_to_the_same_chain(&dir, &base, &out);
}

/// A rank killed outright ends the job with mpirun's message; the last checkpoint is intact
/// and continues to the same chain.
#[cfg(feature = "mpi")]
#[test]
fn a_rank_that_dies_ends_the_job_and_leaves_the_checkpoint() {
    let dir = TempDir::new("dp-kill");
    let x = data(&dir);
    let base = flags(&x);
    let out = dir.arg("out");
    let res = signal_one_rank(&base, &out, "-KILL");
    let stderr = cli::text(&res.stderr);
    assert!(!res.status.success());
    assert!(stderr.contains("signal 9"), "{stderr}");
    continues_to_the_same_chain(&dir, &base, &out);
}
