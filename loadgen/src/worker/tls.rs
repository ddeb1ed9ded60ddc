//! A worker's TLS connections on epoll: the handshake after the TCP connect (the slot stays
//! `Connecting` until it finishes, so its set-up time and connect timeout include it), then
//! records in and out through the session — the framing and accounting above are unchanged.

use std::io::{self, Read};

use super::Worker;
use super::conn::State;
use super::wire::failure;
use crate::recorder::ErrorKind;
use crate::sys::clock::now_ns;
use crate::tls::Fd;

impl Worker {
    /// TCP is up on slot `ci`: start the handshake (the ClientHello goes out).
    pub(super) fn start_handshake(&mut self, ci: usize) {
        let Some(client) = self.plan.tls.clone() else {
            return;
        };
        match client.session() {
            Ok(mut s) => {
                s.set_buffer_limit(None);
                self.conns[ci].tls = Some(Box::new(s));
                if let Err(why) = self.tls_write(ci) {
                    self.handshake_failed(ci, why);
                }
            }
            Err(e) => self.handshake_failed(ci, e.to_string()),
        }
    }

    /// Drives slot `ci`'s handshake on an event; once it is done, checks what was negotiated,
    /// counts the connection established and takes whatever data came with the last flight.
    pub(super) fn handshake(&mut self, ci: usize) {
        if let Err(why) = self.tls_pull(ci).and_then(|()| self.tls_write(ci)) {
            self.handshake_failed(ci, why);
            return;
        }
        let (Some(client), Some(s)) = (self.plan.tls.clone(), self.conns[ci].tls.as_deref()) else {
            return;
        };
        if s.is_handshaking() {
            return;
        }
        match client.negotiated(s) {
            Ok(session) => {
                self.tls_session.get_or_insert(session);
                self.on_established(ci);
                if self.conns[ci].state == State::Open {
                    self.tls_read(ci);
                }
            }
            Err(why) => self.handshake_failed(ci, why),
        }
    }

    fn handshake_failed(&mut self, ci: usize, why: String) {
        self.tls_error.get_or_insert(why);
        self.connect_failed(ci, now_ns());
    }

    /// Reads the records that arrived (until the socket has none) and processes them.
    fn tls_pull(&mut self, ci: usize) -> Result<(), String> {
        let c = &mut self.conns[ci];
        let Some(s) = c.tls.as_mut() else {
            return Ok(());
        };
        loop {
            match s.read_tls(&mut Fd(c.fd)) {
                Ok(0) => return Err("the server closed the connection in the handshake".into()),
                Ok(_) => {
                    s.process_new_packets().map_err(|e| format!("TLS: {e}"))?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("TLS: reading the handshake: {e}")),
            }
        }
    }

    /// Sends the session's pending records until done or the socket is full (an `EPOLLOUT`
    /// edge resumes it).
    pub(super) fn tls_write(&mut self, ci: usize) -> Result<(), String> {
        let c = &mut self.conns[ci];
        let Some(s) = c.tls.as_mut() else {
            return Ok(());
        };
        while s.wants_write() {
            match s.write_tls(&mut Fd(c.fd)) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }

    /// An open TLS connection's `flush`: the request bytes sealed into records, the records
    /// sent.
    pub(super) fn tls_flush(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if c.written < c.wlen {
            let n = c.seal(&self.plan.req);
            if c.counted {
                self.rec.bytes_written += n as u64;
            }
            c.written_all();
        }
        let c = &mut self.conns[ci];
        let Some(s) = c.tls.as_mut() else { return };
        while s.wants_write() {
            match s.write_tls(&mut Fd(c.fd)) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail_open(ci, failure(&e, ErrorKind::Write), now_ns());
                    return;
                }
            }
        }
    }

    /// An open TLS connection's `read_ready`: the plaintext the session holds is framed
    /// first, then more records are read, until the socket has none.
    pub(super) fn tls_read(&mut self, ci: usize) {
        loop {
            loop {
                if !self.make_room(ci) {
                    return;
                }
                let c = &mut self.conns[ci];
                let Some(s) = c.tls.as_mut() else { return };
                match s.reader().read(&mut c.rbuf[c.rend..]) {
                    // close_notify: the server's end of the stream.
                    Ok(0) => {
                        self.on_eof(ci, now_ns());
                        return;
                    }
                    Ok(n) => {
                        if !self.received(ci, n, None) {
                            return;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    // Closed without close_notify.
                    Err(_) => {
                        self.on_eof(ci, now_ns());
                        return;
                    }
                }
            }
            let c = &mut self.conns[ci];
            let Some(s) = c.tls.as_mut() else { return };
            match s.read_tls(&mut Fd(c.fd)) {
                Ok(0) => {
                    // TCP end: what the session still holds, then the end.
                    let _ = s.process_new_packets();
                    self.on_eof(ci, now_ns());
                    return;
                }
                Ok(_) => {
                    if let Err(e) = s.process_new_packets() {
                        self.tls_error.get_or_insert(format!("TLS: {e}"));
                        // An alert the session owes the peer goes out before the close.
                        let _ = self.tls_write(ci);
                        self.fail_open(ci, ErrorKind::Read, now_ns());
                        return;
                    }
                    if self.conns[ci].tls_pending() {
                        self.tls_flush(ci);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail_open(ci, failure(&e, ErrorKind::Read), now_ns());
                    return;
                }
            }
        }
    }
}
