//! The one line a run announces before it starts ([`header`]): the model, the kernel, the
//! sampler and its moves, the chains, their start and their budget, so that what the defaults
//! chose is never a surprise.

use super::spec::{Budget, SamplerKind, SamplerSpec};
use crate::model::{Model, NwDefaults, PriorKind, RealColumns};
use crate::prior::KPrior;

/// What a run will do, in one line: `"run: DP(α = 1) mixture, Normal-Wishart kernel (scaled
/// defaults), 600 × 10 points; sampler sams (6 proposals + 1 Gibbs sweep per sweep), 4 chains
/// of 1000 sweeps from init auto, seed 1"`. `by_size` says that the sampler was not asked for
/// but chosen by the number of points ([`SamplerKind::for_data`]), which the line then says:
/// `"sampler subcluster (chosen for n = 200000; 100 proposals per sweep)"`. Parameters are
/// named between backticks for front ends to rename. Cost: O(1).
pub fn header(model: &Model, spec: &SamplerSpec, by_size: bool) -> String {
    let m = &model.spec;
    let alpha = m.alpha.unwrap_or(1.0);
    let prior = match m.prior {
        PriorKind::Dp => format!("DP(α = {alpha})"),
        PriorKind::Nggp => format!("NGGP(α = {alpha}, σ = {})", m.sigma.unwrap_or(0.5)),
        PriorKind::PitmanYor => format!("PY(θ = {alpha}, σ = {})", m.sigma.unwrap_or(0.5)),
        PriorKind::Mfm => format!(
            "MFM(γ = {}, K {})",
            m.gamma.unwrap_or(1.0),
            m.k_prior.unwrap_or(KPrior::Poisson { lambda: 1.0 }).text()
        ),
    };
    let hyper = if m.hyperpriors {
        " with hyperpriors"
    } else {
        ""
    };
    let pilot;
    let defaults = match (m.pilot, m.nw_defaults) {
        (Some(p), _) => {
            let chosen = p.diagonal_by.map_or(String::new(), |by| {
                format!("chosen over the full covariance by {by} nats of evidence; ")
            });
            let on = p.points.map_or(String::new(), |m| {
                format!(" on {m} of {} points", model.fingerprint.n)
            });
            pilot = format!(
                "{chosen}scale from a pilot's {} clusters, {} chains of {} sweeps{on}",
                p.clusters, p.chains, p.sweeps
            );
            pilot.as_str()
        }
        (None, NwDefaults::Pooled | NwDefaults::Scaled) => "scaled defaults",
        (None, NwDefaults::Reference) => "reference defaults",
    };
    let kind = model.kernel.kind();
    let kernel = if kind.scale_defaults() {
        format!("{} ({defaults})", kind.title())
    } else if let Some(real) = m.mixed_real {
        let chosen = m.mixed_real_choice.map_or(String::new(), |c| {
            format!(
                ", chosen by evidence: the full block {} nats above independent columns on {} \
                 rows with every real entry",
                c.full_by, c.rows
            )
        });
        let real = match real {
            RealColumns::Full => "real columns as one full-covariance block",
            RealColumns::Independent => "real columns independent",
        };
        format!("{} ({real}{chosen})", kind.title())
    } else {
        kind.title().to_string()
    };
    let kernel_hyper = if m.kernel_hyperpriors {
        ", kernel hyperpriors"
    } else {
        ""
    };
    let f = &model.fingerprint;
    let s = &spec.sampler;
    let moves = &s.moves;
    let plural = |n: usize, one: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {one}s")
        }
    };
    let gibbs = plural(moves.gibbs_sweeps, "Gibbs sweep");
    let mix = match s.kind {
        SamplerKind::Gibbs => String::new(),
        SamplerKind::Sams | SamplerKind::JainNeal => format!(
            "{} + {gibbs} per sweep",
            plural(moves.proposals, "proposal")
        ),
        SamplerKind::Subcluster | SamplerKind::SubclusterDpmm => {
            format!("{} per sweep", plural(moves.proposals, "proposal"))
        }
        SamplerKind::Tgmcmc | SamplerKind::TgmcmcPaper => format!(
            "{} + {gibbs} per sweep",
            plural(moves.global_moves, "tree-guided proposal")
        ),
        SamplerKind::Direct | SamplerKind::QuasiDirect | SamplerKind::QuasiCollapsed => {
            String::new()
        }
    };
    let mix = match (s.temperatures.len(), mix.is_empty()) {
        (0, _) => mix,
        (r, true) => format!(
            "tempered: {r} replicas per chain at β = {}",
            betas(&s.temperatures)
        ),
        (r, false) => format!(
            "{mix}; tempered: {r} replicas per chain at β = {}",
            betas(&s.temperatures)
        ),
    };
    let chosen = by_size.then(|| format!("chosen for n = {}", f.n));
    let mix = match (chosen, mix.is_empty()) {
        (None, true) => String::new(),
        (None, false) => format!(" ({mix})"),
        (Some(c), true) => format!(" ({c})"),
        (Some(c), false) => format!(" ({c}; {mix})"),
    };
    let budget = match spec.budget {
        Budget::Sweeps(n) => format!("{n} sweeps"),
        Budget::Seconds(t) => format!("{t} s of sampling"),
        Budget::Auto(a) => format!(
            "{} sweeps, doubled until the chains agree (at most {})",
            a.first, a.max
        ),
    };
    let init = &spec.init;
    // A table's columns: their types as read and their missing entries.
    let table = match &model.kernel {
        crate::kernel::AnyKernel::Mixed(k) => format!("\n{}", k.table().describe()),
        _ => String::new(),
    };
    let modelled = model.columns.as_ref().map_or(String::new(), |c| {
        format!(" ({} varying columns modelled)", c.kept.len())
    });
    format!(
        "run: {prior}{hyper} mixture, {kernel}{kernel_hyper}, {} × {} points{modelled}; sampler \
         {}{mix}, {} of {budget} from `init` {init}, `seed` {}{table}",
        f.n,
        f.dim,
        s.kind,
        plural(spec.chains, "chain"),
        spec.seed
    )
}

/// A ladder's inverse temperatures as the header shows them: `1, 0.7, 0.49`.
fn betas(b: &[f64]) -> String {
    b.iter()
        .map(|b| format!("{}", (b * 1e4).round() / 1e4))
        .collect::<Vec<_>>()
        .join(", ")
}
