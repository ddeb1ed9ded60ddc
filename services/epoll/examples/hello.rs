//! Plain epoll hello-world, no runtime: one thread per worker (pinned to CPU i), its own
//! SO_REUSEPORT listener, edge-triggered epoll, a minimal httparse loop answering every request
//! with a fixed `pong` response (like monoio's hello). Used by
//! `scripts/experiments/wrapper-cost.sh` as the baseline for `ping-epoll`. Usage: `hello <addr>
//! <workers>`.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use socket2::{Domain, Socket, Type};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong";
const LISTENER: u64 = u64::MAX;

fn listener(addr: SocketAddr) -> TcpListener {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None).expect("socket");
    s.set_reuse_port(true).expect("SO_REUSEPORT");
    s.set_nonblocking(true).expect("nonblocking");
    s.bind(&addr.into()).expect("bind");
    s.listen(1024).expect("listen");
    s.into()
}

fn add(ep: i32, fd: i32, events: i32, token: u64) {
    let mut ev = libc::epoll_event {
        events: (events | libc::EPOLLET) as u32,
        u64: token,
    };
    // SAFETY: ev is a valid epoll_event for the duration of the call.
    unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
}

/// Reads until WouldBlock, answers every complete request; `false` when the peer is gone.
fn serve(s: &mut TcpStream, input: &mut Vec<u8>, out: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 8192];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(_) => return false,
        }
    }
    let mut start = 0;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&input[start..]) {
            Ok(httparse::Status::Complete(n)) => {
                start += n;
                out.extend_from_slice(RESPONSE);
            }
            Ok(httparse::Status::Partial) => break,
            Err(_) => return false,
        }
    }
    input.drain(..start);
    // Small responses to a client that reads them: a blocking-style write_all is enough here.
    let ok = s.write_all(out).is_ok();
    out.clear();
    ok
}

fn worker(addr: SocketAddr, cpu: usize) {
    let mut set = nix::sched::CpuSet::new();
    if set.set(cpu).is_ok() {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
    let l = listener(addr);
    // SAFETY: no pointers.
    let ep = unsafe { libc::epoll_create1(0) };
    add(ep, l.as_raw_fd(), libc::EPOLLIN, LISTENER);
    let mut conns: HashMap<u64, (TcpStream, Vec<u8>, Vec<u8>)> = HashMap::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    loop {
        // SAFETY: the kernel writes at most events.len() entries.
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, -1) };
        for ev in &events[..n.max(0) as usize] {
            let token = ev.u64;
            if token == LISTENER {
                while let Ok((s, _)) = l.accept() {
                    let _ = s.set_nonblocking(true);
                    let _ = s.set_nodelay(true);
                    let fd = s.as_raw_fd();
                    add(ep, fd, libc::EPOLLIN | libc::EPOLLRDHUP, fd as u64);
                    conns.insert(fd as u64, (s, Vec::new(), Vec::new()));
                }
            } else if let Some((s, input, out)) = conns.get_mut(&token)
                && !serve(s, input, out)
            {
                conns.remove(&token); // dropping the stream closes the fd
            }
        }
    }
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let addr: SocketAddr = argv
        .next()
        .unwrap_or_else(|| "127.0.0.1:8080".into())
        .parse()
        .expect("address");
    let workers: usize = argv.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    let threads: Vec<_> = (0..workers)
        .map(|i| std::thread::spawn(move || worker(addr, i)))
        .collect();
    for t in threads {
        let _ = t.join();
    }
}
