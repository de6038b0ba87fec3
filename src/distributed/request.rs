//! What a data-parallel run can be asked for. It runs one chain of the exact sub-cluster
//! sampler with the Normal-Wishart kernel at its scaled defaults, so of the settings of an
//! ordinary run ([`crate::run`]) it honours only some: every other one given is refused,
//! naming it and what to do instead, so that none goes silently unheeded. Settings are named
//! by their parameter names, which front ends rename ([`Error::rename_parameters`]).

use std::path::Path;

use crate::data::load::Format;
use crate::error::{Error, Result};
use crate::model::{KernelKind, ModelSpec, NwDefaults};
use crate::run::spec::SweepCount;
use crate::run::{SamplerKind, Start};

/// The settings a data-parallel run honours when given (some only with certain values,
/// [`check`]): the data file and format, the prior, the sub-cluster sampler's proposals and
/// launch scans, the start, the seed, the sweeps, checkpoints, the output, and its own
/// `data_parallel`, `block` and `continue_run`.
pub const HONOURED: &[&str] = &[
    "data",
    "data_format",
    "kernel",
    "nw_defaults",
    "prior",
    "alpha",
    "sigma",
    "u",
    "gamma",
    "k_prior",
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

/// What to do instead of giving `name`, a setting a data-parallel run does not honour.
fn advice(name: &str) -> &'static str {
    match name {
        "seconds" => "give `sweeps` N (all ranks must stop at the same sweep)",
        "chains" | "chain_offset" => {
            "it runs one chain over all ranks; for more chains run more jobs with other `seed` \
             values"
        }
        "thin" | "burn_in" => {
            "it traces every sweep and writes the last labels, no draws or point estimate; \
             thin or cut trace.tsv afterwards"
        }
        "resume" => "continue with the same flags and `out` DIR plus `continue_run`",
        "gibbs_sweeps" | "gibbs_subset" | "global_moves" | "depth" => {
            "it is not a setting of the sub-cluster sampler (`proposals` and `launch_scans` \
             are)"
        }
        "beta" => "it is the Multinomial-Dirichlet kernel's; `data_parallel` uses Normal-Wishart",
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

/// The refusal of `what` (a setting, or a setting with its value), saying why.
fn refuse(what: &str, why: &str) -> Result<()> {
    Err(Error::Usage(format!(
        "`data_parallel` does not support {what}: {why}"
    )))
}

/// Checks that a data-parallel run can honour what was asked: `given` are the names of the
/// settings given explicitly (the defaults of the others fit), and the values are those of
/// the run (`data` and `format` as given). Errors on the first setting it cannot honour,
/// naming it and what to do instead.
pub fn check<'a>(
    given: impl IntoIterator<Item = &'a str>,
    model: &ModelSpec,
    sampler: SamplerKind,
    init: &Start,
    data: Option<&Path>,
    format: Option<Format>,
) -> Result<()> {
    if let Some(name) = given.into_iter().find(|n| !HONOURED.contains(n)) {
        return refuse(&format!("`{name}`"), advice(name));
    }
    if sampler != SamplerKind::Subcluster {
        return Err(Error::Usage(format!(
            "`data_parallel` runs the exact sub-cluster sampler, not `sampler` {sampler}: add \
             `sampler` subcluster"
        )));
    }
    if let Some(k) = model.kernel.filter(|&k| k != KernelKind::Nw) {
        return refuse(
            &format!("`kernel` {}", k.name()),
            "it runs the Normal-Wishart kernel (`kernel` nw) on real vectors",
        );
    }
    if model.nw_defaults == NwDefaults::Reference {
        return refuse(
            "`nw_defaults` reference",
            "it uses the scaled defaults, computed over all ranks' points",
        );
    }
    if !matches!(init, Start::Auto | Start::Single) {
        return refuse(
            "this `init`",
            "the chain starts from one cluster (`init` single)",
        );
    }
    if format.is_some_and(|f| f != Format::Dense) {
        return refuse(
            "this `data_format`",
            "it reads dense text (`data_format` dense); convert the data, e.g. with \
             numpy.savetxt",
        );
    }
    let Some(path) = data else {
        return Ok(());
    };
    let name = path.to_string_lossy();
    if name == "-" {
        return refuse(
            "`data` - (standard input)",
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
            &format!("`data` {name}"),
            "it reads uncompressed dense text; decompress or convert the file first",
        );
    }
    Ok(())
}

/// Checks that `out` can take a data-parallel run: it must not hold an ordinary run, and a
/// data-parallel run it holds is continued (`continue_run`) or replaced (`force`), never
/// overwritten unasked.
pub fn check_out(out: &Path, continue_run: bool, force: bool) -> Result<()> {
    if out.join("run.json").exists() {
        return Err(Error::Usage(format!(
            "{} holds a run of nrmm run without `data_parallel`, whose chain directories would \
             be mistaken for this run's: choose another `out`",
            out.display()
        )));
    }
    if !continue_run && super::run::manifest_path(out).exists() && !force {
        return Err(Error::Usage(format!(
            "{} holds a run: give `continue_run` to go on with it, or `force` to replace it",
            out.display()
        )));
    }
    Ok(())
}

/// The number of processes the MPI launcher (mpirun, mpiexec or srun) started, if this
/// process is one of them.
pub fn launched_ranks() -> Option<usize> {
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
            "this is one of {r} MPI ranks: add `data_parallel` (with `sampler` subcluster) to \
             spread one chain over them, or run without mpirun"
        ))),
        _ => Ok(()),
    }
}

/// Sweeps a data-parallel run does without a `sweeps` count.
pub const DEFAULT_SWEEPS: u64 = 1000;

/// The sweeps of a data-parallel run: the count given, else [`DEFAULT_SWEEPS`]. Refuses
/// `sweeps` auto, whose rounds compare several chains.
pub fn sweeps(given: Option<SweepCount>) -> Result<u64> {
    match given {
        None => Ok(DEFAULT_SWEEPS),
        Some(SweepCount::Count(n)) => Ok(n),
        Some(SweepCount::Auto) => Err(Error::Usage(
            "`sweeps` auto is not available with `data_parallel` (its rounds need several \
             chains): give `sweeps` N"
                .into(),
        )),
    }
}

/// Checks that the message layer sees the `ranks` processes the launcher started: a build
/// without the feature `mpi`, or against another MPI library than the launcher's, would run
/// the whole chain on each.
pub fn check_ranks(ranks: usize) -> Result<()> {
    let Some(r) = launched_ranks().filter(|&r| r != ranks) else {
        return Ok(());
    };
    Err(Error::Usage(if cfg!(feature = "mpi") {
        format!(
            "the launcher started {r} processes but MPI sees {ranks}: this nrmm was built \
             against another MPI library than the mpirun that started it; build and run with \
             the same MPI"
        )
    } else {
        format!(
            "this nrmm was built without the cargo feature mpi, so each of the {r} processes \
             would run the whole chain: build it with cargo build --release --features mpi \
             (needs an MPI library and libclang), or run one process"
        )
    }))
}
