//! Gathers every reproduction's `results/claims.csv` into the summary table of
//! `papers/README.md` (between its `BEGIN summary` / `END summary` markers).
//!
//! ```text
//! cargo run --release --example paper-summary
//! ```

#[path = "common/mod.rs"]
mod common;

use common::{update_readme, Table};

fn main() -> common::Result<()> {
    let papers = common::crate_root().join("papers");
    let mut slugs: Vec<String> = std::fs::read_dir(&papers)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("results").join("claims.csv").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    slugs.sort();
    let mut all = Table::new(&["paper", "claim", "paper's figure", "ours", "ratio", "run"]);
    for slug in &slugs {
        let t = Table::read_csv(&papers.join(slug).join("results").join("claims.csv"))?;
        for r in t.rows {
            let mut row = vec![format!("[{slug}]({slug}/README.md)")];
            row.extend(r);
            // Claims written before runs were stamped have no run column.
            row.resize(all.header.len(), String::new());
            all.push(row);
        }
    }
    update_readme(&papers.join("README.md"), "summary", &all.markdown())?;
    println!("{}", all.markdown());
    Ok(())
}
