//! Micro-benchmarks of runtime primitives, one criterion group per runtime.
//!
//! Every runtime implements [`Runtime`] in its own bench target, `benches/<runtime>.rs`, whose
//! `main` is one call to [`bench`]. Adding a runtime is that one file plus its `[[bench]]`
//! entry (and dependency) in `Cargo.toml`.
//!
//! What each benchmark measures, and only that:
//!
//! | benchmark | one iteration |
//! |---|---|
//! | `spawn_join` | spawn an empty task and wait until it has completed |
//! | `channel_round_trip` | task A sends a `u64` to task B over the runtime's channel, B sends it back |
//! | `timer_0ms` | sleep for zero: register a timer that is already due, yield, be woken |
//! | `timer_1ms` | sleep for 1 ms (the runtime's timer granularity shows in the overshoot) |
//! | `tcp_echo_64B` | write 64 bytes over loopback TCP to an echo task, read them back |
//!
//! Each [`Runtime`] method receives criterion's iteration count and returns the time those
//! iterations took, measured *inside* the runtime (criterion's `iter_custom`). So the runtime
//! is built once, the echo server and its connection are set up once, and the channel's
//! partner task is spawned before the clock starts; none of that is in the measurement, and
//! neither is entering the runtime (`block_on`), which happens once per sample.
//!
//! All runtimes run on **one worker thread** (tokio current-thread, monoio's thread-per-core
//! runtime, may with one worker), so the numbers compare the runtimes' own costs without
//! cross-thread wake-ups or work stealing.

use std::time::Duration;

use criterion::Criterion;

/// Bytes written and read back per `tcp_echo` iteration (the name of the benchmark says it too).
pub const ECHO_BYTES: usize = 64;

/// The primitives of one runtime, each timed over `iters` iterations.
pub trait Runtime {
    /// The criterion group: the runtime, with its flavour where it has several
    /// (`monoio-uring`, `monoio-legacy`).
    fn name(&self) -> String;
    /// Spawn an empty task and await its completion, `iters` times.
    fn spawn_join(&mut self, iters: u64) -> Duration;
    /// `iters` round trips of one message between two tasks over the runtime's channel.
    fn channel_round_trip(&mut self, iters: u64) -> Duration;
    /// Sleep for `period` with the runtime's timer, `iters` times.
    fn sleep(&mut self, period: Duration, iters: u64) -> Duration;
    /// `iters` round trips of [`ECHO_BYTES`] bytes to an echo task over one loopback TCP
    /// connection set up beforehand (`TCP_NODELAY` on both ends).
    fn tcp_echo(&mut self, iters: u64) -> Duration;
}

/// Registers the runtime's group: every benchmark in the table above.
pub fn bench<R: Runtime>(c: &mut Criterion, rt: &mut R) {
    let mut group = c.benchmark_group(rt.name());
    group.bench_function("spawn_join", |b| b.iter_custom(|n| rt.spawn_join(n)));
    group.bench_function("channel_round_trip", |b| {
        b.iter_custom(|n| rt.channel_round_trip(n))
    });
    group.bench_function("timer_0ms", |b| {
        b.iter_custom(|n| rt.sleep(Duration::ZERO, n))
    });
    group.bench_function("timer_1ms", |b| {
        b.iter_custom(|n| rt.sleep(Duration::from_millis(1), n))
    });
    group.bench_function(format!("tcp_echo_{ECHO_BYTES}B"), |b| {
        b.iter_custom(|n| rt.tcp_echo(n))
    });
    group.finish();
}

/// Criterion settings that keep one runtime's group (five benchmarks) around a minute on a
/// small machine: 2 s warm-up and 6 s measurement per benchmark, 50 samples. Command-line
/// flags (`--measurement-time`, `--sample-size`, ...) still override these.
pub fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6))
        .sample_size(50)
}
