//! dpwalk-privacy: Rényi-DP accounting.
//!
//! # Layout
//! - [`local`]: the local view of one contribution (an eavesdropper who sees every token).

pub mod local;
