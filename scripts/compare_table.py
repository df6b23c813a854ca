#!/usr/bin/env python3
"""Markdown table of a comparison run: one row per algorithm (and graph), one column per budget.

Each cell is the final figure, mean ± standard deviation over the repetitions, and the share of
the clip's tests where it bound (privacy.clipped_fraction), from the run's summary.json (no other
input, nothing recomputed); the last rows are the all-zero model's figure
(summary.json's zero_model), the line a private model has to get below, and for the test error
the majority class's (majority_class; where it differs from the zero model's, which predicts -1
or the first class) and the non-private optimum's (optimum_model):

    python3 scripts/compare_table.py runs/compare-lasso/summary.json [relative_gap|test_error]

Several summary.json files (e.g. one per budget, each tuned at its budget) make one table; when
they are of different scenarios (e.g. one per dataset) each row starts with its scenario's name
and each scenario gets its reference rows. Where the points' budgets are not all on one view,
each row names its view (network, central, local).
"""
import json
import sys


def main() -> None:
    args = sys.argv[1:]
    metric = args.pop() if args and args[-1] in ("relative_gap", "test_error") else "relative_gap"
    points, zero, majority, optimum = [], {}, {}, {}
    for path in args:
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
        name = summary.get("scenario", "")
        points.extend((name, p) for p in summary["points"])
        zero.setdefault(name, summary.get("zero_model"))
        majority.setdefault(name, summary.get("majority_class"))
        optimum.setdefault(name, summary.get("optimum_model"))
    several = len(zero) > 1
    views = {((p["privacy"].get("budget") or {}).get("view")) for _, p in points}
    rows, budgets = {}, []
    for name, p in points:
        budget = (p["privacy"].get("budget") or {}).get("epsilon")
        if budget not in budgets:
            budgets.append(budget)
        graph = p["topology"] if p["mode"] in ("decentralized", "synchronous") else "server"
        if len(views) > 1:
            graph += f', {(p["privacy"].get("budget") or {}).get("view")} view'
        key = f'{p["algorithm"]} ({graph})'
        if several:
            key = f"{name}: {key}"
        mean, std = p["final"][metric], p["final_std"][metric]
        cell = "n/a" if mean is None else f"{mean:.3g} ± {std:.2g}"
        # The share of the clip's tests where it bound: a saturated clip (every step of length
        # λC whatever σ) shows here.
        clipped = p["privacy"].get("clipped_fraction")
        if clipped is not None and mean is not None:
            cell += f" (clipped {clipped:.0%})"
        rows.setdefault((name, key), {})[budget] = cell
    budgets.sort(key=lambda b: -1 if b is None else b)
    record = any(
        (p["privacy"].get("unit") or {}).get("unit") == "record-level" for _, p in points
    )
    eps = "record-level ε" if record else "ε"
    head = " | ".join(f"{eps} = {b}" for b in budgets)
    print(f"| algorithm | {head} |")
    print("| --- |" + " --- |" * len(budgets))
    # The optimum's relative gap is 0 by definition: its row only for the test error.
    for scenario in zero:
        for (name, key), cells in rows.items():
            if name == scenario:
                print(f"| {key} | " + " | ".join(cells.get(b, "") for b in budgets) + " |")
        references = [("zero model", zero[scenario])]
        if metric != "relative_gap":
            m, z = majority[scenario], zero[scenario]
            if m is not None and (z is None or m.get(metric) != z.get(metric)):
                references.append((f'majority class ({m["label"]:g})', m))
            references.append(("non-private optimum", optimum[scenario]))
        for label, model in references:
            if model is not None and model.get(metric) is not None:
                cell = f"{model[metric]:.3g}"
                label = f"{scenario}: {label}" if several else label
                print(f"| {label} | " + " | ".join(cell for _ in budgets) + " |")


if __name__ == "__main__":
    main()
