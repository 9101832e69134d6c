//! Code mode: the calls a tool makes of other tools from inside its run (the
//! `tools` import of `wit/plugin.wit`; the Python and JavaScript runners'
//! `tools.call`).
//!
//! Why each is a whole call of the session: a script must be able to do
//! nothing its agent could not. So a nested call goes through the same
//! [`Scope::call`](crate::scope::Scope::call) an MCP request takes, as the
//! principal that made the outer call, in its session: admitted and checked
//! against the tool's schema, offered (toolsets, read-only), judged by the
//! hook chain with the session's role, budgeted, run in fresh hands, logged
//! (its `call_requested` names the run that made it: `parent_call`) and
//! followed by its `[[verify]]` checks. A hook's ask makes an approval and
//! fails the nested call at once with its id (the script decides what to do;
//! the session waits for the approval as for any call), or, with
//! `[approvals] nested = "wait"`, holds the run until a human answers (up to
//! `[approvals] wait`, within the run's deadline): the script then gets the
//! call's result or the denial, as an agent calling directly would.
//!
//! What bounds a run: the plugin's `limits.nested_calls` (counted in the
//! sandbox, `sandbox::tools`), its deadline (the nested calls run inside it),
//! and its `limits.nested_depth`: at 1, the default, a runner may not call a
//! tool whose plugin may call tools itself (itself, or another runner).
//!
//! A nested call's outcome is written without waiting for the disk: its
//! result goes to the run, not to an agent, and the run's own outcome,
//! written durably before the agent hears of it, makes it durable
//! (`pipeline/settle.rs`). So a script's calls of quick tools cost no flush
//! each; a tool that may not run before its record is durable still waits
//! for that (`pipeline/record.rs`).
//!
//! A nested call runs in a task of its own that runs to its end even when
//! the run that made it stops (its deadline, a cancelled job): dropped
//! halfway, it would leave its session with a call that never finished.
//! Instead the run's end cancels it, and it is logged `cancelled`.

use std::sync::Arc;

use glovebox_runtime::sandbox::tools::{Failure, NESTED_LIMIT, Offered, ToolCalls};

use crate::admitted::Admitted;
use crate::call::{CallContext, CallReport};
use crate::error::CallError;
use crate::gateway::Gateway;
use crate::manifest::{NestedApproval, Principal};
use crate::nesting::{depth, made_by};
use crate::plugin::LoadedPlugin;
use crate::settled::{Settled, denied_call};

/// The calls one run of `plugin` may make, in session `session`, as `caller`
/// (see the module docs). `None` when the plugin may make none.
pub(crate) fn for_run(
    gateway: &Gateway,
    caller: &Principal,
    ctx: &CallContext,
    plugin: &LoadedPlugin,
) -> Option<Arc<dyn ToolCalls>> {
    if plugin.manifest.limits.nested_calls == 0 {
        return None;
    }
    let session = ctx.session()?.to_string();
    Some(Arc::new(SessionCalls {
        gateway: gateway.clone(),
        caller: caller.clone(),
        session,
        parent: ctx.call_id.clone(),
        depth: depth(),
        plugin: plugin.manifest.name.clone(),
        max_depth: plugin.manifest.limits.nested_depth,
    }))
}

/// The nested calls of one run.
struct SessionCalls {
    gateway: Gateway,
    caller: Principal,
    /// The session's id.
    session: String,
    /// The run's own call id.
    parent: String,
    /// The run's depth (0: called from outside).
    depth: u32,
    /// The plugin running, and its `limits.nested_depth`.
    plugin: String,
    max_depth: u32,
}

impl SessionCalls {
    /// Why this run may not call a tool of `target`: it may call tools
    /// itself, and a call at that depth may not (`limits.nested_depth`).
    fn too_deep(&self, tool: &str, target: &LoadedPlugin) -> Option<Failure> {
        let nests = target.manifest.limits.nested_calls > 0;
        (nests && self.depth + 1 >= self.max_depth).then(|| {
            Failure::new(
                NESTED_LIMIT,
                format!(
                    "`{tool}` may call tools itself, and a run of plugin `{}` may not call such a tool (its `limits.nested_depth` is {}): call it directly, or ask the operator to raise that limit",
                    self.plugin, self.max_depth
                ),
            )
        })
    }
}

#[async_trait::async_trait]
impl ToolCalls for SessionCalls {
    async fn list(&self) -> Vec<Offered> {
        let Ok(state) = self
            .gateway
            .scope(&self.caller)
            .session(&self.session)
            .await
        else {
            return Vec::new();
        };
        let host = self.gateway.host();
        let offer = host.offer_in(&state);
        host.all_tools()
            .into_iter()
            .filter(|t| offer.check(t).is_ok())
            .filter(|t| {
                host.plugin_named(&t.plugin)
                    .is_some_and(|p| self.too_deep(&t.name, p).is_none())
            })
            .map(|t| Offered {
                name: t.name.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.to_string(),
                read_only: t.read_only,
                destructive: t.destructive,
            })
            .collect()
    }

    async fn call(&self, tool: String, input: String) -> Result<String, Failure> {
        let admitted = self.gateway.admit(&tool, &input).map_err(|e| failure(&e))?;
        if let Some(refused) = self.too_deep(admitted.name(), admitted.plugin()) {
            return Err(refused);
        }
        let report = self.run(admitted).await?;
        match report.outcome {
            Ok(value) => Ok(value.to_string()),
            Err(asked @ CallError::AwaitingApproval { .. }) if self.waits() => {
                self.answer_of(asked).await
            }
            Err(e) => Err(failure(&e)),
        }
    }
}

impl SessionCalls {
    /// Whether a nested call a hook asks about waits for the answer
    /// (`[approvals] nested = "wait"`, with a `wait` above zero).
    fn waits(&self) -> bool {
        let host = self.gateway.host();
        let approvals = &host.config().approvals;
        approvals.nested == NestedApproval::Wait && !approvals.wait.is_zero()
    }

    /// What the script gets of a call that awaits an approval (`asked`)
    /// once a human answered, or `asked` itself when none did within
    /// `[approvals] wait`. The run's deadline bounds the wait: the run ends,
    /// and this with it, and the approval stays pending.
    async fn answer_of(&self, asked: CallError) -> Result<String, Failure> {
        let CallError::AwaitingApproval { approval_id, .. } = &asked else {
            return Err(failure(&asked));
        };
        let within = self.gateway.host().config().approvals.wait;
        let settled = self.gateway.wait_for_approval(approval_id, within).await;
        match settled {
            Some(Settled::Ran(report)) => match report.outcome {
                Ok(value) => Ok(value.to_string()),
                Err(e) => Err(failure(&e)),
            },
            Some(Settled::RanElsewhere(approval)) => Err(Failure::new(
                "approved",
                format!(
                    "approval {} was approved and its call `{}` ran, but its result did not reach this run: read it in the session's log",
                    approval.id, approval.call_id
                ),
            )),
            Some(Settled::Denied(approval)) => Err(failure(&denied_call(&approval))),
            None => Err(failure(&asked)),
        }
    }
}

impl SessionCalls {
    /// Runs `call` in a task of its own, cancelled if this run stops
    /// waiting for it (see the module docs).
    async fn run(&self, call: Admitted) -> Result<CallReport, Failure> {
        let (stop, cancel) = tokio::sync::watch::channel(None);
        let _stop = StopOnDrop(stop);
        let (gateway, caller, session) = (
            self.gateway.clone(),
            self.caller.clone(),
            self.session.clone(),
        );
        let trace = crate::trace::current();
        let call = async move {
            let scope = gateway.scope(&caller);
            scope.call(&session, call, None, Some(cancel)).await
        };
        let call = made_by(
            self.parent.clone(),
            self.depth + 1,
            crate::trace::within(trace, call),
        );
        match crate::tasks::to_the_end(call).await {
            Ok(Ok(report)) => Ok(report),
            Ok(Err(refused)) => Err(Failure::new("session", refused.to_string())),
            Err(ended) => Err(Failure::new(
                "internal",
                format!("the call ended without a result: {ended}"),
            )),
        }
    }
}

/// Cancels a nested call when the run waiting for it goes.
struct StopOnDrop(tokio::sync::watch::Sender<Option<Arc<str>>>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.send_if_modified(|reason| {
            reason.get_or_insert_with(|| {
                Arc::from(
                    "the run that made this call ended before it (its deadline, or it was stopped)",
                )
            });
            true
        });
    }
}

/// The kind of failure of a call the session's budget refused (a denial
/// by the budget, told apart for the script).
const BUDGET: &str = "budget";

/// What a guest reads of a call that returned no result.
fn failure(e: &CallError) -> Failure {
    let mut failure = Failure::new(e.kind(), e.to_string());
    match e {
        CallError::Denied {
            hook, alternatives, ..
        } => {
            // The session's budget denies as a hook of its own.
            if hook == crate::budget::BUDGET_HOOK {
                failure.kind = BUDGET.to_string();
            }
            // The alternatives come apart from the message.
            failure.message = e.headline();
            failure.alternatives = alternatives.clone();
        }
        CallError::AwaitingApproval { approval_id, .. } => {
            failure.approval_id = Some(approval_id.clone());
        }
        _ => {}
    }
    failure
}
