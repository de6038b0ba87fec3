//! Parallel tempering on the command line (`--temper`, `--temper-ratio`, `--temperatures`):
//! the run records its ladder and traces each adjacent pair's swaps; the same seed gives the
//! same chains on one thread and on two, and a tempered run resumed from its checkpoints is
//! the unbroken run; `check-exact` of a tempered sampler sits at the noise floor; and the
//! settings the ladder cannot take are refused, naming the flag.

use std::path::Path;
use std::process::Command;

use crate::support::cli;
use cli::{check_exact_json, fails, ok, set_b, TempDir};

/// Runs `nrmm args` on `threads` threads; asserts success.
fn run_on(threads: usize, args: &[&str]) {
    let out = Command::new(cli::BIN)
        .env("RAYON_NUM_THREADS", threads.to_string())
        .args(args)
        .output()
        .expect("the nrmm binary runs");
    assert!(
        out.status.success(),
        "nrmm {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Chain `chain`'s trace without its `seconds` column, its draws and its labels.
fn outputs(dir: &Path, chain: usize) -> (Vec<String>, String, String) {
    let d = dir.join(format!("chain-{chain}"));
    let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    let trace = read("trace.csv")
        .lines()
        .map(|l| {
            let mut cells: Vec<&str> = l.split(',').collect();
            cells.remove(1);
            cells.join(",")
        })
        .collect();
    (trace, read("draws.jsonl"), read("labels.txt"))
}

#[test]
fn tempered_runs_are_reproducible_and_resume_exactly() {
    let dir = TempDir::new("temper");
    let data = set_b(&dir);
    let (straight, broken) = (dir.arg("straight"), dir.arg("broken"));
    let base = [
        "run",
        "--data",
        &data,
        "--seed",
        "7",
        "--chains",
        "2",
        "--temper",
        "3",
        "--temper-ratio",
        "0.5",
        "--checkpoint-every",
        "40",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    let args = with(&["--sweeps", "120", "--out", &straight]);
    run_on(2, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let args = with(&["--sweeps", "80", "--out", &broken]);
    run_on(1, &args.iter().map(String::as_str).collect::<Vec<_>>());
    run_on(1, &["run", "--resume", &broken, "--sweeps", "120"]);
    for chain in 0..2 {
        let a = outputs(Path::new(&straight), chain);
        let b = outputs(Path::new(&broken), chain);
        assert_eq!(a.0.len(), 121, "a header and 120 rows");
        assert!(
            a.0[0].contains("swap_0_1_accepted") && a.0[0].contains("swap_1_2_accepted"),
            "{}",
            a.0[0]
        );
        assert_eq!(
            a, b,
            "chain {chain}: 2 threads straight vs 1 thread resumed"
        );
    }
    let record = std::fs::read_to_string(Path::new(&straight).join("run.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&record).unwrap();
    let betas: Vec<f64> = serde_json::from_value(v["sampler"]["temperatures"].clone()).unwrap();
    assert_eq!(betas.len(), 3);
    assert_eq!(betas[0], 1.0);
    assert_eq!(betas, [1.0, 0.5, 0.25]);
    // Swaps happen, and are recorded for the pair of each sweep's parity.
    let (trace, _, _) = outputs(Path::new(&straight), 0);
    let header: Vec<&str> = trace[0].split(',').collect();
    let col = |name: &str| header.iter().position(|&h| h == name).unwrap();
    let (p01, a01) = (col("swap_0_1_proposed"), col("swap_0_1_accepted"));
    let (proposed, accepted) = trace[1..].iter().fold((0, 0), |(p, a), row| {
        let cells: Vec<&str> = row.split(',').collect();
        let n = |i: usize| cells[i].parse::<usize>().unwrap();
        (p + n(p01), a + n(a01))
    });
    assert_eq!(proposed, 60, "pair (0, 1) after every even sweep");
    assert!(accepted > 0, "no swap of pair (0, 1) accepted");
}

#[test]
fn tempered_check_exact_sits_at_the_floor() {
    let (tv, floor) = check_exact_json(&["--sampler", "sams", "--temper", "3"]);
    assert!(tv < 1.5 * floor, "sams tempered: TV {tv}, floor {floor}");
    let (tv, floor) = check_exact_json(&[
        "--sampler",
        "tgmcmc",
        "--temperatures",
        "1,0.6,0.3",
        "--prior",
        "nggp",
        "--hyperpriors",
    ]);
    assert!(
        tv < 1.5 * floor,
        "tgmcmc tempered, NGGP: TV {tv}, floor {floor}"
    );
}

#[test]
fn tempering_refuses_what_it_cannot_temper() {
    let dir = TempDir::new("temper-refusals");
    let data = set_b(&dir);
    let out = dir.arg("out");
    let run = |extra: &[&str]| -> Vec<String> {
        ["run", "--data", &data, "--sweeps", "10", "--out", &out]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect()
    };
    let fail = |extra: &[&str], needles: &[&str]| {
        let args = run(extra);
        fails(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            1,
            needles,
        );
    };
    fail(
        &["--temper", "3", "--sampler", "subcluster"],
        &["subcluster", "tgmcmc"],
    );
    fail(&["--temper", "1"], &["--temper"]);
    fail(
        &["--temper", "3", "--temper-ratio", "1.5"],
        &["--temper-ratio"],
    );
    fail(
        &["--temperatures", "1,0.5,0.7"],
        &["--temperatures", "decreasing"],
    );
    fail(&["--temperatures", "0.9,0.5"], &["--temperatures"]);
    fail(
        &["--temper", "2", "--kernel-hyperpriors"],
        &["--kernel-hyperpriors"],
    );
    assert!(!Path::new(&out).exists(), "a refused run wrote {out}");
    // Without the flags, nothing changes: no swap columns.
    ok(&run(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    let trace = std::fs::read_to_string(Path::new(&out).join("chain-0/trace.csv")).unwrap();
    assert!(!trace.lines().next().unwrap().contains("swap_"));
}
