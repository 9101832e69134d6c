//! Session leases: which host drives a session when several hosts share one
//! store (`[storage] backend = "nats"`).
//!
//! Why: every host on a shared store can load every session, and the log
//! itself is safe (an append states the sequence it expects, so two hosts
//! can never fork a chain). What the log cannot tell is whose calls are in
//! flight: a host that starts must not mark another live host's running
//! calls interrupted, and two hosts must not run calls in one session at
//! once, each believing the session is its own. A lease says who drives a
//! session; it grants nothing (the principal and owner checks are as they
//! are), it only routes.
//!
//! What: a key per session (its id) in bucket `leases`, holding the node
//! (`[storage] node`), the process within it (a random holder id per
//! [`Sessions`], since a node may run a server and one-off commands at
//! once), the address clients reach that node's MCP server at (when the
//! node advertises one), and when the lease expires (unix millis, by the
//! holder's clock). Every write of it is a compare-and-set
//! ([`Storage::put_if`](crate::storage::Storage::put_if)) over the value
//! read, so of two hosts taking one lease exactly one gets it.
//!
//! When:
//!
//! - Taken before a host's first append to the session (a call requested,
//!   a session started, an operator's command): free, expired, or already
//!   this process's. Held by another process whose lease has not expired,
//!   the append is refused with [`SessionError::Leased`], naming the node
//!   (and its address): the client sends the call there, or waits until
//!   the lease expires. Appends while the lease is held cost no store
//!   operation: the holder knows until when it holds it.
//! - Renewed by the holder ([`Sessions::renew_leases`], a background task of
//!   the host every third of the TTL), well before it expires; an append
//!   that finds the lease in its last third renews it itself. A renewal
//!   that finds the lease changed (another host took it over after it
//!   expired: this host stalled) drops it, and the next append here is
//!   refused like any other.
//! - Released when the session ends, when it has been idle (no append and
//!   no call of this process in flight) for a TTL, and at a clean shutdown
//!   (dropping the [`Sessions`]). A killed host releases nothing: its
//!   leases expire after the TTL.
//! - Taken over once expired: the host taking it over marks the calls the
//!   dead holder left in flight `call_interrupted`, as a restart's
//!   recovery does (`recover.rs`), and then drives the session. Recovery at
//!   start skips the sessions other live processes hold.
//!
//! Clocks: expiry is compared with the taker's clock, so hosts' clocks must
//! agree to well within the TTL (NTP does). A host whose clock runs ahead
//! may take a lease early; the log stays whole even then (appends are
//! compare-and-set too), only a call may be marked interrupted that was
//! still running.
//!
//! Only a shared store needs this: on sled and SQLite one process holds the
//! data dir, and [`SessionsConfig::lease`](super::SessionsConfig) is `None`,
//! so nothing here runs and no lease is written.
//!
//! The leases' records are here; taking, renewing and releasing them is in
//! `leasing.rs`.
//!
//! [`Sessions`]: super::Sessions
//! [`Sessions::renew_leases`]: super::Sessions::renew_leases
//! [`SessionError::Leased`]: super::SessionError::Leased

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The bucket holding the leases, by session id.
pub(crate) const LEASES_BUCKET: &str = "leases";

/// How the sessions of one host take leases (`[storage] node`, `lease_ttl`).
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// This host's node id, as other hosts' errors name it.
    pub node: String,
    /// Where clients reach this node's MCP server, when it says.
    pub addr: Option<String>,
    /// How long a lease lasts without a renewal.
    pub ttl: Duration,
}

/// A session's lease, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub node: String,
    /// The process of the node that holds it (random per [`Sessions`](super::Sessions)).
    pub holder: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    pub expires_at_ms: u64,
}

/// The leases one [`Sessions`](super::Sessions) holds.
pub(crate) struct Leases {
    pub(super) config: LeaseConfig,
    pub(super) holder: String,
    pub(super) held: Mutex<HashMap<String, Held>>,
}

/// A lease this process holds: the bytes it wrote (what the next
/// compare-and-set expects), until when, and when it was last used.
pub(super) struct Held {
    pub(super) bytes: Vec<u8>,
    pub(super) expires_at_ms: u64,
    pub(super) used_at_ms: u64,
}

impl Leases {
    pub(crate) fn new(config: LeaseConfig) -> Leases {
        let holder = uuid::Uuid::new_v4().simple().to_string();
        Leases {
            config,
            holder: holder[..12].to_string(),
            held: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn ttl_ms(&self) -> u64 {
        u64::try_from(self.config.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// This process's lease for a TTL from `now`, as held once written
    /// (used at `now`).
    pub(super) fn mine_from(&self, now: u64) -> Held {
        let expires_at_ms = now.saturating_add(self.ttl_ms());
        let mine = Lease {
            node: self.config.node.clone(),
            holder: self.holder.clone(),
            addr: self.config.addr.clone(),
            expires_at_ms,
        };
        Held {
            bytes: serde_json::to_vec(&mine).unwrap_or_default(),
            expires_at_ms,
            used_at_ms: now,
        }
    }
}
