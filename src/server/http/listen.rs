//! Accepting connections so that nobody on loopback can lock the person out: every process on
//! the machine (the agent's own commands included) can open sockets to this port.
//!
//! - **A time limit on the request head**: a connection that has not sent a whole request
//!   head within [`HEADER_READ_TIMEOUT`] is closed (hyper's `header_read_timeout`, which needs
//!   a timer; `axum::serve` sets none, so a half-sent request could hold a socket forever).
//! - **A cap on connections no credential has spoken for**, per peer address and in all. A
//!   connection counts as unauthenticated until a request on it passes the auth middleware
//!   (`ConnHandle::authenticated`). When a new one would go over a cap, the oldest
//!   unauthenticated connection (of that peer, if the peer's cap is the one reached) is
//!   closed: a flood of half-open sockets churns among itself, and a person's fresh
//!   connection — the youngest, and authenticated with its first request — gets through.
//!   Authenticated connections never count against the cap — a person's: a connection whose
//!   requests carry only a `gates` token (an agent's hook) stays a stranger's.
//! - **File descriptors**: `RLIMIT_NOFILE` is raised to its hard limit at start
//!   ([`raise_nofile_limit`]), and the caps stay well below it; when `accept` still runs out,
//!   the oldest unauthenticated connection is closed to make room.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How long a connection may take to send a request head.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long shutdown lets open requests finish before it closes them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the limit in force.
pub fn raise_nofile_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit fill and read a plain struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
    }
    limit.rlim_cur
}

/// The caps, from the file-descriptor limit in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Unauthenticated connections in all.
    pub total: usize,
    /// Unauthenticated connections from one address.
    pub per_peer: usize,
}

impl Caps {
    /// A quarter of the descriptors for strangers (at most 512), half of that per peer; the
    /// rest stays for authenticated connections, the database and tools.
    pub fn for_nofile(nofile: u64) -> Caps {
        let total = usize::try_from((nofile / 4).clamp(16, 512)).unwrap_or(512);
        Caps {
            total,
            per_peer: (total / 2).max(8),
        }
    }
}

/// This server's end of a connection (a request extension): with the peer's address it names
/// the connection, so the peer's process can be found (`os_user::peer`).
#[derive(Clone, Copy, Debug)]
pub struct LocalAddr(pub SocketAddr);

/// One accepted connection, as the auth middleware sees it (a request extension).
#[derive(Clone)]
pub struct ConnHandle(Arc<Conn>);

struct Conn {
    id: u64,
    peer: IpAddr,
    authenticated: AtomicBool,
    close: CancellationToken,
    /// The uid of the process at the other end, once looked up (`os_user::peer`): a socket's
    /// owner never changes, so one lookup serves the connection's every request.
    peer_uid: OnceLock<Option<u32>>,
}

impl ConnHandle {
    /// A request on this connection passed the auth middleware: it no longer counts against
    /// the cap on unauthenticated connections, and is never closed to make room.
    pub fn authenticated(&self) {
        self.0.authenticated.store(true, Ordering::Relaxed);
    }

    /// The peer's uid as looked up before on this connection (`None`: not looked up yet).
    pub fn peer_uid(&self) -> Option<Option<u32>> {
        self.0.peer_uid.get().copied()
    }

    /// Keeps what looking the peer's uid up found, for the connection's next requests.
    pub fn remember_peer_uid(&self, uid: Option<u32>) {
        let _ = self.0.peer_uid.set(uid);
    }
}

/// The open connections, oldest first by id.
#[derive(Default)]
struct Registry {
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    next: AtomicU64,
}

impl Registry {
    fn add(&self, peer: IpAddr, caps: Caps) -> Arc<Conn> {
        let conn = Arc::new(Conn {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            peer,
            authenticated: AtomicBool::new(false),
            close: CancellationToken::new(),
            peer_uid: OnceLock::new(),
        });
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let strangers = |of: Option<IpAddr>| {
            open.values()
                .filter(|c| !c.authenticated.load(Ordering::Relaxed))
                .filter(|c| of.is_none_or(|p| c.peer == p))
                .count()
        };
        let victim = if strangers(Some(peer)) >= caps.per_peer {
            oldest_stranger(&open, Some(peer))
        } else if strangers(None) >= caps.total {
            oldest_stranger(&open, None)
        } else {
            None
        };
        if let Some(old) = victim.and_then(|id| open.remove(&id)) {
            old.close.cancel();
        }
        open.insert(conn.id, Arc::clone(&conn));
        conn
    }

    /// Closes the oldest unauthenticated connection (when descriptors ran out).
    fn shed(&self) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        match oldest_stranger(&open, None).and_then(|id| open.remove(&id)) {
            Some(old) => {
                old.close.cancel();
                true
            }
            None => false,
        }
    }

    fn remove(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

fn oldest_stranger(open: &HashMap<u64, Arc<Conn>>, of: Option<IpAddr>) -> Option<u64> {
    open.values()
        .filter(|c| !c.authenticated.load(Ordering::Relaxed))
        .filter(|c| of.is_none_or(|p| c.peer == p))
        .map(|c| c.id)
        .min()
}

/// Serves `app` on `listener` until `shutdown`, then lets open requests finish (bounded).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    caps: Caps,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let registry = Arc::new(Registry::default());
    let builder = Arc::new(http1_builder());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let Some((stream, peer)) = accept(&listener, &registry, &shutdown).await else {
            break;
        };
        let _ = stream.set_nodelay(true);
        let local = stream.local_addr().ok().map(LocalAddr);
        let conn = registry.add(peer_ip(peer), caps);
        let handle = ConnHandle(Arc::clone(&conn));
        let service = hyper::service::service_fn({
            let app = app.clone();
            move |mut req: http::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(handle.clone());
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                if let Some(local) = local {
                    req.extensions_mut().insert(local);
                }
                app.clone().oneshot(req.map(axum::body::Body::new))
            }
        });
        let served = graceful.watch(
            builder
                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                .into_owned(),
        );
        let registry = Arc::clone(&registry);
        tokio::spawn(async move {
            tokio::select! {
                result = served => {
                    if let Err(err) = result {
                        tracing::trace!(error = %err, "connection ended with an error");
                    }
                }
                () = conn.close.cancelled() => {}
            }
            registry.remove(conn.id);
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("connections still open after {SHUTDOWN_GRACE:?}; closing them");
    }
    Ok(())
}

/// HTTP/1 only: its header-read timeout is what closes a silent connection, and plain-TCP
/// HTTP/2 (prior knowledge) would keep idle ones open with no such limit.
fn http1_builder() -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    builder
}

/// The next connection, or `None` at shutdown. Out of file descriptors, the oldest
/// unauthenticated connection is closed to make room.
async fn accept(
    listener: &TcpListener,
    registry: &Registry,
    shutdown: &CancellationToken,
) -> Option<(tokio::net::TcpStream, SocketAddr)> {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => return Some(pair),
                Err(err) if matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    tracing::warn!("out of file descriptors: closing the oldest unauthenticated connection");
                    if !registry.shed() {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
                Err(err) => tracing::debug!(error = %err, "accept failed"),
            },
            () = shutdown.cancelled() => return None,
        }
    }
}

/// The peer's address, with IPv4-mapped IPv6 read as IPv4 (one peer, one count).
fn peer_ip(peer: SocketAddr) -> IpAddr {
    match peer.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_leave_room_below_the_descriptor_limit() {
        assert_eq!(
            Caps::for_nofile(1024),
            Caps {
                total: 256,
                per_peer: 128
            }
        );
        assert_eq!(Caps::for_nofile(1 << 20).total, 512);
        assert_eq!(Caps::for_nofile(10).total, 16);
    }

    #[test]
    fn the_oldest_stranger_of_a_full_peer_is_closed_never_an_authenticated_one() {
        let registry = Registry::default();
        let caps = Caps {
            total: 4,
            per_peer: 2,
        };
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        let person = registry.add(local, caps);
        ConnHandle(Arc::clone(&person)).authenticated();
        let a = registry.add(local, caps);
        let b = registry.add(local, caps);
        let c = registry.add(local, caps);
        assert!(a.close.is_cancelled(), "the oldest stranger of the peer");
        assert!(!b.close.is_cancelled() && !c.close.is_cancelled());
        assert!(!person.close.is_cancelled(), "authenticated: never closed");
        let d = registry.add(other, caps);
        let e = registry.add(other, caps);
        assert!(!d.close.is_cancelled() && !e.close.is_cancelled());
        // Four strangers in all: the next one closes the oldest of everyone's.
        let f = registry.add("127.0.0.3".parse().unwrap(), caps);
        assert!(b.close.is_cancelled(), "the oldest stranger overall");
        assert!(!f.close.is_cancelled());
        assert!(registry.shed());
        assert!(c.close.is_cancelled());
    }
}
