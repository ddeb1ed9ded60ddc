#!/usr/bin/env bash
# loadgen vs h2load over h2c (HTTP/2 with prior knowledge): the generators' CPU per request
# and req/s against the same server, with the same connections and concurrent streams per
# connection (h2load -m), server and generator pinned to different cores, runs interleaved
# (loadgen, h2load; again) so drift hits both alike — as loadgen-vs-wrk.sh does for HTTP/1.1.
#
#   scripts/experiments/loadgen-vs-h2load.sh [--duration 5s] [--pairs 3] [--connections 64]
#                             [--streams '10 1'] [--tls] [--server-cmd 'CMD with {port}']
#                             [--loadgen PATH] [--server-cpu 0] [--gen-cpu 1]
#
# Server: ping-tokio-hyper --protocol h2c --workers 1 (target/release) unless --server-cmd is
# given; `{port}` is replaced by the port to listen on, and the URL is /ping on it. --tls: h2
# over TLS 1.3 instead (ALPN h2; `--protocol h2+tls` with a throwaway RSA-2048 certificate made
# by openssl in the scratch directory, `{cert}` and `{key}` in --server-cmd), both tools on an
# https:// URL; the connections are made before the measured time by both. Generator
# CPU is measured the same way for both: user+sys of the whole process from /usr/bin/time,
# divided by the responses the tool itself reported (h2load: "succeeded"). h2load (Debian's
# nghttp2-client) runs one thread (-t1) for a duration (-D), as loadgen does (-t 1 -d).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

duration=5s pairs=3 conns=64 streams="10 1" server_cmd="" loadgen="" server_cpu=0 gen_cpu=1 port=18482 tls=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --tls) tls=1; shift ;;
    --server-cmd) server_cmd=$2; shift 2 ;;
    --loadgen) loadgen=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --gen-cpu) gen_cpu=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "--pairs must be a whole number >= 1" >&2; exit 2; }
[[ $conns =~ ^[1-9][0-9]*$ ]] || { echo "--connections must be a whole number >= 1" >&2; exit 2; }
for m in $streams; do
  [[ $m =~ ^[1-9][0-9]*$ ]] || { echo "--streams: '$m' is not a whole number >= 1" >&2; exit 2; }
done

need h2load taskset /usr/bin/time
target_dir=${CARGO_TARGET_DIR:-target}
if [[ -z "$loadgen" ]]; then
  loadgen=$target_dir/release/loadgen
  [[ -x "$loadgen" ]] || { echo "no $loadgen: run cargo build --release -p loadgen (or pass --loadgen)" >&2; exit 1; }
fi
protocol=h2c scheme=http
if ((tls)); then
  need openssl
  protocol=h2+tls scheme=https
fi
if [[ -z "$server_cmd" ]]; then
  server_bin=$target_dir/release/ping-tokio-hyper
  [[ -x $server_bin ]] || { echo "no $server_bin: cargo build --release -p ping-tokio-hyper (or pass --server-cmd)" >&2; exit 1; }
  server_cmd="$server_bin --listen 127.0.0.1:{port} --workers 1 --protocol $protocol"
  ((tls)) && server_cmd+=" --tls-cert {cert} --tls-key {key}"
fi
url="$scheme://127.0.0.1:$port/ping"
secs=$(seconds "$duration")

tmp=$(scratch_dir)
if ((tls)); then
  # A key for this comparison alone, in the scratch directory (removed with it).
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
  server_cmd=${server_cmd//\{cert\}/$tmp/cert.pem}
  server_cmd=${server_cmd//\{key\}/$tmp/key.pem}
fi
# shellcheck disable=SC2086 # the command is a word list on purpose
start_pinned "$server_cpu" "$tmp/server.out" ${server_cmd//\{port\}/$port}
server_pid=$SERVER_PID
wait_port "$port" "$server_pid" "$tmp/server.out"

# Server CPU seconds so far (utime + stime of the pinned server process).
server_cpu_s() {
  awk -v hz="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); print ($12 + $13) / hz}' "/proc/$server_pid/stat"
}

# run <tool> <streams> → prints "req_per_s responses cpu_s errors"
run() {
  local tool=$1 m=$2 out="$tmp/out" tm="$tmp/time" n rps errors
  if [[ $tool == h2load ]]; then
    /usr/bin/time -f "%U %S" -o "$tm" taskset -c "$gen_cpu" \
      h2load -t1 -c"$conns" -m"$m" -D"$secs" "$url" >"$out" 2>&1
    # "finished in 5.00s, 81234.40 req/s, …" / "requests: … 406172 succeeded, 0 failed, 0 errored, 0 timeout"
    rps=$(awk '/^finished in/ {gsub(",", "", $4); print $4}' "$out")
    n=$(awk '/^requests:/ {for (i = 1; i <= NF; i++) if ($(i+1) ~ /^succeeded/) print $i}' "$out")
    errors=$(awk '/^requests:/ {for (i = 1; i <= NF; i++) if ($(i+1) ~ /^(failed|errored|timeout)/) e += $i; print e + 0}' "$out")
  else
    /usr/bin/time -f "%U %S" -o "$tm" taskset -c "$gen_cpu" \
      "$loadgen" "$url" --protocol "$protocol" -t 1 -c "$conns" --pipeline "$m" -d "$duration" \
      >"$out" 2>"$tmp/err"
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
    n=$(awk '/responses in/ {print $1}' "$out")
    errors=$(awk '/^ *sent / {print $11 + $14}' "$out")
  fi
  [[ -n "$n" && "$n" != 0 ]] || { echo "$tool with $m streams produced no responses:" >&2; cat "$out" >&2; exit 1; }
  echo "$rps $n $(awk '{print $1 + $2}' "$tm") ${errors:-?}"
}

results="$tmp/results"
: >"$results"
echo "server: ${server_cmd//\{port\}/$port} (cpu $server_cpu); $protocol; generators on cpu $gen_cpu, 1 thread, $conns connections, $duration per run, $pairs pairs"
for m in $streams; do
  for i in $(seq "$pairs"); do
    for tool in loadgen h2load; do
      s0=$(server_cpu_s) t0=$(date +%s.%N)
      read -r rps n cpu errors < <(run "$tool" "$m")
      s1=$(server_cpu_s) t1=$(date +%s.%N)
      busy=$(awk -v a="$s0" -v b="$s1" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.3f", (b - a) / (t1 - t0)}')
      echo "$tool $m $i $rps $n $cpu $busy $errors" >>"$results"
      printf '  %-8s %3s streams run %s: %10.0f req/s  %8.3f µs CPU/request  errors %s  server core %3.0f %%\n' \
        "$tool" "$m" "$i" "$rps" "$(awk -v c="$cpu" -v n="$n" 'BEGIN {print c * 1e6 / n}')" \
        "$errors" "$(awk -v b="$busy" 'BEGIN {print b * 100}')"
    done
  done
done

echo
echo "| connections × streams | tool | req/s (median) | generator CPU µs/request (median) | server core busy (median) |"
echo "|---|---|---|---|---|"
declare -A med_rps med_cpu
for m in $streams; do
  for tool in loadgen h2load; do
    rps=$(awk -v t="$tool" -v d="$m" '$1==t && $2==d {print $4}' "$results" | median)
    cpu=$(awk -v t="$tool" -v d="$m" '$1==t && $2==d {print $6 * 1e6 / $5}' "$results" | median)
    busy=$(awk -v t="$tool" -v d="$m" '$1==t && $2==d {print $7 * 100}' "$results" | median)
    echo "| $conns × $m | $tool | $(printf '%.0f' "$rps") | $(printf '%.3f' "$cpu") | $(printf '%.0f' "$busy") % |"
    med_rps[$tool]=$rps med_cpu[$tool]=$cpu
  done
  echo "| $conns × $m | loadgen/h2load | $(ratio "${med_rps[loadgen]}" "${med_rps[h2load]}")× | $(ratio "${med_cpu[loadgen]}" "${med_cpu[h2load]}")× | |"
done
