//! A run directory: `run.json` ([`RunRecord`]: everything needed to rebuild the run: where the
//! data came from and their [`Fingerprint`], the model, the [`SamplerSpec`]), and per chain
//! `chain-<i>/` with its trace, draws, final labels, end state, best state and checkpoint.

use super::checkpoint::{load_json, write_atomic, Fnv1a};
use super::spec::SamplerSpec;
use crate::data::load::{self, DenseOptions, Format, LoadOptions, Loaded};
pub use crate::data::Fingerprint;
use crate::data::{generate, Dataset};
use crate::error::{Error, Result};
use crate::model::ModelSpec;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` of `run.json` files this version writes and reads.
pub const RUN_FORMAT: &str = "nrmm-run/1";

/// The `format` of checkpoint files this version writes and reads.
pub const CHECKPOINT_FORMAT: &str = "nrmm-checkpoint/1";

/// The file of a directory of runs (a comparison) that lists them, so that runs of an earlier
/// comparison left in the same directory are not mistaken for its own.
pub const RUNS_FILE: &str = "compare.json";

/// The hash of a string, for run identities: its bytes in little-endian 64-bit words (the
/// last zero-padded), then its length.
pub fn hash_text(text: &str) -> u64 {
    let mut h = Fnv1a::new();
    for chunk in text.as_bytes().chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h.word(u64::from_le_bytes(word));
    }
    h.word(text.len() as u64);
    h.finish()
}

/// Where a run's data came from, as a front end recorded it, so that it can read them again
/// to resume the run or predict from it. The fingerprint, not this record, decides whether
/// data are the run's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataSource {
    /// The data file (absolute; `-` for standard input), or `None` for data given otherwise
    /// (in memory, or a front end's built-in data set).
    pub data: Option<PathBuf>,
    /// The file's format, if given.
    pub data_format: Option<Format>,
    /// Whether the first line of dense text is a header even if it holds numbers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub data_header: bool,
    /// The columns left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip_columns: Vec<String>,
    /// Column types given (`name:type`), which make the file a typed table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub column_types: Vec<String>,
}

/// `path` made absolute against the working directory (not resolving links).
pub fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// What [`DataSource::data`] names standard input with.
pub const STDIN: &str = "-";

/// The built-in data set a front end reads when a source names no file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// The seeded 13-cluster 2-D mixture ([`generate::toy_like`] with seed 1).
    Toy,
    /// Data set B of MATH §5.3 ([`generate::data_set_b`], 7 points).
    SetB,
}

impl DataSource {
    /// The source with its file made absolute (standard input stays `-`), as a run records
    /// it, so that the run can be resumed or read from any directory.
    pub fn absolute(mut self) -> Result<Self> {
        if let Some(p) = self.data.as_mut().filter(|p| p.as_os_str() != STDIN) {
            *p = absolute(p)?;
        }
        Ok(self)
    }

    /// The true labels of the data's `n` points: those of the file `labels` when given, else,
    /// when the source names no file, those of the built-in [`Builtin::Toy`] set; else `None`.
    /// Cost: reading the labels file, or drawing the built-in set (O(n)).
    pub fn truth(&self, labels: Option<&Path>, n: usize) -> Result<Option<Vec<i64>>> {
        Ok(match (labels, &self.data) {
            (Some(path), _) => Some(load::load_labels(path, n)?),
            (None, None) => Some(generate::toy_like(1).1.iter().map(|&l| l as i64).collect()),
            (None, Some(_)) => None,
        })
    }

    /// The source of another file, read as this one's is (the same header and skipped
    /// columns), in `format` (detected when `None`).
    pub fn other_file(&self, data: PathBuf, format: Option<Format>) -> DataSource {
        DataSource {
            data: Some(data),
            data_format: format,
            ..self.clone()
        }
    }

    /// The data: the file read as [`DataSource::load_options`] says (standard input for
    /// [`STDIN`]), or without a file the `builtin` data set. Errors if the file cannot be
    /// read, or if reading options are given without a file (the built-in set has none).
    pub fn load(&self, builtin: Builtin) -> Result<Loaded> {
        let opts = self.load_options();
        match &self.data {
            Some(path) if path.as_os_str() == STDIN => {
                let stdin = Path::new("<stdin>");
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes).map_err(
                    |source| Error::Io {
                        path: stdin.into(),
                        source,
                    },
                )?;
                load::parse_dataset_named(&bytes, stdin, &opts)
            }
            Some(path) => load::load_dataset_with(path, &opts),
            None => {
                let given = [
                    (self.data_format.is_some(), "data_format"),
                    (self.data_header, "data_header"),
                    (!self.skip_columns.is_empty(), "skip_columns"),
                    (!self.column_types.is_empty(), "column_types"),
                ];
                if let Some((_, name)) = given.iter().find(|g| g.0) {
                    return Err(Error::Usage(format!(
                        "`{name}` needs `data`: the built-in data set has no file"
                    )));
                }
                Ok(Loaded {
                    dataset: Dataset::Dense(match builtin {
                        Builtin::Toy => generate::toy_like(1).0,
                        Builtin::SetB => generate::data_set_b(),
                    }),
                    columns: None,
                })
            }
        }
    }

    /// How the file is read.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            format: self.data_format,
            dense: DenseOptions {
                header: self.data_header,
                skip_columns: self.skip_columns.clone(),
                types: self.column_types.clone(),
            },
        }
    }
}

/// Everything `run.json` records about a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// [`RUN_FORMAT`].
    pub format: String,
    /// How the run was started, then how it was resumed, as the front end records it (the
    /// command lines).
    pub commands: Vec<Vec<String>>,
    /// Where the data came from.
    #[serde(flatten)]
    pub source: DataSource,
    /// What identifies the data.
    pub fingerprint: Fingerprint,
    /// The model as asked for (defaults unresolved). It also gives the run's initial prior,
    /// rebuilt from it when a run is resumed: tgmcmc builds its canonical trees at it whatever
    /// the checkpoint's hyperparameters are, so nothing more about it needs storing.
    pub model: ModelSpec,
    /// What runs.
    #[serde(flatten)]
    pub spec: SamplerSpec,
}

/// The parts of a run that a chain's trajectory depends on, which a checkpoint must match to be
/// resumed under these settings.
#[derive(Serialize)]
struct Identity<'a> {
    format: &'a str,
    fingerprint: &'a Fingerprint,
    model: &'a ModelSpec,
    sampler: &'a super::spec::SamplerSettings,
    seed: u64,
    chain: u64,
    init: &'a super::spec::Start,
    thin: u64,
    checkpoint_every: Option<u64>,
    draws_per_chain: usize,
}

impl RunRecord {
    /// The record of a new run.
    pub fn new(
        model: ModelSpec,
        spec: SamplerSpec,
        fingerprint: Fingerprint,
        source: DataSource,
    ) -> Self {
        RunRecord {
            format: RUN_FORMAT.to_string(),
            commands: Vec::new(),
            source,
            fingerprint,
            model,
            spec,
        }
    }

    /// The identity of chain `chain` of this run: a hash of everything its trajectory depends
    /// on, recorded in its checkpoints.
    pub fn chain_identity(&self, chain: u64) -> Result<String> {
        let s = &self.spec;
        let id = Identity {
            format: CHECKPOINT_FORMAT,
            fingerprint: &self.fingerprint,
            model: &self.model,
            sampler: &s.sampler,
            seed: s.seed,
            chain,
            init: &s.init,
            thin: s.thin,
            checkpoint_every: s.checkpoint_every,
            draws_per_chain: s.draws_per_chain,
        };
        let text = serde_json::to_string(&id)
            .map_err(|e| Error::Usage(format!("cannot record the run's settings: {e}")))?;
        Ok(format!("{:016x}", hash_text(&text)))
    }

    /// What makes chain `chain` of this run the same random sequence of states as a chain of
    /// another run: data, model, sampler, seed, chain index and start (thinning and checkpoints
    /// only change what is recorded). Two chains with the same key must not be merged.
    pub fn stream_key(&self, chain: u64) -> String {
        let key = serde_json::json!([
            self.fingerprint,
            self.model,
            self.spec.sampler,
            self.spec.seed,
            chain,
            self.spec.init,
        ]);
        format!("{:016x}", hash_text(&key.to_string()))
    }

    /// Writes `dir/run.json` atomically.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let path = dir.join("run.json");
        let text = serde_json::to_string_pretty(self).map_err(|e| {
            Error::Usage(format!(
                "cannot record the run's settings in {}: {e} (file names must be UTF-8 to be \
                 recorded)",
                path.display()
            ))
        })?;
        write_atomic(&path, text.as_bytes())
    }

    /// Reads `dir/run.json`, with errors that say what is wrong with the directory.
    pub fn load(dir: &Path) -> Result<Self> {
        if !dir.is_dir() {
            return Err(Error::Usage(format!(
                "{} is not a directory: expected the directory of an earlier run",
                dir.display()
            )));
        }
        let path = dir.join("run.json");
        if !path.is_file() {
            return Err(Error::Usage(format!(
                "{} is not a run directory: it has no run.json (expected the directory of an \
                 earlier run)",
                dir.display()
            )));
        }
        let value: serde_json::Value = load_json(&path)?;
        let format = value.get("format").and_then(|f| f.as_str()).unwrap_or("");
        if format != RUN_FORMAT {
            return Err(Error::Usage(format!(
                "{} is not a run file this version of nrmm reads (format {format:?}, expected \
                 {RUN_FORMAT:?})",
                path.display()
            )));
        }
        serde_json::from_value(value)
            .map_err(|e| Error::parse(&path, 0, format!("not a valid run file: {e}")))
    }
}

/// The directory of chain `chain` inside run directory `dir`.
pub fn chain_dir(dir: &Path, chain: u64) -> PathBuf {
    dir.join(format!("chain-{chain}"))
}

/// One run directory with its record.
#[derive(Clone, Debug)]
pub struct RunDir {
    /// The directory.
    pub dir: PathBuf,
    /// Its `run.json`.
    pub record: RunRecord,
}

impl RunDir {
    /// The run in `dir`.
    pub fn open(dir: &Path) -> Result<Self> {
        Ok(RunDir {
            dir: dir.to_path_buf(),
            record: RunRecord::load(dir)?,
        })
    }

    /// The runs named by `dirs`: each is a run directory, a directory of runs (those its
    /// [`RUNS_FILE`] lists), or a directory whose immediate subdirectories include run
    /// directories, which are taken in name order.
    pub fn resolve(dirs: &[PathBuf]) -> Result<Vec<RunDir>> {
        let mut runs = Vec::new();
        for dir in dirs {
            if dir.join("run.json").is_file() || !dir.is_dir() {
                runs.push(RunDir::open(dir)?);
                continue;
            }
            let listed = dir.join(RUNS_FILE);
            let subs: Vec<PathBuf> = if listed.is_file() {
                let names: Vec<String> = load_json::<serde_json::Value>(&listed)?
                    .get("runs")
                    .and_then(|r| serde_json::from_value(r.clone()).ok())
                    .ok_or_else(|| {
                        Error::parse(
                            &listed,
                            0,
                            "expected a list of run directories under `runs`",
                        )
                    })?;
                names.iter().map(|n| dir.join(n)).collect()
            } else {
                let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
                    .map_err(|source| Error::Io {
                        path: dir.clone(),
                        source,
                    })?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.join("run.json").is_file())
                    .collect();
                found.sort();
                found
            };
            if subs.is_empty() {
                return Err(Error::Usage(format!(
                    "{} holds no run: neither it nor its subdirectories have a run.json \
                     (expected the directory of a run or of a comparison)",
                    dir.display()
                )));
            }
            for sub in subs {
                runs.push(RunDir::open(&sub)?);
            }
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Dataset, DenseData};

    #[test]
    fn records_round_trip() {
        let record = RunRecord::new(
            ModelSpec::default(),
            SamplerSpec::default(),
            Fingerprint::of(&Dataset::Dense(DenseData::new(1, 1, vec![1.0]).unwrap())),
            DataSource::default(),
        );
        let text = serde_json::to_string(&record).unwrap();
        assert!(!text.contains("kernel_hyperpriors"), "{text}");
        let back: RunRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, record);
    }
}
