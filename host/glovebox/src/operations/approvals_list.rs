//! `approvals.list`: the approvals waiting for a human, oldest first (with
//! `all`, the settled ones too), a page at a time.

use schemars::JsonSchema;
use serde::Deserialize;

use super::paging::paged_args;
use super::{Audience, Operation, OperationError, Route, page_request};
use crate::approvals::Approval;
use crate::page::Page;
use crate::scope::Scope;
use crate::tasks::ledger_work;

pub struct ListApprovals;

paged_args!(
    #[derive(Debug, Default, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ListApprovalsArgs paging "Approvals" {
        /// The settled approvals too, not only the pending ones.
        #[serde(default)]
        pub all: bool,
    }
);

impl Operation for ListApprovals {
    const NAME: &'static str = "approvals.list";
    const SUMMARY: &'static str = "The approvals waiting for a human, a page at a time.";
    const DESCRIPTION: &'static str = "Each with the call it holds (tool, exact input, a secret's value in it masked, and its SHA-256), the hook and rule that asked, and its status. Pending ones oldest first; with `all`, the settled ones after them.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::get("/approvals"));
    type Args = ListApprovalsArgs;
    type Output = Page<Approval>;

    async fn run(
        scope: Scope<'_>,
        args: ListApprovalsArgs,
    ) -> Result<Page<Approval>, OperationError> {
        let approvals = scope.gateway().ledger().approvals.clone();
        let page = page_request(args.limit, args.cursor)?;
        let mut page = ledger_work(move || approvals.page(args.all, &page)).await?;
        page.items = page
            .items
            .into_iter()
            .map(|a| super::approvals_show::masked(&scope, a))
            .collect();
        Ok(page)
    }
}
