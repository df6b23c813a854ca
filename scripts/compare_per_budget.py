#!/usr/bin/env python3
"""A comparison tuned at every budget: for each ε of the scenario's [sweep] epsilon, tune every
kind at that ε (`dpwalk tune --set tune.epsilon=ε`: the same number of configurations per kind,
scored on validation records carved from the training records), then run the sweep at that ε
with the tuned tables (`dpwalk sim --tuned`), and print the table of all budgets:

    python3 scripts/compare_per_budget.py sim/compare/lasso.toml runs/lasso-per-budget [dpwalk options...]

Options after OUT (e.g. `--set data.path=...`) go to both `dpwalk tune` and `dpwalk sim`. Each
budget's tuning and run land in OUT/eps-<ε>/tune and OUT/eps-<ε>/run; a budget whose run
directory already holds a summary.json is not run again. The tuning is not privately accounted.
"""
import os
import subprocess
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))


def dpwalk(*args: str) -> None:
    cmd = ["cargo", "run", "--release", "--quiet", "--", *args]
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    scenario, out, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(scenario, "rb") as f:
        budgets = tomllib.load(f).get("sweep", {}).get("epsilon", [])
    if not budgets:
        sys.exit(f"{scenario} has no [sweep] epsilon list: nothing to tune per budget")
    summaries = []
    for eps in budgets:
        at = os.path.join(out, f"eps-{eps}")
        tune, run = os.path.join(at, "tune"), os.path.join(at, "run")
        summary = os.path.join(run, "summary.json")
        if not os.path.exists(summary):
            dpwalk("tune", scenario, "--out", tune, "--force", "--quiet",
                   "--set", f"tune.epsilon={eps}", *extra)
            dpwalk("sim", scenario, "--out", run, "--force", "--quiet",
                   "--tuned", os.path.join(tune, "tuned.toml"),
                   "--set", f"sweep.epsilon=[{eps}]", *extra)
        summaries.append(summary)
    subprocess.run([sys.executable, os.path.join(HERE, "compare_table.py"), *summaries], check=True)


if __name__ == "__main__":
    main()
