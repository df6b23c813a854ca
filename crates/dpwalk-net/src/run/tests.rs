//! Run-file validation: fuzz regressions, and `[start]`.

use super::*;

/// The example run with its `[topology]` replaced by `topology` (bytes, as a fuzzer input).
fn with_topology(topology: &[u8]) -> Vec<u8> {
    let mut text = Vec::new();
    text.extend_from_slice(
        b"run-id = \"lasso-demo\"\nseed = 7\nsteps = 3000\ndimension = 64\n\
          [problem]\nloss = \"squared\"\n\
          [algorithm]\ngamma = 1.0\nlambda = 0.5\nclip = 1.0\nsigma = 2.0\n\
          [topology]\n",
    );
    text.extend_from_slice(topology);
    text.extend_from_slice(
        b"\n[[members]]\nindex = 0\npeer-id = \"12D3KooWK99VoVxNE7XzyBwXEzW7xhK7Gpv85r9F3V3fyKSUKPH5\"\n\
          [[members]]\nindex = 1\npeer-id = \"12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq\"\n\
          [[members]]\nindex = 2\npeer-id = \"12D3KooWRndVhVZPCiQwHBBBdg769GyrPUW13zxwqQyf9r3ANaba\"\n",
    );
    text
}

fn refused_at(input: &[u8], want_key: &str) {
    let text = std::str::from_utf8(input).unwrap();
    match Run::parse(text, "fuzz.toml") {
        Err(RunError::Invalid { key, .. }) => assert_eq!(key.as_deref(), Some(want_key)),
        other => panic!("expected a refusal at {want_key}, got {other:?}"),
    }
}

#[test]
fn sanity_the_base_run_is_valid() {
    let text = with_topology(b"kind = \"torus\"\nrows = 3\ncols = 3\n");
    // 9 torus nodes for 3 members: refused for the node count, not for anything else.
    refused_at(&text, "topology.nodes");
    let ok = with_topology(b"kind = \"complete\"\n");
    Run::parse(std::str::from_utf8(&ok).unwrap(), "ok.toml").unwrap();
}

/// Fuzz regression (run_file): `rows × cols` overflowed. With overflow checks (fuzz and debug
/// builds) that panicked; without them, 7 × 5270498306774157605 wraps to exactly 3, passed the
/// check against the 3 members, and the generator then looped over the real grid.
#[test]
fn torus_size_overflow_is_refused() {
    refused_at(
        &with_topology(b"kind = \"torus\"\nrows = 4294967296\ncols = 4294967296\n"),
        "topology.cols",
    );
    refused_at(
        &with_topology(b"kind = \"torus\"\nrows = 7\ncols = 5270498306774157605\n"),
        "topology.cols",
    );
}

/// Fuzz regression (run_file): `2 × k` overflowed for a huge small-world `k`.
#[test]
fn small_world_huge_k_is_refused() {
    refused_at(
        &with_topology(b"kind = \"small-world\"\nk = 9223372036854775807\nbeta = 0.5\n"),
        "topology.k",
    );
}

/// `[start]`: the quorum is 1..=n, the timeout at least a second, the defaults written out are
/// the run without the table, and a network budget needs every member at the start.
#[test]
fn start_is_checked_and_its_defaults_keep_the_hash() {
    let base = with_topology(b"kind = \"complete\"\n");
    let base = std::str::from_utf8(&base).unwrap();
    let with_start =
        |start: &str| base.replace("[topology]", &format!("[start]\n{start}\n[topology]"));
    let plain = Run::parse(base, "t").unwrap();
    assert_eq!(plain.start_quorum(), 3);
    let defaults = Run::parse(&with_start("quorum = 3\ntimeout = 600"), "t").unwrap();
    assert_eq!(defaults.hash(), plain.hash());
    let two = Run::parse(&with_start("quorum = 2\ntimeout = 5"), "t").unwrap();
    assert_eq!((two.start_quorum(), two.start_timeout().as_secs()), (2, 5));
    assert_ne!(two.hash(), plain.hash());
    refused_at(with_start("quorum = 0").as_bytes(), "start.quorum");
    refused_at(with_start("quorum = 4").as_bytes(), "start.quorum");
    refused_at(with_start("timeout = 0").as_bytes(), "start.timeout");
    refused_at(
        with_start("timeout = 9223372036854775807").as_bytes(),
        "start.timeout",
    );
    refused_at(with_start("members = 2").as_bytes(), "start.members");
    let network = base
        .replace(
            "gamma = 1.0\nlambda = 0.5\nclip = 1.0\nsigma = 2.0\n",
            "kind = \"dp-sgd\"\nlr = 0.1\nclip = 1.0\n[budget]\nepsilon = 1.0\nview = \"network\"\n",
        )
        .replace("[topology]", "[start]\nquorum = 2\n[topology]");
    match Run::parse(&network, "t") {
        Err(RunError::Invalid { key, message, .. }) => {
            assert_eq!(key.as_deref(), Some("start.quorum"));
            assert!(
                message.contains("network budget needs every member"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}
