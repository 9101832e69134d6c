//! The `tools` import (`wit/plugin.wit`): a guest that calls other tools from
//! inside its run ("code mode").
//!
//! Why here, in the sandbox: calling a tool is authority, like a directory or a
//! host. This module grants none by itself. A call's store reaches other tools
//! only when the host above hands it a [`ToolCalls`] (the calling session's,
//! which judges every call as that session's principal and role) and the
//! plugin's manifest allows it some (`limits.nested_calls`, 0 by default).
//! Each call the guest makes counts against that cap; past it, or with no
//! [`ToolCalls`] at all, the guest gets a `call-failure` that says which
//! manifest key to change, never a trap. What a nested call is (admitted,
//! judged, budgeted, logged with its parent) is the host's business: this
//! crate has no session log.

use std::sync::Arc;

use crate::bindings::code::glovebox::plugin::tools::{CallFailure, Host, OfferedTool};
use crate::sandbox::CallState;

/// The kind of failure of a call past the run's `limits.nested_calls`, or
/// made by a plugin allowed none.
pub const NESTED_LIMIT: &str = "nested_limit";

/// Calls of other tools on behalf of one call, as the host above makes them.
#[async_trait::async_trait]
pub trait ToolCalls: Send + Sync {
    /// The tools the calling session may call now.
    async fn list(&self) -> Vec<Offered>;
    /// Calls `tool` with `input` as a call of the calling session.
    async fn call(&self, tool: String, input: String) -> Result<String, Failure>;
}

/// A tool a guest may call (the WIT `offered-tool`).
#[derive(Clone, Debug, PartialEq)]
pub struct Offered {
    pub name: String,
    pub description: String,
    pub input_schema: String,
    pub read_only: bool,
    pub destructive: bool,
}

/// Why a nested call returned no result (the WIT `call-failure`).
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The host's stable kind (`CallError::kind`, or [`NESTED_LIMIT`], or `session`).
    pub kind: String,
    pub message: String,
    pub alternatives: Vec<String>,
    pub approval_id: Option<String>,
}

impl Failure {
    /// A failure of `kind` with only a message.
    pub fn new(kind: &str, message: impl Into<String>) -> Failure {
        Failure {
            kind: kind.to_string(),
            message: message.into(),
            alternatives: Vec::new(),
            approval_id: None,
        }
    }
}

/// What one call's store may do through the `tools` import.
#[derive(Default)]
pub struct Nested {
    /// The plugin making the calls, for messages.
    plugin: Arc<str>,
    calls: Option<Arc<dyn ToolCalls>>,
    /// `limits.nested_calls` of the plugin.
    cap: u32,
    /// Calls made so far in this run.
    made: u32,
}

impl Nested {
    /// Calls through `calls` (none without), at most `cap` of them in this run.
    pub fn new(plugin: &str, calls: Option<Arc<dyn ToolCalls>>, cap: u32) -> Nested {
        Nested {
            plugin: Arc::from(plugin),
            calls,
            cap,
            made: 0,
        }
    }

    /// The calls to make the next one through, or why it may not be made.
    fn permit(&self) -> Result<Arc<dyn ToolCalls>, Failure> {
        let plugin = if self.plugin.is_empty() {
            "this plugin"
        } else {
            &self.plugin
        };
        let calls = match (&self.calls, self.cap) {
            (Some(calls), 1..) => calls.clone(),
            _ => {
                return Err(Failure::new(
                    NESTED_LIMIT,
                    format!(
                        "plugin `{plugin}` may not call tools here: the operator allows it by setting `limits.nested_calls` in its manifest (calls made outside a session never may)"
                    ),
                ));
            }
        };
        if self.made > self.cap {
            return Err(Failure::new(
                NESTED_LIMIT,
                format!(
                    "this run already made its {} tool calls (`limits.nested_calls` of plugin `{plugin}`): do the rest in another call, or ask the operator to raise the limit",
                    self.cap
                ),
            ));
        }
        Ok(calls)
    }
}

impl Host for CallState {
    async fn list_tools(&mut self) -> Vec<OfferedTool> {
        // A plugin allowed no calls may call nothing.
        let Some(calls) = self.tools.calls.clone().filter(|_| self.tools.cap > 0) else {
            return Vec::new();
        };
        calls
            .list()
            .await
            .into_iter()
            .map(|o| OfferedTool {
                name: o.name,
                description: o.description,
                input_schema: o.input_schema,
                read_only: o.read_only,
                destructive: o.destructive,
            })
            .collect()
    }

    async fn call(&mut self, tool: String, input: String) -> Result<String, CallFailure> {
        self.tools.made = self.tools.made.saturating_add(1);
        let outcome = match self.tools.permit() {
            Ok(calls) => calls.call(tool, input).await,
            Err(refused) => Err(refused),
        };
        outcome.map_err(|f| CallFailure {
            kind: f.kind,
            message: f.message,
            alternatives: f.alternatives,
            approval_id: f.approval_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;

    #[async_trait::async_trait]
    impl ToolCalls for Echo {
        async fn list(&self) -> Vec<Offered> {
            Vec::new()
        }
        async fn call(&self, tool: String, input: String) -> Result<String, Failure> {
            Ok(format!("{tool}:{input}"))
        }
    }

    #[test]
    fn a_plugin_given_no_calls_is_refused_naming_the_key() {
        let nested = Nested::default();
        let refused = nested.permit().err().expect("refused");
        assert_eq!(refused.kind, NESTED_LIMIT);
        assert!(
            refused.message.contains("`limits.nested_calls`"),
            "{refused:?}"
        );
        let zero = Nested::new("code-python", Some(Arc::new(Echo)), 0);
        assert!(
            zero.permit()
                .err()
                .unwrap()
                .message
                .contains("`code-python`")
        );
    }

    #[test]
    fn the_cap_counts_calls_made() {
        let mut nested = Nested::new("code-python", Some(Arc::new(Echo)), 2);
        for _ in 0..2 {
            nested.made += 1;
            assert!(nested.permit().is_ok());
        }
        nested.made += 1;
        let refused = nested.permit().err().expect("the third is refused");
        assert!(refused.message.contains("its 2 tool calls"), "{refused:?}");
    }
}
