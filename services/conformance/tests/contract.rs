//! Runs every contract check against every service binary.
//!
//! Adding a service = adding one line to the table at the bottom (and its name to
//! `IO_URING_ONLY` if it cannot run without io_uring). Build the binaries first:
//! `cargo build --workspace --bins`.

/// Expands to one test module per service, one `#[test]` per check.
macro_rules! conformance {
    ($($module:ident => $bin:literal),* $(,)?) => {
        $(conformance!(@service $module, $bin, [
            startup_line = process,
            workers_flag = process,
            workers_follow_affinity = process,
            bad_cli_args_exit_2 = process,
            taken_port_is_an_error = process,
            sigterm_exits_promptly = process,
            io_driver_is_real = process,
            listen_backlog = process,
            rebind_after_time_wait = process,
            ping = endpoints,
            json = endpoints,
            not_found = endpoints,
            method_not_allowed = endpoints,
            sleep_waits = endpoints,
            sleep_bad_query = endpoints,
            date_advances = endpoints,
            request_body_is_skipped = endpoints,
            keep_alive = connection,
            pipelined_64 = connection,
            split_request = connection,
            connection_close = connection,
            http10_close = connection,
            half_close = connection,
            garbage = robustness,
            garbage_after_valid = robustness,
            oversized_head = robustness,
            unterminated_head = robustness,
            many_headers = robustness,
            concurrent_1000 = load,
            sleep_does_not_block = load,
            burn_ns_per_request = burn,
            burn_ns_out_of_range_exit_2 = burn,
            burn_iters_per_request = burn,
            burn_iters_out_of_range_exit_2 = burn,
        ]);)*
    };
    (@service $module:ident, $bin:literal, [$($check:ident = $group:ident),* $(,)?]) => {
        mod $module {
            use super::IO_URING_ONLY;
            $(
                #[test]
                fn $check() {
                    if conformance::io_uring::skip($bin, IO_URING_ONLY.contains(&$bin)) {
                        return;
                    }
                    conformance::checks::$group::$check($bin);
                }
            )*
        }
    };
}

/// Services with no epoll fallback: skipped (with a message) where io_uring cannot be set up.
const IO_URING_ONLY: &[&str] = &["ping-glommio", "ping-compio"];

conformance! {
    tokio_hyper => "ping-tokio-hyper",
    monoio => "ping-monoio",
    may_minihttp => "ping-may-minihttp",
    epoll => "ping-epoll",
    tokio_per_core => "ping-tokio-per-core",
    axum => "ping-axum",
    actix_web => "ping-actix-web",
    glommio => "ping-glommio",
    compio => "ping-compio",
}
