//! The rescue page's actions: what the forms of an open rescue post
//! (`rescue_forms.rs` draws them) to assign it, record its diagnosis, hand
//! the session a description, a file's content and spec changes, and close
//! it. Each runs the registry's operation
//! (`rescues.assign`, `rescues.diagnose`, `rescues.inject`,
//! `rescues.resolve`) as the signed-in operator, exactly as `glovebox
//! rescue ...` and `POST /api/v1/rescues/...` do; the listener's guard
//! (`auth.rs`) has already checked the `Host`, the POST's origin and the
//! operator, as for the approvals' buttons.
//!
//! A browser cannot hand over a file by its path as the command line does
//! (which reads it on the operator's side): the form takes the file's path
//! as the agent should see it and its content as text.

use axum::extract::{Form, Path as UrlPath};
use axum::response::{IntoResponse, Redirect, Response};
use glovebox::operations::{
    self, AssignRescue, AssignRescueArgs, DiagnoseRescue, DiagnoseRescueArgs, InjectRescue,
    InjectRescueArgs, InjectedFile, OperationError, ResolveRescue, ResolveRescueArgs,
};
use glovebox::rescue::{Category, Outcome, Rescue};

use crate::html::url;
use crate::viewer::Viewer;

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
