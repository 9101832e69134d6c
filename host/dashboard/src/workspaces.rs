//! The workspaces page (`/ui/workspaces`): each session's git worktree of
//! each `[[workspace]]`, with its branch and what it holds, and the buttons
//! that merge a session's branch into its base or abandon it.
//!
//! The buttons run the registry's operations `workspaces.merge` and
//! `workspaces.abandon` as the signed-in operator, exactly as `glovebox
//! workspace merge|abandon` and the HTTP API do; a refusal (a conflict,
//! with its paths) is shown on the page.

use std::fmt::Write as _;

use axum::extract::{Path as UrlPath, Query};
use axum::response::{IntoResponse, Redirect, Response};
use glovebox::operations::{
    self, AbandonWorkspace, AbandonWorkspaceArgs, MergeWorkspace, MergeWorkspaceArgs,
};
use glovebox::workspaces::Workspaces;

use crate::App;
use crate::html::{esc, url};
use crate::viewer::{Rendered, Viewer};

#[derive(serde::Deserialize, Default)]
pub struct WorkspacesQuery {
    /// The session whose branch was just merged.
    merged: Option<String>,
    /// The session whose branch was just abandoned.
    abandoned: Option<String>,
}

/// `GET /ui/workspaces`.
pub async fn workspaces(viewer: Viewer, Query(q): Query<WorkspacesQuery>) -> Response {
    viewer
        .page("workspaces", "sessions", move |app| render(app, &q, None))
        .await
}

fn render(app: &App, q: &WorkspacesQuery, error: Option<&str>) -> Rendered {
    let host = app.gateway.host();
    let config = host.config();
    let trees = Workspaces::of(config).list();
    let mut body = String::from("<h1>Workspaces</h1>");
    if let Some(message) = error {
        let _ = write!(body, "<p class=\"error\" id=\"flash\">{}</p>", esc(message));
    }
    for (done, what) in [(&q.merged, "merged"), (&q.abandoned, "abandoned")] {
        if let Some(session) = done {
            let _ = write!(
                body,
                "<p class=\"good\" id=\"flash\">the branch of session <code>{}</code> is {what}, its worktree removed</p>",
                esc(session)
            );
        }
    }
    if config.workspaces.is_empty() {
        body += "<p class=\"muted\" id=\"no-workspaces\">no <code>[[workspace]]</code> in the config</p>";
        return Ok(("Workspaces".into(), body));
    }
    body += "<p class=\"muted\">Each session that calls a plugin whose grant names a workspace works in a git worktree of its own; handoffs and completed ends commit it. Merge a branch into its base once you have read it (<code>git log -p BASE..BRANCH</code>), or abandon it.</p>";
    body += "<table id=\"workspaces\"><thead><tr><th>workspace</th><th>session</th><th>branch</th><th>path</th><th>work</th><th></th></tr></thead><tbody>";
    for t in &trees {
        let work = match (t.uncommitted, t.commits_ahead) {
            (0, 0) => "unchanged".to_string(),
            (0, n) => format!("{n} commit(s) ahead of {}", t.base),
            (u, n) => format!("{u} path(s) uncommitted, {n} commit(s) ahead of {}", t.base),
        };
        let _ = write!(
            body,
            "<tr id=\"tree-{sid}\"><td><code>{workspace}</code></td><td><a href=\"/ui/sessions/{usid}\"><code>{sid}</code></a></td>\
             <td><code>{branch}</code></td><td><code>{path}</code></td><td>{work}</td>\
             <td><form method=\"post\" action=\"/ui/workspaces/{usid}/merge\" class=\"inline\">\
             <button type=\"submit\" class=\"approve\" id=\"merge-{sid}\">Merge</button></form> \
             <form method=\"post\" action=\"/ui/workspaces/{usid}/abandon\" class=\"inline\">\
             <button type=\"submit\" class=\"deny\" id=\"abandon-{sid}\">Abandon</button></form></td></tr>",
            sid = esc(&t.session),
            usid = url(&t.session),
            workspace = esc(&t.workspace),
            branch = esc(&t.branch),
            path = esc(&t.path.display().to_string()),
            work = esc(&work),
        );
    }
    body += "</tbody></table>";
    if trees.is_empty() {
        body += "<p class=\"muted\" id=\"no-trees\">no session worktrees</p>";
    }
    Ok(("Workspaces".into(), body))
}

/// What a button does to a session's branch.
#[derive(Clone, Copy)]
enum Act {
    Merge,
    Abandon,
}

async fn act(viewer: Viewer, session: String, act: Act) -> Response {
    let scope = viewer.app.gateway.scope(&viewer.op.0);
    let target = session.clone();
    let done = match act {
        Act::Merge => {
            operations::run::<MergeWorkspace>(scope, MergeWorkspaceArgs { session: target })
                .await
                .map(|_| "merged")
        }
        Act::Abandon => {
            operations::run::<AbandonWorkspace>(scope, AbandonWorkspaceArgs { session: target })
                .await
                .map(|_| "abandoned")
        }
    };
    match done {
        Ok(what) => {
            tracing::info!(%session, principal = %viewer.op.0.name, what, "dashboard: workspace");
            Redirect::to(&format!("/ui/workspaces?{what}={}", url(&session))).into_response()
        }
        Err(e) => {
            let status = crate::api::status(e.class);
            let message = e.message;
            viewer
                .page_with(status, "workspaces", "sessions", move |app| {
                    render(app, &WorkspacesQuery::default(), Some(&message))
                })
                .await
        }
    }
}

/// `POST /ui/workspaces/SESSION/merge`: as `glovebox workspace merge SESSION`.
pub async fn merge(viewer: Viewer, UrlPath(session): UrlPath<String>) -> Response {
    act(viewer, session, Act::Merge).await
}

/// `POST /ui/workspaces/SESSION/abandon`: as `glovebox workspace abandon SESSION`.
pub async fn abandon(viewer: Viewer, UrlPath(session): UrlPath<String>) -> Response {
    act(viewer, session, Act::Abandon).await
}
