//! A slow HTTP peer (threat 4). docs/threats.md "Network and secrets" (15-18) are
//! case folders, `tests/cases/{net,http,env}-*`, over the same counting server
//! (`util::TestServer`).

use std::time::{Duration, Instant};

use glovebox::CallError;
use glovebox::manifest::HttpScheme;
use serde_json::json;

use crate::util::{
    TestServer, assert_serving, call_err, host_with_echo, http_grant, manifest, plugins,
};

fn fetch_input(url: &str) -> String {
    json!({ "url": url }).to_string()
}

// Threat 4: a slow HTTP peer is cut off at the deadline; the socket is closed.
#[tokio::test]
async fn a_slow_http_peer_is_cut_off_at_the_deadline_without_leaking_sockets() {
    let server = TestServer::start().await;
    let mut m = manifest("fetch", plugins::TOOL_HTTP_FETCH);
    m.http
        .push(http_grant(HttpScheme::Http, "127.0.0.1", server.port));
    m.limits.deadline = Duration::from_millis(500);
    let h = host_with_echo(m).await;
    let url = format!("http://127.0.0.1:{}/slow", server.port);
    for _ in 0..5 {
        let start = Instant::now();
        let err = call_err(&h, "fetch.fetch", &fetch_input(&url)).await;
        assert!(matches!(err, CallError::Timeout { .. }), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    }
    assert_eq!(server.accepted(), 5);
    // Every connection the timed-out calls opened is closed by the host.
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.open() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.open(), 0, "sockets left open after the calls ended");
    assert_serving(&h).await;
}
