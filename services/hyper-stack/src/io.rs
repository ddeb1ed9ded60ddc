//! The connection I/O hyper is served: tokio's socket as hyper's `Read`/`Write` (what
//! hyper-util's `TokioIo` does), with reads cut by [`Framer`] after a request that closes the
//! connection (see `framing` for why).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use hyper::rt::{Read, ReadBufCursor, Write};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::framing::Framer;

/// A tokio stream as hyper I/O, handing hyper nothing past a closing request.
pub struct CloseAwareIo<T> {
    inner: T,
    framer: Framer,
    /// `--split-write-every`: the current write's cut, decided once (a write hyper retries
    /// after `Pending` is the same write), and whether the next write is a cut one's rest.
    cut: Option<Option<usize>>,
    rest: bool,
}

impl<T> CloseAwareIo<T> {
    pub fn new(inner: T) -> Self {
        CloseAwareIo {
            inner,
            framer: Framer::default(),
            cut: None,
            rest: false,
        }
    }

    /// How many of the `len` bytes hyper offers to write now: all, or the first part of a
    /// response write `--split-write-every` cuts in two (hyper then offers the rest).
    fn limit(&mut self, len: usize) -> usize {
        if self.rest {
            return len;
        }
        let cut = *self.cut.get_or_insert_with(|| ping_common::split::cut(len));
        cut.map_or(len, |k| k.min(len))
    }

    fn wrote(&mut self, r: &Poll<std::io::Result<usize>>) {
        if r.is_ready() {
            self.rest = !self.rest && matches!(self.cut, Some(Some(_)));
            self.cut = None;
        }
    }
}

impl<T: AsyncRead + Unpin> Read for CloseAwareIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        // SAFETY: tokio's ReadBuf only writes initialised bytes into the uninitialised tail
        // and reports how many; we advance hyper's cursor by at most that many.
        let passed = unsafe {
            let mut tbuf = tokio::io::ReadBuf::uninit(buf.as_mut());
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut tbuf))?;
            let filled = tbuf.filled().len();
            let passed = this.framer.feed(tbuf.filled());
            debug_assert!(passed <= filled);
            passed
        };
        // SAFETY: the first `passed` bytes were initialised by the read above.
        unsafe { buf.advance(passed) };
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> Write for CloseAwareIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let n = this.limit(buf.len());
        let r = Pin::new(&mut this.inner).poll_write(cx, &buf[..n]);
        this.wrote(&r);
        r
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        let n = this.limit(len);
        let r = if n < len {
            // The cut's first part: from the first buffer, at most `n` bytes of it.
            let first = bufs
                .iter()
                .find(|b| !b.is_empty())
                .map_or(&[][..], |b| &b[..]);
            Pin::new(&mut this.inner).poll_write(cx, &first[..n.min(first.len())])
        } else {
            Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
        };
        this.wrote(&r);
        r
    }
}
