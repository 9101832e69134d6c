//! The chain's rules, and hooks that cannot be loaded. Hooks that run are tested
//! with real hook plugins in `tests/all`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::{Config, Engine};

use super::*;

fn engine() -> Engine {
    let mut cfg = Config::new();
    cfg.wasm_component_model(true);
    cfg.epoch_interruption(true);
    Engine::new(&cfg).unwrap()
}

const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\x00\x01\x00";
const CORE_MODULE: &[u8] = b"\0asm\x01\x00\x00\x00";

/// A component whose only items are imports of instances named `names` that have
/// no exports: enough to be checked by name, never instantiated.
fn component_importing(names: &[&str]) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let mut imports = Vec::new();
    leb(names.len(), &mut imports);
    for name in names {
        imports.push(0x00);
        leb(name.len(), &mut imports);
        imports.extend(name.as_bytes());
        imports.extend([0x05, 0x00]); // (instance (type 0))
    }
    let mut bytes = EMPTY_COMPONENT.to_vec();
    bytes.extend([7, 3, 1, 0x42, 0x00]); // type section: (type (instance))
    bytes.push(10);
    leb(imports.len(), &mut bytes);
    bytes.extend(imports);
    bytes
}

pub(super) fn request(action: &str) -> HookRequest {
    HookRequest {
        call_id: "call-1".into(),
        tool: "db.delete".into(),
        action: action.into(),
        role: "workagent".into(),
        session: "s-1".into(),
        input: "{}".into(),
        estimated_cost: 1.0,
        destructive: true,
        tags: vec!["nightly".into()],
        principal: String::new(),
        project: None,
        http: None,
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The reason a single hook made of `bytes` (pinned to `sha256`, if given) is broken.
async fn broken_reason(bytes: &[u8], sha256: Option<String>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut config = HookConfig::new("h", write(dir.path(), "h.wasm", bytes));
    config.sha256 = sha256;
    let chain = HookChain::load(&engine(), &CompiledCache::none(), &[config]).await;
    match &chain.hooks()[0].status {
        HookStatus::Broken(reason) => reason.clone(),
        HookStatus::Ready => panic!("expected the hook to be broken"),
    }
}

fn decision(hook: &str, kind: DecisionKind) -> HookDecision {
    HookDecision {
        hook: hook.into(),
        pattern: "*".into(),
        decision: kind,
        reason: (kind != DecisionKind::Allow).then(|| format!("{hook} says so")),
        alternatives: Vec::new(),
        took: Duration::from_millis(1),
        digest: None,
    }
}

#[test]
fn deny_wins_then_the_first_ask_then_allow() {
    use DecisionKind::{Allow, Ask, Deny};
    assert_eq!(verdict_of(&[]), Verdict::Allow);
    assert_eq!(
        verdict_of(&[decision("a", Allow), decision("b", Allow)]),
        Verdict::Allow
    );
    assert_eq!(
        verdict_of(&[decision("a", Allow), decision("b", Ask), decision("c", Ask)]),
        Verdict::Ask(decision("b", Ask))
    );
    assert_eq!(
        verdict_of(&[
            decision("a", Ask),
            decision("b", Allow),
            decision("c", Deny)
        ]),
        Verdict::Deny(decision("c", Deny))
    );
}

#[tokio::test]
async fn an_empty_chain_allows_everything() {
    let chain = HookChain::load(&engine(), &CompiledCache::none(), &[]).await;
    assert!(chain.is_empty());
    assert!(chain.hooks().is_empty());
    let outcome = chain.evaluate(&request("execute:database:delete")).await;
    assert_eq!(outcome.verdict, Verdict::Allow);
    assert!(outcome.decisions.is_empty());
}

// Regression guard for fail-closed: a missing hook must deny, not vanish.
#[tokio::test]
async fn a_missing_hook_denies_every_call_and_stops_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone.wasm");
    let hooks = [
        HookConfig::new("gone", missing.clone()),
        HookConfig::new("later", write(dir.path(), "later.wasm", b"not wasm")),
    ];
    let chain = HookChain::load(&engine(), &CompiledCache::none(), &hooks).await;
    assert!(!chain.is_empty());
    let infos = chain.hooks();
    assert_eq!(infos.len(), 2);
    assert_eq!(infos[0].name, "gone");
    assert!(infos[0].triggers.is_empty());
    let HookStatus::Broken(reason) = &infos[0].status else {
        panic!("a missing hook must be broken");
    };
    assert_eq!(
        reason,
        &format!(
            "cannot read `{}`: no such file or directory (os error 2): build the hook, or fix `component` in its `[[hook]]` entry",
            missing.display()
        )
    );

    for action in ["execute:database:delete", "read:file", "x"] {
        let outcome = chain.evaluate(&request(action)).await;
        // The first broken hook denies; the second is never asked.
        assert_eq!(outcome.decisions.len(), 1, "{action}");
        let d = &outcome.decisions[0];
        assert_eq!(
            (d.hook.as_str(), d.pattern.as_str(), d.decision),
            ("gone", "*", DecisionKind::Deny)
        );
        assert_eq!(
            d.reason.as_deref(),
            Some(
                format!(
                    "hook `gone` cannot be loaded: {reason}; every call is denied until it is fixed"
                )
                .as_str()
            )
        );
        assert_eq!(outcome.verdict, Verdict::Deny(d.clone()));
    }

    // Nothing was allowed, so no hook hears about the outcome.
    let outcome = chain.evaluate(&request("read:file")).await;
    let failures = chain
        .after(&request("read:file"), &outcome, true, "ok")
        .await;
    assert!(failures.is_empty());
}

#[tokio::test]
async fn files_that_are_not_hook_components_are_broken_with_the_reason() {
    let reason = broken_reason(b"not wasm at all", None).await;
    assert!(
        reason.ends_with("is not a WebAssembly file (no `\\0asm` header)"),
        "{reason}"
    );

    let reason = broken_reason(CORE_MODULE, None).await;
    assert!(
        reason.ends_with(
            "is a core WebAssembly module, not a component: build it for `wasm32-wasip2`"
        ),
        "{reason}"
    );

    let reason = broken_reason(b"\0asm\x0d\x00\x01\x00\xff\xff", None).await;
    assert!(reason.contains("is not a valid component: "), "{reason}");

    let reason = broken_reason(EMPTY_COMPONENT, None).await;
    assert_eq!(
        reason,
        "it does not export `glovebox:plugin/permission-hook@0.2.0` (or the older `glovebox:plugin/permission-hook@0.1.0`), so it is not a `hook-plugin` component (it exports nothing); build it against `wit/v0.2/plugin.wit`"
    );

    let dir = tempfile::tempdir().unwrap();
    let reason = {
        let config = HookConfig::new("h", dir.path());
        let chain = HookChain::load(&engine(), &CompiledCache::none(), &[config]).await;
        match &chain.hooks()[0].status {
            HookStatus::Broken(reason) => reason.clone(),
            HookStatus::Ready => unreachable!(),
        }
    };
    assert!(
        reason.ends_with("is not a file: fix `component` in its `[[hook]]` entry"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_pinned_digest_must_match() {
    let wrong = "0".repeat(64);
    let reason = broken_reason(EMPTY_COMPONENT, Some(wrong.clone())).await;
    let actual = hex::encode(Sha256::digest(EMPTY_COMPONENT));
    assert!(
        reason.contains(&format!(
            "the config pins sha256 {wrong} but the file has {actual}"
        )),
        "{reason}"
    );
    // The right digest gets past the pin (and on to the next check).
    let reason = broken_reason(EMPTY_COMPONENT, Some(actual)).await;
    assert!(reason.starts_with("it does not export"), "{reason}");
}

#[tokio::test]
async fn imports_beyond_clocks_and_random_are_refused_by_name() {
    for import in [
        "wasi:filesystem/types@0.2.6",
        "wasi:sockets/tcp@0.2.6",
        "wasi:cli/environment@0.2.0",
        "wasi:cli/stdout@0.2.6",
        "wasi:http/outgoing-handler@0.2.6",
    ] {
        let reason = broken_reason(&component_importing(&[import]), None).await;
        assert_eq!(
            reason,
            format!(
                "it imports `{import}`: hooks get no filesystem, network, env or stdio; rebuild it without that import"
            )
        );
    }
    // Allowed imports pass the check, so this one fails only for its missing export.
    for import in [
        "wasi:clocks/wall-clock@0.2.6",
        "wasi:random/random@0.2.0",
        "glovebox:plugin/types@0.1.0",
    ] {
        let reason = broken_reason(&component_importing(&[import]), None).await;
        assert!(
            reason.starts_with("it does not export"),
            "{import}: {reason}"
        );
    }
}

#[tokio::test]
async fn the_refusal_names_the_capability_before_its_io_plumbing() {
    let reason = broken_reason(
        &component_importing(&[
            "wasi:clocks/wall-clock@0.2.6",
            "wasi:io/error@0.2.6",
            "wasi:io/streams@0.2.6",
            "wasi:filesystem/types@0.2.6",
            "wasi:cli/stderr@0.2.6",
        ]),
        None,
    )
    .await;
    assert_eq!(
        reason,
        "it imports `wasi:filesystem/types@0.2.6`: hooks get no filesystem, network, env or stdio; rebuild it without that import (it also imports `wasi:cli/stderr@0.2.6`, `wasi:io/error@0.2.6`, `wasi:io/streams@0.2.6`)"
    );
    let many: Vec<String> = (0..8).map(|i| format!("wasi:cli/x{i}@0.2.6")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let reason = broken_reason(&component_importing(&many), None).await;
    assert!(
        reason.ends_with("`wasi:cli/x4@0.2.6` and 3 more)"),
        "{reason}"
    );
}

// The host admits a chain's hook runs only when one runs an instance: a
// broken hook denies without one, an empty chain runs none.
#[tokio::test]
async fn only_a_loaded_hook_whose_trigger_covers_the_action_runs_an_instance() {
    let empty = HookChain::load(&engine(), &CompiledCache::none(), &[]).await;
    assert_eq!(empty.first_to_run("execute:database:delete"), None);
    let dir = tempfile::tempdir().unwrap();
    let broken = [HookConfig::new("gone", dir.path().join("gone.wasm"))];
    let chain = HookChain::load(&engine(), &CompiledCache::none(), &broken).await;
    assert_eq!(chain.first_to_run("execute:database:delete"), None);
}

#[test]
fn a_chain_that_could_not_run_denies_in_the_hooks_name() {
    let outcome = HookChain::failed_closed(
        "cost",
        "*",
        "admission was full".to_string(),
        Duration::from_millis(5),
    );
    let Verdict::Deny(d) = &outcome.verdict else {
        panic!("a chain that could not run must deny: {outcome:?}");
    };
    assert_eq!((d.hook.as_str(), d.pattern.as_str()), ("cost", "*"));
    assert_eq!(d.reason.as_deref(), Some("admission was full"));
    assert_eq!(outcome.decisions.len(), 1);
}
