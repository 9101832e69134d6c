//! A session's page, pinned: the HTML it is made of for a session whose log
//! and clock are fixed, from its first event and from a later one.

use std::path::Path;
use std::sync::Arc;

use axum::http::StatusCode;
use glovebox::session::{EventKind, Role, StartSession};
use glovebox::{Durable, Gateway, Host, HostConfig, Jobs, JobsConfig};

use super::render_session;
use crate::App;

/// The sessions' clock, stopped: every event and every "ago" is the same.
const AT: u64 = 1_780_000_000_000;

/// A host with no plugins and no hooks in `dir`, its sessions on [`AT`].
async fn app(dir: &Path) -> App {
    let path = dir.join("glovebox.toml");
    std::fs::write(
        &path,
        "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\ncache_dir = \"cache\"\ndigests_dir = \"digests\"\n",
    )
    .unwrap();
    let config = HostConfig::load(&path).unwrap();
    let Durable {
        sessions,
        approvals,
        storage,
        outbox,
        recovery,
        repairs,
    } = glovebox::open_sessions(&config).unwrap();
    let sessions = Arc::try_unwrap(sessions)
        .ok()
        .expect("the sessions are not shared yet")
        .with_clock(|| AT);
    let ledger = Durable {
        sessions: Arc::new(sessions),
        approvals,
        storage,
        outbox,
        recovery,
        repairs,
    };
    let host = Host::load(config).await.unwrap();
    let gateway = Gateway::new(Arc::new(host), Arc::new(ledger));
    App {
        jobs: Jobs::new(gateway.clone(), JobsConfig::default()),
        gateway,
        hosts: Vec::new(),
        origins: Vec::new(),
        logins: Default::default(),
        failures: Default::default(),
    }
}

#[tokio::test]
async fn a_session_page_shows_its_header_chain_watch_timeline_and_scratch() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let sessions = app.gateway.sessions();
    let state = sessions
        .start(StartSession {
            role: Role::Workagent,
            project: "demo".into(),
            name: Some("fix-it".into()),
            tags: vec!["t1".into()],
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        })
        .unwrap();
    let id = state.header.id.clone();
    sessions
        .append(
            &id,
            EventKind::Note {
                text: "first <step>".into(),
            },
        )
        .unwrap();
    sessions
        .append(
            &id,
            EventKind::CallRequested {
                call_id: "c-1".into(),
                tool: "echo.echo".into(),
                input_digest: "ab".into(),
                input: Some("{}".into()),
                job_id: None,
                trace_id: None,
                parent_call: None,
            },
        )
        .unwrap();
    sessions.pause(&id, "look <here>").unwrap();

    let (title, body) = render_session(&app, &id, None).unwrap();
    assert_eq!(title, "Session fix-it");
    assert_eq!(body, PAGE.replace("SID", &id), "{body}");
    let (_, body) = render_session(&app, "fix-it", Some(3)).unwrap();
    assert_eq!(body, FROM_3.replace("SID", &id), "{body}");
    let (status, _) = render_session(&app, "s-none", None).unwrap_err();
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// The page of the session above (`SID` its id).
const PAGE: &str = "<h1>Session fix-it</h1><p><code>SID</code> · <span class=\"tag warn\">paused</span> · role <b>workagent</b> · owner <b>local</b> · project <b>demo</b> · started <time title=\"2026-05-28 20:26:40\">0s ago</time> · last progress <time title=\"2026-05-28 20:26:40\">0s ago</time></p><p class=\"warn\">paused: look &lt;here&gt; (by the host: an operator lifts it)</p><p id=\"verify\" class=\"good\">log verify: ok, 4 events, chain intact</p><h2>Watch</h2><table><tbody><tr class=\"single\" data-session=\"SID\"><td><a href=\"/ui/sessions/SID\">fix-it</a><br><code class=\"muted\">SID</code></td><td><span class=\"tag warn\">paused</span><br><span class=\"muted\">look &lt;here&gt;</span></td><td>workagent</td><td>local</td><td>demo</td><td><span class=\"tag plain\">t1</span></td><td>0s</td><td><time title=\"2026-05-28 20:26:40\">0s ago</time></td><td>-</td><td><span class=\"tag plain\">none</span></td><td><span class=\"muted\">no caps</span></td></tr></tbody></table><h2>Timeline</h2><p class=\"muted\">events 1 to 4 of 4</p><table id=\"timeline\"><thead><tr><th>#</th><th>time</th><th>event</th><th>detail</th></tr></thead><tbody><tr class=\"ev session_started\"><td>1</td><td>2026-05-28 20:26:40</td><td>session_started</td><td><details><summary>&quot;role&quot;: &quot;workagent&quot;,</summary><pre>{\n  &quot;type&quot;: &quot;session_started&quot;,\n  &quot;role&quot;: &quot;workagent&quot;,\n  &quot;project&quot;: &quot;demo&quot;,\n  &quot;name&quot;: &quot;fix-it&quot;,\n  &quot;tags&quot;: [\n    &quot;t1&quot;\n  ],\n  &quot;expected_duration_ms&quot;: null\n}</pre></details></td></tr><tr class=\"ev note\"><td>2</td><td>2026-05-28 20:26:40</td><td>note</td><td><q>first &lt;step&gt;</q></td></tr><tr class=\"ev call_requested\"><td>3</td><td>2026-05-28 20:26:40</td><td>call_requested</td><td>call <code>c-1</code> of <b>echo.echo</b> · input <code title=\"ab\">ab</code><details><summary>input</summary><pre dir=\"ltr\">{}</pre></details></td></tr><tr class=\"ev paused\"><td>4</td><td>2026-05-28 20:26:40</td><td>paused</td><td><span class=\"tag warn\">paused</span> look &lt;here&gt; (by the host)</td></tr></tbody></table><h2>Scratch directory</h2><p class=\"muted\" id=\"scratch\">empty (or not created yet)</p>";

/// The same from its third event on.
const FROM_3: &str = "<h1>Session fix-it</h1><p><code>SID</code> · <span class=\"tag warn\">paused</span> · role <b>workagent</b> · owner <b>local</b> · project <b>demo</b> · started <time title=\"2026-05-28 20:26:40\">0s ago</time> · last progress <time title=\"2026-05-28 20:26:40\">0s ago</time></p><p class=\"warn\">paused: look &lt;here&gt; (by the host: an operator lifts it)</p><p id=\"verify\" class=\"good\">log verify: ok, 4 events, chain intact</p><h2>Watch</h2><table><tbody><tr class=\"single\" data-session=\"SID\"><td><a href=\"/ui/sessions/SID\">fix-it</a><br><code class=\"muted\">SID</code></td><td><span class=\"tag warn\">paused</span><br><span class=\"muted\">look &lt;here&gt;</span></td><td>workagent</td><td>local</td><td>demo</td><td><span class=\"tag plain\">t1</span></td><td>0s</td><td><time title=\"2026-05-28 20:26:40\">0s ago</time></td><td>-</td><td><span class=\"tag plain\">none</span></td><td><span class=\"muted\">no caps</span></td></tr></tbody></table><h2>Timeline</h2><p class=\"muted\">events 3 to 4 of 4 · <a href=\"/ui/sessions/SID?from=1\">earlier</a></p><table id=\"timeline\"><thead><tr><th>#</th><th>time</th><th>event</th><th>detail</th></tr></thead><tbody><tr class=\"ev call_requested\"><td>3</td><td>2026-05-28 20:26:40</td><td>call_requested</td><td>call <code>c-1</code> of <b>echo.echo</b> · input <code title=\"ab\">ab</code><details><summary>input</summary><pre dir=\"ltr\">{}</pre></details></td></tr><tr class=\"ev paused\"><td>4</td><td>2026-05-28 20:26:40</td><td>paused</td><td><span class=\"tag warn\">paused</span> look &lt;here&gt; (by the host)</td></tr></tbody></table><h2>Scratch directory</h2><p class=\"muted\" id=\"scratch\">empty (or not created yet)</p>";
