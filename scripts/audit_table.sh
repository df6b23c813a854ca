#!/usr/bin/env bash
# The README's two audit tables (section "Auditing"): every audit below is run into
# OUT_DIR/<name>/ and the tables are printed from their audit.json files.
#
#   bash scripts/audit_table.sh [OUT_DIR]   # default runs/audit-table (relative to the repository;
#                                           # replaced only if this script wrote it)
#
# Table 1, "how near the bound": the local view of the quick start's white-box canary at
# mu = 4C/sigma in {0.24, 0.5, 1, 1.5} (exact bounds 1.02, 2.25, 4.89, 7.81 at delta = 1e-6),
# 2e5 runs per world, 2 hops, beside what an accountant that took the noise for sqrt(2) times
# sigma would print (`dpwalk account gaussian`, noise multiplier sqrt(2) sigma / (2 * 2C)), and
# sim/audit-record.toml (record level, gamma = 4) beside the accounting that forgets gamma.
# Table 2: the shipped scenarios, each at its own delta; table 3: composition; table 4: the seed
# baselines (all four tables: about 20 minutes on two cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/audit-table}
# Replace only a directory this script wrote (it leaves a marker), never anything else.
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -e "$out/.audit-table" ]; then
  echo "$out exists, is not empty and was not written by this script: give a new directory" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out"
touch "$out/.audit-table"
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
audit swarm-record sim/swarm-record.toml --runs 10000
audit swarm-record-2000 sim/swarm-record.toml --runs 10000 --set privacy.epsilon=2000

# Table 3: composition (--contributions K) on the small swarm, sigma = 4, delta = 1e-6.
for k in 1 4 8; do
  audit "compose-admm-$k" sim/swarm.toml --runs 30000 --contributions $k --steps $((16 * k)) \
    --set algorithm.sigma=4 --set privacy.delta=1e-6
  audit "compose-dpsgd-$k" sim/swarm.toml --runs 30000 --contributions $k --steps $((16 * k)) \
    --set algorithm.sigma=4 --set privacy.delta=1e-6 --set algorithm.kind=dp-sgd \
    --set algorithm.lr=0.1
done
for k in 1 4; do
  audit "compose-ring-$k" sim/swarm.toml --runs 30000 --contributions $k --steps $((16 * k)) \
    --set algorithm.sigma=4 --set privacy.delta=1e-6 --set topology.kind=ring \
    --set algorithm.lambda=1
done

# Table 4: the seed baselines, 4 rounds per trial, one point per algorithm and data set.
for p in 20 27 34; do audit "base-lasso-$p" sim/compare/lasso.toml --point $p --runs 20000; done
for p in 11 15 19 31; do audit "base-adult-$p" sim/compare/adult.toml --point $p --runs 5000; done
for p in 13 18 23; do audit "base-mnist-$p" sim/compare/mnist.toml --point $p --runs 2000; done
for p in 0 1 2 3; do audit "base-pp-small-$p" sim/audit-pp-small.toml --point $p --runs 20000; done
for p in 11 15 19; do
  audit "base-adult-record-$p" sim/compare/adult-record.toml --point $p --runs 5000
done
audit base-adult-record-23 sim/compare/adult-record.toml --point 23 --runs 500

python3 scripts/audit_table.py "$out" "${near[@]}"
