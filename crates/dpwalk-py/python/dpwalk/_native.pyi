"""Type stubs of the Rust half of the package (see ``dpwalk/__init__.py``)."""

from typing import Any, Dict, List, Optional

DEFAULT_DELTA: float
METRICS_COLUMNS: List[str]

def account_gaussian(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    orders_given: Optional[List[float]],
    conversion_name: str,
) -> str: ...

def account_walk(
    scenario: Dict[str, Any],
    sigma: float,
    step: str,
    view: str,
    pairs: bool,
    delta: float,
    orders_given: Optional[List[float]],
    conversion_name: str,
) -> str: ...

def calibrate(
    epsilon: float,
    view: str,
    scenario: Dict[str, Any],
    sample_rate: Optional[float],
    delta: float,
    orders_given: Optional[List[float]],
    conversion_name: str,
) -> str: ...

def simulate(
    path: Optional[str], text: Optional[str], sets: List[str], progress: bool
) -> str: ...

def certify_walk(
    holders: List[int],
    users: Optional[int],
    cap: Optional[int],
    sigma: float,
    clip: float,
    delta: float,
    orders_given: Optional[List[float]],
    conversion_name: str,
) -> str: ...

def ledger_show(path: str, delta: float, records: bool) -> str: ...

class RdpCurve:
    def __init__(self, orders_given: Optional[List[float]] = None) -> None: ...
    def compose_gaussian(self, noise_multiplier: float, sample_rate: float, count: int) -> None: ...
    def figure(self, delta: float, conversion_name: str) -> str: ...
    def orders(self) -> List[float]: ...
    def values(self) -> List[float]: ...
    def copy(self) -> "RdpCurve": ...
