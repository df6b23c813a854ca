//! Baselines: the private ADMM algorithms of other papers, run beside dpwalk for the comparison
//! of `shared/specs/seed-baselines.md` (§6).
//!
//! - [`exchange`]: synchronous rounds on an undirected graph (every node sends one vector to
//!   every neighbour), shared by the decentralized baselines;
//! - [`ipadmm`]: Huang & Gong's IPADMM, `l` noisy linearized primal steps per round (Gaussian);
//! - [`pp_admm`]: Zhang, Khalili & Liu's M-ADMM with penalty perturbation (pure DP);
//! - `radial`: the noise of density `∝ exp(−ν‖ε‖₂)` that penalty perturbation adds.

pub mod exchange;
pub mod ipadmm;
pub mod pp_admm;
mod radial;
#[cfg(test)]
mod test_util;
