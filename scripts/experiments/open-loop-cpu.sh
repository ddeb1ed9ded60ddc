#!/usr/bin/env bash
# What "server CPU per request" means at low open-loop load (issue 25, item 5). One service
# (--workers 1) pinned to SERVER_CPU, loadgen at a fixed rate on LOADGEN_CPU for exactly
# RATE x DURATION_S requests; per repetition, over the same window, side by side:
#   sched    the summed /proc/<pid>/task/*/schedstat run time (sum_exec_runtime; the runner's)
#   perf     `perf stat -e task-clock -p PID` (perf's own clock, from switch-in to switch-out)
#   cg1/cg2  cgroup v1 cpuacct.usage and cgroup v2 cpu.stat usage_usec (the server in both)
#   stat     /proc/<pid>/stat utime + stime
#   cs       context switches per request (/proc/<pid>/task/*/status; vol = slept and woken)
#   idle     CPU time the SCHED_IDLE spinner (scripts/lib/idle_spinner.c) lost on SERVER_CPU
#            over the window (its clock's gaps > 1 µs: something else ran), less its gaps with
#            the server idle in the second just before and after (spin arm)
# in up to four arms, interleaved (the order rotates every repetition):
#   bare     no perf attached, nothing else on SERVER_CPU (what the runner sees)
#   halt     perf attached, nothing else on SERVER_CPU: the vCPU halts between requests
#   spin     perf attached and the spinner on SERVER_CPU: the vCPU never idles
#   poll     perf attached, haltpoll.guest_halt_poll_ns = POLL_NS: the idle vCPU polls before
#            it halts (only where the knob is writable; restored after every run)
# Then, per rate, one traced window (TRACE=1): `perf record` of sched_switch, sched_wakeup and
# power:cpu_idle on SERVER_CPU, which splits each wake-up from idle into the idle exit (wake-up
# to switch-in, charged to the woken thread's sum_exec_runtime: the scheduler skips the clock
# update after a wake-up from idle, so exec_start is the enqueue time) and the thread's own run.
# Prints every run, per rate and arm the medians, and per arm the CV of each measure.
#
#   scripts/experiments/open-loop-cpu.sh                       # ~5 min
#   REPS=2 DURATION_S=1 ARMS="bare spin" TRACE=0 scripts/experiments/open-loop-cpu.sh
#
# Env: SERVICE (ping-epoll), RATES ("5000 20000"), REPS (6), DURATION_S (2.5), ARMS
#      ("bare halt spin poll"), POLL_NS (200000), TRACE (1), SERVER_CPU (0), LOADGEN_CPU (1).
set -euo pipefail
# shellcheck source=scripts/lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

SERVICE_NAME=${SERVICE:-ping-epoll}
RATES=${RATES:-"5000 20000"}
REPS=${REPS:-6}
DURATION_S=${DURATION_S:-2.5}
ARMS=${ARMS:-"bare halt spin poll"}
POLL_NS=${POLL_NS:-200000}
TRACE=${TRACE:-1}
SERVER_CPU=${SERVER_CPU:-0}
LOADGEN_CPU=${LOADGEN_CPU:-1}

need taskset perf cc python3
SERVICE=$(release_bin "$SERVICE_NAME")
LOADGEN=$(release_bin loadgen)
scratch=$(scratch_dir)
SPINNER="$scratch/idle_spinner"
cc -O2 -o "$SPINNER" scripts/lib/idle_spinner.c

POLL_KNOB=/sys/module/haltpoll/parameters/guest_halt_poll_ns
if [[ " $ARMS " == *" poll "* ]]; then
  if [[ -w $POLL_KNOB ]]; then
    restore_at_exit "$POLL_KNOB"
    POLL_ORIG=$(cat "$POLL_KNOB")
  else
    echo "poll arm skipped: $POLL_KNOB not writable" >&2
    ARMS=${ARMS//poll/}
  fi
fi

# cgroups holding only the server: v1 cpuacct and v2, where this machine has them.
CG1=/sys/fs/cgroup/cpuacct/pingmatrix-olcpu-$$
CG2=/sys/fs/cgroup/unified/pingmatrix-olcpu-$$
[[ -d /sys/fs/cgroup/unified ]] || CG2=/sys/fs/cgroup/pingmatrix-olcpu-$$
for cg in "$CG1" "$CG2"; do
  if mkdir "$cg" 2>/dev/null; then on_exit rmdir "$cg"; fi
done

echo "# $(date -u +%FT%TZ) $SERVICE_NAME on CPU $SERVER_CPU, loadgen on CPU $LOADGEN_CPU, ${DURATION_S} s per window"
echo "# loadavg $(cat /proc/loadavg); cpuidle $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null)/$(cat /sys/devices/system/cpu/cpuidle/current_governor 2>/dev/null || cat /sys/devices/system/cpu/cpuidle/current_governor_ro 2>/dev/null); guest_halt_poll_ns $(cat $POLL_KNOB 2>/dev/null || echo -)"

# snapshot PID: one line of counters (ns unless said).
snapshot() {
  local pid=$1
  {
    date +%s%N
    cat /proc/"$pid"/task/*/schedstat | awk '{s += $1} END {printf "%d\n", s}'
    awk '{print ($14 + $15) * 1e9 / 100}' /proc/"$pid"/stat # USER_HZ 100
    cat "$CG1/cpuacct.usage" 2>/dev/null || echo nan
    awk '$1 == "usage_usec" {print $2 * 1000}' "$CG2/cpu.stat" 2>/dev/null || echo nan
    cat /proc/"$pid"/task/*/status | awk '/^voluntary_ctxt_switches/ {v += $2} /^nonvoluntary_ctxt_switches/ {n += $2} END {print v; print n}'
    awk -v c="cpu$SERVER_CPU" '$1 == c {print $5 * 1e7; print $9 * 1e7}' /proc/stat # idle, steal
  } | paste -sd' '
}

# spin_sample: ask the spinner for "<ns> <iterations> <ns in gaps>" and print it (waits up
# to 2 s).
spin_sample() {
  local n
  n=$(wc -l <"$scratch/spin.out")
  kill -USR1 "$SPIN_PID"
  for _ in $(seq 1 200); do
    (( $(wc -l <"$scratch/spin.out") > n )) && break
    sleep 0.01
  done
  tail -n 1 "$scratch/spin.out"
}

# run_one RATE ARM REP: one window; prints one result line.
run_one() {
  local rate=$1 arm=$2 rep=$3 port log n before after perf_pid="" s0="" s1="" s2="" s3="" s4=""
  n=$(awk -v r="$rate" -v d="$DURATION_S" 'BEGIN {printf "%d", r * d}')
  [[ $arm == poll ]] && echo "$POLL_NS" >"$POLL_KNOB"
  port=$(free_port)
  log="$scratch/server.log"
  start_pinned "$SERVER_CPU" "$log" "$SERVICE" --listen "127.0.0.1:$port" --workers 1
  wait_port "$port" "$SERVER_PID" "$log"
  for cg in "$CG1" "$CG2"; do
    [[ -d $cg ]] && echo "$SERVER_PID" >"$cg/cgroup.procs"
  done
  if [[ $arm == spin ]]; then
    : >"$scratch/spin.out"
    "$SPINNER" "$SERVER_CPU" >"$scratch/spin.out" &
    SPIN_PID=$!
    sleep 0.2
  fi
  taskset -c "$LOADGEN_CPU" "$LOADGEN" -R "$rate" -c 64 -d 500ms \
    "http://127.0.0.1:$port/ping" >/dev/null 2>&1 # warm-up: caches, page faults
  if [[ $arm != bare ]]; then
    perf stat -x, -e task-clock,context-switches -p "$SERVER_PID" -o "$scratch/perf.txt" &
    perf_pid=$!
  fi
  if [[ $arm == spin ]]; then s0=$(spin_sample); sleep 1; s1=$(spin_sample); else sleep 0.5; fi
  before=$(snapshot "$SERVER_PID")
  [[ $arm == spin ]] && s2=$(spin_sample)
  taskset -c "$LOADGEN_CPU" "$LOADGEN" -R "$rate" -c 64 -n "$n" --timeout 2s \
    "http://127.0.0.1:$port/ping" >/dev/null 2>"$scratch/loadgen.log"
  [[ $arm == spin ]] && s3=$(spin_sample)
  after=$(snapshot "$SERVER_PID")
  if [[ $arm == spin ]]; then sleep 1; s4=$(spin_sample); stop_pid "$SPIN_PID"; fi
  [[ -n $perf_pid ]] && { kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true; }
  stop_pid "$SERVER_PID"
  [[ $arm == poll ]] && echo "$POLL_ORIG" >"$POLL_KNOB"
  local tc="nan" pcs="nan"
  if [[ $arm != bare ]]; then
    tc=$(awk -F, '$3 == "task-clock" {print $1 * 1e6}' "$scratch/perf.txt") # msec -> ns
    pcs=$(awk -F, '$3 == "context-switches" {print $1}' "$scratch/perf.txt")
  fi
  python3 - "$rate" "$arm" "$rep" "$n" "$before" "$after" "$tc" "$pcs" "$s0" "$s1" "$s2" "$s3" "$s4" <<'PY'
import sys
rate, arm, rep, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
b = [float(x) for x in sys.argv[5].split()]
a = [float(x) for x in sys.argv[6].split()]
d = [y - x for x, y in zip(b, a)]
tc, pcs = float(sys.argv[7]), float(sys.argv[8])
us = lambda ns: ns / 1e3 / n
idle = float("nan")
s = [tuple(map(float, x.split())) for x in sys.argv[9:14] if x]
if len(s) == 5:
    # The spinner's time in gaps (something else had the CPU) over the window, less the
    # share of time in gaps with the server idle just before and after (neighbours, host).
    base = ((s[1][2] - s[0][2]) + (s[4][2] - s[3][2])) / ((s[1][0] - s[0][0]) + (s[4][0] - s[3][0]))
    lost = (s[3][2] - s[2][2]) - base * (s[3][0] - s[2][0])
    idle = us(lost)
# wall sched stat cg1 cg2 vol invol cpu_idle cpu_steal
print(f"{rate} {arm} {rep} sched {us(d[1]):.2f} perf {us(tc):.2f} cg1 {us(d[3]):.2f} "
      f"cg2 {us(d[4]):.2f} stat {us(d[2]):.2f} idle {idle:.2f} "
      f"cs {(d[5] + d[6]) / n:.3f} vol {d[5] / n:.3f} invol {d[6] / n:.3f} "
      f"perf_cs {pcs / n:.3f} steal_ms {d[8] / 1e6:.0f} wall_s {d[0] / 1e9:.2f}")
PY
}

# trace_one RATE: one window of 1 s with the scheduler's tracepoints on SERVER_CPU.
trace_one() {
  local rate=$1 port log n before after perf_pid
  n=$rate
  port=$(free_port)
  log="$scratch/server.log"
  start_pinned "$SERVER_CPU" "$log" "$SERVICE" --listen "127.0.0.1:$port" --workers 1
  wait_port "$port" "$SERVER_PID" "$log"
  taskset -c "$LOADGEN_CPU" "$LOADGEN" -R "$rate" -c 64 -d 500ms \
    "http://127.0.0.1:$port/ping" >/dev/null 2>&1
  perf record -q -a -e sched:sched_switch,sched:sched_wakeup,power:cpu_idle \
    -o "$scratch/trace.data" -m 1024 2>/dev/null &
  perf_pid=$!
  sleep 0.5
  before=$(snapshot "$SERVER_PID")
  taskset -c "$LOADGEN_CPU" "$LOADGEN" -R "$rate" -c 64 -n "$n" --timeout 2s \
    "http://127.0.0.1:$port/ping" >/dev/null 2>"$scratch/loadgen.log"
  after=$(snapshot "$SERVER_PID")
  kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
  local tids
  tids=$(cd /proc/"$SERVER_PID"/task && printf "%s\n" * | paste -sd,)
  stop_pid "$SERVER_PID"
  perf script -i "$scratch/trace.data" --ns -F cpu,time,event,trace 2>/dev/null >"$scratch/trace.txt"
  python3 - "$rate" "$n" "$tids" "$before" "$after" "$scratch/trace.txt" "$SERVER_CPU" <<'PY'
import re, sys
rate, n, tids = sys.argv[1], int(sys.argv[2]), set(sys.argv[3].split(","))
b = [float(x) for x in sys.argv[4].split()]
a = [float(x) for x in sys.argv[5].split()]
server_cpu = int(sys.argv[7])
sched_us = (a[1] - b[1]) / 1e3 / n
# Per switch-in of a server thread on its CPU: the time since its wake-up (on any CPU), split
# by what the CPU ran before (idle or another task), and its run until the switch-out.
on = None; run = 0.0; woke = {}; gaps = {"idle": [], "task": []}; switch_ins = 0; prevs = {}
for line in open(sys.argv[6]):
    m = re.match(r"\s*\[(\d+)\]\s+(\d+\.\d+):\s+(\S+):\s+(.*)", line)
    if not m:
        continue
    cpu, t, ev, rest = int(m.group(1)), float(m.group(2)) * 1e9, m.group(3), m.group(4)
    if ev.endswith("sched_wakeup"):
        pid = re.search(r" pid=(\d+)", rest).group(1)
        if pid in tids:
            woke[pid] = t
    elif ev.endswith("sched_switch") and cpu == server_cpu:
        prev = re.search(r"prev_pid=(\d+)", rest).group(1)
        nxt = re.search(r"next_pid=(\d+)", rest).group(1)
        if prev in tids and on is not None:
            run += t - on; on = None
        if nxt in tids:
            on = t; switch_ins += 1
            pc = re.search(r"prev_comm=(.*?) prev_pid", rest).group(1)
            prevs[pc] = prevs.get(pc, 0) + 1
            if nxt in woke:
                gaps["idle" if prev == "0" else "task"].append(t - woke.pop(nxt))
def part(k):
    g = sorted(gaps[k])
    if not g:
        return f"{k}: none"
    return (f"after {k}: {len(g) / n:.3f}/req, wake-up to switch-in median {g[len(g) // 2] / 1e3:.1f} us, "
            f"sum {sum(g) / 1e3 / n:.2f} us/req")
total_gap = sum(sum(g) for g in gaps.values()) / 1e3 / n
print(f"{rate} trace: schedstat {sched_us:.2f} us/req = switch-in..switch-out {run / 1e3 / n:.2f} "
      f"+ wake-up..switch-in {total_gap:.2f} (sum {run / 1e3 / n + total_gap:.2f}); "
      f"switch-ins {switch_ins / n:.3f}/req; {part('idle')}; {part('task')}; "
      "switched in after: " + ", ".join(f"{k} {v}" for k, v in sorted(prevs.items(), key=lambda x: -x[1])[:4]))
PY
}

results="$scratch/results.txt"
: >"$results"
read -r -a arms <<<"$ARMS"
for rep in $(seq 1 "$REPS"); do
  for rate in $RATES; do
    k=${#arms[@]}
    for i in $(seq 0 $((k - 1))); do
      arm=${arms[$(((i + rep) % k))]}
      line=$(run_one "$rate" "$arm" "$rep")
      echo "$line"
      echo "$line" >>"$results"
    done
  done
done
echo "# loadavg $(cat /proc/loadavg)"
python3 - "$results" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
keys = ["sched", "perf", "cg1", "cg2", "stat", "idle", "cs", "vol", "invol", "perf_cs"]
by = {}
for r in rows:
    d = {r[i]: float(r[i + 1]) for i in range(3, len(r) - 1, 2)}
    by.setdefault((int(r[0]), r[1]), []).append(d)
print("medians (µs/request; cs per request) and [CV over repetitions]:")
for (rate, arm), ds in sorted(by.items()):
    out = []
    for k in keys:
        v = [d[k] for d in ds if d[k] == d[k]]
        if not v:
            continue
        m = st.median(v)
        cv = 100 * st.stdev(v) / st.mean(v) if len(v) > 1 and st.mean(v) else 0
        out.append(f"{k} {m:.2f} [{cv:.0f}%]" if k in ("sched", "perf", "idle") else f"{k} {m:.2f}")
    sp = [d["sched"] / d["perf"] for d in ds if d["perf"] == d["perf"] and d["perf"] > 0]
    ratio = f"; sched/perf {st.median(sp):.2f}" if sp else ""
    print(f"  r{rate} {arm:5}: " + ", ".join(out) + ratio)
PY
if [[ $TRACE == 1 ]]; then
  for rate in $RATES; do trace_one "$rate"; done
fi
