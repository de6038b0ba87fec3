//! Missing entries of a table filled from a run's posterior, and the clusters' profiles
//! (`nrmm impute`).
//!
//! For a draw (a partition and hyperparameters) a missing entry `(i, j)` has the posterior
//! predictive law of column `j` given the observed entries of that column in row `i`'s
//! cluster (the columns are independent given the cluster, and under missing at random the
//! row's other entries tell nothing more about it once the cluster is fixed): Student t for
//! a real column, negative binomial for counts, the Dirichlet's predictive probabilities for
//! categories ([`Mixed::profile`]). Averaged over the run's draws after its burn-in this is
//! the entry's posterior predictive law; the filled value is its most probable level, or its
//! mean (rounded for counts), given with the level's probability, or the standard deviation.
//!
//! **With the full-covariance block** ([`Mixed::full`]) a row's real entries are not
//! independent given the cluster: a missing real entry's law given a draw's partition is the
//! conditional of the cluster's Student-t predictive given the row's observed real entries and
//! the cluster's other rows, whose own missing real entries are set to their conditional means
//! by [`BLOCK_PASSES`] Gauss-Seidel passes ([`Mixed::block_conditionals`]): a deterministic
//! stand-in for averaging over the chain's draws of them, which the draws do not record.
//!
//! Cost: per draw one statistic per cluster, O(N d), and O(levels) per missing entry; with the
//! block, [`BLOCK_PASSES`] passes of O(N d_r² + incomplete rows · d_r³).

use serde::Serialize;

use crate::data::table::{align_to, ColumnType, TableData};
use crate::data::Dataset;
use crate::diagnostics::cluster_log_probabilities;
use crate::error::{Error, Result};
use crate::kernel::mixed::{ColumnProfile, Mixed, MixedStat};
use crate::kernel::{AnyKernel, ConjugateKernel, HyperKernel};
use crate::model::Model;
use crate::partition::Partition;
use crate::predict::LabelledDraw;
use crate::run::{HyperState, RunDir, Summary};

/// Gauss-Seidel passes of the conditional means of the block's missing entries per draw
/// ([`Mixed::block_conditionals`]): enough for the fixed point to settle to far below the
/// entries' predictive spread on the benchmark tables.
pub const BLOCK_PASSES: usize = 10;

/// One filled entry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Filled {
    /// Its row, from 0.
    pub row: usize,
    /// Its column's name.
    pub column: String,
    /// The value filled in, as the table writes it.
    pub value: String,
    /// For a binary or categorical column: the filled level's posterior predictive
    /// probability.
    pub probability: Option<f64>,
    /// For a real or count column: the posterior predictive mean and standard deviation.
    pub mean: Option<f64>,
    /// See `mean`.
    pub sd: Option<f64>,
}

/// A cluster of the point estimate: its size and each column's predictive law.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClusterProfile {
    /// Its label in the point estimate.
    pub cluster: usize,
    /// Its number of rows.
    pub size: usize,
    /// Per column, by name: `{mean, sd}` or each level's probability by name.
    pub columns: serde_json::Map<String, serde_json::Value>,
}

/// A table with its missing entries filled, what was filled, and the clusters' profiles.
#[derive(Clone, Debug)]
pub struct Imputation {
    /// The table, every missing entry filled.
    pub table: TableData,
    /// The filled entries, row by row.
    pub filled: Vec<Filled>,
    /// The point estimate's clusters.
    pub profiles: Vec<ClusterProfile>,
    /// The draws averaged over.
    pub draws: usize,
}

/// What a missing entry accumulates over draws: level probabilities, or the mean and the
/// second moment.
#[derive(Clone, Debug)]
enum Acc {
    Levels(Vec<f64>),
    Moments(f64, f64),
}

/// Fills the missing entries of the table that `model` (a product-kernel model, built over
/// the run's data) holds, over the draws of `run` after `burn_in` sweeps of each chain
/// (default: the run's own), and profiles the point estimate's clusters. Errors if the
/// model's kernel is not the product kernel, the data changed since the run, or no draw is
/// left after the burn-in.
pub fn impute_run(run: &RunDir, model: &Model, burn_in: Option<u64>) -> Result<Imputation> {
    if !matches!(model.kernel, AnyKernel::Mixed(_)) {
        return Err(Error::Usage(format!(
            "imputation needs a run on a table (`kernel` mixed), but {} ran `kernel` {}",
            run.dir.display(),
            model.kernel.kind().name()
        )));
    }
    if model.fingerprint != run.record.fingerprint {
        return Err(Error::Usage(format!(
            "the data {} was run on have changed since: its draws no longer describe them",
            run.dir.display()
        )));
    }
    let report = Summary::of(std::slice::from_ref(run), burn_in)?;
    let estimate = report.point_estimate.as_ref().ok_or_else(|| {
        Error::Usage(format!(
            "{} has no partition draws after its burn-in: lower `burn_in`",
            run.dir.display()
        ))
    })?;
    let draws = report.sources.iter().flat_map(|s| match s.read() {
        Ok(d) => d.into_iter().map(|d| Ok((d.labels, d.hyper))).collect(),
        Err(e) => vec![Err(e)],
    });
    impute(model, draws, (&estimate.labels, &estimate.hyper))
}

/// Fills the missing entries of the table that `model` (a product-kernel model) holds over
/// `draws` (partitions of its rows, canonical labels `0..K`, with their hyperparameters),
/// consumed one at a time, and profiles the clusters of `estimate`, as [`impute_run`] does
/// for a run's draws (front ends that hold the draws in memory call this). Errors if the
/// model's kernel is not the product kernel, a draw's labels do not cover the table's rows,
/// or no draw is given.
pub fn impute(
    model: &Model,
    draws: impl IntoIterator<Item = Result<LabelledDraw<usize>>>,
    estimate: (&[usize], &HyperState),
) -> Result<Imputation> {
    let AnyKernel::Mixed(kernel) = &model.kernel else {
        return Err(Error::Usage(format!(
            "imputation needs a table (`kernel` mixed), but the model's kernel is {}",
            model.kernel.kind().name()
        )));
    };
    let table = kernel.table();
    let missing = missing_entries(table);
    let mut acc = accumulators(table, &missing);
    let mut n_draws = 0usize;
    for draw in draws {
        let (labels, hyper) = draw?;
        check_labels(&labels, table.n())?;
        let k = match hyper.kernel {
            Some(h) => kernel.at(&h)?,
            None => kernel.clone(),
        };
        let profiles = cluster_profiles(&k, &labels);
        let block: std::collections::HashMap<(usize, usize), ColumnProfile> = k
            .block_conditionals(&labels, BLOCK_PASSES)
            .into_iter()
            .map(|(i, j, mean, sd)| ((i, j), ColumnProfile::Number { mean, sd }))
            .collect();
        for (a, &(i, j)) in acc.iter_mut().zip(&missing) {
            let profile = block.get(&(i, j)).unwrap_or(&profiles[labels[i]][j]);
            a.add(1.0, profile);
        }
        n_draws += 1;
    }
    let (columns, filled) = fill(table, &missing, &acc, n_draws)?;
    let (labels, hyper) = estimate;
    check_labels(labels, table.n())?;
    let k = match hyper.kernel {
        Some(h) => kernel.at(&h)?,
        None => kernel.clone(),
    };
    let profiles = cluster_profiles(&k, labels)
        .into_iter()
        .enumerate()
        .map(|(c, p)| ClusterProfile {
            cluster: c,
            size: labels.iter().filter(|&&l| l == c).count(),
            columns: named_profile(table, &p),
        })
        .collect();
    Ok(Imputation {
        table: TableData::new(columns)?,
        filled,
        profiles,
        draws: n_draws,
    })
}

/// Fills the missing entries of new rows `new` (a table or a matrix, columns matched to the
/// model's table by name and levels by name, [`align_to`]) over `draws` of the model's rows
/// (canonical labels `0..K`, with their hyperparameters), consumed one at a time. Given a
/// draw, a new row joins cluster `c` with probability ∝ `κ(n_c+1)/κ(n_c) · p(x_obs | X_c)` or
/// a new cluster with probability ∝ `κ(1) · p(x_obs)`, over its observed entries
/// ([`cluster_log_probabilities`], the weights of [`crate::predict::predict`]); a missing
/// entry then follows its column's predictive law in that cluster, with the full-covariance
/// block conditional on the row's observed real entries ([`Mixed::profile_new`]). Mixed over
/// the clusters and averaged over the draws this is the entry's posterior predictive law
/// given the row's observed entries; it is filled as [`impute`] fills (the most probable
/// level; the mean, rounded for counts). The result's `table` is the new rows filled, its
/// `filled` rows count from 0 among them, and it has no `profiles`. Errors as [`impute`], and
/// if the new rows do not match the model's columns (named `` `new` ``). Cost: per draw one
/// statistic per cluster, O(N d), and per new row with a missing entry O(K) predictives and
/// profiles.
pub fn impute_new(
    model: &Model,
    new: &Dataset,
    draws: impl IntoIterator<Item = Result<LabelledDraw<usize>>>,
) -> Result<Imputation> {
    let AnyKernel::Mixed(kernel) = &model.kernel else {
        return Err(Error::Usage(format!(
            "imputation needs a table (`kernel` mixed), but the model's kernel is {}",
            model.kernel.kind().name()
        )));
    };
    let rows = align_to(new, kernel.table())?;
    let missing = missing_entries(&rows);
    let mut acc = accumulators(&rows, &missing);
    let mut n_draws = 0usize;
    for draw in draws {
        let (labels, hyper) = draw?;
        check_labels(&labels, kernel.table().n())?;
        let k = match hyper.kernel {
            Some(h) => kernel.at(&h)?,
            None => kernel.clone(),
        };
        let prior = model.prior.at(hyper.prior)?;
        let partition = Partition::from_labels(&k, &labels)?;
        let ln_probs = cluster_log_probabilities(&k, &partition, &prior, &rows)?;
        let empty = k.empty_stat();
        let stats: Vec<&MixedStat> = partition
            .slots_by_key()
            .iter()
            .map(|&s| partition.cluster(s).expect("a live slot").stat())
            .chain(std::iter::once(&empty))
            .collect();
        // Each new row's options, made once per row with a missing entry.
        let mut row: Option<usize> = None;
        let mut options: Vec<RowOption> = Vec::new();
        for (a, &(i, j)) in acc.iter_mut().zip(&missing) {
            if row != Some(i) {
                options = stats
                    .iter()
                    .zip(&ln_probs[i])
                    .map(|(s, &ln_p)| Ok((ln_p.exp(), k.profile_new(&rows, i, s)?)))
                    .collect::<Result<_>>()?;
                row = Some(i);
            }
            for (w, profile) in &options {
                a.add(*w, &profile[j]);
            }
        }
        n_draws += 1;
    }
    let (columns, filled) = fill(&rows, &missing, &acc, n_draws)?;
    Ok(Imputation {
        table: TableData::new(columns)?,
        filled,
        profiles: Vec::new(),
        draws: n_draws,
    })
}

/// A new row's cluster (or a new one) as an option for its missing entries: its probability
/// and the cluster's profile for the row.
type RowOption = (f64, Vec<ColumnProfile>);

/// The missing entries of `table`, row by row, as `(row, column)`.
fn missing_entries(table: &TableData) -> Vec<(usize, usize)> {
    (0..table.n())
        .flat_map(|i| (0..table.d()).map(move |j| (i, j)))
        .filter(|&(i, j)| table.value(i, j).is_none())
        .collect()
}

/// An empty accumulator for each missing entry, by its column's kind.
fn accumulators(table: &TableData, missing: &[(usize, usize)]) -> Vec<Acc> {
    missing
        .iter()
        .map(|&(_, j)| match table.columns()[j].kind.has_levels() {
            true => Acc::Levels(vec![0.0; table.columns()[j].n_levels()]),
            false => Acc::Moments(0.0, 0.0),
        })
        .collect()
}

impl Acc {
    /// Adds a profile's law with weight `w`.
    fn add(&mut self, w: f64, profile: &ColumnProfile) {
        match (self, profile) {
            (Acc::Levels(p), ColumnProfile::Levels(q)) => {
                p.iter_mut().zip(q).for_each(|(p, q)| *p += w * q)
            }
            (Acc::Moments(m1, m2), ColumnProfile::Number { mean, sd }) => {
                *m1 += w * mean;
                *m2 += w * (sd * sd + mean * mean);
            }
            _ => unreachable!("a column's profile has its column's kind"),
        }
    }
}

/// `table`'s columns with the missing entries filled from their accumulators over `draws`
/// draws, and the filled entries. Errors without draws.
fn fill(
    table: &TableData,
    missing: &[(usize, usize)],
    acc: &[Acc],
    draws: usize,
) -> Result<(Vec<crate::data::table::Column>, Vec<Filled>)> {
    if draws == 0 {
        return Err(Error::Empty(
            "imputation needs at least one partition draw".into(),
        ));
    }
    let mut columns = table.columns().to_vec();
    let mut filled = Vec::with_capacity(missing.len());
    for (a, &(i, j)) in acc.iter().zip(missing) {
        let c = &mut columns[j];
        let (value, probability, mean, sd) = match a {
            Acc::Levels(p) => {
                let (best, &mass) = p
                    .iter()
                    .enumerate()
                    .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
                    .expect("a column has a level");
                (best as f64, Some(mass / draws as f64), None, None)
            }
            Acc::Moments(m1, m2) => {
                let mean = m1 / draws as f64;
                let sd = (m2 / draws as f64 - mean * mean).max(0.0).sqrt();
                let value = if c.kind == ColumnType::Count {
                    mean.round()
                } else {
                    mean
                };
                (value, None, Some(mean), Some(sd))
            }
        };
        c.values[i] = value;
        filled.push(Filled {
            row: i,
            column: c.name.clone(),
            value: c.show(value),
            probability,
            mean,
            sd,
        });
    }
    Ok((columns, filled))
}

/// Errors unless `labels` labels the table's `n` rows.
fn check_labels(labels: &[usize], n: usize) -> Result<()> {
    if labels.len() != n {
        return Err(Error::DimensionMismatch(format!(
            "a partition of {} rows given for a table of {n} rows",
            labels.len()
        )));
    }
    Ok(())
}

/// Each cluster's profile under `labels` (`0..K`). Cost: O(N d).
fn cluster_profiles(k: &Mixed, labels: &[usize]) -> Vec<Vec<ColumnProfile>> {
    let n_clusters = labels.iter().max().map_or(0, |m| m + 1);
    let mut stats = vec![k.empty_stat(); n_clusters];
    for (i, &l) in labels.iter().enumerate() {
        k.add(&mut stats[l], i);
    }
    stats.iter().map(|s| k.profile_stat(s)).collect()
}

/// A profile as JSON by column name, levels by name.
fn named_profile(
    table: &TableData,
    p: &[ColumnProfile],
) -> serde_json::Map<String, serde_json::Value> {
    table
        .columns()
        .iter()
        .zip(p)
        .map(|(c, p)| {
            let v = match p {
                ColumnProfile::Number { mean, sd } => serde_json::json!({ "mean": mean, "sd": sd }),
                ColumnProfile::Levels(q) => serde_json::Value::Object(
                    q.iter()
                        .enumerate()
                        .map(|(l, q)| (c.show(l as f64), serde_json::json!(q)))
                        .collect(),
                ),
            };
            (c.name.clone(), v)
        })
        .collect()
}

impl Imputation {
    /// The filled entries as CSV: `row,column,value,probability,mean,sd` (rows from 1, as
    /// lines of the table after its header; empty fields where they do not apply).
    pub fn filled_csv(&self) -> String {
        let mut out = String::from("row,column,value,probability,mean,sd\n");
        let show = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
        let quote = |s: &str| {
            if s.contains([',', '"']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        for f in &self.filled {
            out.push_str(&format!(
                "{},{},{},{},{},{}\n",
                f.row + 1,
                quote(&f.column),
                quote(&f.value),
                show(f.probability),
                show(f.mean),
                show(f.sd)
            ));
        }
        out
    }
}
