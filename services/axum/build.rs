//! Exposes the locked versions of the runtime, framework and HTTP crates to the start-up line.

fn main() {
    ping_lockfile::emit_locked_versions(
        env!("CARGO_MANIFEST_DIR"),
        &[
            ("PING_TOKIO_VERSION", "tokio"),
            ("PING_AXUM_VERSION", "axum"),
            ("PING_HYPER_VERSION", "hyper"),
        ],
    );
}
