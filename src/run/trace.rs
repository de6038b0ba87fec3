//! The CSV trace of a chain: one row per (thinned) sweep.

use super::{Observer, SweepRecord};
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;
use crate::sampler::State;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `sweep,seconds,n_clusters,log_joint`, then per move `<name>_proposed`,
/// `<name>_accepted`, `<name>_mean_ln_accept`, then one column per hyperparameter; every
/// `thin`-th sweep. The header is written with the first row.
pub struct TraceWriter {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    thin: u64,
    header_done: bool,
}

impl TraceWriter {
    /// Creates (truncates) the trace file.
    pub fn create(path: &Path, thin: u64) -> Result<Self> {
        let file = std::fs::File::create(path).map_err(|source| Error::Write {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(TraceWriter {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
            thin: thin.max(1),
            header_done: false,
        })
    }

    /// Flushes buffered rows to disk.
    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|source| Error::Write {
            path: self.path.clone(),
            source,
        })
    }

    fn write_record(&mut self, r: &SweepRecord) -> std::io::Result<()> {
        if !self.header_done {
            write!(self.out, "sweep,seconds,n_clusters,log_joint")?;
            for (name, _) in &r.moves {
                write!(
                    self.out,
                    ",{name}_proposed,{name}_accepted,{name}_mean_ln_accept"
                )?;
            }
            for (name, _) in &r.hyper {
                write!(self.out, ",{name}")?;
            }
            writeln!(self.out)?;
            self.header_done = true;
        }
        write!(
            self.out,
            "{},{:.6},{},{:.6}",
            r.sweep, r.seconds, r.n_clusters, r.ln_joint
        )?;
        for (_, info) in &r.moves {
            let mean = if info.proposed > 0 {
                info.ln_accept_sum / info.proposed as f64
            } else {
                0.0
            };
            write!(self.out, ",{},{},{:.6}", info.proposed, info.accepted, mean)?;
        }
        for (_, v) in &r.hyper {
            write!(self.out, ",{v:.10}")?;
        }
        writeln!(self.out)
    }
}

impl<K: ConjugateKernel, P: NrmPrior> Observer<K, P> for TraceWriter {
    fn observe(&mut self, record: &SweepRecord, _state: &State<K, P>) -> Result<()> {
        if !record.sweep.is_multiple_of(self.thin) {
            return Ok(());
        }
        self.write_record(record).map_err(|source| Error::Write {
            path: self.path.clone(),
            source,
        })
    }
}
