//! Approvals that stay bounded (threat 49) and are settled when their
//! session ends (threat 50): the quota per principal and a session's end
//! through the real binary and a real MCP client over stdio, with the
//! destructive hook asking; a store written before the approvals' index,
//! read by the real binary; and every reader of approvals going through
//! pages of the index (a store that refuses whole-bucket reads).

use std::sync::Arc;
use std::time::{Duration, Instant};

use glovebox::manifest::HookConfig;
use glovebox::page::PageRequest;
use glovebox::session::{EndOutcome, Role, StartSession};
use glovebox::storage::{Durability, SledStore, Storage};
use glovebox::{CallError, Durable, Gateway, Host, Principal, Sessions};
use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::{self, NoWholeScan, Site, plugins};

/// A config whose `files.write` waits for a human (the destructive hook
/// asks), with `extra` tables, served to the built-in agent over stdio.
pub(crate) fn site(extra: &str) -> Site {
    let site = Site::with_plugins(&[(
        "files.toml",
        format!(
            "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
            plugins::TOOL_FILES
        ),
    )]);
    site.set_config(&format!(
        "{extra}[[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n",
        plugins::HOOK_DESTRUCTIVE
    ));
    std::fs::create_dir(site.path().join("work")).unwrap();
    site
}

fn pending(site: &Site) -> Vec<Value> {
    site.json(&["approvals", "--json"])
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits until `n` approvals are pending.
fn until_pending(site: &Site, n: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let list = pending(site);
        if list.len() >= n {
            return list;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} pending approvals, not {n}",
            list.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn write(path: &str) -> Value {
    json!({"path": path, "content": "x"})
}

fn start(server: &mut Server, id: u64, name: &str) -> String {
    let state = server.ok(
        id,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": name}),
    );
    state["id"].as_str().unwrap().to_string()
}

fn log_of(site: &Site, session: &str) -> Vec<Value> {
    let (code, out, err) = site.run(&["log", "export", session]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn threat_49_an_agent_that_piles_up_approvals_is_refused_by_the_named_quota() {
    // Why: every call a hook asked about parked an approval, without bound.
    let site = site("[approvals]\nwait = 0\n[quotas]\napprovals_per_principal = 2\n");
    let mut server = Server::initialized(&site.config(), &[]);
    // A paused session takes no call: the agent parks one per session.
    let mut sessions = Vec::new();
    for (i, name) in ["one", "two"].into_iter().enumerate() {
        sessions.push(start(&mut server, 10 + i as u64, name));
        let answer = server.call(20 + i as u64, "files.write", write("/data/a.txt"));
        assert!(
            answer["result"]["structuredContent"]["awaiting_approval"]["approval_id"].is_string(),
            "{answer}"
        );
    }
    assert_eq!(until_pending(&site, 2).len(), 2);

    // The third is denied, not parked, and says which quota and who set it.
    let third = start(&mut server, 30, "three");
    let answer = server.call(31, "files.write", write("/data/b.txt"));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let denied = &answer["result"]["structuredContent"]["denied"];
    let reason = denied["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    for words in [
        "quota reached",
        "principal `local` already has 2 calls waiting for approval",
        "`quotas.approvals_per_principal` = 2, set by the operator in [quotas]",
    ] {
        assert!(reason.contains(words), "{words}: {reason}");
    }
    assert_eq!(denied["hook"], "quota", "{answer}");
    assert_eq!(pending(&site).len(), 2, "nothing was parked");
    let show = site.json(&["session", "show", "three"]);
    assert_ne!(show["status"], "paused", "{show}");
    // Logged like any denial: the hook's ask, then the quota's deny.
    let log = log_of(&site, &third);
    let decided: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e["kind"]["type"] == "call_decided")
        .map(|e| {
            (
                e["kind"]["hook"].as_str().unwrap(),
                e["kind"]["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(decided, [("destructive", "ask"), ("quota", "deny")]);
    assert!(
        log.iter().all(|e| e["kind"]["type"] != "paused"),
        "nothing waits"
    );
    assert!(
        log.iter()
            .any(|e| e["kind"]["type"] == "call_finished" && e["kind"]["outcome"] == "denied"),
        "{log:?}"
    );

    // An operator is not held to it.
    site.start_workagent("op");
    let (code, _, err) = site.run(&[
        "call",
        "files.write",
        "--input",
        &write("/data/c.txt").to_string(),
        "--session",
        "op",
    ]);
    assert_eq!(code, 9, "awaits approval: {err}");
    assert_eq!(pending(&site).len(), 3);

    // Settling one of the agent's gives its place back.
    let first = pending(&site)
        .into_iter()
        .find(|a| a["session"] == sessions[0].as_str())
        .unwrap();
    let (code, _, err) = site.run(&["deny", first["id"].as_str().unwrap(), "--reason", "no"]);
    assert_eq!(code, 0, "{err}");
    start(&mut server, 40, "four");
    let answer = server.call(41, "files.write", write("/data/d.txt"));
    assert!(
        answer["result"]["structuredContent"]["awaiting_approval"]["approval_id"].is_string(),
        "{answer}"
    );
}

#[test]
fn threat_50_ending_a_session_denies_its_pending_call_and_the_waiting_client_hears_it() {
    // Why: an ended session's approval stayed pending, and its client waited on it.
    let site = site("");
    let mut server = Server::initialized(&site.config(), &[]);
    let session = start(&mut server, 1, "asks");
    // The call waits for a human (`[approvals] wait`, 5 minutes).
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "files.write", "arguments": write("/data/never.txt")}}));
    let approval = until_pending(&site, 1).remove(0);
    let id = approval["id"].as_str().unwrap().to_string();

    // The agent ends its session while its call waits.
    let asked = Instant::now();
    server.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "session_end", "arguments": {"outcome": "exit"}}}));
    let answer = server.response(2);
    assert!(
        asked.elapsed() < Duration::from_secs(60),
        "the waiting client heard at once"
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let reason = answer["result"]["structuredContent"]["denied"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    assert!(reason.contains("denied by host"), "{reason}");
    assert!(reason.contains("the session ended (exit)"), "{reason}");
    let ended = server.response(3);
    assert_eq!(ended["result"]["isError"], false, "{ended}");
    assert!(!site.path().join("work/never.txt").exists());

    // Recorded in the approval, and in the log as an operator's denial is.
    assert!(pending(&site).is_empty());
    let all = site.json(&["approvals", "--all", "--json"]);
    assert_eq!(all[0]["id"], id.as_str(), "{all}");
    assert_eq!(all[0]["status"]["state"], "denied", "{all}");
    assert_eq!(all[0]["status"]["by"], "host", "{all}");
    let log = log_of(&site, &session);
    let note = log
        .iter()
        .find(|e| e["kind"]["type"] == "note")
        .unwrap_or_else(|| panic!("{log:?}"));
    assert!(
        note["kind"]["text"]
            .as_str()
            .unwrap()
            .starts_with(&format!("approval {id} of call ")),
        "{note}"
    );
    assert!(
        note["kind"]["text"]
            .as_str()
            .unwrap()
            .contains("denied by host")
    );
    let types: Vec<&str> = log
        .iter()
        .map(|e| e["kind"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(types[types.len() - 2..], ["note", "ended"], "{types:?}");
}

#[test]
fn threat_50_pending_approvals_of_sessions_ended_before_are_settled_at_open() {
    // Why: stores written before ending settled approvals hold pending ones forever.
    let site = site("");
    let state = site.start_workagent("old");
    let session = state["id"].as_str().unwrap().to_string();
    let (code, _, err) = site.run(&["session", "end", "old", "--outcome", "exit"]);
    assert_eq!(code, 0, "{err}");
    {
        // As an older host left the store: a pending approval of the ended
        // session in the approvals bucket, and no index beside it.
        let store = SledStore::open(&site.data(), Durability::Flush).unwrap();
        for (key, _) in store.scan_page("approval_index", "", None, 1000).unwrap() {
            store.delete("approval_index", &key).unwrap();
        }
        let old = json!({
            "id": "ap-0123456789ab", "session": session, "session_name": "old",
            "call_id": "c-old", "tool": "files.write", "tool_digest": "d",
            "input_hash": "h", "input": "{}", "action": "write:file",
            "hook": "destructive", "pattern": "*", "reason": "asks",
            "requested_at_ms": 1, "status": {"state": "pending"}
        });
        store
            .put("approvals", "ap-0123456789ab", old.to_string().as_bytes())
            .unwrap();
    }
    assert!(pending(&site).is_empty(), "settled when the store opened");
    let all = site.json(&["approvals", "--all", "--json"]);
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
    assert_eq!(all[0]["status"]["state"], "denied", "{all}");
    assert_eq!(all[0]["status"]["by"], "host", "{all}");
    assert!(
        all[0]["status"]["reason"]
            .as_str()
            .unwrap()
            .contains("the session was already completed"),
        "{all}"
    );
    let log = log_of(&site, &session);
    assert!(
        log.iter().any(|e| e["kind"]["type"] == "note"
            && e["kind"]["text"]
                .as_str()
                .unwrap()
                .contains("approval ap-0123456789ab of call c-old (files.write) denied by host")),
        "{log:?}"
    );
}

/// A gateway over a store that refuses whole-bucket reads of what agents
/// grow, with `files.write` asked about.
async fn paged_gateway() -> (
    Gateway,
    Arc<Durable>,
    Arc<NoWholeScan>,
    tempfile::TempDir,
    tempfile::TempDir,
) {
    let workspace = tempfile::tempdir().unwrap();
    let mut files = util::manifest("files", plugins::TOOL_FILES);
    files.fs.push(util::fs_grant(
        workspace.path(),
        "/data",
        glovebox::manifest::Access::ReadWrite,
    ));
    let (mut config, data) = util::config(vec![files]);
    config.hooks = vec![HookConfig {
        name: "destructive".into(),
        component: plugins::HOOK_DESTRUCTIVE.into(),
        sha256: None,
        settings: json!({"mode": "ask"}),
        deadline: Duration::from_millis(500),
        memory: 16 * 1024 * 1024,
        fuel: None,
        after: false,
        reuse: 1,
        signers: None,
    }];
    config.approvals.expire_after = Some(Duration::from_secs(3600));
    let host = Arc::new(Host::load(config).await.unwrap());
    let sled: Arc<dyn Storage> =
        Arc::new(SledStore::open(&data.path().join("store"), Durability::Flush).unwrap());
    let guarded = Arc::new(NoWholeScan::new(sled));
    let storage: Arc<dyn Storage> = guarded.clone();
    let durable = Arc::new(Durable {
        sessions: Arc::new(Sessions::new(storage.clone())),
        approvals: Arc::new(glovebox::approvals::Approvals::new(storage.clone())),
        outbox: Arc::new(glovebox::notify::Outbox::new(storage.clone(), Vec::new())),
        storage,
        recovery: Default::default(),
        repairs: Vec::new(),
    });
    let gw = Gateway::new(host, durable.clone());
    (gw, durable, guarded, workspace, data)
}

#[tokio::test]
async fn threat_49_listings_sweeps_expiry_and_ends_read_approvals_a_page_at_a_time() {
    // Why: the listing, the dashboard, its live check and the sweep decoded every approval.
    let (gw, durable, guarded, _workspace, _data) = paged_gateway().await;
    let agent = Principal::local();
    let mut ids = Vec::new();
    for n in 0..5 {
        let state = gw
            .scope(&agent)
            .start_session(StartSession {
                role: Role::Workagent,
                project: "p".into(),
                name: Some(format!("s{n}")),
                tags: vec![],
                expected_duration: None,
                budget: Default::default(),
                completion: Default::default(),
            })
            .await
            .unwrap();
        let call = gw
            .admit(
                "files.write",
                &json!({"path": format!("/data/{n}"), "content": "x"}).to_string(),
            )
            .unwrap();
        let report = gw
            .scope(&agent)
            .call(&state.header.id, call, None, None)
            .await
            .unwrap();
        match report.outcome {
            Err(CallError::AwaitingApproval { approval_id, .. }) => {
                ids.push((state.header.id, approval_id))
            }
            other => panic!("{other:?}"),
        }
    }
    let approvals = &durable.approvals;
    // Pages of two, in the order asked.
    let mut seen = Vec::new();
    let mut req = PageRequest::first(2);
    loop {
        let page = approvals.page(false, &req).unwrap();
        assert!(page.items.len() <= 2);
        seen.extend(page.items.into_iter().map(|a| a.id));
        match page.next_cursor {
            Some(c) => req.cursor = Some(c),
            None => break,
        }
    }
    let asked: Vec<String> = ids.iter().map(|(_, a)| a.clone()).collect();
    assert_eq!(seen, asked);
    assert_eq!(approvals.count_pending(1000).unwrap(), 5);
    assert_eq!(
        approvals.oldest_pending_of(&ids[1].0).unwrap().unwrap().id,
        ids[1].1
    );
    // Each approval carries the agent it counts against.
    assert_eq!(
        approvals.get(&ids[0].1).unwrap().principal.as_deref(),
        Some("local")
    );

    // An end, a denial and a sweep (its expiry pass too), all through the index.
    gw.scope(&agent)
        .end_session(&ids[0].0, EndOutcome::Exit)
        .await
        .unwrap();
    gw.scope(&glovebox::cli_operator())
        .approvals()
        .deny(&ids[1].1, "no")
        .await
        .unwrap();
    glovebox::sweep::pass(&gw).await.unwrap();
    glovebox::sweep::collect_finished(&gw).await;
    let all = approvals.page(true, &PageRequest::default()).unwrap();
    let states: Vec<String> = all
        .items
        .iter()
        .map(|a| {
            serde_json::to_value(&a.status).unwrap()["state"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        states,
        ["pending", "pending", "pending", "denied", "denied"]
    );
    let mut settled: Vec<String> = approvals
        .settled(&PageRequest::first(1))
        .unwrap()
        .items
        .into_iter()
        .chain(approvals.settled(&PageRequest::first(2)).unwrap().items)
        .map(|a| a.id)
        .collect();
    settled.sort();
    settled.dedup();
    let mut expected = vec![ids[0].1.clone(), ids[1].1.clone()];
    expected.sort();
    assert_eq!(settled, expected);
    assert_eq!(
        guarded.tried(),
        Vec::<String>::new(),
        "no whole-bucket read"
    );
}
