//! HTML building blocks: escaping, the page layout, times, inline SVG charts.
//! Every string that comes from the log, a tool, an agent or the config goes
//! through [`esc`] before it reaches a page.

use std::fmt::Write as _;

/// `text` with `& < > " '` escaped: safe in element content and in quoted
/// attribute values.
pub fn esc(text: &str) -> String {
    glovebox::notify::escape_markup(text, true)
}

/// Text made visible (`glovebox::shown::visible`), escaped, with each mark
/// (`<U+202E>`) highlighted. Only for text that went through `visible`:
/// there every `<U+` is a mark, since a literal one is marked itself.
pub fn marked(text: &str) -> String {
    let escaped = esc(text);
    let mut out = String::with_capacity(escaped.len());
    let mut rest = escaped.as_str();
    while let Some(at) = rest.find("&lt;U+") {
        let Some(len) = rest[at..].find("&gt;").map(|end| end + "&gt;".len()) else {
            break;
        };
        out.push_str(&rest[..at]);
        let _ = write!(
            out,
            "<mark class=\"invisible\">{}</mark>",
            &rest[at..at + len]
        );
        rest = &rest[at + len..];
    }
    out.push_str(rest);
    out
}

/// A path segment or query value, percent-encoded (for links built from ids).
pub fn url(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// At most `max` bytes of `text` (cut at a character boundary), and whether
/// it was cut.
pub use glovebox::shown::cut_at as cut;

/// `text` in a `<pre>`, escaped, cut to `max` bytes with a note.
pub fn pre(text: &str, max: usize) -> String {
    pre_with(text, max, "<pre>", esc)
}

/// [`pre`] for text made visible: its marks highlighted ([`marked`]).
pub fn pre_marked(text: &str, max: usize) -> String {
    pre_with(text, max, "<pre dir=\"ltr\">", marked)
}

/// `text` cut to `max` bytes, written by `body` after the `open` tag of a
/// `<pre>`, with a note when it was cut.
fn pre_with(text: &str, max: usize, open: &str, body: fn(&str) -> String) -> String {
    let (shown, cut) = cut(text, max);
    let mut out = format!("{open}{}</pre>", body(shown));
    if cut {
        let _ = write!(
            out,
            "<p class=\"muted\">(first {max} of {} bytes shown)</p>",
            text.len()
        );
    }
    out
}

/// A time in the log (Unix ms) as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn time(ms: u64) -> String {
    let days = (ms / 86_400_000) as i64;
    let secs = (ms / 1000) % 86_400;
    format!(
        "{} {:02}:{:02}:{:02}",
        glovebox::billing::format_day(days),
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// A `<time>` element: the UTC time, with how long ago in its title.
pub fn when(ms: u64, now: u64) -> String {
    if ms == 0 {
        return "-".into();
    }
    format!(
        "<time title=\"{}\">{} ago</time>",
        time(ms),
        duration(now.saturating_sub(ms))
    )
}

/// A span of milliseconds, as people read it (`4s`, `3m`, `2h 5m`, `3d 4h`).
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m", s / 60)
    } else if s < 86_400 {
        format!("{}h {}m", s / 3600, (s / 60) % 60)
    } else {
        format!("{}d {}h", s / 86_400, (s / 3600) % 24)
    }
}

/// What the navigation shows.
pub struct Chrome<'a> {
    pub title: &'a str,
    /// The nav entry that is this page (`sessions`, `approvals`, ...).
    pub active: &'a str,
    /// The parts of the ledger whose changes refresh this page
    /// (`sessions approvals jobs rescues`).
    pub watch: &'a str,
    /// The operator the page is served to.
    pub operator: &'a str,
    pub pending_approvals: usize,
    /// Whether a logout button makes sense (a login cookie may exist).
    pub logins: bool,
}

const NAV: [(&str, &str, &str); 12] = [
    ("sessions", "/ui/sessions", "Sessions"),
    ("principals", "/ui/principals", "Principals"),
    ("approvals", "/ui/approvals", "Approvals"),
    ("jobs", "/ui/jobs", "Jobs"),
    ("billing", "/ui/billing", "Billing"),
    ("budget", "/ui/budget", "Ceilings"),
    ("rescues", "/ui/rescues", "Rescues"),
    ("memory", "/ui/memory", "Memory"),
    ("workspaces", "/ui/workspaces", "Workspaces"),
    ("doctor", "/ui/doctor", "Doctor"),
    ("notify", "/ui/notify", "Notifications"),
    ("metrics", "/metrics", "Metrics"),
];

/// The navigation bar (also refreshed live, for the approvals badge).
pub fn nav(c: &Chrome<'_>) -> String {
    let mut out = String::from("<span class=\"brand\">Glovebox</span>");
    for (key, href, label) in NAV {
        let class = if key == c.active {
            " class=\"active\""
        } else {
            ""
        };
        let _ = write!(out, "<a href=\"{href}\"{class} id=\"nav-{key}\">{label}");
        if key == "approvals" && c.pending_approvals > 0 {
            let _ = write!(
                out,
                " <span class=\"badge\" id=\"pending-count\">{}</span>",
                c.pending_approvals
            );
        }
        out.push_str("</a>");
    }
    let _ = write!(
        out,
        "<span class=\"who\">operator <b>{}</b>",
        esc(c.operator)
    );
    if c.logins {
        out.push_str(
            "<form method=\"post\" action=\"/ui/logout\" class=\"inline\"><button type=\"submit\">Log out</button></form>",
        );
    }
    out.push_str("</span><span class=\"live\" id=\"live\" title=\"live updates\"></span>");
    out
}

/// A whole dashboard page.
pub fn page(c: &Chrome<'_>, body: &str) -> String {
    document(
        c.title,
        c.watch,
        &format!(
            "<nav id=\"nav\">{}</nav><main id=\"main\">{body}</main>",
            nav(c)
        ),
    )
}

/// A page without navigation (the login).
pub fn bare(title: &str, body: &str) -> String {
    document(title, "", &format!("<main id=\"main\">{body}</main>"))
}

/// The HTML document every page is: the head (title, style, script) and
/// `inner` as the body, which names the parts of the ledger that refresh it.
fn document(title: &str, watch: &str, inner: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · Glovebox</title><link rel=\"stylesheet\" href=\"/ui/static/style.css\"><link rel=\"icon\" href=\"/ui/static/icon.svg\" type=\"image/svg+xml\">\
         <script src=\"/ui/static/app.js\" defer></script></head>\
         <body data-watch=\"{}\">{inner}</body></html>",
        esc(title),
        esc(watch)
    )
}

/// A table of `rows` (each a `<tr>`) under the column names `head`, or a
/// muted "none" where there are no rows. `id` and `head` are markup (not
/// escaped).
pub fn table_or_none(id: &str, head: &[&str], rows: &[String]) -> String {
    if rows.is_empty() {
        return "<p class=\"muted\">none</p>".into();
    }
    let mut out = format!("<table id=\"{id}\"><thead><tr>");
    for name in head {
        let _ = write!(out, "<th>{name}</th>");
    }
    out += "</tr></thead><tbody>";
    out.extend(rows.iter().map(String::as_str));
    out += "</tbody></table>";
    out
}

/// A small bar of `used` against `limit` (SVG, so no inline style is needed).
pub fn meter(used: u64, limit: u64, label: &str) -> String {
    let frac = if limit == 0 {
        1.0
    } else {
        (used as f64 / limit as f64).min(1.0)
    };
    let class = if frac >= 1.0 {
        "bad"
    } else if frac >= 0.8 {
        "warn"
    } else {
        "ok"
    };
    format!(
        "<span class=\"meter\"><svg width=\"100\" height=\"10\" role=\"img\" aria-label=\"{l}\"><rect class=\"track\" width=\"100\" height=\"10\"/><rect class=\"{class}\" width=\"{w:.1}\" height=\"10\"/></svg> {l}</span>",
        l = esc(label),
        w = frac * 100.0
    )
}

/// One bar of a chart: a label and values that stack (each with a CSS class).
pub struct Bar {
    pub label: String,
    pub parts: Vec<(f64, &'static str)>,
    /// The total as shown at the end of the bar.
    pub shown: String,
}

/// A horizontal bar chart, inline SVG; `legend` names the stacked parts.
pub fn bar_chart(title: &str, bars: &[Bar], legend: &[(&str, &'static str)]) -> String {
    let max = bars
        .iter()
        .map(|b| b.parts.iter().map(|(v, _)| v.max(0.0)).sum::<f64>())
        .fold(0.0f64, f64::max);
    let row = 22;
    let label_w = 180.0;
    let chart_w = 420.0;
    let height = (bars.len().max(1) * row + 8) as u32;
    let mut out = format!(
        "<figure class=\"chart\"><figcaption>{}</figcaption><svg width=\"700\" height=\"{height}\" viewBox=\"0 0 700 {height}\" role=\"img\" aria-label=\"{}\">",
        esc(title),
        esc(title)
    );
    if bars.is_empty() {
        let _ = write!(out, "<text x=\"4\" y=\"16\" class=\"muted\">no data</text>");
    }
    for (i, b) in bars.iter().enumerate() {
        let y = (i * row) as f64 + 4.0;
        let (name, _) = cut(&b.label, 28);
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>",
            label_w - 6.0,
            y + 13.0,
            esc(name)
        );
        let mut x = label_w;
        for (v, class) in &b.parts {
            let w = if max > 0.0 {
                v.max(0.0) / max * chart_w
            } else {
                0.0
            };
            let _ = write!(
                out,
                "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"16\"/>"
            );
            x += w;
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.0}\">{}</text>",
            x + 6.0,
            y + 13.0,
            esc(&b.shown)
        );
    }
    out.push_str("</svg>");
    if !legend.is_empty() {
        out.push_str("<p class=\"legend\">");
        for (name, class) in legend {
            let _ = write!(
                out,
                "<svg width=\"10\" height=\"10\"><rect class=\"{class}\" width=\"10\" height=\"10\"/></svg> {} ",
                esc(name)
            );
        }
        out.push_str("</p>");
    }
    out.push_str("</figure>");
    out
}

/// A badge for a status or verdict word.
pub fn badge(word: &str) -> String {
    let class =
        match word {
            "ok" | "allow" | "completed" | "approved" | "active" | "resolved" | "pass"
            | "passed" => "good",
            "ask" | "pending" | "paused" | "queued" | "running" | "warning" | "open"
            | "diagnosed" | "injected" | "proposed" | "awaiting_approval" => "warn",
            "deny" | "denied" | "failed" | "critical" | "timeout" | "interrupted" | "cancelled"
            | "blocker" | "rescue" | "abandoned" | "re_escalated" | "fail" | "rejected"
            | "reached" => "bad",
            _ => "plain",
        };
    format!("<span class=\"tag {class}\">{}</span>", esc(word))
}
