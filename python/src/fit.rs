//! `MixtureModel.fit` and `resume`: the library's [`Runner`] over a run directory, with the
//! interpreter's lock released while chains run, Ctrl-C turned into a clean stop of every
//! chain, and a progress callback.
//!
//! The chains run on a worker thread; the calling thread wakes every
//! [`POLL`] to let Python handle signals (a `KeyboardInterrupt` raises the runner's
//! interrupt flag: each chain stops at its next sweep with its trace flushed and its last
//! checkpoint intact) and to report progress.

use crate::convert::{model_spec, overlay, Input};
use crate::error::{rename, IntoPy};
use nrmm::model::Model;
use nrmm::run::pilot::{self, Settled};
use nrmm::run::{
    chain_dir, AutoBudget, Budget, ChainMonitor, HyperState, Monitor, MoveSettings, RunRecord,
    Runner, SamplerKind, SamplerSpec, Start, Summary, SweepRecord, TraceColumns,
};
use numpy::IntoPyArray;
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How often the calling thread checks for Ctrl-C and reports progress.
const POLL: Duration = Duration::from_millis(100);

/// Trace rows kept per column and chain (evenly spaced over the chain).
const TRACE_ROWS: usize = 1 << 14;

/// A budget as Python gives it: the library's [`Budget`], except that an automatic one may
/// leave out its first round and its most sweeps, which then follow the data's `n` points
/// in `d` dimensions as on the command line ([`AutoBudget::for_data`]).
fn budget_for(given: &serde_json::Value, n: usize, d: usize) -> PyResult<Budget> {
    let bad = |e: serde_json::Error| PyValueError::new_err(format!("budget: {e}"));
    let Some(auto) = given.get("auto") else {
        return serde_json::from_value(given.clone()).map_err(bad);
    };
    let mut budget = AutoBudget::for_data(n, d);
    let field = |name: &str| auto.get(name).filter(|v| !v.is_null()).cloned();
    if let Some(first) = field("first") {
        budget.first = serde_json::from_value(first).map_err(bad)?;
    }
    if let Some(max) = field("max") {
        budget = budget.at_most(serde_json::from_value(max).map_err(bad)?);
    }
    Ok(Budget::Auto(budget))
}

/// What Python hands over as `sampler_json`: a [`SamplerSpec`] whose `init` is given by name
/// ([`Start`]'s `FromStr`) and whose `sampler` object may give only some move settings; the
/// split-merge proposals not given are, as on the command line, the sampler's default for the
/// `n` points ([`MoveSettings::default_proposals_for`]).
fn sampler_spec(json: &str, n: usize, d: usize) -> PyResult<SamplerSpec> {
    let bad = |e: serde_json::Error| PyValueError::new_err(format!("sampler settings: {e}"));
    let mut given: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(json).map_err(bad)?;
    if let Some(budget) = given.get("budget") {
        let budget = budget_for(budget, n, d)?;
        given.insert("budget".into(), serde_json::to_value(budget).map_err(bad)?);
    }
    if let Some(serde_json::Value::String(name)) = given.get("init") {
        let start: Start = name.parse().map_err(rename).py_err()?;
        given.insert("init".into(), serde_json::to_value(start).map_err(bad)?);
    }
    let mut base = SamplerSpec::default();
    // Not asked for: the sampler the command line chooses by size.
    base.sampler.kind = SamplerKind::for_data(n);
    base.sampler.moves.proposals = MoveSettings::default_proposals_for(base.sampler.kind, n);
    if let Some(sampler) = given.remove("sampler") {
        if let Some(name) = sampler.get("sampler").and_then(|v| v.as_str()) {
            base.sampler.kind = name.parse().map_err(rename).py_err()?;
            base.sampler.moves.proposals =
                MoveSettings::default_proposals_for(base.sampler.kind, n);
        }
        base.sampler = overlay(&base.sampler, &sampler.to_string(), "sampler option")?;
    }
    overlay(
        &base,
        &serde_json::Value::Object(given).to_string(),
        "sampler setting",
    )
}

/// Sweeps (or milliseconds of sampling) done per chain and the last chain's number of
/// clusters, read by the calling thread for the progress callback.
struct Progress {
    first: u64,
    done: Vec<AtomicU64>,
    by_time: bool,
    n_clusters: AtomicU64,
    notes: Mutex<Vec<String>>,
}

impl Monitor for Progress {
    fn note(&self, line: &str) {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line.to_string());
    }

    fn chain(&self, chain: u64, _label: &str) -> Box<dyn ChainMonitor + '_> {
        Box::new(ChainProgress {
            progress: self,
            index: (chain - self.first) as usize,
        })
    }
}

/// One chain's part of [`Progress`].
struct ChainProgress<'a> {
    progress: &'a Progress,
    index: usize,
}

impl ChainMonitor for ChainProgress<'_> {
    fn sweep(&mut self, record: &SweepRecord) {
        let p = self.progress;
        let done = if p.by_time {
            (record.seconds * 1000.0) as u64
        } else {
            record.sweep
        };
        if let Some(slot) = p.done.get(self.index) {
            slot.store(done, Ordering::Relaxed);
        }
        p.n_clusters
            .store(record.n_clusters as u64, Ordering::Relaxed);
    }
}

impl Progress {
    fn new(spec: &SamplerSpec) -> Self {
        Progress {
            first: spec.chain_offset,
            done: (0..spec.chains).map(|_| AtomicU64::new(0)).collect(),
            by_time: matches!(spec.budget, Budget::Seconds(_)),
            n_clusters: AtomicU64::new(0),
            notes: Mutex::new(Vec::new()),
        }
    }

    /// Work done over all chains, and the total the budget allows.
    fn status(&self, budget: Budget) -> (u64, u64, u64) {
        let done = self.done.iter().map(|d| d.load(Ordering::Relaxed)).sum();
        let per_chain = match budget {
            Budget::Sweeps(n) => n,
            Budget::Seconds(s) => (s * 1000.0) as u64,
            Budget::Auto(a) => a.max,
        };
        let k = self.n_clusters.load(Ordering::Relaxed);
        (done, per_chain * self.done.len() as u64, k)
    }
}

/// Runs the chains of `sampler_json` over `data` under the model of `model_json` in
/// `run_dir` (or, when `sampler_json` is `None`, continues the run there from its
/// checkpoints), and returns what the estimator keeps: the point estimate and best state with
/// their hyperparameters, the draws after burn-in, the summary (JSON), each chain's trace and
/// the run's notes. `budget_json` replaces the run's budget (a resumed run's new total).
/// `progress(done, total, n_clusters)` is called about ten times a second, and
/// `progress(None)` at the end. `loss_a` is the parameter of the VI and Binder's loss whose
/// minimisers the summary reports (in (0, 2), checked before the run).
// The arguments are the Python call's, one per estimator setting it passes.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (data, model_json, sampler_json, run_dir, budget_json, progress, loss_a=1.0))]
pub fn fit<'py>(
    py: Python<'py>,
    data: Input<'py>,
    model_json: &str,
    sampler_json: Option<&str>,
    run_dir: PathBuf,
    budget_json: Option<&str>,
    progress: Option<Bound<'py, PyAny>>,
    loss_a: f64,
) -> PyResult<Bound<'py, PyDict>> {
    nrmm::run::estimates::validate_loss_a(loss_a)
        .map_err(rename)
        .py_err()?;
    let spec = model_spec(model_json)?;
    let data = data.dataset()?;
    let model = py
        .detach(|| Model::build(&spec, data))
        .map_err(rename)
        .py_err()?;
    let (n, d) = (model.n_points(), model.fingerprint.dim);
    let new_run = sampler_json
        .map(|json| sampler_spec(json, n, d))
        .transpose()?;
    let seed = new_run.as_ref().map(|s| s.seed);
    let model = match with_pilot(py, model, seed, &run_dir)? {
        Some(model) => model,
        None => {
            return Err(PyKeyboardInterrupt::new_err(
                "fit interrupted during the pilot run that chooses the cluster scale: nothing \
                 was run yet",
            ))
        }
    };
    let budget: Option<Budget> = budget_json
        .map(|json| {
            let value = serde_json::from_str(json)
                .map_err(|e| PyValueError::new_err(format!("budget: {e}")))?;
            budget_for(&value, n, d)
        })
        .transpose()?;
    let mut runner = match new_run {
        Some(spec) => Runner::new(&model, spec, &run_dir).replace(true),
        None => Runner::resume(&model, &run_dir).map_err(rename).py_err()?,
    };
    if let Some(b) = budget {
        runner = runner.budget(b);
    }
    let spec = runner.record().spec.clone();
    let watch = Progress::new(&spec);
    let stop = AtomicBool::new(false);
    let runner = runner.interrupt(&stop).monitor(&watch);
    let mut callback_error = None;
    let callback: Option<Py<PyAny>> = progress.as_ref().map(|p| p.clone().unbind());
    let mut last = None;
    let (outcome, interrupted) = watched(
        py,
        &stop,
        || runner.run(),
        |py| {
            let status = watch.status(spec.budget);
            if let Some(cb) = &callback {
                if last != Some(status) && callback_error.is_none() {
                    if let Err(e) = cb.bind(py).call1(status) {
                        // An error in the callback (a Ctrl-C that landed in it too) ends
                        // the run at the chains' next sweep, not at the end of the budget.
                        stop.store(true, Ordering::Relaxed);
                        callback_error = Some(e);
                    }
                }
            }
            last = Some(status);
        },
    );
    if let Some(cb) = &progress {
        cb.call1((py.None(),))?;
    }
    let outcome = outcome.map_err(rename).py_err()?;
    let callback_interrupted = match callback_error {
        Some(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => true,
        Some(e) => return Err(e),
        None => false,
    };
    if interrupted || callback_interrupted || outcome.interrupted() {
        let resumable = if spec.checkpoint_every.is_some() {
            format!(
                "resume(X) continues it from its checkpoints in {}",
                run_dir.display()
            )
        } else {
            "give run_dir and checkpoint_every to be able to resume an interrupted fit".into()
        };
        return Err(PyKeyboardInterrupt::new_err(format!(
            "fit interrupted: every chain stopped cleanly; {resumable}"
        )));
    }
    // With the point estimates by loss and the credible ball, as the command line's run.
    let summary = py
        .detach(|| {
            let mut summary = outcome.summary()?;
            summary.add_estimates_by_loss(loss_a)?;
            Ok::<_, nrmm::error::Error>(summary)
        })
        .map_err(rename)
        .py_err()?;
    results(py, &model, &summary, &outcome.run.dir, &spec, &watch)
}

/// Runs `work` on a worker thread with the interpreter's lock released, while this thread
/// wakes every [`POLL`] to let Python handle signals (a `KeyboardInterrupt` sets `stop`, which
/// `work` watches) and to call `tick`; returns what `work` returned and whether Ctrl-C came.
/// A panic of `work` is resumed here.
fn watched<T: Send>(
    py: Python<'_>,
    stop: &AtomicBool,
    work: impl FnOnce() -> T + Send,
    mut tick: impl FnMut(Python<'_>) + Send,
) -> (T, bool) {
    let mut interrupted = false;
    let result = py.detach(|| {
        std::thread::scope(|s| {
            let worker = s.spawn(work);
            while !worker.is_finished() {
                std::thread::sleep(POLL);
                Python::attach(|py| {
                    if py.check_signals().is_err() {
                        stop.store(true, Ordering::Relaxed);
                        interrupted = true;
                    }
                    tick(py);
                });
            }
            worker.join()
        })
    });
    match result {
        Ok(value) => (value, interrupted),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// The model a run uses: for a new run (of seed `seed`), the pilot's cluster scale when the
/// model asks for one ([`pilot::settle`], on a worker thread while this one watches for
/// Ctrl-C, which stops it: `None`); for a resumed run, the kernel and scale its pilot chose
/// as the run recorded them.
fn with_pilot(
    py: Python<'_>,
    model: Model,
    seed: Option<u64>,
    run_dir: &std::path::Path,
) -> PyResult<Option<Model>> {
    let Some(seed) = seed else {
        let recorded = RunRecord::load(run_dir).map_err(rename).py_err()?.model;
        return pilot::recorded(model, &recorded)
            .map(Some)
            .map_err(rename)
            .py_err();
    };
    if !pilot::is_due(&model) {
        return Ok(Some(model));
    }
    let stop = AtomicBool::new(false);
    let (settled, interrupted) = watched(
        py,
        &stop,
        || pilot::settle(&model, seed, Some(&stop)),
        |_| {},
    );
    // A Ctrl-C that came as the pilot ended still stops the fit.
    if interrupted {
        return Ok(None);
    }
    Ok(match settled.map_err(rename).py_err()? {
        Settled::Scaled(m) => Some(*m),
        Settled::NotDue | Settled::Kept(_) => Some(model),
        Settled::Interrupted => None,
    })
}

/// The dict [`fit`] returns.
fn results<'py>(
    py: Python<'py>,
    model: &Model,
    summary: &Summary,
    dir: &std::path::Path,
    spec: &SamplerSpec,
    watch: &Progress,
) -> PyResult<Bound<'py, PyDict>> {
    let estimate = summary.point_estimate.as_ref().ok_or_else(|| {
        PyValueError::new_err(
            "no partition draws after the burn-in, so no point estimate: lower burn_in or run \
             more sweeps",
        )
    })?;
    let to_i64 = |labels: &[usize]| -> Vec<i64> { labels.iter().map(|&l| l as i64).collect() };
    let out = PyDict::new(py);
    let kernel = model.spec.kernel.expect("resolved by Model::build");
    out.set_item("kernel", nrmm::Choice::name(kernel))?;
    let recorded = serde_json::to_string(&model.requested)
        .map_err(|e| PyValueError::new_err(format!("model: {e}")))?;
    out.set_item("model", recorded)?;
    // A table's columns as the library typed them: name, type and levels by code.
    if let nrmm::kernel::AnyKernel::Mixed(k) = &model.kernel {
        let columns: Vec<(String, &str, Vec<String>)> = k
            .table()
            .columns()
            .iter()
            .map(|c| (c.name.clone(), c.kind.name(), c.levels.clone()))
            .collect();
        out.set_item("columns", columns)?;
    }
    // The default estimate (the VI's where found) is `labels_`; the hyperparameters are
    // those of Dahl's draw (the fixed values without hyperpriors).
    let default = summary.default_labels().unwrap_or(&estimate.labels);
    out.set_item("labels", to_i64(default).into_pyarray(py))?;
    out.set_item("default_estimate", &summary.default_estimate)?;
    // The hyperparameters become a dict by column name, which `predict` reads back.
    let columns = |h: HyperState| BTreeMap::<String, f64>::from(h);
    out.set_item("hyper", columns(estimate.hyper))?;
    let map = summary.map.as_ref().unwrap_or(estimate);
    out.set_item("map_labels", to_i64(&map.labels).into_pyarray(py))?;
    out.set_item("map_hyper", columns(map.hyper))?;
    let mut draws = Vec::new();
    for source in &summary.sources {
        for d in py.detach(|| source.read()).py_err()? {
            draws.push((to_i64(&d.labels).into_pyarray(py), columns(d.hyper)));
        }
    }
    out.set_item("draws", draws)?;
    // The point estimates by loss, by the loss's name (none beyond the search's limit), then
    // Dahl's and the best state, as the summary's table names them.
    let by_loss = PyDict::new(py);
    for e in summary.by_loss.iter().flat_map(|b| &b.estimates) {
        let name = nrmm::run::estimates::short_name(e.loss);
        by_loss.set_item(name, to_i64(&e.labels).into_pyarray(py))?;
    }
    by_loss.set_item("dahl", to_i64(&estimate.labels).into_pyarray(py))?;
    by_loss.set_item("map", to_i64(&map.labels).into_pyarray(py))?;
    out.set_item("estimates_by_loss", by_loss)?;
    let json = serde_json::to_string(summary)
        .map_err(|e| PyValueError::new_err(format!("summary: {e}")))?;
    out.set_item("summary", json)?;
    let mut traces = Vec::new();
    for c in spec.chain_indices() {
        let path = chain_dir(dir, c).join("trace.csv");
        let columns = py
            .detach(|| TraceColumns::read(&path, TRACE_ROWS))
            .py_err()?;
        let trace = PyDict::new(py);
        for name in columns.header() {
            let values = columns.column(name).unwrap_or_default().to_vec();
            trace.set_item(name, values.into_pyarray(py))?;
        }
        traces.push(trace);
    }
    out.set_item("traces", traces)?;
    let mut notes = watch
        .notes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    notes.extend(model.columns.as_ref().map(|c| c.note()));
    notes.extend(model.kernel_note.clone());
    out.set_item("notes", notes)?;
    Ok(out)
}
