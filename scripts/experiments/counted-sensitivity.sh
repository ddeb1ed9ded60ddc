#!/usr/bin/env bash
# Self-test of the counted metrics (issue 25): injects `--burn-iters` worth +1 % of the
# service's instructions/request (the iterations computed from a measured instructions per
# loop iteration, not guessed) and counts how often `matrix run --count-instructions` calls
# it "costlier", and how often an identical copy of the service is called better/worse (A/A
# false verdicts). Each trial is one run of three services at c1 — `a` (baseline), `a2`
# (identical) and `b` (burn) — so one run is one A/A and one burn trial. Prints one line per
# run, the rates and PASS/FAIL against the targets (A/A <= 5 %; >= 9 of 10; <= 15 min).
# Valgrind counts instructions, not time, so other processes on the machine do not move
# them. Exit status: 0 done (whatever the rates), 1 a run had a failed cell, 2 an error.
#
#   scripts/experiments/counted-sensitivity.sh            # 10 runs, ~9 min on 2 cores
#   TRIALS=3 scripts/experiments/counted-sensitivity.sh   # a quick look
#
# Env: TRIALS (10 runs), SERVICE (ping-epoll: Valgrind cannot run the io_uring services),
#      REPS (2 per run), PROBE_ITERS (1000), WINDOWS ("200,1000,100": warmup, measured,
#      cooldown ms of the timed load), SERVER_CPUS (0), LOADGEN_CPUS (1),
#      CARGO_TARGET_DIR (target).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
started=$(date +%s)

need python3 valgrind
REL="${CARGO_TARGET_DIR:-target}/release"
cargo build --release --locked --workspace --bins >&2
WORK=$(scratch_dir)

python3 scripts/lib/counted_sensitivity.py \
  --rel "$REL" --work "$WORK" --started "$started" \
  --service "${SERVICE:-ping-epoll}" \
  --trials "${TRIALS:-10}" \
  --reps "${REPS:-2}" \
  --probe-iters "${PROBE_ITERS:-1000}" \
  --windows "${WINDOWS:-200,1000,100}" \
  --server-cpus "${SERVER_CPUS:-0}" \
  --loadgen-cpus "${LOADGEN_CPUS:-1}"
