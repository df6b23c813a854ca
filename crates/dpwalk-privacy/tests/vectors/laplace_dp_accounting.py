"""Prints the dp-accounting reference tables of tests/laplace_pure_dp.rs (not run by CI).

    python3 -m venv /tmp/dpacc && /tmp/dpacc/bin/pip install dp-accounting==0.6.0
    /tmp/dpacc/bin/python laplace_dp_accounting.py

Paste the output over the tables of the same names in tests/laplace_pure_dp.rs.

- LAPLACE: per-step RDP of LaplaceDpEvent(scale) (scale = b / l1 sensitivity) at ORDERS, read from
  an RdpAccountant holding that one event (its `_rdp`, the composed curve; dp-accounting has no
  public getter for it).
- RANDOMIZED_RESPONSE: per-step RDP of RandomizedResponseDpEvent(p, 2) under REPLACE_ONE, with
  p = 2 / (1 + e^eps): binary randomized response that is exactly eps-DP, the tight curve of any
  pure eps-DP mechanism (Mironov 2017, Prop. 5).
- HIGH_PRECISION: both closed forms in 60-digit decimal arithmetic, independent of dp-accounting,
  where its own evaluation loses digits (small eps, orders near 1).
- LAPLACE_COMPOSED: epsilon and optimal order from get_epsilon_and_optimal_order after `count`
  Laplace steps, over dpwalk's default order grid (passed explicitly), at delta.
"""
import math
from decimal import Decimal, getcontext

import dp_accounting
from dp_accounting.rdp import rdp_privacy_accountant as rdp

ORDERS = [1.01, 1.05, 1.5, 1.75, 2.0, 3.0, 8.0, 16.0, 64.0, 256.0, 1024.0]
SCALES = [0.2, 1.0, 2.0, 20.0, 100.0, 1000.0]
RR_EPSILONS = [0.01, 0.05, 0.5, 1.0, 5.0]
HIGH_PRECISION = [(1.01, 0.01), (1.05, 0.01), (1.5, 1e-4), (2.0, 1e-6), (64.0, 0.001), (1.001, 2.0)]
COMPOSED = [(20.0, 20000, 1e-5), (20.0, 20000, 1e-6), (10.0, 20000, 1e-6), (100.0, 1000000, 1e-6),
            (1.0, 100, 1e-5)]


def dpwalk_default_grid():
    """Orders::default_grid() of rdp.rs, as the same doubles."""
    v = [k / 100 for k in range(101, 110)]
    v += [k / 20 for k in range(22, 61)]
    v += [k / 10 for k in range(31, 110)]
    v += [float(k) for k in range(11, 65)]
    v += [72.0, 80.0, 96.0, 112.0, 128.0, 160.0, 192.0, 224.0, 256.0, 320.0, 384.0, 448.0,
          512.0, 640.0, 768.0, 896.0, 1024.0]
    assert len(v) == 198
    return v


def high_precision(alpha, eps):
    """(Laplace, randomized response) at alpha for pure-DP level eps, to 60 digits."""
    getcontext().prec = 60
    a, e = Decimal(alpha), Decimal(eps)
    lap = (a / (2 * a - 1) * ((a - 1) * e).exp() + (a - 1) / (2 * a - 1) * (-a * e).exp()).ln()
    rr = (((a * e).exp() + ((1 - a) * e).exp()) / (1 + e.exp())).ln()
    return float(lap / (a - 1)), float(rr / (a - 1))


def curve(event, relation=rdp.NeighborRel.ADD_OR_REMOVE_ONE):
    acc = rdp.RdpAccountant(orders=ORDERS, neighboring_relation=relation)
    acc.compose(event)
    return [float(x) for x in acc._rdp]


def row(values):
    return "[" + ", ".join(repr(float(x)) for x in values) + "]"


def main():
    print(f"// dp-accounting {dp_accounting.__version__ if hasattr(dp_accounting, '__version__') else '0.6.0'}")
    print(f"const ORDERS: [f64; {len(ORDERS)}] = {row(ORDERS)};")
    print(f"/// (b / Δ₁, RDP at each of ORDERS) from LaplaceDpEvent.")
    print(f"const LAPLACE: [(f64, [f64; {len(ORDERS)}]); {len(SCALES)}] = [")
    for s in SCALES:
        print(f"    ({s!r}, {row(curve(dp_accounting.LaplaceDpEvent(s)))}),")
    print("];")
    print(f"/// (ε, RDP at each of ORDERS) from binary RandomizedResponseDpEvent, REPLACE_ONE.")
    print(f"const RANDOMIZED_RESPONSE: [(f64, [f64; {len(ORDERS)}]); {len(RR_EPSILONS)}] = [")
    for e in RR_EPSILONS:
        p = 2.0 / (1.0 + math.exp(e))
        ev = dp_accounting.RandomizedResponseDpEvent(p, 2)
        print(f"    ({e!r}, {row(curve(ev, rdp.NeighborRel.REPLACE_ONE))}),")
    print("];")
    print("/// (α, ε, Laplace at b/Δ₁ = 1/ε, randomized response at ε), 60-digit arithmetic.")
    print(f"const HIGH_PRECISION: [(f64, f64, f64, f64); {len(HIGH_PRECISION)}] = [")
    for alpha, eps in HIGH_PRECISION:
        lap, rr = high_precision(alpha, eps)
        print(f"    ({alpha!r}, {eps!r}, {lap!r}, {rr!r}),")
    print("];")
    print("/// (b / Δ₁, steps, δ, ε, optimal order) over dpwalk's default grid.")
    print(f"const LAPLACE_COMPOSED: [(f64, u64, f64, f64, f64); {len(COMPOSED)}] = [")
    for s, count, delta in COMPOSED:
        acc = rdp.RdpAccountant(orders=dpwalk_default_grid())
        acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(s), count))
        eps, order = acc.get_epsilon_and_optimal_order(delta)
        print(f"    ({s!r}, {count}, {delta!r}, {float(eps)!r}, {float(order)!r}),")
    print("];")


if __name__ == "__main__":
    main()
