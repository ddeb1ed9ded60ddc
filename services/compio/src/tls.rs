//! `--protocol http/1.1+tls`: the handshake, then compio-tls' stream.
//!
//! compio-tls' own `TlsAcceptor::accept` drops the connection when a handshake fails without
//! flushing its write buffer, so the client never gets rustls' alert (TLS 1.2, no ALPN we
//! serve): a bare close instead. The same handshake through futures-rustls (what compio-tls
//! runs) with `into_fallible` hands the stream back on failure, and we flush the alert. The
//! configuration refuses an unserved ALPN in the ClientHello
//! (`ping_tls::refuse_unserved_alpn_early`), so the alert is the one record to flush.

use std::pin::Pin;
use std::sync::Arc;

use compio::net::TcpStream;
use compio_io::compat::AsyncStream;
use futures_util::AsyncWriteExt;
use ping_tls::rustls::ServerConfig;

/// The TLS side of a worker: one configuration shared by every worker.
#[derive(Clone)]
pub struct Acceptor(futures_rustls::TlsAcceptor);

impl Acceptor {
    pub fn new(mut config: ServerConfig) -> Acceptor {
        ping_tls::refuse_unserved_alpn_early(&mut config);
        Acceptor(futures_rustls::TlsAcceptor::from(Arc::new(config)))
    }

    /// The TLS stream after a completed handshake; None after a failed one (its alert sent).
    pub async fn accept(&self, stream: TcpStream) -> Option<compio_tls::TlsStream<TcpStream>> {
        let io = Box::pin(AsyncStream::new(stream));
        match self.0.accept(io).into_fallible().await {
            Ok(tls) => Some(compio_tls::TlsStream::from(tls)),
            Err((_, mut io)) => {
                let _ = Pin::new(&mut io).flush().await;
                None
            }
        }
    }
}
