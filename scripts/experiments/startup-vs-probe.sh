#!/usr/bin/env bash
# Start-up time as the runner reports it (`matrix run`: exec → first 200, the child's own
# exec clock) against an independent probe (scripts/lib/startup_probe.c: posix_spawn →
# first 200 from another CPU, retrying every 50 µs), A B A B per service, release builds,
# server on SERVER_CPU, probes on PROBE_CPU. Prints every batch, then per service both
# medians, their ratio, the median difference with its bootstrap 95 % interval, and whether
# the runner is within max(0.5 ms, 10 %) of the probe (scripts/lib/startup_compare.py).
#
# Two stages per service: ROUNDS rounds, then as many more (up to MAX_ROUNDS) as the first
# rounds' spread says are needed for the interval to be no wider than the tolerance. A tight
# start needs no more; glommio's (an RCU grace period of 1-4 ticks) hits the cap and its
# interval stays wider than the tolerance unless RCU_EXPEDITED=1 takes that wait out.
#
#   scripts/experiments/startup-vs-probe.sh                      # 4-16 rounds x 5 starts per side
#   ROUNDS=2 MAX_ROUNDS=2 STARTS=3 SERVICES="tokio-hyper" scripts/experiments/startup-vs-probe.sh
#
# Env: ROUNDS (4), MAX_ROUNDS (16), STARTS (5), SERVER_CPU (0), PROBE_CPU (1),
#      SERVICES (every service), CARGO_TARGET_DIR (target),
#      PROBE (c: scripts/lib/startup_probe.c built with cc; py: scripts/lib/startup_probe.py),
#      RCU_EXPEDITED (0; 1 sets /sys/kernel/rcu_expedited for the run and restores it).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

ROUNDS=${ROUNDS:-4}
MAX_ROUNDS=${MAX_ROUNDS:-16}
STARTS=${STARTS:-5}
SERVER_CPU=${SERVER_CPU:-0}
PROBE_CPU=${PROBE_CPU:-1}
SERVICES=${SERVICES:-"tokio-hyper tokio-per-core axum actix-web monoio glommio compio may-minihttp epoll"}
REL="${CARGO_TARGET_DIR:-target}/release"

need python3
cargo build --release --locked --workspace --bins >&2

WORK=$(scratch_dir)
knob=/sys/kernel/rcu_expedited was=""
# A control, not a tuning: glommio's start waits for an RCU grace period (its membarrier
# registration), 1-4 scheduler ticks drawn afresh each start, which both sides share and which
# makes medians of even 80 starts wander by ±4 ms. Expedited grace periods take that draw out,
# so what is left to compare is the harness. The kernel's setting is restored on exit.
if [ "${RCU_EXPEDITED:-0}" = 1 ]; then
  [ -w "$knob" ] || { echo "startup-vs-probe: RCU_EXPEDITED=1 needs a writable $knob (root)" >&2; exit 2; }
  was=$(cat "$knob")
  restore_at_exit "$knob"
  echo 1 >"$knob"
fi
case "${PROBE:-c}" in
  c)
    need cc # (PROBE=py uses Python instead)
    cc -O2 -Wall -o "$WORK/startup_probe" scripts/lib/startup_probe.c
    probe=("$WORK/startup_probe") ;;
  py) probe=(python3 scripts/lib/startup_probe.py) ;;
  *) echo "startup-vs-probe: PROBE must be c or py" >&2; exit 2 ;;
esac

# The runner's figures: STARTS repetitions of one tiny cell (every repetition is a fresh
# start), first_200_us of each start, one per line.
runner_batch() {
  local svc=$1 out="$WORK/out-$RANDOM"
  cat >"$WORK/m.toml" <<TOML
[defaults]
warmup_ms = 0
duration_ms = 50
repetitions = $STARTS
cooldown_ms = 0
loadgen = "$PWD/$REL/loadgen"

[[services]]
name = "ping-$svc"
binary = "$PWD/$REL/ping-$svc"

[[scenarios]]
name = "ping"
path = "/ping"
load = { model = "closed", connections = [1] }

[[profiles]]
name = "pinned"
server_cpus = "$SERVER_CPU"
loadgen_cpus = "$PROBE_CPU"
TOML
  "$REL/matrix" run --quiet --config "$WORK/m.toml" --out "$out" >/dev/null 2>&1 || true
  python3 - "$out" <<'PY'
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/*/cells/*.json"):
    for s in json.load(open(f))["starts"]:
        if s.get("first_200_us") is not None:
            print(s["first_200_us"])
PY
}

probe_batch() {
  "${probe[@]}" "$REL/ping-$1" "$SERVER_CPU" "$PROBE_CPU" "$STARTS"
}

echo "rcu_expedited: $(cat "$knob" 2>/dev/null || echo "-")${was:+ (set for this run; was $was)}"
printf '%-22s %-6s %s\n' service side "first 200 (µs) per start"
for svc in $SERVICES; do
  : >"$WORK/runner-$svc"; : >"$WORK/probe-$svc"
  target=$ROUNDS
  for ((r = 1; r <= target; r++)); do
    # A B on odd rounds, B A on even ones, so neither side always goes first.
    for side in $([ $((r % 2)) = 1 ] && echo "runner probe" || echo "probe runner"); do
      batch=$("${side}_batch" "$svc" | tr '\n' ' ')
      printf '%-22s %-6s %s\n' "ping-$svc" "$side" "$batch"
      tr ' ' '\n' <<<"$batch" | grep -v '^$' >>"$WORK/$side-$svc" || true
    done
    if ((r == ROUNDS)); then
      target=$(python3 scripts/lib/startup_compare.py rounds-needed \
        "$WORK/runner-$svc" "$WORK/probe-$svc" "$ROUNDS" "$MAX_ROUNDS")
      ((target > ROUNDS)) && echo "ping-$svc: spread needs $target rounds"
    fi
  done
done

echo
printf '%-22s %12s %12s %8s %22s %7s %s\n' service "runner (ms)" "probe (ms)" ratio \
  "diff ms [95 %]" starts "within max(0.5 ms, 10 %)"
for svc in $SERVICES; do
  python3 scripts/lib/startup_compare.py verdict "ping-$svc" "$WORK/runner-$svc" "$WORK/probe-$svc"
done
