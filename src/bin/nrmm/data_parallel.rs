//! `nrmm run --data-parallel`: one chain of the exact sub-cluster sampler with the points
//! spread over processes ([`nrmm::distributed`]): the MPI ranks of `mpirun -np R nrmm run
//! --data-parallel ...` in a build with the cargo feature `mpi`, one process otherwise. The
//! chain is the same, bit for bit, for any number of ranks.
//!
//! Every flag of `nrmm run` given on the command line is either honoured or refused by name
//! ([`request::check`]): a flag the data-parallel chain does not implement never goes
//! unnoticed.

use crate::args::{Cli, RunArgs};
use crate::common::{flags, Status};
use crate::{interrupt, output};
use clap::parser::ValueSource;
use clap::CommandFactory;
use nrmm::distributed::run::{run as run_chain, RunConfig};
use nrmm::distributed::sampler::normal_wishart_shard;
use nrmm::distributed::{read_share, request, Comm, Source};
use nrmm::run::{MoveSettings, SamplerKind};
use nrmm::sampler::dpmm::{SubClusterOptions, LAUNCH_SAMPLE};
use nrmm::{Error, Result};

/// The `run` flags given on this process's command line, by argument id, with their long
/// names. The command line is parsed again, since [`RunArgs`] holds defaults and given values
/// alike.
fn given_flags() -> Vec<(String, String)> {
    let cmd = Cli::command();
    let Ok(matches) = cmd.clone().try_get_matches_from(std::env::args_os()) else {
        return Vec::new();
    };
    let (Some(run), Some(run_cmd)) = (
        matches.subcommand_matches("run"),
        cmd.find_subcommand("run"),
    ) else {
        return Vec::new();
    };
    run_cmd
        .get_arguments()
        .filter(|arg| {
            let id = arg.get_id().as_str();
            run.try_contains_id(id).unwrap_or(false)
                && run.value_source(id) == Some(ValueSource::CommandLine)
        })
        .map(|arg| {
            let long = arg.get_long().unwrap_or(arg.get_id().as_str());
            (arg.get_id().to_string(), format!("--{long}"))
        })
        .collect()
}

/// Runs the chain on this process's rank; rank 0 prints what was written (standard output)
/// and, after a stop, how to go on (standard error).
pub fn run(a: &RunArgs) -> Result<Status> {
    let given = given_flags();
    // A refused flag is named as it was given, also one the library's names do not know.
    let as_given = |n: &str| {
        given
            .iter()
            .find(|(id, _)| id == n)
            .map(|(_, long)| long.clone())
    };
    request::check(
        given.iter().map(|(id, _)| id.as_str()),
        &a.model.spec(),
        // A data-parallel run is asked for by its sampler, never chosen by size.
        a.sampler.sampler.unwrap_or_default(),
        &a.init,
        a.data.data.as_deref(),
        a.data.format,
    )
    .map_err(|e| e.rename_parameters(&|n| crate::common::flag(n).or_else(|| as_given(n))))?;
    #[cfg(feature = "mpi")]
    let comm = nrmm::distributed::MpiComm::init()?;
    #[cfg(not(feature = "mpi"))]
    let comm = nrmm::distributed::Single;
    request::check_ranks(comm.size()).map_err(flags)?;
    let outcome = run_on(&comm, a);
    if let Err(e) = &outcome {
        if comm.size() > 1 {
            // The other ranks wait on this one: end them all, with the reason.
            output::report_error(&format!("rank {}: {e}", comm.rank()));
            comm.abort(1);
        }
    }
    outcome
}

fn run_on(comm: &dyn Comm, a: &RunArgs) -> Result<Status> {
    let p = &a.parallel;
    let data = a
        .data
        .data
        .as_ref()
        .ok_or_else(|| Error::Usage("--data-parallel needs --data FILE".into()))?;
    let out = a
        .out
        .clone()
        .ok_or_else(|| Error::Usage("--out DIR is required".into()))?;
    request::check_out(&out, p.continue_run, a.force).map_err(flags)?;
    let spec = a.model.spec();
    let prior = spec.build_prior()?;
    let source = Source::from_arg(&data.to_string_lossy());
    let (points, layout) = read_share(comm, &source, p.block).map_err(flags)?;
    let shard = normal_wishart_shard(comm, points, layout)?;
    let cfg = RunConfig {
        seed: a.seed,
        sweeps: request::sweeps(a.sweeps).map_err(flags)?,
        options: SubClusterOptions {
            launch_iters: a.sampler.moves.launch_scans,
            proposals: a.sampler.moves.proposals.unwrap_or_else(|| {
                MoveSettings::default_proposals_for(SamplerKind::Subcluster, shard.layout.n())
            }),
        },
        launch_sample: LAUNCH_SAMPLE,
        resample_hyper: spec.resamples_hyper(),
        out: out.clone(),
        checkpoint_every: a.checkpoint_every.unwrap_or(0),
        continue_run: p.continue_run,
    };
    interrupt::install();
    let report = run_chain(comm, &shard, prior, &cfg, interrupt::flag()).map_err(flags)?;
    if comm.rank() == 0 {
        let line = format!(
            "wrote {}: {} points on {} ranks, {} sweeps, {} clusters, {:.3} sweeps/s, {:.0} \
             bytes sent per sweep",
            out.display(),
            shard.layout.n(),
            comm.size(),
            report.sweeps,
            report.clusters,
            report.sweeps_per_second,
            report.bytes_per_sweep
        );
        output::stdout(|o| writeln!(o, "{line}"))?;
        if report.stopped {
            output::report_line(&format!(
                "stopped at sweep {}: the same command with --continue goes on",
                report.sweeps
            ));
        }
    }
    Ok(if report.stopped {
        Status::Interrupted
    } else {
        Status::Done
    })
}
