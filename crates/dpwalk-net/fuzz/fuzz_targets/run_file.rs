//! Arbitrary text as a run file: parsing must never panic, and an accepted run must hash and
//! diff against itself without differences.
#![no_main]

use dpwalk_net::run::Run;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(run) = Run::parse(text, "fuzz.toml") {
        let _ = run.hash();
        assert!(run.diff(&run).is_empty());
    }
});
