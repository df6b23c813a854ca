# %% [markdown]
# # dpwalk's walk figures beside dp-accounting's
#
# A DP-SGD walk on the complete graph of `n` users: a token visits a uniformly random user at
# each step, which adds its clipped gradient (norm at most `C`) and Gaussian noise of standard
# deviation `sigma`, and passes it on. Each user contributes `K` times. How private is one
# user's data?
#
# - **Local view** (an eavesdropper on every token): each contribution is a Gaussian mechanism of
#   sensitivity `2C` and noise `sigma/2` (`dpwalk_privacy::local`), so dp-accounting can compute
#   it too: `GaussianDpEvent(sigma / (4C))` composed `K` times. dpwalk's figure is the exact
#   conversion of `4C√K/σ`-GDP; dp-accounting's RDP figure is above it, its PLD figure a hair
#   above (a discretised upper bound).
# - **Network view** (any other user, who sees the token only when it visits them; path hidden
#   from it): dpwalk's path-hidden figure, under the assumptions it prints. dp-accounting has no
#   walk; the nearest thing it computes is a *central curator* running the same noise on users
#   Poisson-sampled at `q = 1/n` for `n·K` steps — the figure a walk would have if nobody but
#   the curator saw the model. It is drawn for scale, not as a bound for the walk.
#
# Run it as a script (`python examples/walk_vs_dp_accounting.py --out figure.png`) or open it
# as a notebook (the `# %%` cells). Needs `dpwalk` (this package), `dp-accounting` and
# `matplotlib`.

# %%
import argparse
import math

import dp_accounting
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from dp_accounting import pld, rdp  # noqa: E402

import dpwalk  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--out", default="walk_vs_dp_accounting.png", help="the figure (PNG)")
args, _ = parser.parse_known_args()

USERS, SIGMA, CLIP, DELTA = 1000, 50.0, 1.0, 1e-6
CONTRIBUTIONS = [1, 2, 5, 10, 20, 50, 100]
# The local view's Gaussian mechanism: sensitivity 2C, noise sigma/2.
NOISE_MULTIPLIER = (SIGMA / 2) / (2 * CLIP)

# %% [markdown]
# ## The figures

# %%
def dp_accounting_epsilon(accountant, event) -> float:
    accountant.compose(event)
    return accountant.get_epsilon(DELTA)


rows = []
for k in CONTRIBUTIONS:
    walk = dpwalk.account_walk(
        complete=USERS, sigma=SIGMA, clip=CLIP, steps_per_user=k, step="dp-sgd", delta=DELTA
    )
    (everyone,) = walk["users"]  # the complete graph: every user alike
    local = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(NOISE_MULTIPLIER), k)
    central = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(1 / USERS, dp_accounting.GaussianDpEvent(NOISE_MULTIPLIER)),
        USERS * k,
    )
    rows.append(
        dict(
            k=k,
            local=everyone["local"]["epsilon"],
            network=everyone["network"]["epsilon"],
            local_rdp=dp_accounting_epsilon(rdp.RdpAccountant(), local),
            local_pld=dp_accounting_epsilon(pld.PLDAccountant(), local),
            central_pld=dp_accounting_epsilon(pld.PLDAccountant(), central),
        )
    )

print(f"n = {USERS} users, sigma = {SIGMA}, C = {CLIP}, delta = {DELTA:g}; epsilon per user:")
print(f"{'K':>5} {'dpwalk local':>13} {'dp-acc. RDP':>12} {'dp-acc. PLD':>12} "
      f"{'dpwalk network':>15} {'central q=1/n':>14}")
for r in rows:
    print(f"{r['k']:>5} {r['local']:>13.6f} {r['local_rdp']:>12.6f} {r['local_pld']:>12.6f} "
          f"{r['network']:>15.6f} {r['central_pld']:>14.6f}")
print("Assumptions of the network figure:")
for a in walk["assumptions"]:
    print(f"  - {a}")

# %% [markdown]
# ## What must hold
#
# The local figures are one mechanism computed three ways: dpwalk's exact figure is never above
# dp-accounting's RDP or PLD figure, and within 1 % of the PLD one. The network view bounds a
# weaker observer than the local one, so it is never above it.

# %%
for r in rows:
    assert r["local"] <= r["local_rdp"], r
    assert r["local"] <= r["local_pld"] * (1 + 1e-9), r
    assert r["local"] >= r["local_pld"] * 0.99, r
    assert r["network"] <= r["local"], r
    assert all(math.isfinite(r[key]) for key in r), r

# %% [markdown]
# ## The figure

# %%
ks = [r["k"] for r in rows]
fig, ax = plt.subplots(figsize=(7, 4.5))
ax.plot(ks, [r["local"] for r in rows], "o-", color="C0", label="dpwalk: local (exact GDP)")
ax.plot(ks, [r["local_rdp"] for r in rows], "--", color="C0", alpha=0.6,
        label="dp-accounting: local, RDP")
ax.plot(ks, [r["local_pld"] for r in rows], "x", color="k", label="dp-accounting: local, PLD")
ax.plot(ks, [r["network"] for r in rows], "s-", color="C1",
        label="dpwalk: network (path hidden, DP-SGD)")
ax.plot(ks, [r["central_pld"] for r in rows], ":", color="C2",
        label="dp-accounting: central curator, q = 1/n (scale only)")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("contributions per user K")
ax.set_ylabel(f"epsilon at delta = {DELTA:g}")
ax.set_title(f"DP-SGD walk, complete graph: n = {USERS}, sigma = {SIGMA:g}, C = {CLIP:g}")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(args.out, dpi=120)
print(f"figure: {args.out}")
