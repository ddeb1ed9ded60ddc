//! Exposes the locked versions of the runtime and HTTP crates to the start-up line.

fn main() {
    ping_lockfile::emit_locked_versions(
        env!("CARGO_MANIFEST_DIR"),
        &[
            ("PING_MAY_VERSION", "may"),
            ("PING_MINIHTTP_VERSION", "may_minihttp"),
        ],
    );
}
