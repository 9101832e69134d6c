//! `GET /ui/principals`: the fleet's registry. Every principal sessions may
//! be started by (the declared ones, or the built-in agent `local` when
//! none is), with its kind, roles, projects and pinned tags, and its card
//! (model, version, owner, description) as the config says today; a
//! session's page shows the card it recorded when it started.
//! Credentials are never shown.

use std::fmt::Write as _;

use crate::App;
use crate::card;
use crate::html::{esc, table_or_none, url};
use crate::viewer::{Rendered, Viewer};

/// `GET /ui/principals`.
pub async fn principals(viewer: Viewer) -> axum::response::Response {
    viewer.page("principals", "", render).await
}

pub(crate) fn render(app: &App) -> Rendered {
    let all = app.gateway.principals().all();
    let mut rows = Vec::new();
    for p in &all {
        let list = |items: &[String]| {
            if items.is_empty() {
                "<span class=\"muted\">-</span>".to_string()
            } else {
                esc(&items.join(", "))
            }
        };
        let roles: Vec<String> = p.roles.iter().map(|r| r.as_str().to_string()).collect();
        let shown = card::fields(&p.card);
        let cell = |name: &str| {
            shown
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, text)| esc(text))
                .unwrap_or_else(|| "<span class=\"muted\">-</span>".into())
        };
        let mut row = String::new();
        let _ = write!(
            row,
            "<tr data-principal=\"{name}\"><td><a href=\"/ui/sessions?owner={link}\">{name}</a></td><td>{kind}</td><td>{roles}</td><td>{projects}</td><td>{tags}</td><td class=\"card-model\">{model}</td><td class=\"card-version\">{version}</td><td class=\"card-owner\">{owner}</td><td class=\"card-description\">{description}</td></tr>",
            name = esc(&p.name),
            link = url(&p.name),
            kind = p.kind.as_str(),
            roles = list(&roles),
            projects = list(&p.projects),
            tags = list(&p.tags),
            model = cell("model"),
            version = cell("version"),
            owner = cell("owner"),
            description = cell("description"),
        );
        rows.push(row);
    }
    let mut body = String::from(
        "<h1>Principals</h1><p class=\"muted\">Who may start sessions, and what the operator says about each (<code>[[principal]]</code>'s <code>model</code>, <code>version</code>, <code>owner</code>, <code>description</code>). Each session records its principal's card when it starts: its page shows that one.</p>",
    );
    body += &table_or_none(
        "principals",
        &[
            "principal",
            "kind",
            "roles",
            "projects",
            "pinned tags",
            "model",
            "version",
            "owner",
            "description",
        ],
        &rows,
    );
    Ok(("Principals".into(), body))
}
