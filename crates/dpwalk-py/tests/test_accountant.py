"""The accountant from Python: the same figures as the CLI, the exact Gaussian conversion,
the PLD figure against dp-accounting, and the CLI's refusals as ValueError."""

import json
import math
import subprocess

import pytest

import dpwalk
from conftest import FIXTURES


def phi(x: float) -> float:
    """The standard normal CDF."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def gdp_delta(mu: float, eps: float) -> float:
    """δ(ε) of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13), written here independently of Rust."""
    return phi(-eps / mu + mu / 2.0) - math.exp(eps) * phi(-eps / mu - mu / 2.0)


def cli_json(binary, *args) -> dict:
    out = subprocess.run(
        [str(binary), *args, "--json"], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


@pytest.mark.parametrize(
    "z, q, steps, delta, conversion",
    [
        (1.0, 1.0, 100, 1e-5, "tight"),
        (1.0, 0.01, 100, 1e-5, "tight"),
        (0.8, 0.1, 1000, 1e-6, "classic"),
        (5.0, 0.001, 1, 1e-6, "tight"),
    ],
)
def test_account_gaussian_is_the_cli_document(dpwalk_bin, z, q, steps, delta, conversion):
    ours = dpwalk.account_gaussian(
        noise_multiplier=z, sample_rate=q, steps=steps, delta=delta, conversion=conversion
    )
    theirs = cli_json(
        dpwalk_bin,
        "account",
        "gaussian",
        "--noise-multiplier",
        repr(z),
        "--sample-rate",
        repr(q),
        "--steps",
        str(steps),
        "--delta",
        repr(delta),
        "--conversion",
        conversion,
    )
    assert ours == theirs


def test_given_orders_are_the_cli_orders(dpwalk_bin):
    ours = dpwalk.account_gaussian(noise_multiplier=2.0, steps=10, orders=[1.5, 2, 32])
    theirs = cli_json(
        dpwalk_bin, "account", "gaussian", "--noise-multiplier", "2", "--steps", "10",
        "--orders", "1.5,2,32",
    )
    assert ours == theirs
    assert ours["orders"] == [1.5, 2.0, 32.0]


@pytest.mark.parametrize("z, steps, delta", [(1.0, 1, 1e-5), (1.0, 100, 1e-6), (50.0, 1000, 1e-9)])
def test_the_gaussian_figure_is_the_exact_conversion(z, steps, delta):
    doc = dpwalk.account_gaussian(noise_multiplier=z, steps=steps, delta=delta)
    mu = math.sqrt(steps) / z
    assert doc["exact_gaussian_mu"] == pytest.approx(mu, rel=1e-12)
    eps = doc["epsilon"]
    # It meets δ, and nothing 1e-6 smaller does: the exact figure, not a bound above it.
    assert gdp_delta(mu, eps) <= delta * (1 + 1e-9)
    assert gdp_delta(mu, eps * (1 - 1e-6)) > delta
    assert eps < doc["rdp_epsilon"]


def test_the_subsampled_figure_is_within_one_percent_of_dp_accounting_pld():
    reference = json.loads((FIXTURES / "pld_reference.json").read_text())
    rows = [
        r for r in reference["rows"] if r["kind"] == "subsampled_gaussian" and r["q"] < 1.0
    ]
    assert len(rows) >= 30
    ratios = []
    for row in rows:
        for delta, theirs in row["epsilon"].items():
            acc = dpwalk.Accountant()
            event = dpwalk.PoissonSampledEvent(row["q"], dpwalk.GaussianEvent(row["z"]))
            figure = acc.compose(event, row["steps"]).figure(float(delta))
            ours = figure["epsilon"]
            assert figure["pld_interval"] is not None
            assert ours <= figure["rdp_epsilon"]
            ratios.append(ours / theirs)
            assert 0.99 <= ours / theirs <= 1.01, (row, delta, ours, theirs)
    print(f"ours / dp-accounting PLD in [{min(ratios):.6f}, {max(ratios):.6f}]")


def test_the_accountant_composes_as_the_command_does():
    acc = dpwalk.Accountant()
    event = dpwalk.PoissonSampledEvent(0.01, dpwalk.GaussianEvent(1.0))
    acc.compose(event, 60).compose(event, 40)
    doc = dpwalk.account_gaussian(noise_multiplier=1.0, sample_rate=0.01, steps=100, delta=1e-5)
    # 60 runs then 40 are 100 runs: the same PLD figure, the same curve up to rounding.
    assert acc.orders == doc["orders"]
    assert acc.rdp == pytest.approx(doc["rdp"], rel=1e-12)
    assert acc.get_epsilon(1e-5) == doc["epsilon"]
    assert dpwalk.Accountant().compose(event, 100).rdp == doc["rdp"]
    gauss = dpwalk.Accountant().compose(dpwalk.GaussianEvent(2.0), 25)
    assert gauss.figure(1e-5)["exact_gaussian_mu"] == pytest.approx(2.5, rel=1e-12)


def test_mixed_events_fall_back_to_rdp_above_each_part():
    sub = dpwalk.PoissonSampledEvent(0.01, dpwalk.GaussianEvent(1.0))
    gauss = dpwalk.GaussianEvent(10.0)
    mixed = dpwalk.Accountant().compose(sub, 100).compose(gauss, 10).figure(1e-5)
    assert mixed["pld_interval"] is None and mixed["exact_gaussian_mu"] is None
    assert mixed["epsilon"] >= dpwalk.Accountant().compose(sub, 100).get_epsilon(1e-5)
    assert mixed["epsilon"] >= dpwalk.Accountant().compose(gauss, 10).get_epsilon(1e-5)


def test_would_exceed_leaves_the_accountant_as_it_was():
    acc = dpwalk.Accountant().compose(dpwalk.GaussianEvent(5.0), 10)
    before = acc.get_epsilon(1e-6)
    assert acc.would_exceed(dpwalk.GaussianEvent(5.0), 10_000, epsilon=before * 2, delta=1e-6)
    assert not acc.would_exceed(dpwalk.GaussianEvent(5.0), 1, epsilon=before * 2, delta=1e-6)
    assert acc.get_epsilon(1e-6) == before


def test_nothing_composed_is_zero_and_no_finite_order_is_infinite():
    assert dpwalk.Accountant().get_epsilon(1e-6) == 0.0
    # Noise so small that the curve is +inf at every order: no finite guarantee, said as such.
    acc = dpwalk.Accountant(orders=[2, 1024]).compose(dpwalk.GaussianEvent(1e-300), 1)
    assert acc.figure(1e-6)["epsilon"] is None
    assert acc.get_epsilon(1e-6) == math.inf


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: dpwalk.account_gaussian(noise_multiplier=-1.0), "noise multiplier must be > 0"),
        (lambda: dpwalk.account_gaussian(noise_multiplier=1.0, delta=2.0), "delta must be in (0, 1)"),
        (
            lambda: dpwalk.account_gaussian(noise_multiplier=1.0, sample_rate=1.5),
            "sampling rate must be in (0, 1]",
        ),
        (lambda: dpwalk.account_gaussian(noise_multiplier=1.0, steps=-1), "steps must be"),
        (lambda: dpwalk.account_gaussian(noise_multiplier=1.0, steps=2**64), "steps must be"),
        (lambda: dpwalk.Accountant().compose(dpwalk.GaussianEvent(1.0), 2.0), "count must be"),
        (lambda: dpwalk.account_gaussian(noise_multiplier=1.0, orders=[2, 1e7]), "at most 1048576"),
        (
            lambda: dpwalk.Accountant().would_exceed(dpwalk.GaussianEvent(1.0), 1, math.nan),
            "epsilon must be > 0",
        ),
        (lambda: dpwalk.account_gaussian(noise_multiplier=1.0, conversion="loose"), "conversion must be one of tight, classic"),
        (lambda: dpwalk.account_gaussian(noise_multiplier=1.0, orders=[2, 1.5]), "increasing"),
        (lambda: dpwalk.Accountant(orders=[0.5]), "order"),
        (lambda: dpwalk.Accountant().compose("gaussian"), "composes GaussianEvent"),
        (lambda: dpwalk.Accountant().get_epsilon(0.0), "delta must be in (0, 1)"),
    ],
)
def test_bad_input_raises_value_error_with_the_accountants_message(call, message):
    with pytest.raises(ValueError, match=None) as info:
        call()
    assert message in str(info.value)


def test_bools_and_strings_are_not_numbers():
    with pytest.raises(ValueError, match="noise_multiplier must be a number"):
        dpwalk.account_gaussian(noise_multiplier=True)
    with pytest.raises(ValueError, match="sample_rate must be a number"):
        dpwalk.account_gaussian(noise_multiplier=1.0, sample_rate="0.5")
    with pytest.raises(ValueError, match="noise_multiplier must be a number"):
        dpwalk.Accountant().compose(dpwalk.GaussianEvent(True))
    # NumPy's numbers are numbers.
    numpy = pytest.importorskip("numpy")
    doc = dpwalk.account_gaussian(noise_multiplier=numpy.float64(1.0), steps=numpy.int64(3))
    assert doc == dpwalk.account_gaussian(noise_multiplier=1.0, steps=3)
