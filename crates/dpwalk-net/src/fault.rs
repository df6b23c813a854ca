//! Fault injection for the end-to-end tests of a fork at the last step: the node that makes step
//! `K` misbehaves between committing it and acknowledging it, the window in which its predecessor
//! cannot tell whether the last step was made.
//!
//! `DPWALK_FAULT=after-last-step:abort` aborts the process there (a crash with the step durable);
//! `DPWALK_FAULT=after-last-step:wait-for:<path>` blocks the node there until `<path>` exists (a
//! stall as long as the test wants, ended by an event rather than a clock). Anything else, or no
//! variable, does nothing.
//!
//! Only with the cargo feature `fault-injection`, which the workspace's tests turn on: without it
//! (the binary `cargo install` makes, and `cargo build`'s) the hook compiles to nothing and the
//! variable is never read, so a variable left set cannot crash a user's node (issue 27). A
//! `cargo test` build writes its own `target/*/dpwalk`, with the hook, for the tests.

/// The variable read once, when a node makes the last step.
pub const VARIABLE: &str = "DPWALK_FAULT";

/// Called by the node that made the last step, after the commit and before the acknowledgement.
pub fn after_last_step() {
    #[cfg(feature = "fault-injection")]
    inject();
}

#[cfg(feature = "fault-injection")]
fn inject() {
    use std::path::PathBuf;
    use std::time::Duration;
    let Ok(fault) = std::env::var(VARIABLE) else {
        return;
    };
    let Some(action) = fault.strip_prefix("after-last-step:") else {
        return;
    };
    if action == "abort" {
        tracing::warn!("{VARIABLE}: aborting after the last step, before acknowledging it");
        std::process::abort();
    }
    if let Some(path) = action.strip_prefix("wait-for:") {
        let path = PathBuf::from(path);
        tracing::warn!(
            "{VARIABLE}: stalled after the last step, before acknowledging it, until {} exists",
            path.display()
        );
        while !path.exists() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
