//! Checkpoints: everything a chain needs to continue exactly where it stopped, and the atomic
//! file writes that keep the last checkpoint intact whatever happens while the next is written.
//!
//! A [`ChainCheckpoint`] holds the sweep counter, the sampling time so far, the exact layout of
//! the partition ([`PartitionSnapshot`]), the prior with its current hyperparameters and the
//! chain's RNG stream (ChaCha8: key, stream and position), and, for the few moves that carry
//! state of their own from one step to the next (trees, sub-cluster labels), what
//! [`crate::sampler::Move::save_aux`] returns. Other moves' buffers are scratch, cleared at the
//! start of every step, and parallel tasks derive their streams from the chain's stream, so
//! nothing else is needed.
//!
//! Statistics are not stored: they are rebuilt from the members. A statistic kept up to date
//! by single-point updates differs from the batch statistic in its last bits, so
//! [`super::Chain::checkpoint`] rebuilds the live chain's statistics in the same way when it
//! takes a checkpoint. A chain resumed from a checkpoint and the chain that wrote it then hold
//! bit-identical states, and their continuations are identical.

use crate::error::{Error, Result};
use crate::partition::PartitionSnapshot;
use crate::rng::NrmmRng;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The state of a chain between two sweeps (see the module documentation).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChainCheckpoint<P> {
    /// Sweeps done.
    pub sweep: u64,
    /// Sampling seconds so far.
    pub seconds: f64,
    /// The partition's layout.
    pub partition: PartitionSnapshot,
    /// The prior with its current hyperparameters.
    pub prior: P,
    /// The chain's stream, positioned after the last draw.
    pub rng: NrmmRng,
    /// Per scheduled move, in schedule order: its own state ([`crate::sampler::Move::save_aux`]),
    /// `None` for moves that keep none. Empty in checkpoints of schedules without such moves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aux: Vec<Option<serde_json::Value>>,
}

/// Writes `bytes` to `path` atomically: to a temporary file in the same directory, flushed to
/// disk, then renamed over `path`. A reader sees the old file or the new one, never a part.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let write_err = |source| Error::Write {
        path: path.to_path_buf(),
        source,
    };
    let tmp = temporary_path(path);
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(write_err(e));
    }
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(write_err(e));
    }
    sync_parent(path);
    Ok(())
}

/// `.<name>.tmp-<pid>` beside `path`: one process never races itself, and a leftover from a
/// killed process is overwritten by the next attempt of the same name.
fn temporary_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "checkpoint".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Flushes the directory entry of a rename to disk where the platform allows it; a failure only
/// weakens durability after a power cut, never the atomicity, so it is not an error.
fn sync_parent(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Serialises `value` as JSON and writes it atomically ([`write_atomic`]). Floating-point
/// values round-trip exactly.
pub fn save_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec(value).map_err(|e| Error::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    write_atomic(path, &bytes)
}

/// Reads a JSON file written by [`save_json`]; a malformed file is a parse error naming the
/// file and line.
pub fn load_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::parse(path, e.line(), format!("not a valid file of its kind: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("nrmm-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.json");
        save_json(&path, &vec![1.5f64, 0.1 + 0.2]).unwrap();
        save_json(&path, &vec![2.0f64, 1.0 / 3.0]).unwrap();
        let back: Vec<f64> = load_json(&path).unwrap();
        assert_eq!(back, vec![2.0, 1.0 / 3.0]);
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        std::fs::write(&path, "{not json").unwrap();
        let e = load_json::<Vec<f64>>(&path).unwrap_err().to_string();
        assert!(e.contains("c.json:1"), "{e}");
        assert!(load_json::<Vec<f64>>(&dir.join("absent.json")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Hyperparameters and log values must survive JSON exactly, or a resumed chain drifts.
    #[test]
    fn floats_round_trip_bit_for_bit() {
        let mut rng = crate::rng::SeedPlan::new(5).chain(0);
        let values: Vec<f64> = (0..2000)
            .map(|_| {
                let u = crate::rng::uniform_open01(&mut rng);
                (u * 700.0 - 350.0).exp() * if u < 0.5 { -1.0 } else { 1.0 }
            })
            .collect();
        let text = serde_json::to_string(&values).unwrap();
        let back: Vec<f64> = serde_json::from_str(&text).unwrap();
        for (a, b) in values.iter().zip(&back) {
            assert_eq!(a.to_bits(), b.to_bits());
        }
    }
}
