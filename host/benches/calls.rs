//! Per-call cost of a trivial tool, and what permission hooks add to it.
//!
//! ```text
//! cargo test --no-run            # builds the plugins (tests/build.rs)
//! cargo bench -p glovebox --bench calls --profile dev
//! GLOVEBOX_BENCH_CALLS=5000 cargo bench -p glovebox --bench calls
//! ```
//!
//! A fresh instance per call (the echo plugin), through `Host::call`, with 0,
//! 1 and 3 hooks (cost control, role allow-list, destructive gate, all
//! allowing). Reports median and p99 per call, and the ratio to no hooks.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use glovebox::manifest::HookConfig;
use glovebox::{CallContext, Host, HostConfig, PluginManifest};

fn artifact(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/target/wasm32-wasip2/release")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run `cargo test --no-run` first to build the plugins",
        path.display()
    );
    path
}

fn hooks(n: usize) -> Vec<HookConfig> {
    let mut all = vec![
        HookConfig::new("cost", artifact("hook_cost_control")),
        HookConfig::new("roles", artifact("hook_role_allowlist")),
        HookConfig::new("destructive", artifact("hook_destructive")),
    ];
    all[1].settings = serde_json::json!({"roles": {"operator": ["*"]}});
    all.truncate(n);
    all
}

async fn host(n_hooks: usize, data: &std::path::Path) -> Host {
    let mut echo = PluginManifest::for_component(artifact("tool_echo"), &Default::default());
    echo.name = "echo".into();
    let mut config = HostConfig::from_plugins(data.to_path_buf(), vec![echo]);
    config.hooks = hooks(n_hooks);
    config.hooks_explicitly_none = n_hooks == 0;
    Host::load(config).await.expect("host loads")
}

fn stats(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    (p(0.5), p(0.99))
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::var("GLOVEBOX_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let data = tempfile::tempdir().expect("tempdir");
    println!(
        "{:>6}  {:>12}  {:>12}  {:>8}",
        "hooks", "p50", "p99", "vs 0"
    );
    let mut base = None;
    for k in [0usize, 1, 3] {
        let h = host(k, data.path()).await;
        let input = r#"{"message":"hi"}"#;
        for _ in 0..200 {
            h.call("echo.echo", input, CallContext::standalone())
                .await
                .outcome
                .expect("warm-up call");
        }
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            let report = h.call("echo.echo", input, CallContext::standalone()).await;
            samples.push(start.elapsed());
            report.outcome.expect("call");
        }
        let (p50, p99) = stats(samples);
        let base50 = *base.get_or_insert(p50);
        println!(
            "{k:>6}  {:>9.1} µs  {:>9.1} µs  {:>7.2}x",
            p50.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6,
            p50.as_secs_f64() / base50.as_secs_f64()
        );
    }
}
