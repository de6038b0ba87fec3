//! Running a [`DataParallel`] chain on every rank: the trace and summary written by rank 0,
//! one labels file written by the ranks in turn, checkpoints (each rank its share of the
//! labels, rank 0 one manifest) and a stop that any rank can ask for.
//!
//! A checkpoint is written in three steps: every rank writes its labels to a new file named
//! by the sweep, all ranks wait for each other, rank 0 replaces the manifest (write and
//! rename), and only then do the ranks delete their older files. A rank that dies at any point
//! leaves the previous manifest and the files it names intact.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::comm::Comm;
use super::sampler::{DataParallel, Shard, ShardKernel};
use super::wire::{all_gather_u64, fold_in_rank_order};
use crate::error::{Error, Result};
use crate::prior::NrmPrior;
use crate::rng::{NrmmRng, SeedPlan};
use crate::sampler::dpmm::SubClusterOptions;

/// Settings of a data-parallel run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// The user's seed; the chain's stream is `SeedPlan::new(seed).chain(0)`.
    pub seed: u64,
    /// Sweeps in all (a resumed run goes on to this total).
    pub sweeps: u64,
    /// Launch iterations and proposals per sweep.
    pub options: SubClusterOptions,
    /// Points a launch fits its sub-clusters on.
    pub launch_sample: usize,
    /// Whether the prior's hyperparameters are resampled after every sweep.
    pub resample_hyper: bool,
    /// The output directory (shared by all ranks).
    pub out: PathBuf,
    /// A checkpoint every this many sweeps (0: only when the run ends or stops).
    pub checkpoint_every: u64,
    /// Go on from the checkpoint in `out`.
    pub continue_run: bool,
}

/// How a run ended, on every rank.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// Sweeps done (in all, counting a resumed run's earlier sweeps).
    pub sweeps: u64,
    /// Whether a stop was asked for before the budget was spent.
    pub stopped: bool,
    /// Number of clusters at the end.
    pub clusters: usize,
    /// Sweeps per second of this invocation (wall clock).
    pub sweeps_per_second: f64,
    /// Bytes all ranks sent per sweep, on average over this invocation.
    pub bytes_per_sweep: f64,
}

/// The manifest of a checkpoint.
#[derive(Serialize, Deserialize)]
struct Manifest<P> {
    sweep: u64,
    ranks: usize,
    n: usize,
    block: usize,
    settings: Settings,
    rng: NrmmRng,
    prior: P,
    clusters: usize,
}

/// What decides the chain besides the data and the layout: a run continued from a checkpoint
/// must have the same, or it would silently be another chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Settings {
    seed: u64,
    proposals: usize,
    launch_scans: usize,
    launch_sample: usize,
    resample_hyper: bool,
    /// The prior the run started from (its hyperparameters before any resampling).
    prior: serde_json::Value,
}

impl Settings {
    fn of<P: Serialize>(cfg: &RunConfig, prior: &P) -> Result<Self> {
        Ok(Settings {
            seed: cfg.seed,
            proposals: cfg.options.proposals,
            launch_scans: cfg.options.launch_iters,
            launch_sample: cfg.launch_sample,
            resample_hyper: cfg.resample_hyper,
            prior: serde_json::to_value(prior).map_err(|e| Error::Usage(e.to_string()))?,
        })
    }

    /// The settings that differ from `other`, as `name: mine vs other's` phrases.
    fn differences(&self, other: &Settings) -> Vec<String> {
        let mut out = Vec::new();
        let mut diff = |name: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{name} {a} (the checkpoint's: {b})"));
            }
        };
        diff("`seed`", self.seed.to_string(), other.seed.to_string());
        diff(
            "`proposals`",
            self.proposals.to_string(),
            other.proposals.to_string(),
        );
        diff(
            "`launch_scans`",
            self.launch_scans.to_string(),
            other.launch_scans.to_string(),
        );
        diff(
            "launch sample",
            self.launch_sample.to_string(),
            other.launch_sample.to_string(),
        );
        diff(
            "hyperparameter resampling",
            self.resample_hyper.to_string(),
            other.resample_hyper.to_string(),
        );
        diff("prior", self.prior.to_string(), other.prior.to_string());
        out
    }
}

const MANIFEST: &str = "manifest.json";

fn checkpoint_dir(out: &Path) -> PathBuf {
    out.join("checkpoint")
}

/// The manifest of the checkpoint of a run in `out`: there is a run there when it exists.
pub(super) fn manifest_path(out: &Path) -> PathBuf {
    checkpoint_dir(out).join(MANIFEST)
}

fn share_path(out: &Path, rank: usize, sweep: u64) -> PathBuf {
    checkpoint_dir(out).join(format!("labels-{rank}.{sweep}.bin"))
}

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn read_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(write_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(write_err(path))
}

/// All ranks wait for each other.
fn barrier(comm: &dyn Comm) -> Result<()> {
    all_gather_u64(comm, &[]).map(|_| ())
}

/// Runs the chain to `cfg.sweeps` sweeps or until any rank's `stop` is set, on every rank.
/// Rank 0 writes `trace.tsv` (one line per sweep) and `summary.json`; the ranks write
/// `labels.txt` (one cluster index per point, in global order) in turn; checkpoints go to
/// `checkpoint/`. Errors (on the rank that meets them; the others then find it gone) on
/// unwritable outputs, a checkpoint made with another layout, or a numerical failure.
pub fn run<K, P>(
    comm: &dyn Comm,
    shard: &Shard<K>,
    prior: P,
    cfg: &RunConfig,
    stop: &AtomicBool,
) -> Result<RunReport>
where
    K: ShardKernel,
    P: NrmPrior + Serialize + DeserializeOwned,
{
    let rank = comm.rank();
    std::fs::create_dir_all(checkpoint_dir(&cfg.out)).map_err(write_err(&cfg.out))?;
    let settings = Settings::of(cfg, &prior)?;
    let (mut chain, mut done) = if cfg.continue_run {
        resume(comm, shard, cfg, &settings)?
    } else {
        let labels = vec![0u32; shard.n_local()];
        let rng = SeedPlan::new(cfg.seed).chain(0);
        let chain = DataParallel::new(comm, shard, prior, cfg.options, labels, rng)?;
        (chain, 0)
    };
    chain = chain
        .with_launch_sample(cfg.launch_sample)?
        .with_hyper_resampling(cfg.resample_hyper);
    let trace_path = cfg.out.join("trace.tsv");
    let mut trace = if rank == 0 {
        // A resumed trace keeps its header and the sweeps up to the checkpoint: lines written
        // after it (before a rank died) are written again by the sweeps that follow.
        let mut text =
            String::from("sweep\tclusters\tln_joint\taccepted\tproposed\tseconds\tbytes\n");
        if cfg.continue_run {
            let old = std::fs::read_to_string(&trace_path).map_err(read_err(&trace_path))?;
            for line in old.lines().skip(1) {
                let sweep = line.split('\t').next().and_then(|v| v.parse::<u64>().ok());
                if sweep.is_some_and(|s| s <= done) {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
        write_atomic(&trace_path, text.as_bytes())?;
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(&trace_path)
            .map_err(write_err(&trace_path))?;
        Some(f)
    } else {
        None
    };
    let start = Instant::now();
    let bytes_start = total_bytes(comm, false)?.1;
    let mut prev_total = bytes_start;
    let first = done;
    let mut stopped = false;
    while done < cfg.sweeps {
        let t = Instant::now();
        let info = chain.sweep(comm, shard)?;
        done += 1;
        let (any_stop, total) = total_bytes(comm, stop.load(Ordering::Relaxed))?;
        if let Some(f) = trace.as_mut() {
            writeln!(
                f,
                "{done}\t{}\t{:.6}\t{}\t{}\t{:.6}\t{}",
                chain.sizes().len(),
                chain.ln_joint(&shard.kernel),
                info.accepted,
                info.proposed,
                t.elapsed().as_secs_f64(),
                total - prev_total
            )
            .map_err(write_err(&trace_path))?;
        }
        prev_total = total;
        let due = cfg.checkpoint_every > 0 && done % cfg.checkpoint_every == 0;
        if any_stop {
            stopped = done < cfg.sweeps;
            break;
        }
        if due && done < cfg.sweeps {
            checkpoint(comm, shard, &chain, cfg, &settings, done)?;
        }
    }
    if let Some(f) = trace.as_mut() {
        f.flush().map_err(write_err(&trace_path))?;
    }
    checkpoint(comm, shard, &chain, cfg, &settings, done)?;
    write_labels(comm, &cfg.out.join("labels.txt"), chain.labels())?;
    let seconds = start.elapsed().as_secs_f64();
    let sweeps_run = (done - first).max(1) as f64;
    let bytes_end = total_bytes(comm, false)?.1;
    let report = RunReport {
        sweeps: done,
        stopped,
        clusters: chain.sizes().len(),
        sweeps_per_second: sweeps_run / seconds,
        bytes_per_sweep: (bytes_end - bytes_start) as f64 / sweeps_run,
    };
    if rank == 0 {
        let summary = serde_json::json!({
            "sampler": "subcluster (data-parallel)",
            "ranks": comm.size(),
            "n": shard.layout.n(),
            "block": shard.layout.block,
            "seed": cfg.seed,
            "sweeps": done,
            "stopped": stopped,
            "clusters": report.clusters,
            "sizes": chain.sizes(),
            "ln_joint": chain.ln_joint(&shard.kernel),
            "prior": chain.prior.hyper_values().into_iter().collect::<std::collections::BTreeMap<_, _>>(),
            "sweeps_per_second": report.sweeps_per_second,
            "bytes_per_sweep": report.bytes_per_sweep,
        });
        let path = cfg.out.join("summary.json");
        let text = serde_json::to_string_pretty(&summary).expect("plain values");
        write_atomic(&path, text.as_bytes())?;
    }
    Ok(report)
}

/// Whether any rank asks to stop, and the bytes all ranks have sent so far.
fn total_bytes(comm: &dyn Comm, stop: bool) -> Result<(bool, u64)> {
    let all = all_gather_u64(comm, &[u64::from(stop), comm.bytes_sent()])?;
    let any = all.chunks(2).any(|c| c[0] == 1);
    Ok((any, all.chunks(2).map(|c| c[1]).sum()))
}

/// Writes a checkpoint at `sweep` (see the module documentation).
fn checkpoint<K: ShardKernel, P: NrmPrior + Serialize>(
    comm: &dyn Comm,
    shard: &Shard<K>,
    chain: &DataParallel<K, P>,
    cfg: &RunConfig,
    settings: &Settings,
    sweep: u64,
) -> Result<()> {
    let rank = comm.rank();
    let mut bytes = Vec::with_capacity(4 * chain.labels().len());
    for &l in chain.labels() {
        bytes.extend_from_slice(&l.to_le_bytes());
    }
    write_atomic(&share_path(&cfg.out, rank, sweep), &bytes)?;
    barrier(comm)?;
    if rank == 0 {
        let m = Manifest {
            sweep,
            ranks: comm.size(),
            n: shard.layout.n(),
            block: shard.layout.block,
            settings: settings.clone(),
            rng: chain.rng().clone(),
            prior: chain.prior.clone(),
            clusters: chain.sizes().len(),
        };
        let text = serde_json::to_string(&m).map_err(|e| Error::Usage(e.to_string()))?;
        write_atomic(&manifest_path(&cfg.out), text.as_bytes())?;
    }
    barrier(comm)?;
    // Older shares of this rank are no longer named by the manifest.
    let dir = checkpoint_dir(&cfg.out);
    let mine = format!("labels-{rank}.");
    let keep = share_path(&cfg.out, rank, sweep);
    for entry in std::fs::read_dir(&dir).map_err(read_err(&dir))? {
        let path = entry.map_err(read_err(&dir))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with(&mine) && path != keep {
            std::fs::remove_file(&path).map_err(write_err(&path))?;
        }
    }
    Ok(())
}

/// The chain of the checkpoint in `cfg.out`, and its sweep count. Errors if there is none or
/// it was made with another number of ranks, points or block.
fn resume<K: ShardKernel, P: NrmPrior + DeserializeOwned>(
    comm: &dyn Comm,
    shard: &Shard<K>,
    cfg: &RunConfig,
    settings: &Settings,
) -> Result<(DataParallel<K, P>, u64)> {
    let path = manifest_path(&cfg.out);
    if !path.exists() {
        return Err(Error::Usage(format!(
            "{} holds no checkpoint to continue from (no {}): run without `continue_run` to start",
            cfg.out.display(),
            path.display()
        )));
    }
    let text = std::fs::read_to_string(&path).map_err(read_err(&path))?;
    let m: Manifest<P> =
        serde_json::from_str(&text).map_err(|e| Error::parse(&path, 0, e.to_string()))?;
    let differences = settings.differences(&m.settings);
    if !differences.is_empty() {
        return Err(Error::Usage(format!(
            "{}: `continue_run` must repeat the settings the run started with, but this run has {}",
            path.display(),
            differences.join(", ")
        )));
    }
    let here = (comm.size(), shard.layout.n(), shard.layout.block);
    if (m.ranks, m.n, m.block) != here {
        return Err(Error::Usage(format!(
            "{}: the checkpoint was made by {} ranks on {} points with block {}, this run has \
             {} ranks, {} points, block {}; resume with the same layout",
            path.display(),
            m.ranks,
            m.n,
            m.block,
            here.0,
            here.1,
            here.2
        )));
    }
    let share = share_path(&cfg.out, comm.rank(), m.sweep);
    let bytes = std::fs::read(&share).map_err(read_err(&share))?;
    if bytes.len() != 4 * shard.n_local() {
        return Err(Error::parse(
            &share,
            0,
            format!(
                "{} bytes, expected {} (4 per local point)",
                bytes.len(),
                4 * shard.n_local()
            ),
        ));
    }
    let labels = bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
        .collect();
    let chain = DataParallel::new(comm, shard, m.prior, cfg.options, labels, m.rng)?;
    Ok((chain, m.sweep))
}

/// Writes every rank's labels into one file, rank after rank (each appends its share once
/// the rank before it has finished).
fn write_labels(comm: &dyn Comm, path: &Path, labels: &[u32]) -> Result<()> {
    let rank = comm.rank();
    fold_in_rank_order(
        comm,
        (),
        |()| {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(rank > 0)
                .write(true)
                .truncate(rank == 0)
                .open(path)
                .map_err(write_err(path))?;
            let mut out = std::io::BufWriter::new(f);
            crate::data::load::write_labels_to(&mut out, labels).map_err(write_err(path))?;
            let f = out
                .into_inner()
                .map_err(|e| e.into_error())
                .map_err(write_err(path))?;
            f.sync_all().map_err(write_err(path))
        },
        |_| Vec::new(),
        |_| Ok(()),
    )
}
