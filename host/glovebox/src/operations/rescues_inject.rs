//! `rescues.inject`: hands a rescued session a description, files with
//! their content and spec changes; its next resume returns them, and an
//! agent connected to it is told at once (`glovebox rescue inject`).
//!
//! The files come with their content: the command line reads them on the
//! operator's side, the dashboard's form and the HTTP API take it as text.
//! A file given without content is handed over as a path alone.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{ID_MAX, MEMORY_TEXT_MAX, TEXT_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::rescue::{HandedFile, Handover, Rescue};
use crate::scope::Scope;

pub struct InjectRescue;

/// The most files, and spec changes, one request may give (the ledger holds
/// an injection to fewer files, and says so).
const PARTS_MAX: usize = 1024;

/// A file an injection hands over.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InjectedFile {
    /// Its path, as the agent sees it named.
    #[schemars(length(max = TEXT_MAX))]
    pub path: String,
    /// Its content (UTF-8 text, at most 32 KiB); absent: the path alone.
    #[serde(default)]
    #[schemars(length(max = MEMORY_TEXT_MAX))]
    pub content: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InjectRescueArgs {
    /// The rescue's id (`r-…`).
    #[schemars(length(max = ID_MAX))]
    pub id: String,
    /// What you found and want the agent to know.
    #[serde(default)]
    #[schemars(length(max = TEXT_MAX))]
    pub description: Option<String>,
    /// Files for the agent to read (at most 16, 128 KiB of content in all).
    #[serde(default)]
    #[schemars(length(max = PARTS_MAX))]
    pub files: Vec<InjectedFile>,
    /// Changes to the task's specification.
    #[serde(default)]
    #[schemars(length(max = PARTS_MAX), inner(length(max = TEXT_MAX)))]
    pub spec_changes: Vec<String>,
}

impl Operation for InjectRescue {
    const NAME: &'static str = "rescues.inject";
    const SUMMARY: &'static str =
        "Hands a rescued session a description, files with their content and spec changes.";
    const DESCRIPTION: &'static str = "Appended to the session's log (each file's content with its SHA-256) and returned by its next resume; an agent connected to it is told at once. At least one part is needed, and every bound is checked before anything is written. A resolved rescue is refused. Returns the rescue.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/rescues/{id}/inject"));
    const RUNS_TOOLS: bool = false;
    type Args = InjectRescueArgs;
    type Output = Rescue;

    async fn run(scope: Scope<'_>, args: InjectRescueArgs) -> Result<Rescue, OperationError> {
        let handover = Handover {
            description: args.description,
            files: args
                .files
                .into_iter()
                .map(|f| HandedFile {
                    path: f.path,
                    content: f.content,
                })
                .collect(),
            spec_changes: args.spec_changes,
        };
        Ok(scope.rescues(move |r| r.inject(&args.id, handover)).await?)
    }
}
