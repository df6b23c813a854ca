#!/usr/bin/env bash
# The README's two audit tables (section "Auditing"): every audit below is run into
# OUT_DIR/<name>/ and the tables are printed from their audit.json files.
#
#   bash scripts/audit_table.sh [OUT_DIR]      # default runs/audit-table (replaced if there)
#
# Table 1, "how near the bound": the local view of the quick start's white-box canary at
# mu = 4C/sigma in {0.24, 0.5, 1, 1.5} (exact bounds 1.02, 2.25, 4.89, 7.81 at delta = 1e-6),
# 2e5 runs per world, 2 hops, beside what an accountant that took the noise for sqrt(2) times
# sigma would print (`dpwalk account gaussian`, noise multiplier sqrt(2) sigma / (2 * 2C)), and
# sim/audit-record.toml (record level, gamma = 4) beside the accounting that forgets gamma.
# Table 2: the shipped scenarios, each at its own delta (about 25 minutes on two cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/audit-table}
rm -rf "$out"
mkdir -p "$out"
cargo build --release --quiet
bin=./target/release/dpwalk
audit() { # name scenario args...
  local name=$1 scenario=$2
  shift 2
  "$bin" audit "$scenario" --out "$out/$name" --quiet "$@" >"$out/$name.txt" 2>&1 \
    || { cat "$out/$name.txt"; exit 1; }
}
account() { # noise multiplier -> the exact epsilon of one Gaussian mechanism at delta = 1e-6
  "$bin" account gaussian --noise-multiplier "$1" --delta 1e-6 --json | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["epsilon"])'
}

# Table 1.
near=()
for sigma in 1.6667 0.8 0.4 0.26667; do
  audit "near-$sigma" sim/quickstart.toml --view local --runs 200000 --steps 2 \
    --set privacy.delta=1e-6 --set algorithm.sigma=$sigma
  # The quick start's C = 0.1: noise multiplier (sigma/2)/(2C), times sqrt 2.
  near+=("near-$sigma=$(account "$(python3 -c "print(2 ** 0.5 * $sigma / 0.4)")")")
done
audit near-record sim/audit-record.toml --view local --runs 200000 --steps 2 \
  --set privacy.delta=1e-6
# Forgetting gamma = 4: the record-level clip G2/m = 1/4 instead of 1, sigma = 2.
near+=("near-record=$(account "$(python3 -c "print(2 / 2 / (2 * 0.25))")")")

# Table 2.
audit quickstart sim/quickstart.toml --runs 20000
audit swarm sim/swarm.toml --runs 100000
audit swarm-s1 sim/swarm.toml --runs 100000 --set algorithm.sigma=1
audit swarm-s1-dpsgd sim/swarm.toml --runs 100000 --set algorithm.sigma=1 \
  --set algorithm.kind=dp-sgd --set algorithm.lr=0.1
audit swarm-s1-black sim/swarm.toml --runs 100000 --set algorithm.sigma=1 --canary black-box
audit quickstart-s02 sim/quickstart.toml --runs 20000 \
  --set algorithm.sigma=0.2
audit quickstart-s02-dpsgd sim/quickstart.toml --runs 20000 --set algorithm.sigma=0.2 \
  --set algorithm.kind=dp-sgd --set algorithm.lr=0.1
for p in 0 3 4 5 8 9; do
  audit "lasso-paper-$p" sim/lasso-paper.toml --runs 10000 --point $p
done
audit adult-record-3 sim/compare/adult-record.toml --point 3 --steps 20 --runs 5000
audit adult-record-7 sim/compare/adult-record.toml --point 7 --steps 20 --runs 20000
audit audit-record sim/audit-record.toml --runs 20000 --set privacy.delta=0.01

python3 - "$out" "${near[@]}" <<'PY'
import json, sys
out, broken = sys.argv[1], dict(a.split("=") for a in sys.argv[2:])

def load(name):
    return json.load(open(f"{out}/{name}/audit.json"))["points"][0]

def noise(p):
    rec = p["canary"].get("record_level")
    c = f"{p['clip']:g}" + (f" (accounted {rec['accounted_clip']:g})" if rec else "")
    return f"{p['sigma']:.4g}, {c}"

print("| audit | σ, C | runs/world, hops | bound ε | GDP ε̂ | GDP ε̂ / bound | broken bound | caught? |")
print("|---|---|---|---|---|---|---|---|")
for name, what in [(f"near-{s}", f"quickstart, μ = {m}") for s, m in
                   [("1.6667", 0.24), ("0.8", 0.5), ("0.4", 1), ("0.26667", 1.5)]] + \
        [("near-record", "audit-record (record level, γ = 4)")]:
    p = load(name)
    v = p["views"][0]
    bound = v["bound"]["epsilon"]
    gdp = max(s["estimate"]["gdp_epsilon"] for s in v["statistics"])
    b = float(broken[name])
    print(f"| {what} | {noise(p)} | {p['runs']:,}, {p['steps']} | {bound:.3f} | {gdp:.3f} | "
          f"{gdp / bound:.3f} | {b:.3f} | {'yes' if gdp > b else 'no'} |")
print()

print("| scenario | σ, C | runs/world, hops | view | bound ε | ε̂ first / hop / transcript | GDP (assumes Gaussian) |")
print("|---|---|---|---|---|---|---|")
rows = [("quickstart", "quickstart"), ("swarm", "swarm"), ("swarm-s1", "swarm, σ = 1"),
        ("swarm-s1-dpsgd", "swarm, σ = 1, dp-sgd (lr 0.1)"),
        ("swarm-s1-black", "swarm, σ = 1, black-box canary"),
        ("quickstart-s02", "quickstart, σ = 0.2"),
        ("quickstart-s02-dpsgd", "quickstart, σ = 0.2, dp-sgd (lr 0.1)")] + \
       [(f"lasso-paper-{k}", f"lasso-paper ({k}: {{alg}}, budget ε = {{budget}})") for k in (0, 3, 4, 5, 8, 9)] + \
       [("adult-record-3", "compare/adult-record (3: admm, budget ε = {budget})"),
        ("adult-record-7", "compare/adult-record (7: dp-sgd, budget ε = {budget})"),
        ("audit-record", "audit-record, δ = 0.01")]
for name, label in rows:
    p = load(name)
    label = label.format(alg=p["algorithm"], budget=f"{p['budget']:g}" if p["budget"] else "–")
    for v in p["views"]:
        st = {s["statistic"]: s for s in v["statistics"]}
        def eps(k):
            return f"{st[k]['estimate']['epsilon']:.2f}" if k in st else "–"
        gdps = [s["estimate"]["gdp_epsilon"] for s in v["statistics"] if s.get("gdp_exceeds_bound") is not None]
        gdp = f"{max(gdps):.2f}" if gdps else "–"
        b = v["bound"]
        kind = b["figure"].split(",")[0].replace(" view", "")
        print(f"| {label} | {noise(p)} | {p['runs']:,}, {p['steps']} | {v['view']} | "
              f"{b['epsilon']:.3f} ({kind}) | {eps('first-arrival')} / {eps('hop-weighted')} / "
              f"{eps('transcript')} | {gdp} |")
PY
