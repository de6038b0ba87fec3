//! A clock of this thread's CPU time, shared by the sampler benchmarks and the speed example:
//! the reference figures are CPU seconds, and CPU time is robust to other processes sharing
//! the machine.

use std::time::{Duration, Instant};

/// This thread's CPU time where the system reports it, else wall time. The reference figures
/// are CPU seconds, and CPU time is robust to other processes sharing the machine.
pub enum CpuClock {
    /// Thread CPU time at the start, in nanoseconds.
    Thread(u64),
    /// Wall time at the start, where thread CPU time is not available.
    Wall(Instant),
}

impl CpuClock {
    /// Starts the clock.
    pub fn start() -> Self {
        match thread_cpu_ns() {
            Some(ns) => CpuClock::Thread(ns),
            None => CpuClock::Wall(Instant::now()),
        }
    }

    /// Time used since [`CpuClock::start`].
    pub fn elapsed(&self) -> Duration {
        match self {
            CpuClock::Thread(t0) => {
                Duration::from_nanos(thread_cpu_ns().map_or(0, |t| t.saturating_sub(*t0)))
            }
            CpuClock::Wall(t0) => t0.elapsed(),
        }
    }
}

/// Nanoseconds of CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`), where the
/// platform provides it.
#[cfg(target_os = "linux")]
fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` and the clock id is a platform constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Thread CPU time is not read on this platform: callers fall back to wall time.
#[cfg(not(target_os = "linux"))]
fn thread_cpu_ns() -> Option<u64> {
    None
}
