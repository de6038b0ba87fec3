//! `nrmm sva` and `nrmm run --init sva` end to end: the files and the summary of a fit on
//! dense and count data, held-out and training predictive densities, agreement with true
//! labels, and every user mistake ending as one `error:` line on standard error with a
//! non-zero exit status, never a panic.

use serde_json::Value;

use crate::support::cli;
use cli::{fails, ok, TempDir};

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

/// The Pitman-Yor and MFM priors the tests below fit, by name, as command-line arguments.
const GIBBS_TYPE: [(&str, &[&str]); 2] = [
    (
        "py",
        &["--prior", "py", "--alpha", "-0.2", "--sigma", "0.4"],
    ),
    (
        "mfm",
        &["--prior", "mfm", "--gamma", "1", "--k-prior", "poisson:3"],
    ),
];

/// `nrmm sva` by the Pitman-Yor and MFM urns: the three blobs found, the rule recorded in
/// `summary.json`; Pitman-Yor with `σ = 0` gives the DP's labels with `α = θ`.
#[test]
fn sva_fits_by_the_pitman_yor_and_mfm_urns() {
    let dir = TempDir::new("gibbs-type");
    let (x, y) = blobs(&dir);
    let [py, mfm] = GIBBS_TYPE;
    for (name, prior) in [
        py,
        mfm,
        (
            "py0",
            &["--prior", "py", "--alpha", "2", "--sigma", "0"][..],
        ),
        ("dp", &["--prior", "dp", "--alpha", "2"][..]),
    ] {
        let out = dir.arg(name);
        let mut args = vec![
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
        ];
        args.extend_from_slice(prior);
        let stdout = ok(&args);
        assert!(stdout.contains("3 components"), "{name}: {stdout}");
        assert!(stdout.contains("ARI 1.0000"), "{name}: {stdout}");
        let summary: Value =
            serde_json::from_str(&dir.read(&format!("{name}/summary.json"))).unwrap();
        let config = &summary["config"];
        match name {
            "py" => assert_eq!(config["prior"]["PitmanYor"]["sigma"], 0.4, "{config}"),
            "mfm" => assert_eq!(config["prior"]["Mfm"]["gamma"], 1.0, "{config}"),
            _ => {}
        }
        if name == "dp" {
            assert!(config.get("prior").is_none(), "{config}");
        }
    }
    assert_eq!(dir.read("py0/labels.txt"), dir.read("dp/labels.txt"));
}

/// A run under the Pitman-Yor or MFM prior starts from an SVA fit by its urn (`--init sva`,
/// and the default `auto`, which compares it with one cluster) and runs with the sub-cluster
/// sampler too.
#[test]
fn gibbs_type_runs_start_from_their_urn() {
    let dir = TempDir::new("init-gibbs-type");
    let (x, _) = blobs(&dir);
    for (name, prior) in GIBBS_TYPE {
        for (init, sampler) in [("sva", "sams"), ("auto", "subcluster")] {
            let out = dir.arg(&format!("{name}-{init}"));
            let mut args = vec![
                "run",
                "--data",
                &x,
                "--init",
                init,
                "--sampler",
                sampler,
                "--sweeps",
                "5",
                "--seed",
                "2",
                "--out",
                &out,
            ];
            args.extend_from_slice(prior);
            ok(&args);
            let summary: Value =
                serde_json::from_str(&dir.read(&format!("{name}-{init}/summary.json"))).unwrap();
            let k = summary["map"]["n_clusters"].as_u64();
            assert_eq!(k, Some(3), "{name}, {init}: {summary}");
        }
    }
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
    fails(
        &["sva", "--data", &x, "--prior", "py", "--hyperpriors"],
        1,
        &["--hyperpriors"],
    );
    fails(
        &["sva", "--data", &x, "--prior", "py", "--sigma", "1"],
        1,
        &["sigma"],
    );
    fails(
        &["sva", "--data", &x, "--prior", "py", "--gamma", "1"],
        1,
        &["--gamma"],
    );
    fails(
        &["sva", "--data", &x, "--prior", "mfm", "--alpha", "1"],
        1,
        &["--alpha"],
    );
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
