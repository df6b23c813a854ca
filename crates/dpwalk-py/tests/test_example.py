"""The notebook-style example runs as a script: its own checks pass (dpwalk's local figure
between dp-accounting's and within 1 % of its PLD figure, the network figure below the local
one) and it draws its figure."""

import os
import subprocess
import sys

import pytest

from conftest import REPO

EXAMPLE = REPO / "crates" / "dpwalk-py" / "examples" / "walk_vs_dp_accounting.py"


def test_the_example_runs_and_draws_its_figure(tmp_path):
    for module in ("dp_accounting", "matplotlib"):
        try:
            __import__(module)
        except ImportError:
            why = f"the example needs {module} (scripts/python-tests.sh installs it)"
            if os.environ.get("DPWALK_REQUIRE_BIN"):
                pytest.fail(why)
            pytest.skip(why)
    figure = tmp_path / "figure.png"
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--out", str(figure)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "dpwalk local" in out.stdout and "Assumptions of the network figure" in out.stdout
    # One row per K, each with five finite figures.
    rows = [line.split() for line in out.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) == 7 and all(len(r) == 6 for r in rows), out.stdout
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
