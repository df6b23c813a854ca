//! Simulator (in progress).

pub mod plot;
