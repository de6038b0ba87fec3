//! A run directory: `run.json` (everything needed to rebuild the run: data, model, sampler,
//! seed, chains, budget), and per chain `chain-<i>/` with its trace, draws, final labels,
//! end state, best state and checkpoint.

use crate::args::{FormatArg, InitArg, ModelArgs, SamplerArgs};
use crate::progress::Budget;
use nrmm::data::Dataset;
use nrmm::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` of `run.json` files this version writes and reads.
pub const RUN_FORMAT: &str = "nrmm-run/1";

/// The `format` of checkpoint files this version writes and reads.
pub const CHECKPOINT_FORMAT: &str = "nrmm-checkpoint/1";

/// Partition draws kept per chain at the coarsest spacing (see `nrmm::run::draws`): enough for
/// a posterior similarity estimate, small enough that draws × n labels fit in memory.
pub const DRAWS_PER_CHAIN: usize = 256;

/// What identifies the data a run was made on: size, dimension and a hash of every value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Points or documents.
    pub n: usize,
    /// Dimension or vocabulary size.
    pub dim: usize,
    /// FNV-1a hash of the values (bit patterns of reals; ids and counts of sparse rows), in
    /// hexadecimal.
    pub hash: String,
}

impl Fingerprint {
    /// The fingerprint of `data`. Cost O(values).
    pub fn of(data: &Dataset) -> Self {
        let mut h = Fnv::new();
        let (n, dim) = match data {
            Dataset::Dense(x) => {
                h.word(0);
                for &v in x.values() {
                    h.word(v.to_bits());
                }
                (x.n(), x.d())
            }
            Dataset::Counts(c) => {
                h.word(1);
                for i in 0..c.n() {
                    let (ids, counts) = c.row(i);
                    h.word(ids.len() as u64);
                    for (&w, &k) in ids.iter().zip(counts) {
                        h.word((u64::from(w) << 32) | u64::from(k));
                    }
                }
                (c.n(), c.vocab())
            }
        };
        h.word(n as u64);
        h.word(dim as u64);
        Fingerprint {
            n,
            dim,
            hash: format!("{:016x}", h.0),
        }
    }
}

/// The 64-bit FNV-1a hash, fed with 64-bit words in little-endian bytes.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn word(&mut self, w: u64) {
        for b in w.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The hash of a string, for run identities.
pub fn hash_text(text: &str) -> u64 {
    let mut h = Fnv::new();
    for chunk in text.as_bytes().chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h.word(u64::from_le_bytes(word));
    }
    h.word(text.len() as u64);
    h.0
}

/// Everything `run.json` records about a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// [`RUN_FORMAT`].
    pub format: String,
    /// The command line that started the run, then those that resumed it.
    pub commands: Vec<Vec<String>>,
    /// The data file (absolute), or `None` for the built-in data set.
    pub data: Option<PathBuf>,
    /// The data file's format, if given.
    pub data_format: Option<FormatArg>,
    /// Whether `--header` was given.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub data_header: bool,
    /// The columns `--skip-columns` left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip_columns: Vec<String>,
    /// What identifies the data.
    pub fingerprint: Fingerprint,
    /// The model flags. They also give the run's initial prior, rebuilt from them when a run
    /// is resumed: tgmcmc builds its canonical trees at it whatever the checkpoint's
    /// hyperparameters are, so nothing more about it needs storing.
    pub model: ModelArgs,
    /// The sampler.
    pub sampler: SamplerArgs,
    /// The seed.
    pub seed: u64,
    /// The index of the first chain.
    pub chain_offset: u64,
    /// Number of chains.
    pub chains: usize,
    /// The initial clustering (a labels file by absolute path).
    pub init: InitArg,
    /// Every thin-th sweep is traced.
    pub thin: u64,
    /// When chains stop.
    pub budget: Budget,
    /// Sweeps left out of diagnostics (`None`: half of each chain).
    pub burn_in: Option<u64>,
    /// Sweeps between checkpoints (`None`: no checkpoints).
    pub checkpoint_every: Option<u64>,
    /// Draws kept per chain.
    pub draws_per_chain: usize,
}

/// The parts of the settings that a chain's trajectory depends on, which a checkpoint must
/// match to be resumed under these settings.
#[derive(Serialize)]
struct Identity<'a> {
    format: &'a str,
    fingerprint: &'a Fingerprint,
    model: &'a ModelArgs,
    sampler: &'a SamplerArgs,
    seed: u64,
    chain: u64,
    init: &'a InitArg,
    thin: u64,
    checkpoint_every: Option<u64>,
    draws_per_chain: usize,
}

impl RunSettings {
    /// The data flags that read the run's data again.
    pub fn data_args(&self) -> crate::args::DataArgs {
        crate::args::DataArgs {
            data: self.data.clone(),
            format: self.data_format,
            header: self.data_header,
            skip_columns: self.skip_columns.clone(),
        }
    }

    /// The chain indices of the run.
    pub fn chain_indices(&self) -> std::ops::Range<u64> {
        self.chain_offset..self.chain_offset + self.chains as u64
    }

    /// The identity of chain `chain` of this run: a hash of everything its trajectory depends
    /// on, recorded in its checkpoints.
    pub fn chain_identity(&self, chain: u64) -> Result<String> {
        let id = Identity {
            format: CHECKPOINT_FORMAT,
            fingerprint: &self.fingerprint,
            model: &self.model,
            sampler: &self.sampler,
            seed: self.seed,
            chain,
            init: &self.init,
            thin: self.thin,
            checkpoint_every: self.checkpoint_every,
            draws_per_chain: self.draws_per_chain,
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
            self.sampler,
            self.seed,
            chain,
            self.init,
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
        nrmm::run::write_atomic(&path, text.as_bytes())
    }

    /// Reads `dir/run.json`, with errors that say what is wrong with the directory.
    pub fn load(dir: &Path) -> Result<Self> {
        if !dir.is_dir() {
            return Err(Error::Usage(format!(
                "{} is not a directory: expected the --out directory of an earlier nrmm run",
                dir.display()
            )));
        }
        let path = dir.join("run.json");
        if !path.is_file() {
            return Err(Error::Usage(format!(
                "{} is not a run directory: it has no run.json (expected the --out directory \
                 of an earlier nrmm run)",
                dir.display()
            )));
        }
        let value: serde_json::Value = nrmm::run::load_json(&path)?;
        let format = value.get("format").and_then(|f| f.as_str()).unwrap_or("");
        if format != RUN_FORMAT {
            return Err(Error::Usage(format!(
                "{} is not a run file this version of nrmm reads (format `{format}`, expected \
                 `{RUN_FORMAT}`)",
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

/// One run directory with its settings.
#[derive(Clone, Debug)]
pub struct RunDir {
    /// The directory.
    pub dir: PathBuf,
    /// Its `run.json`.
    pub settings: RunSettings,
}

/// The file of a comparison directory that lists its runs (so that runs of an earlier
/// comparison left in the same directory are not mistaken for its own).
pub const COMPARE_FILE: &str = "compare.json";

/// The run directories named by `dirs`: each is a run directory, a comparison directory (the
/// runs its [`COMPARE_FILE`] lists), or a directory whose immediate subdirectories include
/// run directories, which are taken in name order.
pub fn resolve(dirs: &[PathBuf]) -> Result<Vec<RunDir>> {
    let mut runs = Vec::new();
    for dir in dirs {
        if dir.join("run.json").is_file() || !dir.is_dir() {
            runs.push(RunDir {
                dir: dir.clone(),
                settings: RunSettings::load(dir)?,
            });
            continue;
        }
        let listed = dir.join(COMPARE_FILE);
        let mut subs: Vec<PathBuf> = if listed.is_file() {
            let names: Vec<String> = nrmm::run::load_json::<serde_json::Value>(&listed)?
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
                "{} holds no run: neither it nor its subdirectories have a run.json (expected \
                 the --out directory of nrmm run or nrmm compare)",
                dir.display()
            )));
        }
        for sub in subs.drain(..) {
            let settings = RunSettings::load(&sub)?;
            runs.push(RunDir { dir: sub, settings });
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrmm::data::{DenseData, SparseCounts};

    #[test]
    fn fingerprints_tell_data_apart() {
        let a = Dataset::Dense(DenseData::new(2, 2, vec![1.0, 2.0, 3.0, 4.0]).unwrap());
        let b = Dataset::Dense(DenseData::new(2, 2, vec![1.0, 2.0, 3.0, 4.5]).unwrap());
        let c = Dataset::Dense(DenseData::new(4, 1, vec![1.0, 2.0, 3.0, 4.0]).unwrap());
        let s = Dataset::Counts(SparseCounts::from_rows(5, &[vec![(0, 1)], vec![(4, 2)]]).unwrap());
        let t = Dataset::Counts(SparseCounts::from_rows(5, &[vec![(0, 1)], vec![(4, 3)]]).unwrap());
        let prints = [&a, &b, &c, &s, &t].map(Fingerprint::of);
        for i in 0..prints.len() {
            for j in i + 1..prints.len() {
                assert_ne!(prints[i], prints[j], "{i} {j}");
            }
        }
        assert_eq!(Fingerprint::of(&a), prints[0]);
        assert_ne!(hash_text("ab"), hash_text("ab\0"));
    }
}
