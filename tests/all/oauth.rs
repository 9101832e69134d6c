//! `[auth.oauth]` over the real binary and raw HTTP: the test is its own
//! issuer (an EC key made at test time, its key set in a file, tokens it
//! signs). A good token is served as the principal its `sub` names, beside
//! a principal's static token; an expired token, a wrong audience, a wrong
//! issuer, another key's signature, an HMAC one, `alg: none`, a subject
//! that is no declared principal and a missing scope are each refused with
//! the status and `WWW-Authenticate` the spec says, the server logs why,
//! never the token, and nothing is done as the principal they name. The
//! protected-resource metadata is served.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::identity::{call, http, open_session};
use crate::principals::add_agent;
use crate::util::Site;

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "glovebox-oauth-test";
const METADATA: &str = "/.well-known/oauth-protected-resource";

/// A signing key made now, and its public half as a JWK named `kid`.
fn key(kid: &str) -> (EncodingKey, Jwk) {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let key = EncodingKey::from_ec_der(&pair.serialize_der());
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
    jwk.common.key_id = Some(kid.to_string());
    (key, jwk)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Claims for `sub`, valid for an hour, with the `mcp` scope.
fn claims(sub: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "exp": now() + 3600, "iat": now(), "scope": "mcp tools"})
}

fn sign(key: &EncodingKey, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

/// `glovebox serve` over HTTP with its log kept: the process, the address,
/// the lines so far.
fn serve(site: &Site) -> (std::process::Child, String, Arc<Mutex<Vec<String>>>) {
    crate::http_limits::serve_logged(site, &[])
}

/// The server's log once it has a line with `text` (or after 10 s).
fn logged(log: &Mutex<Vec<String>>, text: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let lines = log.lock().unwrap().join("\n");
        if lines.contains(text) || std::time::Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A workagent session started over MCP with `token` (a new MCP session);
/// the answer, which must not be an error.
fn start_as(addr: &str, token: &str) -> Value {
    let session = open_session(addr, Some(token));
    let answer = call(
        addr,
        Some(token),
        &session,
        "session_start",
        json!({"role": "workagent", "project": "p"}),
    )
    .unwrap();
    assert_ne!(answer["result"]["isError"], json!(true), "{answer}");
    answer
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

#[test]
fn oauth_tokens_name_declared_principals_and_bad_ones_are_refused() {
    let site = Site::new(false);
    let alice = add_agent(&site, "alice", "*");
    add_agent(&site, "bob", "*");
    add_agent(&site, "carol", "*");
    let (issuer_key, jwk) = key("k1");
    let (other_key, _) = key("k2");
    let set = JwkSet { keys: vec![jwk] };
    std::fs::write(
        site.path().join("jwks.json"),
        serde_json::to_string(&set).unwrap(),
    )
    .unwrap();
    let mut config = std::fs::read_to_string(site.config()).unwrap();
    // Dave has no token of its own: it comes only through OAuth.
    config += "\n[[principal]]\nname = \"dave\"\nkind = \"agent\"\nroles = [\"workagent\"]\nprojects = [\"*\"]\n";
    config += &format!(
        "\n[auth.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\njwks_file = \"jwks.json\"\nrequired_scopes = [\"mcp\"]\n"
    );
    std::fs::write(site.config(), config).unwrap();
    let (mut child, addr, log) = serve(&site);

    // The metadata document points at the issuer.
    let meta = http(&addr, "GET", METADATA, None, None, "");
    assert_eq!(meta.status, 200, "{}", meta.body);
    let doc: Value = serde_json::from_str(&meta.body).unwrap();
    assert_eq!(doc["resource"], AUDIENCE);
    assert_eq!(doc["authorization_servers"], json!([ISSUER]));
    assert_eq!(doc["scopes_supported"], json!(["mcp"]));
    assert_eq!(doc["bearer_methods_supported"], json!(["header"]));

    // A good token: bob, served as bob.
    let good = sign(&issuer_key, "k1", &claims("bob"));
    start_as(&addr, &good);
    // Alice's static token keeps working beside OAuth.
    let static_session = open_session(&addr, Some(&alice));
    let answer = call(
        &addr,
        Some(&alice),
        &static_session,
        "session_list",
        json!({}),
    )
    .unwrap();
    assert_ne!(answer["result"]["isError"], json!(true), "{answer}");

    // A principal with no static token, through OAuth.
    let dave = sign(&issuer_key, "k1", &claims("dave"));
    start_as(&addr, &dave);

    // No token: 401 pointing at the metadata, no error.
    let answer = http(&addr, "POST", "/mcp", None, None, INIT);
    assert_eq!(answer.status, 401);
    let challenge = answer.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer resource_metadata=\"http://")
            && challenge.contains(&format!("{METADATA}\""))
            && !challenge.contains("error="),
        "{challenge}"
    );

    // Bad tokens, all naming carol: each refused, and why is logged.
    let session = open_session(&addr, Some(&good));
    let mut hmac_header = Header::new(Algorithm::HS256);
    hmac_header.kid = Some("k1".into());
    let hmac = jsonwebtoken::encode(
        &hmac_header,
        &claims("carol"),
        &EncodingKey::from_secret(b"a secret shared with everyone").unwrap(),
    )
    .unwrap();
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT", "kid": "k1"})),
        b64(&claims("carol"))
    );
    let with = |change: Value| {
        let mut c = claims("carol");
        for (k, v) in change.as_object().unwrap() {
            c[k] = v.clone();
        }
        sign(&issuer_key, "k1", &c)
    };
    let refused: Vec<(&str, String, &str)> = vec![
        ("expired", with(json!({"exp": now() - 600})), "expired"),
        (
            "not valid yet",
            with(json!({"nbf": now() + 600})),
            "not valid yet",
        ),
        (
            "wrong audience",
            with(json!({"aud": "another-server"})),
            "wrong audience",
        ),
        (
            "wrong issuer",
            with(json!({"iss": "https://evil.test"})),
            "wrong issuer",
        ),
        (
            "another key",
            sign(&other_key, "k1", &claims("carol")),
            "bad signature",
        ),
        (
            "an unknown key",
            sign(&other_key, "k2", &claims("carol")),
            "does not hold",
        ),
        ("HMAC", hmac, "HMAC"),
        ("alg none", none, "malformed"),
        (
            "no declared principal",
            sign(&issuer_key, "k1", &claims("mallory")),
            "names no declared principal",
        ),
    ];
    for (what, token, why) in &refused {
        let answer = http(&addr, "POST", "/mcp", Some(token), None, INIT);
        assert_eq!(answer.status, 401, "{what}: {}", answer.body);
        let challenge = answer.header("www-authenticate").unwrap();
        assert!(
            challenge.contains("resource_metadata=")
                && challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
        // The open session refuses it too.
        let answer = call(&addr, Some(token), &session, "session_list", json!({}));
        assert_eq!(answer, Err(401), "{what}");
        let lines = logged(&log, why);
        assert!(
            lines.contains(why),
            "{what}: no {why:?} in the server's log:\n{lines}"
        );
        assert!(
            !lines.contains(token.as_str()),
            "{what}: the token was logged"
        );
    }

    // A missing scope: 403 insufficient_scope, naming it.
    let unscoped = with(json!({"scope": "tools"}));
    let answer = http(&addr, "POST", "/mcp", Some(&unscoped), None, INIT);
    assert_eq!(answer.status, 403, "{}", answer.body);
    let challenge = answer.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"mcp\""),
        "{challenge}"
    );

    // Nothing was done as carol; bob's session is bob's.
    let sessions = site.json(&["session", "list", "--json"]).to_string();
    assert!(!sessions.contains("carol"), "{sessions}");
    assert!(sessions.contains("bob"), "{sessions}");
    assert!(sessions.contains("dave"), "{sessions}");
    let lines = logged(&log, "lacks a required scope");
    assert!(lines.contains("lacks a required scope"), "{lines}");
    assert!(
        !lines.contains("carol"),
        "carol was named in the log:\n{lines}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// The owner of the session an answer to `session_start` holds.
fn owner_of(answer: &Value) -> Value {
    let result = &answer["result"];
    match result.get("structuredContent") {
        Some(state) => state["owner"].clone(),
        None => {
            let text = result["content"][0]["text"].as_str().unwrap_or("{}");
            serde_json::from_str::<Value>(text).unwrap()["owner"].clone()
        }
    }
}

// An identity provider whose tokens carry groups, not names: the operator
// maps group values to declared principals, a token stands for the one
// principal its groups lead to, and a token whose groups lead to none, or
// to two, is refused with the reason logged.
#[test]
fn oauth_group_claims_stand_for_the_principals_the_operator_maps_them_to() {
    let site = Site::new(false);
    for name in ["bob", "carol"] {
        add_agent(&site, name, "*");
    }
    let (issuer_key, jwk) = key("k1");
    std::fs::write(
        site.path().join("jwks.json"),
        serde_json::to_string(&JwkSet { keys: vec![jwk] }).unwrap(),
    )
    .unwrap();
    let mut config = std::fs::read_to_string(site.config()).unwrap();
    config += &format!(
        "\n[auth.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\njwks_file = \"jwks.json\"\nprincipal_claim = \"groups\"\n[auth.oauth.principal_map]\n\"eng-agents\" = \"bob\"\n\"eng-oncall\" = \"bob\"\n\"sre\" = \"carol\"\n"
    );
    std::fs::write(site.config(), config).unwrap();
    let (mut child, addr, log) = serve(&site);
    let token = |groups: Value| {
        let mut c = claims("someone@example.com");
        c["groups"] = groups;
        sign(&issuer_key, "k1", &c)
    };

    // Two groups that both stand for bob, and one nobody mapped: bob.
    let good = token(json!(["staff", "eng-agents", "eng-oncall"]));
    let answer = start_as(&addr, &good);
    assert_eq!(owner_of(&answer), "bob", "{answer}");

    for (what, groups, why) in [
        (
            "no mapped group",
            json!(["staff", "bob"]),
            "no value of its `groups` is in `auth.oauth.principal_map`",
        ),
        (
            "groups of two principals",
            json!(["eng-agents", "sre"]),
            "stands for more than one principal",
        ),
        ("no groups", Value::Null, "no `groups` claim"),
    ] {
        let bad = token(groups);
        let answer = http(&addr, "POST", "/mcp", Some(&bad), None, INIT);
        assert_eq!(answer.status, 401, "{what}: {}", answer.body);
        let lines = logged(&log, why);
        assert!(
            lines.contains(why),
            "{what}: no {why:?} in the server's log:\n{lines}"
        );
    }
    // Nothing was done as carol.
    let sessions = site.json(&["session", "list", "--json"]).to_string();
    assert!(!sessions.contains("carol"), "{sessions}");
    let _ = child.kill();
    let _ = child.wait();
}

/// A key set served over HTTP on loopback, as an issuer's `jwks_uri` is:
/// its address, the set it serves (swapped to rotate) and the reads so far.
fn jwks_server(set: Arc<Mutex<String>>) -> (String, Arc<Mutex<usize>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let reads = Arc::new(Mutex::new(0));
    let counted = reads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            *counted.lock().unwrap() += 1;
            let body = set.lock().unwrap().clone();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (addr, reads)
}

// The issuer rotates its key: a token of the new key is refused until the
// server may read the set again (a minute after its last read: junk
// tokens cannot make it hammer the issuer), then accepted without a restart.
#[test]
fn oauth_key_sets_over_http_follow_a_rotation_at_most_once_a_minute() {
    let site = Site::new(false);
    add_agent(&site, "bob", "*");
    let (old_key, old_jwk) = key("old");
    let (new_key, new_jwk) = key("new");
    let served = Arc::new(Mutex::new(
        serde_json::to_string(&JwkSet {
            keys: vec![old_jwk.clone()],
        })
        .unwrap(),
    ));
    let (jwks, reads) = jwks_server(served.clone());
    let mut config = std::fs::read_to_string(site.config()).unwrap();
    config += &format!(
        "\n[auth.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\njwks_url = \"http://{jwks}/jwks.json\"\n"
    );
    std::fs::write(site.config(), config).unwrap();
    let (mut child, addr, log) = serve(&site);

    let old = sign(&old_key, "old", &claims("bob"));
    let answer = http(&addr, "POST", "/mcp", Some(&old), None, INIT);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(*reads.lock().unwrap(), 1);

    // Rotated: the new key's tokens wait for the next read allowed.
    *served.lock().unwrap() = serde_json::to_string(&JwkSet {
        keys: vec![old_jwk, new_jwk],
    })
    .unwrap();
    let new = sign(&new_key, "new", &claims("bob"));
    for _ in 0..5 {
        let answer = http(&addr, "POST", "/mcp", Some(&new), None, INIT);
        assert_eq!(answer.status, 401);
    }
    assert_eq!(
        *reads.lock().unwrap(),
        1,
        "unknown keys made the server read the set again within the minute"
    );
    assert!(logged(&log, "does not hold").contains("does not hold"));

    std::thread::sleep(std::time::Duration::from_secs(61));
    let answer = http(&addr, "POST", "/mcp", Some(&new), None, INIT);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(*reads.lock().unwrap(), 2);
    // The old key still in the set still signs.
    let answer = http(&addr, "POST", "/mcp", Some(&old), None, INIT);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(*reads.lock().unwrap(), 2);
    let _ = child.kill();
    let _ = child.wait();
}

/// `[auth.oauth.tool_scopes]`: a token without a tool's scope does not see
/// it in `tools/list`, and its call, direct or through `job_spawn`, is
/// answered 403 `insufficient_scope` naming the scope, with nothing run or
/// logged; a token with the scope calls it; the principal's static token
/// is not narrowed.
#[test]
fn oauth_tool_scopes_narrow_what_a_token_sees_and_calls() {
    let site = Site::new(false);
    let static_token = add_agent(&site, "bob", "*");
    let (issuer_key, jwk) = key("k1");
    std::fs::write(
        site.path().join("jwks.json"),
        serde_json::to_string(&JwkSet { keys: vec![jwk] }).unwrap(),
    )
    .unwrap();
    let mut config = std::fs::read_to_string(site.config()).unwrap();
    config += &format!(
        "\n[auth.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\njwks_file = \"jwks.json\"\n[auth.oauth.tool_scopes]\n\"echo.*\" = \"echo\"\n\"sleep.sleep\" = \"sleep:run\"\n"
    );
    std::fs::write(site.config(), config).unwrap();
    let (mut child, addr, _log) = serve(&site);
    let token = |scope: &str| {
        let mut c = claims("bob");
        c["scope"] = json!(scope);
        sign(&issuer_key, "k1", &c)
    };
    let listed = |token: &str| -> Vec<String> {
        let session = open_session(&addr, Some(token));
        let list = crate::tasks::rpc(&addr, token, &session, "tools/list", json!({}));
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };

    let narrow = token("mcp tools");
    let names = listed(&narrow);
    assert!(
        !names.iter().any(|n| n == "echo.echo" || n == "sleep.sleep"),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n == "session_start"), "{names:?}");
    let session = open_session(&addr, Some(&narrow));
    for (name, arguments) in [
        ("echo.echo", json!({"message": "hi"})),
        (
            "job_spawn",
            json!({"tool": "echo.echo", "input": {"message": "hi"}}),
        ),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
        .to_string();
        let answer = http(&addr, "POST", "/mcp", Some(&narrow), Some(&session), &body);
        assert_eq!(answer.status, 403, "{name}: {}", answer.body);
        let challenge = answer.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.contains("error=\"insufficient_scope\"")
                && challenge.contains("scope=\"echo\"")
                && challenge.contains(METADATA),
            "{challenge}"
        );
        assert!(
            answer.body.contains("`echo.echo` needs the scope `echo`"),
            "{}",
            answer.body
        );
    }
    // Refused before anything: no default session was even started.
    let (_, listed_sessions, _) = site.run(&["session", "list", "--json"]);
    assert!(
        !listed_sessions.contains("\"s-"),
        "a refused call ran: {listed_sessions}"
    );

    let wider = token("mcp echo");
    let names = listed(&wider);
    assert!(names.iter().any(|n| n == "echo.echo"), "{names:?}");
    assert!(!names.iter().any(|n| n == "sleep.sleep"), "{names:?}");
    let session = open_session(&addr, Some(&wider));
    let answer = call(
        &addr,
        Some(&wider),
        &session,
        "echo.echo",
        json!({"message": "hi"}),
    )
    .unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");

    // The principal's own token is not narrowed.
    let names = listed(&static_token);
    assert!(names.iter().any(|n| n == "sleep.sleep"), "{names:?}");
    let _ = child.kill();
    let _ = child.wait();

    // A scope on a tool nobody serves would protect nothing: refused.
    let config = std::fs::read_to_string(site.config()).unwrap();
    std::fs::write(
        site.config(),
        config.replace(
            "\"sleep.sleep\" = \"sleep:run\"",
            "\"sleep.nap\" = \"sleep:run\"",
        ),
    )
    .unwrap();
    let (code, _, err) = site.run(&["call", "echo.echo", "--input", r#"{"message":"hi"}"#]);
    assert_ne!(code, 0);
    assert!(
        err.contains("`auth.oauth.tool_scopes.sleep.nap` names no configured tool"),
        "{err}"
    );
}
