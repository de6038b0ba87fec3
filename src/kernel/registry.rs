//! The kernels a model can use: the [`Kernel`] trait, which gathers everything a kernel says
//! about itself (its name and description, how it is built from the user's settings and the
//! data, which new points it reads), and the one list of registered kernels
//! ([`registered_kernels!`](crate::registered_kernels)), from which [`KernelKind`] (the kernel
//! chosen by name), [`AnyKernel`] (a kernel of any kind over its data) and
//! [`with_kernel!`](crate::with_kernel) (generic code run on the concrete kernel inside an
//! [`AnyKernel`]) are made.
//!
//! Adding a kernel is one module under `src/kernel/` that implements the traits of [`Kernel`]
//! and one line in [`registered_kernels!`](crate::registered_kernels); the model, the
//! samplers, the runner, SVA, prediction, the files a run writes and the front ends' lists
//! follow from the list.

use super::settings::KernelSettings;
use super::{HyperKernel, ParametricKernel, PredictiveKernel, SvaKernel};
use crate::data::Dataset;
use crate::error::{Error, Result};

/// A kernel as the model, the samplers and every front end use it: a conjugate kernel
/// ([`crate::kernel::ConjugateKernel`]) with hyperparameters that hyperpriors can move
/// ([`HyperKernel`]), explicit component parameters for the uncollapsed samplers
/// ([`ParametricKernel`]), predictives of new points ([`PredictiveKernel`]) and soft
/// statistics for SVA ([`SvaKernel`]), plus what identifies it and how it is built.
pub trait Kernel: HyperKernel + ParametricKernel + PredictiveKernel + SvaKernel {
    /// Its name, as `kernel` settings, run files and front ends spell it.
    const NAME: &'static str;

    /// One line on what it is, as front ends list it.
    const ABOUT: &'static str;

    /// Its name in a run's header line ("Normal-Wishart kernel").
    const TITLE: &'static str;

    /// What its data are, for messages ("real vectors", "counts").
    const DATA: &'static str;

    /// Whether its defaults follow [`super::settings::NwDefaults`] (a run's header then says
    /// which defaults, or the pilot, set them).
    const SCALE_DEFAULTS: bool = false;

    /// The kernel over `data` with the settings of `settings`, the rest from the data.
    /// Errors, naming the setting or the kernel, when the data are of another kind or a
    /// setting does not apply. Cost: the kernel's construction.
    fn build(settings: &KernelSettings, data: Dataset) -> Result<Self>;

    /// Refuses settings that `data` make meaningless for this kernel, naming the setting
    /// (`beta` on real vectors, a `psi` of the wrong length). Runs on the settings as asked
    /// for, before [`Kernel::build`] sees them with their defaults. The default accepts all.
    fn check_settings(settings: &KernelSettings, data: &Dataset) -> Result<()> {
        let _ = (settings, data);
        Ok(())
    }

    /// Dimension (vocabulary size for counts).
    fn dim(&self) -> usize;

    /// The points of `data` in this kernel's kind of data, `None` for another kind.
    fn points_of(data: &Dataset) -> Option<&<Self as PredictiveKernel>::NewData>;

    /// Errors unless the new points `new` fit the training data (their dimension, their
    /// vocabulary), naming them `` `new` ``. The default accepts all.
    fn check_new(&self, new: &<Self as PredictiveKernel>::NewData) -> Result<()> {
        let _ = new;
        Ok(())
    }

    /// The points of `new` for this kernel, checked ([`Kernel::check_new`]); errors naming
    /// them `` `new` `` when they are of another kind or do not fit.
    fn new_points<'a>(&self, new: &'a Dataset) -> Result<&'a <Self as PredictiveKernel>::NewData> {
        let points = Self::points_of(new).ok_or_else(|| {
            Error::Usage(format!(
                "`new` holds {}, but the training data are {}",
                new.kind_name(),
                Self::DATA
            ))
        })?;
        self.check_new(points)?;
        Ok(points)
    }
}

/// The registered kernels, one line each as `Variant: module::Type` (the kernel's module under
/// `src/kernel/`, which this list declares, and its type): the one place that lists them. It
/// hands the list to the macro `$mac` (a macro exported by this crate) after the tokens
/// `$args`, in brackets.
#[doc(hidden)]
#[macro_export]
macro_rules! registered_kernels {
    ($mac:ident! $($args:tt)*) => {
        $crate::$mac! {
            [$($args)*]
            Nw: normal_wishart::NormalWishart,
            Md: multinomial_dirichlet::MultinomialDirichlet,
            Diag: diagonal::Diagonal,
            Bb: beta_bernoulli::BetaBernoulli,
            Mixed: mixed::Mixed,
        }
    };
}

/// The modules of the registered kernels, declared in `src/kernel/mod.rs`.
#[doc(hidden)]
#[macro_export]
macro_rules! declare_kernel_modules {
    ([] $($variant:ident: $module:ident::$ty:ident,)*) => {
        $(pub mod $module;)*
    };
}

/// Runs `$body` with `$k` bound to the concrete kernel inside an [`AnyKernel`], so generic
/// code is written once for every registered kernel.
#[macro_export]
macro_rules! with_kernel {
    ($any:expr, |$k:ident| $body:expr) => {
        $crate::registered_kernels!(with_kernel_arms! ($any) $k ($body))
    };
}

/// The match of [`with_kernel!`](crate::with_kernel), one arm per registered kernel.
#[doc(hidden)]
#[macro_export]
macro_rules! with_kernel_arms {
    ([($any:expr) $k:ident ($body:expr)] $($variant:ident: $module:ident::$ty:ident,)*) => {
        match $any {
            $($crate::kernel::AnyKernel::$variant($k) => $body,)*
        }
    };
}

/// [`KernelKind`], [`AnyKernel`] and their dispatch, from the list of registered kernels.
#[doc(hidden)]
#[macro_export]
macro_rules! define_kernels {
    ([] $($variant:ident: $module:ident::$ty:ident,)*) => {
        /// Which conjugate kernel: one per registered kernel, named by its
        /// [`Kernel::NAME`](crate::kernel::Kernel::NAME) (in settings and run files).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum KernelKind {
            $(
                #[doc = concat!(
                    "[`", stringify!($ty), "`](crate::kernel::", stringify!($module), "::",
                    stringify!($ty), ")."
                )]
                $variant,
            )*
        }

        /// A kernel of any registered kind over its data set.
        #[derive(Clone, Debug)]
        pub enum AnyKernel {
            $(
                #[doc = concat!(
                    "[`", stringify!($ty), "`](crate::kernel::", stringify!($module), "::",
                    stringify!($ty), ")."
                )]
                $variant($crate::kernel::$module::$ty),
            )*
        }

        impl KernelKind {
            /// Every kernel, in the order front ends list them.
            pub const ALL: &'static [KernelKind] = &[$(KernelKind::$variant),*];

            /// Its name ([`Kernel::NAME`](crate::kernel::Kernel::NAME)).
            pub fn name(self) -> &'static str {
                match self {
                    $(KernelKind::$variant => <$crate::kernel::$module::$ty as $crate::kernel::Kernel>::NAME,)*
                }
            }

            /// One line on what it is ([`Kernel::ABOUT`](crate::kernel::Kernel::ABOUT)).
            pub fn about(self) -> &'static str {
                match self {
                    $(KernelKind::$variant => <$crate::kernel::$module::$ty as $crate::kernel::Kernel>::ABOUT,)*
                }
            }

            /// Its name in a run's header ([`Kernel::TITLE`](crate::kernel::Kernel::TITLE)).
            pub fn title(self) -> &'static str {
                match self {
                    $(KernelKind::$variant => <$crate::kernel::$module::$ty as $crate::kernel::Kernel>::TITLE,)*
                }
            }

            /// Whether its defaults follow `nw_defaults`
            /// ([`Kernel::SCALE_DEFAULTS`](crate::kernel::Kernel::SCALE_DEFAULTS)).
            pub fn scale_defaults(self) -> bool {
                match self {
                    $(KernelKind::$variant => <$crate::kernel::$module::$ty as $crate::kernel::Kernel>::SCALE_DEFAULTS,)*
                }
            }

            /// The trace column names of its own hyperparameters
            /// ([`HyperKernel::HYPER_NAMES`](crate::kernel::HyperKernel::HYPER_NAMES)).
            pub fn hyper_names(self) -> &'static [&'static str] {
                match self {
                    $(KernelKind::$variant => {
                        <$crate::kernel::$module::$ty as $crate::kernel::HyperKernel>::HYPER_NAMES
                    })*
                }
            }

            /// [`Kernel::check_settings`](crate::kernel::Kernel::check_settings) of this kind.
            pub fn check_settings(
                self,
                settings: &$crate::kernel::KernelSettings,
                data: &$crate::data::Dataset,
            ) -> $crate::error::Result<()> {
                match self {
                    $(KernelKind::$variant => {
                        <$crate::kernel::$module::$ty as $crate::kernel::Kernel>::check_settings(settings, data)
                    })*
                }
            }

            /// The kernel of this kind over `data` ([`Kernel::build`](crate::kernel::Kernel::build)).
            pub fn build(
                self,
                settings: &$crate::kernel::KernelSettings,
                data: $crate::data::Dataset,
            ) -> $crate::error::Result<AnyKernel> {
                match self {
                    $(KernelKind::$variant => {
                        <$crate::kernel::$module::$ty as $crate::kernel::Kernel>::build(settings, data).map(AnyKernel::$variant)
                    })*
                }
            }
        }

        impl AnyKernel {
            /// Which kind it is.
            pub fn kind(&self) -> KernelKind {
                match self {
                    $(AnyKernel::$variant(_) => KernelKind::$variant,)*
                }
            }
        }
    };
}

registered_kernels!(define_kernels!);

impl AnyKernel {
    /// Dimension (vocabulary size for counts).
    pub fn dim(&self) -> usize {
        crate::with_kernel!(self, |k| Kernel::dim(k))
    }
}

impl KernelKind {
    /// The kernel named `name`, if one is registered.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.name() == name)
    }
}

/// A kernel kind is written as its name.
impl serde::Serialize for KernelKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A kernel kind is read from its name; an unknown name errors listing the registered ones.
impl<'de> serde::Deserialize<'de> for KernelKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        KernelKind::named(&name).ok_or_else(|| {
            let names: Vec<String> = KernelKind::ALL
                .iter()
                .map(|k| format!("`{}`", k.name()))
                .collect();
            serde::de::Error::custom(format!(
                "unknown variant `{name}`, expected one of {}",
                names.join(", ")
            ))
        })
    }
}
