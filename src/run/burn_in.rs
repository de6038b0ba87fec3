//! The burn-in a summary leaves out when none is given: half of each chain, or the sweep by
//! which every chain has reached the region its chains sample, where the chains agree after
//! it and better than after half.
//!
//! **Why not always half.** Half of each chain is safe from any start, but a chain that
//! starts where the posterior is (the pilot's partition, an SVA fit of well-separated
//! clusters) throws away half of its draws for nothing: on 20,000 points in 8 clusters every
//! chain holds the true partition's log joint from its first sweep, and the automatic budget
//! doubled the chains (555 to 1,110 sweeps) only because half of them were left out.
//!
//! **The hitting time.** The log joints of every chain's second half, pooled, have a median
//! `m`: a level the chains reach where they sample the posterior. A chain's hitting time is
//! its first traced sweep whose log joint is at least `m`; the candidate burn-in is the
//! largest hitting time over the chains (one burn-in for all, so that the chains' draws stay
//! aligned), and it is a candidate only when every chain reaches `m` at all. A chain that
//! sits below the others in another mode never reaches it, and half is kept.
//!
//! **Which one.** The summary diagnoses the chains under both burn-ins and keeps the hitting
//! time only where every quantity agrees under it, and either does not under half or does with
//! a smaller least bulk ESS of the log joint and K (ties keep half). A start far from the
//! posterior makes the early draws spread the chains apart, which lowers their ESS and raises
//! their R-hat, so the hitting time is then not chosen (wine, 178 × 13, the default run's 4,000
//! sweeps from SVA starts: every chain at the median by sweep 293, after which K has a bulk ESS
//! of 75 and an R-hat of 1.038, against 550 and 1.005 after half; `nrmm diagnose DIR --burn-in
//! 292`). Chains that disagree either way keep half: what the report then says of them (where
//! each sits, whether it still climbs, [`super::modes`]) is about their recent sweeps, which a
//! burn-in of a few sweeps would blur with their early climb. Both are rules of the traces
//! alone, so the summary of a run and the automatic budget's verdict on it agree
//! ([`super::summary::round_verdict`]).

/// One chain's traced sweeps and log joints (kept rows, in order) and its length.
#[derive(Clone, Copy, Debug)]
pub(super) struct Trace<'a> {
    /// The sweep of each kept row.
    pub sweeps: &'a [f64],
    /// The log joint of each kept row.
    pub log_joint: &'a [f64],
    /// Sweeps the chain ran.
    pub length: u64,
}

impl Trace<'_> {
    /// Half of the chain: the burn-in when none is given and the hitting time is not better.
    pub fn half(&self) -> u64 {
        self.length / 2
    }

    /// The kept log joints after a burn-in of half the chain.
    fn second_half(&self) -> &[f64] {
        let first = self.sweeps.partition_point(|&s| s <= self.half() as f64);
        &self.log_joint[first.min(self.log_joint.len())..]
    }
}

/// The hitting-time burn-in of each chain (see the module): `min(H, half)` per chain for the
/// largest hitting time `H` over the chains, or `None` where some chain never reaches the
/// pooled second halves' median, no chain has rows, or `H` is at least every chain's half
/// (nothing to gain). Cost: O(R log R) for R kept rows over all chains.
pub(super) fn hitting(chains: &[Trace]) -> Option<Vec<u64>> {
    let mut pooled: Vec<f64> = chains
        .iter()
        .flat_map(|c| c.second_half().iter().copied())
        .filter(|v| v.is_finite())
        .collect();
    if pooled.is_empty() {
        return None;
    }
    let middle = pooled.len() / 2;
    let (_, &mut median, _) = pooled.select_nth_unstable_by(middle, f64::total_cmp);
    let mut latest = 0;
    for c in chains {
        let row = c.log_joint.iter().position(|&v| v >= median)?;
        // A burn-in of `b` keeps the rows after sweep `b`: keep the hitting row itself.
        latest = latest.max((c.sweeps[row] as u64).saturating_sub(1));
    }
    if chains.iter().all(|c| latest >= c.half()) {
        return None;
    }
    Some(chains.iter().map(|c| latest.min(c.half())).collect())
}

/// How well the chains agree under a burn-in: whether every quantity agrees, and the least
/// bulk ESS of the log joint and K (a constant series, whose ESS is undefined, counts as
/// agreeing without limit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Agreement {
    /// Every quantity agrees.
    pub all_agree: bool,
    /// The least bulk ESS of the log joint and K.
    pub least_ess: f64,
}

/// Whether the hitting time is kept: every quantity agrees under it, and under half either
/// not or with a smaller least ESS (ties keep half).
pub(super) fn prefer_hitting(half: Agreement, hitting: Agreement) -> bool {
    hitting.all_agree && (!half.all_agree || hitting.least_ess > half.least_ess)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace<'a>(sweeps: &'a [f64], log_joint: &'a [f64]) -> Trace<'a> {
        Trace {
            sweeps,
            log_joint,
            length: sweeps.len() as u64,
        }
    }

    #[test]
    fn the_hitting_time_is_the_latest_chains_first_sweep_at_the_median() {
        let sweeps: Vec<f64> = (1..=10).map(f64::from).collect();
        // Second halves (sweeps 6-10): 5 × -1 and 5 × -2, median -1 (upper middle).
        let a = [-9.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0];
        let b = [-9.0, -9.0, -9.0, -2.0, -1.0, -2.0, -2.0, -2.0, -2.0, -2.0];
        let chains = [trace(&sweeps, &a), trace(&sweeps, &b)];
        // Chain a reaches -1 at sweep 2, chain b at sweep 5: keep from sweep 5, burn-in 4.
        assert_eq!(hitting(&chains), Some(vec![4, 4]));
    }

    #[test]
    fn a_chain_that_never_reaches_the_median_keeps_half() {
        let sweeps: Vec<f64> = (1..=8).map(f64::from).collect();
        let high = [-1.0; 8];
        let low = [-5.0; 8];
        let more_high = [-1.0; 8];
        let chains = [
            trace(&sweeps, &high),
            trace(&sweeps, &more_high),
            trace(&sweeps, &low),
        ];
        assert_eq!(hitting(&chains), None);
    }

    #[test]
    fn a_late_hitting_time_is_no_candidate_and_an_early_one_is_capped_per_chain() {
        let sweeps: Vec<f64> = (1..=4).map(f64::from).collect();
        let late = [-9.0, -9.0, -9.0, -1.0];
        assert_eq!(hitting(&[trace(&sweeps, &late)]), None);
        // Thinned rows (every second sweep) of a longer and a shorter chain: the longer
        // chain hits at sweep 6, so burn-in 5, which the shorter chain's half (4) caps.
        let long_sweeps = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0];
        let long_lj = [-9.0, -9.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0];
        let short_sweeps = [2.0, 4.0, 6.0, 8.0];
        let short_lj = [-1.0; 4];
        let chains = [
            Trace {
                sweeps: &long_sweeps,
                log_joint: &long_lj,
                length: 20,
            },
            Trace {
                sweeps: &short_sweeps,
                log_joint: &short_lj,
                length: 8,
            },
        ];
        assert_eq!(hitting(&chains), Some(vec![5, 4]));
    }

    #[test]
    fn the_hitting_time_is_kept_only_where_the_chains_agree_under_it() {
        let agree = |e| Agreement {
            all_agree: true,
            least_ess: e,
        };
        let disagree = |e| Agreement {
            all_agree: false,
            least_ess: e,
        };
        assert!(prefer_hitting(disagree(900.0), agree(401.0)));
        assert!(!prefer_hitting(agree(401.0), disagree(900.0)));
        assert!(prefer_hitting(agree(401.0), agree(600.0)));
        assert!(!prefer_hitting(agree(600.0), agree(600.0)));
        assert!(!prefer_hitting(agree(600.0), agree(f64::NAN)));
        // Chains that disagree either way keep half, whatever the ESS.
        assert!(!prefer_hitting(disagree(100.0), disagree(200.0)));
        assert!(prefer_hitting(disagree(900.0), agree(f64::INFINITY)));
    }
}
