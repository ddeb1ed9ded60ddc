#!/usr/bin/env bash
# Independent check of the suite's syscalls/request (issue 25): per service, a fresh start
# pinned to SERVER_CPU with `--workers 1`, `perf stat -e raw_syscalls:sys_enter -p PID`
# around exactly REQUESTS loadgen requests at c1 (no warm-up, on LOADGEN_CPU), STARTS
# starts; prints the count per request (median and the spread over starts) beside the
# suite's median for the same service in RUN's c1 cell. Connection set-up and perf's attach
# land in the count (a few syscalls in REQUESTS × ~3: under 0.1 %).
#
#   scripts/experiments/syscalls-check.sh                        # nine services, ~3 min
#   SERVICES="ping-epoll ping-tokio-hyper" STARTS=5 scripts/experiments/syscalls-check.sh
#
# Env: SERVICES (every service in services/services.toml), STARTS (3), REQUESTS (20000),
#      SERVER_CPU (0), LOADGEN_CPU (1), RUN (the committed counted reference run; "" to skip).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

need perf taskset python3
STARTS="${STARTS:-3}"
REQUESTS="${REQUESTS:-20000}"
RUN="${RUN-results/2026-12-03T09-19-08Z-18b59fe}"
SERVICES="${SERVICES:-$(service_names)}"
LOADGEN=$(release_bin loadgen)
WORK=$(scratch_dir)

suite() { python3 "$(dirname "$0")/../lib/counted_c1.py" "$RUN" "$1" syscalls; }

printf '%-20s %10s %8s %10s %8s  %s\n' service perf/req spread suite/req suite/perf "each start"
for svc in $SERVICES; do
  bin=$(release_bin "$svc")
  vals=()
  for _ in $(seq 1 "$STARTS"); do
    port=$(free_port)
    start_pinned "${SERVER_CPU:-0}" "$WORK/$svc.log" "$bin" --listen "127.0.0.1:$port" --workers 1
    wait_port "$port" "$SERVER_PID" "$WORK/$svc.log"
    perf stat -x, -e raw_syscalls:sys_enter -p "$SERVER_PID" -o "$WORK/perf" &
    perf_pid=$!
    sleep 0.5 # perf attached and counting before the first request
    taskset -c "${LOADGEN_CPU:-1}" timeout 120 "$LOADGEN" -c 1 -n "$REQUESTS" \
      "http://127.0.0.1:$port/ping" >/dev/null 2>"$WORK/loadgen.log"
    kill -INT "$perf_pid"; wait "$perf_pid" || true
    stop_pid "$SERVER_PID"
    n=$(awk -F, '$3 == "raw_syscalls:sys_enter" || $4 == "raw_syscalls:sys_enter" {print $1}' "$WORK/perf")
    vals+=("$(awk -v n="$n" -v r="$REQUESTS" 'BEGIN {printf "%.4f", n / r}')")
  done
  med=$(printf '%s\n' "${vals[@]}" | median)
  spread=$(printf '%s\n' "${vals[@]}" | sort -g | awk -v m="$med" 'NR==1 {lo=$1} {hi=$1} END {printf "%.2f%%", 100 * (hi - lo) / m}')
  s=$(suite "$svc")
  r="–"
  [[ "$s" == "–" ]] || r=$(awk -v a="$s" -v b="$med" 'BEGIN {printf "%.3f", a / b}')
  printf '%-20s %10s %8s %10s %8s  %s\n' "$svc" "$med" "$spread" "$s" "$r" "${vals[*]}"
done
