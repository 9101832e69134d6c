//! `glovebox session list`: sessions by filter, a parent's children
//! (`--children`), or those with active blocker flags (`--blocked`).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use glovebox::Sessions;
use glovebox::session::{Role, SessionFilter, SessionInfo, SessionStatus};

use crate::output::print_json;

// The flags of `session list` (its help is the variant's, in `sessions.rs`).
#[derive(Args, serde::Serialize, serde::Deserialize)]
pub struct ListArgs {
    #[arg(long)]
    status: Option<SessionStatus>,
    /// Only sessions with this tag (repeatable: all must match).
    #[arg(long = "tag")]
    tags: Vec<String>,
    #[arg(long)]
    role: Option<Role>,
    #[arg(long)]
    project: Option<String>,
    /// Only the sessions of this principal (`local`: the command line's).
    #[arg(long)]
    owner: Option<String>,
    /// Only sessions with no activity for more than this many days.
    #[arg(long)]
    inactive_days: Option<u64>,
    /// Only sessions with active blocker flags, with their flags and
    /// escalation step.
    #[arg(long)]
    blocked: bool,
    /// The child sessions of this session instead (`session spawn`), with
    /// their status, outcome, carved budget and latest handoff to it.
    #[arg(long, value_name = "PARENT", conflicts_with_all = ["status", "tags", "role", "project", "owner", "inactive_days", "blocked"])]
    children: Option<String>,
    /// A page of sessions, newest first.
    #[command(flatten)]
    page: crate::paging::PageArgs,
    #[arg(long)]
    json: bool,
}

/// `session list`: the sessions, or a parent's children, as a table or JSON.
pub(crate) fn list(sessions: &Sessions, args: ListArgs) -> Result<ExitCode> {
    let ListArgs {
        status,
        tags,
        role,
        project,
        owner,
        inactive_days,
        blocked,
        children,
        page,
        json,
    } = args;
    let page = page.request();
    if let Some(parent) = children {
        let (children, next) = match sessions
            .scope(&crate::reach::operator())
            .children(&parent, &page)
        {
            Ok(page) => (page.items, page.next_cursor),
            Err(e) => return Ok(crate::session_refused(&e)),
        };
        crate::paging::print_next(next.as_deref());
        if json {
            print_json(&children)?;
        } else {
            if children.is_empty() {
                out!("`{parent}` has no children");
            }
            for c in &children {
                out!(
                    "{:38}  {:20}  {:12}  {:10}  {:12}  {}",
                    c.id,
                    c.name.as_deref().unwrap_or("-"),
                    c.role.to_string(),
                    c.status.to_string(),
                    c.outcome.map_or_else(|| "-".to_string(), |o| o.to_string()),
                    c.handoff.as_ref().map_or_else(
                        || "-".to_string(),
                        |h| format!("{}: {}", h.handoff.kind, h.handoff.objective)
                    )
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let filtered = status.is_some()
        || !tags.is_empty()
        || role.is_some()
        || project.is_some()
        || owner.is_some()
        || inactive_days.is_some();
    let filter = SessionFilter {
        status,
        tags,
        role,
        project,
        inactive_for: inactive_days.map(|d| Duration::from_secs(d * 86_400)),
        owner,
    };
    let (list, next) = match sessions.list(&filter, &page) {
        Ok(page) => (page.items, page.next_cursor),
        Err(e) => return Ok(crate::session_refused(&e)),
    };
    crate::paging::print_next(next.as_deref());
    if blocked {
        return list_blocked(sessions, &list, json);
    }
    if json {
        print_json(&list)?;
    } else {
        if list.is_empty() {
            out!(
                "{}",
                if filtered {
                    "no sessions match the filter"
                } else {
                    "no sessions in this data dir"
                }
            );
        }
        for s in &list {
            out!(
                "{:38}  {:20}  {:12}  {:10}  {:16}  {}",
                s.header.id,
                s.header.name.as_deref().unwrap_or("-"),
                s.header.role.to_string(),
                s.header.status.to_string(),
                s.header.project,
                s.header.tags.join(",")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `session list --blocked`: the listed sessions with active blocker flags,
/// each with its escalation step and flags (most severe first).
fn list_blocked(sessions: &Sessions, list: &[SessionInfo], json: bool) -> Result<ExitCode> {
    let mut blocked = Vec::new();
    for info in list {
        let state = match sessions.show(&info.header.id) {
            Ok(state) => state,
            Err(e) => return Ok(crate::session_refused(&e)),
        };
        if !state.watch.flags.is_empty() {
            blocked.push(state);
        }
    }
    if json {
        let rows: Vec<_> = blocked
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.header.id,
                    "name": s.header.name,
                    "role": s.header.role,
                    "status": s.header.status,
                    "project": s.header.project,
                    "owner": s.owner_name(),
                    "escalation": s.watch.escalation,
                    "flags": s.watch.flags,
                })
            })
            .collect();
        print_json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    for s in &blocked {
        let mut flags: Vec<_> = s.watch.flags.iter().collect();
        flags.sort_by_key(|(rule, f)| (std::cmp::Reverse(f.severity), rule.as_str()));
        let flags: Vec<String> = flags
            .iter()
            .map(|(rule, f)| format!("{rule}:{}", f.severity))
            .collect();
        out!(
            "{:38}  {:20}  {:10}  {:8}  {}",
            s.header.id,
            s.header.name.as_deref().unwrap_or("-"),
            s.header.status.to_string(),
            s.watch.escalation.to_string(),
            flags.join(",")
        );
        if let Some((_, top)) = s.watch.flags.iter().max_by_key(|(_, f)| f.severity) {
            out!("    {}; {}", top.reason, top.suggested_action);
        }
    }
    Ok(ExitCode::SUCCESS)
}
