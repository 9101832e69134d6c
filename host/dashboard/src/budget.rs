//! The spend ceilings page (`/ui/budget`): every ceiling across sessions
//! the config sets (per principal, project and role, per day, week and
//! month), its use this period and whether it is reached; per scope, Lift
//! (resume the sessions its ceilings paused) and Raise (a ceiling for the
//! current period).
//!
//! The buttons act through the ledger exactly as `glovebox budget lift` and
//! `glovebox budget raise` do, recording the operator who pressed them.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use axum::extract::{Form, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use glovebox::ceilings::{self, CeilingStatus};
use glovebox::manifest::{CeilingLimits, CostError, Period, Scope, ScopeKind, UnknownWord, Window};
use glovebox::session::SessionError;

use crate::App;
use crate::html::{badge, esc, url};
use crate::viewer::{Rendered, Viewer};

/// What was done, as a redirect names it: the action and the scope (shown
/// only for a scope the config has ceilings for, so a crafted link cannot
/// put words on the page).
#[derive(serde::Deserialize)]
pub struct DoneQuery {
    done: Option<String>,
    kind: Option<String>,
    name: Option<String>,
}

/// `GET /ui/budget`.
pub async fn budget(viewer: Viewer, Query(q): Query<DoneQuery>) -> Response {
    viewer
        .page("budget", "sessions", move |app| render(app, Some(&q), None))
        .await
}

fn render(app: &App, done: Option<&DoneQuery>, error: Option<&str>) -> Rendered {
    let status = ceilings::status(app.gateway.sessions()).map_err(crate::viewer::internal)?;
    let mut body = String::from("<h1>Spend ceilings</h1>");
    if let Some(message) = error {
        let _ = write!(body, "<p class=\"error\" id=\"flash\">{}</p>", esc(message));
    }
    if let Some(DoneQuery {
        done: Some(done),
        kind: Some(kind),
        name: Some(name),
    }) = done
        && let Some(s) = status
            .iter()
            .find(|s| s.scope.kind.as_str() == kind && &s.scope.name == name)
    {
        let what = match done.as_str() {
            "lift" => "its ceilings' pause lifted: the sessions they paused resumed",
            _ => "its ceiling raised for this period",
        };
        let _ = write!(
            body,
            "<p class=\"good\" id=\"flash\">{}: {what}</p>",
            esc(&s.scope.to_string())
        );
    }
    body += "<p class=\"muted\">What all the sessions of a principal, project or role spend together per UTC day, ISO week and calendar month. At a ceiling their calls are refused, their sessions paused (only an operator lifts it) and no new session starts.</p>";
    if status.is_empty() {
        body += "<p class=\"muted\" id=\"no-ceilings\">no spend ceiling is configured: add <code>[budgets.principal.NAME.day]</code> (or <code>.week</code>, <code>.month</code>; <code>project</code>, <code>role</code>) with <code>cost</code>, <code>calls</code> or <code>tokens</code></p>";
        return Ok(("Spend ceilings".into(), body));
    }
    body += "<table id=\"ceilings\"><thead><tr><th>ceiling</th><th>used of limit</th><th>%</th><th>period</th><th>ends</th><th>state</th></tr></thead><tbody>";
    for s in &status {
        body += &row(s);
    }
    body += "</tbody></table>";
    let scopes: BTreeSet<&Scope> = status.iter().map(|s| &s.scope).collect();
    for scope in scopes {
        body += &actions(scope);
    }
    Ok(("Spend ceilings".into(), body))
}

fn row(s: &CeilingStatus) -> String {
    let ends = Window {
        id: s.period_id.clone(),
        start_ms: 0,
        end_ms: s.ends_at_ms,
    }
    .ends();
    let mut state = String::new();
    if s.reached {
        state += &badge("reached");
    }
    if s.raised {
        state += &badge("raised");
    }
    format!(
        "<tr id=\"ceiling-{id}\"><td><code>{key}</code></td><td>{shown}</td><td>{pct}%</td><td>{period}</td><td>{ends}</td><td>{state}</td></tr>",
        id = url(&s.key),
        key = esc(&s.key),
        shown = esc(&s.shown),
        pct = s.percent,
        period = esc(&s.period_id),
        ends = esc(&ends),
    )
}

fn actions(scope: &Scope) -> String {
    let id = url(&format!("{}-{}", scope.kind, scope.name));
    let hidden = format!(
        "<input type=\"hidden\" name=\"kind\" value=\"{}\"><input type=\"hidden\" name=\"name\" value=\"{}\">",
        esc(scope.kind.as_str()),
        esc(&scope.name)
    );
    format!(
        "<article class=\"approval\" id=\"scope-{id}\"><h2>{title}</h2><div class=\"actions\">\
         <form method=\"post\" action=\"/ui/budget/lift\" class=\"inline\">{hidden}\
         <button type=\"submit\" class=\"approve\" id=\"lift-{id}\">Lift the pause</button></form>\
         <form method=\"post\" action=\"/ui/budget/raise\" class=\"inline\">{hidden}\
         <select name=\"period\" id=\"period-{id}\"><option>day</option><option>week</option><option>month</option></select> \
         <input name=\"cost\" placeholder=\"cost\" size=\"8\" id=\"cost-{id}\"> \
         <input name=\"calls\" placeholder=\"calls\" size=\"8\" id=\"calls-{id}\"> \
         <input name=\"tokens\" placeholder=\"tokens\" size=\"10\" id=\"tokens-{id}\"> \
         <button type=\"submit\" id=\"raise-{id}\">Raise for this period</button></form></div></article>",
        title = esc(&scope.to_string()),
    )
}

#[derive(serde::Deserialize)]
pub struct ScopeForm {
    kind: String,
    name: String,
    #[serde(default)]
    period: String,
    #[serde(default)]
    cost: String,
    #[serde(default)]
    calls: String,
    #[serde(default)]
    tokens: String,
}

/// Why Lift or Raise did nothing: a field of the form is not what it should
/// be, or the ledger refused. Shown on the page as the error.
#[derive(Debug, thiserror::Error)]
enum ActionError {
    /// The scope's kind or the period is none of its words.
    #[error(transparent)]
    Word(#[from] UnknownWord),
    #[error("{what}: `{text}` is not a whole number")]
    NotWhole { what: &'static str, text: String },
    /// The cost as given.
    #[error("cost: `{0}` is not a number")]
    NotNumber(String),
    #[error("cost: {0}")]
    Cost(CostError),
    #[error(transparent)]
    Refused(#[from] SessionError),
}

impl ScopeForm {
    fn scope(&self) -> Result<Scope, ActionError> {
        let kind = self.kind.parse::<ScopeKind>()?;
        Ok(Scope {
            kind,
            name: self.name.clone(),
        })
    }

    fn limits(&self) -> Result<CeilingLimits, ActionError> {
        let number = |text: &str, what: &'static str| -> Result<Option<u64>, ActionError> {
            let text = text.trim().replace('_', "");
            if text.is_empty() {
                return Ok(None);
            }
            text.parse()
                .map(Some)
                .map_err(|_| ActionError::NotWhole { what, text })
        };
        let cost = match self.cost.trim() {
            "" => None,
            text => {
                let value: f64 = text
                    .parse()
                    .map_err(|_| ActionError::NotNumber(text.to_string()))?;
                Some(glovebox::budget::to_micros(value).map_err(ActionError::Cost)?)
            }
        };
        Ok(CeilingLimits {
            cost_micros: cost,
            calls: number(&self.calls, "calls")?,
            tokens: number(&self.tokens, "tokens")?,
        })
    }
}

/// `POST /ui/budget/lift`: as `glovebox budget lift KIND NAME`.
pub async fn lift(viewer: Viewer, Form(form): Form<ScopeForm>) -> Response {
    let gateway = viewer.app.gateway.clone();
    let result = crate::blocking(move || {
        let scope = form.scope()?;
        let resumed = ceilings::lift(gateway.sessions(), &scope)?;
        tracing::info!(scope = %scope, resumed = resumed.len(), "dashboard: a spend ceiling's pause lifted");
        Ok::<_, ActionError>(scope)
    })
    .await;
    answer(viewer, "lift", result).await
}

/// `POST /ui/budget/raise`: as `glovebox budget raise KIND NAME --period P ...`.
pub async fn raise(viewer: Viewer, Form(form): Form<ScopeForm>) -> Response {
    let gateway = viewer.app.gateway.clone();
    let result = crate::blocking(move || {
        let scope = form.scope()?;
        let period = form.period.parse::<Period>()?;
        let to = form.limits()?;
        let raised = ceilings::raise(gateway.sessions(), &scope, period, &to)?;
        tracing::info!(scope = %scope, period = %period, resumed = raised.resumed.len(), still_at = raised.still_at.as_deref().unwrap_or(""), "dashboard: a spend ceiling raised");
        Ok::<_, ActionError>(scope)
    })
    .await;
    answer(viewer, "raise", result).await
}

async fn answer(
    viewer: Viewer,
    what: &'static str,
    result: anyhow::Result<Result<Scope, ActionError>>,
) -> Response {
    let result = result
        .map_err(|e| format!("{e:#}"))
        .and_then(|r| r.map_err(|e| e.to_string()));
    match result {
        Ok(scope) => {
            tracing::info!(principal = %viewer.op.0.name, action = what, scope = %scope, "dashboard: spend ceiling");
            Redirect::to(&format!(
                "/ui/budget?done={what}&kind={}&name={}",
                url(scope.kind.as_str()),
                url(&scope.name)
            ))
            .into_response()
        }
        Err(message) => {
            viewer
                .page_with(StatusCode::CONFLICT, "budget", "sessions", move |app| {
                    render(app, None, Some(&message))
                })
                .await
        }
    }
}
