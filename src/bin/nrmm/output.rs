//! Where results and failures go: results to standard output, the one-line error report to
//! standard error, and failures to write a file reported as such.

use nrmm::error::one_line;
use nrmm::{Error, Result};
use std::io::{self, Write};

/// Writes what `body` produces to standard output through one buffer, then flushes.
///
/// A closed pipe (the reader stopped early, as `nrmm exact | head -3` does) ends the output
/// quietly and counts as success, as for any Unix filter; any other failure (a full disk) is an
/// error. `println!` would panic in both cases.
pub fn stdout(body: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    match body(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::Usage(format!(
            "cannot write to standard output: {e}"
        ))),
        Ok(()) => Ok(()),
    }
}

/// Prints `error: MESSAGE` as one line on standard error. A failure to write it is ignored:
/// there is nowhere left to report it, and the exit status still tells.
pub fn report_error(message: &str) {
    let _ = writeln!(io::stderr().lock(), "error: {}", one_line(message));
}

/// Prints `message` as one line on standard error, for what is neither a result nor an error
/// (an interruption and how to go on from it).
pub fn report_line(message: &str) {
    let _ = writeln!(io::stderr().lock(), "{}", one_line(message));
}
