"""The walk's figures and calibration from Python: the same dicts as `dpwalk account walk
--json` and `dpwalk calibrate --json`, calibration that reads back through the walk's figures,
and the CLI's refusals raised with the CLI's words."""

import json
import math
import subprocess

import pytest

import dpwalk
from conftest import REPO

RING = REPO / "topologies" / "ring-100.toml"


def flags(kwargs: dict) -> list:
    """The CLI flags of Python keywords: `steps_per_user=3` is `--steps-per-user 3`."""
    out = []
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        else:
            out += [flag, repr(value) if isinstance(value, float) else str(value)]
    return out


def cli(binary, command: list, kwargs: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(binary), *command, *flags(kwargs)], capture_output=True, text=True
    )


def cli_json(binary, command: list, kwargs: dict) -> dict:
    out = cli(binary, command, {**kwargs, "json": True})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


WALKS = [
    # The example: an ADMM walk has the local figure and says why no network one.
    dict(complete=1000, sigma=50.0, clip=1.0, steps_per_user=100, delta=1e-6),
    dict(complete=1000, sigma=50.0, clip=1.0, steps_per_user=100, delta=1e-6, step="dp-sgd"),
    dict(complete=1000, sigma=5.0, clip=1.0, total_steps=20000, step="dp-sgd", view="network"),
    dict(complete=12, sigma=20.0, clip=1.0, steps_per_user=1, step="dp-sgd", pairs=True),
    dict(topology=RING, sigma=20.0, clip=1.0, steps_per_user=1, step="dp-sgd", pairs=True),
    dict(
        complete=100,
        sigma=2.0,
        clip=1.0,
        steps_per_user=3,
        min_records=100,
        feature_norm=1.0,
        loss="multinomial",
        gamma=0.5,
        conversion="classic",
    ),
    dict(complete=100, sigma=2.0, clip=1.0, steps_per_user=3, orders=None, view="local"),
]


@pytest.mark.parametrize("kwargs", WALKS)
def test_account_walk_is_the_cli_document(dpwalk_bin, kwargs):
    ours = dpwalk.account_walk(**kwargs)
    theirs = cli_json(
        dpwalk_bin, ["account", "walk"], {k: v for k, v in kwargs.items() if v is not None}
    )
    assert ours == theirs


def test_the_admm_walk_says_why_it_has_no_network_figure():
    doc = dpwalk.account_walk(complete=1000, sigma=50, clip=1, steps_per_user=100, delta=1e-6)
    assert doc["users"][0]["network"] is None
    assert "no network bound is proved for the ADMM walk" in doc["network_withheld"]
    assert doc["users"][0]["local"]["epsilon"] > 0
    sgd = dpwalk.account_walk(
        complete=1000, sigma=50, clip=1, steps_per_user=100, delta=1e-6, step="dp-sgd"
    )
    # The same local figure; the network one is below it (it is min(local, network) by order).
    assert sgd["users"][0]["local"] == doc["users"][0]["local"]
    assert sgd["users"][0]["network"]["epsilon"] <= sgd["users"][0]["local"]["epsilon"]
    assert sgd["assumptions"] and sgd["network_withheld"] is None


CALIBRATIONS = [
    dict(epsilon=1.0, complete=1000, clip=1.0, steps_per_user=10),
    dict(epsilon=1.0, complete=1000, clip=1.0, steps_per_user=10, view="network", delta=1e-6),
    dict(epsilon=2.0, complete=1000, clip=1.0, total_steps=10000, view="network"),
    dict(epsilon=1.0, complete=1000, clip=0.5, steps_per_user=10, view="centralized"),
    dict(epsilon=1.0, complete=1000, clip=1.0, steps_per_user=10, view="federated", sample_rate=0.01),
    dict(epsilon=1.0, complete=1000, clip=1.0, steps_per_user=10, min_records=50, feature_norm=2.0),
    dict(epsilon=0.5, topology=RING, clip=1.0, steps_per_user=4, conversion="classic"),
]


@pytest.mark.parametrize("kwargs", CALIBRATIONS)
def test_calibrate_is_the_cli_document(dpwalk_bin, kwargs):
    assert dpwalk.calibrate(**kwargs) == cli_json(dpwalk_bin, ["calibrate"], kwargs)


@pytest.mark.parametrize(
    "view, figure", [("local", "local"), ("network", "network")]
)
def test_calibration_reads_back_through_the_walk(view, figure):
    """σ calibrated for a view meets the target when the walk is accounted at that σ, and the
    calibration's tolerance leaves little on the table (σ 1 % smaller misses the target)."""
    scenario = dict(complete=500, clip=1.0, steps_per_user=20, delta=1e-6)
    cal = dpwalk.calibrate(epsilon=1.0, view=view, **scenario)
    assert cal["epsilon"] <= 1.0

    def eps(sigma):
        doc = dpwalk.account_walk(sigma=sigma, step="dp-sgd", **scenario)
        return doc["users"][0][figure]["epsilon"]

    assert eps(cal["sigma"]) == pytest.approx(cal["epsilon"], rel=1e-12)
    assert eps(cal["sigma"] * 0.99) > 1.0


REFUSED = [
    ("account walk", dict(complete=100, sigma=0.0, clip=1.0, steps_per_user=3)),
    ("account walk", dict(complete=100, sigma=1.0, clip=0.0, steps_per_user=3)),
    ("account walk", dict(complete=1, sigma=1.0, clip=1.0, steps_per_user=3)),
    ("account walk", dict(complete=100, sigma=1.0, clip=1.0, steps_per_user=3, delta=1.5)),
    ("account walk", dict(complete=100, sigma=1.0, clip=1.0, steps_per_user=3, pairs=True)),
    (
        "account walk",
        dict(complete=100, sigma=1.0, clip=1.0, steps_per_user=3, view="local", pairs=True),
    ),
    (
        "account walk",
        dict(complete=100, sigma=1.0, clip=1.0, steps_per_user=3, min_records=0, feature_norm=1.0),
    ),
    (
        "account walk",
        dict(
            complete=100,
            sigma=1.0,
            clip=1.0,
            steps_per_user=3,
            min_records=10,
            feature_norm=1.0,
            loss="squared",
        ),
    ),
    (
        "account walk",
        dict(
            complete=100,
            sigma=1.0,
            clip=1.0,
            steps_per_user=3,
            min_records=10,
            feature_norm=1.0,
            gamma=-1.0,
        ),
    ),
    # An ADMM network request: the reason the view is withdrawn, as an error.
    ("account walk", dict(complete=100, sigma=1.0, clip=1.0, steps_per_user=3, view="network")),
    ("calibrate", dict(epsilon=1.0, complete=10, clip=1.0, steps_per_user=3, view="federated")),
    (
        "calibrate",
        dict(epsilon=1.0, complete=10, clip=1.0, steps_per_user=3, view="federated", sample_rate=0.0),
    ),
    ("calibrate", dict(epsilon=1.0, complete=10, clip=1.0, steps_per_user=3, sample_rate=0.5)),
    ("calibrate", dict(epsilon=-1.0, complete=10, clip=1.0, steps_per_user=3)),
    ("calibrate", dict(epsilon=1.0, complete=10, clip=1.0, steps_per_user=3, delta=2.0)),
    ("calibrate", dict(epsilon=1.0, complete=10, clip=-1.0, steps_per_user=3)),
    ("calibrate", dict(epsilon=1.0, topology=RING, clip=1.0, steps_per_user=3, view="network")),
]


@pytest.mark.parametrize("command, kwargs", REFUSED)
def test_refusals_raise_the_cli_message(dpwalk_bin, command, kwargs):
    function = dpwalk.account_walk if command == "account walk" else dpwalk.calibrate
    with pytest.raises(ValueError) as raised:
        function(**kwargs)
    out = cli(dpwalk_bin, command.split(), kwargs)
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip() == f"error: {raised.value}"


def test_a_missing_topology_file_raises_oserror_with_the_cli_message(dpwalk_bin, tmp_path):
    kwargs = dict(topology=tmp_path / "no-such.toml", sigma=1.0, clip=1.0, steps_per_user=3)
    with pytest.raises(OSError) as raised:
        dpwalk.account_walk(**kwargs)
    out = cli(dpwalk_bin, ["account", "walk"], kwargs)
    assert out.stderr.strip() == f"error: {raised.value}"


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(sigma=1.0, clip=1.0, steps_per_user=3), "--topology FILE or --complete N"),
        (
            dict(complete=10, topology=RING, sigma=1.0, clip=1.0, steps_per_user=3),
            "--topology FILE or --complete N",
        ),
        (dict(complete=10, sigma=1.0, clip=1.0), "--steps-per-user K or --total-steps T"),
        (
            dict(complete=10, sigma=1.0, clip=1.0, steps_per_user=3, total_steps=30),
            "--steps-per-user K or --total-steps T",
        ),
        (dict(complete=10, sigma=1.0, clip=1.0, steps_per_user=3, min_records=5), "go together"),
        (dict(complete=10, sigma=1.0, clip=1.0, steps_per_user=3, gamma=0.5), "record level"),
        (dict(complete=10, sigma=1.0, clip=1.0, steps_per_user=3, nodes=5), "topology files"),
        (dict(complete=10, sigma=1.0, clip=1.0, steps_per_user=3, step="sgd"), "admm, dp-sgd"),
        (dict(complete=10, sigma=1.0, clip=1.0, steps_per_user=3, view="all"), "local, network"),
        (dict(complete=10, sigma=1.0, clip=1.0, steps_per_user=3, loss="hinge"), "logistic"),
        (dict(complete=-10, sigma=1.0, clip=1.0, steps_per_user=3), "complete"),
        (dict(complete=10, sigma=1.0, clip=1.0, steps_per_user=2.5), "steps_per_user"),
    ],
)
def test_options_that_do_not_go_together_raise_valueerror(kwargs, needle):
    """What clap refuses before the CLI runs is refused by the library here, in its words."""
    with pytest.raises(ValueError) as raised:
        dpwalk.account_walk(**kwargs)
    assert needle in str(raised.value)


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(sigma=True), "sigma must be a number"),
        (dict(sigma="2"), "sigma must be a number"),
        (dict(clip=None), "clip must be a number"),
        (dict(pairs="no"), "pairs must be True or False"),
        (dict(orders="23"), "orders must be a sequence"),
        (dict(orders=[2, True]), "orders must be a number"),
        (dict(delta=False), "delta must be a number"),
    ],
)
def test_python_values_are_not_coerced(kwargs, needle):
    """A bool is not a number and a string is not a sequence of orders, though float() and
    list() would take them."""
    base = dict(complete=10, sigma=1.0, clip=1.0, steps_per_user=3)
    with pytest.raises(ValueError) as raised:
        dpwalk.account_walk(**{**base, **kwargs})
    assert needle in str(raised.value)


def test_orders_are_refused_with_the_cli_message(dpwalk_bin):
    kwargs = dict(complete=10, sigma=1.0, clip=1.0, steps_per_user=3)
    with pytest.raises(ValueError) as raised:
        dpwalk.account_walk(**kwargs, orders=[0.5])
    out = cli(dpwalk_bin, ["account", "walk"], {**kwargs, "orders": "0.5"})
    assert out.stderr.strip() == f"error: {raised.value}"
    assert str(raised.value).startswith("invalid --orders: ")


def test_a_topology_path_may_be_bytes_or_pathlike():
    kwargs = dict(sigma=20.0, clip=1.0, steps_per_user=1)
    as_str = dpwalk.account_walk(topology=str(RING), **kwargs)
    assert dpwalk.account_walk(topology=RING, **kwargs) == as_str
    assert dpwalk.account_walk(topology=bytes(RING), **kwargs) == as_str


def test_the_certificate_given_the_walk_is_exact_where_it_is_one_gaussian():
    """User 0 contributes at step 0 only (cap 1), then holds the token three more steps: every
    observer sees its contribution through the final model, 4 noisy hops later, so Ψ = 1/4 and
    N2 is a quarter of the local RDP curve: the RDP curve of the Gaussian mechanism of noise
    multiplier σ/(2C) (the local one's is σ/(4C)). It is converted as an RDP figure, not
    exactly: the bound comes from amplification by iteration in RDP, and a curve of Gaussian
    shape does not make the view a Gaussian mechanism. Its order is refined between the grid's:
    within 0.1 % of the Gaussian RDP conversion at its best order (scanned here), never below
    it, and never above the grid's figure."""
    sigma, clip = 3.0, 1.0
    doc = dpwalk.certify_walk([0, 0, 0, 0], users=2, sigma=sigma, clip=clip, cap=1, delta=1e-6)
    u0 = doc["users"][0]
    assert (u0["contributions"], u0["noise_only"], u0["psi"]) == (1, 3, 0.25)
    reference = dpwalk.account_gaussian(noise_multiplier=sigma / (2 * clip), delta=1e-6)
    n2 = u0["network_given_walk"]
    assert n2["exact_gaussian_mu"] is None
    assert n2["epsilon"] <= reference["rdp_epsilon"]
    rho, delta = 1 / (2 * (sigma / (2 * clip)) ** 2), 1e-6

    def tight(a):
        return rho * a + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)

    lo, hi = math.log(0.01), math.log(1023.0)
    best = min(tight(1 + math.exp(lo + (hi - lo) * x / 199_999)) for x in range(200_000))
    assert best * (1 - 1e-9) <= n2["epsilon"] <= best * (1 + 1e-3)
    local = dpwalk.account_gaussian(noise_multiplier=sigma / (4 * clip), delta=1e-6)
    assert u0["local"]["epsilon"] == pytest.approx(local["epsilon"], rel=1e-9)
    # User 1 never held the token: nothing to charge.
    assert doc["users"][1]["contributions"] == 0 and doc["users"][1]["psi"] == 0


def test_the_certificate_never_exceeds_the_local_figure():
    numpy = pytest.importorskip("numpy")
    holders = numpy.random.default_rng(5).integers(0, 20, size=2000)
    doc = dpwalk.certify_walk(holders, sigma=20.0, clip=1.0, cap=50)
    assert doc["users_count"] == 20 and doc["steps"] == 2000
    for u in doc["users"]:
        assert u["contributions"] <= 50
        n2, local = u["network_given_walk"]["epsilon"], u["local"]["epsilon"]
        assert n2 <= local * (1 + 1e-12)
    # Every visit contributes without a cap: more contributions, a larger figure.
    uncapped = dpwalk.certify_walk(holders, sigma=20.0, clip=1.0)
    worst = max(u["network_given_walk"]["epsilon"] for u in doc["users"])
    assert max(u["network_given_walk"]["epsilon"] for u in uncapped["users"]) > worst


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(holders=[]), "1 to 10000000 steps"),
        (dict(holders=[0, 0]), "at least 2 users"),
        (dict(holders=[0, 3], users=3), "user 3 is not among the 3 users"),
        (dict(holders=[0, -1]), "holders must be an integer"),
        (dict(holders="01"), "sequence of user indices"),
        (dict(holders=[0, 1], sigma=0.0), "invalid sigma or clip"),
        (dict(holders=[0, 1], delta=2.0), "delta"),
    ],
)
def test_certify_walk_refusals(kwargs, needle):
    with pytest.raises(ValueError) as raised:
        dpwalk.certify_walk(**{"sigma": 1.0, "clip": 1.0, **kwargs})
    assert needle in str(raised.value)


def test_certify_walk_refuses_more_work_than_the_simulator_certifies():
    """users × (steps + users) above 10⁹ (the simulator's limit): refused at once, not an
    allocation of `users` entries per thread or hours of scanning."""
    for kwargs in [dict(holders=[0, 1], users=10**10), dict(holders=[0, 10**5])]:
        with pytest.raises(ValueError, match="users x"):
            dpwalk.certify_walk(sigma=1.0, clip=1.0, **kwargs)
