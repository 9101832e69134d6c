//! The tools a connection lists: those the host offers its caller
//! (`glovebox::offer`), in the session the connection is bound to, or in
//! the default session its next call would start.
//!
//! Why here: `tools/list` is answered before any session may exist, so
//! the connection says which session's view to take; the decision itself
//! (toolsets, role, read-only) is the host's, the same one that admits
//! every call. Built-in tools are always listed.

use std::sync::Arc;

use rmcp::model::Tool;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use crate::connection::{Connection, default_role};
use crate::tools::BUILTINS;
use glovebox::Principal;

impl Connection {
    /// `tools`, less the plugin tools `caller` is not offered in the bound
    /// session (or, with none bound, in the default session it would start:
    /// its default role, read-only as the caller is).
    pub(crate) async fn offered_tools(
        &self,
        caller: &Principal,
        tools: Arc<Vec<Tool>>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<Vec<Tool>>, ErrorData> {
        let host = self.shared().gateway.host();
        let this = self.for_request(caller, context).await?;
        let bound = match this.bound().await {
            Some(id) => self.shared().gateway.scope(caller).session(&id).await.ok(),
            None => None,
        };
        let offer = match &bound {
            Some(state) => host.offer_in(state),
            None => host.offer(caller, default_role(caller), false),
        };
        if !offer.narrowed() {
            return Ok(tools);
        }
        let listed = tools
            .iter()
            .filter(|t| {
                BUILTINS.contains(&t.name.as_ref())
                    || host.resolve(&t.name).is_ok_and(|info| offer.offers(info))
            })
            .cloned()
            .collect();
        Ok(Arc::new(listed))
    }
}
