//! Ctrl-C: the first press asks every chain to stop at its next sweep (traces flushed, the last
//! checkpoint left intact); a second press ends the process at once.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the first Ctrl-C; the runner stops every chain at its next sweep when it is.
pub static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Exit status after an interruption (128 + SIGINT, the shell's convention).
pub const INTERRUPTED_STATUS: u8 = 130;

/// Installs the handler. If it cannot be installed (another handler owns the signal), Ctrl-C
/// keeps its default effect of ending the process, which leaves the last checkpoint intact
/// too, since checkpoints are replaced atomically; so the run goes on without it.
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::SeqCst) {
            std::process::exit(i32::from(INTERRUPTED_STATUS));
        }
    });
}

/// The flag the first Ctrl-C sets (in the MPI build also SIGTERM, by which mpirun passes a
/// Ctrl-C on to its ranks), for loops that poll it.
pub fn flag() -> &'static AtomicBool {
    &REQUESTED
}
