#!/usr/bin/env bash
# Where a closed-loop generator's CPU goes, per request: loadgen on io_uring, loadgen on epoll
# and wrk (and, with --bound, the cheapest io_uring client scripts/lib/uring_bound.c) against
# one pinned server, each run three times in turn (A B C A B C): under `perf stat -e
# task-clock,context-switches` for its CPU (software counters only: a tracepoint slows every
# syscall it counts, which charged wrk, at 4 syscalls per request, ~15 % more CPU on this VM
# and loadgen on io_uring nothing); under `perf stat` with tracepoints for the counts (syscalls,
# softirqs, packets sent per request); and under `perf record -e cpu-clock -g` (its samples
# grouped by call chain: the receive softirq a send triggers, TCP send, TCP receive, scheduler,
# io_uring, epoll, other kernel, user space).
#
#   scripts/experiments/generator-profile.sh [--duration 4s] [--pairs 2] [--connections 64]
#                             [--server-cmd 'CMD with {port}'] [--loadgen PATH]
#                             [--server-cpu 0] [--gen-cpu 1] [--bound]
#
# Server: ping-epoll --workers 1 (target/release) unless --server-cmd is given. Needs perf
# with software events and tracepoints (no hardware counters needed). TCP send + TCP receive
# + rx softirq is what any generator pays the kernel to move a request and its response over
# loopback TCP (the floor); the rest is what a generator can still save.
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

duration=4s pairs=2 conns=64 server_cmd="" loadgen="" server_cpu=0 gen_cpu=1 bound=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    --server-cmd) server_cmd=$2; shift 2 ;;
    --loadgen) loadgen=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --gen-cpu) gen_cpu=$2; shift 2 ;;
    --bound) bound=yes; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
if (( pairs < 1 )); then echo "--pairs must be >= 1" >&2; exit 2; fi

need wrk perf taskset python3
target_dir=${CARGO_TARGET_DIR:-target}
loadgen=${loadgen:-$target_dir/release/loadgen}
[[ -x "$loadgen" ]] || { echo "no $loadgen: run cargo build --release -p loadgen (or pass --loadgen)" >&2; exit 1; }
if [[ -z "$server_cmd" ]]; then
  [[ -x $target_dir/release/ping-epoll ]] || { echo "no ping-epoll release binary: build it or pass --server-cmd" >&2; exit 1; }
  server_cmd="$target_dir/release/ping-epoll --listen 127.0.0.1:{port} --workers 1"
fi
port=$(free_port)
url="http://127.0.0.1:$port/ping"
tmp=$(scratch_dir)
tools="uring epoll wrk"
if [[ -n "$bound" ]]; then
  bound=$(uring_bound "$tmp")
  tools="uring epoll bound wrk"
fi

# shellcheck disable=SC2086 # the command is a word list on purpose
start_pinned "$server_cpu" "$tmp/server.out" ${server_cmd//\{port\}/$port}
wait_port "$port" "$SERVER_PID" "$tmp/server.out"

# gen <tool>: the generator's command line, pinned.
gen() {
  case $1 in
    wrk) echo "taskset -c $gen_cpu wrk -t1 -c$conns -d$duration $url" ;;
    bound) echo "taskset -c $gen_cpu $bound $port $conns $(seconds "$duration")" ;;
    *) echo "taskset -c $gen_cpu $loadgen $url -t 1 -c $conns -d $duration --io $1" ;;
  esac
}
# responses <file>: the responses the tool itself reported.
responses() { awk '/requests in|responses in/ {print $1; exit}' "$1"; }

counts=raw_syscalls:sys_enter,irq:softirq_entry,net:net_dev_xmit
echo "server: ${server_cmd//\{port\}/$port} (cpu $server_cpu); generators on cpu $gen_cpu, -c$conns, $duration per run, $pairs pairs"
for i in $(seq "$pairs"); do
  for tool in $tools; do
    # shellcheck disable=SC2046 # word list on purpose
    perf stat -x, -e task-clock,context-switches -o "$tmp/$tool.$i.stat" -- $(gen "$tool") >"$tmp/$tool.$i.out" 2>&1
    # shellcheck disable=SC2046
    perf stat -x, -e "$counts" -o "$tmp/$tool.$i.count" -- $(gen "$tool") >"$tmp/$tool.$i.count.out" 2>&1
    # shellcheck disable=SC2046
    perf record -q -g -e cpu-clock -o "$tmp/$tool.$i.data" -- $(gen "$tool") >"$tmp/$tool.$i.rec.out" 2>&1
    perf script -i "$tmp/$tool.$i.data" -F ip,sym,dso 2>/dev/null >"$tmp/$tool.$i.script"
    echo "  $tool run $i: $(responses "$tmp/$tool.$i.out") responses (CPU), $(responses "$tmp/$tool.$i.count.out") (counts), $(responses "$tmp/$tool.$i.rec.out") (record)"
  done
done

python3 - "$tmp" "$pairs" "$tools" <<'PY'
import re, statistics, sys
tmp, pairs, tools = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
# A sample's group is decided by its call chain, root-most rule first: work done in the
# softirq that a send triggers (on loopback the sender's CPU runs the peer's TCP receive and
# wakes its reader) is "rx softirq", whoever sent; then sending, receiving, the scheduler
# (sleeping and being woken, from whichever wait), the I/O layer, the rest of the kernel, and
# user space.
rules = [
    ("rx softirq", r"^(net_rx_action|process_backlog|__netif_receive_skb)"),
    ("tcp send", r"^(tcp_sendmsg|__tcp_push_pending_frames|tcp_write_xmit|__dev_queue_xmit)$"),
    ("tcp recv", r"^(tcp_recvmsg|sock_recvmsg|tcp_rcv_space_adjust|__skb_datagram_iter)$"),
    ("scheduler", r"^(__schedule|schedule|try_to_wake_up|finish_task_switch|do_idle|"
                  r"schedule_hrtimeout|hrtimer_)"),
    ("io_uring", r"^(io_|__io_|__do_sys_io_uring_enter)"),
    ("epoll", r"^(ep_|do_epoll|__x64_sys_epoll)"),
]
names = [n for n, _ in rules] + ["other kernel", "user"]
# Inside the rx softirq (the peer's TCP input, run on the sender's CPU): waking the peer's
# reader, processing the ACK the segment carries (congestion control included), freeing
# buffers (the skbs the other CPU read, deferred back here), the rest of IP and TCP input.
rx_parts = [
    ("wake reader", r"^(sock_def_readable|ep_poll_callback|__wake_up|try_to_wake_up)"),
    ("ack", r"^(tcp_ack|tcp_clean_rtx_queue|tcp_cong_control|bbr_|cubictcp_|tcp_rate_)"),
    ("free skbs", r"^(skb_defer_free_flush|skb_attempt_defer_free|__kfree_skb|kfree_skb|"
                  r"skb_release_|napi_consume_skb)"),
]
rx_names = [n for n, _ in rx_parts] + ["tcp/ip input"]
def rx_part(frames):
    syms = [f[0] for f in frames]
    for name, rx in rx_parts:
        if any(re.search(rx, x) for x in syms):
            return name
    return "tcp/ip input"
def classify(frames):
    if not frames or "kernel" not in frames[0][1]:
        return "user"
    syms = [f[0] for f in frames]
    for name, rx in rules:
        if any(re.search(rx, x) for x in syms):
            return name
    return "other kernel"
def samples(path):
    frames, out = [], []
    for line in open(path):
        if not line.strip():
            if frames:
                out.append(frames)
            frames = []
        elif line.startswith(("\t", " ")):
            m = re.match(r"\s*[0-9a-f]+ (.*) \((.*)\)$", line.rstrip())
            if m:
                frames.append((re.sub(r"\+0x.*", "", m.group(1)), m.group(2)))
    if frames:
        out.append(frames)
    return out
def shares(path):
    c = dict.fromkeys(names + [f"rx: {n}" for n in rx_names], 0)
    ss = samples(path)
    for f in ss:
        g = classify(f)
        c[g] += 1
        if g == "rx softirq":
            c[f"rx: {rx_part(f)}"] += 1
    return {k: v / max(len(ss), 1) for k, v in c.items()}
def stat(path):
    vals = {}
    for line in open(path):
        f = line.strip().split(",")
        if len(f) > 2 and f[0] and f[0][0].isdigit():
            vals[f[2]] = float(f[0])
    return vals
def responses(path):
    for line in open(path):
        if "requests in" in line or "responses in" in line:
            return float(line.split()[0])
rows = {}
for tool in tools:
    per = []
    for i in range(1, pairs + 1):
        n = responses(f"{tmp}/{tool}.{i}.out")
        s = stat(f"{tmp}/{tool}.{i}.stat")
        cpu_us = s["task-clock"] * 1000 / n  # task-clock is in ms
        # The tracepoint counts, per request of their own run.
        c = stat(f"{tmp}/{tool}.{i}.count")
        k = responses(f"{tmp}/{tool}.{i}.count.out")
        per.append({
            "cpu": cpu_us,
            "cs": s["context-switches"] / n,
            "sys": c["raw_syscalls:sys_enter"] / k,
            "softirq": c["irq:softirq_entry"] / k,
            "xmit": c["net:net_dev_xmit"] / k,
            **{k: v * cpu_us for k, v in shares(f"{tmp}/{tool}.{i}.script").items()},
        })
    rows[tool] = {k: statistics.median(p[k] for p in per) for k in per[0]}
print()
print(f"Per request, medians of {pairs} runs (uring, epoll = loadgen on that backend; bound = "
      "the cheapest io_uring client; groups split perf stat's CPU by perf record's cpu-clock "
      "samples):")
print("| tool | CPU µs | syscalls | context switches | softirqs | packets sent | "
      + " | ".join(f"{n} µs" for n in names) + " |")
print("|---" * (6 + len(names)) + "|")
for tool, r in rows.items():
    print(f"| {tool} | {r['cpu']:.2f} | {r['sys']:.3f} | {r['cs']:.4f} | {r['softirq']:.2f} | "
          f"{r['xmit']:.2f} | " + " | ".join(f"{r[n]:.2f}" for n in names) + " |")
print()
print("The rx softirq split (µs per request): " + ", ".join(rx_names))
print("| tool | " + " | ".join(f"{n} µs" for n in rx_names) + " |")
print("|---" * (1 + len(rx_names)) + "|")
for tool, r in rows.items():
    print(f"| {tool} | " + " | ".join(f"{r['rx: ' + n]:.2f}" for n in rx_names) + " |")
print()
w = rows["wrk"]["cpu"]
floor = ["rx softirq", "tcp send", "tcp recv"]
for tool in [t for t in tools if t != "wrk"]:
    r = rows[tool]
    f = sum(r[n] for n in floor)
    print(f"{tool}: {r['cpu'] / w:.2f}× wrk's CPU per request; of it TCP send + receive + rx "
          f"softirq (what any generator pays on loopback) {f:.2f} µs = {f / w:.2f}× wrk's total")
PY
