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
}

impl<T> CloseAwareIo<T> {
    pub fn new(inner: T) -> Self {
        CloseAwareIo {
            inner,
            framer: Framer::default(),
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
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
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
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }
}
