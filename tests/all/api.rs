//! The HTTP API for operators' automation (`/api/v1` on the admin
//! listener), over the real binary: its OpenAPI document validates with the
//! Python OpenAPI validator (`openapi-spec-validator` from PyPI, installed
//! into a virtualenv under the target dir on first run), every route it
//! lists is called with real records and answers 200 with a body its
//! schema accepts, and the refusals (no token, an agent's token, another
//! origin, bad arguments, a record that is not there) answer with their own
//! status and the one error shape.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::dashboard::{bearer, http, pending_write, serve, site, site_with, start_session};
use crate::mcp::Server;

/// The validator's release the test is written against.
const VALIDATOR: &str = "openapi-spec-validator==0.7.2";

/// A virtualenv with the OpenAPI validator, made once per target dir.
fn validator() -> PathBuf {
    crate::util::venv("openapi-venv", &[VALIDATOR])
}

/// The answer's body as JSON.
fn json_of(answer: &crate::dashboard::Answer) -> Value {
    serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", answer.body))
}

/// Checks `value` against `schema`, whose references point into the
/// document's components.
fn assert_fits(document: &Value, schema: &Value, value: &Value, what: &str) {
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": document["components"],
        "allOf": [schema],
    });
    let validator = jsonschema::validator_for(&root).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:?}\n{value:#}");
}

/// Each operation's arguments, as every surface it is served on shows them:
/// its MCP tool's input schema (`tools`, a server's `tools/list`), the API
/// document's parameters and body (`document`, as served), and
/// `glovebox operation NAME --schema`, are one schema.
fn same_arguments_on_every_surface(site: &crate::util::Site, document: &Value, tools: &Value) {
    let mut served = 0;
    for entry in glovebox::operations::all() {
        let cli = site.json(&["operation", entry.name, "--schema"])["arguments"].clone();
        assert_eq!(cli["type"], "object", "{}: {cli}", entry.name);
        if let Some(tool) = entry.mcp {
            let listed = tools
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == tool)
                .unwrap_or_else(|| panic!("`{tool}` ({}) is not in tools/list", entry.name));
            assert_eq!(
                listed["inputSchema"], cli,
                "{}: MCP `{tool}` and `glovebox operation --schema` differ",
                entry.name
            );
            served += 1;
        }
        if entry.http.is_some() {
            let http = api_arguments(document, entry.name);
            let properties = |schema: &Value| schema["properties"].as_object().cloned();
            assert_eq!(
                properties(&http).unwrap_or_default(),
                properties(&cli).unwrap_or_default(),
                "{}: the API's arguments and `glovebox operation --schema`'s differ",
                entry.name
            );
            let required = |schema: &Value| -> BTreeSet<String> {
                schema["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| r.as_str().unwrap().to_string())
                    .collect()
            };
            assert_eq!(required(&http), required(&cli), "{}: required", entry.name);
        }
    }
    assert!(
        served >= 4,
        "the MCP built-ins the registry serves: {served}"
    );
}

/// Operation `id`'s arguments as the API document lays them out (path and
/// query parameters, body properties), put back together as one object
/// schema.
fn api_arguments(document: &Value, id: &str) -> Value {
    let operation = document["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .find(|o| o["operationId"] == id)
        .unwrap_or_else(|| panic!("`{id}` is not in the document"));
    let (mut properties, mut required) = (serde_json::Map::new(), Vec::new());
    for parameter in operation["parameters"].as_array().into_iter().flatten() {
        let name = parameter["name"].as_str().unwrap().to_string();
        let mut schema = parameter["schema"].clone();
        if let Some(description) = parameter.get("description") {
            schema["description"] = description.clone();
        }
        if parameter["required"] == true {
            required.push(json!(name));
        }
        properties.insert(name, schema);
    }
    let body = &operation["requestBody"]["content"]["application/json"]["schema"];
    for (name, schema) in body["properties"].as_object().into_iter().flatten() {
        properties.insert(name.clone(), schema.clone());
    }
    required.extend(body["required"].as_array().into_iter().flatten().cloned());
    json!({"properties": properties, "required": required})
}

#[test]
fn the_api_document_validates_and_every_route_answers_with_what_it_says() {
    let (site, operator, agent) = site_with(
        "[memory.propose]\nproject = [\"workagent\"]\n[[workspace]]\nname = \"app\"\nrepo = \"repo\"\n",
    );
    // Memory entries the agent proposes, for the operator to review.
    let mut server = Server::initialized(&site.config(), &["--as", "alice"]);
    server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "demo"}),
    );
    let memory: Vec<String> = ["use the staging DB", "skip the tests"]
        .iter()
        .enumerate()
        .map(|(n, text)| {
            let proposed = server.ok(
                2 + n as u64,
                "memory_propose",
                json!({"scope": "project", "text": text}),
            );
            proposed["entry"]["id"].as_str().unwrap().to_string()
        })
        .collect();
    // The built-ins an agent is offered, for the schemas' comparison below;
    // and one served by the registry, called over MCP.
    let tools = server.request(10, "tools/list", json!({}))["result"]["tools"].clone();
    let found = server.ok(11, "memory_search", json!({"query": "staging"}));
    assert_eq!(
        found["entries"].as_array().map(Vec::len),
        Some(0),
        "{found}"
    );
    // A job of the agent's, run to its end, and the job built-ins the
    // registry serves (`job_status`, `job_list`) on it.
    let spawned = server.ok(
        12,
        "job_spawn",
        json!({"tool": "echo.echo", "input": {"message": "in the background"}}),
    );
    let job = spawned["id"].as_str().unwrap().to_string();
    let waited = server.ok(13, "job_wait", json!({"ids": [job]}));
    assert_eq!(waited["done"][0]["status"], "completed", "{waited}");
    let status = server.ok(14, "job_status", json!({"id": job}));
    assert_eq!(status["status"], "completed", "{status}");
    let listed = server.ok(15, "job_list", json!({"limit": 5}));
    assert_eq!(listed["jobs"][0]["id"], job.as_str(), "{listed}");
    let refused = server.call(17, "job_wait", json!({"ids": [job], "mode": "any"}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let said = refused["error"]["message"].as_str().unwrap();
    assert!(
        said.starts_with("invalid arguments for `job_wait`: `mode`: unknown variant `any`"),
        "{said}"
    );
    let refused = server.call(16, "job_list", json!({"status": "lost"}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let said = refused["error"]["message"].as_str().unwrap();
    assert!(
        said.starts_with("invalid arguments for `job_list`: `status`") && said.contains("lost"),
        "{said}"
    );
    let refused = server.call(
        17,
        "session_verdict",
        json!({"session": "s", "verdict": "maybe"}),
    );
    assert_eq!(
        refused["error"]["message"],
        "invalid arguments for `session_verdict`: `verdict`: unknown variant `maybe`, expected `pass` or `fail`",
        "{refused}"
    );
    drop(server);
    // One pending approval a session (a session waits on its approval).
    for name in [
        "api-a", "api-b", "api-c", "api-d", "api-e", "api-f", "api-g", "api-h",
    ] {
        start_session(&site, name);
    }
    // Worktrees of workspace `app` for api-g (to merge) and api-h (to
    // abandon), laid out as a session's first call lays them out.
    for name in ["api-g", "api-h"] {
        let id = site.json(&["session", "show", name])["id"]
            .as_str()
            .expect("a session's id")
            .to_string();
        crate::workspaces::tree_as_the_host_makes_it(&site, "app", &id);
    }
    // A rescue opened at the command line (api-f) for the API to work on,
    // and a session (api-e) the API opens one of.
    let rescue = site.json(&["rescue", "open", "api-f"]);
    let rescue = rescue["id"].as_str().expect("a rescue's id").to_string();
    let approved = pending_write(&site, "api-a", "/data/approved.txt", "yes");
    let denied = pending_write(&site, "api-b", "/data/denied.txt", "no");
    // Active (a created session is not paused).
    crate::dashboard::run_ok(&site, &["session", "resume", "api-d"]);
    // A file in api-c's scratch directory, as a code runner's call leaves it.
    let api_c = site.json(&["session", "show", "api-c"])["id"]
        .as_str()
        .expect("api-c's id")
        .to_string();
    let scratch = site.path().join("data/scratch").join(&api_c);
    std::fs::create_dir_all(scratch.join("out")).unwrap();
    std::fs::write(scratch.join("out/report.txt"), "ready").unwrap();
    // And a result of api-c's kept whole, as a call past its output limit leaves it.
    let kept = site.path().join("data/scratch/.outputs").join(&api_c);
    std::fs::create_dir_all(&kept).unwrap();
    std::fs::write(kept.join("call-1.json"), r#"{"data":"long"}"#).unwrap();
    let served = serve(&site);
    let admin = served.admin.as_str();
    let op = bearer(&operator);
    let as_operator = [("Authorization", op.as_str())];

    // The document: an operator's, and valid OpenAPI 3.1.
    assert_eq!(
        http(admin, "GET", "/api/v1/openapi.json", &[], "").status,
        401
    );
    let answer = http(admin, "GET", "/api/v1/openapi.json", &as_operator, "");
    assert_eq!(answer.status, 200, "{}", answer.body);
    let document = json_of(&answer);
    assert_eq!(document["openapi"], "3.1.0");
    let file = site.path().join("openapi.json");
    std::fs::write(&file, &answer.body).unwrap();
    let output = Command::new(validator())
        .args([
            "-c",
            "import sys, json; from openapi_spec_validator import validate; validate(json.load(open(sys.argv[1]))); print('valid')",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the OpenAPI document does not validate:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "valid");

    // Every route, in the document's order, with arguments made for it
    // here: an operation the registry adds without a line here fails.
    let base = document["servers"][0]["url"].as_str().unwrap().to_string();
    let examples = json!({
        "approvals.list": {"query": {"all": "true", "limit": "10"}},
        "approvals.show": {"path": {"id": approved}},
        "approvals.approve": {"path": {"id": approved}},
        "approvals.deny": {"path": {"id": denied}, "body": {"reason": "not this file"}},
        "sessions.list": {"query": {"role": "workagent", "limit": "5"}},
        "sessions.show": {"path": {"session": "api-d"}},
        "sessions.pause": {"path": {"session": "api-d"}, "body": {"reason": "stop for review"}},
        "sessions.resume": {"path": {"session": "api-d"}},
        "doctor.check": {},
        "doctor.score": {},
        "plugins.accept": {"path": {"plugin": "echo"}},
        "memory.approve": {"path": {"id": memory[0]}},
        "memory.reject": {"path": {"id": memory[1]}, "body": {"reason": "tests stay"}},
        "memory.retire": {"path": {"id": memory[0]}, "body": {"reason": "moved to prod"}},
        "context.search": {"query": {"query": "staging", "project": "demo", "limit": "5"}},
        "jobs.show": {"path": {"id": job}},
        "jobs.cancel": {"path": {"id": job}},
        "jobs.list": {"query": {"status": "completed", "limit": "5"}},
        "jobs.wait": {"body": {"ids": [job], "mode": "first", "timeout_ms": 1000}},
        "files.list": {"path": {"session": "api-c"}, "query": {"path": "out", "limit": "10"}},
        "files.read": {"path": {"session": "api-c"}, "query": {"path": "out/report.txt", "offset": "1", "length": "3"}},
        "calls.output": {"path": {"session": "api-c", "call_id": "call-1"}, "query": {"offset": "2"}},
        "rescues.list": {"query": {"limit": "5"}},
        "rescues.show": {"path": {"id": rescue}},
        "rescues.report": {"query": {"days": "7"}},
        "rescues.open": {"path": {"session": "api-e"}, "body": {"assignee": "alice"}},
        "rescues.assign": {"path": {"id": rescue}, "body": {"to": "bob"}},
        "rescues.diagnose": {"path": {"id": rescue}, "body": {"category": "missing_context", "evidence": ["asks for the DB URL"], "root_cause": "no DB URL in the task"}},
        "rescues.inject": {"path": {"id": rescue}, "body": {"description": "the DB URL", "files": [{"path": "db.env", "content": "DB=staging"}], "spec_changes": ["use staging"]}},
        "rescues.resolve": {"path": {"id": rescue}, "body": {"outcome": "resolved", "enrich": ["the DB URL is in db.env"]}},
        "workspaces.list": {},
        "workspaces.merge": {"path": {"session": "api-g"}},
        "workspaces.abandon": {"path": {"session": "api-h"}},
    });
    let mut called = BTreeSet::new();
    // Reads first, then changes (an approval is shown before it is settled).
    for wanted in ["get", "post"] {
        for (path, item) in document["paths"].as_object().unwrap() {
            let Some(operation) = item.get(wanted) else {
                continue;
            };
            let id = operation["operationId"].as_str().unwrap();
            let example = examples.get(id).unwrap_or_else(|| {
                panic!("no example arguments for `{id}`: add them to this test")
            });
            let mut url = format!("{base}{path}");
            for (name, value) in example["path"].as_object().into_iter().flatten() {
                url = url.replace(&format!("{{{name}}}"), value.as_str().unwrap());
            }
            let query: Vec<String> = example["query"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
                .collect();
            if !query.is_empty() {
                url += &format!("?{}", query.join("&"));
            }
            let body = example
                .get("body")
                .map(Value::to_string)
                .unwrap_or_default();
            let answer = http(admin, &wanted.to_uppercase(), &url, &as_operator, &body);
            assert_eq!(answer.status, 200, "{wanted} {url}: {}", answer.body);
            let schema = &operation["responses"]["200"]["content"]["application/json"]["schema"];
            assert_fits(
                &document,
                schema,
                &json_of(&answer),
                &format!("{wanted} {url}"),
            );
            called.insert(id.to_string());
        }
    }
    let listed: BTreeSet<String> = examples.as_object().unwrap().keys().cloned().collect();
    assert_eq!(called, listed, "the document lists these operations");
    same_arguments_on_every_surface(&site, &document, &tools);

    // What the calls did: the approved write ran, the denied one did not.
    assert_eq!(
        std::fs::read_to_string(site.path().join("work/approved.txt")).unwrap(),
        "yes"
    );
    assert!(!site.path().join("work/denied.txt").exists());
    let shown = json_of(&http(
        admin,
        "GET",
        &format!("/api/v1/approvals/{denied}"),
        &as_operator,
        "",
    ));
    assert_eq!(shown["status"]["state"], "denied");
    assert_eq!(shown["status"]["reason"], "not this file");
    assert_eq!(shown["status"]["by"], "ops");

    // The rescue went through every step, as the operator's; the one the
    // API opened is open, assigned, and its session paused.
    let record = site.json(&["rescue", "show", &rescue]);
    assert_eq!(record["assignee"], "bob", "{record}");
    assert_eq!(
        record["diagnosis"]["category"], "missing_context",
        "{record}"
    );
    assert_eq!(
        record["injections"][0]["attached"][0]["path"], "db.env",
        "{record}"
    );
    assert_eq!(record["outcome"], "resolved", "{record}");
    assert_eq!(record["context_updates"].as_array().map(Vec::len), Some(1));
    let review = site.json(&["memory", "review", "--json"]);
    let lesson = review
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["provenance"]["rescue"] == rescue.as_str())
        .unwrap_or_else(|| panic!("the lesson is not proposed: {review}"));
    assert_eq!(lesson["text"], "the DB URL is in db.env");
    assert_eq!(lesson["provenance"]["by"], "ops", "{lesson}");
    let opened = site.json(&["rescue", "list", "--json"]);
    let opened = opened
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session_name"] == "api-e")
        .unwrap_or_else(|| panic!("no rescue of api-e: {opened}"))
        .clone();
    assert_eq!(opened["assignee"], "alice", "{opened}");
    assert!(opened["outcome"].is_null(), "{opened}");

    // The pause and the resume are in the session's log, as the operator's.
    let log = crate::dashboard::run_ok(&site, &["log", "show", "api-d"]);
    assert!(log.contains("stop for review"), "{log}");
    assert!(log.contains("ops"), "the pause is the operator's: {log}");
    let shown = json_of(&http(
        admin,
        "GET",
        "/api/v1/sessions/api-d",
        &as_operator,
        "",
    ));
    assert_eq!(shown["status"], "active");
    assert_eq!(shown["name"], "api-d");

    // Refusals: each its own status, one error shape the document gives.
    let error_schema = json!({"$ref": "#/components/schemas/ErrorAnswer"});
    let refused = |method: &str,
                   path: &str,
                   headers: &[(&str, &str)],
                   body: &str,
                   status: u16,
                   kind: &str,
                   words: &str| {
        let answer = http(admin, method, path, headers, body);
        assert_eq!(answer.status, status, "{method} {path}: {}", answer.body);
        let value = json_of(&answer);
        assert_fits(&document, &error_schema, &value, path);
        assert_eq!(value["error"]["kind"], kind, "{value}");
        let message = value["error"]["message"].as_str().unwrap();
        assert!(message.contains(words), "{method} {path}: {message}");
    };
    refused(
        "GET",
        "/api/v1/approvals/ap-nothing",
        &as_operator,
        "",
        404,
        "approval_not_found",
        "no approval `ap-nothing`",
    );
    refused(
        "POST",
        "/api/v1/approvals/ap-nothing/approve",
        &as_operator,
        "",
        404,
        "approval_not_found",
        "lists the pending ones",
    );
    refused(
        "POST",
        &format!("/api/v1/approvals/{approved}/approve"),
        &as_operator,
        "",
        400,
        "session_invalid_input",
        "already approved",
    );
    refused(
        "GET",
        "/api/v1/approvals?limit=many",
        &as_operator,
        "",
        400,
        "invalid_arguments",
        "`limit` = `many` is not an integer",
    );
    refused(
        "GET",
        "/api/v1/sessions?colour=red",
        &as_operator,
        "",
        400,
        "invalid_arguments",
        "unknown field `colour`",
    );
    refused(
        "GET",
        "/api/v1/sessions?status=sleeping",
        &as_operator,
        "",
        400,
        "invalid_arguments",
        "sleeping",
    );
    let other = pending_write(&site, "api-c", "/data/other.txt", "maybe");
    refused(
        "POST",
        &format!("/api/v1/approvals/{other}/deny"),
        &as_operator,
        "{}",
        400,
        "invalid_arguments",
        "missing field `reason`",
    );
    refused(
        "POST",
        &format!("/api/v1/approvals/{other}/deny"),
        &as_operator,
        r#"{"reason": " "}"#,
        400,
        "invalid_arguments",
        "a denial needs a reason",
    );
    refused(
        "POST",
        &format!("/api/v1/approvals/{other}/deny"),
        &as_operator,
        "[]",
        400,
        "invalid_arguments",
        "not a JSON object",
    );
    refused(
        "GET",
        "/api/v1/rescues/r-nothing",
        &as_operator,
        "",
        404,
        "rescue_not_found",
        "no rescue `r-nothing`",
    );
    refused(
        "POST",
        &format!("/api/v1/rescues/{rescue}/assign"),
        &as_operator,
        r#"{"to": "carol"}"#,
        400,
        "rescue_invalid_input",
        "is closed (resolved): cannot assign it",
    );
    refused(
        "POST",
        "/api/v1/sessions/api-e/rescue",
        &as_operator,
        "{}",
        400,
        "rescue_invalid_input",
        "is already being rescued",
    );
    refused(
        "POST",
        &format!(
            "/api/v1/rescues/{}/diagnose",
            opened["id"].as_str().unwrap()
        ),
        &as_operator,
        r#"{"category": "vibes", "root_cause": "x"}"#,
        400,
        "invalid_arguments",
        "unknown variant `vibes`",
    );
    refused(
        "GET",
        "/api/v1/nothing",
        &as_operator,
        "",
        404,
        "no_route",
        "openapi.json",
    );

    // Who may call it: an operator only, and a POST from this origin only.
    assert_eq!(http(admin, "GET", "/api/v1/approvals", &[], "").status, 401);
    let agent_bearer = bearer(&agent);
    let answer = http(
        admin,
        "GET",
        "/api/v1/sessions",
        &[("Authorization", &agent_bearer)],
        "",
    );
    assert_eq!(answer.status, 403, "{}", answer.body);
    let answer = http(
        admin,
        "POST",
        &format!("/api/v1/approvals/{other}/deny"),
        &[
            ("Authorization", op.as_str()),
            ("Origin", "http://evil.example"),
        ],
        r#"{"reason": "x"}"#,
    );
    assert_eq!(answer.status, 403, "{}", answer.body);
    let still = json_of(&http(
        admin,
        "GET",
        &format!("/api/v1/approvals/{other}"),
        &as_operator,
        "",
    ));
    assert_eq!(
        still["status"]["state"], "pending",
        "a refused request changed nothing"
    );
}

#[test]
fn the_operation_command_runs_any_operation_with_and_without_a_server() {
    let (site, _, _) = site();
    start_session(&site, "op-a");
    let pending = pending_write(&site, "op-a", "/data/kept.txt", "no");

    // Listed, each with its route.
    let (code, listing, _) = site.run(&["operation"]);
    assert_eq!(code, 0);
    assert!(
        listing.contains("approvals.deny") && listing.contains("POST /api/v1/approvals/{id}/deny"),
        "{listing}"
    );

    // With no server: the data dir is opened here.
    let page = site.json(&["operation", "approvals.list"]);
    assert_eq!(page["items"][0]["id"], pending.as_str(), "{page}");
    let schema = site.json(&["operation", "approvals.deny", "--schema"]);
    assert_eq!(schema["operation"], "approvals.deny");
    assert!(schema.to_string().contains("\"reason\""), "{schema}");

    // Bad input: named, nothing changed.
    let (code, _, err) = site.run(&["operation", "approvals.nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no operation `approvals.nope`"), "{err}");
    let (code, _, err) = site.run(&["operation", "approvals.deny", "--args", "[1]"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`--args` is not a JSON object"), "{err}");
    let args = json!({"id": pending, "why": "no"}).to_string();
    let (code, _, err) = site.run(&["operation", "approvals.deny", "--args", &args]);
    assert_eq!(code, 8, "{err}");
    assert!(err.contains("unknown field `why`"), "{err}");

    // With a server: run inside it, as the operator at the socket.
    let _served = serve(&site);
    let args = json!({"id": pending, "reason": "keep it"}).to_string();
    let denied = site.json(&["operation", "approvals.deny", "--args", &args]);
    assert_eq!(denied["status"]["state"], "denied", "{denied}");
    assert!(
        denied["status"]["by"].as_str().unwrap().starts_with("cli:"),
        "{denied}"
    );
    let shown = site.json(&[
        "operation",
        "sessions.show",
        "--args",
        r#"{"session": "op-a"}"#,
    ]);
    assert_eq!(shown["status"], "active", "{shown}");
    assert!(!site.path().join("work/kept.txt").exists());
    // A command made of an operation reaches the server the same way, and
    // prints what it prints without one.
    let (code, out, err) = site.run(&["doctor", "--json"]);
    assert!(code == 0 || code == 1, "{code}: {err}");
    let findings: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(findings.is_array(), "{findings}");
    let (code, _, err) = site.run(&["deny", "ap-none", "--reason", "x"]);
    assert_eq!(code, 8, "{err}");
    assert!(err.contains("no approval `ap-none`"), "{err}");
}
