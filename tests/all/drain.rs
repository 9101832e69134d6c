//! Threat 46 over HTTP, at the level of the stream an answer travels on: a
//! client whose answer stream breaks while the server drains resumes it
//! (`GET` with `Last-Event-ID`, as MCP clients do) and gets its answer; new
//! work during the drain is refused at once (503), never left hanging in the
//! listen backlog. The real binary, raw HTTP/1.1 over TCP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use crate::http_limits::serve;
use crate::util::Site;

/// One HTTP/1.1 exchange in progress: the status, the headers and a reader
/// of the (chunked or plain) body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: BufReader<TcpStream>,
    chunked: bool,
    /// What is left of the current chunk.
    left: usize,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The next line of the body (chunked framing removed), `None` at its end.
    fn line(&mut self) -> Option<String> {
        let mut line = Vec::new();
        loop {
            let byte = self.byte()?;
            if byte == b'\n' {
                return Some(String::from_utf8_lossy(&line).trim_end().to_string());
            }
            line.push(byte);
        }
    }

    fn byte(&mut self) -> Option<u8> {
        if self.chunked && self.left == 0 {
            let mut size = String::new();
            self.body.read_line(&mut size).ok()?;
            if size.trim().is_empty() {
                // The CRLF that ends the previous chunk.
                size.clear();
                self.body.read_line(&mut size).ok()?;
            }
            self.left = usize::from_str_radix(size.trim(), 16).ok()?;
            if self.left == 0 {
                return None;
            }
        }
        let mut byte = [0u8];
        match self.body.read(&mut byte) {
            Ok(1) => {
                self.left = self.left.saturating_sub(1);
                Some(byte[0])
            }
            _ => None,
        }
    }

    /// The next server-sent event: its id and its data (empty for a priming event).
    fn event(&mut self) -> Option<(Option<String>, String)> {
        let (mut id, mut data, mut any) = (None, String::new(), false);
        loop {
            let line = self.line()?;
            if line.is_empty() {
                if any {
                    return Some((id, data));
                }
                continue;
            }
            any = true;
            if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
    }
}

/// Sends `method path` with `headers` and `body` on a new connection.
fn send(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request += &format!("{k}: {v}\r\n");
    }
    request += "\r\n";
    request += body;
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line[9..12].parse().unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    Answer {
        status,
        headers,
        body: reader,
        chunked,
        left: 0,
    }
}

/// The JSON-RPC message of the first event with data on `answer`.
fn message(answer: &mut Answer) -> Value {
    loop {
        let (_, data) = answer.event().expect("an event with a message");
        if !data.is_empty() {
            return serde_json::from_str(&data).unwrap();
        }
    }
}

/// Threat 46: the answer to a call taken before SIGTERM is owed even when
/// the stream it was to travel on broke; the client resumes it during the
/// drain and gets it (a drain that refused the resumption, or ended the
/// MCP session first, lost it: what made the Python SDK test flaky, "SSE
/// stream ended and reconnection attempts were exhausted"). New work in the
/// drain gets 503 at once.
#[test]
fn threat_46_an_answer_stream_broken_during_the_drain_is_resumed_and_answers() {
    let site = Site::new(false);
    let (mut child, addr) = serve(&site, &[]);
    let mut init = send(
        &addr,
        "POST",
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "drain-test", "version": "1"}}})
        .to_string(),
    );
    assert_eq!(init.status, 200);
    let session = init
        .header("mcp-session-id")
        .expect("an MCP session")
        .to_string();
    assert!(message(&mut init)["result"]["serverInfo"].is_object());
    let mcp = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let notified = send(
        &addr,
        "POST",
        &mcp,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );
    assert_eq!(notified.status, 202);

    // A two-second call; its stream's first event (the priming event) says
    // where to resume from.
    let mut call = send(
        &addr,
        "POST",
        &mcp,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "sleep.sleep", "arguments": {"seconds": 2}}})
        .to_string(),
    );
    assert_eq!(call.status, 200);
    let (resume_from, data) = call.event().expect("a priming event");
    assert!(data.is_empty(), "the first event primes the stream: {data}");
    let resume_from = resume_from.expect("the priming event has an id");
    // The stream breaks (the client's connection drops) while the call runs;
    // then the server is told to stop.
    drop(call);
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    std::thread::sleep(Duration::from_millis(200));

    // New work while draining: 503 at once, not a wait in the backlog.
    let started = std::time::Instant::now();
    let refused = send(
        &addr,
        "POST",
        &mcp,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string(),
    );
    assert_eq!(refused.status, 503);
    assert!(started.elapsed() < Duration::from_secs(5));

    // The resumption, as a client does it after the retry interval: the
    // answer comes, and it is the call's result.
    let mut resumed = send(
        &addr,
        "GET",
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Last-Event-ID", resume_from.as_str()),
        ],
        "",
    );
    assert_eq!(resumed.status, 200);
    let answer = message(&mut resumed);
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(
        answer["result"].is_object() && answer["result"]["isError"] != true,
        "{answer}"
    );
    drop(resumed);
    // And the server still ends cleanly, within its linger.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}
