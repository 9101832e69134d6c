//! One pipeline for every way in: the same call made through the CLI, MCP, a
//! background job, an operator's approval and a re-run of an interrupted call
//! (each through the real binary) leaves the same records in the session's
//! log, and a policy replay judges those calls with the same hooks.

use std::sync::Arc;

use glovebox::HostConfig;
use glovebox::session::{Event, EventKind};
use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::{Site, plugins};

const INPUT: &str = r#"{"message":"the same call"}"#;

/// The echo tool twice: as `echo` (idempotent) and as `guarded` (the same
/// component, declared destructive), behind the destructive-gate hook asking
/// for destructive calls.
fn site() -> Site {
    let site = Site::with_plugins(&[
        (
            "echo.toml",
            format!(
                "name = \"echo\"\ncomponent = \"{}\"\n[tools.echo]\nidempotent = true\n",
                plugins::TOOL_ECHO
            ),
        ),
        (
            "guarded.toml",
            format!(
                "name = \"guarded\"\ncomponent = \"{}\"\n[tools.echo]\ndestructive = true\n",
                plugins::TOOL_ECHO
            ),
        ),
    ]);
    let config = format!(
        "data_dir = \"data\"\n[runtime]\n{}\n\
         [[plugin]]\nmanifest = \"echo.toml\"\n[[plugin]]\nmanifest = \"guarded.toml\"\n\
         [[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n",
        crate::util::cache_keys(),
        plugins::HOOK_DESTRUCTIVE
    );
    std::fs::write(site.config(), config).unwrap();
    site
}

/// The records of one call: its events in log order.
#[derive(Debug)]
struct Call {
    events: Vec<Event>,
}

impl Call {
    fn kinds(&self) -> Vec<&'static str> {
        self.events.iter().map(|e| e.kind.name()).collect()
    }

    fn requested(&self) -> (&str, &str, Option<&str>) {
        match &self.events[0].kind {
            EventKind::CallRequested {
                tool,
                input_digest,
                job_id,
                ..
            } => (tool, input_digest, job_id.as_deref()),
            other => panic!("a call starts with call_requested, not {other:?}"),
        }
    }

    fn decisions(&self) -> Vec<(String, String)> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::CallDecided { hook, decision, .. } => {
                    Some((hook.clone(), decision.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn started(&self) -> (&str, &str) {
        self.events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::CallStarted {
                    idempotency_key,
                    tool_digest,
                    ..
                } => Some((idempotency_key.as_str(), tool_digest.as_str())),
                _ => None,
            })
            .expect("the call started")
    }

    /// Its outcome and output digest, once it finished.
    fn finished(&self) -> Option<(&str, &str)> {
        match &self.events.last()?.kind {
            EventKind::CallFinished {
                outcome,
                output_digest,
                ..
            } => Some((outcome, output_digest)),
            _ => None,
        }
    }
}

/// Every call of `session`, grouped by call id, in the order they were requested.
fn calls(events: &[Event]) -> Vec<Call> {
    let mut order: Vec<String> = Vec::new();
    let mut by_id: std::collections::HashMap<String, Vec<Event>> = Default::default();
    for e in events {
        let id = match &e.kind {
            EventKind::CallRequested { call_id, .. }
            | EventKind::CallDecided { call_id, .. }
            | EventKind::CallStarted { call_id, .. }
            | EventKind::CallFinished { call_id, .. }
            | EventKind::CallInterrupted { call_id, .. } => call_id.clone(),
            _ => continue,
        };
        if !by_id.contains_key(&id) {
            order.push(id.clone());
        }
        by_id.entry(id).or_default().push(e.clone());
    }
    order
        .into_iter()
        .map(|id| Call {
            events: by_id.remove(&id).unwrap(),
        })
        .collect()
}

#[test]
fn one_call_through_every_way_in_leaves_the_same_records() {
    let site = site();
    let (code, _, err) = site.run(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "pipeline",
        "--name",
        "same",
    ]);
    assert_eq!(code, 0, "{err}");

    // 1. The CLI.
    let (code, out, err) = site.run(&["call", "--session", "same", "echo.echo", "--input", INPUT]);
    assert_eq!(code, 0, "{err}");
    let output: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(output["message"], "the same call");

    // 2. MCP over stdio, in the same session.
    {
        let mut server = Server::start(&site.config());
        let init = server.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "pipeline-test", "version": "0"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let resumed = server.call(2, "session_resume", json!({"session": "same"}));
        assert_ne!(resumed["result"]["isError"], true, "{resumed}");
        let called = server.call(3, "echo.echo", serde_json::from_str(INPUT).unwrap());
        assert_eq!(
            called["result"]["structuredContent"]["message"], "the same call",
            "{called}"
        );
    }

    // 3. A background job (queued by the CLI, run by `job wait`).
    let job = site.json(&[
        "job",
        "spawn",
        "--session",
        "same",
        "echo.echo",
        "--input",
        INPUT,
    ]);
    let job_id = job["id"].as_str().unwrap().to_string();
    let (code, _, err) = site.run(&["job", "wait", &job_id, "--timeout", "60s"]);
    assert_eq!(code, 0, "{err}");

    // 4. An operator's approval: the destructive twin is asked about, then approved.
    let (code, _, err) = site.run(&[
        "call",
        "--session",
        "same",
        "guarded.echo",
        "--input",
        INPUT,
    ]);
    assert_ne!(code, 0, "a destructive call ran without approval");
    let approval_id = err
        .split_whitespace()
        .find(|w| w.starts_with("ap-"))
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-'))
        .unwrap_or_else(|| panic!("no approval id in: {err}"))
        .to_string();
    let (code, out, err) = site.run(&["approve", &approval_id]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the same call"), "{out}");

    // 5. A re-run: a call left in flight by a host that died (written as the
    // pipeline writes its write-ahead record, never finished), marked
    // interrupted at the next open, then re-run with its original key.
    let interrupted = {
        let config = HostConfig::load(&site.config()).unwrap();
        let durable = glovebox::open_sessions(&config).unwrap();
        let sessions = Arc::clone(&durable.sessions);
        let id = sessions.show("same").unwrap().header.id;
        let digest = glovebox::session::digest(&std::fs::read(plugins::TOOL_ECHO).unwrap());
        let call_id = "c-interrupted-by-the-test".to_string();
        sessions
            .append_with(&id, |_, _| {
                (
                    vec![
                        EventKind::CallRequested {
                            call_id: call_id.clone(),
                            tool: "echo.echo".into(),
                            input_digest: glovebox::session::digest(INPUT.as_bytes()),
                            input: Some(INPUT.into()),
                            job_id: None,
                            trace_id: None,
                            parent_call: None,
                        },
                        EventKind::CallStarted {
                            call_id: call_id.clone(),
                            tool: "echo.echo".into(),
                            idempotency_key: format!("{id}/{call_id}"),
                            idempotent: true,
                            tool_digest: digest,
                            cost_micros: 0,
                        },
                    ],
                    (),
                )
            })
            .unwrap();
        call_id
    };
    let (code, out, err) = site.run(&["session", "rerun", "same", &interrupted]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the same call"), "{out}");

    // 6. A policy replay judges every recorded call with the same chain, and
    // changes nothing.
    let before = site.log("same").len();
    let replay = site.json(&["policy", "replay", "--session", "same", "--json"]);
    assert_eq!(replay["changes"], json!([]), "{replay}");
    assert_eq!(site.log("same").len(), before, "a replay wrote to the log");

    let events = site.log("same");
    let calls = calls(&events);
    let ran: Vec<&Call> = calls
        .iter()
        .filter(|c| c.finished().is_some_and(|f| f.0 == "ok"))
        .collect();
    // CLI, MCP, job, approved, re-run.
    assert_eq!(
        ran.len(),
        5,
        "{:#?}",
        calls.iter().map(Call::kinds).collect::<Vec<_>>()
    );
    assert_eq!(replay["calls"], json!(calls.len()), "{replay}");

    // The same input, the same component, the same output, logged the same way.
    let input_digest = ran[0].requested().1;
    let tool_digest = ran[0].started().1;
    let output_digest = ran[0].finished().unwrap().1;
    for call in &ran {
        assert_eq!(call.requested().1, input_digest);
        assert_eq!(call.started().1, tool_digest);
        assert_eq!(call.finished().unwrap().1, output_digest);
    }
    let judged = vec![("destructive".to_string(), "allow".to_string())];
    let (cli, mcp, job, approved, rerun) = (ran[0], ran[1], ran[2], ran[3], ran[4]);
    for (way, call) in [("cli", cli), ("mcp", mcp), ("job", job)] {
        assert_eq!(
            call.kinds(),
            [
                "call_requested",
                "call_decided",
                "call_started",
                "call_finished"
            ],
            "{way}"
        );
        assert_eq!(call.requested().0, "echo.echo", "{way}");
        assert_eq!(call.decisions(), judged, "{way}");
    }
    assert_eq!(job.requested().2, Some(job_id.as_str()));
    assert_eq!(cli.requested().2, None);
    // The write-ahead record is one append: its events are consecutive.
    for call in [cli, mcp, job, approved] {
        let seqs: Vec<u64> = call.events[..3].iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [seqs[0], seqs[0] + 1, seqs[0] + 2]);
    }
    // The approved call: judged by the operator, for the asked call.
    assert_eq!(approved.requested().0, "guarded.echo");
    assert_eq!(
        approved.decisions(),
        vec![("operator".to_string(), "allow".to_string())]
    );
    let asked = calls
        .iter()
        .find(|c| c.decisions() == vec![("destructive".to_string(), "ask".to_string())])
        .expect("the asked call is logged");
    assert_eq!(
        asked.kinds(),
        ["call_requested", "call_decided", "call_finished"]
    );
    assert_eq!(asked.finished().unwrap().0, "awaiting_approval");
    // The re-run keeps the interrupted call's key and its judgement.
    let original = calls
        .iter()
        .find(|c| {
            c.events
                .iter()
                .any(|e| matches!(&e.kind, EventKind::CallInterrupted { .. }))
        })
        .expect("the interrupted call is marked");
    assert_eq!(rerun.started().0, original.started().0);
    assert_eq!(
        rerun.kinds(),
        ["call_requested", "call_started", "call_finished"]
    );
}
