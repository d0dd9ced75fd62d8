//! The loopback proxy between the worker and one service: what makes a service *unreachable*
//! while it runs on (CONTRACT.md section 2, "Services"). The worker is given the proxy's address
//! (`KILLPOINT_SERVICE_<NAME>_ADDR`); the service keeps its own port. While the proxy is open it
//! copies bytes both ways, one upstream connection per worker connection; while it is cut, every
//! connection it carries is reset (RST, both sides) and every new one is accepted and reset at
//! once. The listening socket stays bound through a cut, so no other process can take the port
//! the worker was told.
//!
//! It runs on a thread of its own (a current-thread runtime), so a driver busy with a restart
//! does not stall the worker's traffic; dropping the [`Proxy`] ends the thread, and with it every
//! connection.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

/// Whether the worker can reach the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Open,
    Cut,
}

/// A running proxy; dropping it closes it.
pub(super) struct Proxy {
    port: u16,
    phase: watch::Sender<Phase>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// A proxy on a port of its own on 127.0.0.1 to the service's `upstream` port.
    pub(super) fn start(upstream: u16) -> std::io::Result<Proxy> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let (phase, watching) = watch::channel(Phase::Open);
        let (stop, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let thread = std::thread::Builder::new().name(format!("proxy-{upstream}")).spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = TcpListener::from_std(listener) else { return };
                tokio::select! {
                    _ = serve(listener, upstream, watching) => {}
                    _ = stopped => {}
                }
            });
            // The runtime drops here, and with it every connection's task and socket.
        })?;
        Ok(Proxy { port, phase, stop: Some(stop), thread: Some(thread) })
    }

    /// The port the worker is told.
    pub(super) fn port(&self) -> u16 {
        self.port
    }

    /// From now on the worker cannot reach the service: its connections are reset.
    pub(super) fn cut(&self) {
        self.phase.send_replace(Phase::Cut);
    }

    /// A handle that ends a cut later (a window's end), from any task.
    pub(super) fn opener(&self) -> Opener {
        Opener(self.phase.clone())
    }
}

/// Ends a cut of one proxy (see [`Proxy::opener`]).
#[derive(Clone)]
pub struct Opener(watch::Sender<Phase>);

impl Opener {
    /// From now on the worker reaches the service again.
    pub fn open(&self) {
        self.0.send_replace(Phase::Open);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // Ends as soon as its runtime sees the stop: nothing in it blocks.
            let _ = thread.join();
        }
    }
}

/// Accepts the worker's connections for ever: each piped to the service, or reset while cut.
async fn serve(listener: TcpListener, upstream: u16, phase: watch::Receiver<Phase>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of descriptors, most likely: try again shortly rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        if *phase.borrow() == Phase::Cut {
            reset(&client);
            continue;
        }
        tokio::spawn(pipe(client, upstream, phase.clone()));
    }
}

/// One worker connection to the service, until either side closes or a cut resets both.
async fn pipe(mut client: TcpStream, upstream: u16, mut phase: watch::Receiver<Phase>) {
    let address = SocketAddr::from(([127, 0, 0, 1], upstream));
    // A service that is down (a kill's restart) resets the worker's connection, as a refused one.
    let Ok(mut server) = TcpStream::connect(address).await else { return reset(&client) };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = phase.wait_for(|p| *p == Phase::Cut) => {
            reset(&client);
            reset(&server);
        }
    }
}

/// Drops the connection with an RST instead of a FIN: what a peer sees of a link that broke.
/// tokio deprecates `set_linger` because a *positive* linger blocks the thread on drop; a zero one
/// does not: the kernel discards what is unsent and resets at once.
#[allow(deprecated)]
fn reset(stream: &TcpStream) {
    let _ = stream.set_linger(Some(Duration::ZERO));
}

#[cfg(test)]
mod tests {
    use super::Proxy;
    use std::io::ErrorKind;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// An echo server on loopback: what each connection sends comes back.
    async fn echo() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buffer = [0u8; 64];
                    while let Ok(n @ 1..) = stream.read(&mut buffer).await {
                        let _ = stream.write_all(&buffer[..n]).await;
                    }
                });
            }
        });
        port
    }

    /// Sends `ping` on `stream` and reads what comes back: the echo, or the error.
    async fn ping(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
        stream.write_all(b"ping").await?;
        let mut buffer = [0u8; 4];
        stream.read_exact(&mut buffer).await?;
        Ok(buffer.to_vec())
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_cut_resets_every_connection_until_the_proxy_opens_again() {
        let proxy = Proxy::start(echo().await).unwrap();
        let address = ("127.0.0.1", proxy.port());
        let mut before = TcpStream::connect(address).await.unwrap();
        assert_eq!(ping(&mut before).await.unwrap(), b"ping", "open: the service answers through the proxy");

        proxy.cut();
        let old = ping(&mut before).await.expect_err("a connection made before the cut is reset");
        assert!(
            matches!(old.kind(), ErrorKind::ConnectionReset | ErrorKind::UnexpectedEof | ErrorKind::BrokenPipe),
            "{old}"
        );
        // Accepted and reset at once: the reset may come before `connect` returns, or after.
        let during = async { ping(&mut TcpStream::connect(address).await?).await };
        let new = during.await.expect_err("a connection made during the cut is reset at once");
        assert!(
            matches!(new.kind(), ErrorKind::ConnectionReset | ErrorKind::UnexpectedEof | ErrorKind::BrokenPipe),
            "{new}"
        );

        proxy.opener().open();
        let mut after = TcpStream::connect(address).await.unwrap();
        assert_eq!(ping(&mut after).await.unwrap(), b"ping", "open again: the service answers");
        drop(proxy);
        let closed = TcpStream::connect(address).await;
        assert!(closed.is_err(), "a dropped proxy listens no more");
    }
}
