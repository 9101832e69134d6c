//! The forms of an open rescue on the rescues page: assign it, record its
//! diagnosis, hand the session a description, a file's content and spec
//! changes, and close it. Each posts to its action (`rescue_actions.rs`,
//! which runs the registry's operation); the page (`rescues.rs`) draws one
//! card a rescue.

use std::fmt::Write as _;

use glovebox::rescue::{Category, Outcome, Rescue};

use crate::html::{esc, url};
use crate::viewer::session_link;

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
