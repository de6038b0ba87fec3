//! Shared helper of the `kernel_*` integration tests: random update sequences run on three
//! statistics of any conjugate kernel.

use nrmm::kernel::ConjugateKernel;
use proptest::prelude::*;

/// Three statistics and the points each holds.
pub type Statistics<S> = (Vec<S>, Vec<Vec<usize>>);

/// Runs `ops` on three statistics over the kernel's `n` points and returns them with their
/// member lists. Each op `(op, x, y)` acts on statistic `x % 3`: 0 adds a free point, 1 adds
/// it through the probe its predictive leaves (the tree engine's add; the probed predictive
/// must equal the plain one to the bit), 2 removes a member, 3 merges another statistic into
/// it and empties the source.
pub fn run_update_ops<K: ConjugateKernel>(
    k: &K,
    ops: &[(u8, usize, usize)],
) -> Result<Statistics<K::Stat>, TestCaseError> {
    let n = k.n_points();
    let mut stats = vec![k.empty_stat(), k.empty_stat(), k.empty_stat()];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); 3];
    for &(op, x, y) in ops {
        let c = x % 3;
        match op {
            0 | 1 => {
                let free: Vec<usize> = (0..n)
                    .filter(|i| !members.iter().any(|m| m.contains(i)))
                    .collect();
                if !free.is_empty() {
                    let i = free[y % free.len()];
                    if op == 0 {
                        k.add(&mut stats[c], i);
                    } else {
                        let (lp, probe) = k.ln_predictive_probed(i, &stats[c]);
                        prop_assert_eq!(lp.to_bits(), k.ln_predictive(i, &stats[c]).to_bits());
                        k.add_probed(&mut stats[c], i, &probe);
                    }
                    members[c].push(i);
                }
            }
            2 => {
                if !members[c].is_empty() {
                    let at = y % members[c].len();
                    let i = members[c].swap_remove(at);
                    k.remove(&mut stats[c], i);
                }
            }
            _ => {
                let other = (c + 1 + y % 2) % 3;
                let src = std::mem::replace(&mut stats[other], k.empty_stat());
                k.merge(&mut stats[c], &src);
                let moved = std::mem::take(&mut members[other]);
                members[c].extend(moved);
            }
        }
    }
    Ok((stats, members))
}
