//! dpwalk-core: everything that decides a number, once.
//!
//! # Layout
//! - [`params`]: validated step parameters (γ, λ, σ, C, learning rate).
//! - [`spec`]: what a run is (problem, step, noise source, topology) as scenario and run files
//!   write it, validated with errors naming the key.
//! - [`rng`]: the run seed → per-user `ChaCha12Rng` streams, and derived seeds.
//! - [`noise`]: the step's Gaussian noise, drawn from a user's stream in bulk.
//! - [`problem`]: losses, regularizers, their prox operators, the objective; [`problem::reference`]
//!   is the non-private reference solver.
//! - [`step`]: the private ADMM step and the DP-SGD baseline step (one contribution of one user).
//! - [`topology`]: graphs, their file format and generators, the walk's next hop.
//! - [`toml_location`]: the line and key of a TOML error, for every file's located errors.
//! - [`baselines`]: the other papers' private ADMM algorithms (IPADMM, penalty perturbation).
//! - [`walk`]: the walk's first holder and a holder's visit (step, then next hop).
//! - [`baselines`]: other papers' algorithms (federated DP-IADMM, federated DP-SGD), compared
//!   with the walk on the same problems.
//! - [`data`]: datasets, loaders, synthetic generators, split and partition among users.
//! - [`durable`]: making a file's directory entry durable (the ledger's and the node's files).
//!
//! No I/O beyond reading files and that one fsync, no async, no networking: the daemon and the
//! simulator are thin drivers around these functions.

pub mod baselines;
pub mod data;
pub mod durable;
pub mod noise;
pub mod params;
pub mod problem;
pub mod rng;
pub mod spec;
pub mod step;
pub mod toml_location;
pub mod topology;
pub mod walk;
