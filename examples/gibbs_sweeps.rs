//! A fixed number of sweeps of one move (collapsed Gibbs by default, or a DPMM.jl-style
//! sampler) on the paper's `toy` or `10k` set from its ground-truth partition, under the reference model (DP with α = 1, Normal-Wishart
//! hyperparameters from the data as in the reference code, MATH §2.1): a deterministic
//! workload for counting a sweep's instructions, which on a shared machine are steadier than
//! its time.
//!
//! Run:
//!
//! ```text
//! cargo run --release --example gibbs_sweeps -- 40 toy        # 40 sweeps, seed 7
//! valgrind --tool=callgrind "--toggle-collect=*Gibbs as nrmm::sampler::Move*" \
//!     target/release/examples/gibbs_sweeps 40 toy             # instructions inside the sweeps
//! cargo run --release --example gibbs_sweeps -- 20 10k subcluster   # another move
//! ```
//!
//! Moves: `gibbs`, `subcluster`, `subcluster-dpmm`, `direct`, `quasi-direct`,
//! `quasi-collapsed`.
//!
//! It prints the final number of clusters and the log joint (its bits identify the chain).
//! Data are read from `../shared/data/<set>/` (relative to the repository root; the
//! environment variable `NRMM_DATA_DIR` overrides the folder).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use nrmm::data::canonical_labels;
use nrmm::data::load::{load_dense, load_labels};
use nrmm::kernel::{NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::Dp;
use nrmm::rng::SeedPlan;
use nrmm::sampler::{
    Direct, DpmmOptions, Gibbs, GibbsScan, Move, QuasiCollapsed, QuasiDirect, RngChooser, State,
    SubCluster, SubClusterOptions,
};

fn main() -> nrmm::Result<()> {
    let mut args = std::env::args().skip(1);
    let sweeps: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(40);
    let set = args.next().unwrap_or_else(|| "toy".into());
    let name = args.next().unwrap_or_else(|| "gibbs".into());
    let root = std::env::var_os("NRMM_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"));
    let dir = root.join(&set);
    let data = load_dense(dir.join("X.txt"))?;
    let labels = canonical_labels(&load_labels(dir.join("gt_labels.txt"), data.n())?);
    let hyper = NwHyper::from_data(&data)?;
    let kernel = NormalWishart::new(Arc::new(data), hyper)?;
    let mut state = State {
        partition: Partition::from_labels(&kernel, &labels)?,
        prior: Dp::new(1.0)?,
    };
    let mut rng = SeedPlan::new(7).chain(0);
    let mut mv: Box<dyn Move<NormalWishart, Dp>> = match name.as_str() {
        "gibbs" => Box::new(Gibbs::new(GibbsScan::Full)?),
        "subcluster" => Box::new(SubCluster::new(SubClusterOptions::default())),
        "subcluster-dpmm" => Box::new(SubCluster::dpmm(DpmmOptions::default())),
        "direct" => Box::new(Direct::new()),
        "quasi-direct" => Box::new(QuasiDirect::new()),
        "quasi-collapsed" => Box::new(QuasiCollapsed::new()),
        other => {
            return Err(nrmm::Error::Usage(format!(
                "unknown move {other:?}: expected gibbs, subcluster, subcluster-dpmm, direct, \
                 quasi-direct or quasi-collapsed"
            )))
        }
    };
    for _ in 0..sweeps {
        mv.step(&kernel, &mut state, &mut RngChooser::new(&mut rng))?;
    }
    let ln_joint = state.ln_joint();
    println!(
        "{set}: {sweeps} {name} sweeps, K = {}, ln joint {ln_joint} (bits {:016x})",
        state.partition.n_clusters(),
        ln_joint.to_bits()
    );
    Ok(())
}
