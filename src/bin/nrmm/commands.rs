//! The verbs on a model without a run: `loglik`, `exact`, `check-exact` and `generate`.

use crate::args::*;
use crate::common::{build, finite, flags, name_flag, print_json, Builtin};
use crate::output;
use nrmm::data::generate::{self, DocLengths, NormalWishartSampler};
use nrmm::data::load;
use nrmm::diagnostics::effective_sample_size;
use nrmm::exact::{EmpiricalPartitions, ExactPosterior};
use nrmm::kernel::ConjugateKernel;
use nrmm::model::{Model, PriorKind};
use nrmm::partition::Partition;
use nrmm::prior::{PartitionPrior, PartitionPriorSpec, Prior};
use nrmm::run::Chain;
use nrmm::sampler::State;
use nrmm::{with_kernel, Error, Result};
use serde_json::json;

/// Dirichlet concentration of generated word distributions when `--beta` is absent.
const DEFAULT_BETA: f64 = nrmm::model::DEFAULT_BETA;

/// The library's names of generator parameters and the flags of `generate` that set them.
const GENERATE_FLAGS: &[(&str, &str)] = &[
    ("n", "--n"),
    ("k", "--k"),
    ("alpha", "--alpha"),
    ("sigma", "--sigma"),
    ("beta", "--beta"),
    ("mean document length", "--doc-length"),
    ("vocab", "--d"),
];

/// `nrmm loglik`: the log joint of the given labels under the model (MATH §1.2).
pub fn loglik(a: LoglikArgs) -> Result<()> {
    let Model { kernel, prior, .. } = build(&a.data, &a.model, Builtin::Toy)?;
    let n = with_kernel!(&kernel, |k| k.n_points());
    let labels = load::load_labels(&a.labels, n)?;
    let (ln_joint, k) = with_kernel!(&kernel, |k| {
        let part = Partition::from_labels(k, &labels)?;
        (part.ln_joint(&prior), part.n_clusters())
    });
    let ln_joint = finite(ln_joint, prior.joint_label())?;
    use nrmm::prior::NrmPrior;
    if a.json {
        return print_json(&json!({
            "log_joint": ln_joint,
            "joint": prior.joint_label(),
            "n_clusters": k,
            "n": n,
            "d": kernel.dim(),
            "hyper": prior.hyper_values().into_iter().collect::<std::collections::BTreeMap<_, _>>(),
        }));
    }
    output::stdout(|out| {
        writeln!(out, "{} = {ln_joint:.6}", prior.joint_label())?;
        writeln!(
            out,
            "clusters: {k}   points: {n}   dimension: {}",
            kernel.dim()
        )
    })
}

/// Most points `exact` enumerates: 12 points have 4,213,597 partitions (about a second).
const EXACT_MAX_POINTS: usize = 12;

/// Most points `check-exact` takes: its sampler must visit the partitions often enough for
/// the comparison to mean something (10 points have 115,975).
const CHECK_EXACT_MAX_POINTS: usize = 10;

/// The exact partition prior targeted by samplers running `prior` (hyperparameters fixed or
/// integrated, MATH §7.1).
fn exact_posterior<K: ConjugateKernel>(kernel: &K, prior: &Prior) -> Result<ExactPosterior> {
    let n = kernel.n_points();
    if n > EXACT_MAX_POINTS {
        return Err(Error::TooLarge(format!(
            "the exact posterior enumerates all set partitions; {n} points have too many \
             (at most {EXACT_MAX_POINTS}, whose 4,213,597 partitions take about a second)"
        )));
    }
    let weights = PartitionPrior::new(PartitionPriorSpec::from_prior(prior)?, n)?;
    let post = ExactPosterior::new(kernel, move |sizes: &[usize]| {
        weights.ln_weight(sizes).unwrap_or(f64::NAN)
    })?;
    finite(post.expected_k(), "the exact posterior's E[K]")?;
    Ok(post)
}

/// Refuses `--kernel-hyperpriors` in the verbs whose exact posterior holds the kernel's
/// hyperparameters fixed.
fn refuse_kernel_hyperpriors(m: &ModelArgs, verb: &str) -> Result<()> {
    if m.kernel_hyperpriors {
        return Err(Error::Usage(format!(
            "{verb} enumerates partitions with the kernel's hyperparameters fixed; the \
             integral over kernel hyperpriors is not offered here: drop --kernel-hyperpriors"
        )));
    }
    Ok(())
}

/// `nrmm exact`: the exact posterior over partitions by enumeration (MATH §7.1).
pub fn exact(a: ExactArgs) -> Result<()> {
    refuse_kernel_hyperpriors(&a.model, "exact")?;
    let Model { kernel, prior, .. } = build(&a.data, &a.model, Builtin::SetB)?;
    let post = with_kernel!(&kernel, |k| exact_posterior(k, &prior))?;
    // More than every partition is every partition; the clamp also keeps a huge --top from
    // reserving memory for entries that cannot exist.
    let top = a.top.min(post.n_partitions());
    if a.json {
        let summary = serde_json::to_value(post.summary(top))
            .map_err(|e| Error::Numerical(format!("the exact posterior summary: {e}")))?;
        return print_json(&summary);
    }
    output::stdout(|out| {
        writeln!(
            out,
            "exact posterior over {} partitions of {} points",
            post.n_partitions(),
            post.n_points()
        )?;
        writeln!(out, "\ntop partitions (labels by point):")?;
        for (rgs, p) in post.top(top) {
            writeln!(out, "  {rgs}  {p:.6}")?;
        }
        writeln!(out, "\nP(K = k):")?;
        for (k, p) in post
            .k_probabilities()
            .iter()
            .enumerate()
            .filter(|(_, p)| **p > 0.0)
        {
            writeln!(out, "  {k:>2}  {p:.6}")?;
        }
        writeln!(out, "\nE[K] = {:.6}", post.expected_k())
    })
}

/// Most 8-byte values `generate` may hold at once (2 GiB): beyond it a typo in `--n` or `--d`
/// would end in an allocation failure (an abort, not an error).
const MAX_GENERATED_VALUES: f64 = (1u64 << 28) as f64;

/// Values `generate` holds at once for `n` points in `k` clusters: the data plus, per cluster,
/// a `d × d` precision factor and a mean (Gaussian) or a `d`-word distribution (counts; each
/// document keeps at most `min(length, d)` id-count pairs).
fn generated_values(kind: GenerateKind, n: usize, d: usize, k: usize, doc_length: f64) -> f64 {
    let (n, d, k) = (n as f64, d as f64, k as f64);
    match kind {
        GenerateKind::Gaussian => n * d + k * (d * d + d) + d * d,
        GenerateKind::Counts => k * d + 2.0 * n * doc_length.min(d),
    }
}

/// `nrmm generate`: a partition (uniform with `--k`, else from the DP's CRP or the NGGP's
/// Gibbs-type urn), then Gaussian data from Normal-Wishart clusters or bags of words from
/// Dirichlet-multinomial clusters.
pub fn generate(a: GenerateArgs) -> Result<()> {
    let prior = a.prior.unwrap_or(PriorKind::Dp);
    if a.sigma.is_some() && prior != PriorKind::Nggp {
        return Err(Error::Usage(
            "--sigma is the NGGP discount: add --prior nggp".into(),
        ));
    }
    if a.kind == GenerateKind::Gaussian && (a.beta.is_some() || a.doc_length.is_some()) {
        return Err(Error::Usage(
            "--beta and --doc-length shape bags of words: they apply to generate counts only"
                .into(),
        ));
    }
    if a.n == 0 {
        return Err(Error::param("--n", 0, "at least 1 point"));
    }
    if a.d == 0 {
        return Err(Error::param("--d", 0, "at least 1"));
    }
    let doc_length = a.doc_length.unwrap_or(50.0);
    // The labels alone hold n values; the full check needs the number of clusters.
    if a.n as f64 > MAX_GENERATED_VALUES {
        return Err(Error::param(
            "--n",
            a.n,
            &format!("at most {MAX_GENERATED_VALUES} points"),
        ));
    }
    let mut rng = nrmm::rng::SeedPlan::new(a.seed).chain(0);
    let alpha = a.alpha.unwrap_or(1.0);
    let labels = match a.k {
        Some(k) => generate::partition_uniform(a.n, k, &mut rng),
        None => match prior {
            PriorKind::Dp => generate::partition_crp(a.n, alpha, &mut rng),
            PriorKind::Nggp => {
                generate::partition_nggp(a.n, alpha, a.sigma.unwrap_or(0.5), &mut rng)
            }
        },
    }
    .map_err(|e| name_flag(e, GENERATE_FLAGS))?;
    // Labels are 0..k with possibly empty clusters (a fixed --k draws each point's cluster
    // uniformly), so both counts are taken from them.
    let slots = labels.iter().max().map_or(0, |m| m + 1);
    let values = generated_values(a.kind, a.n, a.d, slots, doc_length);
    if values > MAX_GENERATED_VALUES {
        return Err(Error::TooLarge(format!(
            "--n {} with --d {} in {slots} clusters needs about {:.1} GiB; at most {:.0} GiB: \
             lower --n or --d",
            a.n,
            a.d,
            values * 8.0 / (1u64 << 30) as f64,
            MAX_GENERATED_VALUES * 8.0 / (1u64 << 30) as f64
        )));
    }
    // `--out runs/x.txt` creates `runs/`; a parent that exists as something else is left to
    // the write to report.
    for path in std::iter::once(&a.out).chain(&a.labels_out) {
        if let Some(parent) = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty() && !p.exists())
        {
            output::create_dir(parent)?;
        }
    }
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
                a.beta.unwrap_or(DEFAULT_BETA),
                DocLengths::Poisson { mean: doc_length },
                &mut rng,
            )
            .map_err(|e| name_flag(e, GENERATE_FLAGS))?;
            load::write_docword(&a.out, &c)?;
        }
    }
    if let Some(path) = &a.labels_out {
        let one_based: Vec<usize> = labels.iter().map(|l| l + 1).collect();
        load::write_labels(path, &one_based)?;
    }
    let mut used = vec![false; slots];
    for &l in &labels {
        used[l] = true;
    }
    let k = used.iter().filter(|&&u| u).count();
    output::stdout(|out| {
        writeln!(
            out,
            "wrote {} points in {k} clusters to {}",
            a.n,
            a.out.display()
        )
    })
}

/// Fewest sweeps `check-exact` accepts: below it the comparison is noise.
const CHECK_EXACT_MIN_SWEEPS: u64 = 100;

/// `nrmm check-exact`: one chain from the single-cluster partition, its post-burn-in
/// partitions compared with the exact posterior (total variation against the noise floor of a
/// perfect sampler with the chain's effective sample size).
pub fn check_exact(a: CheckExactArgs) -> Result<()> {
    if a.sweeps < CHECK_EXACT_MIN_SWEEPS {
        return Err(Error::param(
            "--sweeps",
            a.sweeps,
            &format!("at least {CHECK_EXACT_MIN_SWEEPS}"),
        ));
    }
    refuse_kernel_hyperpriors(&a.model, "check-exact")?;
    let Model {
        kernel,
        prior,
        spec,
        ..
    } = build(&a.data, &a.model, Builtin::SetB)?;
    let n = with_kernel!(&kernel, |k| k.n_points());
    if n > CHECK_EXACT_MAX_POINTS {
        return Err(Error::TooLarge(format!(
            "check-exact compares against every set partition; {n} points are too many \
             (at most {CHECK_EXACT_MAX_POINTS})"
        )));
    }
    let (post, empirical, ks) = with_kernel!(&kernel, |k| {
        let post = exact_posterior(k, &prior)?;
        let state = State {
            partition: Partition::single(k),
            prior: prior.clone(),
        };
        let rng = nrmm::rng::SeedPlan::new(a.seed).chain(0);
        let mut chain = Chain::new(
            k,
            state,
            rng,
            a.sampler
                .settings(n)
                .schedule(spec.resamples_hyper(), &prior)
                .map_err(flags)?,
        );
        let burn_in = a.sweeps / 10;
        let mut empirical = EmpiricalPartitions::new(n)?;
        // Reserve for the usual run lengths only; a huge --sweeps grows the series as it goes.
        let kept = usize::try_from(a.sweeps - burn_in).unwrap_or(usize::MAX);
        let mut ks = Vec::with_capacity(kept.min(1 << 20));
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
        return print_json(&json!({
            "tv": comparison.tv,
            "tv_noise_floor": comparison.expected_tv,
            "n_eff": n_eff,
            "draws": empirical.total(),
            "p_k_exact": p_k_exact,
            "p_k_sampler": p_k_sampler,
            "comparison": comparison,
        }));
    }
    output::stdout(|out| {
        writeln!(
            out,
            "{} draws after 10% burn-in, effective size (of K) {n_eff:.0}",
            empirical.total()
        )?;
        writeln!(
            out,
            "total variation to the exact posterior: {:.4}   (a perfect sampler of that size: {:.4})",
            comparison.tv, comparison.expected_tv
        )?;
        writeln!(out, "\n  k   P(K=k) exact   sampler")?;
        for k in 1..p_k_exact.len().max(p_k_sampler.len()) {
            let e = p_k_exact.get(k).copied().unwrap_or(0.0);
            let s = p_k_sampler.get(k).copied().unwrap_or(0.0);
            if e > 0.0 || s > 0.0 {
                writeln!(out, "  {k:>2}   {e:.6}     {s:.6}")?;
            }
        }
        Ok(())
    })
}
