//! Who is at the other end of a connection: its address, and on a loopback
//! connection the uid that owns the peer's socket (threat 54).
//!
//! Why: a server with no declared principals has no token to check, and a
//! loopback address is reachable by every user of the machine, not only by
//! the one who started the server. The control socket checks its peer's uid
//! (`SO_PEERCRED`); TCP has no such option, but on Linux the kernel's socket
//! table (`/proc/net/tcp`, `/proc/net/tcp6`) names the owner of the peer's
//! end of a loopback connection, which is in the same network namespace.
//! Where it cannot be told (another system, a table that cannot be read, a
//! socket not found) the answer is an error ([`PeerUidError`], saying which
//! of those it was), and the caller refuses.

use std::net::SocketAddr;
use std::sync::Arc;

/// Why the user at the other end of a connection cannot be told. Each
/// variant names what was looked at (the address, the table's file); the
/// caller refuses the connection and words the fix (a token).
///
/// `Clone`: a connection's answer is found once and kept (see [`Peer`]).
#[derive(thiserror::Error, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerUidError {
    /// The peer is not on loopback: no local socket table names its user.
    #[error("{addr} is not a loopback address: its user cannot be told")]
    NotLoopback { addr: SocketAddr },
    /// The blocking lookup did not finish (its task panicked or was
    /// cancelled).
    #[error("the socket table lookup failed: {reason}")]
    LookupFailed { reason: String },
    /// The kernel's socket table could not be read.
    #[error("cannot read `{file}`: {reason}")]
    TableUnreadable { file: &'static str, reason: String },
    /// The table has no such connection.
    #[error(
        "no socket at {peer} connected to {local} in `{file}` (it closed, or it is in another network namespace)"
    )]
    NotFound {
        peer: SocketAddr,
        local: SocketAddr,
        file: &'static str,
    },
    /// This system has no table to read.
    #[error("the user of a TCP peer can be told on Linux only")]
    Unsupported,
}

/// One connection's peer, as the listener accepted it.
#[derive(Clone, Debug)]
pub struct Peer {
    /// The peer's address.
    pub addr: SocketAddr,
    /// This end's address.
    pub local: SocketAddr,
    /// The peer socket's owner, found at the first ask (a connection's
    /// owner does not change).
    uid: Arc<tokio::sync::OnceCell<Result<u32, PeerUidError>>>,
}

impl Peer {
    pub fn new(addr: SocketAddr, local: SocketAddr) -> Peer {
        Peer {
            addr,
            local,
            uid: Arc::default(),
        }
    }

    /// The uid owning the peer's socket of this loopback connection, or
    /// why it cannot be told.
    pub async fn uid(&self) -> Result<u32, PeerUidError> {
        let (addr, local) = (self.addr, self.local);
        self.uid
            .get_or_init(|| async move {
                if !addr.ip().is_loopback() {
                    return Err(PeerUidError::NotLoopback { addr });
                }
                // The table can be long (every socket of the machine's
                // namespace): read it off the async threads.
                tokio::task::spawn_blocking(move || socket_owner(addr, local))
                    .await
                    .unwrap_or_else(|e| {
                        Err(PeerUidError::LookupFailed {
                            reason: e.to_string(),
                        })
                    })
            })
            .await
            .clone()
    }

    /// Whether the peer runs as this process's own user (`Err`: it cannot
    /// be told, and the caller must refuse).
    pub async fn is_own_user(&self) -> Result<bool, PeerUidError> {
        Ok(self.uid().await? == own_uid())
    }
}

/// This process's effective uid: the owner of the sockets it makes.
pub fn own_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The owner of the socket at `peer` connected to `local`: the peer's end
/// of the connection, from the kernel's table of TCP sockets.
#[cfg(target_os = "linux")]
fn socket_owner(peer: SocketAddr, local: SocketAddr) -> Result<u32, PeerUidError> {
    let (table, file) = match peer {
        SocketAddr::V4(_) => (procfs::net::tcp(), "/proc/net/tcp"),
        SocketAddr::V6(_) => (procfs::net::tcp6(), "/proc/net/tcp6"),
    };
    let entries = table.map_err(|e| PeerUidError::TableUnreadable {
        file,
        reason: e.to_string(),
    })?;
    entries
        .into_iter()
        .find(|e| e.local_address == peer && e.remote_address == local)
        .map(|e| e.uid)
        .ok_or(PeerUidError::NotFound { peer, local, file })
}

#[cfg(not(target_os = "linux"))]
fn socket_owner(_peer: SocketAddr, _local: SocketAddr) -> Result<u32, PeerUidError> {
    Err(PeerUidError::Unsupported)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_owner_of_a_loopback_peer_is_this_process_when_it_connects_itself() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (stream, peer) = listener.accept().await.unwrap();
        let peer = Peer::new(peer, stream.local_addr().unwrap());
        assert_eq!(peer.uid().await, Ok(own_uid()));
        assert_eq!(peer.is_own_user().await, Ok(true));
        // Not a socket of this namespace: not told, an error.
        let gone = Peer::new("127.0.0.1:9".parse().unwrap(), addr);
        assert!(gone.uid().await.is_err());
    }
}
