//! Where a NATS store lives and how it authenticates: the [`NatsConfig`] a
//! caller fills in from `[storage]`, apart from the store that connects with it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// How to reach and authenticate to the NATS server.
#[derive(Clone)]
pub enum Auth {
    None,
    /// A `.creds` file (a user JWT and its NKey seed), as `nsc` writes them.
    CredsFile(PathBuf),
    UserPassword {
        user: String,
        password: String,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::CredsFile(path) => f.debug_tuple("CredsFile").field(path).finish(),
            Auth::UserPassword { user, .. } => f
                .debug_struct("UserPassword")
                .field("user", user)
                .finish_non_exhaustive(),
        }
    }
}

/// Where the store lives.
#[derive(Debug, Clone)]
pub struct NatsConfig {
    /// One server or several, comma-separated (`nats://a:4222,nats://b:4222`).
    /// `tls://` makes the client require TLS.
    pub url: String,
    pub auth: Auth,
    /// Starts every stream and bucket name, so deployments can share a
    /// cluster: letters, digits and `-` (see [`check_prefix`](crate::check_prefix)).
    pub prefix: String,
    /// Copies JetStream keeps of every stream: 1 for one server, 3 for a cluster.
    pub replicas: usize,
    /// How long one request (a read, an acknowledgement, a connect) may take.
    pub timeout: Duration,
}

impl NatsConfig {
    pub const DEFAULT_PREFIX: &str = "glovebox";

    pub fn new(url: impl Into<String>) -> NatsConfig {
        NatsConfig {
            url: url.into(),
            auth: Auth::None,
            prefix: NatsConfig::DEFAULT_PREFIX.to_string(),
            replicas: 1,
            timeout: Duration::from_secs(10),
        }
    }
}
