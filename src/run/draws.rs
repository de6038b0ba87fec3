//! Partition draws of a chain on disk, for posterior similarity, point estimates and
//! prediction, in bounded space however long the chain runs; and the best state visited.
//!
//! [`DrawWriter`] appends one JSON line per recorded sweep (`sweep`, `log_joint`, `hyper`,
//! canonical `labels`). It records every sweep that is a multiple of its stride, which starts
//! at the trace's thinning and doubles each time `capacity` draws have been recorded at the
//! current stride. At stride `s` the draws that count are the sweeps `s, 2s, …`, all multiples
//! of `s` so far; after doubling, the `capacity / 2` of them at multiples of `2s` still count.
//! The file keeps the finer early draws too, so it grows by `capacity / 2` lines per doubling:
//! logarithmically in the chain's length. [`read_draws`] keeps the draws at multiples of the
//! coarsest spacing in the file, which are evenly spaced over the chain.

mod text;

use super::{HyperState, Observer, SweepRecord};
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;
use crate::sampler::State;
use std::io::{BufRead, Seek, Write};
use std::path::{Path, PathBuf};

/// One recorded partition of a chain, its labels of type `L`: `usize` where draws are read
/// for use, `u32` (half the memory) where a chain's best state is held for the summary. A
/// running chain writes and holds its draws with [`NarrowLabels`] (the same text).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Draw<L = usize> {
    /// The sweep after which it was recorded.
    pub sweep: u64,
    /// The log joint of the state.
    pub log_joint: f64,
    /// Hyperparameter values (by column name in the file).
    pub hyper: HyperState,
    /// Canonical labels (`0..K` in order of first appearance).
    pub labels: Vec<L>,
}

impl Draw<u32> {
    /// The same draw with `usize` labels. Cost O(n).
    pub fn widen(self) -> Draw {
        Draw {
            sweep: self.sweep,
            log_joint: self.log_joint,
            hyper: self.hyper,
            labels: self.labels.into_iter().map(|l| l as usize).collect(),
        }
    }
}

/// Where a [`DrawWriter`] is in its doubling schedule (saved in checkpoints).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DrawStride {
    /// Sweeps between recorded draws now.
    pub stride: u64,
    /// Draws recorded at the current stride (the multiples of `stride` so far).
    pub kept: usize,
}

/// Records thinned partition draws of a chain to a JSON-lines file (see the module
/// documentation). Cost per recorded sweep: O(n) to label and write the partition; other
/// sweeps cost one division.
pub struct DrawWriter {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    capacity: usize,
    stride: DrawStride,
}

impl DrawWriter {
    /// Creates (truncates) the draws file: every `thin`-th sweep is recorded until `capacity`
    /// draws (rounded up to an even number, at least 2) are kept, then the stride doubles.
    pub fn create(path: &Path, thin: u64, capacity: usize) -> Result<Self> {
        let file = std::fs::File::create(path).map_err(|source| Error::Write {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(DrawWriter {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
            capacity: capacity.max(2).next_multiple_of(2),
            stride: DrawStride {
                stride: thin.max(1),
                kept: 0,
            },
        })
    }

    /// Reopens the draws file of a chain resumed after sweep `sweep` with its saved `stride`:
    /// draws of later sweeps are removed and new ones appended. Cost: one pass over the file.
    pub fn resume(path: &Path, capacity: usize, stride: DrawStride, sweep: u64) -> Result<Self> {
        if stride.stride == 0 {
            return Err(Error::Usage(format!(
                "draws of {}: a stride of 0 sweeps in the checkpoint",
                path.display()
            )));
        }
        let keep = kept_prefix(path, sweep)?;
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
        Ok(DrawWriter {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
            capacity: capacity.max(2).next_multiple_of(2),
            stride,
        })
    }

    /// The current place in the doubling schedule.
    pub fn stride(&self) -> DrawStride {
        self.stride
    }

    /// Flushes buffered draws to disk.
    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|source| Error::Write {
            path: self.path.clone(),
            source,
        })
    }
}

impl<K: ConjugateKernel, P: NrmPrior> Observer<K, P> for DrawWriter {
    fn observe(&mut self, record: &SweepRecord, state: &State<K, P>) -> Result<()> {
        if !record.sweep.is_multiple_of(self.stride.stride) {
            return Ok(());
        }
        // Labelled in the narrowest width: four chains record at the same sweeps, and `u32`
        // labels held while written cost them 16 MB at 10⁶ points.
        let draw = BestState::of(record, state);
        draw.write_line(&mut self.out)
            .and_then(|()| writeln!(self.out))
            .map_err(|source| Error::Write {
                path: self.path.clone(),
                source,
            })?;
        self.stride.kept += 1;
        if self.stride.kept == self.capacity {
            self.stride.stride *= 2;
            self.stride.kept = self.capacity / 2;
        }
        Ok(())
    }
}

/// Just the sweep of a draws line, without building its labels.
#[derive(serde::Deserialize)]
struct SweepOnly {
    sweep: u64,
}

/// The byte length of the complete lines of a draws file up to sweep `sweep`.
fn kept_prefix(path: &Path, sweep: u64) -> Result<u64> {
    let file = std::fs::File::open(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = String::new();
    let mut keep = 0u64;
    let mut number = 0;
    loop {
        line.clear();
        let read = reader.read_line(&mut line).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        number += 1;
        if read == 0 || !line.ends_with('\n') {
            return Ok(keep);
        }
        let s: SweepOnly = serde_json::from_str(&line)
            .map_err(|e| Error::parse(path, number, format!("not a draw: {e}")))?;
        if s.sweep > sweep {
            return Ok(keep);
        }
        keep += read as u64;
    }
}

/// The draws of a chain after sweep `after` (a burn-in), evenly spaced: those at multiples of
/// the largest gap between consecutive draws in the file (see the module documentation).
/// Errors name the file and line of a malformed draw. Cost: two passes over the file; the
/// draws all in memory (see [`for_each_draw`] for one at a time).
pub fn read_draws(path: &Path, after: u64) -> Result<Vec<Draw>> {
    let mut draws = Vec::new();
    for_each_draw(path, after, |draw| {
        draws.push(draw);
        Ok(())
    })?;
    Ok(draws)
}

/// The sweeps of the draws that [`read_draws`] returns, in file order, without building
/// their labels: how many there are before they are read one at a time. Cost: one pass over
/// the file.
pub fn kept_sweeps(path: &Path, after: u64) -> Result<Vec<u64>> {
    let sweeps = sweeps_of(path)?;
    let gap = spacing(&sweeps);
    Ok(sweeps
        .into_iter()
        .filter(|&s| s > after && s.is_multiple_of(gap))
        .collect())
}

/// Calls `f` with each draw that [`read_draws`] returns, in file order, one draw in memory at
/// a time: a summary of a million points holds one draw's labels, not a chain's. Errors as
/// [`read_draws`], or as `f` does. Cost: two passes over the file.
pub fn for_each_draw(path: &Path, after: u64, mut f: impl FnMut(Draw) -> Result<()>) -> Result<()> {
    let sweeps = sweeps_of(path)?;
    let gap = spacing(&sweeps);
    // The first pass read the sweep of every line there was; a line written since is read.
    let mut known = sweeps.iter();
    draw_lines(path, |k, line| {
        let sweep = match known.next() {
            Some(&sweep) => sweep,
            None => sweep_of(path, k, line)?,
        };
        if sweep > after && sweep.is_multiple_of(gap) {
            f(parse_draw(path, k, line)?)?;
        }
        Ok(())
    })
}

/// The draw on line `k` of `path`: read by [`text::read_draw`] when the line is as
/// [`DrawWriter`] writes it, by the JSON parser (and its errors) otherwise.
fn parse_draw(path: &Path, k: usize, line: &str) -> Result<Draw> {
    if let Some((sweep, log_joint, hyper, labels)) = text::read_draw(line) {
        return Ok(Draw {
            sweep,
            log_joint,
            hyper,
            labels,
        });
    }
    serde_json::from_str(line).map_err(|e| Error::parse(path, k, format!("not a draw: {e}")))
}

/// The sweep of every draw in the file, in file order.
fn sweeps_of(path: &Path) -> Result<Vec<u64>> {
    let mut sweeps = Vec::new();
    draw_lines(path, |k, line| {
        sweeps.push(sweep_of(path, k, line)?);
        Ok(())
    })?;
    Ok(sweeps)
}

/// The largest gap between consecutive sweeps (at least 1): the spacing of the evenly spaced
/// draws.
fn spacing(sweeps: &[u64]) -> u64 {
    sweeps
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// The sweep of the draws line `line` (line number `k` of `path`): read from the line's start
/// when it is a whole line as [`DrawWriter`] writes it ([`written_sweep`]), without reading
/// its labels; parsed as JSON otherwise. A line is checked in full where it is read as a draw.
fn sweep_of(path: &Path, k: usize, line: &str) -> Result<u64> {
    if let Some(sweep) = written_sweep(line) {
        return Ok(sweep);
    }
    serde_json::from_str::<SweepOnly>(line)
        .map(|s| s.sweep)
        .map_err(|e| Error::parse(path, k, format!("not a draw: {e}")))
}

/// The sweep of a draws line that starts as [`DrawWriter`] writes one, `{"sweep":` and the
/// sweep's digits (no sign, no leading zero, fitting a `u64`) and a comma, and ends as a whole
/// line does, with the labels' `]}` (a line cut short falls back to the JSON parser and its
/// error). The same value the JSON parser reads. Cost: O(digits).
fn written_sweep(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("{\"sweep\":")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let ok = rest.as_bytes().get(digits) == Some(&b',')
        && (digits == 1 || !rest.starts_with('0'))
        && line.ends_with("]}");
    ok.then(|| rest[..digits].parse().ok()).flatten()
}

/// Calls `f` with the number (from 1) and text of each line of the draws file that is not
/// blank, reusing one line buffer.
fn draw_lines(path: &Path, mut f: impl FnMut(usize, &str) -> Result<()>) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = std::fs::File::open(path)
        .map(std::io::BufReader::new)
        .map_err(io)?;
    let mut line = String::new();
    let mut k = 0;
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(io)? == 0 {
            return Ok(());
        }
        k += 1;
        let text = line.trim_end_matches(['\n', '\r']);
        if !text.trim().is_empty() {
            f(k, text)?;
        }
    }
}

/// The best state a chain has visited: the draw with the largest log joint (the MAP estimate
/// among visited states). Cost per sweep: one comparison, plus O(n) when the best improves.
/// Memory: the labels in the narrowest of 8, 16 and 32 bits that holds them
/// ([`NarrowLabels`]), one byte a point up to 256 clusters. Written and read as a
/// [`Draw`] (`{"best": {"sweep": …, "log_joint": …, "hyper": …, "labels": […]}}`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BestDraw {
    /// The best draw so far, if any sweep has been observed.
    best: Option<BestState>,
}

/// [`BestDraw`]'s draw, and a draw as [`DrawWriter`] writes it: a [`Draw`] with narrow
/// labels, the same fields in the same order (so the same text).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct BestState {
    sweep: u64,
    log_joint: f64,
    hyper: HyperState,
    labels: NarrowLabels,
}

impl BestState {
    /// The draw of `state` after sweep `record`. Cost O(n).
    fn of<K: ConjugateKernel, P: NrmPrior>(record: &SweepRecord, state: &State<K, P>) -> Self {
        BestState {
            sweep: record.sweep,
            log_joint: record.ln_joint,
            hyper: record.hyper,
            labels: NarrowLabels::of(&state.partition),
        }
    }

    /// Writes the draw's JSON text ([`text::write_draw`]: as `serde_json` writes it, its
    /// labels formatted in parallel), without a newline.
    fn write_line(&self, out: &mut impl Write) -> std::io::Result<()> {
        let (sweep, log_joint, hyper) = (self.sweep, self.log_joint, &self.hyper);
        match &self.labels {
            NarrowLabels::U8(v) => text::write_draw(out, sweep, log_joint, hyper, v),
            NarrowLabels::U16(v) => text::write_draw(out, sweep, log_joint, hyper, v),
            NarrowLabels::U32(v) => text::write_draw(out, sweep, log_joint, hyper, v),
        }
    }
}

impl BestDraw {
    /// The best draw, its labels in 32 bits. Cost O(n).
    pub fn draw(&self) -> Option<Draw<u32>> {
        self.best.as_ref().map(|b| Draw {
            sweep: b.sweep,
            log_joint: b.log_joint,
            hyper: b.hyper,
            labels: b.labels.to_u32(),
        })
    }
}

impl<K: ConjugateKernel, P: NrmPrior> Observer<K, P> for BestDraw {
    fn observe(&mut self, record: &SweepRecord, state: &State<K, P>) -> Result<()> {
        let better = self
            .best
            .as_ref()
            .is_none_or(|b| record.ln_joint > b.log_joint);
        if better && !record.ln_joint.is_nan() {
            self.best = Some(BestState::of(record, state));
        }
        Ok(())
    }
}

/// Canonical labels (`0..K` in order of first appearance) in the narrowest of 8, 16 and 32
/// bits that holds them: one byte a point for up to 256 clusters, where `u32` labels take
/// four (16 MB for four chains' best states at 10⁶ points). Written and read as the list of
/// numbers, as `Vec<u32>` would be.
#[derive(Clone, Debug, PartialEq)]
pub enum NarrowLabels {
    /// Up to 256 clusters.
    U8(Vec<u8>),
    /// Up to 65,536 clusters.
    U16(Vec<u16>),
    /// More.
    U32(Vec<u32>),
}

impl NarrowLabels {
    /// The canonical labels of `partition`, in the width its number of clusters needs.
    /// Cost O(n).
    pub fn of<K: ConjugateKernel>(partition: &crate::partition::Partition<K>) -> Self {
        let k = partition.n_clusters();
        if k <= 1 << u8::BITS {
            NarrowLabels::U8(partition.canonical_labels_as(|c| c as u8))
        } else if k <= 1 << u16::BITS {
            NarrowLabels::U16(partition.canonical_labels_as(|c| c as u16))
        } else {
            NarrowLabels::U32(partition.compact_canonical_labels())
        }
    }

    /// `labels` in the narrowest width that holds their largest value. Cost O(n).
    pub fn narrow(labels: Vec<u32>) -> Self {
        let top = labels.iter().copied().max().unwrap_or(0);
        if top <= u32::from(u8::MAX) {
            NarrowLabels::U8(labels.into_iter().map(|c| c as u8).collect())
        } else if top <= u32::from(u16::MAX) {
            NarrowLabels::U16(labels.into_iter().map(|c| c as u16).collect())
        } else {
            NarrowLabels::U32(labels)
        }
    }

    /// Writes the labels one per line to `path` ([`crate::data::load::write_labels`]): the
    /// same text in any width. Cost O(n).
    pub fn write(&self, path: &Path) -> Result<()> {
        match self {
            NarrowLabels::U8(v) => crate::data::load::write_labels(path, v),
            NarrowLabels::U16(v) => crate::data::load::write_labels(path, v),
            NarrowLabels::U32(v) => crate::data::load::write_labels(path, v),
        }
    }

    /// The labels in 32 bits. Cost O(n).
    pub fn to_u32(&self) -> Vec<u32> {
        match self {
            NarrowLabels::U8(v) => v.iter().map(|&c| u32::from(c)).collect(),
            NarrowLabels::U16(v) => v.iter().map(|&c| u32::from(c)).collect(),
            NarrowLabels::U32(v) => v.clone(),
        }
    }
}

impl serde::Serialize for NarrowLabels {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            NarrowLabels::U8(v) => v.serialize(s),
            NarrowLabels::U16(v) => v.serialize(s),
            NarrowLabels::U32(v) => v.serialize(s),
        }
    }
}

impl<'de> serde::Deserialize<'de> for NarrowLabels {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Vec::<u32>::deserialize(d).map(NarrowLabels::narrow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseData;
    use crate::kernel::{NormalWishart, NwHyper};
    use crate::partition::Partition;
    use crate::prior::{Dp, PriorHyper};
    use std::sync::Arc;

    fn setup() -> (NormalWishart, State<NormalWishart, Dp>) {
        let x = DenseData::new(3, 1, vec![0.0, 1.0, 5.0]).unwrap();
        let k = NormalWishart::new(
            Arc::new(x),
            NwHyper::new(vec![0.0], vec![1.0], 0.1, 3.0).unwrap(),
        )
        .unwrap();
        let state = State {
            partition: Partition::from_labels(&k, &[4, 4, 2]).unwrap(),
            prior: Dp::new(1.0).unwrap(),
        };
        (k, state)
    }

    fn record(sweep: u64) -> SweepRecord {
        SweepRecord {
            sweep,
            seconds: 0.0,
            n_clusters: 2,
            ln_joint: -(sweep as f64 % 7.0),
            moves: Vec::new(),
            hyper: HyperState {
                prior: PriorHyper::Dp { alpha: 1.0 },
                kernel: None,
            },
        }
    }

    /// The kept draws are evenly spaced and bounded whatever the chain's length, and a
    /// resumed writer leaves the same file as one that never stopped.
    #[test]
    fn doubling_keeps_evenly_spaced_draws_and_resumes_exactly() {
        let (_, state) = setup();
        let dir = std::env::temp_dir().join(format!("nrmm-draws-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
        let mut w = DrawWriter::create(&a, 3, 4).unwrap();
        for s in 1..=200 {
            Observer::<NormalWishart, Dp>::observe(&mut w, &record(s), &state).unwrap();
        }
        w.flush().unwrap();
        let all = read_draws(&a, 0).unwrap();
        let sweeps: Vec<u64> = all.iter().map(|d| d.sweep).collect();
        // Strides 3, 6, 12, 24, 48 (the file holds 3, 6, 9, 12, 18, 24, 36, 48, 72, 96, 144,
        // 192); after 192 the stride became 96, but no draw was recorded at it.
        assert_eq!(sweeps, vec![48, 96, 144, 192]);
        assert_eq!(all[0].labels, vec![0, 0, 1]);
        assert_eq!(all[0].hyper.prior, PriorHyper::Dp { alpha: 1.0 });
        let lines = std::fs::read_to_string(&a).unwrap().lines().count();
        assert_eq!(lines, 12);
        let after = read_draws(&a, 100).unwrap();
        assert_eq!(after.len(), 2);

        let mut w = DrawWriter::create(&b, 3, 4).unwrap();
        let mut saved = None;
        for s in 1..=130 {
            Observer::<NormalWishart, Dp>::observe(&mut w, &record(s), &state).unwrap();
            if s == 100 {
                saved = Some(w.stride());
            }
        }
        w.flush().unwrap();
        drop(w);
        let mut w = DrawWriter::resume(&b, 4, saved.unwrap(), 100).unwrap();
        for s in 101..=200 {
            Observer::<NormalWishart, Dp>::observe(&mut w, &record(s), &state).unwrap();
        }
        w.flush().unwrap();
        assert_eq!(
            std::fs::read_to_string(&a).unwrap(),
            std::fs::read_to_string(&b).unwrap()
        );
        // The sweep read from a line's start is the JSON parser's, line for line.
        for line in std::fs::read_to_string(&a).unwrap().lines() {
            let parsed = serde_json::from_str::<SweepOnly>(line).unwrap().sweep;
            assert_eq!(written_sweep(line), Some(parsed));
        }
        for odd in [
            "{\"sweep\":01,\"labels\":[]}",
            "{\"sweep\":-1,\"labels\":[]}",
            "{\"sweep\":99999999999999999999,\"labels\":[]}",
            "{\"sweep\":1,\"labels\":[0,",
            "{\"sweep\":1}",
            "{ \"sweep\":1,\"labels\":[]}",
        ] {
            assert_eq!(written_sweep(odd), None, "{odd}");
        }
        std::fs::write(&b, "{\"sweep\":3,\"log_joint\":0.0,\"labels\":[0,\n").unwrap();
        let e = read_draws(&b, 0).unwrap_err().to_string();
        assert!(e.contains("b.jsonl:1"), "a line cut short is an error: {e}");
        std::fs::write(&b, "{\"sweep\":1}\nnot json\n").unwrap();
        let e = read_draws(&b, 0).unwrap_err().to_string();
        assert!(e.contains("b.jsonl:"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn best_draw_keeps_the_largest_log_joint() {
        let (_, state) = setup();
        let mut best = BestDraw::default();
        for (s, l) in [(1, -5.0), (2, -3.0), (3, f64::NAN), (4, -4.0)] {
            let r = SweepRecord {
                ln_joint: l,
                ..record(s)
            };
            Observer::<NormalWishart, Dp>::observe(&mut best, &r, &state).unwrap();
        }
        let b = best.draw().unwrap();
        assert_eq!((b.sweep, b.log_joint), (2, -3.0));
        assert_eq!(b.labels, vec![0, 0, 1]);
        // Written as a draw with 32-bit labels would be, and read back the same.
        #[derive(serde::Serialize)]
        struct Plain {
            best: Option<Draw<u32>>,
        }
        let text = serde_json::to_string(&best).unwrap();
        assert_eq!(
            text,
            serde_json::to_string(&Plain { best: Some(b) }).unwrap()
        );
        assert_eq!(serde_json::from_str::<BestDraw>(&text).unwrap(), best);
    }

    /// Labels take the narrowest width that holds them and read back as they were.
    #[test]
    fn narrow_labels_take_the_width_they_need() {
        for (top, width) in [(0u32, 1), (255, 1), (256, 2), (65_535, 2), (65_536, 4)] {
            let labels = vec![0, top, 1];
            let narrow = NarrowLabels::narrow(labels.clone());
            let got = match &narrow {
                NarrowLabels::U8(_) => 1,
                NarrowLabels::U16(_) => 2,
                NarrowLabels::U32(_) => 4,
            };
            assert_eq!(got, width, "{top}");
            assert_eq!(narrow.to_u32(), labels);
            let text = serde_json::to_string(&narrow).unwrap();
            assert_eq!(text, serde_json::to_string(&labels).unwrap());
            assert_eq!(serde_json::from_str::<NarrowLabels>(&text).unwrap(), narrow);
        }
    }
}
