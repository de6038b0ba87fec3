//! Wade & Ghahramani (2018), "Bayesian cluster analysis: point estimation and credible
//! balls", Bayesian Analysis 13(2): the galaxy velocities (82 points, Roeder 1990) under a DP
//! mixture of normals, summarised by the partitions that minimise the posterior expected
//! Variation of Information and Binder's loss, their numbers of clusters, and the 95% credible
//! ball in the VI around the VI estimate; and the posterior predictive density with its 95%
//! pointwise bands.
//!
//! ```text
//! cargo run --release --example paper-wade-ghahramani-2018                  # the full run
//! cargo run --release --example paper-wade-ghahramani-2018 -- --smoke --out runs/wg-smoke
//! ```
//!
//! The full run writes `papers/wade-ghahramani-2018/results/{estimates,ball,claims,density}.csv` and
//! `results/density.svg`, and
//! rewrites the numbers in its README, its chains under `runs/paper-wade-ghahramani-2018`; without `../shared/data/galaxies/galaxies.txt` it runs
//! on 82 seeded draws from a three-component stand-in and says so.

#[path = "../common/mod.rs"]
mod common;

use common::{Claim, Table};
use nrmm::data::{load::load_dense, Dataset, DenseData};
use nrmm::model::{Model, ModelSpec};
use nrmm::rng::{uniform_open01, SeedPlan};
use nrmm::run::density::density_grid;
use nrmm::run::uncertainty::DensityPicture;
use nrmm::run::{pilot, svg, Budget, MoveSettings, Runner, SamplerKind, SamplerSpec};
use std::path::PathBuf;

/// The galaxies, or 82 seeded points from three normals when they are absent.
fn galaxies() -> common::Result<(DenseData, bool)> {
    if let Some(path) = common::shared_data(&common::crate_root(), "galaxies", "galaxies.txt") {
        return Ok((load_dense(path)?, true));
    }
    let mut rng = SeedPlan::new(82).chain(0);
    let centres = [(9.7, 0.4), (21.0, 2.0), (33.0, 1.0)];
    let weights = [7, 68, 7];
    let mut x = Vec::new();
    for (c, &w) in centres.iter().zip(&weights) {
        for _ in 0..w {
            // A normal by the sum of 12 uniforms (Irwin-Hall), enough for a stand-in.
            let z: f64 = (0..12).map(|_| uniform_open01(&mut rng)).sum::<f64>() - 6.0;
            x.push(c.0 + c.1 * z);
        }
    }
    Ok((DenseData::new(x.len(), 1, x)?, false))
}

fn main() -> common::Result<()> {
    let mut smoke = false;
    let mut out = common::crate_root()
        .join("papers")
        .join("wade-ghahramani-2018");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--smoke" => smoke = true,
            "--out" => out = PathBuf::from(args.next().ok_or("--out needs a directory")?),
            other => {
                return Err(
                    format!("unknown argument {other:?} (expected --smoke, --out DIR)").into(),
                )
            }
        }
    }
    let (results, _) = common::output_dirs(&out)?;
    let (data, real) = galaxies()?;
    let seed = 1;
    let model = Model::build(&ModelSpec::default(), Dataset::Dense(data.clone()))?;
    let model = pilot::settled(model, seed)?;
    let mut spec = SamplerSpec {
        seed,
        chains: 4,
        budget: Budget::Sweeps(if smoke { 200 } else { 8000 }),
        ..SamplerSpec::new(SamplerKind::Sams)
    };
    spec.sampler.moves.proposals = MoveSettings::default_proposals(model.n_points());
    // The chains' files: in the scratch directory of a smoke run, else under the ignored
    // `runs/`, never among the committed results.
    let runs = if smoke {
        out.join("run")
    } else {
        common::crate_root()
            .join("runs")
            .join("paper-wade-ghahramani-2018")
    };
    let outcome = Runner::new(&model, spec, &runs).replace(true).run()?;
    let mut summary = outcome.summary()?;
    summary.add_estimates_by_loss(1.0)?;
    let by_loss = summary
        .by_loss
        .as_ref()
        .ok_or("no draws after the burn-in")?;

    let mut estimates = Table::new(&["estimate", "K", "E[VI]", "E[Binder]", "E[1-ARI]"]);
    let k_of = |name: &str| -> String {
        match name {
            "dahl" => summary.point_estimate.as_ref().map(|e| e.n_clusters),
            "map" => summary.map.as_ref().map(|e| e.n_clusters),
            _ => by_loss
                .estimates
                .iter()
                .find(|e| e.loss.name() == name)
                .map(|e| e.n_clusters),
        }
        .map_or("-".into(), |k| k.to_string())
    };
    for name in ["vi", "binder", "1-ari", "dahl", "map"] {
        let row = &by_loss.expected_losses[name];
        estimates.push(vec![
            name.to_string(),
            k_of(name),
            format!("{:.4}", row["vi"]),
            format!("{:.4}", row["binder"]),
            format!("{:.4}", row["1-ari"]),
        ]);
    }
    estimates.write_csv(&results.join("estimates.csv"))?;
    let b = &by_loss.credible_ball;
    let mut ball = Table::new(&["bound", "K", "VI from the estimate"]);
    for (name, bound) in [
        ("horizontal", &b.horizontal),
        ("vertical upper", &b.vertical_upper),
        ("vertical lower", &b.vertical_lower),
    ] {
        ball.push(vec![
            name.to_string(),
            bound.n_clusters.to_string(),
            format!("{:.3}", bound.distance),
        ]);
    }
    ball.write_csv(&results.join("ball.csv"))?;

    // The posterior predictive density with its 95% pointwise bands, and its modes: the grid
    // points above both neighbours with at least 1% of the highest density.
    let grid = density_grid(&model, &data, &summary.sources)?;
    let (x, bands) = (&grid.axes[0], &grid.bands);
    let mut density = Table::new(&["velocity", "mean", "lower", "upper"]);
    for (j, v) in x.iter().enumerate() {
        density.push(vec![
            format!("{v:.3}"),
            format!("{:.5}", bands.mean[j]),
            format!("{:.5}", bands.lower[j]),
            format!("{:.5}", bands.upper[j]),
        ]);
    }
    density.write_csv(&results.join("density.csv"))?;
    let peak = bands.mean.iter().fold(0.0f64, |a, &v| a.max(v));
    let modes: Vec<String> = (1..x.len() - 1)
        .filter(|&j| {
            let m = &bands.mean;
            m[j] > m[j - 1] && m[j] >= m[j + 1] && m[j] >= 0.01 * peak
        })
        .map(|j| format!("{:.1}", x[j]))
        .collect();
    let draws = bands.draws;
    svg::density(
        &results.join("density.svg"),
        &DensityPicture {
            title: format!(
                "galaxies{}: posterior predictive density, 95% pointwise bands over {draws} draws",
                if real { "" } else { " (stand-in)" }
            ),
            points: data.clone(),
            columns: Some(vec!["velocity (1,000 km/s)".into()]),
            grid,
        },
    )?;

    let (k_vi, k_binder) = (k_of("vi"), k_of("binder"));
    let data_note = if real { "" } else { " (synthetic stand-in)" };
    let claims = vec![
        Claim {
            claim: format!("galaxies{data_note}: Binder's loss splits more than the VI"),
            paper: "Binder's estimate has more clusters than the VI estimate (qualitative)".into(),
            ours: format!("VI estimate K = {k_vi}, Binder estimate K = {k_binder}"),
            ratio: "—".into(),
            run: common::this_run(),
        },
        Claim {
            claim: format!("galaxies{data_note}: the credible ball shows the uncertainty"),
            paper: "95% credible ball in the VI around the VI estimate (qualitative)".into(),
            ours: format!(
                "radius {:.3} bits; vertical upper K = {}, lower K = {}, horizontal K = {}",
                b.radius,
                b.vertical_upper.n_clusters,
                b.vertical_lower.n_clusters,
                b.horizontal.n_clusters
            ),
            ratio: "—".into(),
            run: common::this_run(),
        },
        Claim {
            claim: format!("galaxies{data_note}: the density with bands"),
            paper: "not a figure restated from the paper: the data's known shape (Roeder 1990), \
                    a small group near 10, the bulk near 20-23, a small group near 33"
                .into(),
            ours: format!(
                "modes of the posterior mean density at {} (1,000 km/s)",
                modes.join(", ")
            ),
            ratio: "—".into(),
            run: common::this_run(),
        },
    ];
    common::write_claims(&results, &claims)?;
    println!("{}", estimates.markdown());
    println!("{}", ball.markdown());
    if !smoke {
        let readme = out.join("README.md");
        common::update_readme(&readme, "estimates", &estimates.markdown())?;
        common::update_readme(&readme, "ball", &ball.markdown())?;
        common::record_run(
            &readme,
            "`cargo run --release --example paper-wade-ghahramani-2018`",
        )?;
    }
    Ok(())
}
