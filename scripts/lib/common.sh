# Shared by the experiment scripts (source it; bash only): the repository root as the working
# directory, one exit trap that undoes everything registered with `on_exit`, a scratch
# directory, starting a pinned server and waiting for its port, and the statistics the
# scripts print (median, ratio). Nothing here prints unless something fails.

# shellcheck shell=bash
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2

_on_exit=()
# on_exit CMD...: run CMD when the script exits (last registered runs first).
on_exit() { _on_exit=("$(printf '%q ' "$@")" "${_on_exit[@]}"); }
_run_on_exit() {
  local c
  for c in "${_on_exit[@]}"; do eval "$c" || true; done
}
trap _run_on_exit EXIT

# scratch_dir: a fresh directory, removed at exit; prints its path.
scratch_dir() {
  local d
  d=$(mktemp -d)
  on_exit rm -rf "$d"
  echo "$d"
}

# restore_at_exit FILE: write FILE's current contents back at exit (a kernel knob set for a run).
restore_at_exit() {
  local v
  v=$(cat "$1")
  on_exit write_file "$1" "$v"
}
write_file() { echo "$2" >"$1"; }

# need TOOL...: exit 2 naming the first tool not on PATH.
need() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || { echo "$(basename "$0"): $t not found" >&2; exit 2; }
  done
}

# stop_pid PID: SIGTERM and reap, quietly.
stop_pid() {
  [[ -n "${1:-}" ]] || return 0
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# free_port: a port nobody listens on, below the ephemeral range (a port that a client socket
# holds as its local port accepts no connections, so the probe passes, yet cannot be bound).
free_port() {
  local p low
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range
  (( low > 11000 )) || low=32768
  for _ in $(seq 1 100); do
    p=$((10000 + RANDOM % (low - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "$(basename "$0"): no free port found" >&2; exit 1
}

# wait_port PORT PID LOG: wait up to 10 s for 127.0.0.1:PORT to accept; exit 1 with LOG if the
# process PID died first or the port never opened.
wait_port() {
  local port=$1 pid=$2 log=$3
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$(basename "$0"): server on port $port exited:" >&2; cat "$log" >&2; exit 1
    fi
    sleep 0.05
  done
  echo "$(basename "$0"): server on port $port not ready after 10 s" >&2; exit 1
}

# start_pinned CPU LOG CMD...: start CMD on CPU with its output in LOG; sets SERVER_PID and
# stops it at exit.
start_pinned() {
  local cpu=$1 log=$2
  shift 2
  taskset -c "$cpu" "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  on_exit stop_pid "$SERVER_PID"
}

# release_bin NAME: the release build of NAME in this checkout's target dir, else on PATH;
# exit 1 saying how to build it.
release_bin() {
  local b="${CARGO_TARGET_DIR:-target}/release/$1"
  if [[ -x "$b" ]]; then echo "$b"; return; fi
  if command -v "$1" >/dev/null; then command -v "$1"; return; fi
  echo "$(basename "$0"): no release $1: run cargo build --release --workspace --locked" >&2; exit 1
}

# service_dirs: the crate directory of every service in services/services.toml, space-separated
# (the one list of services; a script never keeps its own).
service_dirs() { awk -F'"' '/^dir *=/ {printf "%s%s", sep, $2; sep=" "} END {print ""}' services/services.toml; }

# service_names: every service in services/services.toml, space-separated.
service_names() { awk -F'"' '/^name *=/ {printf "%s%s", sep, $2; sep=" "} END {print ""}' services/services.toml; }

# io_uring_dirs: the crate directory of every service whose io_driver names io_uring, as an
# extended regex alternation (monoio|glommio|compio).
io_uring_dirs() {
    awk -F'"' '/^dir *=/ {d=$2} /^io_driver *=/ && /io_uring/ {printf "%s%s", sep, d; sep="|"} END {print ""}' services/services.toml
}

# median: the median of the numbers on stdin, one per line.
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# ratio A B: A / B to two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
# yes_no EXPR: "yes" when the awk expression holds, else "NO".
yes_no() { awk "BEGIN {print ($1) ? \"yes\" : \"NO\"}"; }

# uring_bound DIR: build scripts/lib/uring_bound.c (the cheapest io_uring client, the bound a
# generator on io_uring can reach) into DIR and print its path; exit 2 saying what is missing.
uring_bound() {
  need cc
  if ! printf '#include <liburing.h>\n' | cc -E - >/dev/null 2>&1; then
    echo "$(basename "$0"): --bound needs liburing's headers (Debian: apt-get install liburing-dev)" >&2; exit 2
  fi
  cc -O2 -o "$1/uring_bound" scripts/lib/uring_bound.c -luring || exit 2
  echo "$1/uring_bound"
}
# seconds DURATION: a wrk-style duration (10s, 2m, 500ms) in seconds; exit 2 on anything else.
seconds() {
  case "$1" in
    *ms) awk -v v="${1%ms}" 'BEGIN {print v / 1000}' ;;
    *s) echo "${1%s}" ;;
    *m) awk -v v="${1%m}" 'BEGIN {print v * 60}' ;;
    *) echo "$1" ;;
  esac | grep -E '^[0-9]+(\.[0-9]+)?$' || { echo "$(basename "$0"): bad duration $1" >&2; exit 2; }
}
