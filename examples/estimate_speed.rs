//! Time of the search for the partition minimising each expected loss (VI, Binder, 1 − ARI)
//! over 1,000 draws of 5,000 points, with the summary's settings
//! (`SearchSettings::for_size`), against Dahl's least-squares draw among the same draws.
//!
//! The draws: 10 true clusters of 500 points; in each draw every point moves to one of 12
//! clusters at random with probability 0.05, so the draws disagree on a few hundred points as
//! a posterior of well-separated clusters does. `cargo run --release --example
//! estimate_speed` prints, per loss, the median wall time of 3 searches, K and the expected
//! loss of the search's estimate and of Dahl's; `-- --smoke` runs once on 500 points and 100
//! draws (a quick check that the example works); `-- --loss NAME` (`vi`, `binder`, `1-ari`)
//! times that loss alone.

use std::time::Instant;

use nrmm::diagnostics::{
    minimise_expected_loss, DrawSet, PartitionLoss, SearchSettings, SimilarityMatrix,
};
use nrmm::rng::{uniform_index, uniform_open01, SeedPlan};

fn main() -> nrmm::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let smoke = args.iter().any(|a| a == "--smoke");
    let only = match args.iter().position(|a| a == "--loss") {
        Some(i) => Some(PartitionLoss::named(args.get(i + 1).map_or("", |s| s))?),
        None => None,
    };
    let (n, m, repeats) = if smoke {
        (500, 100, 1)
    } else {
        (5000, 1000, 3)
    };
    let mut rng = SeedPlan::new(1).chain(0);
    let truth: Vec<usize> = (0..n).map(|i| i * 10 / n).collect();
    let draws: Vec<Vec<usize>> = (0..m)
        .map(|_| {
            truth
                .iter()
                .map(|&l| {
                    if uniform_open01(&mut rng) < 0.05 {
                        uniform_index(&mut rng, 12)
                    } else {
                        l
                    }
                })
                .collect()
        })
        .collect();
    let set = DrawSet::new(&draws)?;
    let dahl = &draws[SimilarityMatrix::from_draws(&draws)?.least_squares_draw(&draws)?];
    let clusters = draws
        .iter()
        .map(|d| d.iter().max().map_or(0, |&k| k + 1))
        .sum::<usize>() as f64
        / m as f64;
    let settings = SearchSettings::for_size(n, set.atoms(), m, clusters, 0);
    println!(
        "{n} points, {m} draws, {} runs, {} threads",
        settings.runs,
        rayon::current_num_threads()
    );
    for loss in [
        PartitionLoss::VI,
        PartitionLoss::BINDER,
        PartitionLoss::OneMinusAri,
    ] {
        if only.is_some_and(|o| o != loss) {
            continue;
        }
        let mut times = Vec::new();
        let mut found = None;
        for _ in 0..repeats {
            let start = Instant::now();
            found = Some(minimise_expected_loss(&set, loss, &settings)?);
            times.push(start.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let found = found.expect("at least one repeat");
        println!(
            "{:<7} {:>6.2} s  search K = {:>2}, expected loss {:.5}; Dahl's K = {:>2}, {:.5}",
            loss.name(),
            times[times.len() / 2],
            found.n_clusters,
            found.expected_loss,
            dahl.iter().max().map_or(0, |k| k + 1),
            set.expected_loss(loss, dahl)?
        );
    }
    Ok(())
}
