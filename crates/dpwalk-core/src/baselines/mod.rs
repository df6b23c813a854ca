//! Baselines: the private ADMM algorithms of other papers, run beside dpwalk for the comparison
//! of `shared/specs/seed-baselines.md` (§6).
//!
//! - [`exchange`]: synchronous rounds on an undirected graph (every node sends one vector to
//!   every neighbour), shared by the decentralized baselines;
//! - [`ipadmm`]: Huang & Gong's IPADMM, `l` noisy linearized primal steps per round (Gaussian).

pub mod exchange;
pub mod ipadmm;
#[cfg(test)]
mod test_util;
