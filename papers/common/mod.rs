//! What every paper reproduction shares: where its data are, where its results go, CSV tables,
//! the claims table that `papers/README.md` summarises, and regenerating the numbers in a
//! README from the committed code.
//!
//! A reproduction writes `<out>/results/*.csv` and `<out>/figures/*.svg`, and its claims to
//! `<out>/results/claims.csv`. When `<out>` holds a `README.md`, the sections of it between
//! `<!-- BEGIN name -->` and `<!-- END name -->` are rewritten from the results, so that no
//! number in a README is typed by hand. Smoke runs write to a scratch directory and touch no
//! README.

#![allow(dead_code)]

#[path = "../../examples/support/cpu_clock.rs"]
pub mod cpu_clock;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// An error of a reproduction's own bookkeeping (files, formats), with the file it concerns.
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The data file `../shared/data/<sub>/<file>` relative to `root` (the crate root), if it
/// exists; otherwise says on stderr that a seeded stand-in is used and returns `None`.
pub fn shared_data(root: &Path, sub: &str, file: &str) -> Option<PathBuf> {
    let path = root
        .join("..")
        .join("shared")
        .join("data")
        .join(sub)
        .join(file);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("note: ../shared/data/{sub}/{file} is absent; using a seeded synthetic stand-in");
        None
    }
}

/// The crate root, where `cargo run --example` is started from.
pub fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Creates `<out>/results` and `<out>/figures` and returns them.
pub fn output_dirs(out: &Path) -> Result<(PathBuf, PathBuf)> {
    let results = out.join("results");
    let figures = out.join("figures");
    for d in [&results, &figures] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    Ok((results, figures))
}

/// A table of strings with a header, written as CSV and rendered as Markdown.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; panics in the reproduction's own code if its width is wrong.
    pub fn push(&mut self, row: Vec<String>) {
        assert_eq!(
            row.len(),
            self.header.len(),
            "row width of table {:?}",
            self.header
        );
        self.rows.push(row);
    }

    /// Writes the table as CSV (fields with commas or quotes are quoted).
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        let mut s = String::new();
        for line in std::iter::once(&self.header).chain(&self.rows) {
            let fields: Vec<String> = line.iter().map(|f| csv_field(f)).collect();
            s.push_str(&fields.join(","));
            s.push('\n');
        }
        std::fs::write(path, s).map_err(|e| format!("{}: {e}", path.display()).into())
    }

    /// Reads a CSV table written by [`Table::write_csv`].
    pub fn read_csv(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut lines = text.lines().map(parse_csv_line);
        let header = lines
            .next()
            .ok_or_else(|| format!("{}: empty table", path.display()))?;
        let mut rows = Vec::new();
        for (i, row) in lines.enumerate() {
            if row.len() != header.len() {
                return Err(format!(
                    "{}:{}: {} fields, the header has {}",
                    path.display(),
                    i + 2,
                    row.len(),
                    header.len()
                )
                .into());
            }
            rows.push(row);
        }
        Ok(Table { header, rows })
    }

    /// The table in Markdown.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "| {} |", self.header.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(self.header.len()));
        for r in &self.rows {
            let _ = writeln!(s, "| {} |", r.join(" | "));
        }
        s
    }
}

fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\n']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

fn parse_csv_line(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    fields.push(cur);
    fields
}

/// One published claim next to what this project measured, for the summary table of
/// `papers/README.md`.
#[derive(Clone, Debug)]
pub struct Claim {
    /// What is claimed, in a few words.
    pub claim: String,
    /// The paper's (or the reference code's) figure, with its unit.
    pub paper: String,
    /// Ours, with its unit.
    pub ours: String,
    /// Ours against the reference code on the same machine (e.g. "12.3x faster"), or "—".
    pub ratio: String,
    /// The run that measured "ours": its date and the commit of the code ([`this_run`]).
    pub run: String,
}

/// The claims as a table with columns claim, paper, ours, ratio, run.
pub fn claims_table(claims: &[Claim]) -> Table {
    let mut t = Table::new(&["claim", "paper", "ours", "ratio", "run"]);
    for c in claims {
        t.push(vec![
            c.claim.clone(),
            c.paper.clone(),
            c.ours.clone(),
            c.ratio.clone(),
            c.run.clone(),
        ]);
    }
    t
}

/// Writes `<results>/claims.csv`.
pub fn write_claims(results: &Path, claims: &[Claim]) -> Result<()> {
    claims_table(claims).write_csv(&results.join("claims.csv"))
}

/// This run's date (UTC) and the commit of the code it runs, e.g. `2026-11-26, 49b8bd4`, so
/// that every figure says which code measured it and when. The commit gains `+changes` when
/// the library, the build files or a reproduction's code differ from it (the results and
/// READMEs a run rewrites do not count), and reads `commit unknown` outside a git checkout.
/// Computed once per process, at its first call.
pub fn this_run() -> String {
    static RUN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RUN.get_or_init(|| format!("{}, {}", today_utc(), commit()))
        .clone()
}

/// The short hash of `HEAD`, with `+changes` when the code differs from it.
fn commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(crate_root())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(head) = git(&["rev-parse", "--short", "HEAD"]) else {
        return "commit unknown".into();
    };
    let code = [
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        "src",
        "Cargo.toml",
        "Cargo.lock",
        "examples",
        ":(glob)papers/**/*.rs",
    ];
    match git(&code) {
        Some(changes) if changes.is_empty() => head,
        _ => format!("{head}+changes"),
    }
}

/// Today's date in UTC as `YYYY-MM-DD`, from the system clock (civil-from-days, H. Hinnant).
fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Rewrites the `run` section of `readme` (if it exists): the commands that produced its
/// figures, with this run's date and commit.
pub fn record_run(readme: &Path, commands: &str) -> Result<()> {
    update_readme(
        readme,
        "run",
        &format!(
            "Every figure below comes from {commands}, run on {} (date, commit).\n",
            this_run()
        ),
    )
}

/// Rewrites the text between `<!-- BEGIN name -->` and `<!-- END name -->` in `readme` with
/// `content`, if `readme` exists; errors if it exists without the markers.
pub fn update_readme(readme: &Path, name: &str, content: &str) -> Result<()> {
    if !readme.is_file() {
        return Ok(());
    }
    let text = std::fs::read_to_string(readme).map_err(|e| format!("{}: {e}", readme.display()))?;
    let begin = format!("<!-- BEGIN {name} -->");
    let end = format!("<!-- END {name} -->");
    let (Some(b), Some(e)) = (text.find(&begin), text.find(&end)) else {
        return Err(format!("{}: no markers `{begin}` ... `{end}`", readme.display()).into());
    };
    if e < b {
        return Err(format!("{}: `{end}` comes before `{begin}`", readme.display()).into());
    }
    let mut out = String::with_capacity(text.len() + content.len());
    out.push_str(&text[..b + begin.len()]);
    out.push('\n');
    out.push_str(content.trim_end());
    out.push('\n');
    out.push_str(&text[e..]);
    std::fs::write(readme, out).map_err(|e| format!("{}: {e}", readme.display()).into())
}

/// The median of `v` (NaN for an empty slice).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        0.5 * (s[m - 1] + s[m])
    }
}
