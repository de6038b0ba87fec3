//! Settings chosen by name from a fixed list (a kernel, a prior, a file format, a sampler):
//! each choice with its name and one line on what it is, so that every front end lists,
//! parses and describes them alike.

use crate::data::load::Format;
use crate::data::synthetic::SyntheticKind;
use crate::model::{KernelKind, NwDefaults, PriorKind, RealColumns};
use crate::run::SamplerKind;

/// A setting chosen by name from a fixed list.
pub trait Choice: Copy + Send + Sync + 'static {
    /// Every choice, in the order front ends list them.
    const ALL: &'static [Self];

    /// Its name, as front ends parse and show it.
    fn name(self) -> &'static str;

    /// One line on what it is.
    fn about(self) -> &'static str;

    /// The choice named `name`, if there is one.
    fn named(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.name() == name)
    }
}

impl Choice for KernelKind {
    const ALL: &'static [Self] = KernelKind::ALL;

    fn name(self) -> &'static str {
        KernelKind::name(self)
    }

    fn about(self) -> &'static str {
        KernelKind::about(self)
    }
}

impl Choice for RealColumns {
    const ALL: &'static [Self] = &[RealColumns::Independent, RealColumns::Full];

    fn name(self) -> &'static str {
        match self {
            RealColumns::Independent => "independent",
            RealColumns::Full => "full",
        }
    }

    fn about(self) -> &'static str {
        match self {
            RealColumns::Independent => "each real column its own Normal-Gamma kernel",
            RealColumns::Full => {
                "the real columns as one full-covariance Normal-Wishart block, missing \
                 entries drawn inside each sweep"
            }
        }
    }
}

impl Choice for NwDefaults {
    const ALL: &'static [Self] = &[
        NwDefaults::Pooled,
        NwDefaults::Scaled,
        NwDefaults::Reference,
    ];

    fn name(self) -> &'static str {
        match self {
            NwDefaults::Pooled => "pooled",
            NwDefaults::Scaled => "scaled",
            NwDefaults::Reference => "reference",
        }
    }

    fn about(self) -> &'static str {
        match self {
            NwDefaults::Pooled => {
                "As scaled, then for a run Ψ from a 200-sweep pilot run: a cluster's expected \
                 covariance is the pooled within-cluster covariance of the pilot's best \
                 partition (unit-equivariant too)"
            }
            NwDefaults::Scaled => {
                "Unit-equivariant: ξ the data mean, Ψ proportional to the data covariance (its \
                 diagonal when singular), r = 0.01, ν = d + 3 + d/2"
            }
            NwDefaults::Reference => {
                "The tgMCMC reference code's: Ψ the covariance rescaled to determinant 0.1, \
                 r = 0.1, ν = d + 6 (depends on the data's units)"
            }
        }
    }
}

impl Choice for PriorKind {
    const ALL: &'static [Self] = &[
        PriorKind::Dp,
        PriorKind::Nggp,
        PriorKind::PitmanYor,
        PriorKind::Mfm,
    ];

    fn name(self) -> &'static str {
        match self {
            PriorKind::Dp => "dp",
            PriorKind::Nggp => "nggp",
            PriorKind::PitmanYor => "py",
            PriorKind::Mfm => "mfm",
        }
    }

    fn about(self) -> &'static str {
        match self {
            PriorKind::Dp => "Dirichlet process",
            PriorKind::Nggp => "Normalized generalized gamma process",
            PriorKind::PitmanYor => {
                "Pitman-Yor process (alpha the concentration theta, sigma the discount)"
            }
            PriorKind::Mfm => "Mixture of finite mixtures (gamma, k-prior; Miller & Harrison 2018)",
        }
    }
}

impl Choice for Format {
    const ALL: &'static [Self] = &[
        Format::Dense,
        Format::Docword,
        Format::Ldac,
        Format::Idx,
        Format::Npy,
    ];

    fn name(self) -> &'static str {
        Format::name(self)
    }

    fn about(self) -> &'static str {
        match self {
            Format::Dense => "Whitespace- or comma-separated real matrix, one point per line",
            Format::Docword => "UCI bag-of-words `docword` file",
            Format::Ldac => "LDA-C (`M id:count ...`)",
            Format::Idx => "IDX images (`ubyte`)",
            Format::Npy => "NumPy `.npy`: a 2-D array of little-endian f8, f4, i8 or i4",
        }
    }
}

impl Choice for SamplerKind {
    const ALL: &'static [Self] = &SamplerKind::ALL;

    fn name(self) -> &'static str {
        SamplerKind::name(self)
    }

    fn about(self) -> &'static str {
        SamplerKind::about(self)
    }
}

impl Choice for SyntheticKind {
    const ALL: &'static [Self] = &[SyntheticKind::Gaussian, SyntheticKind::Counts];

    fn name(self) -> &'static str {
        match self {
            SyntheticKind::Gaussian => "gaussian",
            SyntheticKind::Counts => "counts",
        }
    }

    fn about(self) -> &'static str {
        match self {
            SyntheticKind::Gaussian => {
                "A Gaussian mixture (dense format); each cluster's mean and precision drawn from \
                 a Normal-Wishart with ξ = 0, Ψ = I, r = 0.02, ν = d + 3"
            }
            SyntheticKind::Counts => {
                "Bags of words from Dirichlet-multinomial clusters (docword format)"
            }
        }
    }
}
