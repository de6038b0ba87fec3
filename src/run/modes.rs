//! Where chains that disagree sit, and the command that would settle it.
//!
//! When R-hat says the chains have not mixed, a sweep count to try is little help if they sit
//! in separate modes that none of them leaves. [`mode_advice`] names each chain's place after
//! the burn-in (its most frequent K, its range, the mean and spread of its log joint) and
//! tells the two cases apart by the gap between the chains' mean log joints:
//!
//! * **A chain far below the best** (by more than [`FAR_NATS`] nats, and by [`FAR_SPREADS`]
//!   of the two chains' spreads or with no number of clusters in common with the best
//!   chain's over the whole of both series, so that the gap is between modes, not noise
//!   within one: at 10⁶ points a chain that kept a seventh cluster of 61 points sat 119
//!   nats below the others with a spread of 236, its K 7-8 against their 6): one of its
//!   states is about `e^-gap` as probable as one of the best chain's, so with a gap of tens of nats its mode holds a negligible share of the
//!   posterior unless it is vastly wider. It is most likely stuck. The check takes one run:
//!   every chain started from the best chain's last state (`--init labels:FILE`); if they
//!   stay at its log joint, the lower chains were stuck, and that run's estimate stands.
//! * **No chain far below**: the chains share one region, or modes of similar height, and
//!   mix slowly; they will agree given time, the R-hat warnings' sweep counts say how long.
//!
//! Cost: O(chains × draws).

use std::fmt::Write as _;

/// One chain's place after the burn-in.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainPlace {
    /// The chain's index.
    pub chain: u64,
    /// Its most frequent number of clusters (the smallest of ties).
    pub k_mode: usize,
    /// Its fewest and most clusters.
    pub k_range: (usize, usize),
    /// The mean of its log joint.
    pub mean: f64,
    /// The standard deviation of its log joint.
    pub sd: f64,
    /// The file of its last state (labels), for a run to start from.
    pub last_state: String,
    /// Whether its log joint still rises: the mean of the second half of the series above
    /// the first half's by more than [`FAR_NATS`].
    pub rising: bool,
}

impl ChainPlace {
    /// The place of chain `chain`, whose last state is in the file `last_state`, from its
    /// post-burn-in `k` and `log_joint` series; none when they are empty or hold a
    /// non-finite value.
    pub fn of(chain: u64, last_state: String, k: &[f64], log_joint: &[f64]) -> Option<Self> {
        if k.is_empty() || log_joint.is_empty() || !log_joint.iter().all(|v| v.is_finite()) {
            return None;
        }
        let mut counts = std::collections::BTreeMap::new();
        for &v in k {
            *counts.entry(v as usize).or_insert(0usize) += 1;
        }
        let most = *counts.values().max()?;
        let k_mode = *counts.iter().find(|(_, &c)| c == most)?.0;
        let k_range = (*counts.keys().next()?, *counts.keys().next_back()?);
        let n = log_joint.len() as f64;
        let mean = log_joint.iter().sum::<f64>() / n;
        let half = log_joint.len() / 2;
        let mean_of = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let rising =
            half > 0 && mean_of(&log_joint[half..]) - mean_of(&log_joint[..half]) > FAR_NATS;
        let sd = (log_joint.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        Some(ChainPlace {
            chain,
            k_mode,
            k_range,
            mean,
            sd,
            last_state,
            rising,
        })
    }

    /// Whether none of this chain's numbers of clusters lies in `other`'s range.
    fn k_apart(&self, other: &ChainPlace) -> bool {
        self.k_range.1 < other.k_range.0 || self.k_range.0 > other.k_range.1
    }
}

/// The chains best first: highest mean log joint, ties by index. Cost O(c log c).
fn by_height(places: &[ChainPlace]) -> Vec<&ChainPlace> {
    let mut order: Vec<&ChainPlace> = places.iter().collect();
    order.sort_by(|a, b| b.mean.total_cmp(&a.mean).then(a.chain.cmp(&b.chain)));
    order
}

/// Nats below the best chain's mean log joint beyond which a chain is called far below it.
pub const FAR_NATS: f64 = 10.0;

/// Spreads (the larger of two chains' log joint standard deviations) beyond which a gap is
/// called a gap between modes rather than noise within one.
pub const FAR_SPREADS: f64 = 4.0;

/// Whether `other` sits far below `best` (see the module documentation): by more than
/// [`FAR_NATS`], and by more than [`FAR_SPREADS`] times the larger spread of the two or in a
/// range of K disjoint from `best`'s.
fn far(best: &ChainPlace, other: &ChainPlace) -> bool {
    let gap = best.mean - other.mean;
    gap > FAR_NATS && (other.k_apart(best) || gap > FAR_SPREADS * best.sd.max(other.sd))
}

/// The chains that more sweeps are unlikely to bring to the best chain (the one of highest
/// mean log joint): those far below it ([`FAR_NATS`]) whose K never met the best chain's
/// and whose log joint no longer rises. Such a chain holds clusters that the best chain
/// never visits and has stopped climbing; its mode is separated from the best one by a
/// barrier its moves do not cross (at 10⁶ points, a seventh cluster of 61 points that a
/// chain split off at sweep 31 and kept to sweep 250), and the run's automatic budget stops
/// lengthening the chains for it (see [`super::AutoBudget`]). Cost O(chains log chains).
pub fn stuck_apart(places: &[ChainPlace]) -> Vec<u64> {
    below_best(places, |best, p| {
        far(best, p) && p.k_apart(best) && !p.rising
    })
}

/// The chains far below the best one (the one of highest mean log joint; see the module
/// documentation), best first: those the advice calls stuck. Cost O(chains log chains).
pub fn far_below_best(places: &[ChainPlace]) -> Vec<u64> {
    below_best(places, far)
}

/// The chains after the best one, best first, for which `keep(best, chain)` holds.
fn below_best(places: &[ChainPlace], keep: impl Fn(&ChainPlace, &ChainPlace) -> bool) -> Vec<u64> {
    match by_height(places).split_first() {
        Some((best, rest)) => rest
            .iter()
            .filter(|p| keep(best, p))
            .map(|p| p.chain)
            .collect(),
        None => Vec::new(),
    }
}

/// The advice for chains that disagree (see the module documentation): each chain's place,
/// the best first, and what to do; `command` is the run's command line (empty where there is
/// none, as in a library call: the advice then names the parameters) and `longer` the
/// sweeps per chain that would make them agree with the seconds a chain would take. None
/// with fewer than two places. Cost O(chains).
pub fn mode_advice(
    places: &[ChainPlace],
    command: &[String],
    longer: Option<(u64, f64)>,
) -> Option<String> {
    if places.len() < 2 {
        return None;
    }
    let order = by_height(places);
    let best = order[0];
    let mut text = String::from("where the chains sit after the burn-in:");
    for p in &order {
        let k = if p.k_range.0 == p.k_range.1 {
            format!("K = {}", p.k_mode)
        } else {
            format!("K = {} ({}-{})", p.k_mode, p.k_range.0, p.k_range.1)
        };
        let _ = write!(
            text,
            " chain {}: {k}, log joint {:.1} ± {:.1}",
            p.chain, p.mean, p.sd
        );
        if p.chain != best.chain {
            let _ = write!(text, " ({:.1} below)", best.mean - p.mean);
        }
        text.push(';');
    }
    text.pop();
    let stuck: Vec<String> = far_below_best(places).iter().map(u64::to_string).collect();
    if stuck.is_empty() {
        text.push_str(
            ". No chain sits far below the best: they share one region or modes of similar \
             height and mix slowly there, and will agree given more sweeps",
        );
        if let Some((sweeps, seconds)) = longer {
            let run = if command.is_empty() {
                format!("`sweeps` {sweeps}")
            } else {
                format!(
                    "`{}`",
                    with_args(command, "--sweeps", &sweeps.to_string(), "-longer")
                )
            };
            let _ = write!(
                text,
                ": {run} (about {} per chain at this run's speed)",
                duration(seconds)
            );
        }
        return Some(text);
    }
    let gap = order[1..]
        .iter()
        .filter(|p| far(best, p))
        .map(|p| best.mean - p.mean)
        .fold(f64::INFINITY, f64::min);
    let _ = write!(
        text,
        ". Chain{} {} sit{} at least {gap:.0} nats below chain {}: each of {} states is about \
         e^-{gap:.0} as probable as one of chain {}'s, so unless {} mode is far wider it holds \
         a negligible share of the posterior and the chain is stuck there. To check in one \
         run, start every chain from chain {}'s last state: {}; if they stay at its log \
         joint, the lower chains were stuck and that run's estimate stands",
        if stuck.len() > 1 { "s" } else { "" },
        stuck.join(", "),
        if stuck.len() > 1 { "" } else { "s" },
        best.chain,
        if stuck.len() > 1 { "their" } else { "its" },
        best.chain,
        if stuck.len() > 1 { "their" } else { "its" },
        best.chain,
        if command.is_empty() {
            format!("`init` labels:{}", best.last_state)
        } else {
            format!("`{}`", with_start(command, &best.last_state))
        },
    );
    Some(text)
}

/// `command` with `--init labels:PATH` in place of any `--init` it has and `-best` after
/// its `--out` directory (so the run's own files are not overwritten), quoted for a shell
/// where needed.
pub fn with_start(command: &[String], path: &str) -> String {
    with_args(command, "--init", &format!("labels:{path}"), "-best")
}

/// `command` with `flag value` in place of any value `flag` has (added when it has none) and
/// `suffix` after its `--out` directory, quoted for a shell where needed.
pub fn with_args(command: &[String], flag: &str, value: &str, suffix: &str) -> String {
    let mut out: Vec<String> = Vec::with_capacity(command.len() + 2);
    let mut args = command.iter();
    let mut set = false;
    let eq = format!("{flag}=");
    while let Some(a) = args.next() {
        if a == flag {
            args.next();
            out.extend([flag.to_string(), value.to_string()]);
            set = true;
        } else if a.starts_with(&eq) {
            out.push(format!("{eq}{value}"));
            set = true;
        } else if a == "--out" {
            out.push("--out".into());
            out.push(format!(
                "{}{suffix}",
                args.next().map_or("run", |s| s.as_str())
            ));
        } else if a.starts_with("--out=") {
            out.push(format!("{a}{suffix}"));
        } else {
            out.push(a.clone());
        }
    }
    if !set {
        out.extend([flag.to_string(), value.to_string()]);
    }
    out.iter().map(|a| quoted(a)).collect::<Vec<_>>().join(" ")
}

/// `seconds` in words: seconds below two minutes, minutes below two hours, else hours.
fn duration(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{:.0} s", seconds.max(1.0))
    } else if seconds < 7200.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

/// `arg` as a shell reads it: unchanged when it holds only safe characters, else in single
/// quotes.
fn quoted(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c);
    if !arg.is_empty() && arg.chars().all(safe) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(chain: u64, k: &[f64], lj: &[f64]) -> ChainPlace {
        ChainPlace::of(chain, format!("r/chain-{chain}/labels.txt"), k, lj).unwrap()
    }

    #[test]
    fn places_read_the_mode_range_mean_and_spread() {
        let p = place(3, &[8.0, 9.0, 8.0, 10.0], &[-10.0, -12.0, -10.0, -12.0]);
        assert_eq!((p.k_mode, p.k_range), (8, (8, 10)));
        assert_eq!((p.mean, p.sd), (-11.0, 1.0));
        assert!(ChainPlace::of(0, String::new(), &[], &[]).is_none());
        assert!(ChainPlace::of(0, String::new(), &[1.0], &[f64::NAN]).is_none());
    }

    /// Chains far below the best are named stuck, with the command that starts every chain
    /// from the best chain's state; chains within noise of each other are told to run longer.
    #[test]
    fn stuck_chains_get_a_command_and_near_ones_more_sweeps() {
        let command: Vec<String> = ["nrmm", "run", "--data", "my data.csv", "--init", "sva"]
            .iter()
            .chain(&["--out", "r", "--seed", "1"])
            .map(|s| s.to_string())
            .collect();
        let places = [
            place(0, &[9.0; 4], &[-1100.0, -1101.0, -1099.0, -1100.0]),
            place(1, &[7.0; 4], &[-1000.0, -1001.0, -999.0, -1000.0]),
            place(
                2,
                &[7.0, 8.0, 7.0, 7.0],
                &[-1003.0, -1001.0, -1002.0, -1002.0],
            ),
        ];
        let text = mode_advice(&places, &command, Some((4000, 300.0))).unwrap();
        assert!(
            text.contains("chain 1: K = 7, log joint -1000.0 ± 0.7;"),
            "{text}"
        );
        assert!(text.contains("chain 2: K = 7 (7-8)"), "{text}");
        assert!(
            text.contains("Chain 0 sits at least 100 nats below chain 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "`nrmm run --data 'my data.csv' --init labels:r/chain-1/labels.txt --out r-best \
                 --seed 1`"
            ),
            "{text}"
        );
        let near = mode_advice(&places[1..], &command, Some((4000, 300.0))).unwrap();
        assert!(near.contains("No chain sits far below"), "{near}");
        assert!(
            near.contains(
                "`nrmm run --data 'my data.csv' --init sva --out r-longer --seed 1 --sweeps 4000` \
                 (about 5 min per chain at this run's speed)"
            ),
            "{near}"
        );
        assert!(mode_advice(&places[..1], &command, None).is_none());
        // Without a command line (a library call) the advice names the parameters.
        let text = mode_advice(&places, &[], Some((4000, 300.0))).unwrap();
        assert!(
            text.contains("last state: `init` labels:r/chain-1/labels.txt;"),
            "{text}"
        );
        let near = mode_advice(&places[1..], &[], Some((4000, 300.0))).unwrap();
        assert!(
            near.contains("more sweeps: `sweeps` 4000 (about 5 min"),
            "{near}"
        );
    }

    /// A chain whose K never meets the best chain's is far below it by a gap within its
    /// spread, and stuck apart unless its log joint still rises; one whose K meets it is
    /// neither.
    #[test]
    fn a_chain_in_other_clusters_is_stuck_within_its_spread() {
        let best = place(1, &[6.0; 4], &[-1000.0, -1200.0, -800.0, -1000.0]);
        let apart = place(
            2,
            &[7.0, 8.0, 7.0, 7.0],
            &[-1100.0, -900.0, -1300.0, -1100.0],
        );
        assert!(!apart.rising);
        let text = mode_advice(&[best.clone(), apart.clone()], &[], None).unwrap();
        assert!(
            text.contains("Chain 2 sits at least 100 nats below chain 1"),
            "{text}"
        );
        assert_eq!(stuck_apart(&[apart, best.clone()]), vec![2]);
        let climbing = place(
            2,
            &[7.0, 8.0, 7.0, 7.0],
            &[-1300.0, -1300.0, -1000.0, -1000.0],
        );
        assert!(climbing.rising);
        assert!(stuck_apart(&[best.clone(), climbing]).is_empty());
        let meets = place(
            2,
            &[6.0, 7.0, 7.0, 7.0],
            &[-1100.0, -900.0, -1300.0, -1100.0],
        );
        assert!(stuck_apart(&[best.clone(), meets.clone()]).is_empty());
        let text = mode_advice(&[best, meets], &[], None).unwrap();
        assert!(text.contains("No chain sits far below"), "{text}");
    }

    #[test]
    fn a_command_without_init_gets_one() {
        let command: Vec<String> = ["nrmm", "run", "--data=x.txt", "--out=o"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            with_start(&command, "o/chain-2/labels.txt"),
            "nrmm run --data=x.txt --out=o-best --init labels:o/chain-2/labels.txt"
        );
    }
}
