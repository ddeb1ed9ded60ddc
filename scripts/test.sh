#!/usr/bin/env bash
# The one test command (README): formatting, lints, every binary, every test.
# End-to-end tests start the real binaries from target/debug, so build them first.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo build --workspace --bins --locked
cargo test --workspace --locked
scripts/check-flake.sh
