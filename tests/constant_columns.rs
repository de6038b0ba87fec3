//! Constant columns of dense data are left out of a Gaussian kernel's model
//! ([`nrmm::model::KeptColumns`]): a run over data with them is the run over the data without
//! them (the same chains, draws and estimates, bit for bit), says which columns it left out,
//! predicts new points given with every column (and refuses fewer), and keeps every column
//! when the user gives the kernel's `xi` or `psi`.

use crate::support::cli;
use cli::{nrmm, ok, text, TempDir};

/// 60 points in two separated groups: three varying columns, and when `constants`, the same
/// points with constant columns inserted before the first and after the second (columns 1 and
/// 4 of 5).
fn rows(constants: bool) -> String {
    let mut x = String::new();
    for i in 0..60 {
        let g = (i % 2) as f64 * 9.0;
        let v = [
            g + ((i * 37) % 17) as f64 / 17.0,
            ((i * 11) % 13) as f64 / 13.0,
            g + ((i * 7) % 19) as f64 / 19.0,
        ];
        let row: Vec<String> = if constants {
            vec![
                "3.5".into(),
                v[0].to_string(),
                v[1].to_string(),
                "-2".into(),
                v[2].to_string(),
            ]
        } else {
            v.iter().map(f64::to_string).collect()
        };
        x.push_str(&row.join(" "));
        x.push('\n');
    }
    x
}

#[test]
fn a_run_with_constant_columns_is_the_run_without_them() {
    let dir = TempDir::new("constant-columns");
    let with = dir.write("with.txt", &rows(true));
    let without = dir.write("without.txt", &rows(false));
    let run = |data: &str, out: &str| {
        nrmm(&[
            "run", "--data", data, "--sweeps", "40", "--seed", "3", "--out", out,
        ])
    };
    let a = run(&with, &dir.arg("a"));
    assert!(a.status.success(), "{}", text(&a.stderr));
    let said = text(&a.stderr);
    assert!(
        said.contains(
            "columns 1 and 4 are constant: left out of the model, which sees the other 3 of 5 \
             columns"
        ),
        "{said}"
    );
    assert!(
        said.contains("60 × 5 points (3 varying columns modelled)"),
        "{said}"
    );
    let b = run(&without, &dir.arg("b"));
    assert!(b.status.success(), "{}", text(&b.stderr));
    assert!(!text(&b.stderr).contains("constant"), "{}", text(&b.stderr));
    for c in 0..4 {
        let draws = format!("chain-{c}/draws.jsonl");
        assert_eq!(
            dir.read(&format!("a/{draws}")),
            dir.read(&format!("b/{draws}")),
            "chain {c}"
        );
    }
    assert_eq!(dir.read("a/estimate.txt"), dir.read("b/estimate.txt"));

    // New points come with every column and are predicted as the reduced ones are.
    let by_all = nrmm(&["predict", "--run", &dir.arg("a"), "--data", &with]);
    assert!(by_all.status.success(), "{}", text(&by_all.stderr));
    let by_kept = ok(&["predict", "--run", &dir.arg("b"), "--data", &without]);
    assert_eq!(text(&by_all.stdout), by_kept);
    let fewer = nrmm(&["predict", "--run", &dir.arg("a"), "--data", &without]);
    assert_eq!(fewer.status.code(), Some(1));
    let said = text(&fewer.stderr);
    assert!(
        said.contains(
            "without.txt has points of dimension 3 (3 features), but the training \
             data have dimension 5"
        ),
        "{said}"
    );
}

#[test]
fn given_scales_keep_every_column_and_all_constant_data_are_refused() {
    let dir = TempDir::new("constant-given");
    let with = dir.write("with.txt", &rows(true));
    // With the diagonal kernel's `psi` given for all five columns, all five are modelled.
    let out = nrmm(&[
        "run",
        "--data",
        &with,
        "--kernel",
        "diag",
        "--nw-psi",
        "1,1,1,1,1",
        "--sweeps",
        "5",
        "--out",
        &dir.arg("given"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("constant"),
        "{}",
        text(&out.stderr)
    );
    // Data whose every column is constant are refused, whichever Gaussian kernel.
    let flat = dir.write("flat.txt", &"1 2\n".repeat(20));
    for kernel in ["nw", "diag"] {
        let out = nrmm(&[
            "run",
            "--data",
            &flat,
            "--kernel",
            kernel,
            "--sweeps",
            "5",
            "--out",
            &dir.arg(kernel),
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(
                "every column of the data is constant (all 20 points are one point): there is \
                 nothing to cluster"
            ),
            "{}",
            text(&out.stderr)
        );
    }
}
