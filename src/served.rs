//! Inside the server: what a command forwarded on the control socket
//! (`control/`) runs against, and where its output goes. Handlers never
//! name this: they ask `reach.rs` for the gateway and print with
//! `out!`/`err!` (`output.rs`), which look here first.

use std::sync::{Arc, Mutex};

use glovebox::{Gateway, Jobs, Principal};

/// Inside the server: the gateway and jobs runner a forwarded command uses,
/// who sent it, and what it prints.
pub(crate) struct Served {
    pub(crate) gateway: Gateway,
    pub(crate) jobs: Arc<Jobs>,
    pub(crate) operator: Principal,
    pub(crate) stdout: Mutex<Vec<u8>>,
    pub(crate) stderr: Mutex<Vec<u8>>,
}

tokio::task_local! {
    /// The forwarded command being run, while it runs inside the server.
    pub(crate) static SERVED: Arc<Served>;
}
