#!/usr/bin/env bash
# Wrapper cost: each ping service against its runtime's plain hello-world
# (services/<svc>/examples/hello.rs), with wrk -t1 -c64 on /ping, server pinned to one CPU and
# wrk to another, release builds, A/B pairs interleaved (order alternates per pair).
# Prints every run, then per runtime the req/s medians and the service/hello ratio.
#
#   scripts/experiments/wrapper-cost.sh                        # 5 pairs x 10 s
#   PAIRS=3 DURATION_S=2 scripts/experiments/wrapper-cost.sh   # quick smoke
#
# Env: PAIRS (5), DURATION_S (10), WARMUP_S (1), CONNECTIONS (64), SERVER_CPU (0), WRK_CPU (1),
#      RUNTIMES (every service: "tokio-hyper tokio-per-core axum actix-web monoio glommio compio
#      may-minihttp epoll"), CARGO_TARGET_DIR (target).
# A runtime here is a service crate's directory name: its binary is ping-<name>, its baseline
# the example hello-<name>.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

PAIRS=${PAIRS:-5}
DURATION_S=${DURATION_S:-10}
WARMUP_S=${WARMUP_S:-1}
CONNECTIONS=${CONNECTIONS:-64}
SERVER_CPU=${SERVER_CPU:-0}
WRK_CPU=${WRK_CPU:-1}
RUNTIMES=${RUNTIMES:-"tokio-hyper tokio-per-core axum actix-web monoio glommio compio may-minihttp epoll"}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
REL="$TARGET_DIR/release"

need wrk taskset

pkgs=()
for rt in $RUNTIMES; do pkgs+=(-p "ping-$rt"); done
cargo build --release --locked "${pkgs[@]}" --bins --examples >&2

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
  if [[ $variant == service && $rt =~ ^(monoio|glommio|compio)$ ]]; then
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
