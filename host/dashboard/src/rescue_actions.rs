//! The rescue page's actions: for each open rescue, forms to assign it,
//! record its diagnosis, hand the session a description, a file's content
//! and spec changes, and close it. Each runs the registry's operation
//! (`rescues.assign`, `rescues.diagnose`, `rescues.inject`,
//! `rescues.resolve`) as the signed-in operator, exactly as `glovebox
//! rescue ...` and `POST /api/v1/rescues/...` do; the listener's guard
//! (`auth.rs`) has already checked the `Host`, the POST's origin and the
//! operator, as for the approvals' buttons.
//!
//! A browser cannot hand over a file by its path as the command line does
//! (which reads it on the operator's side): the form takes the file's path
//! as the agent should see it and its content as text.

use std::fmt::Write as _;

use axum::extract::{Form, Path as UrlPath};
use axum::response::{IntoResponse, Redirect, Response};
use glovebox::operations::{
    self, AssignRescue, AssignRescueArgs, DiagnoseRescue, DiagnoseRescueArgs, InjectRescue,
    InjectRescueArgs, InjectedFile, OperationError, ResolveRescue, ResolveRescueArgs,
};
use glovebox::rescue::{Category, Outcome, Rescue};

use crate::html::{esc, url};
use crate::viewer::{Viewer, session_link};

/// The forms of one open rescue, in an `<article>` of its own.
pub(crate) fn card(r: &Rescue) -> String {
    let options = |words: &[&str]| -> String {
        words
            .iter()
            .map(|w| format!("<option value=\"{w}\">{}</option>", w.replace('_', " ")))
            .collect()
    };
    let categories: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    let outcomes: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
    let mut out = String::new();
    let _ = write!(
        out,
        "<article class=\"rescue\" id=\"rescue-{id}\" data-rescue=\"{id}\">\
         <h3><code>{id}</code> in {session}: {assignee}</h3>\
         <div class=\"actions\"><form method=\"post\" action=\"/ui/rescues/{uid}/assign\" class=\"inline\">\
         <input name=\"to\" required maxlength=\"256\" placeholder=\"who works on it\" id=\"assignee-{id}\"> \
         <button type=\"submit\" id=\"assign-{id}\">Assign</button></form></div>\
         <form method=\"post\" action=\"/ui/rescues/{uid}/diagnose\"><div class=\"actions\">\
         <select name=\"category\" id=\"category-{id}\">{categories}</select>\
         <input name=\"root_cause\" required placeholder=\"the root cause\" id=\"root-cause-{id}\">\
         <textarea name=\"evidence\" rows=\"2\" placeholder=\"evidence, one a line\" id=\"evidence-{id}\"></textarea>\
         <button type=\"submit\" id=\"diagnose-{id}\">Diagnose</button></div></form>\
         <form method=\"post\" action=\"/ui/rescues/{uid}/inject\"><div class=\"actions\">\
         <textarea name=\"description\" rows=\"2\" placeholder=\"what you found, for the agent\" id=\"description-{id}\"></textarea>\
         <input name=\"file_path\" placeholder=\"a file's path\" id=\"file-path-{id}\">\
         <textarea name=\"file_content\" rows=\"2\" placeholder=\"its content (text)\" id=\"file-content-{id}\"></textarea>\
         <textarea name=\"spec_changes\" rows=\"2\" placeholder=\"spec changes, one a line\" id=\"spec-changes-{id}\"></textarea>\
         <button type=\"submit\" id=\"inject-{id}\">Inject</button></div></form>\
         <form method=\"post\" action=\"/ui/rescues/{uid}/resolve\"><div class=\"actions\">\
         <select name=\"outcome\" id=\"outcome-{id}\">{outcomes}</select>\
         <textarea name=\"enrich\" rows=\"2\" placeholder=\"lessons for the project's memory, one a line\" id=\"enrich-{id}\"></textarea>\
         <button type=\"submit\" id=\"resolve-{id}\">Close</button></div></form></article>",
        id = esc(&r.id),
        uid = url(&r.id),
        session = session_link(&r.session, r.session_name.as_deref()),
        assignee = r
            .assignee
            .as_deref()
            .map(|a| format!("assigned to {}", esc(a)))
            .unwrap_or_else(|| "<span class=\"muted\">no assignee</span>".into()),
        categories = options(&categories),
        outcomes = options(&outcomes),
    );
    out
}

/// The non-blank lines of a textarea.
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Text a form left blank is not given.
fn given(text: String) -> Option<String> {
    (!text.trim().is_empty()).then_some(text)
}

/// After an action: the page again, saying what it did, or why not.
async fn answered(viewer: Viewer, id: &str, done: Result<Rescue, OperationError>) -> Response {
    match done {
        Ok(r) => {
            tracing::info!(rescue = %r.id, principal = %viewer.op.0.name, status = r.status(), "dashboard: rescue");
            Redirect::to(&format!("/ui/rescues?done={}", url(id))).into_response()
        }
        Err(e) => crate::rescues::refused(viewer, e).await,
    }
}

#[derive(serde::Deserialize)]
pub struct AssignForm {
    #[serde(default)]
    to: String,
}

/// `POST /ui/rescues/ID/assign`: the operation `rescues.assign`.
pub async fn assign(
    viewer: Viewer,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<AssignForm>,
) -> Response {
    let scope = viewer.app.gateway.scope(&viewer.op.0);
    let args = AssignRescueArgs {
        id: id.clone(),
        to: form.to,
    };
    let done = operations::run::<AssignRescue>(scope, args).await;
    answered(viewer, &id, done).await
}

#[derive(serde::Deserialize)]
pub struct DiagnoseForm {
    #[serde(default)]
    category: String,
    #[serde(default)]
    evidence: String,
    #[serde(default)]
    root_cause: String,
}

/// `POST /ui/rescues/ID/diagnose`: the operation `rescues.diagnose`.
pub async fn diagnose(
    viewer: Viewer,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<DiagnoseForm>,
) -> Response {
    let category = match form.category.parse::<Category>() {
        Ok(c) => c,
        Err(e) => {
            let why = OperationError::invalid(e.to_string());
            return crate::rescues::refused(viewer, why).await;
        }
    };
    let scope = viewer.app.gateway.scope(&viewer.op.0);
    let args = DiagnoseRescueArgs {
        id: id.clone(),
        category,
        evidence: lines(&form.evidence),
        root_cause: form.root_cause,
    };
    let done = operations::run::<DiagnoseRescue>(scope, args).await;
    answered(viewer, &id, done).await
}

#[derive(serde::Deserialize)]
pub struct InjectForm {
    #[serde(default)]
    description: String,
    #[serde(default)]
    file_path: String,
    #[serde(default)]
    file_content: String,
    #[serde(default)]
    spec_changes: String,
}

/// `POST /ui/rescues/ID/inject`: the operation `rescues.inject`, with the
/// file (if a path is given) and its content as typed or pasted.
pub async fn inject(
    viewer: Viewer,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<InjectForm>,
) -> Response {
    let files = match given(form.file_path) {
        Some(path) => vec![InjectedFile {
            path: path.trim().to_string(),
            content: given(form.file_content),
        }],
        None if !form.file_content.trim().is_empty() => {
            let why = OperationError::invalid(
                "a file's content needs its path: give the path the agent should see it under",
            );
            return crate::rescues::refused(viewer, why).await;
        }
        None => Vec::new(),
    };
    let scope = viewer.app.gateway.scope(&viewer.op.0);
    let args = InjectRescueArgs {
        id: id.clone(),
        description: given(form.description),
        files,
        spec_changes: lines(&form.spec_changes),
    };
    let done = operations::run::<InjectRescue>(scope, args).await;
    answered(viewer, &id, done).await
}

#[derive(serde::Deserialize)]
pub struct ResolveForm {
    #[serde(default)]
    outcome: String,
    #[serde(default)]
    enrich: String,
}

/// `POST /ui/rescues/ID/resolve`: the operation `rescues.resolve` (the
/// page's Close).
pub async fn resolve(
    viewer: Viewer,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<ResolveForm>,
) -> Response {
    let outcome = match form.outcome.parse::<Outcome>() {
        Ok(o) => o,
        Err(e) => {
            let why = OperationError::invalid(e.to_string());
            return crate::rescues::refused(viewer, why).await;
        }
    };
    let scope = viewer.app.gateway.scope(&viewer.op.0);
    let args = ResolveRescueArgs {
        id: id.clone(),
        outcome,
        enrich: lines(&form.enrich),
    };
    let done = operations::run::<ResolveRescue>(scope, args).await;
    answered(viewer, &id, done).await
}
