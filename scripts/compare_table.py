#!/usr/bin/env python3
"""Markdown table of a comparison run: one row per algorithm (and graph), one column per budget.

Each cell is the final figure, mean ± standard deviation over the repetitions, from the run's
summary.json (no other input, nothing recomputed):

    python3 scripts/compare_table.py runs/compare-lasso/summary.json [relative_gap|test_error]

Several summary.json files (e.g. one per budget, each tuned at its budget) make one table.
"""
import json
import sys


def main() -> None:
    args = sys.argv[1:]
    metric = args.pop() if args and args[-1] in ("relative_gap", "test_error") else "relative_gap"
    points = []
    for path in args:
        with open(path, encoding="utf-8") as f:
            points.extend(json.load(f)["points"])
    rows, budgets = {}, []
    for p in points:
        budget = (p["privacy"].get("budget") or {}).get("epsilon")
        if budget not in budgets:
            budgets.append(budget)
        graph = p["topology"] if p["mode"] in ("decentralized", "synchronous") else "server"
        key = f'{p["algorithm"]} ({graph})'
        mean, std = p["final"][metric], p["final_std"][metric]
        cell = "n/a" if mean is None else f"{mean:.3g} ± {std:.2g}"
        rows.setdefault(key, {})[budget] = cell
    budgets.sort(key=lambda b: -1 if b is None else b)
    record = any(
        (p["privacy"].get("unit") or {}).get("unit") == "record-level" for p in points
    )
    eps = "record-level ε" if record else "ε"
    head = " | ".join(f"{eps} = {b}" for b in budgets)
    print(f"| algorithm | {head} |")
    print("| --- |" + " --- |" * len(budgets))
    for key, cells in rows.items():
        print(f"| {key} | " + " | ".join(cells.get(b, "") for b in budgets) + " |")


if __name__ == "__main__":
    main()
