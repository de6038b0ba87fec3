//! The hyperparameters of a chain's state, typed ([`HyperState`]): the prior's and, when the
//! run resamples them, the kernel's. Their names exist only where they become the columns of a
//! run's files (`trace.csv`, `draws.jsonl`, `end.json`, `summary.json`) and come back from
//! them: [`HyperState::columns`] and its conversions to and from a name → value map, which is
//! how its JSON reads and writes. Readers of those files get typed values, parsed once.

use crate::kernel::KernelHyper;
use crate::prior::PriorHyper;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A state's hyperparameters, typed. Its JSON is an object of column name → value (sorted by
/// name); reading one errors naming a column that its prior or kernel needs and lacks.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "BTreeMap<String, f64>", try_from = "BTreeMap<String, f64>")]
pub struct HyperState {
    /// The prior's.
    pub prior: PriorHyper,
    /// The kernel's when the run resamples them (kernel hyperpriors); `None` when the
    /// model's kernel applies.
    pub kernel: Option<KernelHyper>,
}

impl HyperState {
    /// Names and values as trace columns: the prior's ([`PriorHyper::columns`]), then the
    /// kernel's ([`KernelHyper::columns`]).
    pub fn columns(&self) -> Vec<(&'static str, f64)> {
        let mut columns = self.prior.columns();
        columns.extend(self.kernel.iter().flat_map(KernelHyper::columns));
        columns
    }
}

impl From<HyperState> for BTreeMap<String, f64> {
    fn from(h: HyperState) -> Self {
        h.columns()
            .into_iter()
            .map(|(name, v)| (name.to_string(), v))
            .collect()
    }
}

impl TryFrom<BTreeMap<String, f64>> for HyperState {
    type Error = String;

    /// The values of a record's columns; errors name the first missing column. Cost: a few
    /// map look-ups.
    fn try_from(record: BTreeMap<String, f64>) -> Result<Self, String> {
        let get = |name: &str| record.get(name).copied();
        let missing = |e: String| format!("the hyperparameters have {e}");
        Ok(HyperState {
            prior: PriorHyper::from_columns(&get).map_err(missing)?,
            kernel: KernelHyper::from_columns(&get).map_err(missing)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{HyperKernel, MultinomialDirichlet, NormalWishart};

    fn map(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|&(n, v)| (n.to_string(), v)).collect()
    }

    #[test]
    fn columns_round_trip_through_json() {
        let h = HyperState {
            prior: PriorHyper::Nggp {
                alpha: 2.0,
                sigma: 0.25,
                u: 3.5,
            },
            kernel: Some(KernelHyper::new(
                <NormalWishart as HyperKernel>::HYPER_NAMES,
                &[1.5, 0.1, 5.0],
            )),
        };
        let text = serde_json::to_string(&h).unwrap();
        assert_eq!(
            text,
            r#"{"alpha":2.0,"nw_nu":5.0,"nw_r":0.1,"nw_s":1.5,"sigma":0.25,"u":3.5}"#
        );
        assert_eq!(serde_json::from_str::<HyperState>(&text).unwrap(), h);
        let dp = HyperState::try_from(map(&[("alpha", 1.0)])).unwrap();
        assert_eq!(dp.prior, PriorHyper::Dp { alpha: 1.0 });
        assert_eq!(dp.kernel, None);
        let md = HyperState::try_from(map(&[("alpha", 1.0), ("md_beta", 0.2)])).unwrap();
        let beta = <MultinomialDirichlet as HyperKernel>::HYPER_NAMES;
        assert_eq!(md.kernel, Some(KernelHyper::new(beta, &[0.2])));
    }

    #[test]
    fn a_missing_column_is_named() {
        let e = HyperState::try_from(map(&[("alpha", 1.0), ("u", 2.0)])).unwrap_err();
        assert!(e.contains("\"sigma\""), "{e}");
        let e = HyperState::try_from(map(&[("sigma", 0.5), ("u", 2.0)])).unwrap_err();
        assert!(e.contains("\"alpha\""), "{e}");
        let e = HyperState::try_from(map(&[("alpha", 1.0), ("diag_s", 2.0)])).unwrap_err();
        assert!(e.contains("\"diag_r\""), "{e}");
        let e = serde_json::from_str::<HyperState>(r#"{"u":1.0}"#).unwrap_err();
        assert!(e.to_string().contains("no column \"alpha\""), "{e}");
    }
}
