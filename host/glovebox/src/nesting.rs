//! Which run made the call being made now: a task-local set for the length
//! of a nested call (`nested.rs`) and read where the call is recorded
//! (`pipeline/record.rs`: its `call_requested` names its `parent_call`;
//! `pipeline/settle.rs`: its outcome need not wait for the disk).
//!
//! Why a file of its own: the pipeline reads it and code mode sets it, and
//! code mode sits above the pipeline (its calls go back through a caller's
//! scope); what both need is this, below both.

use std::future::Future;

tokio::task_local! {
    /// The run a nested call was made by, while that call runs.
    static PARENT: Parent;
}

#[derive(Clone, Debug)]
struct Parent {
    call_id: String,
    /// How deep the nested call is: 1 for a call made by a call from outside.
    depth: u32,
}

/// The id of the call whose run made the call being made now, if one did
/// (recorded in its `call_requested` event).
pub(crate) fn parent_call() -> Option<String> {
    PARENT.try_with(|p| p.call_id.clone()).ok()
}

/// How deep the call being made now is: 0 for a call made from outside.
pub(crate) fn depth() -> u32 {
    PARENT.try_with(|p| p.depth).unwrap_or(0)
}

/// `call`, made by the run of call `parent` at depth `depth`: while it runs
/// (and every task it awaits in place), [`parent_call`] is `parent`.
pub(crate) fn made_by<F: Future>(
    parent: String,
    depth: u32,
    call: F,
) -> impl Future<Output = F::Output> {
    PARENT.scope(
        Parent {
            call_id: parent,
            depth,
        },
        call,
    )
}
