#!/usr/bin/env bash
# What counting costs the server: ping-epoll (--workers 1) on one CPU, loadgen at a fixed open
# rate on another, server CPU per request (schedstat, every thread) with perf's syscall
# tracepoint attached (`perf stat -e raw_syscalls:sys_enter -p PID`, as the runner's syscall
# window) and without, pairs interleaved (order alternates per pair). Also with only the
# runner's /proc reads (every 50 ms), which read from the runner's CPU.
# Prints every run, the medians and the on/off ratios.
#
#   scripts/experiments/counting-cost.sh                     # 5 pairs x 3 s at 10,000/s
#   PAIRS=2 DURATION_S=1 scripts/experiments/counting-cost.sh
#
# Env: PAIRS (5), DURATION_S (3), RATE (10000), SERVER_CPU (0), LOADGEN_CPU (1).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

PAIRS=${PAIRS:-5}
DURATION_S=${DURATION_S:-3}
RATE=${RATE:-10000}
SERVER_CPU=${SERVER_CPU:-0}
LOADGEN_CPU=${LOADGEN_CPU:-1}

need taskset perf
SERVICE=$(release_bin ping-epoll)
LOADGEN=$(release_bin loadgen)
scratch=$(scratch_dir)

# server_cpu_ns PID: the summed schedstat run time of PID's threads.
server_cpu_ns() {
  cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%d", s}'
}

# run_one <off|perf|proc>: prints server CPU µs per response for one window.
run_one() {
  local mode=$1 port log before after n perf_pid="" proc_pid=""
  port=$(free_port)
  log="$scratch/server-$mode.log"
  start_pinned "$SERVER_CPU" "$log" "$SERVICE" --listen "127.0.0.1:$port" --workers 1
  wait_port "$port" "$SERVER_PID" "$log"
  # Warm-up outside the window, so the connections are open.
  taskset -c "$LOADGEN_CPU" "$LOADGEN" -R "$RATE" -c 64 -d 500ms \
    "http://127.0.0.1:$port/ping" >/dev/null 2>&1
  case $mode in
    perf)
      taskset -c "$LOADGEN_CPU" perf stat -e raw_syscalls:sys_enter -p "$SERVER_PID" \
        -o "$scratch/perf.txt" &
      perf_pid=$!
      sleep 0.5 ;;
    proc)
      (while :; do cat /proc/"$SERVER_PID"/task/*/status /proc/"$SERVER_PID"/stat \
        >/dev/null 2>&1; sleep 0.05; done) &
      proc_pid=$! ;;
  esac
  before=$(server_cpu_ns "$SERVER_PID")
  taskset -c "$LOADGEN_CPU" "$LOADGEN" -R "$RATE" -c 64 -d "${DURATION_S}s" --json - \
    "http://127.0.0.1:$port/ping" >"$scratch/report.json" 2>"$scratch/loadgen.log"
  after=$(server_cpu_ns "$SERVER_PID")
  [[ -n $perf_pid ]] && { kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true; }
  [[ -n $proc_pid ]] && stop_pid "$proc_pid"
  stop_pid "$SERVER_PID"
  n=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["ok"] if "ok" in r else round(r["requests_per_s"]*r["window_s"]))' "$scratch/report.json")
  awk -v a="$before" -v b="$after" -v n="$n" 'BEGIN {printf "%.3f\n", (b - a) / 1e3 / n}'
}

declare -A runs=([off]="" [perf]="" [proc]="")
for p in $(seq 1 "$PAIRS"); do
  order="off perf proc"
  (( p % 2 == 0 )) && order="proc perf off"
  for m in $order; do
    v=$(run_one "$m")
    echo "pair $p $m: $v us/request"
    runs[$m]+="$v"$'\n'
  done
done
off=$(printf '%s' "${runs[off]}" | median)
perf_m=$(printf '%s' "${runs[perf]}" | median)
proc_m=$(printf '%s' "${runs[proc]}" | median)
echo "median server CPU us/request at $RATE/s: off $off, perf syscall tracepoint $perf_m, /proc reads $proc_m"
echo "ratio perf/off $(ratio "$perf_m" "$off"), /proc/off $(ratio "$proc_m" "$off")"
