//! The MCP JSON-RPC request path up to the gateway: the bytes an MCP client
//! writes to `glovebox serve` (stdio) are read by rmcp's stdio transport, as
//! the server builds it (`AsyncRwTransport` over stdin, default line limit),
//! into JSON-RPC messages; a `tools/call` of a plugin tool then takes the
//! tool-call boundary MCP's `admit_value` takes (`glovebox-input`: the
//! arguments serialized under `runtime.max_input_bytes`, checked against the
//! tool's schema); the duration arguments of `session_start` are read as
//! its handler reads them (`parse_duration`).
//!
//! What lies past this (the built-in tools' argument structs, the gateway,
//! hooks and the sandbox) needs the engine and is not reached here: see
//! docs/security.md.
//!
//! Input: what the client writes, newline-delimited JSON-RPC.
#![no_main]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use glovebox_input::{Validator, check_schema, check_size, compile_schema};
use libfuzzer_sys::fuzz_target;
use rmcp::RoleServer;
use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::Value;

/// The host's default `runtime.max_input_bytes` (1 MiB).
const MAX_INPUT: u64 = 1 << 20;

/// The plugin tools of the example config, with the schemas they declare.
static TOOLS: LazyLock<BTreeMap<&'static str, Validator>> = LazyLock::new(|| {
    let text = r#"{"additionalProperties":false,"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}"#;
    let path = r#"{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}"#;
    [
        ("echo.echo", r#"{"additionalProperties":true,"properties":{"message":{"description":"Any text to echo back.","type":"string"}},"type":"object"}"#),
        ("files.list", path),
        ("files.read", path),
        ("files.write", r#"{"additionalProperties":false,"properties":{"content":{"type":"string"},"path":{"type":"string"}},"required":["path","content"],"type":"object"}"#),
        ("text.lower", text),
        ("text.upper", text),
        ("text.reverse", text),
        ("text.word-count", text),
    ]
    .into_iter()
    .map(|(name, schema)| (name, compile_schema(schema).expect("a real tool's schema compiles").1))
    .collect()
});

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
});

fuzz_target!(|data: &[u8]| {
    RUNTIME.block_on(async {
        let mut transport =
            AsyncRwTransport::<RoleServer, _, _>::new_server(data, tokio::io::sink());
        while let Some(message) = transport.receive().await {
            if let JsonRpcMessage::Request(request) = message
                && let ClientRequest::CallToolRequest(call) = request.request
            {
                let args = Value::Object(call.params.arguments.unwrap_or_default());
                tool_call(&call.params.name, &args);
            }
        }
    });
});

/// What the server does with a call's name and arguments before the gateway.
fn tool_call(name: &str, args: &Value) {
    if let Some(validator) = TOOLS.get(name) {
        let text = args.to_string();
        if check_size(text.len(), MAX_INPUT).is_ok() {
            let _ = check_schema(validator, args);
        }
    } else if name == "session_start" {
        for at in ["/expected_duration", "/budget/wall"] {
            if let Some(text) = args.pointer(at).and_then(Value::as_str) {
                let _ = glovebox_manifest::parse_duration(text);
            }
        }
    }
}
