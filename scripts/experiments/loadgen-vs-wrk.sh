#!/usr/bin/env bash
# loadgen vs wrk: CPU cost per request of the generator, server and generator pinned to
# different cores, runs interleaved (loadgen on epoll, loadgen on io_uring, wrk; again) so
# drift hits every tool alike.
#
#   scripts/experiments/loadgen-vs-wrk.sh [--duration 10s] [--pairs 3] [--connections 64]
#                             [--server-cmd 'CMD with {port}'] [--loadgen PATH]
#                             [--server-cpu 0] [--gen-cpu 1] [--depths '1 16']
#                             [--baseline PATH] [--bound]
#
# Server: ping-may-minihttp (target/release or PATH) unless --server-cmd is given; `{port}`
# in the command is replaced by the port to listen on, and the URL is /ping on it.
# Generator CPU is measured the same way for both tools: user+sys of the whole process
# from /usr/bin/time, divided by the responses the tool itself reported. loadgen's own
# counted syscalls per request (its report) are shown beside it. --baseline PATH adds a
# fourth tool to every pair, `base`: another loadgen binary (say, a build of main) on io_uring,
# so a change to the io_uring loop is measured against what it replaces in the same pairs.
# --bound adds `bound`: scripts/lib/uring_bound.c, the cheapest closed-loop client io_uring
# allows (no parsing, no clock, no histogram; needs cc and liburing-dev), the lowest CPU per
# request any generator on io_uring can reach against this server on this machine (depth 1
# only: it does not pipeline).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

duration=10s pairs=3 conns=64 server_cmd="" loadgen="" server_cpu=0 gen_cpu=1 port=18481 depths="1 16" baseline="" bound=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    --server-cmd) server_cmd=$2; shift 2 ;;
    --loadgen) loadgen=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --gen-cpu) gen_cpu=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --depths) depths=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --bound) bound=yes; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
if (( pairs < 1 )); then echo "--pairs must be >= 1" >&2; exit 2; fi

need wrk taskset /usr/bin/time
target_dir=${CARGO_TARGET_DIR:-target}
if [[ -z "$loadgen" ]]; then
  loadgen=$target_dir/release/loadgen
  [[ -x "$loadgen" ]] || { echo "no $loadgen: run cargo build --release -p loadgen (or pass --loadgen)" >&2; exit 1; }
fi
if [[ -n "$baseline" && ! -x "$baseline" ]]; then echo "--baseline $baseline: not an executable" >&2; exit 2; fi
if [[ -z "$server_cmd" ]]; then
  if [[ -x $target_dir/release/ping-may-minihttp ]]; then
    server_bin=$target_dir/release/ping-may-minihttp
  elif command -v ping-may-minihttp >/dev/null; then
    server_bin=$(command -v ping-may-minihttp)
  else
    echo "no ping-may-minihttp release binary: build it or pass --server-cmd 'CMD {port}'" >&2
    exit 1
  fi
  server_cmd="$server_bin --listen 127.0.0.1:{port} --workers 1"
fi
url="http://127.0.0.1:$port/ping"

tmp=$(scratch_dir)
[[ -n "$bound" ]] && bound=$(uring_bound "$tmp")

# wrk pipelines only through Lua: send `depth` requests as one write (as TechEmpower does).
cat >"$tmp/pipeline.lua" <<'LUA'
init = function(args)
  local depth = tonumber(args[1]) or 1
  local r = {}
  for i = 1, depth do r[i] = wrk.format() end
  req = table.concat(r)
end
request = function() return req end
LUA

# shellcheck disable=SC2086 # the command is a word list on purpose
start_pinned "$server_cpu" "$tmp/server.out" ${server_cmd//\{port\}/$port}
server_pid=$SERVER_PID
wait_port "$port" "$server_pid" "$tmp/server.out"

# Server CPU seconds so far (utime + stime of the pinned server process).
server_cpu_s() {
  awk -v hz="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); print ($12 + $13) / hz}' "/proc/$server_pid/stat"
}

# run <tool> <depth> → prints "req_per_s responses cpu_s syscalls_per_request"
# (tools: wrk, epoll and uring = loadgen on that I/O backend, base = the --baseline binary on
# io_uring, bound = uring_bound; syscalls are counted for loadgen only)
run() {
  local tool=$1 depth=$2 out="$tmp/out" tm="$tmp/time" count_line bin=$loadgen io=$1
  [[ $tool == base ]] && bin=$baseline io=uring
  if [[ $tool == bound ]]; then
    /usr/bin/time -f "%U %S" -o "$tm" taskset -c "$gen_cpu" \
      "$bound" "$port" "$conns" "$(seconds "$duration")" >"$out" 2>&1
    count_line='responses in'
  elif [[ $tool == wrk ]]; then
    local lua=()
    (( depth > 1 )) && lua=(-s "$tmp/pipeline.lua" "$url" -- "$depth")
    /usr/bin/time -f "%U %S" -o "$tm" taskset -c "$gen_cpu" \
      wrk -t1 -c"$conns" -d"$duration" "${lua[@]:-$url}" >"$out" 2>&1
    count_line='requests in'
  else
    /usr/bin/time -f "%U %S" -o "$tm" taskset -c "$gen_cpu" \
      "$bin" "$url" -t 1 -c "$conns" -d "$duration" --pipeline "$depth" --io "$io" \
      >"$out" 2>"$tmp/err"
    count_line='responses in'
    grep -q "I/O: .*$( [[ $io == uring ]] && echo io_uring || echo epoll )" "$out" \
      || { echo "loadgen did not run on $io:" >&2; cat "$out" "$tmp/err" >&2; exit 1; }
  fi
  # Both print "Requests/sec:" like wrk; the response count line differs.
  local n rps sys
  n=$(awk -v re="$count_line" '$0 ~ re {print $1}' "$out")
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
  sys=$(awk '/counted: / {print $2}' "$out")
  echo "$rps $n $(awk '{print $1 + $2}' "$tm") ${sys:--}"
}

results="$tmp/results"
: >"$results"
echo "server: ${server_cmd//\{port\}/$port} (cpu $server_cpu); generators on cpu $gen_cpu, -t1 -c$conns, $duration per run, $pairs pairs"
tools="epoll uring wrk"
[[ -n "$baseline" ]] && tools="epoll uring base wrk"
[[ -n "$bound" ]] && tools="${tools% wrk} bound wrk"
# tools_at DEPTH: the tools measured at DEPTH (the bound does not pipeline: depth 1 only).
tools_at() { if (( $1 == 1 )); then echo "$tools"; else echo "${tools/ bound/}"; fi; }
for depth in $depths; do
  for i in $(seq "$pairs"); do
    for tool in $(tools_at "$depth"); do
      s0=$(server_cpu_s) t0=$(date +%s.%N)
      read -r rps n cpu sys < <(run "$tool" "$depth")
      s1=$(server_cpu_s) t1=$(date +%s.%N)
      [[ -n "$n" && "$n" != 0 ]] || { echo "$tool depth $depth produced no responses" >&2; exit 1; }
      # Share of its one core the server used over the tool's whole run (start-up included).
      busy=$(awk -v a="$s0" -v b="$s1" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.3f", (b - a) / (t1 - t0)}')
      echo "$tool $depth $i $rps $n $cpu $busy $sys" >>"$results"
      printf '  %-8s depth %-3s run %s: %12.0f req/s  %8.3f µs CPU/request  %6s syscalls/request  server core %3.0f %%\n' \
        "$tool" "$depth" "$i" "$rps" "$(awk -v c="$cpu" -v n="$n" 'BEGIN {print c * 1e6 / n}')" \
        "$sys" "$(awk -v b="$busy" 'BEGIN {print b * 100}')"
    done
  done
done

echo
echo "(tools: epoll, uring = loadgen on that I/O backend${baseline:+; base = $baseline on io_uring}${bound:+; bound = the cheapest io_uring client, scripts/lib/uring_bound.c})"
echo "| depth | tool | req/s (median) | generator CPU µs/request (median) | syscalls/request (median) | server core busy (median) |"
echo "|---|---|---|---|---|---|"
declare -A med_rps med_cpu
for depth in $depths; do
  for tool in $(tools_at "$depth"); do
    rps=$(awk -v t="$tool" -v d="$depth" '$1==t && $2==d {print $4}' "$results" | median)
    cpu=$(awk -v t="$tool" -v d="$depth" '$1==t && $2==d {print $6 * 1e6 / $5}' "$results" | median)
    busy=$(awk -v t="$tool" -v d="$depth" '$1==t && $2==d {print $7 * 100}' "$results" | median)
    sys=$(awk -v t="$tool" -v d="$depth" '$1==t && $2==d && $8 != "-" {print $8}' "$results" | median)
    [[ $tool == wrk || $tool == bound ]] && sys="n/a" || sys=$(printf '%.3f' "$sys")
    echo "| $depth | $tool | $(printf '%.0f' "$rps") | $(printf '%.3f' "$cpu") | $sys | $(printf '%.0f' "$busy") % |"
    med_rps[$tool]=$rps med_cpu[$tool]=$cpu
  done
  for tool in $(tools_at "$depth"); do
    [[ $tool == wrk ]] && continue
    echo "| $depth | $tool/wrk | $(ratio "${med_rps[$tool]}" "${med_rps[wrk]}")× | $(ratio "${med_cpu[$tool]}" "${med_cpu[wrk]}")× | | |"
  done
  if [[ -n "$bound" && $depth == 1 ]]; then
    echo "| $depth | uring/bound | $(ratio "${med_rps[uring]}" "${med_rps[bound]}")× | $(ratio "${med_cpu[uring]}" "${med_cpu[bound]}")× | | |"
  fi
done
