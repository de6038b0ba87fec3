//! The CSV trace of a chain: one row per (thinned) sweep, written as the chain runs and read
//! back, in bounded memory, by the diagnostics.

use super::{Observer, SweepRecord};
use crate::diagnostics::Thinned;
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;
use crate::sampler::State;
use std::io::{BufRead, Seek, Write};
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

    /// Reopens the trace of a chain resumed after sweep `sweep`: rows of later sweeps (written
    /// after the checkpoint, or cut short by a crash) are removed and new rows are appended.
    ///
    /// Errors if the file is missing, or if it lacks the row of the last multiple of `thin` up
    /// to `sweep`: then it was not written by the chain the checkpoint belongs to. Cost: one
    /// pass over the file.
    pub fn resume(path: &Path, thin: u64, sweep: u64) -> Result<Self> {
        let thin = thin.max(1);
        let (keep, last, header_done) = kept_prefix(path, sweep)?;
        let expected = sweep / thin * thin;
        if last != expected {
            return Err(Error::Usage(format!(
                "{} ends at sweep {last}, but its chain was checkpointed at sweep {sweep} (expected a row for sweep {expected}): the trace does not belong to the checkpoint",
                path.display()
            )));
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| {
                f.set_len(keep)?;
                f.seek(std::io::SeekFrom::End(0))?;
                Ok(f)
            })
            .map_err(|source| Error::Write {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(TraceWriter {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
            thin,
            header_done,
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
            for (name, _) in r.hyper.columns() {
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
        for (_, v) in r.hyper.columns() {
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

/// The length in bytes of the part of a trace to keep when resuming after sweep `sweep`, the
/// last sweep in it, and whether it has a header: the header and the complete rows up to the
/// first row of a later sweep (or the first incomplete line).
fn kept_prefix(path: &Path, sweep: u64) -> Result<(u64, u64, bool)> {
    let file = std::fs::File::open(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = String::new();
    let mut keep = 0u64;
    let mut last = 0u64;
    let mut header_done = false;
    let mut number = 0;
    loop {
        line.clear();
        let read = reader.read_line(&mut line).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        number += 1;
        if read == 0 || !line.ends_with('\n') {
            break;
        }
        if !header_done {
            if !line.starts_with("sweep,") {
                return Err(Error::parse(
                    path,
                    number,
                    "not a trace: no `sweep,...` header",
                ));
            }
            header_done = true;
        } else {
            let first = line.split(',').next().unwrap_or("");
            let row_sweep: u64 = first.trim().parse().map_err(|_| {
                Error::parse(path, number, format!("sweep `{first}` is not a count"))
            })?;
            if row_sweep > sweep {
                break;
            }
            last = row_sweep;
        }
        keep += read as u64;
    }
    Ok((keep, last, header_done))
}

/// A trace read back in bounded memory: its column names and, for every column, an evenly
/// spaced subset of its rows ([`Thinned`], the same rows for every column), plus the exact
/// last row and the exact maximum of every column.
#[derive(Clone, Debug)]
pub struct TraceColumns {
    header: Vec<String>,
    columns: Vec<Thinned>,
    last: Vec<f64>,
    max: Vec<f64>,
}

impl TraceColumns {
    /// Reads the trace at `path`, keeping at most `capacity` rows per column. An empty file is
    /// a trace without columns or rows. Errors name the file and line of a malformed row.
    /// Cost: one pass, O(rows · columns).
    pub fn read(path: &Path, capacity: usize) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader = std::io::BufReader::new(file);
        let mut line = String::new();
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        if reader.read_line(&mut line).map_err(io)? == 0 {
            // The header is written with the first row: a chain that has traced no sweep yet.
            return Ok(TraceColumns {
                header: Vec::new(),
                columns: Vec::new(),
                last: Vec::new(),
                max: Vec::new(),
            });
        }
        let header: Vec<String> = line.trim_end().split(',').map(str::to_string).collect();
        if header.first().map(String::as_str) != Some("sweep") {
            return Err(Error::parse(path, 1, "not a trace: no `sweep,...` header"));
        }
        let width = header.len();
        let mut columns = vec![Thinned::new(capacity); width];
        let mut last = vec![f64::NAN; width];
        let mut max = vec![f64::NEG_INFINITY; width];
        let mut number = 1;
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(io)? == 0 {
                break;
            }
            number += 1;
            let row = line.trim_end();
            if row.is_empty() {
                continue;
            }
            let mut count = 0;
            for (j, field) in row.split(',').enumerate() {
                if j >= width {
                    count = j + 1;
                    break;
                }
                last[j] = field.trim().parse().map_err(|_| {
                    Error::parse(
                        path,
                        number,
                        format!("`{field}` in column {} is not a number", header[j]),
                    )
                })?;
                count = j + 1;
            }
            if count != width {
                return Err(Error::parse(
                    path,
                    number,
                    format!("a row of {count} values under a header of {width} columns"),
                ));
            }
            for ((c, m), &v) in columns.iter_mut().zip(&mut max).zip(&last) {
                c.push(v);
                if v > *m {
                    *m = v;
                }
            }
        }
        Ok(TraceColumns {
            header,
            columns,
            last,
            max,
        })
    }

    /// Column names, in file order.
    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// Rows in the file.
    pub fn rows(&self) -> u64 {
        self.columns.first().map_or(0, Thinned::seen)
    }

    /// Distance in rows between consecutive kept rows.
    pub fn stride(&self) -> u64 {
        self.columns.first().map_or(1, Thinned::stride)
    }

    /// The kept values of column `name`, if the trace has it.
    pub fn column(&self, name: &str) -> Option<&[f64]> {
        let j = self.header.iter().position(|h| h == name)?;
        Some(self.columns[j].values())
    }

    /// The value of column `name` in the last row (NaN without rows).
    pub fn last(&self, name: &str) -> Option<f64> {
        let j = self.header.iter().position(|h| h == name)?;
        Some(self.last[j])
    }

    /// The largest value of column `name` over every row (not only the kept ones).
    pub fn max(&self, name: &str) -> Option<f64> {
        let j = self.header.iter().position(|h| h == name)?;
        Some(self.max[j])
    }

    /// Index of the first kept row whose sweep is after `sweep` (the kept rows from there on
    /// are the draws after a burn-in of `sweep` sweeps).
    pub fn first_after(&self, sweep: u64) -> usize {
        self.columns
            .first()
            .map_or(0, |c| c.values().partition_point(|&s| s <= sweep as f64))
    }
}

/// The sampling seconds of the first row of the trace at `path` whose log joint reaches
/// `target`, or `None` if no row does. Cost: one pass over the file.
pub fn first_reaching(path: &Path, target: f64) -> Result<Option<f64>> {
    let file = std::fs::File::open(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut lines = std::io::BufReader::new(file).lines();
    let header = match lines.next() {
        Some(h) => h.map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?,
        None => return Ok(None),
    };
    let find = |name: &str| {
        header
            .split(',')
            .position(|h| h == name)
            .ok_or_else(|| Error::parse(path, 1, format!("the trace has no `{name}` column")))
    };
    let (js, jl) = (find("seconds")?, find("log_joint")?);
    for (k, line) in lines.enumerate() {
        let line = line.map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let fields: Vec<&str> = line.split(',').collect();
        let value = |j: usize| -> Result<f64> {
            fields
                .get(j)
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| Error::parse(path, k + 2, "a malformed row"))
        };
        if value(jl)? >= target {
            return Ok(Some(value(js)?));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::StepInfo;

    fn record(sweep: u64) -> SweepRecord {
        SweepRecord {
            sweep,
            seconds: sweep as f64 * 0.5,
            n_clusters: (sweep % 3) as usize + 1,
            ln_joint: -100.0 + sweep as f64,
            moves: vec![(
                "sams",
                StepInfo {
                    proposed: 1,
                    accepted: (sweep % 2) as usize,
                    ln_accept_sum: -0.5,
                },
            )],
            hyper: super::super::HyperState {
                prior: crate::prior::PriorHyper::Dp {
                    alpha: 1.0 + sweep as f64,
                },
                kernel: None,
            },
        }
    }

    fn write(w: &mut TraceWriter, sweeps: std::ops::RangeInclusive<u64>) {
        for s in sweeps {
            if s % w.thin == 0 {
                w.write_record(&record(s)).unwrap();
            }
        }
        w.flush().unwrap();
    }

    #[test]
    fn resume_cuts_later_rows_and_appends() {
        let dir = std::env::temp_dir().join(format!("nrmm-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.csv"), dir.join("b.csv"));
        let mut straight = TraceWriter::create(&a, 2).unwrap();
        write(&mut straight, 1..=20);
        let mut broken = TraceWriter::create(&b, 2).unwrap();
        write(&mut broken, 1..=13);
        // A crash in the middle of a row.
        let mut f = std::fs::OpenOptions::new().append(true).open(&b).unwrap();
        f.write_all(b"14,7.0,3,-8").unwrap();
        drop(f);
        let mut resumed = TraceWriter::resume(&b, 2, 9).unwrap();
        write(&mut resumed, 10..=20);
        assert_eq!(
            std::fs::read_to_string(&a).unwrap(),
            std::fs::read_to_string(&b).unwrap()
        );
        // A checkpoint later than the trace, or a file that is not a trace, is refused.
        assert!(TraceWriter::resume(&b, 2, 40).is_err());
        std::fs::write(&b, "x,y\n1,2\n").unwrap();
        assert!(TraceWriter::resume(&b, 2, 1).is_err());
        assert!(TraceWriter::resume(&dir.join("none.csv"), 2, 1).is_err());
        // Resuming before the first row keeps only the header (or nothing).
        let mut early = TraceWriter::create(&b, 5).unwrap();
        write(&mut early, 1..=12);
        let mut resumed = TraceWriter::resume(&b, 5, 3).unwrap();
        write(&mut resumed, 4..=12);
        let body = std::fs::read_to_string(&b).unwrap();
        assert_eq!(body.lines().count(), 3, "{body}");

        let cols = TraceColumns::read(&a, 4).unwrap();
        assert_eq!(cols.rows(), 10);
        assert_eq!(cols.stride(), 4);
        assert_eq!(cols.column("sweep").unwrap(), &[2.0, 10.0, 18.0]);
        assert_eq!(cols.last("sweep"), Some(20.0));
        assert_eq!(cols.max("log_joint"), Some(-80.0));
        assert_eq!(cols.first_after(10), 2);
        assert!(cols.column("alpha").is_some() && cols.column("beta").is_none());
        assert_eq!(first_reaching(&a, -90.5).unwrap(), Some(5.0));
        assert_eq!(first_reaching(&a, 0.0).unwrap(), None);
        std::fs::write(&b, "").unwrap();
        let empty = TraceColumns::read(&b, 4).unwrap();
        assert_eq!((empty.rows(), empty.header().len()), (0, 0));
        assert!(empty.column("sweep").is_none());
        std::fs::write(&b, "sweep,seconds\n1,2\n3\n").unwrap();
        let e = TraceColumns::read(&b, 4).unwrap_err().to_string();
        assert!(e.contains("b.csv:3"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
