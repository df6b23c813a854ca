"""Paths the tests share: the repository's fixtures and the CLI binary built by cargo."""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = REPO / "crates" / "dpwalk-privacy" / "tests" / "fixtures"


@pytest.fixture(scope="session")
def dpwalk_bin() -> pathlib.Path:
    """The `dpwalk` binary to compare with: $DPWALK_BIN, else target/release/dpwalk (built by
    the README's test command, `cargo test --workspace --release --locked`)."""
    path = pathlib.Path(os.environ.get("DPWALK_BIN", REPO / "target" / "release" / "dpwalk"))
    if not path.is_file():
        why = f"no dpwalk binary at {path}: build it (cargo build --release) or set DPWALK_BIN"
        # scripts/python-tests.sh (and so CI) requires the comparison; a bare pytest skips it.
        if os.environ.get("DPWALK_REQUIRE_BIN"):
            pytest.fail(why)
        pytest.skip(why)
    return path
