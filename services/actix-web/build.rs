//! Exposes the locked versions of the runtime, framework and HTTP crates to the start-up line.

fn main() {
    ping_lockfile::emit_locked_versions(
        env!("CARGO_MANIFEST_DIR"),
        &[
            ("PING_ACTIX_RT_VERSION", "actix-rt"),
            ("PING_TOKIO_VERSION", "tokio"),
            ("PING_ACTIX_WEB_VERSION", "actix-web"),
            ("PING_ACTIX_HTTP_VERSION", "actix-http"),
        ],
    );
}
