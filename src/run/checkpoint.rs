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
//!
//! Files that must not be resumed from when damaged are *sealed* ([`Sealed`]): they carry the
//! FNV-1a checksum of their own canonical JSON (written with the checksum field empty), so a
//! hand edit (a sweep counter, an RNG position) or a damaged or truncated file is recognised
//! as corrupt on reading ([`load_sealed`]). The checksum detects accidents and edits, not a
//! determined forger: it is not a signature. [`save_sealed`] keeps the file it replaces as
//! [`previous_path`], so one damaged write never loses more than one checkpoint interval.

use crate::error::{Error, Result};
use crate::partition::PartitionSnapshot;
use crate::rng::NrmmRng;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;
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
    /// The kernel's resampled hyperparameters, in the kernel's order
    /// ([`crate::kernel::HyperKernel::hyper_values`]); empty for chains without kernel
    /// hyperpriors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_hyper: Vec<f64>,
    /// The kernel's latent values ([`crate::kernel::ConjugateKernel::latent`]: missing
    /// coordinates drawn inside the sweep); empty for kernels without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latent: Vec<f64>,
    /// The hot replicas of a tempered chain ([`super::Ladder`]); `None` for a chain without
    /// `temperatures`.
    #[serde(default = "no_ladder", skip_serializing_if = "Option::is_none")]
    pub ladder: Option<super::LadderCheckpoint<P>>,
}

/// The ladder of a checkpoint written without one.
fn no_ladder<P>() -> Option<super::LadderCheckpoint<P>> {
    None
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

/// A serialisable file that holds its own checksum (see the module documentation).
pub trait Sealed: Serialize {
    /// The checksum field: empty while the checksum is computed.
    fn checksum_mut(&mut self) -> &mut String;
}

pub use crate::data::fingerprint::Fnv1a;

/// The 64-bit FNV-1a hash of `bytes`. Cost O(bytes).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a::new();
    h.bytes(bytes);
    h.finish()
}

/// The checksum of `value`: FNV-1a of its JSON with the checksum field empty, in hexadecimal.
/// JSON writes every float so that it reads back bit for bit, so a file read back and
/// serialised again gives the same text, and the same checksum, exactly when its contents
/// are unchanged.
fn checksum_of<T: Sealed + Clone>(value: &T) -> std::result::Result<String, serde_json::Error> {
    let mut blank = value.clone();
    blank.checksum_mut().clear();
    Ok(format!("{:016x}", fnv1a64(&serde_json::to_vec(&blank)?)))
}

/// `checkpoint.prev.json` beside `checkpoint.json`: where [`save_sealed`] keeps the file it
/// replaces.
pub fn previous_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "checkpoint".into(), |n| n.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()));
    path.with_file_name(format!("{stem}.prev{ext}"))
}

/// Seals `value` with its checksum and writes it atomically to `path`, keeping the file it
/// replaces as [`previous_path`]: the new file is written and flushed to a temporary, the old
/// one renamed to the previous path, the temporary renamed into place. Whenever the process
/// stops, `path` or the previous path holds a complete checkpoint. Cost: one serialisation
/// and one file write.
pub fn save_sealed<T: Sealed + Clone>(path: &Path, value: &T) -> Result<()> {
    let write_err = |e: serde_json::Error| Error::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    };
    let mut sealed = value.clone();
    *sealed.checksum_mut() = checksum_of(value).map_err(write_err)?;
    let bytes = serde_json::to_vec(&sealed).map_err(write_err)?;
    if path.is_file() {
        let previous = previous_path(path);
        std::fs::rename(path, &previous).map_err(|source| Error::Write {
            path: previous,
            source,
        })?;
    }
    write_atomic(path, &bytes)
}

/// Why a sealed file could not be used.
#[derive(Debug)]
pub enum SealedError {
    /// There is no such file.
    Missing,
    /// The file exists but is not what was written: truncated, damaged or edited. The reason
    /// says which.
    Corrupt(String),
    /// The file could not be read at all.
    Unreadable(Error),
}

impl fmt::Display for SealedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SealedError::Missing => f.write_str("missing"),
            SealedError::Corrupt(why) => write!(f, "corrupt ({why})"),
            SealedError::Unreadable(e) => write!(f, "unreadable ({e})"),
        }
    }
}

/// Reads a file written by [`save_sealed`] and checks its checksum. A file that does not
/// parse (truncated, damaged) or whose checksum does not match its contents (edited) is
/// [`SealedError::Corrupt`]. Cost: one read, one parse, one serialisation.
pub fn load_sealed<T: Sealed + Clone + DeserializeOwned>(
    path: &Path,
) -> std::result::Result<T, SealedError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(SealedError::Missing),
        Err(source) => {
            return Err(SealedError::Unreadable(Error::Io {
                path: path.to_path_buf(),
                source,
            }))
        }
    };
    let mut value: T = serde_json::from_slice(&bytes).map_err(|e| {
        SealedError::Corrupt(if e.is_eof() {
            "truncated: it ends in the middle".to_string()
        } else {
            format!("damaged: {e}")
        })
    })?;
    let claimed = std::mem::take(value.checksum_mut());
    let actual = checksum_of(&value).map_err(|e| SealedError::Corrupt(e.to_string()))?;
    if claimed.is_empty() {
        return Err(SealedError::Corrupt(
            "it has no checksum: damaged, or written by an older nrmm".into(),
        ));
    }
    if claimed != actual {
        return Err(SealedError::Corrupt(
            "its checksum does not match its contents: edited or damaged".into(),
        ));
    }
    *value.checksum_mut() = claimed;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Doc {
        checksum: String,
        sweep: u64,
        x: f64,
    }

    impl Sealed for Doc {
        fn checksum_mut(&mut self) -> &mut String {
            &mut self.checksum
        }
    }

    #[test]
    fn sealed_files_detect_edits_and_truncation_and_keep_the_previous() {
        let dir = std::env::temp_dir().join(format!("nrmm-sealed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("checkpoint.json");
        let prev = previous_path(&path);
        assert_eq!(prev, dir.join("checkpoint.prev.json"));
        let doc = |sweep| Doc {
            checksum: String::new(),
            sweep,
            x: 0.1 + 0.2,
        };
        assert!(matches!(
            load_sealed::<Doc>(&path),
            Err(SealedError::Missing)
        ));
        save_sealed(&path, &doc(10)).unwrap();
        assert!(!prev.exists());
        save_sealed(&path, &doc(20)).unwrap();
        assert_eq!(load_sealed::<Doc>(&path).unwrap().sweep, 20);
        assert_eq!(load_sealed::<Doc>(&prev).unwrap().sweep, 10);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"sweep\":20", "\"sweep\":7")).unwrap();
        let e = load_sealed::<Doc>(&path).unwrap_err().to_string();
        assert!(e.contains("corrupt") && e.contains("checksum"), "{e}");
        std::fs::write(&path, &text[..text.len() - 3]).unwrap();
        let e = load_sealed::<Doc>(&path).unwrap_err().to_string();
        assert!(e.contains("corrupt") && e.contains("truncated"), "{e}");
        std::fs::write(&path, text.replace("\"checksum\":\"", "\"checksum\":\"0")).unwrap();
        assert!(matches!(
            load_sealed::<Doc>(&path),
            Err(SealedError::Corrupt(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
