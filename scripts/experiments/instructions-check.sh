#!/usr/bin/env bash
# Independent check of the suite's instructions/request (issue 25): per service, Valgrind's
# callgrind (the suite uses cachegrind) around a fresh start pinned to SERVER_CPU with
# `--workers 1`, loaded by `loadgen -c 1 -n N` (the suite drives its own client), at two
# request counts N1 and N2 (the suite: 2,000 and 6,000); the slope (I2 − I1) / (N2 − N1) is
# printed beside the suite's median for the same service in RUN's c1 cell. Services whose
# I/O driver Valgrind cannot run (io_uring) are skipped where the suite says "unmeasured".
#
#   scripts/experiments/instructions-check.sh                       # every service, ~3 min
#   SERVICES="ping-epoll ping-axum" scripts/experiments/instructions-check.sh
#
# Env: SERVICES (every service in services/services.toml), N1 (3000), N2 (9000),
#      SERVER_CPU (0), LOADGEN_CPU (1), RUN (the committed counted reference run),
#      HEADER (an extra request header, e.g. "User-Agent: pingmatrix-verify", the one the
#      suite's Valgrind client sends; none by default, as in the timed load).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

need valgrind taskset python3
N1="${N1:-3000}"
N2="${N2:-9000}"
RUN="${RUN-results/2026-12-03T09-19-08Z-18b59fe}"
SERVICES="${SERVICES:-$(service_names)}"
LOADGEN=$(release_bin loadgen)
WORK=$(scratch_dir)

# suite SERVICE: the run's c1 instructions/request median, "unmeasured", or "–".
suite() { python3 "$(dirname "$0")/../lib/counted_c1.py" "$RUN" "$1" instructions; }

# instructions SERVICE N: callgrind's total for a start that serves N requests and stops.
instructions() {
  local bin=$1 n=$2 port out
  port=$(free_port)
  out="$WORK/callgrind.out"
  rm -f "$out"
  start_pinned "${SERVER_CPU:-0}" "$WORK/server.log" valgrind --tool=callgrind \
    --callgrind-out-file="$out" "$bin" --listen "127.0.0.1:$port" --workers 1
  wait_port "$port" "$SERVER_PID" "$WORK/server.log"
  local extra=()
  [[ -z "${HEADER:-}" ]] || extra=(-H "$HEADER")
  taskset -c "${LOADGEN_CPU:-1}" timeout 300 "$LOADGEN" -c 1 -n "$n" "${extra[@]}" \
    "http://127.0.0.1:$port/ping" >/dev/null 2>"$WORK/loadgen.log"
  stop_pid "$SERVER_PID"
  awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

printf '%-20s %12s %12s %10s\n' service callgrind suite suite/check
for svc in $SERVICES; do
  s=$(suite "$svc")
  if [[ "$s" == unmeasured ]]; then
    printf '%-20s %12s %12s %10s\n' "$svc" "–" "$s" "–"
    continue
  fi
  bin=$(release_bin "$svc")
  i1=$(instructions "$bin" "$N1")
  i2=$(instructions "$bin" "$N2")
  per=$(awk -v a="$i1" -v b="$i2" -v n1="$N1" -v n2="$N2" 'BEGIN {printf "%.1f", (b - a) / (n2 - n1)}')
  r="–"
  [[ "$s" == "–" ]] || r=$(awk -v a="$s" -v b="$per" 'BEGIN {printf "%.4f", a / b}')
  printf '%-20s %12s %12s %10s\n' "$svc" "$per" "$s" "$r"
done
