//! Synthetic data sets from one typed description: a partition (uniform over a fixed number of
//! clusters, or from the Dirichlet process's CRP, the NGGP's or Pitman-Yor's urn, or the
//! mixture of finite mixtures), then Gaussian data from
//! Normal-Wishart clusters or bags of words from Dirichlet-multinomial clusters, every draw
//! from one seed. What the command line's `generate` writes.

use super::generate::{
    bag_of_words, gaussian_mixture, partition_crp, partition_mfm, partition_nggp,
    partition_pitman_yor, partition_uniform, DocLengths, NormalWishartSampler,
};
use super::{load, Dataset};
use crate::error::{Error, Result};
use crate::prior::KPrior;
use std::path::Path;

/// The kind of data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyntheticKind {
    /// A Gaussian mixture; each cluster's mean and precision drawn from a Normal-Wishart with
    /// ξ = 0, Ψ = I, r = 0.02, ν = d + 3.
    Gaussian,
    /// Bags of words from Dirichlet-multinomial clusters.
    Counts,
}

/// Where the partition comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PartitionSource {
    /// Each point's cluster drawn uniformly among `k`.
    Uniform {
        /// Number of clusters.
        k: usize,
    },
    /// The Chinese restaurant process with concentration `alpha`.
    Crp {
        /// Concentration.
        alpha: f64,
    },
    /// The NGGP's Gibbs-type urn.
    Nggp {
        /// Concentration.
        alpha: f64,
        /// Discount.
        sigma: f64,
    },
    /// The Pitman-Yor process's urn ([`partition_pitman_yor`]).
    PitmanYor {
        /// Concentration `θ > -σ`.
        theta: f64,
        /// Discount in `[0, 1)`.
        sigma: f64,
    },
    /// The mixture of finite mixtures by its definition ([`partition_mfm`]).
    Mfm {
        /// The Dirichlet parameter.
        gamma: f64,
        /// The prior on the number of components.
        k_prior: KPrior,
    },
}

impl PartitionSource {
    /// `k` uniform clusters when `k` is given; else the DP's CRP, or with `nggp` the NGGP's
    /// urn, with concentration `alpha` (default 1) and discount `sigma` (default 0.5). Errors
    /// if `sigma` is given without `nggp`.
    pub fn of(
        k: Option<usize>,
        nggp: bool,
        alpha: Option<f64>,
        sigma: Option<f64>,
    ) -> Result<Self> {
        if sigma.is_some() && !nggp {
            return Err(Error::Usage(
                "`sigma` is the NGGP discount: add `prior` nggp".into(),
            ));
        }
        let alpha = alpha.unwrap_or(1.0);
        Ok(match k {
            Some(k) => PartitionSource::Uniform { k },
            None if nggp => PartitionSource::Nggp {
                alpha,
                sigma: sigma.unwrap_or(0.5),
            },
            None => PartitionSource::Crp { alpha },
        })
    }
}

/// A synthetic data set to draw. Errors name the fields (`n`, `d`, `k`, `alpha`, `sigma`,
/// `beta`, `doc_length`).
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticSpec {
    /// What to generate.
    pub kind: SyntheticKind,
    /// Number of points or documents, at least 1.
    pub n: usize,
    /// Dimension, or vocabulary size, at least 1.
    pub d: usize,
    /// The partition.
    pub partition: PartitionSource,
    /// Dirichlet concentration of each cluster's word distribution (counts only; default
    /// [`DEFAULT_WORD_BETA`]).
    pub beta: Option<f64>,
    /// Mean document length, at least 1 (counts only; default 50).
    pub doc_length: Option<f64>,
    /// The seed of every draw.
    pub seed: u64,
}

/// A drawn data set.
#[derive(Clone, Debug)]
pub struct Synthetic {
    /// The data.
    pub data: Dataset,
    /// The cluster of each point (`0..`, possibly with empty clusters).
    pub labels: Vec<usize>,
    /// Clusters holding at least one point.
    pub n_clusters: usize,
}

/// Most 8-byte values a data set may hold at once (2 GiB): beyond it a typo in `n` or `d`
/// would end in an allocation failure (an abort, not an error).
const MAX_VALUES: f64 = (1u64 << 28) as f64;

/// Dirichlet concentration of the word distributions when none is given (the
/// Multinomial-Dirichlet kernel's default β too).
pub const DEFAULT_WORD_BETA: f64 = 0.1;

/// Mean document length when none is given.
const DEFAULT_DOC_LENGTH: f64 = 50.0;

impl Synthetic {
    /// Writes the data to `data` (dense text, or UCI docword for counts) and, when given, the
    /// labels 1-based to `labels`, one per line; a missing parent directory is created first
    /// (a parent that exists as something else is left to the write to report). Cost: O(size).
    pub fn write(&self, data: &Path, labels: Option<&Path>) -> Result<()> {
        for path in std::iter::once(data).chain(labels) {
            if let Some(parent) = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty() && !p.exists())
            {
                load::create_dir(parent)?;
            }
        }
        match &self.data {
            Dataset::Dense(x) => load::write_dense(data, x)?,
            Dataset::Counts(c) => load::write_docword(data, c)?,
            Dataset::Table(t) => super::table::write_table(data, t)?,
        }
        if let Some(path) = labels {
            let one_based: Vec<usize> = self.labels.iter().map(|l| l + 1).collect();
            load::write_labels(path, &one_based)?;
        }
        Ok(())
    }
}

impl SyntheticSpec {
    /// Values held at once for `k` clusters: the data plus, per cluster, a `d × d` precision
    /// factor and a mean (Gaussian) or a `d`-word distribution (counts; each document keeps at
    /// most `min(length, d)` id-count pairs).
    fn values(&self, k: usize) -> f64 {
        let (n, d, k) = (self.n as f64, self.d as f64, k as f64);
        match self.kind {
            SyntheticKind::Gaussian => n * d + k * (d * d + d) + d * d,
            SyntheticKind::Counts => {
                let len = self.doc_length.unwrap_or(DEFAULT_DOC_LENGTH);
                k * d + 2.0 * n * len.min(d)
            }
        }
    }

    /// Draws the data set. Cost: O(n d²) for Gaussian data, O(K d + Σ lengths) for counts.
    pub fn generate(&self) -> Result<Synthetic> {
        if self.kind == SyntheticKind::Gaussian
            && (self.beta.is_some() || self.doc_length.is_some())
        {
            return Err(Error::Usage(
                "`beta` and `doc_length` shape bags of words: they apply to counts only".into(),
            ));
        }
        if self.n == 0 {
            return Err(Error::param("n", 0, "at least 1 point"));
        }
        if self.d == 0 {
            return Err(Error::param("d", 0, "at least 1"));
        }
        // The labels alone hold n values; the full check needs the number of clusters.
        if self.n as f64 > MAX_VALUES {
            return Err(Error::param(
                "n",
                self.n,
                &format!("at most {MAX_VALUES} points"),
            ));
        }
        let rename = |e: Error| {
            e.rename_parameters(&|name| match name {
                "mean document length" => Some("doc_length".into()),
                "vocab" => Some("d".into()),
                _ => None,
            })
        };
        let mut rng = crate::rng::SeedPlan::new(self.seed).chain(0);
        let labels = match self.partition {
            PartitionSource::Uniform { k } => partition_uniform(self.n, k, &mut rng),
            PartitionSource::Crp { alpha } => partition_crp(self.n, alpha, &mut rng),
            PartitionSource::Nggp { alpha, sigma } => {
                partition_nggp(self.n, alpha, sigma, &mut rng)
            }
            PartitionSource::PitmanYor { theta, sigma } => {
                partition_pitman_yor(self.n, theta, sigma, &mut rng)
            }
            PartitionSource::Mfm { gamma, k_prior } => {
                partition_mfm(self.n, gamma, &k_prior, &mut rng)
            }
        }?;
        // Labels are 0..k with possibly empty clusters (a fixed k draws each point's cluster
        // uniformly), so both counts are taken from them.
        let slots = labels.iter().max().map_or(0, |m| m + 1);
        let values = self.values(slots);
        if values > MAX_VALUES {
            let gib = |v: f64| v * 8.0 / (1u64 << 30) as f64;
            return Err(Error::TooLarge(format!(
                "`n` {} with `d` {} in {slots} clusters needs about {:.1} GiB; at most {:.0} \
                 GiB: lower `n` or `d`",
                self.n,
                self.d,
                gib(values),
                gib(MAX_VALUES)
            )));
        }
        let data = match self.kind {
            SyntheticKind::Gaussian => {
                let d = self.d;
                let mut psi = vec![0.0; d * d];
                for i in 0..d {
                    psi[i * d + i] = 1.0;
                }
                let nw = NormalWishartSampler::new(&vec![0.0; d], &psi, 0.02, d as f64 + 3.0)?;
                Dataset::Dense(gaussian_mixture(&labels, &nw, &mut rng)?.0)
            }
            SyntheticKind::Counts => {
                let mean = self.doc_length.unwrap_or(DEFAULT_DOC_LENGTH);
                let beta = self.beta.unwrap_or(DEFAULT_WORD_BETA);
                let lengths = DocLengths::Poisson { mean };
                let (c, _) =
                    bag_of_words(&labels, self.d, beta, lengths, &mut rng).map_err(rename)?;
                Dataset::Counts(c)
            }
        };
        let mut used = vec![false; slots];
        for &l in &labels {
            used[l] = true;
        }
        let n_clusters = used.iter().filter(|&&u| u).count();
        Ok(Synthetic {
            data,
            labels,
            n_clusters,
        })
    }
}
