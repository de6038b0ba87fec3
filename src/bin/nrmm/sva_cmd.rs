//! `nrmm sva`: Lin's one-pass sequential variational approximation ([`nrmm::sva::run`]).

use crate::args::SvaArgs;
use crate::common::{build_model, flags};
use crate::output;
use nrmm::data::load;
use nrmm::run::record::Builtin;
use nrmm::sva::{PruneMerge, SvaConfig};
use nrmm::Result;
use std::path::PathBuf;

/// `nrmm sva`: one pass of SVA (or SVA-PM) over the data; prints a summary and, with
/// `--out`, writes `labels.txt` and `summary.json`.
pub fn sva(a: SvaArgs) -> Result<()> {
    let spec = a.model.spec();
    SvaConfig::check_model(&spec).map_err(flags)?;
    let config = SvaConfig {
        alpha: spec.alpha.unwrap_or(1.0),
        epsilon: a.epsilon.unwrap_or(SvaConfig::DEFAULT_EPSILON),
        prune_merge: a
            .prune_merge
            .then(|| PruneMerge::given(a.prune_threshold, a.merge_threshold, a.check_interval)),
        prior: SvaConfig::rule_of(&spec).map_err(flags)?,
    };
    config.validate().map_err(flags)?;
    let source = a.data.source();
    let (built, _) = build_model(&source, &spec, Builtin::Toy)?;
    let read = |p: &PathBuf| {
        source
            .other_file(p.clone(), source.data_format)
            .load(Builtin::Toy)
    };
    let heldout = a.heldout.as_ref().map(read).transpose()?.map(|l| l.dataset);
    let truth = (a.labels.as_ref())
        .map(|p| load::load_labels(p, built.n_points()))
        .transpose()?;
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
        let data = a.data.data.clone().unwrap_or_default();
        r.write(dir, &config, a.shuffle_seed, &data, on)?;
    }
    output::stdout(|out| {
        r.print(out, &config, on)?;
        if let Some(dir) = &a.out {
            writeln!(out, "wrote {}/labels.txt and summary.json", dir.display())?;
        }
        Ok(())
    })
}
