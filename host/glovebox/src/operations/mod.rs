//! Every operation defined once: its name, what it does, its arguments and
//! output (serde types with JSON Schemas), who may run it, the surfaces it is
//! served on, and `run` over the caller's [`Scope`]. The front ends (the
//! admin listener's HTTP API, the command line, the dashboard) do not write
//! an operation again: they find its [`Entry`] here, hand it the caller's
//! scope and the arguments as JSON, and show what comes back.
//!
//! Why one place: an operation written once per surface drifts (a flag the
//! MCP tool lacks, an error worded three ways, a check made at one edge and
//! not another). Here who may run it is decided once ([`Audience`], then the
//! scope's own rules), its errors have one kind and one wording
//! ([`OperationError`]), and its schemas are the ones every surface shows
//! (the HTTP API's OpenAPI document is made from [`all`]).
//!
//! Adding an operation is one new file in this folder (a type that
//! implements [`Operation`]) and one line in [`all`]. The files are named
//! for the operation.

mod approvals_approve;
mod approvals_deny;
mod approvals_list;
mod approvals_show;
mod calls_output;
mod context_search;
mod doctor;
mod doctor_score;
mod error;
mod files_list;
mod files_read;
mod jobs_cancel;
mod jobs_list;
mod jobs_show;
mod jobs_wait;
mod memory_approve;
mod memory_propose;
mod memory_reject;
mod memory_retire;
mod memory_search;
mod paging;
mod plugins_accept;
mod rescues_assign;
mod rescues_diagnose;
mod rescues_inject;
mod rescues_list;
mod rescues_open;
mod rescues_report;
mod rescues_resolve;
mod rescues_show;
mod schema;
mod sessions_flag;
mod sessions_list;
mod sessions_log;
mod sessions_note;
mod sessions_pause;
mod sessions_resume;
mod sessions_show;
mod sessions_status;
mod sessions_usage;
mod sessions_verdict;
mod sessions_wait;
pub mod sizes;
mod workspaces_abandon;
mod workspaces_list;
mod workspaces_merge;

use std::future::Future;
use std::pin::Pin;
use std::sync::{LazyLock, OnceLock};

use glovebox_input::limits::first_exceeded;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::scope::Scope;

pub use approvals_approve::{Approve, ApproveArgs, CallFailure, Ran};
pub use approvals_deny::{Deny, DenyArgs};
pub use approvals_list::{ListApprovals, ListApprovalsArgs};
pub use approvals_show::{ShowApproval, ShowApprovalArgs};
pub use calls_output::{CallOutput, CallOutputArgs};
pub use context_search::{ContextFound, SearchContext, SearchContextArgs};
pub use doctor::Doctor;
pub use doctor_score::{Compliance, DoctorScore, Weights};
pub use error::{ErrorClass, OperationError};
pub use files_list::{FileEntry, FileKind, FilesPage, ListFiles, ListFilesArgs};
pub use files_read::{Encoding, FileChunk, ReadFile, ReadFileArgs};
pub use jobs_cancel::{CancelJob, CancelJobArgs};
pub use jobs_list::{JobsPage, ListJobs, ListJobsArgs};
pub use jobs_show::{ShowJob, ShowJobArgs};
pub use jobs_wait::{WaitFor, WaitJobs, WaitJobsArgs};
pub use memory_approve::{ApproveMemory, ApproveMemoryArgs};
pub use memory_propose::{ProposeMemory, ProposeMemoryArgs, Proposed};
pub use memory_reject::{RejectMemory, RejectMemoryArgs};
pub use memory_retire::{RetireMemory, RetireMemoryArgs};
pub use memory_search::{MemoryFound, SearchMemory, SearchMemoryArgs};
pub use paging::page_request;
pub use plugins_accept::{AcceptPlugin, AcceptPluginArgs, AcceptedTool};
pub use rescues_assign::{AssignRescue, AssignRescueArgs};
pub use rescues_diagnose::{DiagnoseRescue, DiagnoseRescueArgs};
pub use rescues_inject::{InjectRescue, InjectRescueArgs, InjectedFile};
pub use rescues_list::{ListRescues, ListRescuesArgs};
pub use rescues_open::{OpenRescue, OpenRescueArgs};
pub use rescues_report::{RescueFigures, RescueFiguresArgs};
pub use rescues_resolve::{ResolveRescue, ResolveRescueArgs};
pub use rescues_show::{ShowRescue, ShowRescueArgs};
pub use schema::{as_clients_know_it, input_schema};
pub use sessions_flag::{FlagSession, FlagSessionArgs, FlagSessionOutput};
pub use sessions_list::{ListSessions, ListSessionsArgs};
pub use sessions_log::{LogPage, SessionLog, SessionLogArgs};
pub use sessions_note::{NoteSession, NoteSessionArgs};
pub use sessions_pause::{PauseSession, PauseSessionArgs};
pub use sessions_resume::{ResumeSession, ResumeSessionArgs};
pub use sessions_show::{ShowSession, ShowSessionArgs};
pub use sessions_status::{SessionStatus, SessionStatusArgs, SessionStatusOutput};
pub use sessions_usage::{ReportUsage, ReportUsageArgs, UsageLogged};
pub use sessions_verdict::{GiveVerdict, GiveVerdictArgs, VerdictWord};
pub use sessions_wait::{WaitChildren, WaitChildrenArgs};
pub use workspaces_abandon::{AbandonWorkspace, AbandonWorkspaceArgs};
pub use workspaces_list::{ListWorkspaces, ListWorkspacesArgs};
pub use workspaces_merge::{MergeWorkspace, MergeWorkspaceArgs};

/// Who may run an operation, before its scope's own rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    /// Operators only: it reads or changes what is every principal's.
    Operator,
    /// Any principal: the scope shows it its own (an operator sees all).
    Anyone,
}

/// An HTTP method of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Reads: the arguments come in the query string (and the path).
    Get,
    /// Changes: the arguments come as a JSON object in the body (and the path).
    Post,
}

/// Where the admin listener's HTTP API serves an operation: a method and a
/// path under `/api/v1`, whose `{name}` segments are arguments.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    pub method: Method,
    pub path: &'static str,
}

impl Route {
    pub const fn get(path: &'static str) -> Route {
        Route {
            method: Method::Get,
            path,
        }
    }

    pub const fn post(path: &'static str) -> Route {
        Route {
            method: Method::Post,
            path,
        }
    }

    /// The arguments the path carries (its `{name}` segments).
    pub fn path_arguments(&self) -> impl Iterator<Item = &'static str> {
        self.path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
    }
}

/// One operation (see the module docs).
pub trait Operation: Send + Sync + 'static {
    /// Its name: `family.verb` (`approvals.approve`).
    const NAME: &'static str;
    /// What it does, in one sentence.
    const SUMMARY: &'static str;
    /// What it does beyond the summary: what it changes, what it refuses.
    const DESCRIPTION: &'static str;
    const AUDIENCE: Audience;
    /// Where the HTTP API serves it.
    const HTTP: Option<Route>;
    /// The MCP tool agents call it by (`approval_status`), when it is one
    /// of the built-in tools; its input schema is [`Self::Args`]'.
    const MCP: Option<&'static str> = None;
    /// Whether it may run a tool (an approved call, a gate, a job). One
    /// that runs none (a rescue's record) is run, from the command line with
    /// no server, on a host without the config's plugins
    /// ([`Gateway::open_without_tools`](crate::Gateway::open_without_tools)),
    /// so a plugin that cannot load does not stop it.
    const RUNS_TOOLS: bool = true;
    /// Whether, with no session named, it acts in the session the caller's
    /// tool calls go to: over MCP, a connection bound to none first starts
    /// its default session, as a tool call would (a note or a usage report
    /// is about the work those calls do).
    const CALL_SESSION: bool = false;
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    type Output: Serialize + JsonSchema + Send + 'static;

    /// Runs it on behalf of the scope's caller.
    fn run<'g>(
        scope: Scope<'g>,
        args: Self::Args,
    ) -> impl Future<Output = Result<Self::Output, OperationError>> + Send + 'g;
}

type Running<'g> = Pin<Box<dyn Future<Output = Result<Value, OperationError>> + Send + 'g>>;

/// An operation as the front ends see it: its description, its schemas, and
/// a call that takes and gives JSON.
pub struct Entry {
    pub name: &'static str,
    pub summary: &'static str,
    pub description: &'static str,
    pub audience: Audience,
    pub http: Option<Route>,
    /// The MCP tool it is served as, if any.
    pub mcp: Option<&'static str>,
    /// Whether it may run a tool ([`Operation::RUNS_TOOLS`]).
    pub runs_tools: bool,
    /// Whether it acts in the caller's call session ([`Operation::CALL_SESSION`]).
    pub call_session: bool,
    args: fn(&mut SchemaGenerator) -> Schema,
    output: fn(&mut SchemaGenerator) -> Schema,
    call: for<'g> fn(Scope<'g>, &'g str, Value) -> Running<'g>,
    /// The arguments' schema, compiled on the first call: the limits it
    /// declares are enforced before the arguments are parsed.
    limits: OnceLock<Option<jsonschema::Validator>>,
}

impl Entry {
    fn of<O: Operation>() -> Entry {
        Entry {
            name: O::NAME,
            summary: O::SUMMARY,
            description: O::DESCRIPTION,
            audience: O::AUDIENCE,
            http: O::HTTP,
            mcp: O::MCP,
            runs_tools: O::RUNS_TOOLS,
            call_session: O::CALL_SESSION,
            args: |generator| generator.subschema_for::<O::Args>(),
            output: |generator| generator.subschema_for::<O::Output>(),
            call: |scope, called, args| Box::pin(call::<O>(scope, called, args)),
            limits: OnceLock::new(),
        }
    }

    /// The schema of its arguments (an object) in `generator`: a reference
    /// into the generator's definitions.
    pub fn args_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        (self.args)(generator)
    }

    /// The object schema of its arguments itself (its `properties`, its
    /// `required`), looked up in `generator`'s definitions: what a surface
    /// lays out argument by argument (the HTTP API's parameters).
    pub fn args_object(&self, generator: &mut SchemaGenerator) -> Value {
        let reference = self.args_schema(generator);
        let name = reference
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.rsplit('/').next())
            .unwrap_or_default()
            .to_string();
        generator
            .definitions()
            .get(&name)
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"}))
    }

    /// The schema of its arguments, whole and as clients know it: its MCP
    /// tool's input schema (see [`schema::inlined`]).
    pub fn input_schema(&self) -> serde_json::Map<String, Value> {
        schema::inlined(self.args)
    }

    /// The schema of its output in `generator`.
    pub fn output_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        (self.output)(generator)
    }

    /// Runs it for the scope's caller with `args` (a JSON object): the
    /// output as JSON, or why not. Arguments outside a limit its schema
    /// declares (a length, a range) or that do not fit it are refused
    /// naming the field, and nothing runs.
    pub async fn call(&self, scope: Scope<'_>, args: Value) -> Result<Value, OperationError> {
        self.call_as(self.name, scope, args).await
    }

    /// [`Self::call`], for a caller who knows it as `called` (its MCP
    /// tool's name): bad arguments are refused in those words.
    pub async fn call_as(
        &self,
        called: &str,
        scope: Scope<'_>,
        args: Value,
    ) -> Result<Value, OperationError> {
        let limits = self.limits.get_or_init(|| {
            let mut generator = SchemaSettings::draft2020_12()
                .with(|s| s.inline_subschemas = true)
                .into_generator();
            let schema = (self.args)(&mut generator);
            jsonschema::validator_for(&schema.to_value()).ok()
        });
        if let Some(why) = limits.as_ref().and_then(|v| first_exceeded(v, &args)) {
            return Err(bad_arguments(called, why));
        }
        (self.call)(scope, called, args).await
    }
}

/// Arguments of `called` that do not fit it, in the words every surface
/// uses.
fn bad_arguments(called: &str, why: impl std::fmt::Display) -> OperationError {
    OperationError::invalid(format!("invalid arguments for `{called}`: {why}"))
}

async fn call<O: Operation>(
    scope: Scope<'_>,
    called: &str,
    args: Value,
) -> Result<Value, OperationError> {
    let args: O::Args = serde_path_to_error::deserialize(args).map_err(|e| {
        let field = e.path().to_string();
        let e = e.into_inner();
        match field.as_str() {
            "." => bad_arguments(called, e),
            _ => bad_arguments(called, format!("`{field}`: {e}")),
        }
    })?;
    let output = run::<O>(scope, args).await?;
    serde_json::to_value(output).map_err(|e| {
        OperationError::failed(format!(
            "`{}` made an output that is not JSON: {e}",
            O::NAME
        ))
    })
}

/// Runs operation `O` for the scope's caller with typed arguments: what a
/// front end in Rust calls (the command line, the dashboard) to get the
/// typed output it prints. Who may run it is checked here, as for
/// [`Entry::call`].
pub async fn run<O: Operation>(
    scope: Scope<'_>,
    args: O::Args,
) -> Result<O::Output, OperationError> {
    if O::AUDIENCE == Audience::Operator && !scope.caller().is_operator() {
        return Err(OperationError::not_allowed(format!(
            "`{}` is an operator's operation, and {} is not an operator",
            O::NAME,
            scope.caller()
        )));
    }
    O::run(scope, args).await
}

/// The name a caller knows `O` by: its MCP tool's, when it is one (an
/// agent's words name the tool it called), else its own.
fn known_as<O: Operation>() -> &'static str {
    O::MCP.unwrap_or(O::NAME)
}

/// The session the scope's caller acts from ([`Scope::acting_from`]), or
/// the refusal of operation `O`, which needs one.
pub(crate) fn bound_session<'g, O: Operation>(scope: Scope<'g>) -> Result<&'g str, OperationError> {
    scope.bound().ok_or_else(no_session::<O>)
}

/// The session operation `O` acts on: `named`, else the one the caller
/// acts from, within the caller's reach ([`Scope::target`]); or the
/// refusal when there is neither.
pub(crate) async fn target_session<O: Operation>(
    scope: Scope<'_>,
    named: Option<String>,
) -> Result<String, OperationError> {
    scope.target(named).await?.ok_or_else(no_session::<O>)
}

fn no_session<O: Operation>() -> OperationError {
    OperationError::new(
        ErrorClass::Conflict,
        "no_session",
        format!(
            "`{}` needs a session: this connection is bound to none; call `session_start` or `session_resume` first",
            known_as::<O>()
        ),
    )
}

/// The jobs runner on behalf of the scope's caller, or the refusal of
/// operation `O` where the surface has none.
pub(crate) fn job_runner<'g, O: Operation>(
    scope: Scope<'g>,
) -> Result<crate::scope::JobScope<'g>, OperationError> {
    scope.jobs().ok_or_else(|| {
        OperationError::new(
            ErrorClass::Unavailable,
            "no_job_runner",
            format!(
                "`{}` needs the jobs runner, which this surface does not have: run it on a server (`glovebox serve`)",
                known_as::<O>()
            ),
        )
    })
}

/// Every operation, by name.
pub fn all() -> &'static [Entry] {
    static ALL: LazyLock<Vec<Entry>> = LazyLock::new(|| {
        vec![
            Entry::of::<ListApprovals>(),
            Entry::of::<ShowApproval>(),
            Entry::of::<Approve>(),
            Entry::of::<Deny>(),
            Entry::of::<ListSessions>(),
            Entry::of::<ShowSession>(),
            Entry::of::<ListFiles>(),
            Entry::of::<ReadFile>(),
            Entry::of::<CallOutput>(),
            Entry::of::<PauseSession>(),
            Entry::of::<FlagSession>(),
            Entry::of::<NoteSession>(),
            Entry::of::<ReportUsage>(),
            Entry::of::<ResumeSession>(),
            Entry::of::<ApproveMemory>(),
            Entry::of::<RejectMemory>(),
            Entry::of::<RetireMemory>(),
            Entry::of::<ProposeMemory>(),
            Entry::of::<SearchMemory>(),
            Entry::of::<SearchContext>(),
            Entry::of::<ShowJob>(),
            Entry::of::<CancelJob>(),
            Entry::of::<ListJobs>(),
            Entry::of::<WaitJobs>(),
            Entry::of::<SessionStatus>(),
            Entry::of::<SessionLog>(),
            Entry::of::<GiveVerdict>(),
            Entry::of::<WaitChildren>(),
            Entry::of::<Doctor>(),
            Entry::of::<DoctorScore>(),
            Entry::of::<AcceptPlugin>(),
            Entry::of::<ListRescues>(),
            Entry::of::<ShowRescue>(),
            Entry::of::<RescueFigures>(),
            Entry::of::<OpenRescue>(),
            Entry::of::<AssignRescue>(),
            Entry::of::<DiagnoseRescue>(),
            Entry::of::<InjectRescue>(),
            Entry::of::<ResolveRescue>(),
            Entry::of::<ListWorkspaces>(),
            Entry::of::<MergeWorkspace>(),
            Entry::of::<AbandonWorkspace>(),
        ]
    });
    &ALL
}

/// The operation called `name`.
pub fn named(name: &str) -> Option<&'static Entry> {
    all().iter().find(|e| e.name == name)
}

/// The operation served as MCP tool `tool`.
pub fn for_tool(tool: &str) -> Option<&'static Entry> {
    all().iter().find(|e| e.mcp == Some(tool))
}

/// The arguments of an operation that takes none.
#[derive(Debug, Default, Serialize, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_family_dot_verb_and_routes_unique() {
        let mut names = std::collections::BTreeSet::new();
        let mut routes = std::collections::BTreeSet::new();
        for e in all() {
            assert!(
                names.insert(e.name),
                "two operations are called `{}`",
                e.name
            );
            let (family, verb) = e.name.split_once('.').unwrap_or((e.name, ""));
            assert!(
                !family.is_empty() && !verb.is_empty(),
                "`{}` is not `family.verb`",
                e.name
            );
            if let Some(route) = e.http {
                assert!(route.path.starts_with('/'), "{}: {}", e.name, route.path);
                assert!(
                    routes.insert((route.method == Method::Get, route.path)),
                    "two operations at {:?} {}",
                    route.method,
                    route.path
                );
            }
        }
    }

    #[test]
    fn left_out_arguments_take_their_defaults() {
        let search: SearchMemoryArgs =
            serde_json::from_value(serde_json::json!({"query": "q"})).unwrap();
        assert_eq!((search.limit, search.cursor), (10, None));
    }

    #[test]
    fn every_path_argument_is_a_required_string_argument() {
        let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        for e in all() {
            let Some(route) = e.http else { continue };
            let definition = e.args_object(&mut generator);
            for argument in route.path_arguments() {
                let required = definition["required"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                assert!(
                    required.iter().any(|r| r == argument),
                    "{}: the path's `{{{argument}}}` is not a required argument",
                    e.name
                );
                assert_eq!(
                    definition["properties"][argument]["type"], "string",
                    "{}: the path's `{{{argument}}}` is not a string",
                    e.name
                );
            }
        }
    }
}
