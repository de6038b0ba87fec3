//! `--kernel-hyperpriors` on the command line: recorded in `run.json` and `summary.json`,
//! traced as columns, carried by checkpoints so that a resumed run is the straight run, and
//! refused where the exact posterior holds the kernel fixed.

use crate::support::cli;

use cli::{fails, ok, TempDir};
use nrmm::data::generate::{gaussian_mixture, partition_uniform, NormalWishartSampler};
use nrmm::rng::SeedPlan;
use serde_json::Value;

/// 60 points in 2 dimensions from 3 clusters, written to `x.txt`.
fn data(dir: &TempDir) -> String {
    let mut rng = SeedPlan::new(9).chain(0);
    let labels = partition_uniform(60, 3, &mut rng).unwrap();
    let nw = NormalWishartSampler::new(&[0.0, 0.0], &[1.0, 0.0, 0.0, 1.0], 0.05, 5.0).unwrap();
    let (x, _) = gaussian_mixture(&labels, &nw, &mut rng).unwrap();
    let text: String = (0..x.n())
        .map(|i| {
            let row: Vec<String> = x.row(i).iter().map(|v| format!("{v:.17e}")).collect();
            row.join(" ") + "\n"
        })
        .collect();
    dir.write("x.txt", &text)
}

fn json(dir: &TempDir, name: &str) -> Value {
    serde_json::from_str(&dir.read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The trace without its timing column.
fn timeless_trace(dir: &TempDir, run: &str) -> String {
    dir.read(&format!("{run}/chain-0/trace.csv"))
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split(',').collect();
            f.remove(1);
            f.join(",") + "\n"
        })
        .collect()
}

#[test]
fn kernel_hyperpriors_are_recorded_traced_and_resumed() {
    let dir = TempDir::new("khyper");
    let x = data(&dir);
    let base = [
        "run",
        "--data",
        &x,
        "--kernel-hyperpriors",
        "--sampler",
        "tgmcmc",
        "--checkpoint-every",
        "10",
        "--seed",
        "5",
    ];
    let (a, b) = (dir.arg("a"), dir.arg("b"));
    let with = |more: &[&'static str], out: &str| -> Vec<String> {
        base.iter()
            .map(|s| s.to_string())
            .chain(more.iter().map(|s| s.to_string()))
            .chain(["--out".to_string(), out.to_string()])
            .collect()
    };
    let args_a = with(&["--sweeps", "25"], &a);
    ok(&args_a.iter().map(String::as_str).collect::<Vec<_>>());
    ok(&["run", "--resume", &a, "--sweeps", "40"]);
    let args_b = with(&["--sweeps", "40"], &b);
    ok(&args_b.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(timeless_trace(&dir, "a"), timeless_trace(&dir, "b"));
    assert_eq!(
        dir.read("a/chain-0/labels.txt"),
        dir.read("b/chain-0/labels.txt")
    );
    let header = dir.read("b/chain-0/trace.csv");
    let header = header.lines().next().unwrap();
    assert!(header.ends_with(",nw_s,nw_r,nw_nu"), "{header}");
    assert_eq!(
        json(&dir, "b/run.json")["model"]["kernel_hyperpriors"],
        true
    );
    assert_eq!(
        json(&dir, "b/summary.json")["model"]["kernel_hyperpriors"],
        true
    );
    let end = json(&dir, "b/chain-0/end.json");
    let s = end["hyper"]["nw_s"].as_f64().expect("end.json holds nw_s");
    assert!(s > 0.0 && s != 1.0, "nw_s = {s}");
    let checkpoint = json(&dir, "b/chain-0/checkpoint.json");
    assert_eq!(
        checkpoint["state"]["kernel_hyper"].as_array().map(Vec::len),
        Some(3)
    );
    // predict rebuilds the kernel at the draws' values.
    ok(&[
        "predict",
        "--run",
        &b,
        "--data",
        &x,
        "--out",
        &dir.arg("pred.txt"),
    ]);
}

#[test]
fn without_the_flag_nothing_changes_and_exact_verbs_refuse_it() {
    let dir = TempDir::new("khyper-off");
    let x = data(&dir);
    let out = dir.arg("off");
    ok(&["run", "--data", &x, "--sweeps", "5", "--out", &out]);
    let header = dir.read("off/chain-0/trace.csv");
    assert!(!header.lines().next().unwrap().contains("nw_s"));
    let settings = json(&dir, "off/run.json");
    assert!(settings["model"].get("kernel_hyperpriors").is_none());
    assert_eq!(
        json(&dir, "off/summary.json")["model"]["kernel_hyperpriors"],
        false
    );
    for verb in ["exact", "check-exact"] {
        fails(
            &[verb, "--kernel-hyperpriors"],
            1,
            &["--kernel-hyperpriors", verb],
        );
    }
    fails(
        &[
            "sva",
            "--data",
            &x,
            "--kernel-hyperpriors",
            "--out",
            &dir.arg("s"),
        ],
        1,
        &["--kernel-hyperpriors"],
    );
}
