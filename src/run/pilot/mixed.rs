//! The pilot's choice, for the product kernel over a table, between independent real columns
//! and one full-covariance block of them ([`RealColumns`]), by evidence as the pilot weighs
//! the diagonal kernel against the full one.
//!
//! **On the complete rows.** With missing real entries the full block's marginal of the
//! observed entries has no closed form (the chain draws them instead), so the two log joints
//! are compared on the rows whose real entries are all observed (other columns may miss
//! entries: both kernels marginalise them exactly), at most [`super::PILOT_POINTS`] of them
//! (a uniform subsample beyond, [`super::pilot_rows`]). Each kernel's pilot
//! ([`super::PILOT_CHAINS`] chains of [`super::PILOT_SWEEPS`] sweeps) finds its best
//! partition there, and the full block is taken when its log joint at its own best partition
//! exceeds the independent columns' at theirs by more than [`MIN_FULL_EVIDENCE_PER_ROW`] nats
//! per row. Both kernels' defaults are unit-equivariant, so rescaling or shifting a column
//! moves both log joints by the same Jacobian and does not change the choice. The choice and
//! its margin are recorded in the model (`mixed_real`, `mixed_real_choice`), so a resumed
//! run, prediction and imputation use the same kernel without a new pilot.
//!
//! Cost: two pilots over at most [`super::PILOT_POINTS`] rows, one with the full block's
//! O(d_r²) per predictive.

use super::{best_partition, pilot_rows, Plan, Settled, MIN_DOF_PER_DIM, PILOT_SWEEPS};
use crate::data::table::ColumnType;
use crate::data::Dataset;
use crate::error::Result;
use crate::model::{AnyKernel, KernelKind, Model, ModelSpec, RealColumns, RealColumnsChoice};
use std::sync::atomic::AtomicBool;

/// How many nats per complete row the full block's log joint must exceed the independent
/// columns' by for the pilot to take it: correlated columns clear it by far (the survey
/// table's hand spans: 98 to 119 nats on 110 to 170 complete rows), weakly correlated ones do
/// not (pima: 2 to 17 nats on 111 to 200 rows), and the existing choice, independent
/// columns, stays where the evidence is close.
pub const MIN_FULL_EVIDENCE_PER_ROW: f64 = 0.1;

/// Whether the pilot chooses how `model`'s product kernel models the real columns: the
/// kernel is the product kernel, `mixed_real` was not given nor chosen, the table has at
/// least 2 real columns, and neither `nu` nor `r` nor kernel hyperpriors were given (they
/// mean different things to the two kernels).
pub fn is_due(model: &Model) -> bool {
    let r = &model.requested;
    let AnyKernel::Mixed(k) = &model.kernel else {
        return false;
    };
    r.mixed_real.is_none()
        && r.mixed_real_choice.is_none()
        && r.nw_r.is_none()
        && r.nw_nu.is_none()
        && !r.kernel_hyperpriors
        && k.table()
            .columns()
            .iter()
            .filter(|c| c.kind == ColumnType::Real)
            .count()
            >= 2
}

/// The model with the choice made (see the module documentation), or why the independent
/// columns stay without a choice (too few complete rows).
pub fn settle(model: &Model, seed: u64, stop: Option<&AtomicBool>) -> Result<Settled> {
    let AnyKernel::Mixed(k) = &model.kernel else {
        return Ok(Settled::NotDue);
    };
    let table = k.table();
    let real: Vec<usize> = (0..table.d())
        .filter(|&j| table.columns()[j].kind == ColumnType::Real)
        .collect();
    let mut complete: Vec<usize> = (0..table.n())
        .filter(|&i| real.iter().all(|&j| table.value(i, j).is_some()))
        .collect();
    if let Some(rows) = pilot_rows(complete.len(), seed) {
        complete = rows.into_iter().map(|r| complete[r]).collect();
    }
    let needed = MIN_DOF_PER_DIM * (real.len() + 1);
    if complete.len() < needed {
        return Ok(Settled::Kept(format!(
            "{} rows have every real entry, fewer than the {needed} a choice of the full \
             covariance needs: the real columns stay independent",
            complete.len()
        )));
    }
    let Ok(sub) = table.select_rows(&complete) else {
        return Ok(Settled::Kept(
            "the rows with every real entry leave a column without an observed entry: the \
             real columns stay independent"
                .into(),
        ));
    };
    let mut scores = [0.0; 2];
    for (score, choice) in scores
        .iter_mut()
        .zip([RealColumns::Independent, RealColumns::Full])
    {
        let spec = ModelSpec {
            kernel: Some(KernelKind::Mixed),
            mixed_real: Some(choice),
            ..model.requested.clone()
        };
        let m = Model::build(&spec, Dataset::Table(sub.clone()))?;
        let AnyKernel::Mixed(k) = &m.kernel else {
            unreachable!("the product kernel was asked for");
        };
        let Some((labels, _)) =
            best_partition(k, &m.prior, &m, Plan::sweeps(PILOT_SWEEPS), seed, stop)?
        else {
            return Ok(Settled::Interrupted);
        };
        *score = crate::partition::Partition::from_labels(k, &labels)?.ln_joint(&m.prior);
    }
    let by = scores[1] - scores[0];
    let choice = if by > MIN_FULL_EVIDENCE_PER_ROW * complete.len() as f64 {
        RealColumns::Full
    } else {
        RealColumns::Independent
    };
    let record = RealColumnsChoice {
        full_by: by.round() as i64,
        rows: complete.len(),
    };
    let spec = ModelSpec {
        mixed_real: Some(choice),
        mixed_real_choice: Some(record),
        ..model.requested.clone()
    };
    let mut settled = Model::build(&spec, Dataset::Table(table.clone()))?;
    settled.kernel_note = Some(match choice {
        RealColumns::Full => format!(
            "modelling the real columns as one full-covariance block (`mixed_real` full): on \
             the {} rows with every real entry its log joint is {} nats above independent \
             columns' (give `mixed_real` independent to insist)",
            record.rows, record.full_by
        ),
        RealColumns::Independent => format!(
            "keeping the real columns independent (`mixed_real` independent): on the {} rows \
             with every real entry the full-covariance block's log joint is {} nats from \
             theirs, not above {MIN_FULL_EVIDENCE_PER_ROW} per row (give `mixed_real` full \
             to insist)",
            record.rows, record.full_by
        ),
    });
    Ok(Settled::Scaled(Box::new(settled)))
}

/// `model` with the choice that a run's pilot recorded in `record`, for a front end that
/// rebuilds the model from its own settings; `model` unchanged when no choice was recorded
/// or the model has its own. Cost: one kernel construction.
pub fn recorded(model: Model, record: &ModelSpec) -> Result<Model> {
    let (Some(choice), Some(made)) = (record.mixed_real, record.mixed_real_choice) else {
        return Ok(model);
    };
    if !is_due(&model) {
        return Ok(model);
    }
    let AnyKernel::Mixed(k) = &model.kernel else {
        return Ok(model);
    };
    let spec = ModelSpec {
        mixed_real: Some(choice),
        mixed_real_choice: Some(made),
        ..model.requested.clone()
    };
    Model::build(&spec, Dataset::Table(k.table().clone()))
}
