//! Baselines: the private ADMM algorithms of other papers, run beside dpwalk on the same
//! problems, data and accountant, for the comparison of `shared/specs/seed-baselines.md` (§6).
//!
//! - [`dp_iadmm`]: Ryu & Kim's DP-IADMM (ObjP and ObjT), federated, Laplace noise;
//! - [`fed_sgd`]: federated DP-SGD, the walk's DP-SGD message averaged by a server;
//! - [`federated`]: what the federated baselines share (bytes per round, errors);
//! - [`laplace`]: the Laplace sampler;
//! - [`exchange`]: synchronous rounds on an undirected graph (every node sends one vector to
//!   every neighbour), shared by the decentralized baselines;
//! - [`ipadmm`]: Huang & Gong's IPADMM, `l` noisy linearized primal steps per round (Gaussian);
//! - [`pp_admm`]: Zhang, Khalili & Liu's M-ADMM with penalty perturbation (pure DP);
//! - `radial`: the noise of density `∝ exp(−ν‖ε‖₂)` that penalty perturbation adds.

pub mod dp_iadmm;
pub mod exchange;
pub mod fed_sgd;
pub mod federated;
pub mod ipadmm;
pub mod laplace;
pub mod pp_admm;
mod radial;
#[cfg(test)]
mod test_util;
