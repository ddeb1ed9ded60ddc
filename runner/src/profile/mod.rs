//! CPU flame graphs of a running service: `perf record` on its pid for a window, then folded
//! stacks and SVG flame graphs (plain and differential) through the `inferno` library.
//!
//! Self-contained (std + crates only) so the runner can wire it in where it likes:
//!
//! ```text
//! Perf::probe()                      perf present and allowed? event, call-graph method, version
//!   └─ Perf::start(pid, &Options, dir, name) ─► Recording   (perf record -p <pid> running)
//!        └─ Recording::stop()        ─► ProfileRecord       (<name>.folded, <name>.svg written)
//! fold_perf_script / flamegraph_svg / diff_folded / diff_flamegraph_svg   (bytes in, bytes out)
//! ```
//!
//! **Not available is a value, not an error.** When `perf` is missing, or the kernel refuses
//! it (`/proc/sys/kernel/perf_event_paranoid`, EACCES/EPERM in a container), [`Perf::probe`]
//! returns [`NotAvailable`] with the reason, and the flame graph's cell records
//! [`Profile::NotAvailable`] like any result. [`Error`] is kept for real
//! failures (I/O, perf crashing mid-recording, bad folded input).
//!
//! **Event.** The hardware `cycles` event where the CPU exposes counters to us; otherwise
//! (VMs and containers without a PMU, like the machine this was written on) the software
//! `cpu-clock` event, a timer interrupt at the sampling frequency. Detected once, by
//! `perf stat -e cycles`, and recorded in [`ProfileRecord::event`]. As a non-root user with
//! `perf_event_paranoid` = 2 the event gets the `:u` modifier (user space only).
//!
//! **Call graphs: DWARF unwinding (`--call-graph dwarf`).** The workspace release profile
//! builds every service without frame pointers (`-C force-frame-pointers` is off, as in
//! almost every Rust release build), so frame-pointer unwinding (`--call-graph fp`) stops
//! after the leaf frame and attributes the rest to garbage addresses. Rebuilding the services
//! with frame pointers would change the binaries being measured. DWARF unwinding works on the
//! binaries as built: perf copies the top [`CallGraph::Dwarf::stack_bytes`] of each sampled
//! thread's stack and unwinds it afterwards from `.eh_frame`, which every Rust binary has;
//! `debug = "line-tables-only"` keeps symbol names. The costs: each sample copies that much
//! stack (more CPU in the server while profiled, large `perf.data`), stacks deeper than the
//! copy are truncated at the top, and `perf script` unwinds slowly. Hence a modest default
//! frequency (499 Hz) and 8 KiB of stack. [`CallGraph::FramePointer`] remains for binaries
//! built with frame pointers.
//!
//! Measured on the 2-core development VM (`ping-tokio-hyper --workers 1` on CPU 0, loadgen and
//! perf on CPU 1, `cpu-clock` at 499 Hz, 8 s windows): with DWARF, 96 % of samples unwound to
//! the thread's entry and 97 % contain the service's own frames; with `fp`, 0 % and 1 %.
//! Cost while recording: at a fixed 50k req/s the server used a median 17.6 % more CPU
//! (4.48 → 5.27 CPU-s, 4–7 runs each; `fp` +19.6 %, so the per-sample stack copy is not the
//! main cost); closed-loop req/s fell by a median 9.6 % but that machine's closed loop is
//! generator-bound and noisy (114k–143k vs 122k–148k). After the window: 38 MB of
//! `perf.data`, 1.5 s of `perf script` (67 MB of text) and 0.3 s to fold. So a profiled
//! repetition is not a measured one: profile in an extra repetition, or flag the cell.
//!
//! Files written per recording, in the directory given: `<name>.folded` (one line per
//! distinct stack, root first: `thread;frame;…;frame weight`, the weight being the summed
//! sample periods, so nanoseconds of CPU time with `cpu-clock`), `<name>.svg`, and `<name>.perf.data` only with
//! [`Options::keep_perf_data`].

mod fold;
mod perf;

pub use crate::results::schema::{CallGraph, NotAvailable, Profile, ProfileRecord};
pub use fold::{diff_flamegraph_svg, diff_folded, flamegraph_svg, fold_perf_script, sample_count};
pub use perf::{
    PERF_ENV, Perf, READY_TIMEOUT as PERF_READY_TIMEOUT, Recording, command as perf_command,
    program as perf_program, weight_unit,
};

/// What to record and how to draw it.
#[derive(Debug, Clone)]
pub struct Options {
    /// Samples per second per CPU (`perf record -F`).
    pub frequency_hz: u32,
    pub call_graph: CallGraph,
    /// Keep `<name>.perf.data` next to the folded stacks (it is large with DWARF call graphs).
    pub keep_perf_data: bool,
    /// Resolve inlined functions into frames of their own (`perf script --inline`): truer
    /// stacks, but perf asks binutils' addr2line for every address, which took 22 s for one
    /// second of samples of a debug build here, against 0.2 s without.
    pub inline: bool,
    /// Title drawn at the top of the SVG.
    pub title: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            frequency_hz: 499,
            call_graph: CallGraph::Dwarf { stack_bytes: 8192 },
            keep_perf_data: false,
            inline: true,
            title: "CPU flame graph".to_owned(),
        }
    }
}

/// A real failure (as opposed to [`NotAvailable`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{command} failed ({status}): {stderr}")]
    Perf {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("folded stacks: {0}")]
    Folded(String),
}

impl Error {
    fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io { context, source }
    }
}
