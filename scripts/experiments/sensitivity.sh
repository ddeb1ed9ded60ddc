#!/usr/bin/env bash
# Self-test of the statistics (issue 10): TRIALS A/A trials (one service as baseline `a` and
# as `b`, identical) and TRIALS burn trials (`b` with `--burn-ns` adding 10 % to the
# service's CPU/request), alternating, each one `matrix run` of one open-loop cell pinned
# like matrix.toml's `pinned`, paired on rounds as every run is. First a `matrix calibrate`
# at that cell measures the service's CPU/request (the burn is 10 % of it) and the spread of
# the paired ratio (the repetitions: power 0.90 against a 10 % change, cut to the budget).
# Prints one line per trial, then the A/A false better/worse rate over all metric verdicts,
# the share of burn trials whose CPU/request was called "worse", and PASS/FAIL against the
# issue's targets (<= 5 %; >= 9 of 10; <= 15 min). Exit status: 0 done (whatever the rates),
# 1 a trial had a failed cell, 2 an error.
#
#   scripts/experiments/sensitivity.sh                         # 10 + 10 trials, ~13 min on 2 cores
#   TRIALS=3 REPS=4 scripts/experiments/sensitivity.sh         # a quick look
#
# Env: TRIALS (10 of each kind), SERVICE (ping-tokio-hyper), RATE (40000 requests/s),
#      REPS (per trial; default from the calibration), MIN_REPS (8), CAL_REPS (10),
#      WINDOWS ("200,1000,100": warmup, measured, cooldown ms), SERVER_CPUS (0),
#      LOADGEN_CPUS (1), BUDGET_S (900: the repetitions are cut to fit it),
#      CARGO_TARGET_DIR (target).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
started=$(date +%s)

REL="${CARGO_TARGET_DIR:-target}/release"
command -v python3 >/dev/null || { echo "sensitivity: python3 not found" >&2; exit 2; }
cargo build --release --locked --workspace --bins >&2

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

python3 scripts/lib/sensitivity.py \
  --rel "$REL" --work "$WORK" --started "$started" \
  --service "${SERVICE:-ping-tokio-hyper}" \
  --rate "${RATE:-40000}" \
  --trials "${TRIALS:-10}" \
  --reps "${REPS:-0}" \
  --min-reps "${MIN_REPS:-8}" \
  --cal-reps "${CAL_REPS:-10}" \
  --windows "${WINDOWS:-200,1000,100}" \
  --server-cpus "${SERVER_CPUS:-0}" \
  --loadgen-cpus "${LOADGEN_CPUS:-1}" \
  --budget-s "${BUDGET_S:-900}"
