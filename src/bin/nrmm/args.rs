//! Command-line arguments of `nrmm`.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use nrmm::data::load::Format;
use nrmm::data::synthetic::SyntheticKind;
use nrmm::model::{KernelKind, ModelSpec, NwDefaults, PriorKind, RealColumns};
use nrmm::prior::KPrior;
use nrmm::run::spec::SweepCount;
use nrmm::run::{DataSource, MoveSettings, SamplerKind, SamplerSettings, Start};
use nrmm::Choice;
use nrmm::Result;
use std::path::PathBuf;

/// Bayesian nonparametric mixture models on normalized random measures.
///
/// Exit status: 0 on success, 1 when a verb fails (bad input file, impossible parameter, a
/// file that cannot be written), 2 when the command line itself is malformed.
#[derive(Debug, Parser)]
#[command(
    name = "nrmm",
    version,
    about,
    long_about = None,
    after_help = "Exit status: 0 on success, 1 when a verb fails, 2 when the command line is malformed."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the log joint of a given clustering under the model.
    Loglik(LoglikArgs),
    /// Print the exact posterior over partitions of a small data set (n ≤ 12).
    Exact(ExactArgs),
    /// Write a synthetic data set (and its true labels).
    Generate(GenerateArgs),
    /// Run MCMC chains and write traces, final labels and a summary.
    Run(RunArgs),
    /// Run a sampler on a tiny data set (n ≤ 10) and compare it with the exact posterior.
    CheckExact(CheckExactArgs),
    /// Recompute diagnostics from the traces of one or more run directories (chains run as
    /// separate processes or on separate machines are merged).
    Diagnose(DiagnoseArgs),
    /// Assign new points to the clusters of a run's Dahl estimate (estimate-dahl.txt: a
    /// draw, whose hyperparameters the predictive uses).
    Predict(PredictArgs),
    /// Fill the missing entries of a table run's data from the posterior predictive over the
    /// run's draws; write the table, each filled entry's probability or spread, and the
    /// clusters' profiles per column.
    Impute(ImputeArgs),
    /// Run several samplers side by side under equal time budgets; write a table and plots.
    Compare(CompareArgs),
    /// Draw SVG plots of one or more run directories (or of a comparison).
    Plot(PlotArgs),
    /// Build the IBHC (or greedy BHC) forest of a data set and write it as DOT or Newick.
    Tree(TreeArgs),
    /// Fit a DP, Pitman-Yor or MFM mixture in one pass by Lin's sequential variational
    /// approximation (SVA, or SVA-PM with pruning and merging); write labels and a summary.
    Sva(SvaArgs),
}

/// The parser of a flag that takes one of the library's choices by name; `--help` lists them.
pub fn one_of<T: Choice>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(
        T::ALL
            .iter()
            .map(|c| PossibleValue::new(c.name()).help(c.about())),
    )
    .map(|s| T::named(&s).expect("clap accepts only the listed names"))
}

/// The parser of `--k-prior` (the library's [`KPrior::parse`], its message as the error).
fn parse_k_prior(text: &str) -> Result<KPrior, String> {
    KPrior::parse(text).map_err(|e| e.to_string())
}

/// `--data` of the verbs that have no built-in data set.
fn required_data(a: clap::Arg) -> clap::Arg {
    a.required(true).help(
        "Data file, or - for standard input: dense text (whitespace or CSV, a header line of \
         names detected), UCI docword, LDA-C, IDX, NumPy .npy, each also gzip-compressed",
    )
}

/// The data a verb reads.
#[derive(Debug, Args, Clone)]
pub struct DataArgs {
    /// Data file, or - for standard input; without it, the built-in default data set (a seeded
    /// 13-cluster 2-D mixture). Dense text (whitespace or CSV, a header line of names detected),
    /// UCI docword, LDA-C, IDX, NumPy .npy, each also gzip-compressed.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// File format (detected from the file's name and content when omitted).
    #[arg(id = "data_format", long = "format", value_name = "FORMAT", value_parser = one_of::<Format>())]
    pub format: Option<Format>,
    /// The first line of dense text is a header of column names, even if they are numbers (a
    /// first line without any number is taken as a header anyway).
    #[arg(long)]
    pub header: bool,
    /// Columns of dense data to leave out, comma-separated: numbers from 1, or header names
    /// (e.g. an id column: --skip-columns id).
    #[arg(long, value_delimiter = ',', value_name = "COLUMNS")]
    pub skip_columns: Vec<String>,
    /// Column types of a table, comma-separated NAME:TYPE with TYPE real, binary, cat or count
    /// (NAME from the header, or a number from 1), overriding the types inferred from the
    /// values (e.g. --types legs:count,month:cat).
    #[arg(long, value_delimiter = ',', value_name = "NAME:TYPE")]
    pub types: Vec<String>,
}

impl DataArgs {
    /// The library's record of where the data are, with the file as given.
    pub fn source(&self) -> DataSource {
        DataSource {
            data: self.data.clone(),
            data_format: self.format,
            data_header: self.header,
            skip_columns: self.skip_columns.clone(),
            column_types: self.types.clone(),
        }
    }
}

/// Model flags shared by every verb that builds a model.
#[derive(Debug, Args, Clone, PartialEq)]
pub struct ModelArgs {
    /// Conjugate kernel (default: nw for real data, or diag when a full covariance cannot be
    /// estimated, as for d ≥ n/2 or a constant column; md for counts).
    #[arg(long, value_parser = one_of::<KernelKind>())]
    pub kernel: Option<KernelKind>,
    /// Dirichlet concentration β > 0 of the Multinomial-Dirichlet kernel, or both parameters
    /// of the Beta(β, β) prior of each column of the Beta-Bernoulli kernel (default 0.1; count
    /// or binary data only).
    #[arg(long, allow_negative_numbers = true)]
    pub beta: Option<f64>,
    /// Normal-Wishart prior mean ξ, comma-separated (default: the data mean).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub nw_xi: Option<Vec<f64>>,
    /// Normal-Wishart scale Ψ, d·d comma-separated values row by row (default: see
    /// --nw-defaults); with --kernel diag, d values ψ_j, one per column.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub nw_psi: Option<Vec<f64>>,
    /// Normal-Wishart mean precision scale r (default 0.01; 0.1 with --nw-defaults
    /// reference).
    #[arg(long, allow_negative_numbers = true)]
    pub nw_r: Option<f64>,
    /// Normal-Wishart degrees of freedom ν > d - 1 (default d + 3 + d/2; d + 6 with
    /// --nw-defaults reference).
    #[arg(long, allow_negative_numbers = true)]
    pub nw_nu: Option<f64>,
    /// How the Normal-Wishart ξ, Ψ, r and ν not given are derived from the data: `pooled`
    /// (as `scaled`, then for `nrmm run` Ψ set so that a cluster's expected covariance is the
    /// pooled within-cluster covariance of the best partition of a pilot run of 2 chains of
    /// 200 sweeps, fewer for the full covariance kernel above 64 dimensions, and from 5,000
    /// points stopped at 50 or 100 when both chains' best states are one partition), `scaled` (Ψ
    /// proportional to the data covariance, so that a cluster's expected covariance is
    /// 10^(-2/d) of the data's, a tenth of its volume) or `reference`
    /// (the tgMCMC paper's code: det Ψ = 0.1, r = 0.1, ν = d + 6). The answer depends on the
    /// data's units with `reference` only.
    #[arg(long, value_parser = one_of::<NwDefaults>(), default_value = "pooled")]
    pub nw_defaults: NwDefaults,
    /// Prior on partitions.
    #[arg(long, value_parser = one_of::<PriorKind>(), default_value = "dp")]
    pub prior: PriorKind,
    /// Concentration α (default 1); for --prior py the concentration θ > -σ.
    #[arg(long, allow_negative_numbers = true)]
    pub alpha: Option<f64>,
    /// Discount σ: NGGP in (0, 1), Pitman-Yor in [0, 1) (default 0.5).
    #[arg(long, allow_negative_numbers = true)]
    pub sigma: Option<f64>,
    /// NGGP auxiliary variable u > 0 (default 1; samplers always resample it).
    #[arg(long, allow_negative_numbers = true)]
    pub u: Option<f64>,
    /// MFM Dirichlet parameter γ > 0 of the weights given K components (default 1; with
    /// --prior mfm only).
    #[arg(long, allow_negative_numbers = true)]
    pub gamma: Option<f64>,
    /// MFM prior on the number of components K: poisson:LAMBDA (K - 1 ~ Poisson(LAMBDA)) or
    /// geometric:P (P(K) = P (1-P)^(K-1)) (default poisson:1; with --prior mfm only).
    #[arg(long, value_name = "LAW:PARAM", value_parser = parse_k_prior)]
    pub k_prior: Option<KPrior>,
    /// Put the reference hyperpriors on the hyperparameters instead of fixing them:
    /// α ~ Gamma(1, 1) (Pitman-Yor: θ), for NGGP and Pitman-Yor σ ~ Beta(1.5, 1.5) truncated
    /// to [0.01, 0.99], for the MFM γ ~ Gamma(1, 1). Samplers then resample them each sweep;
    /// `exact` integrates them out.
    #[arg(long)]
    pub hyperpriors: bool,
    /// Put hyperpriors on the kernel's own hyperparameters and resample them every sweep: for
    /// Normal-Wishart and diagonal kernels the multiplier s of the scale Ψ = s·Ψ₀
    /// (log-normal, centred on the defaults or the given --nw-psi, log-scale standard
    /// deviation 2), for Multinomial-Dirichlet and Beta-Bernoulli the concentration β (the
    /// same). Helps where many small clusters make the default scale too broad (10,000 points
    /// in 119 clusters).
    #[arg(long)]
    pub kernel_hyperpriors: bool,
    /// How --kernel mixed models a table's real columns: `independent` (each its own
    /// Normal-Gamma kernel) or `full` (one full-covariance Normal-Wishart block, a row's
    /// missing real entries drawn inside each sweep from their exact conditional). Default:
    /// for `nrmm run` on a table with at least 2 real columns, chosen by evidence from a pilot
    /// run on the rows with every real entry (recorded in run.json and the header);
    /// `independent` elsewhere.
    #[arg(long, value_parser = one_of::<RealColumns>())]
    pub mixed_real: Option<RealColumns>,
}

impl ModelArgs {
    /// The library's model settings.
    pub fn spec(&self) -> ModelSpec {
        ModelSpec {
            kernel: self.kernel,
            beta: self.beta,
            nw_xi: self.nw_xi.clone(),
            nw_psi: self.nw_psi.clone(),
            nw_r: self.nw_r,
            nw_nu: self.nw_nu,
            nw_defaults: self.nw_defaults,
            prior: self.prior,
            alpha: self.alpha,
            sigma: self.sigma,
            u: self.u,
            gamma: self.gamma,
            k_prior: self.k_prior,
            hyperpriors: self.hyperpriors,
            kernel_hyperpriors: self.kernel_hyperpriors,
            pilot: None,
            mixed_real: self.mixed_real,
            mixed_real_choice: None,
        }
    }
}

/// `nrmm loglik`.
#[derive(Debug, Args)]
pub struct LoglikArgs {
    /// The data.
    #[command(flatten)]
    pub data: DataArgs,
    /// Cluster labels, one integer per line (any integers).
    #[arg(long)]
    pub labels: PathBuf,
    /// Score the labels under this finished run's own model (its data, kernel, pilot-chosen
    /// scale, prior and hyperparameters as its run.json records them) instead of one built
    /// from flags, next to its chains' final and best partitions.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["DataArgs", "ModelArgs"])]
    pub run: Option<PathBuf>,
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `nrmm exact`.
#[derive(Debug, Args)]
pub struct ExactArgs {
    /// The data (the built-in default is data set B of the tgMCMC exactness study, 7 points).
    #[command(flatten)]
    pub data: DataArgs,
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// How many of the most probable partitions to print.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
    pub top: usize,
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `nrmm generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// What to generate.
    #[arg(value_parser = one_of::<SyntheticKind>())]
    pub kind: SyntheticKind,
    /// Number of points or documents.
    #[arg(long, allow_negative_numbers = true)]
    pub n: usize,
    /// Dimension (Gaussian) or vocabulary size (counts).
    #[arg(long, allow_negative_numbers = true)]
    pub d: usize,
    /// Fixed number of clusters, each point's cluster drawn uniformly (otherwise the partition
    /// is drawn from --prior).
    #[arg(long, allow_negative_numbers = true, conflicts_with_all = ["prior", "alpha", "sigma", "gamma", "k_prior"])]
    pub k: Option<usize>,
    /// Prior the partition is drawn from when --k is absent (default dp).
    #[arg(long, value_parser = one_of::<PriorKind>())]
    pub prior: Option<PriorKind>,
    /// Concentration α > 0 of the partition prior (default 1); for --prior py the
    /// concentration θ > -σ.
    #[arg(long, allow_negative_numbers = true)]
    pub alpha: Option<f64>,
    /// Discount σ: NGGP in (0, 1), Pitman-Yor in [0, 1) (default 0.5; with --prior nggp or py
    /// only).
    #[arg(long, allow_negative_numbers = true)]
    pub sigma: Option<f64>,
    /// MFM Dirichlet parameter γ > 0 (default 1; with --prior mfm only).
    #[arg(long, allow_negative_numbers = true)]
    pub gamma: Option<f64>,
    /// MFM prior on the number of components: poisson:LAMBDA (K - 1 ~ Poisson(LAMBDA)) or
    /// geometric:P (default poisson:1; with --prior mfm only).
    #[arg(long, value_name = "LAW:PARAM", value_parser = parse_k_prior)]
    pub k_prior: Option<KPrior>,
    /// Dirichlet concentration β > 0 of each cluster's word distribution (default 0.1; counts
    /// only).
    #[arg(long, allow_negative_numbers = true)]
    pub beta: Option<f64>,
    /// Mean document length, at least 1 (default 50; counts only).
    #[arg(long, allow_negative_numbers = true)]
    pub doc_length: Option<f64>,
    /// Seed.
    #[arg(long, allow_negative_numbers = true)]
    pub seed: u64,
    /// Output data file.
    #[arg(long)]
    pub out: PathBuf,
    /// Output file for the true labels (1-based, one per line).
    #[arg(long)]
    pub labels_out: Option<PathBuf>,
}

/// Sampler settings shared by `run` and `check-exact`.
#[derive(Debug, Args, Clone, PartialEq)]
pub struct SamplerArgs {
    /// The sampler (default: tgmcmc below 50,000 points, subcluster from there).
    #[arg(long, value_parser = one_of::<SamplerKind>())]
    pub sampler: Option<SamplerKind>,
    /// How its moves are set.
    #[command(flatten)]
    pub moves: MoveArgs,
    /// Parallel tempering: each chain becomes a ladder of R replicas (2 to 16), the chain
    /// itself at inverse temperature 1 and R - 1 hotter copies whose likelihood is raised to
    /// β = ρ^r (ρ: --temper-ratio), swept by the same moves and swapping states with
    /// their neighbours after every sweep; only the chain's own (β = 1) draws are reported,
    /// and the trace gets each adjacent pair's swap acceptance (swap_0_1_*, ...). Collapsed
    /// samplers only (gibbs, jain-neal, sams, tgmcmc), without --kernel-hyperpriors. Each
    /// sweep costs about R times an untempered one.
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub temper: Option<usize>,
    /// The ratio ρ of neighbouring inverse temperatures of --temper's ladder, in (0, 1): a
    /// swap is accepted often when 1 - ρ is about 1 / sd(log likelihood) (0.9 keeps about
    /// half the swaps between the first two replicas on breast cancer, 569 × 30).
    #[arg(long, value_name = "RHO", requires = "temper", default_value_t = TEMPER_RATIO, allow_negative_numbers = true)]
    pub temper_ratio: f64,
    /// Parallel tempering with an explicit ladder of inverse temperatures, comma-separated,
    /// starting at 1 and strictly decreasing (1,0.8,0.6); as --temper otherwise.
    #[arg(
        long,
        value_name = "B0,B1,...",
        value_delimiter = ',',
        conflicts_with = "temper",
        allow_negative_numbers = true
    )]
    pub temperatures: Option<Vec<f64>>,
}

/// The default ratio of neighbouring inverse temperatures of `--temper`.
pub const TEMPER_RATIO: f64 = 0.9;

impl SamplerArgs {
    /// The library's sampler settings for `n` points: the sampler asked for, else the one
    /// chosen by size ([`SamplerKind::for_data`]), with its default moves
    /// ([`MoveArgs::settings_for`]) and the tempering ladder asked for. Errors name the flag
    /// of an invalid ladder.
    pub fn settings(&self, n: usize) -> Result<SamplerSettings> {
        let kind = self.sampler.unwrap_or_else(|| SamplerKind::for_data(n));
        let temperatures = match (&self.temperatures, self.temper) {
            (Some(betas), _) => betas.clone(),
            (None, Some(r)) => nrmm::run::ladder::geometric_betas(r, self.temper_ratio)?,
            (None, None) => Vec::new(),
        };
        Ok(SamplerSettings {
            kind,
            moves: self.moves.settings_for(kind, n),
            temperatures,
        })
    }
}

/// Settings of the moves of a sampler.
#[derive(Debug, Args, Clone, PartialEq)]
pub struct MoveArgs {
    /// Split-merge proposals per sweep (default: one per 100 points, between 1 and 100).
    #[arg(long, allow_negative_numbers = true)]
    pub proposals: Option<usize>,
    /// Restricted Gibbs launch scans of Jain-Neal.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
    pub launch_scans: usize,
    /// Gibbs sweeps interleaved with each round of split-merge proposals (0: none).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub gibbs_sweeps: usize,
    /// Visit only this many random points per Gibbs sweep.
    #[arg(long, allow_negative_numbers = true)]
    pub gibbs_subset: Option<usize>,
    /// Tree-guided proposals per sweep (G) of tgmcmc and tgmcmc-paper.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
    pub global_moves: usize,
    /// Depth D of the tree-selected local moves of tgmcmc-paper (default 2).
    #[arg(long, allow_negative_numbers = true)]
    pub depth: Option<usize>,
}

impl MoveArgs {
    /// The library's move settings for `n` points, the same for every sampler (the default
    /// number of proposals depends on `n`, [`MoveSettings::default_proposals`]).
    pub fn settings(&self, n: usize) -> MoveSettings {
        // SAMS takes the generic default, `MoveSettings::default_proposals(n)`.
        self.settings_for(SamplerKind::Sams, n)
    }

    /// The library's move settings of the sampler `kind` for `n` points (the default number
    /// of proposals depends on both, [`MoveSettings::default_proposals_for`]).
    pub fn settings_for(&self, kind: SamplerKind, n: usize) -> MoveSettings {
        MoveSettings {
            proposals: self
                .proposals
                .unwrap_or_else(|| MoveSettings::default_proposals_for(kind, n)),
            launch_scans: self.launch_scans,
            gibbs_sweeps: self.gibbs_sweeps,
            gibbs_subset: self.gibbs_subset,
            global_moves: self.global_moves,
            depth: self.depth,
        }
    }
}

/// `nrmm run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The data.
    #[command(flatten)]
    pub data: DataArgs,
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The sampler.
    #[command(flatten)]
    pub sampler: SamplerArgs,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Number of sweeps per chain, or auto (the default unless --seconds is given): 1000
    /// sweeps, then the chains' length doubled until they agree (every traced quantity with
    /// R-hat at most 1.01 and a bulk ESS of at least 400) or a chain sits far below the best
    /// one in clusters it never visits and no longer rises, up to --max-sweeps. The rounds
    /// depend on the traces only, so a seed gives the same run on every machine. With
    /// --resume, the new total.
    #[arg(long, conflicts_with = "seconds", allow_negative_numbers = true)]
    pub sweeps: Option<SweepCount>,
    /// With --sweeps auto, the most sweeps per chain (default: 16,000, fewer for large data:
    /// at most 10⁹ / (points · dimensions²), never below 1000).
    #[arg(long, conflicts_with = "seconds", allow_negative_numbers = true)]
    pub max_sweeps: Option<u64>,
    /// Sampling time per chain in seconds, finite and > 0 (the sweep count then varies between
    /// runs; with --resume, the new total).
    #[arg(long, allow_negative_numbers = true)]
    pub seconds: Option<f64>,
    /// Number of chains, at least 1, run in parallel (as many at a time as there are
    /// cores; a time budget is each chain's own sampling time). Several chains from different
    /// starts show a chain stuck in one mode as disagreement (R-hat). The default is fixed,
    /// not the core count, so the same command gives the same result on every machine.
    #[arg(long, default_value_t = 4, allow_negative_numbers = true)]
    pub chains: usize,
    /// Index of the first chain: chains are numbered from it, each drawing from the stream of
    /// its number, so runs with offsets 0, C, 2C, ... of C chains each (separate processes or
    /// machines) together are one run of many chains (merge them with `nrmm diagnose`).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub chain_offset: u64,
    /// Initial clustering: single, singletons, labels:FILE, noisy-ibhc, exact-ibhc, sva or
    /// auto. sva is a one-pass SVA-PM fit over the chain's own random order of the points (by
    /// the urn of a Pitman-Yor or MFM prior, else as a DP with the run's alpha);
    /// auto (the default) starts each chain from whichever of one cluster and its SVA-PM fit
    /// has the higher log joint, so chains start from different, non-degenerate clusterings
    /// where the data have structure, and from one cluster where they have none (for the
    /// subcluster sampler auto is the pilot's best partition carried to every point, or single
    /// without a pilot: chains started in an SVA fit's pieces of a large cluster stayed there,
    /// and from one cluster its launches find many clusters one split at a time). noisy-ibhc
    /// places the points in a random order, each on top of the tree it is closest to or alone
    /// (the tgMCMC paper's toy start, also accepted as top-insert); exact-ibhc inserts them
    /// into the trees, IBHC proper. tgmcmc-paper starts from the IBHC forest itself, as the
    /// paper's code does.
    #[arg(long, default_value = "auto")]
    pub init: Start,
    /// Keep every thin-th sweep in the trace and the draws (at least 1).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub thin: u64,
    /// Sweeps of each chain left out of the diagnostics and point estimates (default: the
    /// first half of each chain, or the sweep by which every chain reached the median log
    /// joint of the chains' second halves where the chains agree better after it).
    #[arg(long, allow_negative_numbers = true)]
    pub burn_in: Option<u64>,
    /// Write a checkpoint of every chain every N sweeps (atomically, replacing the last), from
    /// which --resume continues exactly.
    #[arg(long, allow_negative_numbers = true)]
    pub checkpoint_every: Option<u64>,
    /// Continue the run in DIR from its checkpoints, with its settings (only --sweeps,
    /// --max-sweeps, --seconds and --burn-in may be given, to change the budget or the
    /// burn-in).
    #[arg(long, value_name = "DIR", conflicts_with_all = resume_conflicts())]
    pub resume: Option<PathBuf>,
    /// Output directory (required unless --resume is given). A directory that already holds
    /// a run is refused unless --force is given.
    #[arg(long, value_name = "DIR", required_unless_present = "resume")]
    pub out: Option<PathBuf>,
    /// Replace the run already in --out: its run.json, results and chain-*/ directories are
    /// deleted first (other files are kept). Use --resume DIR to continue a run instead.
    #[arg(long)]
    pub force: bool,
    /// The parameter a of the generalised Variation of Information and Binder's loss whose
    /// minimisers the summary reports, in (0, 2): 1 the plain losses (Wade & Ghahramani
    /// 2018), larger makes splitting a cluster of the posterior dearer (fewer clusters),
    /// smaller makes merging two dearer (more clusters).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub loss_a: f64,
    /// Data-parallel runs.
    #[command(flatten)]
    pub parallel: DataParallelArgs,
}

/// The flags `--resume` refuses: every flag that sets the data, the model, the sampler or the
/// chains, which a resumed run takes from its record.
fn resume_conflicts() -> Vec<clap::Id> {
    let sets = [
        DataArgs::augment_args,
        ModelArgs::augment_args,
        SamplerArgs::augment_args,
    ];
    let own = [
        "seed",
        "chains",
        "chain_offset",
        "init",
        "thin",
        "checkpoint_every",
        "out",
        "force",
    ];
    sets.iter()
        .fold(clap::Command::new("run"), |cmd, add| add(cmd))
        .get_arguments()
        .map(|a| a.get_id().clone())
        .chain(own.map(clap::Id::from))
        .collect()
}

/// `nrmm diagnose`.
#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// Run directories (of `nrmm run`, or of `nrmm compare`, whose runs are all read).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Sweeps of each chain to leave out (default: each run's own --burn-in, else the first
    /// half of each chain or the chains' hitting time, as `run --burn-in` says).
    #[arg(long, allow_negative_numbers = true)]
    pub burn_in: Option<u64>,
    /// Print the summary as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also the leave-one-out predictive fit of the model from the draws: LPML (the sum of
    /// log conditional predictive ordinates), PSIS-LOO's elpd with its standard error and
    /// Pareto k per point, and WAIC. Two models of the same data compare by them: the higher
    /// elpd_loo or LPML predicts held-out points better (a difference of a few standard
    /// errors matters), a Pareto k above 0.7 marks a point whose estimate is unreliable.
    #[arg(long)]
    pub predictive: bool,
    /// The parameter a of the generalised Variation of Information and Binder's loss whose
    /// minimisers the summary reports, in (0, 2): 1 the plain losses (Wade & Ghahramani
    /// 2018), larger makes splitting a cluster of the posterior dearer (fewer clusters),
    /// smaller makes merging two dearer (more clusters).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub loss_a: f64,
    /// Also write summary.json, estimate.txt (the default estimate), estimate-dahl.txt,
    /// map.txt and the estimates by loss and credible ball's files of the merged chains to
    /// this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `nrmm impute`.
#[derive(Debug, Args)]
pub struct ImputeArgs {
    /// The run directory (a run on a table: `--kernel mixed`).
    #[arg(long, value_name = "DIR")]
    pub run: PathBuf,
    /// Output CSV of the table with every missing entry filled; beside it FILE's stem with
    /// .filled.csv (row, column, value, probability or mean and sd of each filled entry) and
    /// .profiles.json (each cluster of Dahl's estimate, estimate-dahl.txt: size, level probabilities or mean
    /// and sd per column).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Sweeps of each chain to leave out (default: the run's own).
    #[arg(long, allow_negative_numbers = true)]
    pub burn_in: Option<u64>,
}

/// `nrmm predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// The run directory whose Dahl estimate (estimate-dahl.txt) and draws are used.
    #[arg(long, value_name = "DIR")]
    pub run: PathBuf,
    /// The new points (the format of the run's data, read with its --header and
    /// --skip-columns), or - for standard input; gzip-compressed files are read too.
    #[arg(long)]
    pub data: PathBuf,
    /// File format of the new points (detected when omitted).
    #[arg(long, value_parser = one_of::<Format>())]
    pub format: Option<Format>,
    /// Sweeps of each chain to leave out (default: the run's own).
    #[arg(long, allow_negative_numbers = true)]
    pub burn_in: Option<u64>,
    /// Output CSV file (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `nrmm compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The data.
    #[command(flatten)]
    pub data: DataArgs,
    /// True labels of the data, one per line, for the adjusted Rand index (the built-in data
    /// set brings its own).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The samplers, comma-separated.
    #[arg(
        long,
        value_parser = one_of::<SamplerKind>(),
        value_delimiter = ',',
        default_value = "gibbs,jain-neal,sams"
    )]
    pub samplers: Vec<SamplerKind>,
    /// How the samplers' moves are set.
    #[command(flatten)]
    pub moves: MoveArgs,
    /// Sampling time of every run in seconds, finite and > 0.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub seconds: f64,
    /// Runs per sampler, with seeds 1, 2, ..., S (at least 1).
    #[arg(long, default_value_t = 2, allow_negative_numbers = true)]
    pub seeds: u64,
    /// Initial clustering of every run: single, singletons or labels:FILE.
    #[arg(long, default_value = "single")]
    pub init: Start,
    /// Output directory (one run directory per sampler and seed, the table and the plots).
    #[arg(long)]
    pub out: PathBuf,
}

/// `nrmm plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Run directories (of `nrmm run`, or of `nrmm compare`, whose runs are all drawn).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Directory to write the SVG files to (default: the first DIR).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `nrmm check-exact`.
#[derive(Debug, Args)]
pub struct CheckExactArgs {
    /// The data (n ≤ 10; the built-in default is data set B, 7 points).
    #[command(flatten)]
    pub data: DataArgs,
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The sampler.
    #[command(flatten)]
    pub sampler: SamplerArgs,
    /// Sweeps to run, at least 100 (the first 10% are burn-in).
    #[arg(long, default_value_t = 100_000, allow_negative_numbers = true)]
    pub sweeps: u64,
    /// Seed.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

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
#[command(mut_arg("data", required_data), mut_arg("data_format", |a| a.long("data-format").value_name("DATA_FORMAT")))]
pub struct TreeArgs {
    /// The data.
    #[command(flatten)]
    pub data: DataArgs,
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
    #[arg(long = "format", value_enum, default_value_t = TreeFormat::Newick)]
    pub tree_format: TreeFormat,
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

/// `nrmm sva`.
#[derive(Debug, Args)]
#[command(mut_arg("data", required_data))]
pub struct SvaArgs {
    /// The data (also the format of --heldout).
    #[command(flatten)]
    pub data: DataArgs,
    /// The model: a Dirichlet process with concentration --alpha (default 1), or the urn of
    /// --prior py (--alpha θ, --sigma σ) or --prior mfm (--gamma, --k-prior), fixed.
    #[command(flatten)]
    pub model: ModelArgs,
    /// New-component threshold ε in (0, 1) (default 0.1).
    #[arg(long, allow_negative_numbers = true)]
    pub epsilon: Option<f64>,
    /// Prune and merge components (SVA-PM).
    #[arg(long)]
    pub prune_merge: bool,
    /// SVA-PM: prune a component whose share of the total weight is below this, in [0, 1)
    /// (default 0.001).
    #[arg(long, requires = "prune_merge", allow_negative_numbers = true)]
    pub prune_threshold: Option<f64>,
    /// SVA-PM: merge two components whose mean responsibility difference is below this, in
    /// [0, 1] (default 0.01).
    #[arg(long, requires = "prune_merge", allow_negative_numbers = true)]
    pub merge_threshold: Option<f64>,
    /// SVA-PM: points between two checks, at least 1 (default 100).
    #[arg(long, requires = "prune_merge", allow_negative_numbers = true)]
    pub check_interval: Option<usize>,
    /// Visit the points in an order shuffled with this seed (default: the file's order).
    #[arg(long, allow_negative_numbers = true)]
    pub shuffle_seed: Option<u64>,
    /// Held-out points (the data's format) whose predictive log-likelihood is reported
    /// (default: the training points).
    #[arg(long)]
    pub heldout: Option<PathBuf>,
    /// True labels of the data, one per line, for the adjusted Rand index and NMI.
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Output directory for labels.txt (0-based component of each point) and summary.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The flags of a data-parallel run.
#[derive(Debug, Args)]
pub struct DataParallelArgs {
    /// Run one chain of --sampler subcluster with the points spread over processes: the MPI
    /// ranks under mpirun (a build with the cargo feature mpi), one process otherwise; the
    /// chain is the same for any number of ranks. --data FILE is read by row ranges, or one
    /// file per rank with {rank} in its name. Normal-Wishart kernel with its default
    /// hyperparameters; writes trace.tsv, labels.txt, summary.json and checkpoint/.
    #[arg(long)]
    pub data_parallel: bool,
    /// With --data-parallel: points per reduction block, a multiple of 4096. Ranks hold whole
    /// blocks; the chain depends on the block, not on the number of ranks.
    #[arg(long, default_value_t = 65536, requires = "data_parallel")]
    pub block: usize,
    /// With --data-parallel: continue the run in --out from its checkpoint, to --sweeps in
    /// all (same data, ranks and block).
    #[arg(long = "continue", requires = "data_parallel")]
    pub continue_run: bool,
}
