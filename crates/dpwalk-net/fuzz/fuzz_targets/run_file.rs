//! Arbitrary text as a run file (invalid UTF-8 is replaced, so every input reaches the parser):
//! parsing must never panic, and an accepted run must hash, diff against itself without
//! differences, and have a canonical form that parses back to the same run.
#![no_main]

use dpwalk_net::run::Run;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(run) = Run::parse(&text, "fuzz.toml") else {
        return;
    };
    let hash = run.hash();
    assert!(run.diff(&run).is_empty());
    // The canonical form is a fixed point: it parses, to a run with the same hash and no diff.
    let canonical = run.canonical_toml();
    let again = Run::parse(&canonical, "canonical.toml").expect("a canonical run file parses");
    assert_eq!(again.hash(), hash);
    assert_eq!(again.canonical_toml(), canonical);
    assert!(run.diff(&again).is_empty());
    // The context handed to the codec agrees with the run.
    let ctx = run.context(None);
    assert_eq!(ctx.run_id, run.run_id());
    assert_eq!(ctx.dim, run.dimension());
    assert_eq!(ctx.steps, run.steps());
    assert_eq!(ctx.members.len(), run.members().len());
});
