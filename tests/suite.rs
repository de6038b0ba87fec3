//! The integration tests are one binary (`tests/main.rs`, Cargo's `autotests` off), so a file
//! under `tests/` runs only if a `mod` line reaches it. This module follows the `mod name;`
//! lines from `tests/main.rs` (with their `#[path]` attributes) and fails naming every `.rs`
//! file under `tests/` that no line reaches, and every file reached twice (its tests would run
//! twice).

use crate::support;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The files the out-of-line `mod name;` declarations of `file` load, as rustc resolves them:
/// a `#[path = "p"]` attribute is relative to the directory holding `file`; otherwise the
/// module lives in `name.rs` or `name/mod.rs` below the module's directory, which is the
/// directory of `file` for `main.rs` and `mod.rs` files and `dir/stem` for any other file.
/// Inline modules (`mod name { .. }`) add no file and are skipped.
fn declared_modules(file: &Path) -> Vec<PathBuf> {
    let text =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
    let dir = file.parent().expect("a file has a directory");
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let module_dir = if stem == "main" || stem == "mod" {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    let mut path_attr: Option<String> = None;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("#[path") {
            path_attr = rest.split('"').nth(1).map(str::to_string);
            continue;
        }
        let decl = ["pub(crate) mod ", "pub mod ", "mod "]
            .iter()
            .find_map(|p| line.strip_prefix(p));
        match decl.and_then(|d| d.strip_suffix(';')) {
            Some(name) => {
                out.push(match path_attr.take() {
                    Some(p) => dir.join(p),
                    None if module_dir.join(format!("{name}.rs")).exists() => {
                        module_dir.join(format!("{name}.rs"))
                    }
                    None => module_dir.join(name).join("mod.rs"),
                });
            }
            None if line.starts_with("#[") || line.starts_with("//") => {}
            None => path_attr = None,
        }
    }
    out
}

/// The files under `dir` that the module tree rooted at `root` leaves out, and those it
/// loads more than once.
/// Paths are compared canonical, so `a/../b.rs` is `b.rs`.
fn coverage(dir: &Path, root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut seen: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(file) = stack.pop() {
        let count = seen.entry(canonical(&file)).or_insert(0);
        *count += 1;
        if *count == 1 && file.exists() {
            stack.extend(declared_modules(&file));
        }
    }
    let missing = support::rust_files(dir)
        .into_iter()
        .filter(|f| !seen.contains_key(&canonical(f)))
        .collect();
    let twice = seen
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(f, _)| f)
        .collect();
    (missing, twice)
}

#[test]
fn every_file_under_tests_is_compiled_into_the_one_binary() {
    let dir = std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"))
        .expect("the tests folder exists");
    let (missing, twice) = coverage(&dir, &dir.join("main.rs"));
    let names = |v: &[PathBuf]| {
        v.iter()
            .map(|f| f.strip_prefix(&dir).unwrap_or(f).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    assert!(
        missing.is_empty(),
        "not part of the test binary, so never run: {}; add `mod NAME;` for each to \
         tests/main.rs (or to the module that uses it)",
        names(&missing)
    );
    assert!(
        twice.is_empty(),
        "loaded by more than one `mod` line, so compiled (and run) more than once: {}; declare \
         each once and reach it with `use crate::...`",
        names(&twice)
    );
}

#[test]
fn the_check_names_a_file_left_out_and_a_file_loaded_twice() {
    let scratch = std::env::temp_dir().join(format!("nrmm-suite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(scratch.join("helpers")).expect("create a scratch tree");
    let dir = std::fs::canonicalize(&scratch).expect("the scratch tree exists");
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect("write");
    write(
        "main.rs",
        "//! root\nmod helpers;\n#[cfg(test)]\nmod a;\nmod inline {\n    fn f() {}\n}\n",
    );
    write(
        "helpers/mod.rs",
        "pub mod deep;\n#[path = \"../a.rs\"]\nmod again;\n",
    );
    write("helpers/deep.rs", "");
    write("a.rs", "");
    write("forgotten.rs", "");
    let (missing, twice) = coverage(&dir, &dir.join("main.rs"));
    std::fs::remove_dir_all(&dir).expect("remove the scratch tree");
    assert_eq!(missing, vec![dir.join("forgotten.rs")]);
    assert_eq!(twice, vec![dir.join("a.rs")]);
}
