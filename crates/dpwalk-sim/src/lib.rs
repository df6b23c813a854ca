//! dpwalk-sim: whole swarms in one process, driven through the same step code as the daemon.
//!
//! # Layout
//! - [`algorithm`]: the `[algorithm]` section (kinds, schedules, their keys and defaults).
//! - [`scenario`]: `sim/*.toml` files, `--set` overrides, validation into sweep points.
//! - [`simulate`]: prepares a scenario once (data, partition, problem, topology, reference
//!   optimum) and runs its points × repetitions in parallel.
//! - [`run`]: one run on a virtual clock: the walk, federated or centralized schedule.
//! - [`metrics`]: what an evaluation measures.
//! - [`privacy`]: budgets → calibrated σ and contribution caps; the privacy figures of a point.
//! - [`record_level`]: `[privacy] unit = "record"` for dpwalk's own kinds (the clip they are
//!   accounted with).
//! - [`output`]: the run directory (`summary.json`, `metrics.csv`, final models, plots).
//! - [`plot`]: PNG and SVG figures with a vendored font.
//! - [`compare`], [`spent`]: the comparison's figures beyond privacy–utility (convergence
//!   against rounds, bytes and computing time; privacy spent against rounds); the views panel of
//!   dpwalk's own algorithms is drawn from the summary by [`output`].
//! - [`reproduce`]: the reproduction panels (each paper's figure under its own accounting, the
//!   common accountant's total beside every point).
//! - [`tune`]: `dpwalk tune`: the same number of configurations per algorithm, scored on a
//!   validation split carved from the training records (equal tuning effort for a comparison).
//! - [`audit`]: `dpwalk audit`: measured leakage (an empirical lower bound ε̂) beside the
//!   accountant's bound, from short walks in two worlds through the same step.
//!
//! # Usage
//! ```no_run
//! use dpwalk_sim::{scenario, simulate, output};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let loaded = scenario::load("sim/quickstart.toml".as_ref(), &[])?;
//! let prepared = simulate::prepare(&loaded)?;
//! let results = simulate::simulate(&loaded, &prepared, true)?;
//! let summary = output::write_all("runs/example".as_ref(), &loaded, &prepared, &results)?;
//! println!("{}", summary.points[0].final_mean.relative_gap);
//! # Ok(()) }
//! ```

pub mod algorithm;
pub mod audit;
pub mod baseline_privacy;
pub mod compare;
pub mod given_walk;
pub mod method;
pub mod metrics;
pub mod output;
pub mod plot;
pub mod privacy;
pub mod record_level;
pub mod reproduce;
pub mod resolved;
pub mod rounds;
pub mod run;
pub mod scenario;
pub mod simulate;
pub mod spent;
pub mod tune;
