//! `[storage]`: the backend and, for `backend = "nats"`, where the server is.

use super::super::{NatsStorage, StorageBackend};
use super::Fixture;

const HEAD: &str = "data_dir = \"data\"\nhooks = \"none\"\n[storage]\n";

#[test]
fn a_nats_store_is_a_url_credentials_a_prefix_and_replicas() {
    let fx = Fixture::new();
    fx.write("secrets/host.creds", "-----BEGIN NATS USER JWT-----\n");
    let c = fx
        .host(&format!(
            "{HEAD}backend = \"nats\"\nurl = \"nats://a:4222, nats://b:4222\"\ncreds = \"secrets/host.creds\"\nprefix = \"team-1\"\nreplicas = 3\n"
        ))
        .unwrap();
    assert_eq!(c.storage.backend, StorageBackend::Nats);
    assert_eq!(c.storage.backend.to_string(), "nats");
    let nats = c.storage.nats.unwrap();
    assert_eq!(
        nats,
        NatsStorage {
            url: "nats://a:4222, nats://b:4222".to_string(),
            creds: Some(fx.path("secrets/host.creds").canonicalize().unwrap()),
            user: None,
            password: None,
            prefix: "team-1".to_string(),
            replicas: 3,
            node: None,
            advertise: None,
            lease_ttl: NatsStorage::DEFAULT_LEASE_TTL,
        }
    );
    // A node id, the URL it serves MCP at, and a lease TTL.
    let c = fx
        .host(&format!(
            "{HEAD}backend = \"nats\"\nurl = \"nats://a:4222\"\nnode = \"host-a\"\nadvertise = \"https://a.example/mcp\"\nlease_ttl = \"2s\"\n"
        ))
        .unwrap();
    let nats = c.storage.nats.unwrap();
    assert_eq!(nats.node.as_deref(), Some("host-a"));
    assert_eq!(nats.advertise.as_deref(), Some("https://a.example/mcp"));
    assert_eq!(nats.lease_ttl, std::time::Duration::from_secs(2));
    // The defaults: prefix `glovebox`, one replica; user and password.
    let c = fx
        .host(&format!(
            "{HEAD}backend = \"nats\"\nurl = \"tls://nats.example:4222\"\nuser = \"host-a\"\npassword = \"s3cret\"\n"
        ))
        .unwrap();
    let nats = c.storage.nats.unwrap();
    assert_eq!((nats.prefix.as_str(), nats.replicas), ("glovebox", 1));
    assert_eq!(nats.user.as_deref(), Some("host-a"));
    assert!(
        !format!("{nats:?}").contains("s3cret"),
        "the password is not logged"
    );
    // The embedded backends have no NATS settings.
    let c = fx.host(&format!("{HEAD}backend = \"sqlite\"\n")).unwrap();
    assert_eq!(c.storage.nats, None);
}
