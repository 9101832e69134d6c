//! Notifications an agent can abuse (threat 57), over the real binary:
//! agent text with Slack markup reaches a Slack target as text (no
//! mention, no disguised link), and a target whose receiver is down holds
//! at most `quotas.outbox_per_target` notifications, the oldest dropped and
//! counted where the operator looks (`glovebox notify status`, `/metrics`,
//! the dashboard), also after a restart.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::dashboard::http;
use crate::mcp::Server;
use crate::notify::{Receiver, call, glovebox, ok_json, site};
use crate::util::free_port;

// Threat 57: an agent names its session (or writes a reason) with Slack
// markup; the operator's channel must get text, not `@channel`, a ping of a
// person or a link that shows one address and opens another.
#[test]
fn threat_57_agent_text_in_a_slack_body_cannot_ping_or_forge_links() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let config = site(
        dir.path(),
        &format!(
            "[[notify]]\nname = \"chat\"\nurl = \"{}\"\nformat = \"slack\"\nevents = [\"session_completed\"]\n",
            receiver.url("/chat"),
        ),
    );
    let mut server = crate::notify::serve(&config);
    let mut id = 0;
    let names = [
        "<!channel>",
        "<!here|here>",
        "<@U024BE7LH>&<#C024BE7LR>",
        "<http://evil.example/login|https://docs.example.com>",
    ];
    for name in names {
        let started = call(
            &mut server,
            &mut id,
            "session_start",
            json!({"role": "workagent", "project": "p", "name": name}),
        );
        assert_eq!(started["name"], name, "{started}");
        call(&mut server, &mut id, "session_end", json!({}));
    }
    let got = receiver.wait_until("a Slack body per session", |got| got.len() >= names.len());
    drop(server);
    let texts: BTreeSet<String> = got
        .iter()
        .map(|d| {
            let body = d.json();
            assert_eq!(body["unfurl_links"], false, "{body}");
            assert_eq!(body["unfurl_media"], false, "{body}");
            let text = body["text"].as_str().unwrap().to_string();
            // Slack's markup needs `<`; none arrives, and `&` is escaped.
            assert!(!text.contains(['<', '>']), "{text}");
            text
        })
        .collect();
    let wanted = [
        "session `&lt;!channel&gt;` completed",
        "session `&lt;!here|here&gt;` completed",
        "session `&lt;@U024BE7LH&gt;&amp;&lt;#C024BE7LR&gt;` completed",
        "session `&lt;http://evil.example/login|https://docs.example.com&gt;` completed",
    ];
    for want in wanted {
        assert!(
            texts.iter().any(|t| t.contains(want)),
            "{want} in {texts:#?}"
        );
    }
}

/// `GET path` on the admin listener, once it listens.
fn admin_get(admin: &str, path: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(admin).is_err() {
        assert!(
            Instant::now() < deadline,
            "the admin listener never came up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let answer = http(admin, "GET", path, &[], "");
    assert_eq!(answer.status, 200, "{path}: {}", answer.body);
    answer.body
}

fn dropped(status: &Value) -> (u64, u64) {
    let down = status
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["target"] == "down")
        .unwrap_or_else(|| panic!("no target `down`: {status}"));
    (
        down["pending"].as_u64().unwrap(),
        down["dropped"].as_u64().unwrap(),
    )
}

// Threat 57: while a receiver is down, an agent that causes events must not
// grow the store without end: past `quotas.outbox_per_target` the oldest
// notifications go, and the operator sees how many, also after a restart.
#[test]
fn threat_57_a_full_outbox_drops_its_oldest_and_the_operator_sees_it() {
    let dead = free_port();
    let dir = tempfile::tempdir().unwrap();
    let config = site(
        dir.path(),
        &format!(
            "[quotas]\noutbox_per_target = 3\n\
             [[notify]]\nname = \"down\"\nurl = \"http://127.0.0.1:{dead}/\"\nevents = [\"session_completed\"]\n\
             retry_initial = \"1h\"\nmax_attempts = 100\n"
        ),
    );
    let admin = format!("127.0.0.1:{}", free_port());
    let mut server = Server::initialized(&config, &["--admin", &admin]);
    let mut id = 0;
    for i in 1..=6 {
        call(
            &mut server,
            &mut id,
            "session_start",
            json!({"role": "workagent", "project": "p", "name": format!("n{i}")}),
        );
        call(&mut server, &mut id, "session_end", json!({}));
    }
    // Each first attempt fails at once (nobody listens), so all that are
    // kept show as retrying.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let status = ok_json(&config, &["notify", "status", "--json"]);
        if status[0]["retrying"].as_array().map_or(0, Vec::len) == 3 {
            break status;
        }
        assert!(Instant::now() < deadline, "{status}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(dropped(&status), (3, 3), "{status}");
    let kept: BTreeSet<&str> = status[0]["retrying"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["notification"]["session_name"].as_str().unwrap())
        .collect();
    // The newest is kept (an entry in delivery at the moment is spared, so
    // which older ones go may vary; the ledger's own test pins them down).
    // An outbox that refused new entries would keep n1 to n3.
    assert!(kept.contains("n6"), "{kept:?}");
    let (code, text, err) = glovebox(&config, &["notify", "status"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("target `down`: 3 notifications dropped, oldest first"),
        "{text}"
    );
    assert!(text.contains("`quotas.outbox_per_target`"), "{text}");
    let metrics = admin_get(&admin, "/metrics");
    assert!(
        metrics.contains("glovebox_notify_dropped_total{target=\"down\"} 3"),
        "{metrics}"
    );
    let page = admin_get(&admin, "/ui/notify");
    assert!(
        page.contains("<td class=\"dropped\">3 (the last "),
        "{page}"
    );
    // The agent's calls were never refused for it.
    let answer = server.call(99, "echo.echo", json!({"message": "still here"}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    drop(server);

    // Counted in the store: after the host stopped, and after a restart.
    assert_eq!(
        dropped(&ok_json(&config, &["notify", "status", "--json"])),
        (3, 3)
    );
    let _server = Server::initialized(&config, &["--admin", &admin]);
    let metrics = admin_get(&admin, "/metrics");
    assert!(
        metrics.contains("glovebox_notify_dropped_total{target=\"down\"} 3"),
        "{metrics}"
    );
}
