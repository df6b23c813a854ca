#!/usr/bin/env bash
# Builds the Python package (crates/dpwalk-py) with maturin from its lock file, installs it in a
# virtual environment (target/py-venv) and runs its tests with pytest. The tests compare with the
# CLI: build it first (`cargo build --release`, or the README's test command), or set DPWALK_BIN.
# Needs python3 (3.9 or newer) with its venv module (Debian: apt-get install python3-venv) and
# PyPI for maturin and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/py-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.16,<2" "pytest>=7"
rm -rf target/wheels
"$venv/bin/maturin" build --release --locked --quiet \
  --manifest-path crates/dpwalk-py/Cargo.toml --out target/wheels
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps \
  target/wheels/dpwalk-*.whl
DPWALK_BIN="${DPWALK_BIN:-$PWD/target/release/dpwalk}" \
  "$venv/bin/python" -m pytest -q crates/dpwalk-py/tests
