//! `glovebox approvals`, `approve` and `deny`, and how the command line
//! shows an approval (threat 55). The gateway renders it (`Host::show_approval`: what matters first, every value whole or a
//! preview with the SHA-256, every invisible character marked); this file
//! only lays it out for a terminal, and prints an input exactly for
//! `--input` (to save it and check its SHA-256).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use glovebox::approvals::Approval;
use glovebox::operations::{self, Deny, DenyArgs, ListApprovals, ListApprovalsArgs};
use glovebox::shown::ShownApproval;

use crate::output::print_json;

/// Where a terminal gets the whole input of approval `id`.
fn whole_at(id: &str) -> String {
    format!(
        "`glovebox approvals --input {id} > input.json` writes it exactly (check it with `sha256sum input.json`)"
    )
}

/// One approval, as a listing shows it: a heading line, then its input.
pub(crate) fn print(shown: &ShownApproval) -> Result<()> {
    out!(
        "{}  {:?}  session {}  {}  ({}: {})",
        shown.id,
        shown.status,
        shown.session_words(),
        shown.tool,
        shown.hook,
        shown.reason
    );
    for line in shown.input_lines(&whole_at(&shown.id)) {
        out!("    {line}");
    }
    Ok(())
}

/// What was approved, printed before the call's report.
pub(crate) fn print_approved(shown: &ShownApproval) -> Result<()> {
    err!(
        "approved {}: {} in session {} ran with",
        shown.id,
        shown.tool,
        shown.session_words()
    );
    for line in shown.input_lines(&whole_at(&shown.id)) {
        err!("    {line}");
    }
    Ok(())
}

/// `glovebox approvals --input ID`: the approval's input exactly as the tool
/// gets it (no newline added), so that its SHA-256 is the recorded one; a
/// secret's value in it is masked (threat 60), and then a note says the
/// SHA-256 differs.
pub(crate) async fn print_input(config: &Path, id: &str) -> Result<ExitCode> {
    let gateway = crate::reach::gateway(config).await?;
    let approval: Approval = match gateway.ledger().approvals.get(id) {
        Ok(a) => a,
        Err(e) => return Ok(crate::session_refused(&e)),
    };
    let config = gateway.host().config().clone();
    let shown = config.secrets.mask(&approval.input);
    if shown != approval.input.as_str() {
        err!(
            "note: the input carries a secret's value, shown masked as [secret:NAME]: its SHA-256 is not the recorded {}",
            approval.input_hash
        );
    }
    crate::output::write_raw(&shown)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn list(
    config: &Path,
    all: bool,
    json: bool,
    page: &crate::paging::PageArgs,
) -> Result<ExitCode> {
    // The gateway, not the store alone: an input is shown in its tool's
    // schema order.
    let gateway = crate::reach::gateway(config).await?;
    let args = ListApprovalsArgs {
        all,
        limit: page.limit,
        cursor: page.cursor.clone(),
    };
    let operator = crate::reach::operator();
    let (list, next) = match operations::run::<ListApprovals>(gateway.scope(&operator), args).await
    {
        Ok(p) => (p.items, p.next_cursor),
        Err(e) => return Ok(crate::operation_refused(&e)),
    };
    if json {
        print_json(&list)?;
    } else if list.is_empty() {
        out!("no pending approvals");
    } else {
        let host = gateway.host();
        for a in &list {
            print(&host.show_approval(a))?;
        }
    }
    crate::paging::print_next(next.as_deref());
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn approve(config: &Path, id: &str) -> Result<ExitCode> {
    let gateway = crate::reach::gateway(config).await?;
    let shown = gateway
        .ledger()
        .approvals
        .get(id)
        .map(|a| gateway.host().show_approval(&a));
    match gateway
        .scope(&crate::reach::operator())
        .approvals()
        .approve(id)
        .await
    {
        Ok(report) => {
            if let Ok(shown) = &shown {
                print_approved(shown)?;
            }
            crate::print_report(&report, false)
        }
        Err(e) => Ok(crate::session_refused(&e)),
    }
}

pub(crate) async fn deny(config: &Path, id: &str, reason: &str) -> Result<ExitCode> {
    let args = DenyArgs {
        id: id.to_string(),
        reason: reason.to_string(),
    };
    match crate::operate::run::<Deny>(config, args).await? {
        Ok(a) => {
            out!(
                "denied {} ({} in session {}): {reason}",
                a.id,
                a.tool,
                a.session_name.as_deref().unwrap_or(&a.session)
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::operation_refused(&e)),
    }
}
