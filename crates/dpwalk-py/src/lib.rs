//! `dpwalk._native`: the Rust half of the `dpwalk` Python package (its Python half,
//! `python/dpwalk/__init__.py`, is what users import).
//!
//! Every figure comes from `dpwalk_privacy` and `dpwalk_sim`, computed by the same functions as
//! the CLI's: a command's document ([`dpwalk_privacy::report`], the simulator's summary and
//! metrics rows) crosses into Python as the JSON the CLI prints, so that
//! `dpwalk.account_gaussian(...)` and `dpwalk account gaussian --json` give the same dict to the
//! last digit. Bad input raises `ValueError` with the CLI's or the accountant's message. Every
//! computation runs with the interpreter released (`Python::detach`): a PLD composition or a
//! simulation can take a while, during which other Python threads go on.

use dpwalk_core::spec::problem::LossName;
use dpwalk_privacy::PrivacyError;
use dpwalk_privacy::ledger::LedgerError;
use dpwalk_privacy::mechanism::subsampled_gaussian;
use dpwalk_privacy::rdp::{Conversion, Orders, RdpCurve};
use dpwalk_privacy::report::{
    CalibrateQuery, CalibrateReport, CalibrateView, Conversions, GaussianReport, GivenWalkQuery,
    GivenWalkReport, LedgerReport, QueryError, ScenarioFlags, Step, WalkQuery, WalkReport,
    WalkView,
};
use dpwalk_privacy::walk::Figure;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;

/// The accountant's refusal as a Python `ValueError` with its message.
fn value_error(e: PrivacyError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A JSON document for Python's `json.loads`.
fn to_json(doc: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(doc).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The order grid: the default one, or the given orders (validated).
fn orders(given: Option<Vec<f64>>) -> PyResult<Orders> {
    match given {
        None => Ok(Orders::default_grid()),
        Some(v) => Orders::new(&v).map_err(value_error),
    }
}

/// The conversion of this name (`"tight"` or `"classic"`).
fn conversion(name: &str) -> PyResult<Conversion> {
    named("conversion", &Conversion::ALL, Conversion::name, name)
}

/// The value among `all` whose name is `given`, or `ValueError` listing the names.
fn named<T: Copy>(what: &str, all: &[T], name: fn(T) -> &'static str, given: &str) -> PyResult<T> {
    all.iter()
        .copied()
        .find(|v| name(*v) == given)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|v| name(*v)).collect();
            PyValueError::new_err(format!(
                "{what} must be one of {}, got {given:?}",
                names.join(", ")
            ))
        })
}

/// A refused query: `OSError` when the topology file cannot be read, else `ValueError`, with the
/// CLI's message (the error and its causes).
fn query_error(e: QueryError) -> PyErr {
    match &e {
        QueryError::Topology {
            source: dpwalk_core::topology::TopologyError::Io { .. },
            ..
        } => PyOSError::new_err(chain(&e)),
        _ => PyValueError::new_err(chain(&e)),
    }
}

/// The scenario keywords of `account_walk` and `calibrate` (the CLI's scenario flags), from the
/// dict the Python layer passes, every key present.
#[derive(Debug, FromPyObject)]
#[pyo3(from_item_all)]
struct ScenarioKw {
    topology: Option<PathBuf>,
    complete: Option<usize>,
    nodes: Option<usize>,
    seed: Option<u64>,
    clip: f64,
    steps_per_user: Option<u64>,
    total_steps: Option<u64>,
    min_records: Option<u64>,
    feature_norm: Option<f64>,
    loss: Option<String>,
    gamma: Option<f64>,
}

impl ScenarioKw {
    /// The library's flags.
    fn flags(self) -> PyResult<ScenarioFlags> {
        let losses = [LossName::Squared, LossName::Logistic, LossName::Multinomial];
        let loss = match self.loss {
            Some(l) => Some(named("loss", &losses, LossName::as_str, &l)?),
            None => None,
        };
        Ok(ScenarioFlags {
            topology: self.topology,
            complete: self.complete,
            nodes: self.nodes,
            seed: self.seed,
            clip: self.clip,
            steps_per_user: self.steps_per_user,
            total_steps: self.total_steps,
            min_records: self.min_records,
            feature_norm: self.feature_norm,
            loss,
            gamma: self.gamma,
        })
    }
}

/// Orders (checked by the query, with the CLI's message), δ and conversion.
fn conversions(
    orders_given: Option<Vec<f64>>,
    delta: f64,
    conversion_name: &str,
) -> PyResult<Conversions> {
    Ok(Conversions {
        orders: orders_given,
        delta,
        conversion: conversion(conversion_name)?,
    })
}

/// `dpwalk account walk --json`: the document, as JSON.
#[pyfunction]
#[pyo3(signature = (scenario, sigma, step, view, pairs, delta, orders_given, conversion_name))]
#[allow(clippy::too_many_arguments)] // the CLI's flags, one by one
fn account_walk(
    py: Python<'_>,
    scenario: ScenarioKw,
    sigma: f64,
    step: &str,
    view: &str,
    pairs: bool,
    delta: f64,
    orders_given: Option<Vec<f64>>,
    conversion_name: &str,
) -> PyResult<String> {
    let query = WalkQuery {
        scenario: scenario.flags()?.query().map_err(query_error)?,
        sigma,
        step: named("step", &Step::ALL, Step::name, step)?,
        view: named("view", &WalkView::ALL, WalkView::name, view)?,
        pairs,
        conversions: conversions(orders_given, delta, conversion_name)?,
    };
    let report = py.detach(|| WalkReport::new(&query)).map_err(query_error)?;
    to_json(&report)
}

/// `dpwalk calibrate --json`: the document, as JSON.
#[pyfunction]
#[pyo3(signature = (epsilon, view, scenario, sample_rate, delta, orders_given, conversion_name))]
#[allow(clippy::too_many_arguments)] // the CLI's flags, one by one
fn calibrate(
    py: Python<'_>,
    epsilon: f64,
    view: &str,
    scenario: ScenarioKw,
    sample_rate: Option<f64>,
    delta: f64,
    orders_given: Option<Vec<f64>>,
    conversion_name: &str,
) -> PyResult<String> {
    let query = CalibrateQuery {
        epsilon,
        view: named("view", &CalibrateView::ALL, CalibrateView::name, view)?,
        scenario: scenario.flags()?.query().map_err(query_error)?,
        sample_rate,
        conversions: conversions(orders_given, delta, conversion_name)?,
    };
    let report = py
        .detach(|| CalibrateReport::new(&query))
        .map_err(query_error)?;
    to_json(&report)
}

/// The certificate given the walk (N2) of a DP-SGD walk's holder sequence, as JSON.
#[pyfunction]
#[pyo3(signature = (holders, users, cap, sigma, clip, delta, orders_given, conversion_name))]
#[allow(clippy::too_many_arguments)] // the keywords, one by one
fn certify_walk(
    py: Python<'_>,
    holders: Vec<usize>,
    users: Option<usize>,
    cap: Option<u64>,
    sigma: f64,
    clip: f64,
    delta: f64,
    orders_given: Option<Vec<f64>>,
    conversion_name: &str,
) -> PyResult<String> {
    let query = GivenWalkQuery {
        holders,
        users,
        cap,
        sigma,
        clip,
        conversions: conversions(orders_given, delta, conversion_name)?,
    };
    let report = py
        .detach(|| GivenWalkReport::new(&query))
        .map_err(query_error)?;
    to_json(&report)
}

/// An error and its causes, outermost first, joined by `: ` (as the CLI prints them).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// What `simulate` returns: the run's `summary.json` and the rows of its `metrics.csv`.
#[derive(Debug, serde::Serialize)]
struct Simulation {
    summary: dpwalk_sim::output::Summary,
    metrics: Vec<dpwalk_sim::output::MetricsRow>,
}

/// `dpwalk sim` without the run directory: the scenario at `path`, or given as TOML `text`
/// (relative paths from the working directory), with the `key=value` overrides `sets` applied
/// in order; returns the summary and the metrics rows, as JSON. An unreadable scenario file
/// raises `OSError`, anything else the simulator refuses `ValueError`, with the CLI's message.
#[pyfunction]
#[pyo3(signature = (path, text, sets, progress))]
fn simulate(
    py: Python<'_>,
    path: Option<PathBuf>,
    text: Option<String>,
    sets: Vec<String>,
    progress: bool,
) -> PyResult<String> {
    use dpwalk_sim::scenario::{ScenarioError, from_text, load};
    use dpwalk_sim::{output, simulate};
    let (loaded, origin) = match (path, text) {
        (Some(path), None) => {
            let loaded = load(&path, &sets).map_err(|e| match e {
                ScenarioError::Read { .. } => PyOSError::new_err(chain(&e)),
                _ => PyValueError::new_err(chain(&e)),
            })?;
            (loaded, path.display().to_string())
        }
        (None, Some(text)) => {
            let origin = PathBuf::from("<dict>");
            let loaded = from_text(&text, &origin, PathBuf::new(), None, &sets)
                .map_err(|e| PyValueError::new_err(chain(&e)))?;
            (loaded, "the scenario dict".to_string())
        }
        _ => {
            return Err(PyValueError::new_err(
                "give a scenario file's path or a scenario dict",
            ));
        }
    };
    let run = py.detach(|| {
        let prepared = simulate::prepare(&loaded)
            .map_err(|e| format!("preparing scenario {origin}: {}", chain(&e)))?;
        let results = simulate::simulate(&loaded, &prepared, !progress)
            .map_err(|e| format!("running scenario {origin}: {}", chain(&e)))?;
        Ok::<_, String>(Simulation {
            summary: output::summarize(&loaded, &prepared, &results),
            metrics: output::metrics_rows(loaded.scenario(), &results),
        })
    });
    to_json(&run.map_err(PyValueError::new_err)?)
}

/// `dpwalk account gaussian --json`: the document, as JSON.
#[pyfunction]
#[pyo3(signature = (noise_multiplier, sample_rate, steps, delta, orders_given, conversion_name))]
fn account_gaussian(
    py: Python<'_>,
    noise_multiplier: f64,
    sample_rate: f64,
    steps: u64,
    delta: f64,
    orders_given: Option<Vec<f64>>,
    conversion_name: &str,
) -> PyResult<String> {
    let (orders, conversion) = (orders(orders_given)?, conversion(conversion_name)?);
    let report = py
        .detach(|| {
            GaussianReport::new(
                &orders,
                noise_multiplier,
                sample_rate,
                steps,
                delta,
                conversion,
            )
        })
        .map_err(value_error)?;
    to_json(&report)
}

/// `dpwalk ledger show PATH --json [--records]`: the document, as JSON. A file that cannot be
/// read raises `OSError`, a damaged or foreign one `ValueError`, each with what to do about it
/// (as the CLI says).
#[pyfunction]
fn ledger_show(py: Python<'_>, path: PathBuf, delta: f64, records: bool) -> PyResult<String> {
    let report = py.detach(|| LedgerReport::read(&path, delta, records));
    let report = report.map_err(|e| {
        let message = match &e {
            LedgerError::Privacy(p @ PrivacyError::Delta(_)) => return value_error(p.clone()),
            LedgerError::Io(io) => format!("{e}: {io}"),
            _ => e.to_string(),
        };
        let message = format!(
            "cannot read the ledger {}: {message}; {}",
            path.display(),
            e.advice()
        );
        match e {
            // With the errno, so that Python raises the matching subclass (FileNotFoundError…).
            LedgerError::Io(io) => match io.raw_os_error() {
                Some(errno) => PyOSError::new_err((errno, message)),
                None => PyOSError::new_err(message),
            },
            _ => PyValueError::new_err(message),
        }
    })?;
    to_json(&report)
}

/// A running composition of Gaussian and Poisson-subsampled Gaussian mechanisms: an RDP curve
/// that carries, where they hold, the exact Gaussian bound and the runs of one subsampled
/// Gaussian, so that its (ε, δ) is the exact or PLD figure as in the CLI
/// ([`dpwalk_privacy::rdp`], "Gaussian bounds" and "Subsampled Gaussian runs").
#[pyclass(name = "RdpCurve", module = "dpwalk._native")]
#[derive(Debug, Clone)]
struct PyCurve {
    curve: RdpCurve,
}

#[pymethods]
impl PyCurve {
    /// The curve of a mechanism that reveals nothing, on the default grid or the given orders.
    #[new]
    #[pyo3(signature = (orders_given=None))]
    fn new(orders_given: Option<Vec<f64>>) -> PyResult<Self> {
        Ok(Self {
            curve: RdpCurve::zero(&orders(orders_given)?),
        })
    }

    /// This curve composed with `count` runs of the Gaussian mechanism of noise multiplier
    /// `noise_multiplier`, Poisson-subsampled at `sample_rate` (1: no subsampling).
    fn compose_gaussian(
        &mut self,
        py: Python<'_>,
        noise_multiplier: f64,
        sample_rate: f64,
        count: u64,
    ) -> PyResult<()> {
        let orders = self.curve.orders();
        let runs = py
            .detach(|| subsampled_gaussian(orders, sample_rate, noise_multiplier))
            .map_err(value_error)?
            .repeat(count);
        self.curve.compose_in_place(&runs).map_err(value_error)
    }

    /// The (ε, δ) figure at `delta`, as the CLI's JSON prints a figure (`epsilon` is `null`
    /// when there is no finite guarantee).
    fn figure(&self, py: Python<'_>, delta: f64, conversion_name: &str) -> PyResult<String> {
        let (curve, conversion) = (&self.curve, conversion(conversion_name)?);
        let bound = py
            .detach(|| curve.to_dp(delta, conversion))
            .map_err(value_error)?;
        to_json(&Figure::from(bound))
    }

    /// The orders.
    fn orders(&self) -> Vec<f64> {
        self.curve.orders().as_slice().to_vec()
    }

    /// ε(α) at each order.
    fn values(&self) -> Vec<f64> {
        self.curve.values().to_vec()
    }

    /// A copy (to try a composition without committing it).
    fn copy(&self) -> Self {
        self.clone()
    }
}

/// The Python module `dpwalk._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DEFAULT_DELTA", dpwalk_core::spec::DEFAULT_DELTA)?;
    m.add(
        "METRICS_COLUMNS",
        dpwalk_sim::output::METRICS_COLUMNS.to_vec(),
    )?;
    m.add_function(wrap_pyfunction!(account_gaussian, m)?)?;
    m.add_function(wrap_pyfunction!(ledger_show, m)?)?;
    m.add_function(wrap_pyfunction!(account_walk, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(certify_walk, m)?)?;
    m.add_class::<PyCurve>()?;
    Ok(())
}
