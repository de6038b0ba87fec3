//! What a user at a terminal sees of a running launch ([`Progress`], a [`Monitor`]): one
//! progress bar per chain on standard error, drawn only when standard error is a terminal, so
//! that pipes, files and tests see nothing; and the runner's notes on standard error, one line
//! each, in the front end's words. The phases around the sampling (the pilot, the chains'
//! starts, the summary) each show a [`Phase`]: a spinner with the time spent, left as one line
//! with the phase's time when it ends.

use super::spec::Budget;
use super::{ChainMonitor, Monitor, SweepRecord};
use crate::error::{one_line, rename_in_text};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a bar's position and message are refreshed: formatting the message allocates, so
/// it is done at most this often rather than every sweep.
const REFRESH: Duration = Duration::from_millis(100);

/// One phase of a run on a terminal (the pilot, the starts, the summary): a spinner on
/// standard error naming the phase with its elapsed time, replaced when it ends by the line
/// `"<phase>: <seconds> s"`; nothing when standard error is not a terminal. Cost: a
/// background tick every 100 ms while it runs.
pub struct Phase {
    bar: Option<ProgressBar>,
    what: String,
    started: Instant,
}

impl Phase {
    /// Shows that the phase `what` (one line, in the front end's words) has begun.
    pub fn start(what: &str) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let style = ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                .with_style(style)
                .with_message(what.to_string());
            bar.enable_steady_tick(REFRESH);
            bar
        });
        Phase {
            bar,
            what: what.to_string(),
            started: Instant::now(),
        }
    }

    /// Ends the phase, leaving one line with its time on the terminal.
    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            if let Ok(style) = ProgressStyle::with_template("{msg}") {
                bar.set_style(style);
            }
            bar.finish_with_message(format!(
                "{}: {:.1} s",
                self.what,
                self.started.elapsed().as_secs_f64()
            ));
        }
    }
}

/// The bars of one launch, or nothing when standard error is not a terminal.
pub struct Progress {
    multi: Option<MultiProgress>,
    budget: Budget,
    rename: fn(&str) -> Option<String>,
    /// The phase the runner has begun and not yet ended.
    phase: Mutex<Option<Phase>>,
}

impl Progress {
    /// Bars for chains running to `budget`, drawn only if standard error is a terminal; notes
    /// name parameters as `rename` spells them ([`rename_in_text`]).
    pub fn new(budget: Budget, rename: fn(&str) -> Option<String>) -> Self {
        let multi = std::io::stderr()
            .is_terminal()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Progress {
            multi,
            budget,
            rename,
            phase: Mutex::new(None),
        }
    }

    /// The bar of the chain named `label`. Sweep budgets show sweeps done of the total with an
    /// estimate of the time left; time budgets show sampling seconds of the total.
    fn bar(&self, label: &str) -> ChainBar {
        let bar = self.multi.as_ref().map(|multi| {
            let (len, template) = match self.budget {
                Budget::Sweeps(n) => (
                    n,
                    "{prefix}: [{bar:30}] {pos}/{len} sweeps, {eta} left, {msg}",
                ),
                Budget::Seconds(s) => (millis(s), "{prefix}: [{bar:30}] {msg}"),
                Budget::Auto(a) => (
                    a.max,
                    "{prefix}: [{bar:30}] {pos} sweeps (at most {len}, until the chains agree), \
                     {msg}",
                ),
            };
            let style = ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            multi.add(
                ProgressBar::new(len)
                    .with_style(style)
                    .with_prefix(label.to_string()),
            )
        });
        ChainBar {
            bar,
            budget: self.budget,
            next_refresh: Instant::now(),
        }
    }
}

impl Monitor for Progress {
    /// Prints the note as one line on standard error; a failure to write it is ignored, as
    /// there is nowhere left to report it.
    fn note(&self, line: &str) {
        let line = one_line(&rename_in_text(line, &self.rename));
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    fn chain(&self, _chain: u64, label: &str) -> Box<dyn ChainMonitor + '_> {
        Box::new(self.bar(label))
    }

    fn phase(&self, what: &str) {
        let started = Phase::start(&one_line(&rename_in_text(what, &self.rename)));
        if let Some(earlier) = self.lock_phase().replace(started) {
            earlier.finish();
        }
    }

    fn phase_done(&self) {
        if let Some(phase) = self.lock_phase().take() {
            phase.finish();
        }
    }
}

impl Progress {
    /// The current phase; a panic elsewhere while it was held leaves it usable.
    fn lock_phase(&self) -> std::sync::MutexGuard<'_, Option<Phase>> {
        self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Seconds as whole milliseconds, the unit of a time budget's bar.
fn millis(seconds: f64) -> u64 {
    // `as` saturates, which is what a bar of an absurdly long budget needs.
    (seconds * 1000.0).ceil() as u64
}

/// The bar of one chain; cleared from the terminal when dropped, whether the chain finished or
/// failed (its one-line summary or error follows on the terminal).
pub struct ChainBar {
    bar: Option<ProgressBar>,
    budget: Budget,
    next_refresh: Instant,
}

impl ChainMonitor for ChainBar {
    /// Shows the chain after the sweep `record`: at most every [`REFRESH`], and always for the
    /// last sweep. Without a terminal this returns at once; with one, a sweep between
    /// refreshes costs one clock read.
    fn sweep(&mut self, record: &SweepRecord) {
        let Some(bar) = &self.bar else {
            return;
        };
        let now = Instant::now();
        if now < self.next_refresh && !self.budget.reached(record.sweep, record.seconds) {
            return;
        }
        self.next_refresh = now + REFRESH;
        match self.budget {
            Budget::Sweeps(_) | Budget::Auto(_) => {
                bar.set_position(record.sweep);
                bar.set_message(format!(
                    "K = {}, log joint {:.1}",
                    record.n_clusters, record.ln_joint
                ));
            }
            Budget::Seconds(total) => {
                bar.set_position(millis(record.seconds));
                bar.set_message(format!(
                    "{:.1}/{total} s, {} sweeps, K = {}, log joint {:.1}",
                    record.seconds, record.sweep, record.n_clusters, record.ln_joint
                ));
            }
        }
    }
}

impl Drop for ChainBar {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_round_up_and_saturate() {
        assert_eq!(millis(0.0015), 2);
        assert_eq!(millis(2.0), 2000);
        assert_eq!(millis(1e300), u64::MAX);
    }
}
