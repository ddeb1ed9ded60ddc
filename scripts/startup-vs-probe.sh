#!/usr/bin/env bash
# Start-up time as the runner reports it (`matrix run`: exec → first 200, the child's own
# exec clock) against an independent probe (scripts/lib/startup_probe.py: posix_spawn →
# first 200 from another CPU), A B A B per service, release builds, server on SERVER_CPU,
# probes on PROBE_CPU. Prints every batch, then per service both medians, their ratio and
# whether the runner is within max(0.5 ms, 10 %) of the probe.
#
#   scripts/startup-vs-probe.sh                      # 4 rounds x 5 starts per side
#   ROUNDS=2 STARTS=3 SERVICES="tokio-hyper" scripts/startup-vs-probe.sh
#
# Env: ROUNDS (4), STARTS (5), SERVER_CPU (0), PROBE_CPU (1), SERVICES (every service),
#      CARGO_TARGET_DIR (target).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-4}
STARTS=${STARTS:-5}
SERVER_CPU=${SERVER_CPU:-0}
PROBE_CPU=${PROBE_CPU:-1}
SERVICES=${SERVICES:-"tokio-hyper tokio-per-core axum actix-web monoio glommio compio may-minihttp epoll"}
REL="${CARGO_TARGET_DIR:-target}/release"

command -v python3 >/dev/null || { echo "startup-vs-probe: python3 not found" >&2; exit 2; }
cargo build --release --locked --workspace --bins >&2

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

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
  python3 scripts/lib/startup_probe.py "$REL/ping-$1" "$SERVER_CPU" "$PROBE_CPU" "$STARTS"
}

median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }

printf '%-22s %-6s %s\n' service side "first 200 (µs) per start"
for svc in $SERVICES; do
  : >"$WORK/runner-$svc"; : >"$WORK/probe-$svc"
  for ((r = 1; r <= ROUNDS; r++)); do
    # A B on odd rounds, B A on even ones, so neither side always goes first.
    for side in $([ $((r % 2)) = 1 ] && echo "runner probe" || echo "probe runner"); do
      batch=$("${side}_batch" "$svc" | tr '\n' ' ')
      printf '%-22s %-6s %s\n' "ping-$svc" "$side" "$batch"
      tr ' ' '\n' <<<"$batch" | grep -v '^$' >>"$WORK/$side-$svc" || true
    done
  done
done

echo
printf '%-22s %12s %12s %8s %s\n' service "runner (ms)" "probe (ms)" ratio "within max(0.5 ms, 10 %)"
for svc in $SERVICES; do
  r=$(median <"$WORK/runner-$svc")
  p=$(median <"$WORK/probe-$svc")
  awk -v s="ping-$svc" -v r="$r" -v p="$p" 'BEGIN {
    if (r == "nan" || p == "nan") { printf "%-22s %12s %12s %8s %s\n", s, r, p, "-", "no data"; exit }
    d = r - p; if (d < 0) d = -d; tol = (p * 0.10 > 500) ? p * 0.10 : 500
    printf "%-22s %12.2f %12.2f %8.3f %s\n", s, r / 1000, p / 1000, r / p, (d <= tol) ? "yes" : "NO"
  }'
done
