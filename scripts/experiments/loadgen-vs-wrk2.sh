#!/usr/bin/env bash
# loadgen vs wrk2 in the open loop at low rates: generator CPU per request, latency p50/p99,
# loadgen's send lag, against a closed-loop c1 p50 of the same service measured here too.
# Server and generators pinned to different cores; runs interleaved A B A B per rate.
#
#   scripts/experiments/loadgen-vs-wrk2.sh [--duration 12s] [--pairs 2] [--connections 64]
#                              [--rates 5000,20000] [--server-cpu 0] [--gen-cpu 1]
#                              [--loadgen PATH] [--port 18482] [--slack-us 1000]
#                              [--halt-poll-ns N]
#
# wrk2 is built by ../shared/peers/build-wrk2.sh (relative to the repository root); when it
# cannot be built, the script prints a SKIPPED line and exits 0. Generator CPU: user+sys of
# the whole process from /usr/bin/time over the responses the tool reported, the same way
# for both tools. wrk2 calibrates for ~10 s before recording latency, so its percentiles
# cover only the rest of each run; its requests and CPU cover the whole run, like loadgen's.
# Targets (issue 11): loadgen CPU/request <= 1.5x wrk2's; send-lag p50 <= 50 µs; latency
# p50 within 50 µs of the closed-loop c1 p50. Each round also runs "loadgen-slack":
# loadgen --coalesce-us SLACK (1000: sends grouped per ~1 ms, like wrk2's tick; 0 skips it),
# which shows what loadgen's CPU per request is once it wakes as seldom as wrk2 does, i.e.
# how much of the gap is the price of sending every request on time.
# --halt-poll-ns N is a control, not a tuning: on a VM guest with the haltpoll cpuidle driver
# it sets how long an idle vCPU polls before halting (haltpoll.guest_halt_poll_ns) for the
# run and restores it after. A halted vCPU is woken through the hypervisor, which sets the
# CPU price of every timer wake-up (and the loopback latency); polling takes that price out.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

duration=12s pairs=2 conns=64 rates=5000,20000 server_cpu=0 gen_cpu=1 loadgen="" port=18482
slack_us=1000 halt_poll_ns=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --gen-cpu) gen_cpu=$2; shift 2 ;;
    --loadgen) loadgen=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --slack-us) slack_us=$2; shift 2 ;;
    --halt-poll-ns) halt_poll_ns=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
if (( pairs < 1 )); then echo "--pairs must be >= 1" >&2; exit 2; fi

skip() { echo "############ SKIPPED loadgen-vs-wrk2: $* ############"; exit 0; }
need taskset /usr/bin/time python3
target_dir=${CARGO_TARGET_DIR:-target}
peers=../shared/peers
[[ -x $peers/build-wrk2.sh ]] || skip "no $peers/build-wrk2.sh"
wrk2=$("$peers/build-wrk2.sh" "$target_dir/peers" 2>"$target_dir/wrk2-build.err" | tail -1) \
  || skip "wrk2 did not build ($(tail -3 "$target_dir/wrk2-build.err" | tr '\n' ' '))"
[[ -x "$wrk2" ]] || skip "wrk2 did not build"
if [[ -z "$loadgen" ]]; then
  loadgen=$target_dir/release/loadgen
  [[ -x "$loadgen" ]] || { echo "no $loadgen: run cargo build --release -p loadgen (or pass --loadgen)" >&2; exit 1; }
fi
server_bin=$target_dir/release/ping-may-minihttp
[[ -x $server_bin ]] || { echo "no $server_bin: run cargo build --release -p ping-may-minihttp" >&2; exit 1; }
url="http://127.0.0.1:$port/ping"

tmp=$(scratch_dir)
halt_poll=/sys/module/haltpoll/parameters/guest_halt_poll_ns
halt_poll_was=""
if [[ -n "$halt_poll_ns" ]]; then
  [[ $halt_poll_ns =~ ^[0-9]+$ ]] || { echo "--halt-poll-ns takes a whole number of ns" >&2; exit 2; }
  [[ -w $halt_poll ]] || { echo "--halt-poll-ns needs a writable $halt_poll (root, haltpoll cpuidle)" >&2; exit 2; }
  halt_poll_was=$(cat "$halt_poll")
fi
if [[ -n "$halt_poll_was" ]]; then
  restore_at_exit "$halt_poll"
  echo "$halt_poll_ns" >"$halt_poll"
fi
idle_driver=$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo "?")
echo "idle: cpuidle driver $idle_driver, guest halt polling $(cat "$halt_poll" 2>/dev/null || echo "-") ns${halt_poll_was:+ (set for this run; was $halt_poll_was)}"
start_pinned "$server_cpu" "$tmp/server.out" "$server_bin" --listen "127.0.0.1:$port" --workers 1
server_pid=$SERVER_PID
wait_port "$port" "$server_pid" "$tmp/server.out"

# Field of loadgen's JSON report by path, e.g. latency_us.p50.
jget() {
  python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k]
print(v)' "$1" "$2"
}

# wrk2's "  50.000%    1.02ms" → µs.
wrk2_pct() {
  awk -v p="$2" '$1 == p {v = $2; u = 1
    if (v ~ /us$/) {sub(/us$/, "", v)} else if (v ~ /ms$/) {sub(/ms$/, "", v); u = 1e3}
    else if (v ~ /m$/) {sub(/m$/, "", v); u = 6e7} else if (v ~ /s$/) {sub(/s$/, "", v); u = 1e6}
    printf "%.0f", v * u; exit}' "$1"
}

# run <tool> <rate> → "responses cpu_s p50_us p99_us send_lag_p50_us wakeups_per_request"
run() {
  local tool=$1 rate=$2 tm="$tmp/time"
  if [[ $tool == wrk2 ]]; then
    /usr/bin/time -f "%U %S" -o "$tm" taskset -c "$gen_cpu" \
      "$wrk2" -t1 -c"$conns" -d"$duration" -R"$rate" --latency "$url" >"$tmp/out" 2>&1
    local n
    n=$(awk '/requests in/ {print $1}' "$tmp/out")
    echo "$n $(awk '{print $1 + $2}' "$tm") $(wrk2_pct "$tmp/out" 50.000%) $(wrk2_pct "$tmp/out" 99.000%) - -"
  else
    local coalesce=()
    [[ $tool == loadgen-slack ]] && coalesce=(--coalesce-us "$slack_us")
    /usr/bin/time -f "%U %S" -o "$tm" taskset -c "$gen_cpu" \
      "$loadgen" "$url" -t 1 -c "$conns" -R "$rate" -d "$duration" "${coalesce[@]}" \
      --json "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
    local j="$tmp/r.json" w
    w=$(jget "$j" generator.wakeups_per_request 2>/dev/null || echo -)
    echo "$(jget "$j" latency_us.samples) $(awk '{print $1 + $2}' "$tm") $(jget "$j" latency_us.p50)" \
      "$(jget "$j" latency_us.p99) $(jget "$j" send_lag_us.p50) $w"
  fi
}

echo "server: ping-may-minihttp --workers 1 on cpu $server_cpu; generators on cpu $gen_cpu, -t1 -c$conns, $duration per run, $pairs pairs per rate"
taskset -c "$gen_cpu" "$loadgen" "$url" -c 1 -d 5s --warmup 1s --json "$tmp/c1.json" >/dev/null 2>&1
c1_p50=$(jget "$tmp/c1.json" latency_us.p50)
echo "closed loop c1 (5 s, warm-up 1 s): latency p50 $c1_p50 µs"
# What one timer wake-up costs on the generator's CPU: at low rates loadgen wakes once per
# request (to send it on time), wrk2 once per 1 ms tick plus for arriving responses.
taskset -c "$gen_cpu" "$loadgen" --floor --floor-rates "$rates" --floor-duration 1s --json - 2>/dev/null \
  | python3 -c 'import json,sys
for t in json.load(sys.stdin)["timer"]:
    c = t.get("cpu_per_wakeup_us")
    l = t.get("lateness") or {}
    print("machine floor at %.0f/s: a timer wake-up costs %s µs of CPU, wakes late by p50 %s µs" % (
        t["rate_per_s"], "-" if c is None else "%.1f" % c, l.get("p50_us", "-")))' || true
results="$tmp/results"
: >"$results"
tools="loadgen wrk2"
(( slack_us > 0 )) && tools="$tools loadgen-slack"
for rate in ${rates//,/ }; do
  for i in $(seq "$pairs"); do
    for tool in $tools; do
      read -r n cpu p50 p99 lag wake < <(run "$tool" "$rate")
      [[ -n "$n" && "$n" != 0 ]] || { echo "$tool at $rate/s produced no responses" >&2; cat "$tmp/out" >&2; exit 1; }
      us=$(awk -v c="$cpu" -v n="$n" 'BEGIN {printf "%.1f", c * 1e6 / n}')
      echo "$tool $rate $i $us $p50 $p99 $lag $wake" >>"$results"
      printf '  %-13s %6s/s run %s: %7s µs CPU/request  latency p50 %6s µs p99 %7s µs  send-lag p50 %4s µs  wake-ups/request %s\n' \
        "$tool" "$rate" "$i" "$us" "$p50" "$p99" "$lag" "$wake"
    done
  done
done

col() { awk -v t="$1" -v r="$2" -v c="$3" '$1==t && $2==r {print $c}' "$results" | median; }
# cpu_vs_wrk2 <tool> <rate>: the tool's median CPU per request over wrk2's.
cpu_vs_wrk2() { ratio "$(col "$1" "$2" 4)" "$(col wrk2 "$2" 4)"; }
echo
echo "| rate/s | tool | CPU µs/request | latency p50 µs | latency p99 µs | send-lag p50 µs | wake-ups/request |"
echo "|---|---|---|---|---|---|---|"
for rate in ${rates//,/ }; do
  for tool in $tools; do
    lag=- wake=-
    [[ $tool == loadgen* ]] && lag=$(col "$tool" "$rate" 7) wake=$(col "$tool" "$rate" 8)
    echo "| $rate | $tool | $(col "$tool" "$rate" 4) | $(col "$tool" "$rate" 5) | $(col "$tool" "$rate" 6) | $lag | $wake |"
  done
  cpu_ratio=$(cpu_vs_wrk2 loadgen "$rate")
  # Each pair ran back to back, so its ratio shares the machine's state of the moment.
  pair_ratios=$(awk -v r="$rate" '$2==r && $1=="loadgen" {l[$3]=$4} $2==r && $1=="wrk2" {w[$3]=$4}
    END {for (i in l) if (i in w) print l[i] / w[i]}' "$results" | sort -g)
  pair_range=$(awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.2f–%.2f", lo, hi}' <<<"$pair_ratios")
  pair_median=$(median <<<"$pair_ratios")
  gap=$(awk -v a="$(col loadgen "$rate" 5)" -v b="$c1_p50" 'BEGIN {printf "%+.0f", a - b}')
  lag=$(col loadgen "$rate" 7)
  if (( slack_us > 0 )); then
    echo "| $rate | loadgen-slack = --coalesce-us $slack_us | $(cpu_vs_wrk2 loadgen-slack "$rate")× wrk2 | | | | |"
  fi
  echo "| $rate | loadgen vs targets | ${cpu_ratio}× wrk2 (≤ 1.5×: $(yes_no "$cpu_ratio <= 1.5")); per pair median $(printf '%.2f' "$pair_median")× ($pair_range) | ${gap} µs vs c1 p50 $c1_p50 (within ±50: $(yes_no "${gap#+} <= 50 && ${gap#+} >= -50")) | | $lag (≤ 50: $(yes_no "$lag <= 50")) | |"
done
