//! Point estimates by loss and credible balls, checked against enumeration: on small n every
//! set partition is scored by losses written here from their definitions (pair by pair, by
//! entropies, by the adjusted Rand index), so the library's contingency-table formulas, its
//! expected losses and the search's minimiser are each compared with a brute-force truth.

use nrmm::diagnostics::{
    adjusted_rand_index, minimise_expected_loss, search_expected_loss, CredibleBall, DrawSet,
    LossEstimate, PartitionLoss, SearchSettings,
};
use nrmm::exact::SetPartitions;
use nrmm::rng::{uniform_index, uniform_open01, NrmmRng, SeedPlan};
use proptest::prelude::*;

/// Every loss the library offers, with parameters on both sides of 1.
const LOSSES: [PartitionLoss; 7] = [
    PartitionLoss::VI,
    PartitionLoss::Vi { a: 0.5 },
    PartitionLoss::Vi { a: 1.6 },
    PartitionLoss::BINDER,
    PartitionLoss::Binder { a: 0.4 },
    PartitionLoss::Binder { a: 1.5 },
    PartitionLoss::OneMinusAri,
];

/// The loss of `estimate` against `truth` from its definition, never from a contingency table.
fn brute_loss(loss: PartitionLoss, estimate: &[usize], truth: &[usize]) -> f64 {
    let n = estimate.len();
    match loss {
        PartitionLoss::Binder { a } => {
            let mut cost = 0.0;
            for i in 0..n {
                for j in 0..n {
                    let (together_e, together_t) =
                        (estimate[i] == estimate[j], truth[i] == truth[j]);
                    if together_t && !together_e {
                        cost += a;
                    } else if together_e && !together_t {
                        cost += 2.0 - a;
                    }
                }
            }
            cost / (n * n) as f64
        }
        PartitionLoss::Vi { a } => {
            // H(X | Y) = -Σ_x,y p(x, y) log2 p(x, y) / p(y).
            let conditional = |x: &[usize], y: &[usize]| {
                let mut h = 0.0;
                for i in 0..n {
                    let joint = (0..n).filter(|&j| x[j] == x[i] && y[j] == y[i]).count() as f64;
                    let given = (0..n).filter(|&j| y[j] == y[i]).count() as f64;
                    // Each point stands for 1/n of the mass of its cell.
                    h -= (joint / given).log2() / n as f64;
                }
                h
            };
            a * conditional(estimate, truth) + (2.0 - a) * conditional(truth, estimate)
        }
        PartitionLoss::OneMinusAri => 1.0 - adjusted_rand_index(estimate, truth).unwrap(),
    }
}

/// `m` draws of `n` points around two modes: each draw picks a mode, then moves each point to
/// a uniformly chosen cluster (of the mode's, or a new one) with probability `noise`.
fn draws(n: usize, m: usize, noise: f64, seed: u64) -> Vec<Vec<usize>> {
    let mut rng: NrmmRng = SeedPlan::new(seed).chain(0);
    let modes: [Vec<usize>; 2] = [
        (0..n).map(|i| i * 3 / n).collect(),
        (0..n).map(|i| usize::from(i >= n / 2)).collect(),
    ];
    (0..m)
        .map(|_| {
            let mode = &modes[usize::from(uniform_open01(&mut rng) < 0.35)];
            let k = mode.iter().max().unwrap() + 2;
            mode.iter()
                .map(|&l| {
                    if uniform_open01(&mut rng) < noise {
                        uniform_index(&mut rng, k)
                    } else {
                        l
                    }
                })
                .collect()
        })
        .collect()
}

/// The mean brute-force loss of `estimate` over `draws`.
fn brute_expected(loss: PartitionLoss, estimate: &[usize], draws: &[Vec<usize>]) -> f64 {
    draws
        .iter()
        .map(|d| brute_loss(loss, estimate, d))
        .sum::<f64>()
        / draws.len() as f64
}

#[test]
fn expected_losses_match_their_definitions_and_the_search_finds_the_minimiser() {
    // Bell(7) = 877 partitions per case; noise from nearly certain to diffuse posteriors.
    for (n, m, noise, seed) in [
        (7, 40, 0.1, 1),
        (7, 60, 0.4, 2),
        (6, 30, 0.7, 3),
        (5, 25, 0.25, 4),
    ] {
        let raw = draws(n, m, noise, seed);
        let set = DrawSet::new(&raw).unwrap();
        for loss in LOSSES {
            let mut min = (f64::INFINITY, Vec::new());
            for rgs in SetPartitions::new(n).unwrap() {
                let labels: Vec<usize> = rgs.labels().iter().map(|&l| l as usize).collect();
                let brute = brute_expected(loss, &labels, &raw);
                let formula = set.expected_loss(loss, &labels).unwrap();
                assert!(
                    (brute - formula).abs() < 1e-12,
                    "{} of {labels:?}: definition {brute}, formula {formula}",
                    loss.name()
                );
                if brute < min.0 {
                    min = (brute, labels);
                }
            }
            let found = search_expected_loss(&set, loss, &SearchSettings::default()).unwrap();
            let truth = brute_expected(loss, &found.labels, &raw);
            assert!((found.expected_loss - truth).abs() < 1e-12);
            assert!(
                found.expected_loss <= min.0 + 1e-12,
                "{} (n = {n}, noise {noise}): the search found {:?} at {}, the minimum is {:?} \
                 at {}",
                loss.name(),
                found.labels,
                found.expected_loss,
                min.1,
                min.0
            );
            assert_eq!(found.n_clusters, found.labels.iter().max().unwrap() + 1);
            // Where enumeration is cheap the library enumerates: the minimum itself.
            let exact = minimise_expected_loss(&set, loss, &SearchSettings::default()).unwrap();
            assert_eq!(exact.run, None);
            assert!((exact.expected_loss - min.0).abs() < 1e-12);
        }
    }
}

#[test]
fn one_run_without_zealous_updates_also_finds_the_minimiser_of_a_clear_posterior() {
    // A sequential allocation and sweetening alone suffice when one mode dominates: the
    // search's parts are each sound, not only their best of 16.
    let raw = draws(7, 50, 0.05, 9);
    let set = DrawSet::new(&raw).unwrap();
    let settings = SearchSettings {
        runs: 1,
        zealous: 0,
        ..SearchSettings::default()
    };
    for loss in [PartitionLoss::VI, PartitionLoss::BINDER] {
        let min = SetPartitions::new(7)
            .unwrap()
            .map(|rgs| {
                let labels: Vec<usize> = rgs.labels().iter().map(|&l| l as usize).collect();
                brute_expected(loss, &labels, &raw)
            })
            .fold(f64::INFINITY, f64::min);
        let found = search_expected_loss(&set, loss, &settings).unwrap();
        assert!(found.expected_loss <= min + 1e-12, "{}", loss.name());
    }
}

/// `search()` run in a pool of `threads` threads, unwrapped.
fn on_threads(
    threads: usize,
    search: impl FnOnce() -> nrmm::Result<LossEstimate> + Send,
) -> LossEstimate {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(|| search().unwrap())
}

#[test]
fn the_search_is_the_same_on_one_thread_and_many() {
    let raw = draws(60, 80, 0.3, 5);
    let set = DrawSet::new(&raw).unwrap();
    let settings = SearchSettings {
        seed: 17,
        ..SearchSettings::default()
    };
    for loss in [PartitionLoss::VI, PartitionLoss::OneMinusAri] {
        let on = |threads| on_threads(threads, || search_expected_loss(&set, loss, &settings));
        assert_eq!(on(1), on(4), "{}", loss.name());
    }
}

#[test]
fn a_search_bounded_in_work_stops_early_says_so_and_is_the_same_on_any_thread_count() {
    // Noisy draws of 60 points: sweetening and the zealous updates have work to do.
    let raw = draws(60, 80, 0.3, 5);
    let set = DrawSet::new(&raw).unwrap();
    for loss in [
        PartitionLoss::VI,
        PartitionLoss::BINDER,
        PartitionLoss::OneMinusAri,
    ] {
        let free = search_expected_loss(&set, loss, &SearchSettings::default()).unwrap();
        assert!(!free.method.contains("bound"), "{}", free.method);
        // A bound never reached changes nothing.
        let loose = SearchSettings {
            max_work: Some(u64::MAX),
            ..SearchSettings::default()
        };
        assert_eq!(search_expected_loss(&set, loss, &loose).unwrap(), free);
        // A bound of one evaluation: each run keeps its allocation after one scan at most.
        let tight = SearchSettings {
            max_work: Some(1),
            ..SearchSettings::default()
        };
        let on = |threads| on_threads(threads, || search_expected_loss(&set, loss, &tight));
        let cut = on(1);
        assert_eq!(cut, on(4), "{}", loss.name());
        assert!(
            cut.method.contains("16 stopped at the bound on work"),
            "{}",
            cut.method
        );
        assert_eq!(cut.labels.len(), 60);
        assert!(cut.expected_loss.is_finite());
        assert!(
            cut.expected_loss >= free.expected_loss - 1e-12,
            "{}",
            loss.name()
        );
        // Its loss is the one its labels have.
        let direct = set.expected_loss(loss, &cut.labels).unwrap();
        assert!((direct - cut.expected_loss).abs() <= 1e-12 * direct.abs().max(1.0));
    }
}

#[test]
fn bad_requests_are_refused() {
    let set = DrawSet::new(&[vec![0, 0, 1]]).unwrap();
    let bad_a = PartitionLoss::Vi { a: 2.0 };
    assert!(minimise_expected_loss(&set, bad_a, &SearchSettings::default()).is_err());
    assert!(search_expected_loss(&set, bad_a, &SearchSettings::default()).is_err());
    let no_runs = SearchSettings {
        runs: 0,
        ..SearchSettings::default()
    };
    assert!(minimise_expected_loss(&set, PartitionLoss::VI, &no_runs).is_err());
    for level in [0.0, -0.5, 1.5, f64::NAN] {
        assert!(CredibleBall::around(&set, PartitionLoss::VI, &[0, 0, 0], level).is_err());
    }
    assert!(CredibleBall::around(&set, PartitionLoss::VI, &[0, 0], 0.9).is_err());
}

#[test]
fn credible_balls_hold_their_level_and_their_bounds_are_at_the_edge() {
    let raw = draws(7, 200, 0.3, 6);
    let set = DrawSet::new(&raw).unwrap();
    let estimate = minimise_expected_loss(&set, PartitionLoss::VI, &SearchSettings::default())
        .unwrap()
        .labels;
    for level in [0.5, 0.9, 0.95, 1.0] {
        let ball = CredibleBall::around(&set, PartitionLoss::VI, &estimate, level).unwrap();
        let distances: Vec<f64> = raw
            .iter()
            .map(|d| brute_loss(PartitionLoss::VI, &estimate, d))
            .collect();
        let within = |r: f64| distances.iter().filter(|&&d| d <= r + 1e-12).count();
        let needed = (level * raw.len() as f64).ceil() as usize;
        // The radius holds the level and no smaller one does.
        assert!(within(ball.radius) >= needed, "level {level}");
        let strictly = distances
            .iter()
            .filter(|&&d| d < ball.radius - 1e-12)
            .count();
        assert!(strictly < needed, "level {level}");
        assert_eq!(ball.inside, within(ball.radius));
        // The horizontal bound is the farthest draw inside; the vertical bounds have the
        // fewest and most clusters inside, each the farthest of its kind.
        let inside: Vec<usize> = (0..raw.len())
            .filter(|&d| distances[d] <= ball.radius + 1e-12)
            .collect();
        let k = |d: usize| {
            raw[d]
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        };
        let fewest = inside.iter().map(|&d| k(d)).min().unwrap();
        let most = inside.iter().map(|&d| k(d)).max().unwrap();
        assert!((ball.horizontal.distance - ball.radius).abs() < 1e-12);
        assert_eq!(ball.vertical_upper.n_clusters, fewest);
        assert_eq!(ball.vertical_lower.n_clusters, most);
        for (bound, clusters) in [(&ball.vertical_upper, fewest), (&ball.vertical_lower, most)] {
            let farthest = inside
                .iter()
                .filter(|&&d| k(d) == clusters)
                .map(|&d| distances[d])
                .fold(f64::NEG_INFINITY, f64::max);
            assert!((bound.distance - farthest).abs() < 1e-12);
            let relabelled = nrmm::data::canonical_labels(&raw[bound.draw]);
            assert_eq!(bound.labels, relabelled);
        }
    }
}

fn labelings() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    (1usize..30).prop_flat_map(|n| {
        (
            proptest::collection::vec(0usize..5, n),
            proptest::collection::vec(0usize..8, n),
        )
    })
}

proptest! {
    #[test]
    fn losses_agree_with_their_definitions((e, t) in labelings(), shift in 1usize..50) {
        for loss in LOSSES {
            let formula = loss.between(&e, &t).unwrap();
            prop_assert!((formula - brute_loss(loss, &e, &t)).abs() < 1e-10, "{}", loss.name());
            // A partition is at distance 0 from itself, and renaming clusters changes nothing.
            prop_assert!(loss.between(&e, &e).unwrap().abs() < 1e-12);
            let renamed: Vec<usize> = e.iter().map(|&l| l * 3 + shift).collect();
            prop_assert!((loss.between(&renamed, &t).unwrap() - formula).abs() < 1e-12);
        }
        // The VI with a = 1 is a metric: symmetric and non-negative.
        let vi = PartitionLoss::VI;
        prop_assert!((vi.between(&e, &t).unwrap() - vi.between(&t, &e).unwrap()).abs() < 1e-12);
        prop_assert!(vi.between(&e, &t).unwrap() >= -1e-12);
    }
}

/// A run's summary holds the estimates by loss, their expected losses and the credible ball,
/// and writes their labels; each minimiser is lowest under its own loss.
#[test]
fn a_run_reports_estimates_by_loss_and_a_credible_ball() {
    use crate::support::cli::{ok, TempDir};
    let dir = TempDir::new("by-loss");
    // Three groups of 15 on a line, a little noise: enough for the search (n > 8).
    let x: String = (0..45)
        .map(|i| format!("{}\n", (i % 3) as f64 * 6.0 + ((i * 37) % 11) as f64 / 11.0))
        .collect();
    let x = dir.write("x.txt", &x);
    let run = dir.arg("run");
    let printed = ok(&[
        "run", "--data", &x, "--sweeps", "200", "--seed", "3", "--out", &run,
    ]);
    assert!(printed.contains("point estimates by loss"), "{printed}");
    assert!(
        printed.contains("credible ball around the VI estimate"),
        "{printed}"
    );
    let summary: serde_json::Value = serde_json::from_str(&dir.read("run/summary.json")).unwrap();
    let by_loss = &summary["by_loss"];
    let table = &by_loss["expected_losses"];
    for (i, name) in ["vi", "binder", "1-ari"].into_iter().enumerate() {
        let e = &by_loss["estimates"][i];
        assert_eq!(e["loss"], name);
        let own = e["expected_loss"].as_f64().unwrap();
        assert!((table[name][name].as_f64().unwrap() - own).abs() < 1e-12);
        for other in ["vi", "binder", "1-ari", "dahl", "map"] {
            let theirs = table[other][name].as_f64().unwrap();
            assert!(
                own <= theirs + 1e-12,
                "{name}: {own} against {other}'s {theirs}"
            );
        }
        let labels = dir.read(&format!("run/estimate-{name}.txt"));
        assert_eq!(labels.lines().count(), 45);
    }
    let ball = &by_loss["credible_ball"];
    let radius = ball["radius"].as_f64().unwrap();
    for bound in ["horizontal", "vertical_upper", "vertical_lower"] {
        assert!(ball[bound]["distance"].as_f64().unwrap() <= radius);
    }
    let k = |b: &str| ball[b]["n_clusters"].as_u64().unwrap();
    assert!(k("vertical_upper") <= k("horizontal") && k("horizontal") <= k("vertical_lower"));
    for file in ["ball-horizontal.txt", "ball-upper.txt", "ball-lower.txt"] {
        assert_eq!(dir.read(&format!("run/{file}")).lines().count(), 45);
    }
    // The default estimate is the VI's; Dahl's is beside it.
    assert_eq!(summary["default_estimate"], "vi");
    assert_eq!(by_loss["loss_a"], 1.0);
    assert_eq!(
        dir.read("run/estimate.txt"),
        dir.read("run/estimate-vi.txt")
    );
    assert_eq!(dir.read("run/estimate-dahl.txt").lines().count(), 45);
    // `--loss-a` on diagnose: recorded, named in the losses, and a larger a joins no fewer
    // pairs (see `a_larger_loss_parameter_joins_more_pairs_by_enumeration`).
    let merged = dir.arg("a17");
    let printed = ok(&["diagnose", &run, "--loss-a", "1.7", "--out", &merged]);
    assert!(printed.contains("VI and Binder with a = 1.7"), "{printed}");
    assert!(printed.contains("expected VI with a = 1.7"), "{printed}");
    assert!(printed.contains("VI(a = 1.7) radius"), "{printed}");
    let a17: serde_json::Value = serde_json::from_str(&dir.read("a17/summary.json")).unwrap();
    assert_eq!(a17["by_loss"]["loss_a"], 1.7);
    assert_eq!(a17["by_loss"]["estimates"][0]["loss"], "vi(a=1.7)");
    assert_eq!(a17["by_loss"]["estimates"][1]["loss"], "binder(a=1.7)");
    let k = |s: &serde_json::Value, i: usize| s["by_loss"]["estimates"][i]["n_clusters"].as_u64();
    assert!(k(&a17, 0) <= k(&summary, 0) && k(&a17, 1) <= k(&summary, 1));
    for bad in ["0", "2", "nan"] {
        crate::support::cli::fails(
            &["diagnose", &run, "--loss-a", bad],
            1,
            &["invalid --loss-a", "a number in (0, 2)"],
        );
    }
}

/// How often the search alone misses the minimiser on random small posteriors, by
/// enumeration: 7 losses on each of 200 cases at n = 7 and 100 at n = 8, drawn around 1 to 4
/// random modes with noise from 0.05 to 0.8. Run with `cargo test --release --test integration
/// diagnostics_estimates::search_misses -- --ignored --nocapture`.
#[test]
#[ignore = "enumerates 300 posteriors: about 15 s"]
fn search_misses_are_rare_on_random_small_posteriors() {
    let mut missed = 0;
    let mut tried = 0;
    for (n, cases) in [(7usize, 200u64), (8, 100)] {
        let parts: Vec<Vec<usize>> = SetPartitions::new(n)
            .unwrap()
            .map(|r| r.labels().iter().map(|&l| l as usize).collect())
            .collect();
        for case in 0..cases {
            let mut rng: NrmmRng = SeedPlan::new(1000 + case).chain(n as u64);
            let modes: Vec<Vec<usize>> = (0..1 + uniform_index(&mut rng, 4))
                .map(|_| {
                    let k = 1 + uniform_index(&mut rng, n);
                    (0..n).map(|_| uniform_index(&mut rng, k)).collect()
                })
                .collect();
            let noise = [0.05, 0.2, 0.4, 0.6, 0.8][case as usize % 5];
            let raw: Vec<Vec<usize>> = (0..20 + (case as usize * 7) % 60)
                .map(|_| {
                    let mode = &modes[uniform_index(&mut rng, modes.len())];
                    let k = mode.iter().max().unwrap() + 2;
                    mode.iter()
                        .map(|&l| {
                            if uniform_open01(&mut rng) < noise {
                                uniform_index(&mut rng, k)
                            } else {
                                l
                            }
                        })
                        .collect()
                })
                .collect();
            let set = DrawSet::new(&raw).unwrap();
            for loss in LOSSES {
                let min = parts
                    .iter()
                    .map(|p| set.expected_loss(loss, p).unwrap())
                    .fold(f64::INFINITY, f64::min);
                let settings = SearchSettings {
                    seed: case,
                    ..SearchSettings::default()
                };
                let found = search_expected_loss(&set, loss, &settings).unwrap();
                tried += 1;
                if found.expected_loss > min + 1e-12 {
                    missed += 1;
                    println!(
                        "n = {n}, case {case}, {}: {} > {min}",
                        loss.name(),
                        found.expected_loss
                    );
                }
            }
        }
    }
    println!("the search missed the minimiser in {missed} of {tried} cases");
    // Measured: 0 of 2,100 (12 s). With 2 runs instead of 16 it misses 34 of 2,800 at n = 7:
    // the restarts carry the search past the optima one run gets caught in.
    assert!(missed * 200 <= tried, "{missed} of {tried}");
}

/// On real data (the galaxies, 82 × 1, and wine, 178 × 13, from `../shared/data`; skipped with
/// a message when absent) each search estimate's expected loss is at most that of Dahl's
/// least-squares draw and of the best state visited under the same loss: the search ranges
/// over all partitions, those two over the visited ones.
#[test]
fn on_real_data_the_search_beats_dahls_draw_in_expected_loss() {
    use crate::support::cli::{ok, TempDir};
    use crate::support::data_dir;
    let dir = TempDir::new("real-by-loss");
    for (sub, file) in [("galaxies", "galaxies.txt"), ("real", "wine.txt")] {
        let Some(data) = data_dir(sub) else { continue };
        let data = data.join(file).display().to_string();
        let run = dir.arg(sub);
        ok(&[
            "run", "--data", &data, "--sweeps", "1000", "--seed", "1", "--out", &run,
        ]);
        let summary: serde_json::Value =
            serde_json::from_str(&dir.read(&format!("{sub}/summary.json"))).unwrap();
        let table = &summary["by_loss"]["expected_losses"];
        for loss in ["vi", "binder", "1-ari"] {
            let ours = table[loss][loss].as_f64().unwrap();
            for other in ["dahl", "map"] {
                let theirs = table[other][loss].as_f64().unwrap();
                assert!(
                    ours <= theirs + 1e-12,
                    "{file}, {loss}: {ours} against {other}'s {theirs}"
                );
            }
        }
    }
}

/// The parameter `a` of Binder's loss and the VI moves the minimiser the way the theory says.
/// Both losses are, up to terms free of the estimate, `G(ĉ) - a A(ĉ)` with
/// `A = Σ_k f(n_k)` (`f(x) = x²` for Binder, `x log₂ x` for the VI), so for `a < a'` the
/// optimality of each minimiser gives `(a' - a) (A(ĉ_a') - A(ĉ_a)) ≥ 0`: a larger `a` never
/// lowers `A`, the estimate's pairs together (Binder) or its negative entropy (VI), and it
/// merges clusters rather than splits them. Checked by enumerating every partition of 7
/// points for five values of `a`, with the search's minimiser equal to the enumerated one.
#[test]
fn a_larger_loss_parameter_joins_more_pairs_by_enumeration() {
    let a_values = [0.25, 0.5, 1.0, 1.5, 1.75];
    let mut strict = [0, 0];
    for (n, m, noise, seed) in [(7, 40, 0.3, 5), (7, 60, 0.5, 6), (6, 30, 0.7, 7)] {
        let raw = draws(n, m, noise, seed);
        let set = DrawSet::new(&raw).unwrap();
        for (which, make) in [
            (
                0,
                (|a| PartitionLoss::Binder { a }) as fn(f64) -> PartitionLoss,
            ),
            (1, |a| PartitionLoss::Vi { a }),
        ] {
            let mut last: Option<(f64, usize)> = None;
            for a in a_values {
                let loss = make(a);
                let mut min = (f64::INFINITY, Vec::new());
                for rgs in SetPartitions::new(n).unwrap() {
                    let labels: Vec<usize> = rgs.labels().iter().map(|&l| l as usize).collect();
                    let e = brute_expected(loss, &labels, &raw);
                    if e < min.0 - 1e-12 {
                        min = (e, labels);
                    }
                }
                let found = search_expected_loss(&set, loss, &SearchSettings::default()).unwrap();
                assert!(
                    (found.expected_loss - min.0).abs() < 1e-12,
                    "{}: the search found {} at {:?}, the minimum is {} at {:?}",
                    loss.name(),
                    found.expected_loss,
                    found.labels,
                    min.0,
                    min.1
                );
                let sizes = |labels: &[usize]| {
                    let mut s = vec![0usize; labels.iter().max().unwrap() + 1];
                    labels.iter().for_each(|&l| s[l] += 1);
                    s
                };
                let f = |x: usize| match which {
                    0 => (x * x) as f64,
                    _ => x as f64 * (x as f64).log2(),
                };
                let a_sum: f64 = sizes(&min.1).into_iter().map(f).sum();
                let k = min.1.iter().max().unwrap() + 1;
                if let Some((before, k_before)) = last {
                    assert!(
                        a_sum >= before - 1e-9,
                        "{} (n = {n}, seed {seed}): A fell from {before} to {a_sum}",
                        loss.name()
                    );
                    assert!(
                        k <= k_before,
                        "{}: K rose from {k_before} to {k}",
                        loss.name()
                    );
                    strict[which] += usize::from(k < k_before);
                }
                last = Some((a_sum, k));
            }
        }
    }
    // The cases are diffuse enough that a changes the estimate for both losses.
    assert!(strict.iter().all(|&s| s > 0), "{strict:?}");
}

/// Points with the same cluster in every draw (an atom) are never parted by some minimiser
/// of the expected VI or Binder's loss, whatever `a`: the loss is concave in how an atom's
/// points divide between two clusters (`nrmm::diagnostics::draw_set`), which is what lets
/// the search place atoms instead of points. Checked by enumerating every partition of 8
/// points on posteriors built to have atoms (points copied from others in every draw): the
/// least loss over all partitions equals the least over those that keep every atom whole,
/// and the search, which places atoms, finds it. One minus the ARI has no such guarantee;
/// how often its restricted minimum is higher is printed.
#[test]
fn minimisers_of_the_vi_and_binders_loss_keep_atoms_whole() {
    let n = 8;
    let parts: Vec<Vec<usize>> = SetPartitions::new(n)
        .unwrap()
        .map(|r| r.labels().iter().map(|&l| l as usize).collect())
        .collect();
    let mut ari_restricted_higher = 0;
    for case in 0..12u64 {
        let mut rng: NrmmRng = SeedPlan::new(77 + case).chain(0);
        // Points 0..5 drawn; points 5, 6, 7 copy one of them in every draw.
        let copies: Vec<usize> = (0..3).map(|_| uniform_index(&mut rng, 5)).collect();
        let noise = [0.1, 0.3, 0.5, 0.7][case as usize % 4];
        let raw: Vec<Vec<usize>> = (0..15 + case as usize * 5)
            .map(|_| {
                let k = 2 + uniform_index(&mut rng, 3);
                let mut labels: Vec<usize> = (0..5)
                    .map(|i| {
                        if uniform_open01(&mut rng) < noise {
                            uniform_index(&mut rng, k)
                        } else {
                            i * k / 5
                        }
                    })
                    .collect();
                let copied: Vec<usize> = copies.iter().map(|&c| labels[c]).collect();
                labels.extend(copied);
                labels
            })
            .collect();
        let set = DrawSet::new(&raw).unwrap();
        assert!(set.atoms() < n, "case {case}: the copies make atoms");
        let whole = |p: &[usize]| {
            (0..n).all(|i| (0..n).all(|j| set.atom_of(i) != set.atom_of(j) || p[i] == p[j]))
        };
        for loss in LOSSES {
            let (mut all, mut kept) = (f64::INFINITY, f64::INFINITY);
            for p in &parts {
                let value = set.expected_loss(loss, p).unwrap();
                all = all.min(value);
                if whole(p) {
                    kept = kept.min(value);
                }
            }
            let found = search_expected_loss(&set, loss, &SearchSettings::default()).unwrap();
            assert!(
                whole(&found.labels),
                "{}: the search parted an atom",
                loss.name()
            );
            if loss == PartitionLoss::OneMinusAri {
                ari_restricted_higher += usize::from(kept > all + 1e-12);
                continue;
            }
            assert!(
                kept <= all + 1e-12 * all.abs().max(1.0),
                "case {case}, {}: {kept} keeping atoms whole, {all} over all partitions",
                loss.name()
            );
            assert!(
                found.expected_loss <= kept + 1e-12,
                "case {case}, {}: the search found {}, the least is {kept}",
                loss.name(),
                found.expected_loss
            );
        }
    }
    println!("1 - ARI: the least loss keeping atoms whole was higher in {ari_restricted_higher} of 12 cases");
}
