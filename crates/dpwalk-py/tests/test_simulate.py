"""The simulator from Python: the same summary and metrics as `dpwalk sim`'s summary.json and
metrics.csv, from a file or a dict, with overrides, and the CLI's refusals."""

import csv
import math
import subprocess

import pytest

import dpwalk
from conftest import REPO

numpy = pytest.importorskip("numpy")

QUICKSTART = REPO / "sim" / "quickstart.toml"


def without_throughput(summary: dict) -> dict:
    """The summary less its wall-clock figures, which differ from run to run."""
    points = [{k: v for k, v in p.items() if k != "throughput"} for p in summary["points"]]
    return {**summary, "points": points}


def cli_sim(binary, tmp_path, *args) -> tuple:
    out = tmp_path / "run"
    done = subprocess.run(
        [str(binary), "sim", str(QUICKSTART), "--out", str(out), "--quiet", *args],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    import json

    summary = json.loads((out / "summary.json").read_text())
    with open(out / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return summary, rows


def assert_metrics_equal(ours: dict, rows: list):
    assert list(ours) == list(rows[0])
    for name, column in ours.items():
        assert len(column) == len(rows)
        fields = [r[name] for r in rows]
        if name == "algorithm":
            assert column.tolist() == fields
        elif column.dtype == numpy.int64:
            assert column.tolist() == [int(v) for v in fields], name
        else:
            expected = [math.nan if v == "" else float(v) for v in fields]
            assert column.dtype == numpy.float64
            # Bit for bit: the CSV prints the shortest form that reads back exactly.
            numpy.testing.assert_array_equal(column, numpy.array(expected), err_msg=name)


def test_simulate_is_dpwalk_sim(dpwalk_bin, tmp_path):
    summary, rows = cli_sim(dpwalk_bin, tmp_path, "--set", "algorithm.sigma=0.2", "--seed", "3")
    run = dpwalk.simulate(QUICKSTART, overrides={"algorithm.sigma": 0.2}, seed=3)
    assert without_throughput(run.summary) == without_throughput(summary)
    assert run.summary["seed"] == 3
    assert_metrics_equal(run.metrics, rows)
    # The run learned something, so the comparison is not of empty columns.
    assert len(rows) > 5 and numpy.isfinite(run.metrics["relative_gap"]).all()


def test_a_dict_scenario_is_its_file(tmp_path):
    tomllib = pytest.importorskip("tomllib")
    with open(QUICKSTART, "rb") as f:
        scenario = tomllib.load(f)
    scenario["steps"] = 20000
    from_dict = dpwalk.simulate(scenario, overrides=["algorithm.sigma=0.5"])
    from_file = dpwalk.simulate(QUICKSTART, overrides={"steps": 20000, "algorithm.sigma": 0.5})
    assert without_throughput(from_dict.summary) == without_throughput(from_file.summary)
    for name in from_file.metrics:
        numpy.testing.assert_array_equal(from_dict.metrics[name], from_file.metrics[name])


def test_repetitions_and_points_are_columns():
    run = dpwalk.simulate(
        QUICKSTART, overrides={"steps": 20000, "repetitions": 2, "sweep.sigma": [0.5, 1.0]}
    )
    assert sorted(set(run.metrics["point"].tolist())) == [0, 1]
    assert sorted(set(run.metrics["repetition"].tolist())) == [0, 1]
    assert len(run.summary["points"]) == 2
    frame_ok = True
    try:
        import pandas  # noqa: F401
    except ImportError:
        frame_ok = False
    if frame_ok:
        frame = run.metrics_frame()
        assert list(frame.columns) == list(run.metrics)


@pytest.mark.parametrize(
    "args, overrides",
    [
        (["--set", "algorithm.sigma=-1"], {"algorithm.sigma": -1.0}),
        (["--set", "no.such.key=1"], {"no.such.key": 1}),
        (["--set", "users=1"], {"users": 1}),
    ],
)
def test_refusals_raise_the_cli_message(dpwalk_bin, tmp_path, args, overrides):
    with pytest.raises(ValueError) as raised:
        dpwalk.simulate(QUICKSTART, overrides=overrides)
    out = subprocess.run(
        [str(dpwalk_bin), "--log-level", "warn", "sim", str(QUICKSTART), "--out", str(tmp_path / "r"), "--quiet", *args],
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert out.stderr.strip() == f"error: {raised.value}".strip()


def test_a_missing_scenario_raises_oserror(tmp_path):
    with pytest.raises(OSError) as raised:
        dpwalk.simulate(tmp_path / "nope.toml")
    assert "nope.toml" in str(raised.value)


def test_a_bad_value_in_a_dict_raises_valueerror():
    with pytest.raises(ValueError, match="scenario value"):
        dpwalk.simulate({"users": None})
    with pytest.raises(ValueError, match="not a string"):
        dpwalk.simulate(QUICKSTART, overrides="algorithm.sigma=1")


def test_overrides_take_numpy_numbers_and_any_unicode():
    small = {"steps": 20000}
    plain = dpwalk.simulate(QUICKSTART, overrides={**small, "algorithm.sigma": 0.5})
    with_numpy = dpwalk.simulate(
        QUICKSTART, overrides={"steps": numpy.int64(20000), "algorithm.sigma": numpy.float64(0.5)}
    )
    assert without_throughput(with_numpy.summary) == without_throughput(plain.summary)
    swept = dpwalk.simulate(QUICKSTART, overrides={**small, "sweep.sigma": numpy.array([0.5, 1.0])})
    assert len(swept.summary["points"]) == 2
    for name in ["run😀", 'quote " and \\ backslash', "del\x7fchar", "tab\tand\nnewline"]:
        run = dpwalk.simulate(QUICKSTART, overrides={**small, "name": name})
        assert run.summary["scenario"] == name
    with pytest.raises(ValueError, match="valid Unicode"):
        dpwalk.simulate(QUICKSTART, overrides={"name": "lone \ud83d"})
