//! The documentation is the project's own and whole: every relative link of every Markdown
//! file resolves inside the repository (so in a fresh clone), and every "MATH §x.y" or
//! "MATH Pn" that the code cites names a section or pitfall of `docs/MATH.md`.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Files under `dir` with extension `ext`, skipping build output and hidden directories.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                files(&path, ext, out);
            }
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

#[test]
fn every_markdown_link_resolves_inside_the_repository() {
    let root = root().canonicalize().expect("the repository");
    let mut md = Vec::new();
    files(&root, "md", &mut md);
    assert!(md.iter().any(|p| p.ends_with("docs/MATH.md")));
    let mut broken = Vec::new();
    for file in &md {
        let text = std::fs::read_to_string(file).expect("a Markdown file");
        for (i, _) in text.match_indices("](") {
            let target: String = text[i + 2..]
                .chars()
                .take_while(|&c| c != ')' && c != '#' && c != ' ')
                .collect();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let resolved = file.parent().expect("a directory").join(&target);
            let inside = resolved.canonicalize().is_ok_and(|p| p.starts_with(&root));
            if !inside {
                broken.push(format!("{} -> {target}", file.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that a fresh clone cannot follow: {broken:#?}"
    );
}

#[test]
fn every_cited_section_of_the_mathematics_exists() {
    let math = std::fs::read_to_string(root().join("docs/MATH.md")).expect("docs/MATH.md");
    let headings: Vec<&str> = math.lines().filter(|l| l.starts_with('#')).collect();
    let mut sources = Vec::new();
    for dir in ["src", "tests", "papers", "examples", "benches"] {
        files(&root().join(dir), "rs", &mut sources);
    }
    let mut missing = Vec::new();
    for file in &sources {
        let text = std::fs::read_to_string(file).expect("a source file");
        for (i, _) in text.match_indices("MATH ") {
            let rest = &text[i + 5..];
            let (kind, body) = if let Some(r) = rest.strip_prefix('§') {
                ('§', r)
            } else if let Some(r) = rest.strip_prefix('P') {
                ('P', r)
            } else {
                continue;
            };
            let number: String = body
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let number = number.trim_end_matches('.');
            if number.is_empty() {
                continue;
            }
            let found = match kind {
                'P' => math.contains(&format!("**P{number}.**")),
                _ if number.contains('.') => headings
                    .iter()
                    .any(|h| h.starts_with(&format!("### {number} "))),
                _ => headings
                    .iter()
                    .any(|h| h.starts_with(&format!("## {number}. "))),
            };
            if !found {
                missing.push(format!("{}: MATH {kind}{number}", file.display()));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "cited but not in docs/MATH.md: {missing:#?}"
    );
}
