//! `rescues.list`: every rescue, the latest opened first, a page at a time
//! (`glovebox rescue list`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::paging::paged_args;
use super::{Audience, Operation, OperationError, Route};
use crate::page::Page;
use crate::rescue::Rescue;
use crate::scope::Scope;

pub struct ListRescues;

paged_args!(
    #[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ListRescuesArgs paging "Rescues" {}
);

impl Operation for ListRescues {
    const NAME: &'static str = "rescues.list";
    const SUMMARY: &'static str = "Every rescue, the latest opened first, a page at a time.";
    const DESCRIPTION: &'static str = "Each with its session, the call it concerns, the flags active when it was opened, its assignee, diagnosis, injections and outcome. Open and closed ones alike.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::get("/rescues"));
    const RUNS_TOOLS: bool = false;
    type Args = ListRescuesArgs;
    type Output = Page<Rescue>;

    async fn run(scope: Scope<'_>, args: ListRescuesArgs) -> Result<Page<Rescue>, OperationError> {
        let page = super::page_request(args.limit, args.cursor)?;
        Ok(scope.rescues(move |r| r.list(&page)).await?)
    }
}
