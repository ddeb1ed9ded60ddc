"""Independent start-up probe: spawn a service pinned to one CPU, then from another CPU
connect + GET /ping until the first 200. Prints one start-up time per line, in µs.

The clock starts just before posix_spawn (vfork + exec, no Python-side fork), so it includes
the exec itself; nothing here shares code with the runner.

usage: startup_probe.py BINARY SERVER_CPU PROBE_CPU STARTS
"""
import os
import signal
import socket
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one(binary, server_cpu, probe_cpu):
    port = free_port()
    os.sched_setaffinity(0, {server_cpu})  # the child inherits this mask
    t0 = time.monotonic_ns()
    pid = os.posix_spawn(
        binary,
        [binary, "--listen", f"127.0.0.1:{port}", "--workers", "1"],
        os.environ,
        setpgroup=0,
        file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)],
    )
    os.sched_setaffinity(0, {probe_cpu})
    try:
        deadline = t0 + 10_000_000_000
        while time.monotonic_ns() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    if s.recv(64).startswith(b"HTTP/1.1 200"):
                        return (time.monotonic_ns() - t0) // 1000
            except OSError:
                time.sleep(0.00005)
        raise SystemExit(f"{binary}: no 200 within 10 s")
    finally:
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def main():
    binary, server_cpu, probe_cpu, starts = sys.argv[1:5]
    for _ in range(int(starts)):
        print(one(binary, int(server_cpu), int(probe_cpu)), flush=True)


if __name__ == "__main__":
    main()
