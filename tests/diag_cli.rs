//! `--kernel diag` end to end: `run`, `sva`, `predict`, `exact` and `check-exact` accept it,
//! `--nw-psi` takes one scale per column with it, and without `--kernel` real data whose full
//! covariance cannot be estimated get the diagonal kernel with one line on standard error.

use serde_json::Value;

use crate::support::cli;
use cli::{fails, nrmm, ok, set_b, text, TempDir};

/// `n` points of dimension `d`: two separated groups, deterministic.
fn two_groups(dir: &TempDir, n: usize, d: usize) -> String {
    let mut x = String::new();
    for i in 0..n {
        let row: Vec<String> = (0..d)
            .map(|j| {
                let wobble = ((i * 37 + j * 11) % 17) as f64 / 17.0 - 0.5;
                format!("{}", (i % 2) as f64 * 8.0 + wobble)
            })
            .collect();
        x.push_str(&row.join(" "));
        x.push('\n');
    }
    dir.write("x.txt", &x)
}

#[test]
fn every_verb_runs_the_diagonal_kernel() {
    let dir = TempDir::new("verbs");
    let x = two_groups(&dir, 40, 3);
    let run = dir.arg("run");
    for sampler in ["gibbs", "sams", "tgmcmc", "subcluster"] {
        ok(&[
            "run",
            "--data",
            &x,
            "--kernel",
            "diag",
            "--sampler",
            sampler,
            "--sweeps",
            "20",
            "--out",
            &run,
            "--force",
        ]);
    }
    let estimate = dir.read("run/estimate.txt");
    let labels: Vec<&str> = estimate.lines().collect();
    assert_eq!(labels.len(), 40);
    // The two groups are found.
    assert!(labels.iter().step_by(2).all(|l| *l == labels[0]));
    assert!(labels.iter().skip(1).step_by(2).all(|l| *l == labels[1]));
    assert_ne!(labels[0], labels[1]);
    let csv = ok(&["predict", "--run", &run, "--data", &x]);
    assert_eq!(csv.lines().count(), 41);
    assert!(csv
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .all(|v| v.parse::<f64>().is_ok()));
    let summary = ok(&["sva", "--data", &x, "--kernel", "diag"]);
    assert!(summary.contains(": 2 components"), "{summary}");
    let b = set_b(&dir);
    let exact: Value =
        serde_json::from_str(&ok(&["exact", "--data", &b, "--kernel", "diag", "--json"])).unwrap();
    assert!(exact["n_partitions"].as_u64().unwrap() == 877);
    let check: Value = serde_json::from_str(&ok(&[
        "check-exact",
        "--data",
        &b,
        "--kernel",
        "diag",
        "--sweeps",
        "4000",
        "--json",
    ]))
    .unwrap();
    let (tv, floor) = (
        check["tv"].as_f64().unwrap(),
        check["tv_noise_floor"].as_f64().unwrap(),
    );
    assert!(tv < 3.0 * floor, "TV {tv} vs floor {floor}");
}

#[test]
fn the_diagonal_scales_take_one_value_per_column() {
    let dir = TempDir::new("psi");
    let x = two_groups(&dir, 20, 3);
    let out = dir.arg("out");
    ok(&[
        "run", "--data", &x, "--kernel", "diag", "--nw-psi", "1,2,3", "--nw-nu", "1.5", "--sweeps",
        "5", "--out", &out,
    ]);
    fails(
        &[
            "run",
            "--data",
            &x,
            "--kernel",
            "diag",
            "--nw-psi",
            "1,0,0,0,1,0,0,0,1",
            "--sweeps",
            "5",
            "--out",
            &dir.arg("b"),
        ],
        1,
        &["--nw-psi", "3 comma-separated values with --kernel diag"],
    );
    fails(
        &[
            "run",
            "--data",
            &x,
            "--kernel",
            "diag",
            "--nw-psi",
            "1,-2,3",
            "--sweeps",
            "5",
            "--out",
            &dir.arg("c"),
        ],
        1,
        &["--nw-psi[1]", "> 0"],
    );
}

#[test]
fn the_diagonal_kernel_is_chosen_and_announced_when_the_full_one_cannot_be_estimated() {
    let dir = TempDir::new("auto");
    // A column that is a linear combination of another: the full covariance is singular.
    // (A constant column is left out of the model instead, `constant_columns`.)
    let mut text_rows = String::new();
    for i in 0..30 {
        let a = (i % 3) * 9;
        text_rows.push_str(&format!("{a} {} {}\n", 2 * a + 1, (i * 7 % 5) as f64 * 0.3));
    }
    let x = dir.write("c.txt", &text_rows);
    let out = nrmm(&["run", "--data", &x, "--sweeps", "5", "--out", &dir.arg("o")]);
    assert!(out.status.success());
    let stderr = cli::without_run_header(&text(&out.stderr));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("diagonal kernel") && stderr.contains("column 2 is a linear combination"),
        "{stderr}"
    );
    // Asked for, the full kernel is used (its default scale falls back to the diagonal of
    // the singular covariance), silently.
    ok(&[
        "run",
        "--data",
        &x,
        "--kernel",
        "nw",
        "--sweeps",
        "5",
        "--out",
        &dir.arg("n"),
    ]);
    // Well-conditioned data keep the full kernel, silently.
    let fine = two_groups(&dir, 40, 3);
    ok(&[
        "run",
        "--data",
        &fine,
        "--sweeps",
        "5",
        "--out",
        &dir.arg("f"),
    ]);
}
