//! The example plugins do their job.

use glovebox::manifest::{Access, HttpScheme};
use glovebox::{CallContext, CallError};

use crate::util::{self, call_err, call_ok, fs_grant, host, http_grant, manifest, plugins};

#[tokio::test]
async fn echo_returns_its_input() {
    let h = host(vec![manifest("echo", plugins::TOOL_ECHO)]).await;
    let input = r#"{"message":"hello","n":[1,2,{"x":null}]}"#;
    let out = call_ok(&h, "echo.echo", input).await;
    assert_eq!(
        out,
        serde_json::from_str::<serde_json::Value>(input).unwrap()
    );
    // The bare tool name works when it is unambiguous.
    let out = call_ok(&h, "echo", input).await;
    assert_eq!(out["message"], "hello");
}

#[tokio::test]
async fn echo_call_is_metered() {
    let h = host(vec![manifest("echo", plugins::TOOL_ECHO)]).await;
    let report = util::call(&h, "echo.echo", r#"{"message":"metered"}"#).await;
    assert!(report.outcome.is_ok());
    let m = report.metering;
    assert_eq!(m.bytes_in, r#"{"message":"metered"}"#.len() as u64);
    assert!(m.bytes_out > 0);
    assert!(m.peak_memory_bytes > 0, "peak memory is recorded");
    assert!(m.wall.as_nanos() > 0);
    assert_eq!(m.fuel, None, "fuel is off unless a manifest sets it");
}

#[tokio::test]
async fn fuel_is_metered_when_the_manifest_sets_it() {
    let mut m = manifest("echo", plugins::TOOL_ECHO);
    m.limits.fuel = Some(1_000_000_000);
    let h = host(vec![m]).await;
    let report = util::call(&h, "echo.echo", r#"{"message":"fuel"}"#).await;
    assert!(report.outcome.is_ok());
    let fuel = report.metering.fuel.expect("fuel metered");
    assert!(fuel > 0 && fuel < 1_000_000_000, "fuel used: {fuel}");
}

#[tokio::test]
async fn text_plugin_offers_several_tools() {
    let h = host(vec![manifest("text", plugins::TOOL_TEXT)]).await;
    let names: Vec<&str> = h.tools().iter().map(|t| t.name.as_str()).collect();
    for tool in [
        "text.upper",
        "text.lower",
        "text.reverse",
        "text.word-count",
    ] {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }
    assert_eq!(
        call_ok(&h, "text.upper", r#"{"text":"abc é"}"#).await["text"],
        "ABC É"
    );
    assert_eq!(
        call_ok(&h, "text.lower", r#"{"text":"ABC"}"#).await["text"],
        "abc"
    );
    assert_eq!(
        call_ok(&h, "text.reverse", r#"{"text":"añb"}"#).await["text"],
        "bña"
    );
    let wc = call_ok(&h, "text.word-count", r#"{"text":"one two\nthree"}"#).await;
    assert_eq!(
        (wc["words"].as_u64(), wc["lines"].as_u64()),
        (Some(3), Some(2))
    );
}

#[tokio::test]
async fn input_that_fails_the_schema_is_refused_before_the_tool_runs() {
    let h = host(vec![manifest("text", plugins::TOOL_TEXT)]).await;
    let err = call_err(&h, "text.upper", r#"{"txt":"typo"}"#).await;
    assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
    assert!(err.to_string().contains("schema"), "{err}");
    let err = call_err(&h, "text.upper", "not json").await;
    assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
    assert!(err.to_string().contains("not valid JSON"), "{err}");
}

#[tokio::test]
async fn unknown_tool_lists_the_known_ones() {
    let h = host(vec![manifest("echo", plugins::TOOL_ECHO)]).await;
    let err = call_err(&h, "nope.nothing", "{}").await;
    assert!(matches!(err, CallError::UnknownTool { .. }));
    assert!(err.to_string().contains("echo.echo"), "{err}");
}

#[tokio::test]
async fn files_plugin_lists_reads_and_writes_inside_its_grant() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hi there").unwrap();
    let mut m = manifest("files", plugins::TOOL_FILES);
    m.fs.push(fs_grant(dir.path(), "/data", Access::ReadWrite));
    let h = host(vec![m]).await;
    let listed = call_ok(&h, "files.list", r#"{"path":"/data"}"#).await;
    let names: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hello.txt"]);
    assert_eq!(
        call_ok(&h, "files.read", r#"{"path":"/data/hello.txt"}"#).await["content"],
        "hi there"
    );
    call_ok(
        &h,
        "files.write",
        r#"{"path":"/data/new.txt","content":"written by a tool"}"#,
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "written by a tool"
    );
    // A missing file is the tool's failure, with the path in the message.
    let err = call_err(&h, "files.read", r#"{"path":"/data/missing.txt"}"#).await;
    assert!(matches!(err, CallError::ToolFailed { .. }), "{err}");
    assert!(err.to_string().contains("missing.txt"), "{err}");
}

#[tokio::test]
async fn manifest_overrides_beat_what_the_plugin_says() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = manifest("files", plugins::TOOL_FILES);
    m.fs.push(fs_grant(dir.path(), "/data", Access::ReadOnly));
    let over = glovebox::manifest::ToolOverride {
        action: Some("execute:file:list-dangerously".into()),
        destructive: Some(true),
        idempotent: Some(false),
        read_only: None,
        cost: Some(0.25),
        http: None,
    };
    m.tools.insert("list".into(), over);
    let h = host(vec![m]).await;
    let list = h.resolve("files.list").unwrap();
    assert_eq!(list.action, "execute:file:list-dangerously");
    assert!(list.destructive);
    assert!(!list.idempotent);
    assert_eq!(list.cost, Some(0.25));
    // The plugin's own word stands where the manifest is silent.
    let read = h.resolve("files.read").unwrap();
    assert_eq!(read.action, "read:file:read");
    assert!(!read.destructive);
}

#[tokio::test]
async fn an_override_for_a_tool_the_plugin_lacks_is_refused() {
    let mut m = manifest("echo", plugins::TOOL_ECHO);
    m.tools.insert("ehco".into(), Default::default());
    let err = util::try_host(vec![m]).await.err().expect("load fails");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("`ehco`") && msg.contains("[tools.ehco]"),
        "{msg}"
    );
}

#[tokio::test]
async fn http_fetch_reaches_a_granted_server() {
    let server = crate::util::TestServer::start().await;
    let mut m = manifest("fetch", plugins::TOOL_HTTP_FETCH);
    m.http
        .push(http_grant(HttpScheme::Http, "127.0.0.1", server.port));
    let h = host(vec![m]).await;
    let url = format!("http://127.0.0.1:{}/hello", server.port);
    let out = call_ok(
        &h,
        "fetch.fetch",
        &serde_json::json!({ "url": url }).to_string(),
    )
    .await;
    assert_eq!(out["status"], 200);
    assert_eq!(out["body"], "hello from the test server");
}

#[tokio::test]
async fn the_call_context_reaches_the_tool_and_grants_nothing() {
    // The context is information only; a call with an orchestrator role sees
    // no more than one without.
    let h = host(vec![manifest("env", plugins::HOSTILE_ENV)]).await;
    let mut ctx = CallContext::standalone();
    ctx.role = "orchestrator".into();
    let report = h.call("env.env", "{}", ctx).await;
    let out = report.outcome.unwrap();
    assert!(out["vars"].as_object().unwrap().is_empty());
}
