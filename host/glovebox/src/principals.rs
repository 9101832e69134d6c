//! Who is calling: finding the [`Principal`] of a connection.
//!
//! Adapters authenticate a connection (a token over HTTP, the operator's
//! word over stdio) and then act through [`Gateway::scope`] with the
//! principal found here; the scope enforces the ledger's ownership rules
//! (see `glovebox_ledger::session::access`). The command line acts as the
//! operator `cli:<uid>` ([`cli_operator`]).

use std::collections::HashSet;

use crate::gateway::Gateway;
use crate::manifest::{self, Principal};
use crate::session::may_touch;

/// The operator at the command line: `cli:<uid>` (the uid that runs the
/// command; `cli:unknown` where there is none).
pub fn cli_operator() -> Principal {
    #[cfg(unix)]
    let uid = rustix::process::getuid().as_raw().to_string();
    #[cfg(not(unix))]
    let uid = "unknown".to_string();
    Principal::operator(format!("cli:{uid}"))
}

impl Gateway {
    /// Whether the config declares principals (then HTTP needs a token).
    pub fn has_principals(&self) -> bool {
        !self.host().config().principals.is_empty()
    }

    /// The declared principal whose token `token` is (compared in constant
    /// time against every credential).
    pub fn authenticate(&self, token: &str) -> Option<Principal> {
        manifest::authenticate(&self.host().config().principals, token).map(|p| p.principal.clone())
    }

    /// The declared principal called `name`.
    pub fn principal(&self, name: &str) -> Option<Principal> {
        self.host()
            .config()
            .principals
            .iter()
            .find(|p| p.principal.name == name)
            .map(|p| p.principal.clone())
    }

    /// Who `name` is under the config served now: the declared principal
    /// of that name (its kind, roles, projects, tags and `approve_by` as
    /// the config says them now), or the built-in `local` agent while no
    /// principal is declared. `None`: nobody by that name any more (a reload
    /// removed it); a connection of it must not be served. Adapters ask
    /// this at every request, so a reload reaches open connections.
    pub fn current_principal(&self, name: &str) -> Option<Principal> {
        if !self.has_principals() {
            return (name == manifest::LOCAL_PRINCIPAL).then(Principal::local);
        }
        self.principal(name)
    }

    /// Who a stdio connection is when the operator did not say (`serve`
    /// without `--as`): the one declared agent, or the built-in `local`
    /// agent when there is none. With several agents the operator must
    /// name one.
    pub fn default_stdio_principal(&self) -> Result<Principal, String> {
        let host = self.host();
        let agents: Vec<&Principal> = host
            .config()
            .principals
            .iter()
            .map(|p| &p.principal)
            .filter(|p| !p.is_operator())
            .collect();
        match agents.as_slice() {
            [] => Ok(Principal::local()),
            [one] => Ok((*one).clone()),
            many => Err(format!(
                "the config declares {} agent principals: name the one this connection is with `serve --as NAME` ({})",
                many.len(),
                many.iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    pub(crate) fn reserved_tags(&self) -> HashSet<String> {
        manifest::pinned_tags(&self.host().config().principals)
    }

    /// Whether `caller` may see session `id` (an id, as jobs record it).
    pub(crate) fn sees_session(&self, caller: &Principal, id: &str) -> bool {
        caller.is_operator()
            || self
                .sessions()
                .show(id)
                .is_ok_and(|s| may_touch(caller, s.owner_name()))
    }
}
