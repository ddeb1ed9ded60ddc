//! The calling thread's own syscall count: every wrapper in `sys` that enters the kernel adds
//! to it, so a worker knows exactly what it asked of the kernel over its measured window
//! (vDSO clock reads are not syscalls and are not counted).

use std::cell::Cell;

thread_local! {
    static SYSCALLS: Cell<u64> = const { Cell::new(0) };
}

/// Count `n` syscalls made by this thread.
#[inline]
pub fn add(n: u64) {
    SYSCALLS.with(|c| c.set(c.get() + n));
}

/// Syscalls this thread has made through `sys` so far.
pub fn syscalls() -> u64 {
    SYSCALLS.with(Cell::get)
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_are_per_thread() {
        let before = super::syscalls();
        super::add(3);
        assert_eq!(super::syscalls(), before + 3);
        let other = std::thread::spawn(super::syscalls).join().unwrap();
        assert_eq!(other, 0);
    }
}
