//! Who is calling: finding the [`Principal`] of a connection.
//!
//! Adapters authenticate a connection (a token over HTTP, the operator's
//! word over stdio) against the config served now ([`Principals`], from
//! `Gateway::principals`) and then act through `Gateway::scope` with the
//! principal found here; the scope enforces the ledger's ownership rules
//! (see `glovebox_ledger::session::access`). The command line acts as the
//! operator `cli:<uid>` ([`cli_operator`]).

use std::sync::Arc;

use crate::host::Host;
use crate::manifest::{self, Principal};

/// The operator at the command line: `cli:<uid>` (the uid that runs the
/// command; `cli:unknown` where there is none).
pub fn cli_operator() -> Principal {
    #[cfg(unix)]
    let uid = rustix::process::getuid().as_raw().to_string();
    #[cfg(not(unix))]
    let uid = "unknown".to_string();
    Principal::operator(format!("cli:{uid}"))
}

/// The principals of the config served when it was taken (see
/// `Gateway::principals`): take one for each request, so a reload
/// reaches open connections.
pub struct Principals {
    host: Arc<Host>,
}

/// A stdio connection with no principal named, on a config that declares
/// several agents: the operator must say which one.
#[derive(Debug, thiserror::Error)]
#[error(
    "the config declares {} agent principals: name the one this connection is with `serve --as NAME` ({})",
    .agents.len(),
    .agents.join(", ")
)]
pub struct NameTheAgent {
    /// The declared agents, by name.
    pub agents: Vec<String>,
}

impl Principals {
    pub(crate) fn new(host: Arc<Host>) -> Principals {
        Principals { host }
    }

    /// Whether the config declares principals (then HTTP needs a token).
    pub fn declared(&self) -> bool {
        !self.host.config().principals.is_empty()
    }

    /// The declared principal whose token `token` is (compared in constant
    /// time against every credential).
    pub fn authenticate(&self, token: &str) -> Option<Principal> {
        manifest::authenticate(&self.host.config().principals, token).map(|p| p.principal.clone())
    }

    /// Every principal sessions may be started by: the declared ones in
    /// the config's order, or the built-in agent `local` when none is
    /// declared (the fleet's registry the dashboard shows).
    pub fn all(&self) -> Vec<Principal> {
        let declared = &self.host.config().principals;
        if declared.is_empty() {
            return vec![Principal::local()];
        }
        declared.iter().map(|p| p.principal.clone()).collect()
    }

    /// The declared principal called `name`.
    pub fn named(&self, name: &str) -> Option<Principal> {
        self.host
            .config()
            .principals
            .iter()
            .find(|p| p.principal.name == name)
            .map(|p| p.principal.clone())
    }

    /// Who `name` is under this config: the declared principal of that
    /// name (its kind, roles, projects, tags and `approve_by` as the config
    /// says them), or the built-in `local` agent while no principal is
    /// declared. `None`: nobody by that name any more (a reload removed
    /// it); a connection of it must not be served. Adapters ask this at
    /// every request, so a reload reaches open connections.
    pub fn current(&self, name: &str) -> Option<Principal> {
        if !self.declared() {
            return (name == manifest::LOCAL_PRINCIPAL).then(Principal::local);
        }
        self.named(name)
    }

    /// Who a stdio connection is when the operator did not say (`serve`
    /// without `--as`): the one declared agent, or the built-in `local`
    /// agent when there is none. With several agents the operator must
    /// name one.
    pub fn default_stdio(&self) -> Result<Principal, NameTheAgent> {
        let agents: Vec<&Principal> = self
            .host
            .config()
            .principals
            .iter()
            .map(|p| &p.principal)
            .filter(|p| !p.is_operator())
            .collect();
        match agents.as_slice() {
            [] => Ok(Principal::local()),
            [one] => Ok((*one).clone()),
            many => Err(NameTheAgent {
                agents: many.iter().map(|p| p.name.to_string()).collect(),
            }),
        }
    }
}
