//! Baselines from other papers, run beside the walk on the same problems, data and accountant.
//!
//! Each family lives in its own module; see `shared/specs/seed-baselines.md` for the papers'
//! algorithms, their errors and how they are compared.

pub mod dp_iadmm;
pub mod fed_sgd;
pub mod federated;
pub mod laplace;
