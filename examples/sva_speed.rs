//! Time of one SVA / SVA-PM pass over the paper's 10K set (10,000 points, d = 6) and over
//! Lin's synthetic set (10,000 points, d = 2).
//!
//! `cargo run --release --example sva_speed` runs each configuration 7 times and prints the
//! median wall time, K and the ARI against the true labels; `-- --smoke` runs each once on
//! the first 500 points (a quick check that the example works). The 10K set is read from
//! `../shared/data/10k` and skipped with a message when absent.

use std::sync::Arc;
use std::time::Instant;

use nrmm::data::generate::lin2013_like;
use nrmm::data::load::{load_dense, load_labels};
use nrmm::data::DenseData;
use nrmm::diagnostics::adjusted_rand_index;
use nrmm::kernel::{NormalWishart, NwHyper};
use nrmm::rng::SeedPlan;
use nrmm::sva::{fit_shuffled, SvaConfig};

fn first(data: &DenseData, labels: &[i64], n: usize) -> (DenseData, Vec<i64>) {
    let n = n.min(data.n());
    let rows: Vec<Vec<f64>> = (0..n).map(|i| data.row(i).to_vec()).collect();
    (DenseData::from_rows(&rows).unwrap(), labels[..n].to_vec())
}

/// Unit covariance expected with the weight of ten observations, means spread as N(0, 100² I).
fn unit_cov_prior(d: usize) -> NwHyper {
    let nu = d as f64 + 10.0;
    let mut psi = vec![0.0; d * d];
    for i in 0..d {
        psi[i * d + i] = nu - d as f64 - 1.0;
    }
    NwHyper::new(vec![0.0; d], psi, 1e-4, nu).unwrap()
}

fn run(name: &str, kernel: &NormalWishart, truth: &[i64], reps: usize) {
    for (label, config) in [
        ("SVA", SvaConfig::new(1.0)),
        ("SVA-PM", SvaConfig::with_prune_merge(1.0)),
    ] {
        let mut times = Vec::new();
        let mut last = None;
        for rep in 0..reps {
            let mut rng = SeedPlan::new(rep as u64 + 1).chain(0);
            let start = Instant::now();
            let f = fit_shuffled(kernel, &config, &mut rng).expect("the fit runs");
            times.push(start.elapsed().as_secs_f64());
            last = Some(f);
        }
        times.sort_by(f64::total_cmp);
        let f = last.expect("at least one repetition");
        let ari = adjusted_rand_index(f.labels(), truth).expect("labels agree in length");
        println!(
            "{name:<22} {label:<7} n = {:>5}  median {:>8.2} ms  K = {:>3}  ARI = {ari:.3}",
            truth.len(),
            1e3 * times[times.len() / 2],
            f.n_components()
        );
    }
}

fn main() {
    let smoke = std::env::args().any(|a| a == "--smoke");
    let (reps, limit) = if smoke { (1, 500) } else { (7, usize::MAX) };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/10k");
    if dir.is_dir() {
        let data = load_dense(dir.join("X.txt")).expect("10k/X.txt reads");
        let truth = load_labels(dir.join("gt_labels.txt"), data.n()).expect("labels read");
        let (data, truth) = first(&data, &truth, limit);
        let hyper = NwHyper::from_data(&data).expect("covariance is non-singular");
        let kernel = NormalWishart::new(Arc::new(data), hyper).expect("dimensions agree");
        run("10k, reference prior", &kernel, &truth, reps);
    } else {
        println!("skipping the 10K set: {} is absent", dir.display());
    }
    let (data, truth) = lin2013_like(2013);
    let truth: Vec<i64> = truth.iter().map(|&l| l as i64).collect();
    let (data, truth) = first(&data, &truth, limit);
    let kernel = NormalWishart::new(Arc::new(data), unit_cov_prior(2)).expect("d = 2");
    run("Lin 2013 set", &kernel, &truth, reps);
}
