//! The host on NATS JetStream (`[storage] backend = "nats"`): two data dirs
//! (two hosts) on one server share their sessions; a server that is down
//! stops the host with its URL; the commands on a data dir's store files
//! refuse a store that is not in the data dir. Each test starts its own
//! `nats-server` on loopback (installed from Debian's package if missing).

use glovebox_store_nats::testing::NatsServer;

use crate::util::{Site, plugins};

fn site_on(url: &str) -> Site {
    Site::with_config(
        &format!("backend = \"nats\"\nurl = \"{url}\"\nprefix = \"it\"\n"),
        &[(
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        )],
    )
}

#[test]
fn two_hosts_on_one_nats_server_share_a_session() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let (a, b) = (site_on(&server.url()), site_on(&server.url()));
    a.start_workagent("w");
    let call = |site: &Site, message: &str| {
        let input = format!(r#"{{"message":"{message}"}}"#);
        let (code, out, err) = site.run(&["call", "echo.echo", "-i", &input, "-s", "w"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(message), "{out}");
    };
    call(&a, "from a");
    // Another host, with a data dir of its own: the session is the store's.
    call(&b, "from b");
    for site in [&a, &b] {
        let (code, out, err) = site.run(&["log", "verify", "w"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("ok"), "{out}");
    }
    // Nothing of the session is in the data dirs.
    assert!(!a.data().join("sled").exists() && !b.data().join("sled").exists());
    // The commands that work on a data dir's store files say why they cannot.
    let (code, _, err) = a.run(&["store", "check"]);
    assert_ne!(code, 0);
    assert!(err.contains("is on NATS"), "{err}");
}

#[test]
fn a_host_whose_nats_server_is_down_stops_with_the_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let site = site_on(&url);
    let (code, _, err) = site.run(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--name",
        "w",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("cannot reach the NATS server at `{url}`")),
        "{err}"
    );
}
