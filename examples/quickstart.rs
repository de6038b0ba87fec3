//! Runs four SAMS chains on the built-in toy data, reads their summary, then resumes them
//! from their checkpoints to twice the budget: `cargo run --release --example quickstart`.

use nrmm::data::{generate::toy_like, Dataset};
use nrmm::model::{Model, ModelSpec};
use nrmm::run::{pilot, Budget, Runner, SamplerKind, SamplerSpec};

fn main() -> nrmm::Result<()> {
    let model = Model::build(&ModelSpec::default(), Dataset::Dense(toy_like(1).0))?;
    let spec = SamplerSpec {
        budget: Budget::Sweeps(200),
        checkpoint_every: Some(50),
        ..SamplerSpec::new(SamplerKind::Sams)
    };
    // The default cluster scale: a short pilot run's pooled within-cluster covariance.
    let model = pilot::settled(model, spec.seed)?;
    let dir = std::env::temp_dir().join("nrmm-quickstart");
    let summary = Runner::new(&model, spec, &dir)
        .replace(true)
        .run()?
        .summary()?;
    println!(
        "{} chains, K at the point estimate: {:?}",
        summary.chains.len(),
        summary.point_estimate.map(|e| e.n_clusters)
    );
    let resumed = Runner::resume(&model, &dir)?
        .budget(Budget::Sweeps(400))
        .run()?;
    resumed
        .summary()?
        .print(&mut std::io::stdout())
        .map_err(|e| nrmm::Error::Usage(e.to_string()))
}
