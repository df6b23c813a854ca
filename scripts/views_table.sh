#!/usr/bin/env bash
# The README's table "What network DP buys": test error at record-level ε ∈ {1, 3, 10}
# (δ = 1e-6) on Adult and MNIST, each algorithm with its budget on the best view it proves (the
# DP-SGD walk: network; federated DP-SGD: central; the ADMM walk: local), each tuned with
# `dpwalk tune` at equal effort (the [by-kind] tables of the two scenarios).
#
#   bash scripts/views_table.sh [DATA_DIR] [OUT_DIR]
#
# DATA_DIR holds adult.data.gz, adult.test.gz and mnist_5k.csv.gz (default ../shared/data);
# OUT_DIR gets runs views-adult/ and views-mnist/ (default runs/; replaced if there).
set -euo pipefail
cd "$(dirname "$0")/.."
data=$(realpath "${1:-../shared/data}")
out=${2:-runs}
cargo build --release --quiet
./target/release/dpwalk sim sim/compare/views-adult-record.toml --out "$out/views-adult" --force \
  --set "data.path=\"$data/adult.data.gz\"" --set "data.test=\"$data/adult.test.gz\""
./target/release/dpwalk sim sim/compare/views-mnist-record.toml --out "$out/views-mnist" --force \
  --set "data.path=\"$data/mnist_5k.csv.gz\""
python3 scripts/compare_table.py "$out/views-adult/summary.json" "$out/views-mnist/summary.json" test_error
