//! The tree-guided parts of the command line: the `tree` verb (build and export an IBHC or
//! BHC forest), the `tgmcmc` and `tgmcmc-paper` samplers of `run` and `check-exact`, and the
//! IBHC initialisations of `run`.

use crate::args::{DataArgs, FormatArg, ModelArgs, SamplerArgs};
use crate::output;
use clap::{Args, ValueEnum};
use nrmm::kernel::ConjugateKernel;
use nrmm::prior::Prior;
use nrmm::rng::SeedPlan;
use nrmm::run::Scheduled;
use nrmm::sampler::tgmcmc::{tgmcmc_paper_schedule, tgmcmc_schedule};
use nrmm::sampler::{GibbsScan, RngChooser};
use nrmm::tree::{Forest, IbhcMode, NewickInfo};
use nrmm::{with_kernel, Error, Result};
use std::path::PathBuf;

/// Export formats of `nrmm tree`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TreeFormat {
    /// Graphviz DOT: one digraph, leaves labelled by point index (0-based), internal nodes by
    /// size and ln d.
    Dot,
    /// Newick, one tree per line (one tree per cluster), leaves by point index (0-based).
    Newick,
}

/// `nrmm tree`.
#[derive(Debug, Args)]
pub struct TreeArgs {
    /// Data file.
    #[arg(long)]
    pub data: PathBuf,
    /// Format of the data file (detected from the file when omitted).
    #[arg(long, value_enum)]
    pub data_format: Option<FormatArg>,
    /// The first line of dense text is a header of column names, even if they are numbers (a
    /// first line without any number is taken as a header anyway).
    #[arg(long)]
    pub header: bool,
    /// Columns of dense data to leave out, comma-separated: numbers from 1, or header names.
    #[arg(long, value_delimiter = ',', value_name = "COLUMNS")]
    pub skip_columns: Vec<String>,
    /// The model whose potentials the trees are built with.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Exact IBHC: sequential insertion with destroy (the default).
    #[arg(long, conflicts_with_all = ["noisy", "greedy"])]
    pub exact: bool,
    /// Noisy IBHC: sequential insertion on top of the best tree, no descent (the reference's
    /// initialisation).
    #[arg(long, conflicts_with = "greedy")]
    pub noisy: bool,
    /// Greedy agglomerative BHC (O(n²) pair evaluations).
    #[arg(long)]
    pub greedy: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TreeFormat::Newick)]
    pub format: TreeFormat,
    /// Label the internal nodes of a Newick export with their ln d.
    #[arg(long)]
    pub ln_d: bool,
    /// Seed of the IBHC insertion order.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Output file (standard output when omitted).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// How `nrmm tree` builds the forest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Build {
    Ibhc(IbhcMode),
    Greedy,
}

/// `nrmm tree`: builds the forest of the data under the model (hyperparameters at their
/// initial values) and writes it as DOT or Newick; a one-line summary goes to standard error
/// when the forest is written to a file.
pub fn tree(a: TreeArgs) -> Result<()> {
    if a.ln_d && a.format != TreeFormat::Newick {
        return Err(Error::Usage(
            "--ln-d labels Newick exports; DOT labels every internal node with its ln d already"
                .into(),
        ));
    }
    let build = if a.noisy {
        Build::Ibhc(IbhcMode::Noisy)
    } else if a.greedy {
        Build::Greedy
    } else {
        Build::Ibhc(IbhcMode::Exact)
    };
    let data = DataArgs {
        data: Some(a.data.clone()),
        format: a.data_format,
        header: a.header,
        skip_columns: a.skip_columns.clone(),
    };
    let (kernel, prior, _) =
        crate::commands::build(&data, &a.model, crate::commands::Builtin::Toy)?;
    let (text, n_trees, n) = with_kernel!(&kernel, |k| {
        let forest = match build {
            Build::Ibhc(mode) => {
                let mut rng = SeedPlan::new(a.seed).chain(0);
                Forest::ibhc(k, &prior, mode, &mut RngChooser::new(&mut rng))?
            }
            Build::Greedy => Forest::greedy_bhc(k, &prior)?,
        };
        let text = match a.format {
            TreeFormat::Dot => forest.to_dot(),
            TreeFormat::Newick => forest.to_newick(if a.ln_d {
                NewickInfo::LnD
            } else {
                NewickInfo::Topology
            }),
        };
        Ok::<_, Error>((text, forest.n_roots(), k.n_points()))
    })?;
    match &a.out {
        Some(path) => {
            nrmm::run::write_atomic(path, text.as_bytes())?;
            output::stdout(|out| {
                writeln!(
                    out,
                    "wrote {n_trees} trees over {n} points to {}",
                    path.display()
                )
            })
        }
        None => output::stdout(|out| write!(out, "{text}")),
    }
}

/// The schedule of `--sampler tgmcmc`: `--global-moves` TG-SAMS proposals, then
/// `--gibbs-sweeps` Gibbs scans (`--gibbs-subset` points each, or all), then the
/// hyperparameter move when anything is resampled. The canonical trees are built at
/// `initial`, the run's prior with its initial hyperparameters (rebuilt from the model flags
/// of `run.json` when a run is resumed), so that a resumed chain builds the trees of the chain
/// that never stopped.
pub fn tgmcmc<K: ConjugateKernel + 'static>(
    s: &SamplerArgs,
    resample_hyper: bool,
    initial: &Prior,
) -> Result<Vec<Scheduled<K, Prior>>> {
    if s.moves.depth.is_some() {
        return Err(Error::Usage(
            "--depth sets the tree-selected local moves of tgmcmc-paper; the exact tgmcmc runs \
             Gibbs scans instead (--gibbs-sweeps, --gibbs-subset)"
                .into(),
        ));
    }
    if s.moves.global_moves == 0 && s.moves.gibbs_sweeps == 0 {
        return Err(Error::Usage(
            "--global-moves 0 with --gibbs-sweeps 0 leaves nothing to do".into(),
        ));
    }
    let scan = match s.moves.gibbs_subset {
        Some(0) => return Err(Error::param("--gibbs-subset", 0, "at least 1")),
        Some(m) => GibbsScan::Subset(m),
        None => GibbsScan::Full,
    };
    tgmcmc_schedule(
        initial,
        s.moves.global_moves,
        scan,
        s.moves.gibbs_sweeps,
        resample_hyper,
    )
}

/// The schedule of `--sampler tgmcmc-paper`: the reference sweep as one move
/// (`--global-moves` G, `--depth` D, default 2), with its own hyperparameter update.
pub fn tgmcmc_paper<K: ConjugateKernel + 'static>(
    s: &SamplerArgs,
    resample_hyper: bool,
) -> Result<Vec<Scheduled<K, Prior>>> {
    if s.moves.gibbs_subset.is_some() {
        return Err(Error::Usage(
            "tgmcmc-paper selects its local moves through the trees (--depth); --gibbs-subset \
             belongs to gibbs, jain-neal, sams and tgmcmc"
                .into(),
        ));
    }
    Ok(tgmcmc_paper_schedule(
        s.moves.global_moves,
        s.moves.depth.unwrap_or(2),
        resample_hyper,
    ))
}

/// The IBHC forest of `--init noisy-ibhc` (also `top-insert`) / `exact-ibhc`: the points
/// queued in a random order drawn from the chain's own initialisation stream, built at the
/// prior's initial hyperparameters; its clusters are the chain's start, and tgmcmc-paper starts
/// from the forest itself, as the reference code does. Cost: `O(n K)` pair marginals.
pub fn ibhc_forest<K: ConjugateKernel>(
    kernel: &K,
    prior: &Prior,
    mode: IbhcMode,
    seed: u64,
    chain: usize,
) -> Result<Forest<K>> {
    let mut rng = SeedPlan::new(seed).task(chain as u64, 0, 0);
    Forest::ibhc(kernel, prior, mode, &mut RngChooser::new(&mut rng))
}
