#!/usr/bin/env bash
# Wrapper cost: each ping service against its runtime's plain hello-world
# (services/<svc>/examples/hello.rs), with wrk -t1 -c64 on /ping, server pinned to one CPU and
# wrk to another, release builds, A/B pairs interleaved (order alternates per pair).
# Prints every run, then per runtime the req/s medians and the service/hello ratio. Then,
# because wrk saturates before most services do (both arms generator-bound), the same pair's
# counted cost, which does not depend on who saturates: syscalls per request (perf stat -p
# around loadgen -c CONNECTIONS -n N and -n 3N on one start, the difference over 2N, so
# connecting and closing cancel) and user-space instructions per request (cachegrind, c1,
# 2,000 and 6,000 requests, the slope; io_uring runtimes read "unmeasured" here: their plain
# hello-worlds wait in io_uring_enter holding Valgrind's lock, which this script does not work
# around as the runner does for the services, docs/counted-cost.md), and the service/hello
# ratio of each.
#
#   scripts/experiments/wrapper-cost.sh                        # 5 pairs x 10 s
#   PAIRS=3 DURATION_S=2 scripts/experiments/wrapper-cost.sh   # quick smoke
#
# Env: PAIRS (5), DURATION_S (10), WARMUP_S (1), CONNECTIONS (64), SERVER_CPU (0), WRK_CPU (1),
#      RUNTIMES (every service in services/services.toml), CARGO_TARGET_DIR (target),
#      COUNT (1; 0: req/s only), COUNT_REQUESTS (N, 20000), BUILD (1; 0: use the binaries as
#      they are).
# A runtime here is a service crate's directory name: its binary is ping-<name>, its baseline
# the example hello-<name>.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
# The io_uring services, from services/services.toml.
URING=$(io_uring_dirs)

PAIRS=${PAIRS:-5}
DURATION_S=${DURATION_S:-10}
WARMUP_S=${WARMUP_S:-1}
CONNECTIONS=${CONNECTIONS:-64}
SERVER_CPU=${SERVER_CPU:-0}
WRK_CPU=${WRK_CPU:-1}
RUNTIMES=${RUNTIMES:-$(service_dirs)}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
REL="$TARGET_DIR/release"

COUNT=${COUNT:-1}
COUNT_REQUESTS=${COUNT_REQUESTS:-20000}
need wrk taskset
if [[ $COUNT == 1 ]]; then need perf valgrind; fi

pkgs=()
for rt in $RUNTIMES; do pkgs+=(-p "ping-$rt"); done
if [[ ${BUILD:-1} == 1 ]]; then
  cargo build --release --locked "${pkgs[@]}" --bins --examples >&2
  if [[ $COUNT == 1 ]]; then cargo build --release --locked -p loadgen >&2; fi
fi
WORK=$(scratch_dir)

# server_argv <variant> <runtime> <port> → the server's command line
server_argv() {
  if [[ $1 == hello ]]; then echo "$REL/examples/hello-$2 127.0.0.1:$3 1"
  else echo "$REL/ping-$2 --listen 127.0.0.1:$3 --workers 1"; fi
}

# syscalls_per_request <variant> <runtime> → (S(3N) − S(N)) / 2N on one start
syscalls_per_request() {
  local port pid n counts=()
  port=$(free_port)
  # shellcheck disable=SC2046
  taskset -c "$SERVER_CPU" $(server_argv "$1" "$2" "$port") >"$WORK/srv.out" 2>"$WORK/srv.err" &
  pid=$!
  wait_port "$port" "$pid" "$WORK/srv.err"
  for n in "$COUNT_REQUESTS" $((3 * COUNT_REQUESTS)); do
    perf stat -x, -e raw_syscalls:sys_enter -p "$pid" -o "$WORK/perf" &
    local perf_pid=$!
    sleep 0.5 # attached and counting before the first request
    taskset -c "$WRK_CPU" timeout 120 "$LOADGEN" -c "$CONNECTIONS" -n "$n" --warmup 0s \
      "http://127.0.0.1:$port/ping" >/dev/null 2>"$WORK/loadgen.err"
    sleep 0.3 # the server closes the connections
    kill -INT "$perf_pid"; wait "$perf_pid" || true
    counts+=("$(awk -F, '$3 == "raw_syscalls:sys_enter" {print $1}' "$WORK/perf")")
  done
  stop_pid "$pid"
  awk -v a="${counts[0]}" -v b="${counts[1]}" -v n="$COUNT_REQUESTS" 'BEGIN {printf "%.4f", (b - a) / (2 * n)}'
}

# instructions_per_request <variant> <runtime> → cachegrind slope over 2,000 and 6,000 c1
# requests, or "unmeasured"
instructions_per_request() {
  if [[ $2 =~ ^($URING)$ ]]; then echo unmeasured; return; fi
  local n port pid ins=()
  for n in 2000 6000; do
    port=$(free_port)
    # shellcheck disable=SC2046
    taskset -c "$SERVER_CPU" valgrind --tool=cachegrind --cache-sim=no \
      --cachegrind-out-file="$WORK/cg.out" $(server_argv "$1" "$2" "$port") \
      >"$WORK/srv.out" 2>"$WORK/srv.err" &
    pid=$!
    wait_port "$port" "$pid" "$WORK/srv.err"
    taskset -c "$WRK_CPU" timeout 300 "$LOADGEN" -c 1 -n "$n" --warmup 0s \
      "http://127.0.0.1:$port/ping" >/dev/null 2>"$WORK/loadgen.err"
    kill -TERM "$pid"; wait "$pid" || true
    ins+=("$(awk '/^summary:/ {print $2}' "$WORK/cg.out")")
    rm -f "$WORK/cg.out"
  done
  awk -v a="${ins[0]}" -v b="${ins[1]}" 'BEGIN {printf "%.0f", (b - a) / 4000}'
}

# run_one <variant:hello|service> <runtime> → prints req/s
run_one() {
  local variant=$1 rt=$2 port out
  port=$(free_port)
  out=$(mktemp)
  # run_one runs in a command substitution, a subshell without the exit trap: it stops its
  # own server.
  if [[ $variant == hello ]]; then
    taskset -c "$SERVER_CPU" "$REL/examples/hello-$rt" "127.0.0.1:$port" 1 >"$out" 2>"$out.err" &
  else
    taskset -c "$SERVER_CPU" "$REL/ping-$rt" --listen "127.0.0.1:$port" --workers 1 >"$out" 2>"$out.err" &
  fi
  local pid=$!
  wait_port "$port" "$pid" "$out.err"
  local url="http://127.0.0.1:$port/ping"
  if [[ $WARMUP_S != 0 ]]; then
    taskset -c "$WRK_CPU" wrk -t1 -c"$CONNECTIONS" -d"${WARMUP_S}s" "$url" >/dev/null
  fi
  local report
  report=$(taskset -c "$WRK_CPU" wrk -t1 -c"$CONNECTIONS" -d"${DURATION_S}s" "$url")
  if [[ $variant == service && $rt =~ ^($URING)$ ]]; then
    grep -o '"io_driver":"[^"]*"' "$out" >&2 || true
  fi
  stop_pid "$pid"
  rm -f "$out" "$out.err"
  if grep -qE 'Non-2xx|Socket errors' <<<"$report"; then
    echo "wrapper-cost: $variant $rt had errors:" >&2
    grep -E 'Non-2xx|Socket errors' <<<"$report" >&2
  fi
  awk '/^Requests\/sec:/ {print $2}' <<<"$report"
}


echo "# wrapper cost: wrk -t1 -c$CONNECTIONS -d${DURATION_S}s /ping (warm-up ${WARMUP_S}s), server on cpu $SERVER_CPU (--workers 1), wrk on cpu $WRK_CPU, $PAIRS A/B pairs"
echo "# kernel $(uname -r), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
summary=()
for rt in $RUNTIMES; do
  hello=() service=()
  for pair in $(seq 1 "$PAIRS"); do
    if (( pair % 2 )); then order="hello service"; else order="service hello"; fi
    for v in $order; do
      r=$(run_one "$v" "$rt")
      echo "$rt pair $pair $v: $r req/s"
      if [[ $v == hello ]]; then hello+=("$r"); else service+=("$r"); fi
    done
  done
  mh=$(printf '%s\n' "${hello[@]}" | median)
  ms=$(printf '%s\n' "${service[@]}" | median)
  summary+=("$(awk -v rt="$rt" -v h="$mh" -v s="$ms" 'BEGIN {
    printf "%-14s %12.0f %12.0f %8.3f %+8.1f%%", rt, h, s, s/h, (1 - s/h) * 100 }')")
done
echo
printf '%-14s %12s %12s %8s %9s\n' runtime hello_rps service_rps ratio cost
printf '%s\n' "${summary[@]}"

[[ $COUNT == 1 ]] || exit 0
LOADGEN=$(release_bin loadgen)
echo
echo "# counted: syscalls/request over $COUNT_REQUESTS and $((3 * COUNT_REQUESTS)) requests at c$CONNECTIONS (the difference), instructions/request under cachegrind at c1 (2,000 and 6,000, the slope)"
printf '%-14s %10s %10s %8s %12s %12s %8s\n' runtime hello_sys service_sys ratio hello_ins service_ins ratio
for rt in $RUNTIMES; do
  hs=$(syscalls_per_request hello "$rt"); ss=$(syscalls_per_request service "$rt")
  hi=$(instructions_per_request hello "$rt"); si=$(instructions_per_request service "$rt")
  ir="–"
  [[ $hi == unmeasured ]] || ir=$(awk -v a="$si" -v b="$hi" 'BEGIN {printf "%.3f", a / b}')
  printf '%-14s %10s %10s %8s %12s %12s %8s\n' "$rt" "$hs" "$ss" \
    "$(awk -v a="$ss" -v b="$hs" 'BEGIN {printf "%.3f", a / b}')" "$hi" "$si" "$ir"
done
