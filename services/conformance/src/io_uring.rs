//! Whether this machine lets a process create an io_uring, for services that run on io_uring
//! only (glommio, compio): where it cannot (seccomp, `kernel.io_uring_disabled`, an old
//! kernel), their checks are skipped, loudly, instead of failing on the sandbox.

use std::sync::OnceLock;

/// `Ok(())` if `io_uring_setup` works here, else the error it gave.
pub fn available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            // struct io_uring_params is 120 bytes; zeroed means "no flags, defaults".
            let mut params = [0u8; 120];
            // SAFETY: io_uring_setup reads and writes at most the 120-byte params struct.
            let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error().to_string());
            }
            // SAFETY: fd is the ring we just created and nobody else uses.
            unsafe { libc::close(fd as libc::c_int) };
            Ok(())
        })
        .clone()
}

/// `true` (after saying so on stderr) if `bin` needs io_uring and this machine has none.
pub fn skip(bin: &str, needs_io_uring: bool) -> bool {
    if !needs_io_uring {
        return false;
    }
    match available() {
        Ok(()) => false,
        Err(e) => {
            eprintln!("SKIPPED {bin}: runs on io_uring only, and io_uring_setup fails here: {e}");
            true
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn probe_answers() {
        // Either way it must answer, not panic; on this project's machines it is allowed.
        let _ = super::available();
    }
}
