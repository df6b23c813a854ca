//! Arbitrary bytes as a frame: decoding must never panic, and whatever decodes must re-encode to
//! the same bytes (the format has one encoding per message).
#![no_main]

use dpwalk_net::codec::{decode_frame, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = decode_frame(data) {
        let again = encode(&message).expect("a decoded message re-encodes");
        assert_eq!(again, data);
    }
});
