"""dpwalk's privacy accountant and simulator from Python.

The figures are computed by the same Rust code as the ``dpwalk`` command line, and every
function that mirrors a ``--json`` command returns the same dict, key for key and digit for
digit::

    import dpwalk
    doc = dpwalk.account_gaussian(noise_multiplier=1.0, steps=100, delta=1e-5)
    doc["epsilon"], doc["exact_gaussian_mu"]  # the exact conversion of 10-GDP

The random walk's figures (``dpwalk account walk``) and calibration (``dpwalk calibrate``)::

    walk = dpwalk.account_walk(complete=1000, sigma=50, clip=1, steps_per_user=100,
                               step="dp-sgd", delta=1e-6)
    walk["users"][0]["local"]["epsilon"], walk["users"][0]["network"]["epsilon"]
    dpwalk.calibrate(epsilon=1.0, view="local", complete=1000, clip=1, steps_per_user=100)

An :class:`Accountant` composes events, as dp-accounting's and Flower's accountants do::

    acc = dpwalk.Accountant()
    acc.compose(dpwalk.PoissonSampledEvent(0.01, dpwalk.GaussianEvent(1.0)), count=1000)
    acc.get_epsilon(1e-5)

The simulator runs a whole swarm in-process (``dpwalk sim``)::

    run = dpwalk.simulate("sim/quickstart.toml", overrides={"algorithm.sigma": 2.0})
    run.summary["points"][0]["final"], run.metrics["relative_gap"]

Figures are proved upper bounds: the exact conversion where every event is a Gaussian
mechanism (Gaussian DP), the privacy-loss-distribution figure where every event is the same
Poisson-subsampled Gaussian, else the Rényi-DP figure over the order grid. Bad input raises
``ValueError`` with the accountant's message (an unreadable ledger ``OSError``).
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import os
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _native

__all__ = [
    "DEFAULT_DELTA",
    "Accountant",
    "GaussianEvent",
    "PoissonSampledEvent",
    "account_gaussian",
    "account_walk",
    "Simulation",
    "calibrate",
    "certify_walk",
    "ledger_show",
    "simulate",
]

#: δ of every figure unless another is given (the CLI's default).
DEFAULT_DELTA: float = _native.DEFAULT_DELTA


def _float(name: str, value: Any) -> float:
    """A real number: an int or float (NumPy's too), not a bool or a string, which ``float()``
    would turn into 1.0 or parse."""
    if isinstance(value, (bool, str, bytes)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def _bool(name: str, value: Any) -> bool:
    """True or False (NumPy's too), not a value Python would call true or false."""
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _orders(orders: Optional[Sequence[float]]) -> Optional[list]:
    if orders is None:
        return None
    if isinstance(orders, (str, bytes)):
        raise ValueError(f"orders must be a sequence of numbers, got {orders!r}")
    return [_float("orders", a) for a in orders]


def _count(name: str, value: int) -> int:
    """A count: an integer (NumPy's too, not a bool) in [0, 2**64 − 1] (the accountant's u64)."""
    try:
        count = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        count = None
    if count is None or not 0 <= count < 2**64:
        raise ValueError(f"{name} must be an integer in [0, 2**64 - 1], got {value!r}")
    return count


def _optional_count(name: str, value: Optional[int]) -> Optional[int]:
    return None if value is None else _count(name, value)


def _optional_float(name: str, value: Optional[float]) -> Optional[float]:
    return None if value is None else _float(name, value)


def _scenario(given: dict) -> dict:
    """The scenario keywords among a function's arguments (``given``: its ``locals()``),
    checked and typed for ``_native``, which checks how they go together, with the CLI's
    messages."""
    topology = given["topology"]
    return {
        "topology": None if topology is None else os.fsdecode(topology),
        "complete": _optional_count("complete", given["complete"]),
        "nodes": _optional_count("nodes", given["nodes"]),
        "seed": _optional_count("seed", given["seed"]),
        "clip": _float("clip", given["clip"]),
        "steps_per_user": _optional_count("steps_per_user", given["steps_per_user"]),
        "total_steps": _optional_count("total_steps", given["total_steps"]),
        "min_records": _optional_count("min_records", given["min_records"]),
        "feature_norm": _optional_float("feature_norm", given["feature_norm"]),
        "loss": given["loss"],
        "gamma": _optional_float("gamma", given["gamma"]),
    }


def account_walk(
    *,
    sigma: float,
    clip: float,
    complete: Optional[int] = None,
    topology: Optional[Union[str, "os.PathLike[str]"]] = None,
    steps_per_user: Optional[int] = None,
    total_steps: Optional[int] = None,
    step: str = "admm",
    view: str = "both",
    pairs: bool = False,
    nodes: Optional[int] = None,
    seed: Optional[int] = None,
    min_records: Optional[int] = None,
    feature_norm: Optional[float] = None,
    loss: Optional[str] = None,
    gamma: Optional[float] = None,
    delta: float = DEFAULT_DELTA,
    orders: Optional[Sequence[float]] = None,
    conversion: str = "tight",
) -> dict:
    """Per-user privacy of the random walk: ``dpwalk account walk --json`` with the same
    options (keyword ``steps_per_user`` is the flag ``--steps-per-user``, and so on)::

        dpwalk.account_walk(complete=1000, sigma=50, clip=1, steps_per_user=100,
                            step="dp-sgd", delta=1e-6)

    Give the graph as ``complete=N`` (the complete graph on N users) or ``topology=`` a
    topology file (with ``nodes=`` for files that leave it open, ``seed=`` for random ones,
    default 1),
    and the contributions as ``steps_per_user=K`` or ``total_steps=T`` (each user is then
    charged the 0.99 quantile of its visit count). ``step`` is ``"admm"`` (local figures only:
    no network bound is proved for the ADMM walk, and the dict says why) or ``"dp-sgd"`` (the
    path-hidden network figure, with its assumptions); ``view`` is ``"local"``, ``"network"``
    or ``"both"``; ``pairs=True`` adds the n × n matrix of network ε. Record level:
    ``min_records`` and ``feature_norm`` (with ``loss``, default ``"logistic"``, and ``gamma``,
    default 1).

    Returns the same dict as the command: ``scenario``, ``step``, ``sigma``, ``clip``,
    ``unit``, ``accounted_clip``, ``delta``, ``conversion``, ``view``, ``walk_steps``,
    ``network_withheld`` (why there is no network figure, or ``None``), ``network_label``,
    ``network_charges``, ``users`` (one row for all users on the complete graph, else one per
    user, each with ``local`` and ``network`` figures), ``worst``, ``paper_closed_form`` (for
    comparison only), ``assumptions`` and ``pairs``. Raises ``ValueError`` with the CLI's
    message for options it refuses, ``OSError`` when the topology file cannot be read.
    """
    scenario = _scenario(locals())
    return json.loads(
        _native.account_walk(
            scenario,
            _float("sigma", sigma),
            step,
            view,
            _bool("pairs", pairs),
            _float("delta", delta),
            _orders(orders),
            conversion,
        )
    )


def calibrate(
    *,
    epsilon: float,
    clip: float,
    view: str = "local",
    complete: Optional[int] = None,
    topology: Optional[Union[str, "os.PathLike[str]"]] = None,
    steps_per_user: Optional[int] = None,
    total_steps: Optional[int] = None,
    sample_rate: Optional[float] = None,
    nodes: Optional[int] = None,
    seed: Optional[int] = None,
    min_records: Optional[int] = None,
    feature_norm: Optional[float] = None,
    loss: Optional[str] = None,
    gamma: Optional[float] = None,
    delta: float = DEFAULT_DELTA,
    orders: Optional[Sequence[float]] = None,
    conversion: str = "tight",
) -> dict:
    """The smallest noise σ meeting a target (``epsilon``, ``delta``) against a view:
    ``dpwalk calibrate --json`` with the same options (the scenario keywords are
    :func:`account_walk`'s)::

        dpwalk.calibrate(epsilon=1.0, view="network", complete=1000, clip=1,
                         steps_per_user=10, delta=1e-6)["sigma"]

    ``view`` is ``"local"`` (an eavesdropper on every token; bounds every observer),
    ``"network"`` (every other user of a DP-SGD walk on the complete graph, path hidden),
    ``"centralized"`` (K rounds of all users) or ``"federated"`` (``sample_rate=q``:
    ceil(K/q) Poisson-sampled rounds).

    Returns the same dict as the command: ``view``, ``sigma``, ``clip``, ``unit``,
    ``accounted_clip``, ``epsilon`` and ``delta`` achieved at σ, ``exact_gaussian_mu``,
    ``rdp_epsilon``, ``order``, ``conversion``, ``target``, ``relative_tolerance``,
    ``scenario``, ``rounds`` and ``sample_rate`` (final-model views), ``notes`` and
    ``assumptions``. Raises as :func:`account_walk` does.
    """
    scenario = _scenario(locals())
    return json.loads(
        _native.calibrate(
            _float("epsilon", epsilon),
            view,
            scenario,
            _optional_float("sample_rate", sample_rate),
            _float("delta", delta),
            _orders(orders),
            conversion,
        )
    )


def certify_walk(
    holders: Sequence[int],
    *,
    sigma: float,
    clip: float,
    users: Optional[int] = None,
    cap: Optional[int] = None,
    delta: float = DEFAULT_DELTA,
    orders: Optional[Sequence[float]] = None,
    conversion: str = "tight",
) -> dict:
    """The certificate given the walk (N2) of a realised DP-SGD walk: every user's network ε
    against its worst observer, given who held the token at each step (``holders``, e.g. a
    NumPy array). ``dpwalk ledger certify`` computes the same from a daemon run's ledgers.

    ``users`` defaults to one more than the largest holder; ``cap`` is each user's budget (its
    first ``cap`` visits contribute, later ones are noise-only, as the budget policy runs;
    ``None``: every visit contributes). At most 10⁷ steps, and users × (steps + users) at most
    10⁹.

    The figure holds for this path even against an observer who knows it (ex post: it cannot
    choose σ before the walk). Returns ``label``, ``steps``, ``users_count``, ``cap``,
    ``sigma``, ``clip``, ``delta``, ``conversion``, ``assumptions`` and ``users``: per user,
    ``contributions``, ``noise_only``, ``psi`` (its charge against its worst observer),
    ``network_given_walk`` (the figure), ``worst_observer`` and ``local`` (its local figure, for
    comparison).
    """
    if isinstance(holders, (str, bytes)):
        raise ValueError(f"holders must be a sequence of user indices, got {holders!r}")
    if hasattr(holders, "tolist"):
        holders = holders.tolist()
    steps = [_count("holders", h) for h in holders]
    return json.loads(
        _native.certify_walk(
            steps,
            _optional_count("users", users),
            _optional_count("cap", cap),
            _float("sigma", sigma),
            _float("clip", clip),
            _float("delta", delta),
            _orders(orders),
            conversion,
        )
    )


def account_gaussian(
    *,
    noise_multiplier: float,
    sample_rate: float = 1.0,
    steps: int = 1,
    delta: float = DEFAULT_DELTA,
    orders: Optional[Sequence[float]] = None,
    conversion: str = "tight",
) -> dict:
    """RDP and (ε, δ) of ``steps`` runs of the Gaussian mechanism, optionally
    Poisson-subsampled: ``dpwalk account gaussian --json`` with the same options.

    Returns the same dict as the command: ``orders`` and ``rdp`` (the composed curve),
    ``epsilon`` (``None`` when there is no finite guarantee), ``delta``, ``best_order``,
    ``exact_gaussian_mu`` (when ε is the exact Gaussian conversion), ``pld_interval`` (when
    ε is the privacy-loss-distribution figure), ``rdp_epsilon`` (the RDP figure beside either),
    ``conversion``, ``noise_multiplier``, ``sample_rate`` and ``steps``.
    """
    return json.loads(
        _native.account_gaussian(
            _float("noise_multiplier", noise_multiplier),
            _float("sample_rate", sample_rate),
            _count("steps", steps),
            _float("delta", delta),
            _orders(orders),
            conversion,
        )
    )


def ledger_show(
    path: Union[str, "os.PathLike[str]"],
    *,
    delta: float = DEFAULT_DELTA,
    records: bool = False,
) -> dict:
    """What a node's privacy ledger (``state/ledger.bin``) holds and the local ε it has spent:
    ``dpwalk ledger show PATH --json`` (with ``--records`` when ``records``). The file is
    verified, never modified.

    Returns the same dict as the command: ``path``, ``orders`` (how many), ``min_order``,
    ``max_order``, ``records``, ``noise_only``, ``first_seq``, ``last_seq``,
    ``last_visit_seq``, ``epsilon``, ``exact_gaussian_mu``, ``rdp_epsilon``, ``order``,
    ``delta``, ``conversion``, and ``seqs`` when ``records``. Raises ``OSError`` when the file
    cannot be read and ``ValueError`` when it is damaged or not a ledger of this version, each
    with what to do about it.
    """
    return json.loads(
        _native.ledger_show(os.fspath(path), _float("delta", delta), _bool("records", records))
    )


def _toml_key(key: str) -> str:
    """A TOML key: bare when TOML allows it (ASCII letters, digits, ``_`` and ``-``), else
    quoted."""
    bare = key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else _toml_string(key)


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, with non-ASCII characters written as
    themselves (JSON would write surrogate pairs, which TOML refuses) and DEL escaped."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"a scenario string must be valid Unicode, got {text!r}") from None
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml(value: Any) -> str:
    """``value`` as a TOML literal (inline tables for dicts); NumPy's numbers and bools too."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(operator.index(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            return "nan"
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        # float's own repr: NumPy's would write `np.float64(0.5)`.
        return float.__repr__(number)
    if isinstance(value, (str, os.PathLike)):
        return _toml_string(os.fspath(value))
    if isinstance(value, Mapping):
        items = ", ".join(f"{_toml_key(str(k))} = {_toml(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        items = value.tolist() if hasattr(value, "tolist") else value
        return "[" + ", ".join(_toml(v) for v in items) + "]"
    raise ValueError(f"a scenario value must be a bool, number, string, list or dict, got {value!r}")


def _scenario_text(scenario: Mapping[str, Any]) -> str:
    """A scenario dict (the TOML file's tables as dicts) as TOML text."""
    return "".join(f"{_toml_key(str(k))} = {_toml(v)}\n" for k, v in scenario.items())


#: The integer columns of ``metrics.csv``.
_INT_COLUMNS = ("point", "repetition", "step", "contributions", "bytes")


@dataclass(frozen=True)
class Simulation:
    """What ``dpwalk sim`` computes, without its run directory: ``summary`` is the dict of
    ``summary.json``; ``metrics`` holds the columns of ``metrics.csv`` as NumPy arrays, by the
    CSV's column names (``point``, ``repetition``, ``algorithm``, ``sigma``, ``clip``, …,
    ``test_error``, ``relative_gap``, ``round``, ``bytes``, ``consensus_gap``): integers as
    ``int64``, ``algorithm`` as strings, the rest ``float64`` with NaN where the CSV's field is
    empty."""

    summary: dict
    metrics: Dict[str, Any]

    def metrics_frame(self):
        """``metrics`` as a pandas DataFrame (needs pandas)."""
        import pandas

        return pandas.DataFrame(self.metrics)


def _columns(rows: list, names: Sequence[str]) -> Dict[str, Any]:
    import numpy

    columns: Dict[str, Any] = {}
    for name in names:
        values = [row[name] for row in rows]
        if name in _INT_COLUMNS:
            columns[name] = numpy.array(values, dtype=numpy.int64)
        elif name == "algorithm":
            columns[name] = numpy.array(values, dtype=str)
        else:
            columns[name] = numpy.array(
                [math.nan if v is None else v for v in values], dtype=numpy.float64
            )
    return columns


def simulate(
    scenario: Union[str, "os.PathLike[str]", Mapping[str, Any]],
    *,
    overrides: Optional[Union[Mapping[str, Any], Sequence[str]]] = None,
    seed: Optional[int] = None,
    progress: bool = False,
) -> Simulation:
    """Runs a scenario in the simulator, as ``dpwalk sim`` does, and returns its summary and
    metrics (:class:`Simulation`) without writing a run directory.

    ``scenario`` is a scenario file's path, or a dict with the file's keys and tables (nested
    dicts; relative data and topology paths are then read from the working directory).
    ``overrides`` are ``--set`` overrides: a dict ``{"algorithm.sigma": 2}`` or a list of
    ``"key=value"`` strings (value in TOML syntax), applied in order; ``seed`` overrides the
    scenario's seed (``--seed``). ``progress=True`` shows the progress bar on stderr when it is a
    terminal (nothing otherwise; in Jupyter, on the server's terminal).

    The numbers are ``dpwalk sim``'s to the last digit (the same code computes both; only the
    summary's wall-clock figures, ``throughput``, differ from run to run). Raises ``OSError``
    when the scenario file cannot be read and ``ValueError`` with the CLI's message for anything
    the simulator refuses. The interpreter is released while the simulation runs.
    """
    import numpy  # noqa: F401  (checked before the run, not after it)

    sets: list = []
    if isinstance(overrides, Mapping):
        sets = [f"{key}={_toml(value)}" for key, value in overrides.items()]
    elif overrides is not None:
        if isinstance(overrides, str):
            raise ValueError('overrides is a dict or a list of "key=value" strings, not a string')
        sets = [str(o) for o in overrides]
    if seed is not None:
        sets.append(f"seed={_count('seed', seed)}")
    if isinstance(scenario, Mapping):
        path, text = None, _scenario_text(scenario)
    else:
        path, text = os.fsdecode(scenario), None
    doc = json.loads(_native.simulate(path, text, sets, _bool("progress", progress)))
    return Simulation(
        summary=doc["summary"], metrics=_columns(doc["metrics"], _native.METRICS_COLUMNS)
    )


@dataclass(frozen=True)
class GaussianEvent:
    """One run of the Gaussian mechanism: noise standard deviation / L2 sensitivity."""

    noise_multiplier: float


@dataclass(frozen=True)
class PoissonSampledEvent:
    """``event`` run on a Poisson sample of the data, each record in with probability
    ``sampling_probability`` (in (0, 1])."""

    sampling_probability: float
    event: GaussianEvent


Event = Union[GaussianEvent, PoissonSampledEvent]


def _rate_and_multiplier(event: Event) -> tuple:
    if isinstance(event, GaussianEvent):
        return 1.0, _float("noise_multiplier", event.noise_multiplier)
    if isinstance(event, PoissonSampledEvent) and isinstance(event.event, GaussianEvent):
        return (
            _float("sampling_probability", event.sampling_probability),
            _float("noise_multiplier", event.event.noise_multiplier),
        )
    raise ValueError(
        "dpwalk's accountant composes GaussianEvent and PoissonSampledEvent(q, GaussianEvent), "
        f"got {event!r}"
    )


class Accountant:
    """A running composition of Gaussian and Poisson-subsampled Gaussian mechanisms.

    ``orders`` is the Rényi order grid (default: dpwalk's 198 orders, which contain
    dp-accounting's defaults); ``conversion`` is how the RDP figure is converted to (ε, δ)
    (``"tight"`` or ``"classic"``): the figure is the exact or PLD one where that is below the
    RDP figure (``figure()`` says which).
    """

    def __init__(
        self, orders: Optional[Sequence[float]] = None, conversion: str = "tight"
    ) -> None:
        self._curve = _native.RdpCurve(_orders(orders))
        self._conversion = conversion
        # Checked now, not at the first figure.
        self._curve.figure(DEFAULT_DELTA, conversion)

    def compose(self, event: Event, count: int = 1) -> "Accountant":
        """Adds ``count`` runs of ``event``; returns the accountant."""
        q, z = _rate_and_multiplier(event)
        self._curve.compose_gaussian(z, q, _count("count", count))
        return self

    def figure(self, delta: float = DEFAULT_DELTA) -> dict:
        """The (ε, δ) figure as the CLI's JSON prints one: ``epsilon`` (``None`` when there is
        no finite guarantee), ``order``, ``exact_gaussian_mu``, ``pld_interval`` and
        ``rdp_epsilon``."""
        return json.loads(self._curve.figure(_float("delta", delta), self._conversion))

    def get_epsilon(self, delta: float = DEFAULT_DELTA) -> float:
        """ε at ``delta`` (``math.inf`` when there is no finite guarantee)."""
        eps = self.figure(delta)["epsilon"]
        return math.inf if eps is None else eps

    def would_exceed(
        self, event: Event, count: int, epsilon: float, delta: float = DEFAULT_DELTA
    ) -> bool:
        """Whether composing ``count`` runs of ``event`` would take ε at ``delta`` above
        ``epsilon`` (a budget: ``0 < epsilon < inf``); the accountant is unchanged."""
        if not 0.0 < _float("epsilon", epsilon) < math.inf:
            raise ValueError(f"epsilon must be > 0 and finite, got {epsilon!r}")
        trial = Accountant.__new__(Accountant)
        trial._curve = self._curve.copy()
        trial._conversion = self._conversion
        return trial.compose(event, count).get_epsilon(delta) > epsilon

    @property
    def orders(self) -> list:
        """The Rényi orders."""
        return self._curve.orders()

    @property
    def rdp(self) -> list:
        """ε(α) at each order: the composed RDP curve."""
        return self._curve.values()
