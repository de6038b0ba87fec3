//! `nrmm run --data-parallel`: one chain of the exact sub-cluster sampler with the points
//! spread over processes ([`nrmm::distributed`]): the MPI ranks of `mpirun -np R nrmm run
//! --data-parallel ...` in a build with the cargo feature `mpi`, one process otherwise. The
//! chain is the same, bit for bit, for any number of ranks.

use crate::args::RunArgs;
use crate::common::Status;
use crate::{interrupt, output};
use nrmm::distributed::run::{run as run_chain, RunConfig};
use nrmm::distributed::sampler::normal_wishart_shard;
use nrmm::distributed::{read_share, Comm, Source};
use nrmm::model::{KernelKind, NwDefaults};
use nrmm::run::{SamplerKind, Start};
use nrmm::sampler::dpmm::{SubClusterOptions, LAUNCH_SAMPLE};
use nrmm::{Error, Result};

/// Refuses a run that is not data-parallel when it is one of several MPI ranks: each rank
/// would run the whole data set and write the same outputs.
pub fn refuse_under_mpi() -> Result<()> {
    let ranks = [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_SIZE",
        "SLURM_NTASKS",
    ]
    .iter()
    .filter_map(|v| std::env::var(v).ok()?.parse::<usize>().ok())
    .next();
    match ranks {
        Some(r) if r > 1 && std::env::var_os("OMPI_COMM_WORLD_RANK").is_some() => {
            Err(Error::Usage(format!(
                "this is one of {r} MPI ranks: add --data-parallel (with --sampler subcluster) \
                 to spread one chain over them, or run without mpirun"
            )))
        }
        _ => Ok(()),
    }
}

/// Checks that the run's flags fit a data-parallel run.
fn check(a: &RunArgs) -> Result<()> {
    let unsupported = |what: &str| {
        Err(Error::Usage(format!(
            "--data-parallel does not support {what}"
        )))
    };
    if a.sampler.sampler != SamplerKind::Subcluster {
        return unsupported("this sampler: it runs --sampler subcluster");
    }
    if a.resume.is_some() {
        return unsupported("--resume: give --continue with the same flags");
    }
    if a.seconds.is_some() {
        return unsupported("--seconds: give --sweeps");
    }
    if a.chains != 4 && a.chains != 1 {
        return unsupported("several chains: it runs one chain over all ranks");
    }
    if !matches!(a.init, Start::Auto | Start::Single) {
        return unsupported("this --init: chains start from one cluster");
    }
    let m = &a.model;
    if !matches!(m.kernel, None | Some(KernelKind::Nw))
        || m.nw_xi.is_some()
        || m.nw_psi.is_some()
        || m.nw_r.is_some()
        || m.nw_nu.is_some()
        || m.nw_defaults != NwDefaults::Scaled
    {
        return unsupported(
            "other kernels or Normal-Wishart settings: it uses the Normal-Wishart kernel with \
             its unit-equivariant defaults",
        );
    }
    if a.data.format.is_some() {
        return unsupported("--format: it reads dense text");
    }
    Ok(())
}

/// Runs the chain on this process's rank; rank 0 prints what was written.
pub fn run(a: &RunArgs) -> Result<Status> {
    check(a)?;
    #[cfg(feature = "mpi")]
    let comm = nrmm::distributed::MpiComm::init()?;
    #[cfg(not(feature = "mpi"))]
    let comm = nrmm::distributed::Single;
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
    let manifest = out.join("checkpoint").join("manifest.json");
    if !p.continue_run && manifest.exists() && !a.force {
        return Err(Error::Usage(format!(
            "{} holds a run: give --continue to go on with it, or --force to replace it",
            out.display()
        )));
    }
    let spec = a.model.spec();
    let prior = spec.build_prior()?;
    let source = Source::from_arg(&data.to_string_lossy());
    let (points, layout) = read_share(comm, &source, p.block)?;
    let shard = normal_wishart_shard(comm, points, layout)?;
    let cfg = RunConfig {
        seed: a.seed,
        sweeps: a.sweeps.unwrap_or(1000),
        options: SubClusterOptions {
            launch_iters: a.sampler.moves.launch_scans,
            proposals: a.sampler.moves.proposals.unwrap_or(1),
        },
        launch_sample: LAUNCH_SAMPLE,
        resample_hyper: spec.resamples_hyper(),
        out: out.clone(),
        checkpoint_every: a.checkpoint_every.unwrap_or(0),
        resume: p.continue_run,
    };
    interrupt::install();
    let report = run_chain(comm, &shard, prior, &cfg, interrupt::flag())?;
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
        output::report_line(&line);
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
