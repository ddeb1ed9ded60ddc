#!/usr/bin/env bash
# The regression gate, run locally exactly as .github/workflows/bench-gate.yml runs it:
#   scripts/gate.sh [--refuse-dirty] BASE HEAD
# or, gating a dependency's two sources in this repository's services (PATCH_CRATE below):
#   PATCH_CRATE=httparse BASE_SOURCE=<src> HEAD_SOURCE=<src> scripts/gate.sh [BASE HEAD]
# builds SERVICE at the two git revisions as variants of one matrix (cached by content under
# target/variants/), runs them interleaved in one run (A B A B, paired on rounds, with an A/A
# calibration of BASE for each metric's noise), counts syscalls, context switches, kernel events,
# page faults and (c1, Valgrind) instructions per request at 1 and 64 connections and at a fixed
# offered rate, and judges (scripts/lib/gate_verdict.py): a counted
# regression past its A/A threshold is measured again in fresh processes, in the other order,
# before it fails the gate; page faults past an absolute floor per request (their base is about
# 0); times (req/s at c1 and c64, open-loop CPU/request and p50/p99 latency) only past both
# THRESHOLD_PCT and their MDE.
# Exit 0 pass, 1 fail (regression, unstable, or cannot be judged), 2 bad input; on SIGINT or
# SIGTERM it stops matrix and all it started (variant builds, loadgen, services) and exits
# 130 or 143 within 5 s.
#
# The gate measures commits: uncommitted changes to tracked files are not in BASE or HEAD, and
# are warned about at once (--refuse-dirty: refused, exit 2).
#
# Settings (environment), validated before anything runs: SERVICE (default ping-tokio-hyper),
# GATE_METRICS (syscalls_per_request,ctx_switches_per_request,instructions_per_request,
# packets_per_request,socket_sends_per_request,faults_per_request,time; also
# io_uring_submissions_per_request, for
# io_uring services: an epoll service's 0 has no ratio),
# THRESHOLD_PCT (5, the timing arm's), REPS (5, at least 3), CONFIRM_REPS (3, the confirming
# run's: counts repeat, so three rounds confirm what five found), DURATION_MS (1000),
# HEAD_ARGS (extra service arguments for HEAD only, e.g. "--burn-iters 30" or
# "--burn-syscalls 20", "--split-write-every 20" or "--burn-faults 2" to inject a known cost
# and see the gate fail), CONFIRM (1; 0 fails on the first measurement), OUT (target/gate), BUILD (1; 0 skips
# the build below).
# A dependency instead of this repository's commits: PATCH_CRATE (a crate the service depends
# on) with BASE_SOURCE and HEAD_SOURCE, each a directory holding the crate (its own working
# tree, dirty or not) or `<git url or repository>#<rev>`; both builds take the crate from their
# source (a variant's `patch`, cargo's [patch.crates-io]) and BASE HEAD default to HEAD HEAD.
# Builds what it runs first, `cargo build --release --workspace --locked` (the command variants
# are built with; a no-op when target/release is up to date), and says whether it had to.
# BUILD=0: use target/release as it is.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "$0")/lib/common.sh"
need git python3 sha256sum

# The whole script is one block, parsed before any of it runs: head's code runs (as this user)
# while the gate waits, and bash would otherwise read the rest of this file from disk as it goes.
{

say() { echo "gate: $*" >&2; }
bad() { say "$*"; exit 2; }

refuse_dirty=false
if [ "${1:-}" = --refuse-dirty ]; then refuse_dirty=true; shift; fi
patch_crate=${PATCH_CRATE:-}
if [ -n "$patch_crate" ] && [ $# -eq 0 ]; then set -- HEAD HEAD; fi
[ $# -eq 2 ] || bad "usage: scripts/gate.sh [--refuse-dirty] BASE HEAD (or with PATCH_CRATE, BASE_SOURCE and HEAD_SOURCE: [BASE HEAD])"

service=${SERVICE:-ping-tokio-hyper}
metrics=${GATE_METRICS:-syscalls_per_request,ctx_switches_per_request,instructions_per_request,packets_per_request,socket_sends_per_request,faults_per_request,time}
threshold=${THRESHOLD_PCT:-5}
reps=${REPS:-5}
confirm_reps=${CONFIRM_REPS:-3}
duration_ms=${DURATION_MS:-1000}
confirm=${CONFIRM:-1}
out=${OUT:-target/gate}

# Every setting before anything is built or run.
[[ " $(service_names) " == *" $service "* ]] ||
    bad "SERVICE=$service is not a service of services/services.toml ($(service_names))"
{ [[ $reps =~ ^[0-9]+$ ]] && ((10#$reps >= 3 && 10#$reps <= 100)); } ||
    bad "REPS must be a whole number from 3 to 100 (a paired interval needs 3), got '$reps'"
{ [[ $confirm_reps =~ ^[0-9]+$ ]] && ((10#$confirm_reps >= 3 && 10#$confirm_reps <= 100)); } ||
    bad "CONFIRM_REPS must be a whole number from 3 to 100, got '$confirm_reps'"
{ [[ $duration_ms =~ ^[0-9]+$ ]] && ((10#$duration_ms >= 200 && 10#$duration_ms <= 600000)); } ||
    bad "DURATION_MS must be a whole number of ms from 200 to 600000, got '$duration_ms'"
[[ $confirm =~ ^[01]$ ]] || bad "CONFIRM must be 0 or 1, got '$confirm'"
python3 - "$threshold" "$metrics" <<'PY' || exit 2
import sys
sys.path.insert(0, "scripts/lib")
import gate_verdict as g
try:
    g.parse_threshold(sys.argv[1]); g.parse_metrics(sys.argv[2])
except g.BadInput as e:
    print(f"gate: {e}", file=sys.stderr); sys.exit(2)
PY
# patch_line SOURCE: the `patch` key of a variant taking PATCH_CRATE from SOURCE (a directory,
# or `<url>#<rev>`); a bad source exits 2 here, before anything runs.
patch_line() {
    local src=$1 url rev dir
    # Written into a TOML string: no quotes, backslashes, spaces or control characters.
    [[ $src =~ ^[A-Za-z0-9_.,:=/+@~%-]+(#[A-Za-z0-9_./+@^~-]+)?$ ]] ||
        bad "source '$src' has characters other than letters, digits and _.,:=/+@~%- (and #<rev>)"
    if [[ $src == *#* ]]; then
        url=${src%%#*} rev=${src#*#}
        { [ -n "$url" ] && [ -n "$rev" ]; } || bad "source '$src': give <git url or repository>#<rev>"
        # A repository on this machine, as an absolute path (the matrix file is elsewhere).
        if [[ $url != *://* ]] && [[ $url != *@*:* ]]; then
            [ -d "$url" ] || bad "source '$src': $url is not a directory"
            url=file://$(cd "$url" && pwd)
        fi
        echo "patch = { $patch_crate = { git = \"$url\", rev = \"$rev\" } }"
    else
        [ -d "$src" ] || bad "source '$src' is not a directory (a path, or <git url>#<rev>)"
        dir=$(cd "$src" && pwd)
        echo "patch = { $patch_crate = { path = \"$dir\" } }"
    fi
}
base_patch="" head_patch=""
if [ -n "$patch_crate" ]; then
    [[ $patch_crate =~ ^[A-Za-z0-9_-]+$ ]] || bad "PATCH_CRATE='$patch_crate' is not a crate name"
    { [ -n "${BASE_SOURCE:-}" ] && [ -n "${HEAD_SOURCE:-}" ]; } ||
        bad "PATCH_CRATE=$patch_crate needs BASE_SOURCE and HEAD_SOURCE (a directory, or <git url>#<rev>)"
    base_patch=$(patch_line "$BASE_SOURCE") || exit 2
    head_patch=$(patch_line "$HEAD_SOURCE") || exit 2
elif [ -n "${BASE_SOURCE:-}${HEAD_SOURCE:-}" ]; then
    bad "BASE_SOURCE and HEAD_SOURCE take effect with PATCH_CRATE (the crate they are sources of)"
fi
head_args=()
if [ -n "${HEAD_ARGS:-}" ]; then
    read -r -a head_args <<<"$HEAD_ARGS"
    for w in "${head_args[@]}"; do
        # Written into a TOML string: no quotes, backslashes or control characters.
        [[ $w =~ ^[A-Za-z0-9_.,:=/+-]+$ ]] || bad "HEAD_ARGS word '$w' has characters other than letters, digits and _.,:=/+-"
    done
fi
base=$(git rev-parse --verify --quiet "$1^{commit}") || bad "no such revision: $1"
head=$(git rev-parse --verify --quiet "$2^{commit}") || bad "no such revision: $2"
# --no-optional-locks: a plain `git status` may rewrite the index, which the build stamp
# watches, and the build below would then rebuild the stamp and every crate above it.
dirty=$(git --no-optional-locks status --porcelain --untracked-files=no | wc -l)
if [ "$dirty" -gt 0 ]; then
    $refuse_dirty && bad "$dirty tracked file(s) have uncommitted changes; the gate measures commits (commit or stash them)"
    say "warning: $dirty tracked file(s) have uncommitted changes, which the gate does not measure: it builds the commits $base and $head"
fi
matrix=target/release/matrix
# One build command for everything the gate runs (before any of head's code, which comes from
# the variants' own trees): missing or stale binaries are rebuilt here, not measured stale.
if [ "${BUILD:-1}" != 0 ]; then
    built_sum() { sha256sum "$matrix" target/release/loadgen 2>/dev/null | awk '{print $1}' | tr '\n' ' '; }
    before=$(built_sum)
    say "cargo build --release --workspace --locked (the gate's tools; a no-op when up to date) …"
    cargo build --release --workspace --locked >&2 || bad "cargo build --release --workspace --locked failed"
    if [ "$(built_sum)" != "$before" ]; then
        say "built $matrix and target/release/loadgen: they were missing or older than this checkout's source"
    else
        say "$matrix and target/release/loadgen were up to date"
    fi
fi
{ [ -x "$matrix" ] && [ -x target/release/loadgen ]; } ||
    bad "$matrix and target/release/loadgen not built (cargo build --release --workspace --locked)"

# The gate's tools, fixed before any of head's code builds or runs: the verdict is computed by
# a private copy of gate_verdict.py (it imports only the standard library; python3 -I: no user
# site-packages, no PYTHON* variables) and of the metric definitions beside it, and the copies,
# matrix and loadgen are hash-checked
# against the sums taken now (held in this shell, not in a file) before each run and before
# the verdict. A tool changed meanwhile makes the run "cannot be judged".
tools=$(mktemp -d)
on_exit rm -rf "$tools"
chmod 700 "$tools"
cp scripts/lib/gate_verdict.py scripts/lib/metrics.json "$tools/"
tool_sums() { sha256sum "$tools/gate_verdict.py" "$tools/metrics.json" "$matrix" target/release/loadgen 2>&1 | awk '{print $1}' | tr '\n' ' '; }
tools_sum=$(tool_sums)
tools_intact() { [ "$(tool_sums)" = "$tools_sum" ]; }
tools_changed="the gate's tools (its copies of gate_verdict.py and metrics.json, $matrix or target/release/loadgen) changed while head's code ran"

mkdir -p "$out"
summary="$out/gate.md"
# Whatever happens from here on, the job summary says it.
publish() {
    cat "$summary"
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$summary" >>"$GITHUB_STEP_SUMMARY"; fi
}
cannot_judge() {
    printf '## Regression gate: FAIL\n\n**Cannot be judged**: %s.\n' "$1" >"$summary"
    publish
    exit 1
}

head_line=""
[ ${#head_args[@]} -eq 0 ] || head_line="args = [$(printf '"%s", ' "${head_args[@]}" | sed 's/, $//')]"

# gate_config FILE FIRST SECOND SCENARIOS REPS CALIBRATE: the gate's matrix with the variants in that order
# (the confirming run swaps them, so order effects cannot repeat a regression), for the named
# scenarios: `ping` (closed loop at c1 — every count exact, instructions under Valgrind — and at
# c64, where a runtime's batching and scheduling under concurrency show; req/s) and `ping-open`
# (5,000 req/s: server CPU/request, p50 and p99 latency from intended send times). Each is also
# run base against base (the calibration, CALIBRATE=1), so every metric is judged against its
# own A/A noise in that cell. The confirming run has none: it is judged against the first run's
# thresholds, so an A/A of its own would only cost a third of its time.
gate_config() {
    local file=$1 first=$2 second=$3 scenarios=$4 rounds=$5 calibrate=$6 variants="" cells="" body="" calibration=""
    for v in "$first" "$second"; do
        if [ "$v" = base ]; then
            variants+=$'\n[[services.variants]]\nname = "base"\nrev = "'"$base"$'"\n'"$base_patch"$'\n'
        else
            variants+=$'\n[[services.variants]]\nname = "head"\nrev = "'"$head"$'"\n'"$head_line"$'\n'"$head_patch"$'\n'
        fi
    done
    for sc in $scenarios; do
        case $sc in
        ping)
            cells+='"ping/c1/pinned", "ping/c64/pinned", '
            body+=$'\n[[scenarios]]\nname = "ping"\npath = "/ping"\nexpect_body_bytes = 4\nload = { model = "closed", connections = [1, 64] }\n'
            ;;
        ping-open)
            cells+='"ping-open/r5000/pinned", '
            body+=$'\n[[scenarios]]\nname = "ping-open"\npath = "/ping"\nexpect_body_bytes = 4\nload = { model = "open", rates_per_s = [5000], max_connections = 64 }\n'
            ;;
        esac
    done
    if [ "$calibrate" = 1 ]; then
        calibration=$'# Base against itself, in every cell: each metric\'s A/A noise in this run.\n[calibration]\nservice = "'"$service@base"$'"\ncells = ['"${cells%, }"$']\n'
    fi
    cat >"$file" <<TOML
# Generated by scripts/gate.sh: $service at $base (base) and $head (head)${patch_crate:+; $patch_crate from ${BASE_SOURCE} (base) and ${HEAD_SOURCE} (head)}.
[defaults]
warmup_ms = 300
duration_ms = $duration_ms
repetitions = $rounds
cooldown_ms = 100
baseline = "$service@base"
drift_points = 0

$calibration
[[services]]
name = "$service"
binary = "$service"
$variants$body
[[profiles]]
name = "pinned"
server_cpus = "0"
loadgen_cpus = "1"
TOML
}

# settings_named FIRST SECOND: a sed script that names, in matrix's errors, the setting the user
# gave instead of the generated file's location (`target/gate/first.toml:22:68:
# services[0].variants[0].patch.httparse.rev: …` → `BASE_SOURCE=…#no-such-rev: …`). Every value
# was checked against a character set without `|`, `&` or `\`, so it is safe in the script.
settings_named() {
    local i=0 v who src loc
    for v in "$@"; do
        who=${v^^} src=${v^^}_SOURCE
        loc='[^ ]*\.toml:[0-9]+:[0-9]+: services\[0\]\.variants\['$i'\]'
        if [ -n "$patch_crate" ]; then
            echo "s|$loc\.patch\.[A-Za-z0-9_-]+(\.[a-z]+)?: (.* does not depend on )|PATCH_CRATE=$patch_crate: \\2|"
            echo "s|$loc\.patch\.[A-Za-z0-9_-]+(\.[a-z]+)?|$src=${!src}|"
        fi
        echo "s|$loc\.rev|$who revision|"
        echo "s|$loc\.args|HEAD_ARGS|"
        i=$((i + 1))
    done
}

# measure NAME FIRST SECOND SCENARIOS REPS CALIBRATE: one run into $out/NAME; prints its results directory,
# or returns 1 with the reason in $out/NAME.why (2: bad input, exits 2).
measure() {
    local name=$1 config="$out/$1.toml" rc run
    gate_config "$config" "$2" "$3" "$4" "$5" "$6"
    rm -rf "${out:?}/$name" "$out/$name.why"
    tools_intact || { echo "$tools_changed" >"$out/$name.why"; return 1; }
    say "$name: building (cached by content) and running $service@base and $service@head, $5 rounds …"
    set +e
    # In the background, its pid where the gate's signal handler finds it (this runs in a
    # subshell of the gate's, which waits for it).
    "$matrix" run --config "$config" --out "$out/$name" --only "service=$service@base,$service@head" \
        --count-instructions 2> >(sed -u -E "$(settings_named "$2" "$3")" >&2) >&2 &
    echo $! >"$matrix_pid"
    wait $!
    rc=$?
    rm -f "$matrix_pid"
    set -e
    tools_intact || { echo "$tools_changed" >"$out/$name.why"; return 1; }
    [ "$rc" -eq 2 ] && exit 2
    # 0: every cell ok; 1: finished with a failed cell (the verdict says which). Anything else
    # (130 interrupted, 74 a file not written, a signal) did not finish: a partial run is
    # never judged.
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
        echo "the $name run did not finish (matrix exited $rc$([ "$rc" -eq 130 ] && echo ': interrupted'))" >"$out/$name.why"
        return 1
    fi
    run=$(find "$out/$name" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | head -n 1)
    [ -n "$run" ] || { echo "the $name run made no result directory (matrix exited $rc)" >"$out/$name.why"; return 1; }
    echo "$out/$name/$run"
}

page=""
[ -n "${GITHUB_RUN_ID:-}" ] && page="${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:-}/actions/runs/$GITHUB_RUN_ID (artifact bench-gate-results: index.html)"
verdict() {
    local run=$1
    shift
    tools_intact || cannot_judge "$tools_changed"
    python3 -I "$tools/gate_verdict.py" --json "$out/gate.json" --page "${page:-$run/index.html}" \
        ${patch_crate:+--crate "$patch_crate"} "$@" \
        "$run/results.json" "$service@base" "$service@head" "$threshold" "$metrics" >"$summary"
}

# Cancellation (Ctrl-C; SIGTERM from `timeout`, CI's cancel-in-progress): matrix is told to stop
# (it kills its variant builds, loadgen and services and exits), then killed if still there after
# 4 s, so nothing runs on once the gate is gone. The runs are waited for with `wait` on a
# background job, which a trapped signal interrupts at once (a `$(…)` would delay the trap until
# the run ended).
# Both in the gate's private directory, like its tools: not where head's code writes.
matrix_pid="$tools/matrix.pid"
stage_pid=""
# shellcheck disable=SC2317 # run by the traps below
stop() {
    trap '' INT TERM
    say "$1: stopping matrix and everything it started …"
    [ -z "$stage_pid" ] || kill -TERM "$stage_pid" 2>/dev/null || true
    local pid _
    pid=$(cat "$matrix_pid" 2>/dev/null || true)
    if [[ $pid =~ ^[0-9]+$ ]]; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 40); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$matrix_pid"
    exit "$2"
}
trap 'stop interrupted 130' INT
trap 'stop terminated 143' TERM

# staged NAME ARGS…: measured NAME ARGS… as a background job, waited for; its directory on stdout.
staged() {
    local rc=0
    measured "$@" >"$tools/$1.dir" &
    stage_pid=$!
    wait "$stage_pid" || rc=$?
    stage_pid=""
    [ "$rc" -eq 0 ] || exit "$rc"
    cat "$tools/$1.dir"
}

# measured NAME FIRST SECOND SCENARIOS REPS CALIBRATE: measure's directory, or the gate fails saying why (2 stays 2).
measured() {
    local dir rc=0
    dir=$(measure "$@") || rc=$?
    [ "$rc" -eq 2 ] && exit 2
    # On stderr: this runs inside the caller's $(…), whose stdout is the directory.
    [ "$rc" -eq 0 ] || cannot_judge "$(cat "$out/$1.why" 2>/dev/null || echo "the $1 run failed (see the log above)")" >&2
    echo "$dir"
}
staged first base head "ping ping-open" "$reps" 1 >"$tools/first" || exit $?
first=$(cat "$tools/first")
set +e
verdict "$first"
rc=$?
set -e
if [ "$rc" -eq 3 ]; then
    if [ "$confirm" = 1 ]; then
        # Only the scenarios where a metric regressed, measured again from scratch.
        scenarios=$(python3 -I -c 'import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
print(" ".join(sorted({r["cell"].split("/")[0] for r in rows if r["verdict"] == "regressed"})))' "$out/gate.json")
        found=$(python3 -I -c 'import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
size = lambda r: ("%+.3f/request" % r["change_abs"] if r.get("change_abs") is not None
                 else "%+.2f %%" % r["change_pct"] if r.get("change_pct") is not None else "changed")
print("; ".join("%s %s at %s" % (r["metric"], size(r), r["cell"]) for r in rows if r["verdict"] == "regressed"))' "$out/gate.json")
        say "a regression in $scenarios ($found): measuring again in fresh processes, head first …"
        staged confirm head base "$scenarios" "$confirm_reps" 0 >"$tools/confirm" || exit $?
        again=$(cat "$tools/confirm")
        set +e
        verdict "$first" --confirm "$again/results.json"
        rc=$?
        set -e
    else
        rc=1
    fi
fi
publish
echo
echo "run: $first (results.md there has every metric)${again:+; confirming run: $again}"
exit "$rc"
}
