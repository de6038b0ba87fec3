//! One seeded run of a sampler over a dense data file with the library's runner, written to a
//! run directory like `nrmm run` writes one:
//!
//! ```text
//! cargo run --release --example seeded_run -- DATA OUT SAMPLER SEED CHAINS SWEEPS
//! ```
//!
//! The same seed gives the same chains here, from `nrmm run --seed SEED` and from the Python
//! package's `MixtureModel(random_state=SEED)`: the Python tests compare the three runs' traces.

use nrmm::data::{load::load_dense, Dataset};
use nrmm::model::{Model, ModelSpec};
use nrmm::run::{pilot, Budget, MoveSettings, Runner, SamplerSpec};
use nrmm::{Error, Result};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [data, out, sampler, seed, chains, sweeps] = args.as_slice() else {
        return Err(Error::Usage(
            "usage: seeded_run DATA OUT SAMPLER SEED CHAINS SWEEPS".into(),
        ));
    };
    let number = |name: &str, text: &str| -> Result<u64> {
        text.parse()
            .map_err(|_| Error::param(name, text, "a non-negative integer"))
    };
    let model = Model::build(&ModelSpec::default(), Dataset::Dense(load_dense(data)?))?;
    let seed = number("seed", seed)?;
    // The default cluster scale comes from a pilot run, as in the front ends.
    let model = pilot::settled(model, seed)?;
    let mut spec = SamplerSpec {
        seed,
        chains: number("chains", chains)? as usize,
        budget: Budget::Sweeps(number("sweeps", sweeps)?),
        ..SamplerSpec::new(sampler.parse()?)
    };
    // The front ends' default: one split-merge proposal per 100 points.
    spec.sampler.moves.proposals = MoveSettings::default_proposals(model.n_points());
    let summary = Runner::new(&model, spec, out)
        .replace(true)
        .run()?
        .summary()?;
    let k = summary.point_estimate.map(|e| e.n_clusters);
    println!("wrote {out}: point estimate with {k:?} clusters");
    Ok(())
}
