//! `nrmm sva`: Lin's one-pass sequential variational approximation ([`nrmm::sva::run`]).

use crate::args::SvaArgs;
use crate::common::{build_model, flags};
use crate::output;
use nrmm::data::load;
use nrmm::run::record::Builtin;
use nrmm::run::DataSource;
use nrmm::sva::{PruneMerge, SvaConfig};
use nrmm::Result;

/// `nrmm sva`: one pass of SVA (or SVA-PM) over the data; prints a summary and, with
/// `--out`, writes `labels.txt` and `summary.json`.
pub fn sva(a: SvaArgs) -> Result<()> {
    let spec = a.model.spec();
    SvaConfig::check_model(&spec).map_err(flags)?;
    let pm = PruneMerge::default();
    let config = SvaConfig {
        alpha: spec.alpha.unwrap_or(1.0),
        epsilon: a.epsilon.unwrap_or(SvaConfig::DEFAULT_EPSILON),
        prune_merge: a.prune_merge.then(|| PruneMerge {
            prune_threshold: a.prune_threshold.unwrap_or(pm.prune_threshold),
            merge_threshold: a.merge_threshold.unwrap_or(pm.merge_threshold),
            check_interval: a.check_interval.unwrap_or(pm.check_interval),
        }),
    };
    config.validate().map_err(flags)?;
    let source = a.data.source();
    let (built, _) = build_model(&source, &spec, Builtin::Toy)?;
    // Held-out points are read as the data are: the same header and skipped columns.
    let heldout = match &a.heldout {
        Some(p) => {
            let d = DataSource {
                data: Some(p.clone()),
                ..source
            };
            Some(d.load(Builtin::Toy)?.dataset)
        }
        None => None,
    };
    let truth = match &a.labels {
        Some(p) => Some(load::load_labels(p, built.n_points())?),
        None => None,
    };
    let r = nrmm::sva::run(
        &built,
        &config,
        a.shuffle_seed,
        heldout.as_ref(),
        truth.as_deref(),
    )
    .map_err(flags)?;
    let on = if a.heldout.is_some() {
        "heldout"
    } else {
        "training"
    };
    if let Some(dir) = &a.out {
        output::create_dir(dir)?;
        load::write_labels(dir.join("labels.txt"), &r.labels)?;
        let data = a.data.data.clone().unwrap_or_default();
        let summary = r.summary(&config, a.shuffle_seed, &data, on);
        crate::common::write_pretty_json(&dir.join("summary.json"), &summary)?;
    }
    output::stdout(|out| {
        r.print(out, &config, on)?;
        if let Some(dir) = &a.out {
            writeln!(out, "wrote {}/labels.txt and summary.json", dir.display())?;
        }
        Ok(())
    })
}
