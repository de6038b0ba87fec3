//! `nrmm run --data-parallel`: one chain of the exact sub-cluster sampler with the points
//! spread over processes ([`nrmm::distributed`]): the MPI ranks of `mpirun -np R nrmm run
//! --data-parallel ...` in a build with the cargo feature `mpi`, one process otherwise. The
//! chain is the same, bit for bit, for any number of ranks.
//!
//! Every flag of `nrmm run` given on the command line is either honoured or refused by name
//! (see [`check`]): a flag the data-parallel chain does not implement never goes unnoticed.

use crate::args::{Cli, RunArgs, SweepCount};
use crate::common::Status;
use crate::{interrupt, output};
use clap::parser::ValueSource;
use clap::CommandFactory;
use nrmm::data::load::Format;
use nrmm::distributed::run::{run as run_chain, RunConfig};
use nrmm::distributed::sampler::normal_wishart_shard;
use nrmm::distributed::{read_share, Comm, Source};
use nrmm::model::{KernelKind, NwDefaults};
use nrmm::run::{MoveSettings, SamplerKind, Start};
use nrmm::sampler::dpmm::{SubClusterOptions, LAUNCH_SAMPLE};
use nrmm::{Error, Result};

/// The number of processes the MPI launcher (mpirun, mpiexec or srun) started, if this
/// process is one of them.
fn launched_ranks() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_SIZE",
        "SLURM_STEP_NUM_TASKS",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse::<usize>().ok())
}

/// Refuses a run that is not data-parallel when it is one of several MPI ranks: each rank
/// would run the whole data set and write the same outputs.
pub fn refuse_under_mpi() -> Result<()> {
    match launched_ranks() {
        Some(r) if r > 1 => Err(Error::Usage(format!(
            "this is one of {r} MPI ranks: add --data-parallel (with --sampler subcluster) to \
             spread one chain over them, or run without mpirun"
        ))),
        _ => Ok(()),
    }
}

/// What to do instead of a flag that `--data-parallel` does not implement.
fn advice(id: &str) -> &'static str {
    match id {
        "seconds" => "give --sweeps N (all ranks must stop at the same sweep)",
        "chains" | "chain_offset" => {
            "it runs one chain over all ranks; for more chains run more jobs with other --seed \
             values"
        }
        "thin" | "burn_in" => {
            "it traces every sweep and writes the last labels, no draws or point estimate; \
             thin or cut trace.tsv afterwards"
        }
        "resume" => "continue with the same flags and --out DIR plus --continue",
        "gibbs_sweeps" | "gibbs_subset" | "global_moves" | "depth" => {
            "it is not a setting of the sub-cluster sampler (--proposals and --launch-scans are)"
        }
        "beta" => "it is the Multinomial-Dirichlet kernel's; --data-parallel uses Normal-Wishart",
        "nw_xi" | "nw_psi" | "nw_r" | "nw_nu" | "kernel_hyperpriors" => {
            "the Normal-Wishart hyperparameters are the scaled defaults, computed over all \
             ranks' points; run without it"
        }
        "header" | "skip_columns" => {
            "it reads numeric dense text (a first line without numbers is skipped as a header); \
             remove the columns from the file first"
        }
        _ => "run without it",
    }
}

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

/// The flags `--data-parallel` honours (some only with certain values, checked in [`check`]).
const HONOURED: &[&str] = &[
    "data",
    "data_format",
    "kernel",
    "nw_defaults",
    "prior",
    "alpha",
    "sigma",
    "u",
    "hyperpriors",
    "sampler",
    "proposals",
    "launch_scans",
    "init",
    "seed",
    "sweeps",
    "checkpoint_every",
    "out",
    "force",
    "data_parallel",
    "block",
    "continue_run",
];

/// Checks that the run's flags fit a data-parallel run: `given` are the flags given on the
/// command line (id, `--name`). Every flag is honoured or refused here, naming it and what to
/// do instead.
fn check(a: &RunArgs, given: &[(String, String)]) -> Result<()> {
    let refuse = |flag: &str, why: &str| {
        Err(Error::Usage(format!(
            "--data-parallel does not support {flag}: {why}"
        )))
    };
    if let Some((id, flag)) = given
        .iter()
        .find(|(id, _)| !HONOURED.contains(&id.as_str()))
    {
        return refuse(flag, advice(id));
    }
    if a.sampler.sampler != SamplerKind::Subcluster {
        return Err(Error::Usage(format!(
            "--data-parallel runs the exact sub-cluster sampler, not --sampler {}: add \
             --sampler subcluster",
            a.sampler.sampler.name()
        )));
    }
    let m = &a.model;
    if let Some(k) = m.kernel.filter(|&k| k != KernelKind::Nw) {
        let name = match k {
            KernelKind::Md => "md",
            KernelKind::Diag => "diag",
            KernelKind::Nw => "nw",
        };
        return refuse(
            &format!("--kernel {name}"),
            "it runs the Normal-Wishart kernel (--kernel nw) on real vectors",
        );
    }
    if m.nw_defaults != NwDefaults::Scaled {
        return refuse(
            "--nw-defaults reference",
            "it uses the scaled defaults, computed over all ranks' points",
        );
    }
    if !matches!(a.init, Start::Auto | Start::Single) {
        return refuse(
            "this --init",
            "the chain starts from one cluster (--init single)",
        );
    }
    if a.data.format.is_some_and(|f| f != Format::Dense) {
        return refuse(
            "this --format",
            "it reads dense text (--format dense); convert the data, e.g. with numpy.savetxt",
        );
    }
    if let Some(path) = &a.data.data {
        let name = path.to_string_lossy();
        if name == "-" {
            return refuse(
                "--data - (standard input)",
                "every rank reads its own rows of a file: give a file",
            );
        }
        let lower = name.to_lowercase();
        if [".gz", ".npy", "ubyte", ".ldac"]
            .iter()
            .any(|s| lower.ends_with(s))
            || lower.contains("docword")
        {
            return refuse(
                &format!("--data {name}"),
                "it reads uncompressed dense text; decompress or convert the file first",
            );
        }
    }
    Ok(())
}

/// Runs the chain on this process's rank; rank 0 prints what was written (standard output)
/// and, after a stop, how to go on (standard error).
pub fn run(a: &RunArgs) -> Result<Status> {
    check(a, &given_flags())?;
    #[cfg(feature = "mpi")]
    let comm = nrmm::distributed::MpiComm::init()?;
    #[cfg(not(feature = "mpi"))]
    let comm = nrmm::distributed::Single;
    if let Some(r) = launched_ranks().filter(|&r| r != comm.size()) {
        return Err(Error::Usage(if cfg!(feature = "mpi") {
            format!(
                "the launcher started {r} processes but MPI sees {}: this nrmm was built \
                 against another MPI library than the mpirun that started it; build and run \
                 with the same MPI",
                comm.size()
            )
        } else {
            format!(
                "this nrmm was built without the cargo feature mpi, so each of the {r} \
                 processes would run the whole chain: build it with cargo build --release \
                 --features mpi (needs an MPI library and libclang), or run one process"
            )
        }));
    }
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
    if out.join("run.json").exists() {
        return Err(Error::Usage(format!(
            "{} holds a run of nrmm run without --data-parallel, whose chain directories would \
             be mistaken for this run's: choose another --out",
            out.display()
        )));
    }
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
        sweeps: match a.sweeps {
            None => 1000,
            Some(SweepCount::Count(n)) => n,
            Some(SweepCount::Auto) => {
                return Err(Error::Usage(
                    "--sweeps auto is not available with --data-parallel (its rounds need \
                     several chains): give --sweeps N"
                        .into(),
                ))
            }
        },
        options: SubClusterOptions {
            launch_iters: a.sampler.moves.launch_scans,
            proposals: a
                .sampler
                .moves
                .proposals
                .unwrap_or_else(|| MoveSettings::default_proposals(shard.layout.n())),
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
