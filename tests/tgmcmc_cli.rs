//! The tree-guided parts of the `nrmm` command line end to end: `--sampler tgmcmc` and
//! `--sampler tgmcmc-paper` in `check-exact` and `run`, the IBHC initialisations, the `tree`
//! verb, and the user mistakes specific to them (one `error:` line, exit 1 for a failing verb,
//! 2 for a malformed command line).

use std::path::PathBuf;

use nrmm::data::load;
use serde_json::Value;

use crate::support::cli;
use cli::{check_exact_json, fails, ok, set_b, TempDir};

#[test]
fn check_exact_tells_the_exact_sampler_from_the_paper_one() {
    let (tv, floor) = check_exact_json(&["--sampler", "tgmcmc"]);
    assert!(tv < 1.5 * floor, "tgmcmc: TV {tv}, floor {floor}");
    let (tv, floor) = check_exact_json(&[
        "--sampler",
        "tgmcmc",
        "--global-moves",
        "3",
        "--gibbs-subset",
        "3",
        "--prior",
        "nggp",
        "--hyperpriors",
    ]);
    assert!(tv < 1.5 * floor, "tgmcmc, NGGP: TV {tv}, floor {floor}");
    // MATH §5.3's figure is for data set B under the reference code's hyperparameters.
    let (tv, floor) =
        check_exact_json(&["--sampler", "tgmcmc-paper", "--nw-defaults", "reference"]);
    assert!(
        tv > 0.25 && tv > 3.0 * floor,
        "tgmcmc-paper: TV {tv} should stay far above the floor {floor} (MATH §5.3)"
    );
}

#[test]
fn run_writes_chains_from_ibhc_starts() {
    let dir = TempDir::new("run");
    let data = set_b(&dir);
    for (sampler, init, extra) in [
        ("tgmcmc", "noisy-ibhc", vec!["--gibbs-subset", "4"]),
        ("tgmcmc-paper", "exact-ibhc", vec!["--depth", "1"]),
        ("tgmcmc-paper", "top-insert", vec![]),
        (
            "tgmcmc-paper",
            "single",
            vec!["--prior", "nggp", "--hyperpriors"],
        ),
    ] {
        let out = dir.arg(&format!("{sampler}-{init}"));
        let mut args = vec![
            "run",
            "--data",
            &data,
            "--sampler",
            sampler,
            "--init",
            init,
            "--sweeps",
            "50",
            "--chains",
            "2",
            "--global-moves",
            "4",
            "--out",
            &out,
        ];
        args.extend_from_slice(&extra);
        let stdout = ok(&args);
        assert!(stdout.contains("chain 1: 50 sweeps"), "{stdout}");
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{out}/summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["sampler"], sampler);
        let labels = load::load_labels(format!("{out}/chain-0/labels.txt"), 7).unwrap();
        assert_eq!(labels.len(), 7);
        let trace = std::fs::read_to_string(format!("{out}/chain-0/trace.csv")).unwrap();
        assert_eq!(trace.lines().count(), 51, "{trace}");
        // The same seed gives the same chain.
        let again = dir.arg(&format!("again-{sampler}-{init}"));
        let mut args2 = args.clone();
        let at = args2.iter().position(|&a| a == out).unwrap();
        args2[at] = &again;
        ok(&args2);
        assert_eq!(
            std::fs::read_to_string(format!("{again}/chain-1/labels.txt")).unwrap(),
            std::fs::read_to_string(format!("{out}/chain-1/labels.txt")).unwrap()
        );
    }
}

#[test]
fn tree_exports_every_point_once() {
    let dir = TempDir::new("tree");
    let data = set_b(&dir);
    for build in [&[][..], &["--exact"], &["--noisy"], &["--greedy"]] {
        let mut args = vec!["tree", "--data", &data];
        args.extend_from_slice(build);
        let newick = ok(&args);
        assert!(newick.lines().all(|l| l.ends_with(';')), "{newick}");
        let mut leaves: Vec<usize> = newick
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        leaves.sort_unstable();
        assert_eq!(leaves, (0..7).collect::<Vec<_>>(), "{build:?}: {newick}");
        args.extend(["--format", "dot"]);
        let dot = ok(&args);
        assert!(dot.starts_with("digraph forest {") && dot.trim_end().ends_with('}'));
        assert_eq!(dot.matches("shape=ellipse").count(), 7, "{dot}");
    }
    let with_d = ok(&["tree", "--data", &data, "--ln-d", "--seed", "3"]);
    let closes: Vec<&str> = with_d.split(')').skip(1).collect();
    assert!(!closes.is_empty(), "{with_d}");
    for label in closes {
        let number: String = label
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-' || *c == '.')
            .collect();
        assert!(
            number.parse::<f64>().is_ok() && number.contains('.'),
            "every internal node carries its ln d: {with_d}"
        );
    }
    let out = dir.arg("forest.dot");
    let said = ok(&["tree", "--data", &data, "--format", "dot", "--out", &out]);
    assert!(
        said.starts_with("wrote ") && said.contains("over 7 points"),
        "{said}"
    );
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .starts_with("digraph"));
}

#[test]
fn tree_reads_the_toy_data() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/toy/X.txt");
    if !dir.exists() {
        println!("skipping: {} is absent", dir.display());
        return;
    }
    let path = dir.to_str().unwrap();
    let newick = ok(&["tree", "--data", path, "--noisy"]);
    let leaves = newick
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .count();
    assert_eq!(leaves, 1300);
}

#[test]
fn tree_sampler_mistakes_are_one_line() {
    let dir = TempDir::new("mistakes");
    let data = set_b(&dir);
    let out = dir.arg("out");
    let run = |extra: &[&'static str]| {
        let mut a: Vec<String> = ["run", "--data", &data, "--out", &out, "--sweeps", "2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let check = |extra: &[&'static str], status: i32, needles: &[&str]| {
        let a = run(extra);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        fails(&refs, status, needles);
    };
    check(
        &["--sampler", "tgmcmc", "--depth", "2"],
        1,
        &["--depth", "tgmcmc-paper"],
    );
    check(
        &["--sampler", "tgmcmc-paper", "--gibbs-subset", "3"],
        1,
        &["--gibbs-subset"],
    );
    check(
        &[
            "--sampler",
            "tgmcmc",
            "--global-moves",
            "0",
            "--gibbs-sweeps",
            "0",
        ],
        1,
        &["--global-moves 0", "--gibbs-sweeps 0"],
    );
    check(
        &["--sampler", "tgmcmc", "--gibbs-subset", "0"],
        1,
        &["--gibbs-subset"],
    );
    check(&["--init", "ibhc"], 2, &["noisy-ibhc or exact-ibhc"]);
    check(
        &["--sampler", "tgmcmc-papers"],
        2,
        &["tgmcmc, tgmcmc-paper"],
    );
    fails(&["tree"], 2, &["--data"]);
    fails(
        &["tree", "--data", &data, "--noisy", "--greedy"],
        2,
        &["--noisy", "--greedy"],
    );
    fails(
        &["tree", "--data", &data, "--format", "svg"],
        2,
        &["dot, newick"],
    );
    fails(
        &["tree", "--data", &data, "--format", "dot", "--ln-d"],
        1,
        &["--ln-d"],
    );
    fails(
        &["tree", "--data", &dir.arg("missing.txt")],
        1,
        &["missing.txt"],
    );
}
