//! `code-js`: JavaScript an agent wrote, run by boa inside the sandbox (issue 6), and
//! `json`, a tool plugin written in JavaScript on the same shell.
//!
//! Generated code is hostile by default: each hostile case must end in a clear error
//! (the result's `error` field, or a typed `CallError`) and the host must serve the
//! next call at once. Its file-system escapes and its fetches are case folders,
//! `tests/cases/js-*`.

use std::time::Duration;

use glovebox::manifest::Access;
use glovebox::{CallError, PluginManifest};
use serde_json::{Value, json};

use crate::util::{self, assert_serving, call_err, call_ok, error_of, fs_grant, manifest, plugins};

const MIB: u64 = 1024 * 1024;

/// The runner as the example manifest sets it up, with a short deadline for the tests.
fn runner() -> PluginManifest {
    let mut m = manifest("code-js", plugins::CODE_JS);
    m.limits.memory = 128 * MIB;
    m.limits.deadline = Duration::from_secs(2);
    m.limits.output = 2 * MIB;
    m
}

fn json_tool() -> PluginManifest {
    manifest("json", plugins::TOOL_JS_JSON)
}

async fn host_with(plugins: Vec<PluginManifest>) -> util::TestHost {
    let mut all = plugins;
    all.push(manifest("echo", plugins::TOOL_ECHO));
    util::host(all).await
}

/// Runs `code` (with the extra input fields of `more`) and returns the result object.
async fn run(h: &util::TestHost, code: &str, more: Value) -> Value {
    util::run_code(h, "code-js.run", code, more).await
}

#[tokio::test]
async fn runs_code_and_reports_output_value_and_errors() {
    let h = host_with(vec![runner()]).await;

    // The benchmark's call: stdout, no value.
    let out = run(
        &h,
        "console.log([...Array(10).keys()].reduce((a, b) => a + b, 0))",
        json!({}),
    )
    .await;
    assert_eq!(out, json!({ "stdout": "45\n", "stderr": "" }));

    // The completion value as JSON, console streams, Node-like formatting.
    let out = run(
        &h,
        "console.log('n=%d', 3, {a: [1, 'x']}); console.error('careful'); ({sum: 1 + 2, list: [1, 2]})",
        json!({}),
    )
    .await;
    assert_eq!(out["stdout"], "n=3 { a: [ 1, 'x' ] }\n");
    assert_eq!(out["stderr"], "careful\n");
    assert_eq!(out["value"], json!({ "sum": 3, "list": [1, 2] }));

    // args and stdin.
    let out = run(
        &h,
        "args.map(a => a.toUpperCase()).concat(stdin.trim().split('\\n').length)",
        json!({ "args": ["a", "b"], "stdin": "one\ntwo\n" }),
    )
    .await;
    assert_eq!(out["value"], json!(["A", "B", 2]));

    // A Promise is awaited; top-level await works, with `return`.
    let out = run(&h, "Promise.resolve(41).then(x => x + 1)", json!({})).await;
    assert_eq!(out["value"], 42);
    let out = run(
        &h,
        "const x = await new Promise(r => r(20)); console.log('got', x); return x * 2",
        json!({}),
    )
    .await;
    assert_eq!(out["value"], 40);
    assert_eq!(out["stdout"], "got 20\n");
    let out = run(&h, "Promise.reject(new RangeError('no way'))", json!({})).await;
    assert!(error_of(&out).starts_with("RangeError: no way"), "{out}");
    // A rejection nothing handled is reported, next to the value.
    let out = run(
        &h,
        "Promise.resolve().then(() => { throw new Error('lost') }); 'done'",
        json!({}),
    )
    .await;
    assert_eq!(out["value"], "done");
    assert!(
        error_of(&out).starts_with("Uncaught (in promise) Error: lost"),
        "{out}"
    );
    let out = run(&h, "Promise.reject(1).catch(() => 2)", json!({})).await;
    assert_eq!(out["value"], 2);
    assert!(out.get("error").is_none(), "{out}");

    // Values without JSON form: String(v); undefined: no value.
    let out = run(&h, "Symbol('s')", json!({})).await;
    assert_eq!(out["value"], "Symbol(s)");
    let out = run(&h, "let u = 1; undefined", json!({})).await;
    assert!(out.get("value").is_none(), "{out}");

    // An uncaught exception: name, message and stack; stdout printed before is kept.
    let code = "function inner(x) {\n  throw new TypeError('bad ' + x);\n}\nconsole.log('before');\ninner(7);";
    let out = run(&h, code, json!({})).await;
    let error = error_of(&out);
    assert!(error.starts_with("TypeError: bad 7"), "{error}");
    assert!(error.contains("at inner (code.js:2:"), "{error}");
    assert_eq!(out["stdout"], "before\n");
    let out = run(&h, "throw {code: 3}", json!({})).await;
    assert_eq!(error_of(&out), "Uncaught { code: 3 }");

    // A syntax error is an error result too.
    let out = run(&h, "let x = ;", json!({})).await;
    assert!(error_of(&out).starts_with("SyntaxError: "), "{out}");
    assert!(error_of(&out).contains("line 1"), "{out}");

    // Bad input is refused, naming the field.
    for (input, field) in [
        (json!({ "code": 1 }), "code"),
        (json!({ "stdin": "x" }), "code"),
        (json!({ "code": "1", "args": [1] }), "args"),
        (json!({ "code": "1", "extra": true }), "extra"),
    ] {
        let err = call_err(&h, "code-js.run", &input.to_string()).await;
        assert!(
            matches!(err, CallError::InvalidInput { .. }),
            "{input}: {err}"
        );
        assert!(err.to_string().contains(field), "{input}: {err}");
    }

    // What the runner says about itself.
    let tool = h.resolve("code-js.run").expect("the runner's tool");
    assert_eq!(tool.action, "execute:code:javascript");
    assert!(!tool.destructive && !tool.idempotent);
    assert_eq!(tool.input_schema["additionalProperties"], false);
    assert_eq!(tool.input_schema["required"], json!(["code"]));
}

#[tokio::test]
async fn every_call_starts_fresh_and_seeds_randomness_at_call_time() {
    let h = host_with(vec![runner()]).await;
    let out = run(&h, "globalThis.leak = 1; Math.random()", json!({})).await;
    let first = out["value"].as_f64().expect("a number");
    let out = run(&h, "[typeof leak, Math.random()]", json!({})).await;
    assert_eq!(out["value"][0], "undefined", "state leaked: {out}");
    let second = out["value"][1].as_f64().expect("a number");
    assert_ne!(first, second, "Math.random repeats across calls");
    assert!((0.0..1.0).contains(&second));
}

#[tokio::test]
async fn fs_reaches_the_scratch_dir_and_nothing_else() {
    let scratch = tempfile::tempdir().unwrap();
    let mut m = runner();
    m.fs.push(fs_grant(scratch.path(), "/scratch", Access::ReadWrite));
    let h = host_with(vec![m]).await;

    let out = run(
        &h,
        "fs.mkdir('notes'); fs.writeFile('notes/a.txt', 'one'); fs.appendFile('notes/a.txt', ' two');\n\
         [fs.readFile('notes/a.txt'), fs.readdir('notes'), fs.exists('notes/b.txt'), fs.readdir()]",
        json!({}),
    )
    .await;
    assert_eq!(
        out["value"],
        json!(["one two", ["a.txt"], false, ["notes"]]),
        "{out}"
    );
    // Files persist in the granted directory (the host keeps it per session).
    assert_eq!(
        std::fs::read_to_string(scratch.path().join("notes/a.txt")).unwrap(),
        "one two"
    );
    let out = run(&h, "fs.readFile('/scratch/notes/a.txt')", json!({})).await;
    assert_eq!(out["value"], "one two");

    // Paths outside the grant (/etc/passwd, the home dir, /tmp, `..`) are
    // `tests/cases/js-fs-*`. A directory with files in it is not removed by accident.
    let out = run(&h, "fs.remove('notes')", json!({})).await;
    let error = error_of(&out);
    assert!(
        error.starts_with("Error: fs.") && error.contains("not empty"),
        "{error}"
    );

    let out = run(
        &h,
        "fs.remove('notes', {recursive: true}); fs.exists('notes')",
        json!({}),
    )
    .await;
    assert_eq!(out["value"], false);
    assert!(!scratch.path().join("notes").exists());
}

// Threat 40: generated code that makes request after refused request, each to a
// host name tens of kilobytes long, leaves the host a bounded list of refusals.
#[tokio::test]
async fn threat_40_a_fetch_loop_to_refused_hosts_leaves_a_bounded_list() {
    let mut m = runner();
    m.limits.deadline = Duration::from_secs(30);
    let h = host_with(vec![m]).await;
    let code = "const host = 'a'.repeat(60000) + '.example';\n\
                let refused = 0;\n\
                for (let i = 0; i < 40; i++) {\n\
                  try { await fetch('http://' + host + '/' + i); } catch (e) { refused++; }\n\
                }\n\
                return refused";
    let report = util::call(&h, "code-js.run", &json!({ "code": code }).to_string()).await;
    let out = report.outcome.expect("a result, not a failed call");
    assert_eq!(out["value"], 40, "{out}");
    let denials = &report.http_denials;
    assert_eq!(denials.len(), 33, "32 kept and a count of the rest");
    for reason in &denials[..32] {
        assert!(
            reason.len() < 600,
            "a reason of {} bytes was kept",
            reason.len()
        );
        assert!(reason.contains(" bytes in all)"), "{reason}");
    }
    assert_eq!(denials[32], "and 8 more refused requests");
    assert_serving(&h).await;
}

#[tokio::test]
async fn hostile_code_ends_in_a_clear_error_and_the_host_serves_on() {
    let h = host_with(vec![runner()]).await;

    // An infinite loop: the host's deadline stops it.
    for code in ["for (;;) {}", "while (true) { Math.sqrt(2) }"] {
        let err = call_err(&h, "code-js.run", &json!({ "code": code }).to_string()).await;
        assert!(matches!(err, CallError::Timeout { .. }), "{code}: {err}");
        assert_serving(&h).await;
    }

    // A memory bomb: the manifest's memory cap stops it.
    let code = "const keep = []; for (;;) keep.push(new ArrayBuffer(1 << 20));";
    let err = call_err(&h, "code-js.run", &json!({ "code": code }).to_string()).await;
    assert!(
        matches!(err, CallError::MemoryLimit { limit, .. } if limit == 128 * MIB),
        "{err}"
    );
    assert_serving(&h).await;

    // Deep recursion: a RangeError, not a crash.
    for code in [
        "function down(n) { return down(n + 1) + 1 }\ndown(0)",
        "function viaMap(n) { return [n].map(x => viaMap(x + 1)) }\nviaMap(0)",
        "let o = {v: 1}; for (let i = 0; i < 5000; i++) { const p = o; o = { get v() { return p.v + 1 } } }\no.v",
    ] {
        let out = run(&h, code, json!({})).await;
        assert!(
            error_of(&out).starts_with("RangeError: Maximum call stack size exceeded"),
            "{code}: {out}"
        );
    }
    // Recursion the engine cannot count in time still ends in a typed error, never a crash.
    let code = "function f(n) { return { toString() { return String(f(n + 1)) } } }\nString(f(0))";
    let report = util::call(&h, "code-js.run", &json!({ "code": code }).to_string()).await;
    match &report.outcome {
        Ok(out) => assert!(error_of(out).starts_with("RangeError"), "{out}"),
        Err(err) => assert!(matches!(err, CallError::StackOverflow { .. }), "{err}"),
    }
    assert_serving(&h).await;

    // Code nested too deeply for the parser: the host's typed stack overflow.
    let code = format!("{}1{}", "(".repeat(2000), ")".repeat(2000));
    let err = call_err(&h, "code-js.run", &json!({ "code": code }).to_string()).await;
    assert!(matches!(err, CallError::StackOverflow { .. }), "{err}");
    assert_serving(&h).await;

    // Printing a gigabyte: 256 KiB kept, the rest dropped and counted, memory bounded.
    let code = "const mib = 'x'.repeat(1 << 20);\nfor (let i = 0; i < 1024; i++) console.log(mib + i);\n'done'";
    let report = util::call(&h, "code-js.run", &json!({ "code": code }).to_string()).await;
    let out = report.outcome.expect("printing is not an error");
    assert_eq!(out["value"], "done");
    let stdout = out["stdout"].as_str().unwrap();
    assert!(
        stdout.len() < 256 * 1024 + 256,
        "{} bytes kept",
        stdout.len()
    );
    assert!(stdout.contains("[stdout truncated: "), "no marker");
    assert!(
        report.metering.peak_memory_bytes < 96 * MIB,
        "peak {}",
        report.metering.peak_memory_bytes
    );

    // No require, no process: only what the shell installs.
    let out = run(&h, "require('child_process').execSync('id')", json!({})).await;
    assert!(
        error_of(&out).starts_with("ReferenceError: require is not defined"),
        "{out}"
    );
    let out = run(
        &h,
        "[typeof process, typeof require, typeof Deno, typeof importScripts]",
        json!({}),
    )
    .await;
    assert_eq!(
        out["value"],
        json!(["undefined", "undefined", "undefined", "undefined"])
    );
    let out = run(&h, "import('fs')", json!({})).await;
    assert!(out.get("error").is_some(), "{out}");
    assert_serving(&h).await;
}

#[tokio::test]
async fn a_tool_written_in_javascript() {
    let h = host_with(vec![json_tool()]).await;
    let mut names: Vec<&str> = h
        .tools()
        .into_iter()
        .filter(|t| t.plugin == "json")
        .map(|t| t.tool.as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["filter", "get", "pick"]);
    let get = h.resolve("json.get").unwrap();
    assert_eq!(get.action, "execute:json:get");
    assert!(get.idempotent && !get.destructive);

    let data = json!({
        "users": [
            { "name": "ada", "age": 36, "langs": ["ml", "rust"] },
            { "name": "bob", "age": 25, "langs": [] },
            { "name": "cy", "age": 41 }
        ]
    });
    let out = call_ok(
        &h,
        "json.get",
        &json!({ "data": data, "path": "users[*].name" }).to_string(),
    )
    .await;
    assert_eq!(out, json!({ "found": true, "value": ["ada", "bob", "cy"] }));
    let out = call_ok(
        &h,
        "json.get",
        &json!({ "data": data, "path": "users[-1].age" }).to_string(),
    )
    .await;
    assert_eq!(out, json!({ "found": true, "value": 41 }));
    let out = call_ok(
        &h,
        "json.get",
        &json!({ "data": data, "path": "users[9].name" }).to_string(),
    )
    .await;
    assert_eq!(out, json!({ "found": false, "value": null }));

    let out = call_ok(
        &h,
        "json.pick",
        &json!({ "data": data["users"], "fields": { "who": "name", "first": "langs[0]" } })
            .to_string(),
    )
    .await;
    assert_eq!(
        out,
        json!([{ "who": "ada", "first": "ml" }, { "who": "bob" }, { "who": "cy" }])
    );

    let out = call_ok(
        &h,
        "json.filter",
        &json!({
            "data": data["users"],
            "where": [{ "path": "age", "op": "gte", "value": 30 }],
            "sort": "age", "order": "desc", "limit": 1
        })
        .to_string(),
    )
    .await;
    assert_eq!(out["count"], 2);
    assert_eq!(out["items"], json!([{ "name": "cy", "age": 41 }]));

    // Invalid input the schema cannot see: the plugin's message names the field.
    for (tool, input, says) in [
        (
            "json.get",
            json!({ "data": {}, "path": "a..b" }),
            "field `path`",
        ),
        (
            "json.get",
            json!({ "data": {}, "path": "a[x]" }),
            "field `path`",
        ),
        (
            "json.filter",
            json!({ "data": [], "where": [{ "path": "a", "op": "in", "value": 3 }] }),
            "`where[0].value` must be a list",
        ),
        (
            "json.filter",
            json!({ "data": [], "where": [{ "path": "a", "op": "matches", "value": "(" }] }),
            "`where[0].value` is not a valid regular expression",
        ),
        (
            "json.filter",
            json!({ "data": [], "order": "desc" }),
            "field `order` needs `sort`",
        ),
    ] {
        let err = call_err(&h, tool, &input.to_string()).await;
        assert!(
            matches!(err, CallError::InvalidInput { .. }),
            "{input}: {err}"
        );
        assert!(err.to_string().contains(says), "{input}: {err}");
    }
    assert_serving(&h).await;
}
