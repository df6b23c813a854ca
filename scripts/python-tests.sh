#!/usr/bin/env bash
# Builds the Python package (crates/dpwalk-py) with maturin from its lock file, installs it in a
# virtual environment (target/py-venv) and runs its tests with pytest. The tests compare with the
# CLI, and fail without it: build it first (`cargo build --release`, or the README's test
# command), or set DPWALK_BIN.
# Needs python3 (3.10 or newer for pytest 9; the wheel itself is for 3.9 and newer) with its venv module (Debian: apt-get install python3-venv) and
# PyPI for maturin, pytest, dp-accounting and matplotlib.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/py-venv
if ! "$venv/bin/python" -c '' >/dev/null 2>&1; then
  python3 -m venv --clear "$venv"
fi
# dp-accounting and matplotlib: the example (crates/dpwalk-py/examples) the tests run.
"$venv/bin/pip" install --quiet --disable-pip-version-check "maturin==1.16.0" "pytest==9.2.0" \
  "dp-accounting==0.6.0" "matplotlib==3.11.2"
rm -rf target/wheels
"$venv/bin/maturin" build --release --locked --quiet \
  --manifest-path crates/dpwalk-py/Cargo.toml --out target/wheels
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps \
  target/wheels/dpwalk-*.whl
DPWALK_BIN="${DPWALK_BIN:-$PWD/target/release/dpwalk}" DPWALK_REQUIRE_BIN=1 \
  "$venv/bin/python" -m pytest -q -rs crates/dpwalk-py/tests
