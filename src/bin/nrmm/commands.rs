//! The verbs of `nrmm`, each a thin layer over the library.

use crate::args::*;
use nrmm::data::generate::{self, DocLengths, NormalWishartSampler};
use nrmm::data::load::{self, Format};
use nrmm::data::Dataset;
use nrmm::diagnostics::effective_sample_size;
use nrmm::exact::{EmpiricalPartitions, ExactPosterior};
use nrmm::kernel::ConjugateKernel;
use nrmm::model::{AnyKernel, ModelSpec};
use nrmm::partition::Partition;
use nrmm::prior::{PartitionPrior, PartitionPriorSpec, Prior};
use nrmm::run::{Chain, Scheduled, TraceWriter};
use nrmm::sampler::{Gibbs, GibbsScan, HyperMove, JainNeal, Sams, State};
use nrmm::{with_kernel, Error, Result};
use rayon::prelude::*;
use serde_json::json;
use std::path::Path;

/// Runs one verb.
pub fn dispatch(command: Command) -> Result<()> {
    match command {
        Command::Loglik(a) => loglik(a),
        Command::Exact(a) => exact(a),
        Command::Generate(a) => generate(a),
        Command::Run(a) => run(a),
        Command::CheckExact(a) => check_exact(a),
    }
}

impl From<&ModelArgs> for ModelSpec {
    fn from(m: &ModelArgs) -> Self {
        ModelSpec {
            kernel: m.kernel.map(|k| match k {
                KernelKind::Nw => nrmm::model::KernelKind::Nw,
                KernelKind::Md => nrmm::model::KernelKind::Md,
            }),
            beta: m.beta,
            nw_xi: m.nw_xi.clone(),
            nw_psi: m.nw_psi.clone(),
            nw_r: m.nw_r,
            nw_nu: m.nw_nu,
            prior: match m.prior {
                PriorKind::Dp => nrmm::model::PriorKind::Dp,
                PriorKind::Nggp => nrmm::model::PriorKind::Nggp,
            },
            alpha: m.alpha,
            sigma: m.sigma,
            u: m.u,
            hyperpriors: m.hyperpriors,
        }
    }
}

/// Which built-in data set a verb falls back to without `--data`.
#[derive(Clone, Copy)]
enum Builtin {
    /// The seeded 13-cluster 2-D mixture.
    Toy,
    /// Data set B of MATH §5.3 (7 points).
    SetB,
}

fn load_data(d: &DataArgs, builtin: Builtin) -> Result<Dataset> {
    match &d.data {
        Some(path) => load::load_dataset(
            path,
            d.format.map(|f| match f {
                FormatArg::Dense => Format::Dense,
                FormatArg::Docword => Format::Docword,
                FormatArg::Ldac => Format::Ldac,
                FormatArg::Idx => Format::Idx,
            }),
        ),
        None if d.format.is_some() => Err(Error::Usage(
            "--format needs --data: the built-in data set has no file".into(),
        )),
        None => Ok(Dataset::Dense(match builtin {
            Builtin::Toy => generate::toy_like(1).0,
            Builtin::SetB => generate::data_set_b(),
        })),
    }
}

fn build(
    data: &DataArgs,
    model: &ModelArgs,
    builtin: Builtin,
) -> Result<(AnyKernel, Prior, ModelSpec)> {
    let spec = ModelSpec::from(model);
    let prior = spec.build_prior()?;
    let kernel = spec.build_kernel(load_data(data, builtin)?)?;
    Ok((kernel, prior, spec))
}

fn print_json(value: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("JSON values always serialise")
    );
}

fn loglik(a: LoglikArgs) -> Result<()> {
    let (kernel, prior, _) = build(&a.data, &a.model, Builtin::Toy)?;
    let n = with_kernel!(&kernel, |k| k.n_points());
    let labels = load::load_labels(&a.labels, n)?;
    let (ln_joint, k) = with_kernel!(&kernel, |k| {
        let part = Partition::from_labels(k, &labels)?;
        (part.ln_joint(&prior), part.n_clusters())
    });
    use nrmm::prior::NrmPrior;
    if a.json {
        print_json(&json!({
            "log_joint": ln_joint,
            "joint": prior.joint_label(),
            "n_clusters": k,
            "n": n,
            "d": kernel.dim(),
            "hyper": prior.hyper_values().into_iter().collect::<std::collections::BTreeMap<_, _>>(),
        }));
    } else {
        println!("{} = {ln_joint:.6}", prior.joint_label());
        println!("clusters: {k}   points: {n}   dimension: {}", kernel.dim());
    }
    Ok(())
}

/// The exact partition prior targeted by samplers running `prior` (hyperparameters fixed or
/// integrated, MATH §7.1).
fn exact_posterior<K: ConjugateKernel>(kernel: &K, prior: &Prior) -> Result<ExactPosterior> {
    let n = kernel.n_points();
    if n > 12 {
        return Err(Error::TooLarge(format!(
            "the exact posterior enumerates all set partitions; {n} points have too many \
             (at most 12, whose 4,213,597 partitions take about a second)"
        )));
    }
    let weights = PartitionPrior::new(PartitionPriorSpec::from_prior(prior)?, n)?;
    ExactPosterior::new(kernel, move |sizes: &[usize]| {
        weights.ln_weight(sizes).unwrap_or(f64::NAN)
    })
}

fn exact(a: ExactArgs) -> Result<()> {
    let (kernel, prior, _) = build(&a.data, &a.model, Builtin::SetB)?;
    let post = with_kernel!(&kernel, |k| exact_posterior(k, &prior))?;
    let summary = post.summary(a.top);
    if a.json {
        print_json(&serde_json::to_value(&summary).expect("summary serialises"));
        return Ok(());
    }
    println!(
        "exact posterior over {} partitions of {} points",
        post.n_partitions(),
        post.n_points()
    );
    println!("\ntop partitions (labels by point):");
    for (rgs, p) in post.top(a.top) {
        println!("  {rgs}  {p:.6}");
    }
    println!("\nP(K = k):");
    for (k, p) in post
        .k_probabilities()
        .iter()
        .enumerate()
        .filter(|(_, p)| **p > 0.0)
    {
        println!("  {k:>2}  {p:.6}");
    }
    println!("\nE[K] = {:.6}", post.expected_k());
    Ok(())
}

fn generate(a: GenerateArgs) -> Result<()> {
    let mut rng = nrmm::rng::SeedPlan::new(a.seed).chain(0);
    let labels = match a.k {
        Some(k) => generate::partition_uniform(a.n, k, &mut rng)?,
        None => match a.prior {
            PriorKind::Dp => generate::partition_crp(a.n, a.alpha, &mut rng)?,
            PriorKind::Nggp => generate::partition_nggp(a.n, a.alpha, a.sigma, &mut rng)?,
        },
    };
    match a.kind {
        GenerateKind::Gaussian => {
            let d = a.d;
            let mut psi = vec![0.0; d * d];
            for i in 0..d {
                psi[i * d + i] = 1.0;
            }
            let nw = NormalWishartSampler::new(&vec![0.0; d], &psi, 0.02, d as f64 + 3.0)?;
            let (x, _) = generate::gaussian_mixture(&labels, &nw, &mut rng)?;
            load::write_dense(&a.out, &x)?;
        }
        GenerateKind::Counts => {
            let (c, _) = generate::bag_of_words(
                &labels,
                a.d,
                a.beta,
                DocLengths::Poisson { mean: a.doc_length },
                &mut rng,
            )?;
            load::write_docword(&a.out, &c)?;
        }
    }
    if let Some(path) = &a.labels_out {
        let one_based: Vec<usize> = labels.iter().map(|l| l + 1).collect();
        load::write_labels(path, &one_based)?;
    }
    let k = labels.iter().max().map_or(0, |m| m + 1);
    eprintln!(
        "wrote {} points in {k} clusters to {}",
        a.n,
        a.out.display()
    );
    Ok(())
}

/// The moves of a sweep for the chosen sampler (MATH §6), plus the hyperparameter move when
/// anything is resampled.
fn schedule<K: ConjugateKernel + 'static>(
    s: &SamplerArgs,
    resample_hyper: bool,
) -> Result<Vec<Scheduled<K, Prior>>> {
    let scan = match s.gibbs_subset {
        Some(m) => GibbsScan::Subset(m),
        None => GibbsScan::Full,
    };
    let mut moves: Vec<Scheduled<K, Prior>> = Vec::new();
    match s.sampler {
        SamplerKind::Gibbs => moves.push(Scheduled {
            mv: Box::new(Gibbs::new(scan)?),
            repeats: 1,
        }),
        SamplerKind::JainNeal | SamplerKind::Sams => {
            if s.proposals == 0 && s.gibbs_sweeps == 0 {
                return Err(Error::Usage(
                    "--proposals 0 with --gibbs-sweeps 0 leaves nothing to do".into(),
                ));
            }
            let mv: Box<dyn nrmm::sampler::Move<K, Prior>> = match s.sampler {
                SamplerKind::Sams => Box::new(Sams::new()),
                _ => Box::new(JainNeal::new(s.launch_scans)),
            };
            moves.push(Scheduled {
                mv,
                repeats: s.proposals,
            });
            if s.gibbs_sweeps > 0 {
                moves.push(Scheduled {
                    mv: Box::new(Gibbs::new(scan)?),
                    repeats: s.gibbs_sweeps,
                });
            }
        }
    }
    if resample_hyper {
        moves.push(Scheduled {
            mv: Box::new(HyperMove),
            repeats: 1,
        });
    }
    Ok(moves)
}

fn initial_partition<K: ConjugateKernel>(kernel: &K, init: &InitArg) -> Result<Partition<K>> {
    match init {
        InitArg::Single => Ok(Partition::single(kernel)),
        InitArg::Singletons => Ok(Partition::singletons(kernel)),
        InitArg::Labels(path) => {
            Partition::from_labels(kernel, &load::load_labels(path, kernel.n_points())?)
        }
    }
}

fn resamples_hyper(spec: &ModelSpec) -> bool {
    spec.hyperpriors || spec.prior == nrmm::model::PriorKind::Nggp
}

fn create_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// What one chain of `run` reports in the summary.
#[derive(serde::Serialize)]
struct ChainSummary {
    chain: usize,
    sweeps: u64,
    seconds: f64,
    n_clusters: usize,
    log_joint: f64,
    ess_n_clusters: f64,
    ess_log_joint: f64,
}

fn run_chain<K: ConjugateKernel + 'static>(
    kernel: &K,
    prior: &Prior,
    a: &RunArgs,
    spec: &ModelSpec,
    chain: usize,
) -> Result<ChainSummary> {
    let dir = a.out.join(format!("chain-{chain}"));
    create_dir(&dir)?;
    let state = State {
        partition: initial_partition(kernel, &a.init)?,
        prior: prior.clone(),
    };
    let rng = nrmm::rng::SeedPlan::new(a.seed).chain(chain as u64);
    let mut chain_run = Chain::new(
        kernel,
        state,
        rng,
        schedule(&a.sampler, resamples_hyper(spec))?,
    );
    let mut trace = TraceWriter::create(&dir.join("trace.csv"), a.thin)?;
    let (mut ks, mut joints) = (Vec::new(), Vec::new());
    let budget = a.sweeps.map_or(u64::MAX, |s| s);
    let seconds = a.seconds.unwrap_or(f64::INFINITY);
    let mut last = None;
    while chain_run.sweeps_done() < budget {
        let record = chain_run.sweep()?;
        nrmm::run::Observer::observe(&mut trace, &record, chain_run.state())?;
        ks.push(record.n_clusters as f64);
        joints.push(record.ln_joint);
        let done = record.seconds >= seconds;
        last = Some(record);
        if done {
            break;
        }
    }
    trace.flush()?;
    let state = chain_run.state();
    load::write_labels(dir.join("labels.txt"), &state.partition.canonical_labels())?;
    let last = last.ok_or_else(|| Error::Usage("the run made no sweep".into()))?;
    Ok(ChainSummary {
        chain,
        sweeps: last.sweep,
        seconds: last.seconds,
        n_clusters: last.n_clusters,
        log_joint: last.ln_joint,
        ess_n_clusters: effective_sample_size(&ks[ks.len() / 2..]),
        ess_log_joint: effective_sample_size(&joints[joints.len() / 2..]),
    })
}

fn run(a: RunArgs) -> Result<()> {
    if a.chains == 0 {
        return Err(Error::param("--chains", 0, "at least 1"));
    }
    let (kernel, prior, spec) = build(&a.data, &a.model, Builtin::Toy)?;
    let a = RunArgs {
        sweeps: a.sweeps.or(if a.seconds.is_none() {
            Some(1000)
        } else {
            None
        }),
        ..a
    };
    create_dir(&a.out)?;
    let summaries: Vec<ChainSummary> = with_kernel!(&kernel, |k| {
        (0..a.chains)
            .into_par_iter()
            .map(|c| run_chain(k, &prior, &a, &spec, c))
            .collect::<Result<Vec<_>>>()
    })?;
    use nrmm::prior::NrmPrior;
    let summary = json!({
        "command": std::env::args().collect::<Vec<_>>(),
        "seed": a.seed,
        "sampler": format!("{:?}", a.sampler.sampler).to_lowercase(),
        "model": spec,
        "joint": prior.joint_label(),
        "chains": summaries,
    });
    let path = a.out.join("summary.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&summary).expect("serialises"),
    )
    .map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    for s in &summaries {
        println!(
            "chain {}: {} sweeps in {:.2} s, K = {}, {} = {:.3}, ESS(K) = {:.0}",
            s.chain,
            s.sweeps,
            s.seconds,
            s.n_clusters,
            prior.joint_label(),
            s.log_joint,
            s.ess_n_clusters
        );
    }
    println!("wrote {}", a.out.display());
    Ok(())
}

fn check_exact(a: CheckExactArgs) -> Result<()> {
    let (kernel, prior, spec) = build(&a.data, &a.model, Builtin::SetB)?;
    let n = with_kernel!(&kernel, |k| k.n_points());
    if n > 10 {
        return Err(Error::TooLarge(format!(
            "check-exact compares against every set partition; {n} points are too many (at most 10)"
        )));
    }
    if a.sweeps < 100 {
        return Err(Error::param("--sweeps", a.sweeps, "at least 100"));
    }
    let (post, empirical, ks) = with_kernel!(&kernel, |k| {
        let post = exact_posterior(k, &prior)?;
        let state = State {
            partition: Partition::single(k),
            prior: prior.clone(),
        };
        let rng = nrmm::rng::SeedPlan::new(a.seed).chain(0);
        let mut chain = Chain::new(k, state, rng, schedule(&a.sampler, resamples_hyper(&spec))?);
        let burn_in = a.sweeps / 10;
        let mut empirical = EmpiricalPartitions::new(n)?;
        let mut ks = Vec::with_capacity((a.sweeps - burn_in) as usize);
        for sweep in 0..a.sweeps {
            chain.sweep()?;
            if sweep >= burn_in {
                let labels = chain.state().partition.canonical_labels();
                empirical.push_labels(&labels)?;
                ks.push(chain.state().partition.n_clusters() as f64);
            }
        }
        Ok::<_, Error>((post, empirical, ks))
    })?;
    let n_eff = effective_sample_size(&ks);
    let comparison = post.compare(&empirical, n_eff)?;
    let p_k_exact = post.k_probabilities();
    let p_k_sampler = empirical.k_frequencies();
    if a.json {
        print_json(&json!({
            "tv": comparison.tv,
            "tv_noise_floor": comparison.expected_tv,
            "n_eff": n_eff,
            "draws": empirical.total(),
            "p_k_exact": p_k_exact,
            "p_k_sampler": p_k_sampler,
            "comparison": comparison,
        }));
        return Ok(());
    }
    println!(
        "{} draws after 10% burn-in, effective size (of K) {n_eff:.0}",
        empirical.total()
    );
    println!(
        "total variation to the exact posterior: {:.4}   (a perfect sampler of that size: {:.4})",
        comparison.tv, comparison.expected_tv
    );
    println!("\n  k   P(K=k) exact   sampler");
    for k in 1..p_k_exact.len().max(p_k_sampler.len()) {
        let e = p_k_exact.get(k).copied().unwrap_or(0.0);
        let s = p_k_sampler.get(k).copied().unwrap_or(0.0);
        if e > 0.0 || s > 0.0 {
            println!("  {k:>2}   {e:.6}     {s:.6}");
        }
    }
    Ok(())
}
