//! Exposes the locked versions of the crates the start-up line names (no runtime: libc's epoll
//! bindings and httparse).

fn main() {
    ping_lockfile::emit_locked_versions(
        env!("CARGO_MANIFEST_DIR"),
        &[
            ("PING_LIBC_VERSION", "libc"),
            ("PING_HTTPARSE_VERSION", "httparse"),
        ],
    );
}
