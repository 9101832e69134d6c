//! What a hook is asked ([`HookCall`]) and what the chain of hooks answers
//! ([`Decision`]), for [`Harness::hook_request`](crate::Harness::hook_request).

use glovebox::hooks::{ChainOutcome, HookHttp, HookRequest, Verdict};
use glovebox::session::Role;
use serde_json::Value;

/// The call a hook judges: the action (what its triggers match) and, with
/// defaults for the rest, the tool, role, input and flags of the call.
#[derive(Clone, Debug)]
pub struct HookCall {
    action: String,
    tool: String,
    role: Option<Role>,
    input: Value,
    destructive: bool,
    estimated_cost: f64,
    tags: Vec<String>,
    principal: String,
    project: Option<String>,
    http: Option<HookHttp>,
}

impl HookCall {
    /// A call with action `action` (`write:file`, `read:files:list`) of the
    /// tool `test.tool`, input `{}`, not destructive, cost 0, no tags.
    pub fn new(action: impl Into<String>) -> HookCall {
        HookCall {
            action: action.into(),
            tool: "test.tool".into(),
            role: None,
            input: Value::Object(Default::default()),
            destructive: false,
            estimated_cost: 0.0,
            tags: Vec::new(),
            principal: String::new(),
            project: None,
            http: None,
        }
    }

    /// The tool called, as `plugin.tool`.
    pub fn tool(mut self, tool: impl Into<String>) -> HookCall {
        self.tool = tool.into();
        self
    }

    /// The role of the calling session (default: the harness's session
    /// role, else `workagent`).
    pub fn role(mut self, role: Role) -> HookCall {
        self.role = Some(role);
        self
    }

    /// The call's input.
    pub fn input(mut self, input: Value) -> HookCall {
        self.input = input;
        self
    }

    /// Whether the tool is destructive.
    pub fn destructive(mut self, destructive: bool) -> HookCall {
        self.destructive = destructive;
        self
    }

    /// The call's estimated cost.
    pub fn estimated_cost(mut self, cost: f64) -> HookCall {
        self.estimated_cost = cost;
        self
    }

    /// A tag of the calling session.
    pub fn tag(mut self, tag: impl Into<String>) -> HookCall {
        self.tags.push(tag.into());
        self
    }

    /// The principal making the call (what a 0.2.0 hook sees as
    /// `principal`; default: empty).
    pub fn principal(mut self, principal: impl Into<String>) -> HookCall {
        self.principal = principal.into();
        self
    }

    /// The calling session's project (default: none).
    pub fn project(mut self, project: impl Into<String>) -> HookCall {
        self.project = Some(project.into());
        self
    }

    /// The HTTP request the call makes (what a 0.2.0 hook sees as `http`;
    /// default: none), as a tool that declares one would give it.
    pub fn http(mut self, http: HookHttp) -> HookCall {
        self.http = Some(http);
        self
    }

    /// The request the host sends a hook.
    pub(crate) fn into_request(self, role: Role, session: &str) -> HookRequest {
        HookRequest {
            call_id: next_call_id(),
            tool: self.tool,
            action: self.action,
            role: self.role.unwrap_or(role).as_str().into(),
            session: session.into(),
            input: self.input.to_string(),
            estimated_cost: self.estimated_cost,
            destructive: self.destructive,
            tags: self.tags,
            principal: self.principal,
            project: self.project,
            http: self.http,
        }
    }
}

/// What the hooks decided about a call.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// No hook's triggers cover the call's action: none was asked.
    NotConsulted,
    /// Every hook asked allowed it.
    Allow,
    /// A hook denied it: which, why, and what to do instead.
    Deny {
        hook: String,
        reason: String,
        alternatives: Vec<String>,
    },
    /// A hook wants a human to approve it, and none denied it.
    Ask { hook: String, reason: String },
}

impl Decision {
    pub(crate) fn from_outcome(outcome: ChainOutcome) -> Decision {
        if outcome.decisions.is_empty() {
            return Decision::NotConsulted;
        }
        match outcome.verdict {
            Verdict::Allow => Decision::Allow,
            Verdict::Deny(d) => Decision::Deny {
                hook: d.hook,
                reason: d.reason.unwrap_or_default(),
                alternatives: d.alternatives,
            },
            Verdict::Ask(d) => Decision::Ask {
                hook: d.hook,
                reason: d.reason.unwrap_or_default(),
            },
        }
    }

    /// The reason and alternatives of a denial; panics, saying what was
    /// decided instead, on any other decision.
    pub fn expect_deny(self) -> (String, Vec<String>) {
        match self {
            Decision::Deny {
                reason,
                alternatives,
                ..
            } => (reason, alternatives),
            other => panic!("expected the hooks to deny the call, but: {other:?}"),
        }
    }

    /// The question of an ask; panics on any other decision.
    pub fn expect_ask(self) -> String {
        match self {
            Decision::Ask { reason, .. } => reason,
            other => panic!("expected the hooks to ask a human, but: {other:?}"),
        }
    }

    /// Panics unless the hooks allowed the call.
    pub fn expect_allow(self) {
        if self != Decision::Allow {
            panic!("expected the hooks to allow the call, but: {self:?}");
        }
    }
}

/// A call id of this process's own: a hook's decision applies to one call.
fn next_call_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("c-plugin-test-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
