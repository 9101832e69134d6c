//! The governed memory bank over the real binary: an agent proposes over
//! MCP, an operator reviews with `glovebox memory ...` through the running
//! server's control socket, and only approved entries reach new sessions;
//! proposals and searches are events in the agent's session log; each
//! refusal names its rule and writes nothing.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::Site;

const MEMORY: &str = "[memory]\nmax_entry_bytes = \"64B\"\n[memory.propose]\nproject = [\"workagent\"]\nuser = [\"workagent\"]\n";

/// The uid this test runs as: the operator the server records.
fn operator() -> String {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    format!("cli:{}", String::from_utf8_lossy(&out.stdout).trim())
}

/// A site with the memory settings, and its MCP server (the built-in agent
/// `local`) once its control socket is up.
fn serving() -> (Site, Server) {
    let site = Site::with_config(MEMORY, &[]);
    let server = Server::initialized(&site.config(), &[]);
    let socket = site.path().join("data/control.sock");
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no control socket"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (site, server)
}

fn ok(server: &mut Server, id: u64, tool: &str, args: Value) -> Value {
    let answer = server.call(id, tool, args);
    assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
    answer["result"]["structuredContent"].clone()
}

fn refused(server: &mut Server, id: u64, tool: &str, args: Value) -> (String, String) {
    let answer = server.call(id, tool, args);
    assert_eq!(answer["result"]["isError"], true, "{tool}: {answer}");
    let error = &answer["result"]["structuredContent"]["error"];
    (
        error["kind"].as_str().unwrap().to_string(),
        error["message"].as_str().unwrap().to_string(),
    )
}

/// The memory texts a session started with (its `context` from memory).
fn memory_context(state: &Value) -> Vec<String> {
    state["context"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["source"].as_str().unwrap().starts_with("memory:"))
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect()
}

fn start(server: &mut Server, id: u64) -> Value {
    ok(
        server,
        id,
        "session_start",
        json!({"role": "workagent", "project": "demo"}),
    )
}

#[test]
fn a_proposed_entry_reaches_new_sessions_only_after_memory_review_and_approve() {
    let (site, mut server) = serving();
    let worker = start(&mut server, 1);
    let proposed = ok(
        &mut server,
        2,
        "memory_propose",
        json!({"scope": "project", "text": "the staging DB needs --ssl"}),
    );
    let entry = &proposed["entry"];
    let id = entry["id"].as_str().unwrap().to_string();
    assert_eq!(entry["state"], "proposed");
    assert_eq!(entry["scope"], "project:demo");
    assert_eq!(entry["provenance"]["by"], "local");
    assert_eq!(entry["provenance"]["session"], worker["id"]);

    // Not approved: a new session does not get it, nor does a search.
    let before = start(&mut server, 3);
    assert!(memory_context(&before).is_empty(), "{before}");
    let found = ok(
        &mut server,
        4,
        "memory_search",
        json!({"query": "staging ssl"}),
    );
    assert_eq!(found["entries"], json!([]));

    // The operator reviews it while the server runs.
    let (code, out, err) = site.run(&["memory", "review"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&id) && out.contains("the staging DB needs --ssl"),
        "{out}"
    );
    let review = site.json(&["memory", "review", "--json"]);
    assert_eq!(review.as_array().unwrap().len(), 1);
    let approved = site.json(&["memory", "approve", &id]);
    assert_eq!(approved["state"], "approved");
    assert_eq!(approved["approved"]["by"], operator());
    assert_eq!(site.json(&["memory", "review", "--json"]), json!([]));

    let after = start(&mut server, 5);
    assert_eq!(memory_context(&after), ["the staging DB needs --ssl"]);
    let found = ok(
        &mut server,
        6,
        "memory_search",
        json!({"query": "SSL", "limit": 5}),
    );
    assert_eq!(found["entries"][0]["id"], id.as_str(), "{found}");
    assert_eq!(found["entries"][0]["matched_words"], 1);

    // Logged: the start's memory, and the search, in this session; the
    // proposal in the worker's.
    let log = ok(&mut server, 7, "session_log", json!({}));
    let types: Vec<&str> = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"]["type"].as_str().unwrap())
        .collect();
    assert!(
        types.contains(&"context_injected") && types.contains(&"memory_searched"),
        "{types:?}"
    );
    let worker_log = ok(
        &mut server,
        8,
        "session_log",
        json!({"session": worker["id"]}),
    );
    let proposal = worker_log["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"]["type"] == "memory_proposed")
        .expect("a memory_proposed event")
        .clone();
    assert_eq!(proposal["kind"]["id"], id.as_str());
    assert_eq!(proposal["by"], "local");

    // Retired: new sessions no longer get it; the bank keeps it.
    let retired = site.json(&["memory", "retire", &id, "--reason", "migrated"]);
    assert_eq!(retired["retired"]["by"], operator());
    assert!(memory_context(&start(&mut server, 9)).is_empty());
    let listed = site.json(&[
        "memory",
        "list",
        "--scope",
        "project:demo",
        "--state",
        "retired",
        "--json",
    ]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
}

#[test]
fn bad_memory_input_is_refused_with_its_rule_and_nothing_is_written() {
    let (site, mut server) = serving();
    // No session bound: the proposal has no session to be logged in.
    let (kind, message) = refused(
        &mut server,
        1,
        "memory_propose",
        json!({"scope": "project", "text": "x"}),
    );
    assert_eq!(kind, "no_session", "{message}");
    start(&mut server, 2);
    for (n, args, kind, parts) in [
        (
            3,
            json!({"scope": "user:bob", "text": "x"}),
            "memory_not_allowed",
            &["`user:bob`", "own scopes"][..],
        ),
        (
            4,
            json!({"scope": "role", "text": "x"}),
            "memory_not_allowed",
            &["[memory.propose] role", "adds \"workagent\""][..],
        ),
        (
            5,
            json!({"scope": "project", "text": "x".repeat(65)}),
            "memory_invalid_input",
            &["at most 64 bytes", "max_entry_bytes", "shorten"][..],
        ),
        (
            6,
            json!({"scope": "team", "text": "x"}),
            "memory_invalid_input",
            &["project:NAME"][..],
        ),
    ] {
        let (got, message) = refused(&mut server, n, "memory_propose", args);
        assert_eq!(got, kind, "{message}");
        for part in parts {
            assert!(message.contains(part), "{part:?} not in {message}");
        }
    }
    assert_eq!(
        site.json(&["memory", "list", "--json"]),
        json!([]),
        "nothing written"
    );

    // The operator's side: an unknown id, a second approval, a reject without reason.
    let (code, _, err) = site.run(&["memory", "approve", "m-000000000000"]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("no memory entry `m-000000000000`") && err.contains("memory list"),
        "{err}"
    );
    let entry = ok(
        &mut server,
        7,
        "memory_propose",
        json!({"scope": "user", "text": "I like tabs"}),
    )["entry"]
        .clone();
    assert_eq!(entry["scope"], "user:local");
    let id = entry["id"].as_str().unwrap();
    let (code, _, err) = site.run(&["memory", "retire", id]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("is proposed") && err.contains("reject"),
        "{err}"
    );
    site.json(&["memory", "approve", id]);
    let (code, _, err) = site.run(&["memory", "approve", id]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("already approved"), "{err}");
    let (code, _, err) = site.run(&["memory", "list", "--scope", "team:x"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--scope"), "{err}");
}

/// `memory_propose` and `memory_search` are actions the hook chain judges
/// (`glovebox.memory_propose`, `glovebox:memory:propose`): a role allow-list
/// that names only the search refuses the proposal, naming the hook and the
/// tool, and nothing is written.
#[test]
fn memory_actions_are_judged_by_the_hook_chain() {
    let site = Site::with_config(MEMORY, &[]);
    site.set_config(&format!(
        "{MEMORY}[[hook]]\nname = \"roles\"\ncomponent = \"{}\"\n[hook.settings.roles]\nworkagent = [\"glovebox.session_*\", \"glovebox.memory_search\"]\n",
        crate::util::plugins::HOOK_ROLE_ALLOWLIST
    ));
    let mut server = Server::initialized(&site.config(), &[]);
    start(&mut server, 1);
    let answer = server.call(
        2,
        "memory_propose",
        json!({"scope": "project", "text": "x"}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let denied = &answer["result"]["structuredContent"]["denied"];
    assert_eq!(denied["hook"], "roles", "{answer}");
    assert!(
        denied["reason"]
            .as_str()
            .is_some_and(|r| r.contains("glovebox.memory_propose")),
        "{answer}"
    );
    let found = ok(&mut server, 3, "memory_search", json!({"query": "x"}));
    assert_eq!(found["entries"], json!([]));
    drop(server);
    assert_eq!(
        site.json(&["memory", "list", "--json"]),
        json!([]),
        "nothing written"
    );
}

/// The dashboard's memory page: the proposals with their provenance, and
/// Approve / Reject buttons that act as `glovebox memory approve|reject`,
/// recorded as the operator who pressed them.
#[test]
fn the_dashboard_memory_page_approves_and_rejects_proposals_as_the_operator() {
    use crate::dashboard::{bearer, http, serve};
    let (site, mut server) = serving();
    start(&mut server, 1);
    let mut ids = Vec::new();
    for (n, text) in [(2, "use the staging DB"), (3, "skip <the> tests")] {
        let proposed = ok(
            &mut server,
            n,
            "memory_propose",
            json!({"scope": "project", "text": text}),
        );
        ids.push(proposed["entry"]["id"].as_str().unwrap().to_string());
    }
    drop(server);
    let (code, token, err) = site.run(&["principal", "add", "ops", "--kind", "operator"]);
    assert_eq!(code, 0, "{err}");
    let served = serve(&site);
    let admin = served.admin.as_str();
    let op = bearer(token.trim());
    let origin = format!("http://{admin}");
    let page = http(admin, "GET", "/ui/memory", &[("Authorization", &op)], "");
    assert_eq!(page.status, 200, "{}", page.body);
    for id in &ids {
        assert!(
            page.body.contains(&format!("id=\"approve-{id}\"")),
            "{}",
            page.body
        );
    }
    assert!(
        page.body.contains("skip &lt;the&gt; tests"),
        "escaped: {}",
        page.body
    );
    let post = |path: &str, body: &str| {
        http(
            admin,
            "POST",
            path,
            &[
                ("Authorization", &op),
                ("Origin", &origin),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            body,
        )
    };
    let a = post(&format!("/ui/memory/{}/approve", ids[0]), "");
    assert_eq!(a.status, 303, "{}", a.body);
    // A rejection without a reason is refused, and changes nothing.
    let a = post(&format!("/ui/memory/{}/reject", ids[1]), "reason=");
    assert_eq!(a.status, 409, "{}", a.body);
    assert!(a.body.contains("needs a reason"), "{}", a.body);
    let a = post(
        &format!("/ui/memory/{}/reject", ids[1]),
        "reason=tests+stay",
    );
    assert_eq!(a.status, 303, "{}", a.body);
    // Approving twice: refused, naming the state.
    let a = post(&format!("/ui/memory/{}/approve", ids[0]), "");
    assert_eq!(a.status, 409, "{}", a.body);
    let approved = site.json(&["memory", "show", &ids[0]]);
    assert_eq!(approved["state"], "approved");
    assert_eq!(approved["approved"]["by"], "ops");
    let rejected = site.json(&["memory", "show", &ids[1]]);
    assert_eq!(rejected["state"], "rejected");
    assert_eq!(rejected["rejected"]["reason"], "tests stay");
    drop(served);
}

#[test]
fn threat_49_proposals_past_the_quota_are_refused_and_searches_page_on() {
    // Why: an agent could pile up proposals, and every search read the whole bank.
    let site = Site::with_config(
        &format!("{MEMORY}[quotas]\nmemory_proposals_per_principal = 2\n"),
        &[],
    );
    let mut server = Server::initialized(&site.config(), &[]);
    let socket = site.path().join("data/control.sock");
    let start_wait = Instant::now();
    while !socket.exists() {
        assert!(start_wait.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(20));
    }
    start(&mut server, 1);
    let mut ids = Vec::new();
    for (i, text) in ["ssl one", "ssl ssl two"].into_iter().enumerate() {
        let proposed = ok(
            &mut server,
            10 + i as u64,
            "memory_propose",
            json!({"scope": "project", "text": text}),
        );
        ids.push(proposed["entry"]["id"].as_str().unwrap().to_string());
    }
    let (kind, message) = refused(
        &mut server,
        20,
        "memory_propose",
        json!({"scope": "project", "text": "ssl ssl ssl three"}),
    );
    assert_eq!(kind, "quota", "{message}");
    assert!(
        message.contains("`quotas.memory_proposals_per_principal` = 2, set by the operator"),
        "{message}"
    );
    let review = site.json(&["memory", "review", "--json"]);
    assert_eq!(review.as_array().unwrap().len(), 2, "nothing was written");
    // Reviewed, they give their places back.
    for id in &ids {
        let (code, _, err) = site.run(&["memory", "approve", id]);
        assert_eq!(code, 0, "{err}");
    }
    let third = ok(
        &mut server,
        21,
        "memory_propose",
        json!({"scope": "project", "text": "ssl ssl ssl three"}),
    );
    let third = third["entry"]["id"].as_str().unwrap().to_string();
    let (code, _, err) = site.run(&["memory", "approve", &third]);
    assert_eq!(code, 0, "{err}");

    // A search a page at a time: the best first, then the rest with the cursor.
    let first = ok(
        &mut server,
        30,
        "memory_search",
        json!({"query": "ssl", "limit": 2}),
    );
    let found: Vec<&str> = first["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(found, [third.as_str(), ids[1].as_str()], "{first}");
    let cursor = first["next_cursor"]
        .as_str()
        .unwrap_or_else(|| panic!("{first}"));
    let rest = ok(
        &mut server,
        31,
        "memory_search",
        json!({"query": "ssl", "limit": 2, "cursor": cursor}),
    );
    assert_eq!(rest["entries"][0]["id"], ids[0].as_str(), "{rest}");
    assert!(rest["next_cursor"].is_null(), "{rest}");
    // The operator's listings page too.
    let (code, out, err) = site.run(&["memory", "list", "--json", "--limit", "2"]);
    assert_eq!(code, 0, "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let cursor = err
        .split("`--cursor ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no cursor in {err}"));
    let next = site.json(&[
        "memory", "list", "--json", "--limit", "2", "--cursor", cursor,
    ]);
    assert_eq!(next.as_array().unwrap().len(), 1, "{next}");
}

#[tokio::test]
async fn threat_49_memory_search_proposals_and_session_starts_read_pages_of_the_index() {
    // Why: `memory_search` and every session start decoded the whole bank.
    use glovebox::memory::{MemoryFilter, MemoryState};
    use glovebox::page::PageRequest;
    use glovebox::session::{Role, StartSession};
    use glovebox::storage::{Durability, SledStore, Storage};
    use std::sync::Arc;

    let (mut config, data) = crate::util::config(vec![]);
    config.memory.propose.insert(
        glovebox::manifest::MemoryScopeKind::Project,
        vec![Role::Workagent],
    );
    let host = Arc::new(glovebox::Host::load(config.clone()).await.unwrap());
    let sled: Arc<dyn Storage> =
        Arc::new(SledStore::open(&data.path().join("store"), Durability::Flush).unwrap());
    let guarded = Arc::new(crate::util::NoWholeScan::new(sled));
    let storage: Arc<dyn Storage> = guarded.clone();
    let durable = Arc::new(glovebox::Durable {
        sessions: Arc::new(glovebox::Sessions::with_config(
            storage.clone(),
            glovebox::session::SessionsConfig {
                memory: config.memory.clone(),
                ..Default::default()
            },
        )),
        approvals: Arc::new(glovebox::approvals::Approvals::new(storage.clone())),
        outbox: Arc::new(glovebox::notify::Outbox::new(storage.clone(), Vec::new())),
        storage,
        recovery: Default::default(),
        repairs: Vec::new(),
    });
    let gw = glovebox::Gateway::new(host, durable);
    let agent = glovebox::Principal::local();
    let start = || StartSession {
        role: Role::Workagent,
        project: "demo".into(),
        name: None,
        tags: vec![],
        expected_duration: None,
        budget: Default::default(),
        completion: Default::default(),
    };
    let s = gw.scope(&agent).start_session(start()).await.unwrap();
    let bank = gw.memory_bank();
    for n in 0..5 {
        let (entry, _) = gw
            .scope(&agent)
            .memory_propose(&s.header.id, "project", &format!("tls rule {n}"))
            .await
            .unwrap();
        if n < 4 {
            bank.approve(&entry.id, "op", 10 + n).unwrap();
        }
    }
    let mut found = 0;
    let mut page = PageRequest::first(3);
    loop {
        let (hits, _) = gw
            .scope(&agent)
            .memory_search(&s.header.id, "tls", &page)
            .await
            .unwrap();
        found += hits.items.len();
        match hits.next_cursor {
            Some(c) => page.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(found, 4, "the approved ones, each once");
    let s2 = gw.scope(&agent).start_session(start()).await.unwrap();
    assert_eq!(
        s2.context
            .iter()
            .filter(|c| c.source.starts_with("memory:"))
            .count(),
        4
    );
    let proposed = bank
        .page(
            &MemoryFilter {
                state: Some(MemoryState::Proposed),
                ..Default::default()
            },
            &PageRequest::default(),
        )
        .unwrap();
    assert_eq!(proposed.items.len(), 1);
    assert_eq!(
        guarded.tried(),
        Vec::<String>::new(),
        "no whole-bucket read"
    );
}
