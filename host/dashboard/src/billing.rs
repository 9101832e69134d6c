//! `GET /ui/billing` (what sessions used over a date range, by role,
//! project, tool, day and principal, as charts and tables; by principal
//! each principal's spend is split by the model and version its sessions
//! recorded at start) and `GET /ui/billing.csv`.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use glovebox::billing::{self, DateRange, GroupBy};

use crate::App;
use crate::auth::Operator;
use crate::html::{self, Bar, esc, url};
use crate::viewer::{Rendered, Viewer, internal, now_ms, some};

#[derive(serde::Deserialize, Default)]
pub struct BillingQuery {
    from: Option<String>,
    to: Option<String>,
    by: Option<String>,
}

const GROUPINGS: [GroupBy; 5] = [
    GroupBy::Role,
    GroupBy::Project,
    GroupBy::Tool,
    GroupBy::Day,
    GroupBy::Principal,
];

pub async fn billing(viewer: Viewer, Query(q): Query<BillingQuery>) -> Response {
    viewer
        .page("billing", "sessions", move |app| render_billing(app, &q))
        .await
}

fn range(app: &App, q: &BillingQuery) -> Result<DateRange, (StatusCode, String)> {
    DateRange::parse(some(&q.from), some(&q.to), now_ms(app))
        .map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))
}

fn render_billing(app: &App, q: &BillingQuery) -> Rendered {
    let range = range(app, q)?;
    let sessions = app.gateway.sessions();
    let mut body = format!(
        "<h1>Billing</h1><form method=\"get\" action=\"/ui/billing\" class=\"filters\">\
         <label>from <input name=\"from\" value=\"{}\" placeholder=\"YYYY-MM-DD\" size=\"10\"></label> \
         <label>to <input name=\"to\" value=\"{}\" placeholder=\"YYYY-MM-DD\" size=\"10\"></label> \
         <button type=\"submit\">Show</button></form>",
        esc(some(&q.from).unwrap_or("")),
        esc(some(&q.to).unwrap_or(""))
    );
    for by in GROUPINGS {
        let report = billing::report(sessions, &range, by).map_err(internal)?;
        let csv = format!(
            "/ui/billing.csv?by={}{}{}",
            by.as_str(),
            some(&q.from)
                .map(|f| format!("&from={}", url(f)))
                .unwrap_or_default(),
            some(&q.to)
                .map(|t| format!("&to={}", url(t)))
                .unwrap_or_default()
        );
        let _ = write!(
            body,
            "<section class=\"billing\" id=\"billing-{by}\"><h2>By {by} <span class=\"muted\">{} to {}, {} sessions</span> <a href=\"{}\" class=\"csv\" download>CSV</a></h2>",
            esc(&report.from),
            esc(&report.to),
            report.sessions,
            esc(&csv),
            by = by.as_str()
        );
        body += &charts(&report, by);
        body += &table(&report);
        body += "</tbody></table></section>";
    }
    Ok(("Billing".into(), body))
}

/// The report's two charts: cost, and calls, by group (foreground and
/// background jobs apart).
fn charts(report: &billing::Report, by: GroupBy) -> String {
    let mut out = String::new();
    let bars: Vec<Bar> = report
        .groups
        .iter()
        .map(|g| Bar {
            label: g.label.clone().unwrap_or_else(|| g.key.clone()),
            parts: vec![(g.foreground.cost, "fg"), (g.background.cost, "bg")],
            shown: format!("{:.4} · {} calls", g.total.cost, g.total.calls),
        })
        .collect();
    out += "<div class=\"charts\">";
    out += &html::bar_chart(
        &format!("cost by {}", by.as_str()),
        &bars,
        &[("foreground", "fg"), ("background (jobs)", "bg")],
    );
    let calls: Vec<Bar> = report
        .groups
        .iter()
        .map(|g| Bar {
            label: g.label.clone().unwrap_or_else(|| g.key.clone()),
            parts: vec![
                (g.foreground.calls as f64, "fg"),
                (g.background.calls as f64, "bg"),
            ],
            shown: format!("{} calls ({} failed)", g.total.calls, g.total.failures),
        })
        .collect();
    out += &html::bar_chart(
        &format!("calls by {}", by.as_str()),
        &calls,
        &[("foreground", "fg"), ("background (jobs)", "bg")],
    );
    out += "</div>";
    out
}

/// The report's table: a row per group and the total, and under each
/// principal its spend by model.
fn table(report: &billing::Report) -> String {
    let mut out = String::new();
    out += "<table><thead><tr><th>key</th>";
    for (_, heading, _) in billing_columns(&report.total) {
        if let Some(heading) = heading {
            let _ = write!(out, "<th>{heading}</th>");
        }
    }
    out += "</tr></thead><tbody>";
    for g in report.groups.iter().chain([&report.total]) {
        let key = g
            .label
            .as_ref()
            .map_or_else(|| g.key.clone(), |l| format!("{l} ({})", g.key));
        let _ = write!(out, "<tr><td>{}</td>", esc(&key));
        for (_, heading, figure) in billing_columns(g) {
            if heading.is_some() {
                let _ = write!(out, "<td>{}</td>", figure.shown(4));
            }
        }
        out += "</tr>";
        // By principal: its spend by the model its sessions recorded.
        for (model, share) in &g.models {
            let _ = write!(
                out,
                "<tr class=\"model-share\" data-model=\"{}\"><td>&#8627; model <b>{}</b> <span class=\"muted\">{} sessions</span></td>",
                esc(model),
                esc(model),
                share.sessions
            );
            for (_, heading, figure) in columns(&share.total, &share.foreground, &share.background)
            {
                if heading.is_some() {
                    let _ = write!(out, "<td>{}</td>", figure.shown(4));
                }
            }
            out += "</tr>";
        }
    }
    out
}

/// A billing figure: a count, an amount in decimal units, or milliseconds.
#[derive(Clone, Copy)]
enum Figure {
    Count(u64),
    Amount(f64),
    Ms(u64),
}

impl Figure {
    /// As shown, amounts with `digits` decimals (milliseconds with three).
    fn shown(self, digits: usize) -> String {
        match self {
            Figure::Count(n) => n.to_string(),
            Figure::Amount(x) => format!("{x:.digits$}"),
            Figure::Ms(us) => format!("{:.3}", us as f64 / 1000.0),
        }
    }
}

/// The billing table's columns, the page's and the CSV's alike, for group
/// `g`: the CSV's name, the page's heading (`None`: in the CSV only), and
/// the figure.
fn billing_columns(g: &billing::Group) -> [(&'static str, Option<&'static str>, Figure); 13] {
    columns(&g.total, &g.foreground, &g.background)
}

/// [`billing_columns`] of figures split `all`, foreground `fg` and
/// background `bg` (a group's, or a share of one).
fn columns(
    all: &billing::Figures,
    fg: &billing::Figures,
    bg: &billing::Figures,
) -> [(&'static str, Option<&'static str>, Figure); 13] {
    use Figure::{Amount, Count, Ms};
    [
        ("calls", Some("calls"), Count(all.calls)),
        ("failures", Some("failures"), Count(all.failures)),
        ("wall_ms", None, Ms(all.wall_us)),
        ("fuel", None, Count(all.fuel)),
        ("bytes_in", None, Count(all.bytes_in)),
        ("bytes_out", None, Count(all.bytes_out)),
        ("tool_cost", Some("tool cost"), Amount(all.tool_cost)),
        ("model_cost", Some("model cost"), Amount(all.model_cost)),
        ("cost", Some("cost"), Amount(all.cost)),
        ("foreground_calls", Some("fg calls"), Count(fg.calls)),
        ("foreground_cost", Some("fg cost"), Amount(fg.cost)),
        ("background_calls", Some("bg calls"), Count(bg.calls)),
        ("background_cost", Some("bg cost"), Amount(bg.cost)),
    ]
}

/// A CSV field: quoted, and a leading formula character defused.
fn csv_field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// `GET /ui/billing.csv?by=role&from=&to=`.
pub async fn billing_csv(
    State(app): State<Arc<App>>,
    Extension(_): Extension<Operator>,
    Query(q): Query<BillingQuery>,
) -> Response {
    let by = match some(&q.by).unwrap_or("role").parse::<GroupBy>() {
        Ok(by) => by,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    };
    let range = match range(&app, &q) {
        Ok(r) => r,
        Err((status, e)) => return (status, format!("{e}\n")).into_response(),
    };
    let result = crate::blocking(move || billing::report(app.gateway.sessions(), &range, by)).await;
    let report = match result {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}\n")).into_response(),
    };
    let mut out = String::from("by,key,label");
    for (name, _, _) in billing_columns(&report.total) {
        let _ = write!(out, ",{name}");
    }
    out.push('\n');
    for g in report.groups.iter().chain([&report.total]) {
        let label = g.label.as_deref().unwrap_or("");
        let _ = write!(
            out,
            "{},{},{}",
            by.as_str(),
            csv_field(&g.key),
            csv_field(label)
        );
        for (_, _, figure) in billing_columns(g) {
            let _ = write!(out, ",{}", figure.shown(6));
        }
        out.push('\n');
    }
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!(
                    "attachment; filename=\"glovebox-billing-by-{}.csv\"",
                    by.as_str()
                ),
            ),
        ],
        out,
    )
        .into_response()
}
