"""Prints the README's audit tables from the audit.json files scripts/audit_table.sh wrote.

    python3 scripts/audit_table.py OUT_DIR NAME=BROKEN_BOUND ...

Each NAME=BROKEN_BOUND gives the figure a broken accountant would print for audit NAME of table 1.
"""
import json
import sys


def load(out, name):
    return json.load(open(f"{out}/{name}/audit.json"))["points"][0]


def noise(p):
    rec = p["canary"].get("record_level")
    clip = "none" if p["clip"] is None else f"{p['clip']:g}"
    if rec and rec.get("accounted_clip") is not None:
        clip += f" (accounted {rec['accounted_clip']:g})"
    return f"{p['sigma']:.4g}, {clip}"


def statistics(view):
    return {s["statistic"]: s for s in view["statistics"]}


def eps(stats, name):
    return f"{stats[name]['estimate']['epsilon']:.2f}" if name in stats else "–"


def gdp(stats, names=None):
    """The largest GDP figure among `names` (all), "–" where the variant is not reported."""
    values = [s["estimate"]["gdp_epsilon"] for k, s in stats.items()
              if s.get("gdp_exceeds_bound") is not None and (names is None or k in names)]
    return f"{max(values):.2f}" if values else "–"


def kind(bound):
    return bound["figure"].split(",")[0].split(" (")[0].split(":")[0].replace(" view", "")


def label(p, text):
    return text.format(alg=p["algorithm"], budget=f"{p['budget']:g}" if p["budget"] else "–")


def per_view(out, rows, names):
    """One row per audit of `rows` (name, label) and view: the bound, the plain ε̂ of the
    statistics `names`, the largest GDP figure."""
    for name, text in rows:
        p = load(out, name)
        for v in p["views"]:
            st = statistics(v)
            b = v["bound"]
            plain = " / ".join(eps(st, n) for n in names)
            print(f"| {label(p, text)} | {noise(p)} | {p['runs']:,}, {p['steps']} | {v['view']} | "
                  f"{b['epsilon']:.3f} ({kind(b)}) | {plain} | {gdp(st)} |")


def near(out, broken):
    print("| audit | σ, C | runs/world, hops | bound ε | GDP ε̂ | GDP ε̂ / bound | broken bound | caught? |")
    print("|---|---|---|---|---|---|---|---|")
    rows = [(f"near-{s}", f"quickstart, μ = {m}")
            for s, m in [("1.6667", 0.24), ("0.8", 0.5), ("0.4", 1), ("0.26667", 1.5)]]
    rows.append(("near-record", "audit-record (record level, γ = 4)"))
    for name, what in rows:
        p = load(out, name)
        v = p["views"][0]
        bound = v["bound"]["epsilon"]
        # The first token's statistic only: each statistic's figure holds at the confidence on
        # its own, the largest of two would not.
        g = statistics(v)["first-arrival"]["estimate"]["gdp_epsilon"]
        b = float(broken[name])
        print(f"| {what} | {noise(p)} | {p['runs']:,}, {p['steps']} | {bound:.3f} | {g:.3f} | "
              f"{g / bound:.3f} | {b:.3f} | {'yes' if g > b else 'no'} |")


def shipped(out):
    print("| scenario | σ, C | runs/world, hops | view | bound ε | ε̂ first / hop / transcript | GDP (assumes Gaussian) |")
    print("|---|---|---|---|---|---|---|")
    rows = [("quickstart", "quickstart"), ("swarm", "swarm"), ("swarm-s1", "swarm, σ = 1"),
            ("swarm-s1-dpsgd", "swarm, σ = 1, dp-sgd (lr 0.1)"),
            ("swarm-s1-black", "swarm, σ = 1, black-box canary"),
            ("quickstart-s02", "quickstart, σ = 0.2"),
            ("quickstart-s02-dpsgd", "quickstart, σ = 0.2, dp-sgd (lr 0.1)")]
    rows += [(f"lasso-paper-{k}", f"lasso-paper ({k}: {{alg}}, budget ε = {{budget}})")
             for k in (0, 3, 4, 5, 8, 9)]
    rows += [("adult-record-3", "compare/adult-record (3: admm, budget ε = {budget})"),
             ("adult-record-7", "compare/adult-record (7: dp-sgd, budget ε = {budget})"),
             ("audit-record", "audit-record, δ = 0.01"),
             ("swarm-record", "swarm-record (budget ε = {budget})"),
             ("swarm-record-2000", "swarm-record (budget ε = {budget})")]
    per_view(out, rows, ("first-arrival", "hop-weighted", "transcript"))


def composition(out):
    print("| walk (swarm, σ = 4) | K | made | bound ε (local, K composed) | local ε̂ first / transcript / composed | local GDP composed | network ε̂ hop / transcript / composed | central ε̂ |")
    print("|---|---|---|---|---|---|---|---|")
    walks = [("admm", "admm, complete, λ = 0.5", (1, 4, 8)), ("ring", "admm, ring, λ = 1", (1, 4)),
             ("dpsgd", "dp-sgd (lr 0.1), complete", (1, 4, 8))]
    for name, text, ks in walks:
        for k in ks:
            p = load(out, f"compose-{name}-{k}")
            views = {v["view"]: v for v in p["views"]}
            local, network = statistics(views["local"]), statistics(views["network"])
            central = statistics(views["central"])
            print(f"| {text} | {k} | {p['contributions']['mean']:.2f} | "
                  f"{views['local']['bound']['epsilon']:.3f} | {eps(local, 'first-arrival')} / "
                  f"{eps(local, 'transcript')} / {eps(local, 'composed')} | "
                  f"{gdp(local, ['composed']) if k > 1 else '–'} | {eps(network, 'hop-weighted')} / "
                  f"{eps(network, 'transcript')} / {eps(network, 'composed')} | "
                  f"{eps(central, 'first-arrival')} |")


def baselines(out):
    print("| scenario (point) | σ / b / ν, clip | runs/world, rounds | view | bound ε | ε̂ first / transcript | GDP (assumes Gaussian) |")
    print("|---|---|---|---|---|---|---|")
    rows = [(f"base-lasso-{k}", f"compare/lasso ({k}: {{alg}}, budget ε = {{budget}})") for k in (20, 27, 34)]
    rows += [(f"base-adult-{k}", f"compare/adult ({k}: {{alg}}, {t}, budget ε = {{budget}})")
             for k, t in ((11, "complete"), (15, "complete"), (19, "complete"), (31, "random-regular"))]
    rows += [(f"base-mnist-{k}", f"compare/mnist ({k}: {{alg}}, budget ε = {{budget}})") for k in (13, 18, 23)]
    rows += [(f"base-pp-small-{k}", "audit-pp-small (budget ε = {budget})") for k in range(4)]
    rows += [(f"base-adult-record-{k}", f"compare/adult-record ({k}: {{alg}}, budget ε = {{budget}})")
             for k in (11, 15, 19, 23)]
    per_view(out, rows, ("first-arrival", "transcript"))


def main():
    out, broken = sys.argv[1], dict(a.split("=") for a in sys.argv[2:])
    for table in (lambda: near(out, broken), lambda: shipped(out), lambda: composition(out),
                  lambda: baselines(out)):
        table()
        print()


if __name__ == "__main__":
    main()
