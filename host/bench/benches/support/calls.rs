//! A trivial call (the echo plugin) through `Host::call` with 0, 1 or 3
//! permission hooks (used by `calls` and `compare`).

use std::time::{Duration, Instant};

use std::sync::Arc;

use glovebox::manifest::{CeilingLimits, HookConfig, PeriodCeilings, ToolOverride};
use glovebox::session::{Role, StartSession};
use glovebox::{CallContext, Gateway, Host, HostConfig, PluginManifest};

use super::artifact;

pub fn hooks(n: usize) -> Vec<HookConfig> {
    let mut all = vec![
        HookConfig::new("cost", artifact("hook_cost_control")),
        HookConfig::new("roles", artifact("hook_role_allowlist")),
        HookConfig::new("destructive", artifact("hook_destructive")),
    ];
    all[1].settings = serde_json::json!({"roles": {"operator": ["*"]}});
    all.truncate(n);
    all
}

pub async fn host(n_hooks: usize, data: &std::path::Path) -> Host {
    host_reusing(n_hooks, 1, data).await
}

/// [`host`] with each hook's instances serving `reuse` evaluations
/// (`[[hook]] reuse`; 1: a fresh instance for each).
pub async fn host_reusing(n_hooks: usize, reuse: u32, data: &std::path::Path) -> Host {
    let mut echo = PluginManifest::for_component(artifact("tool_echo"), &Default::default());
    echo.name = "echo".into();
    let mut config = HostConfig::from_plugins(data.to_path_buf(), vec![echo]);
    config.hooks = hooks(n_hooks);
    for hook in &mut config.hooks {
        hook.reuse = reuse;
    }
    config.hooks_explicitly_none = n_hooks == 0;
    Host::load(config).await.expect("host loads")
}

pub fn stats(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    (p(0.5), p(0.99))
}

/// 200 warm-up calls of `echo.echo` on `h`, then `n` timed ones, one at a time.
pub async fn sample(h: &Host, n: usize) -> Vec<Duration> {
    let input = r#"{"message":"hi"}"#;
    warm_then_time(
        n,
        async || h.call("echo.echo", input, CallContext::standalone()).await,
        |report| {
            report.outcome.expect("call");
        },
    )
    .await
}

/// The same judged by `h`'s hook chain alone (no tool run, nothing logged):
/// what the chain costs apart from the pipeline around it.
pub async fn sample_chain(h: &Host, n: usize) -> Vec<Duration> {
    let req = glovebox::hooks::HookRequest {
        call_id: "call-bench".into(),
        tool: "echo.echo".into(),
        action: "echo.echo".into(),
        role: "operator".into(),
        session: String::new(),
        input: r#"{"message":"hi"}"#.into(),
        estimated_cost: 0.0,
        destructive: false,
        tags: Vec::new(),
        principal: String::new(),
        project: None,
        http: None,
    };
    warm_then_time(
        n,
        async || h.hooks().evaluate(&req).await,
        |outcome| {
            assert_eq!(
                outcome.verdict,
                glovebox::hooks::Verdict::Allow,
                "{outcome:?}"
            )
        },
    )
    .await
}

/// 200 warm-up runs of `once`, then `n` timed ones, one at a time; `check`
/// looks at every run's result, outside the timed part.
async fn warm_then_time<T>(
    n: usize,
    mut once: impl AsyncFnMut() -> T,
    check: impl Fn(T),
) -> Vec<Duration> {
    for _ in 0..200 {
        check(once().await);
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let result = once().await;
        samples.push(start.elapsed());
        check(result);
    }
    samples
}

/// Which spend ceilings across sessions a session's calls are admitted
/// against (none is ever reached: the limits are far above the bench's).
#[derive(Clone, Copy, Debug)]
pub enum Ceilings {
    /// Nothing counted at all (the call path before the tallies): the
    /// principal counts as an operator, so not even its daily events are.
    Off,
    /// No ceiling: only the principal's daily events and bytes, batched.
    None,
    /// The principal's day: one compare-and-set per call.
    Principal,
    /// The principal's, the project's and the role's: three per call.
    All,
}

/// A gateway over a sled store in `data` (echo costs 0.01 a call, no hooks)
/// with `ceilings`, and a workagent session in it.
pub async fn session_gateway(ceilings: Ceilings, data: &std::path::Path) -> (Gateway, String) {
    let mut echo = PluginManifest::for_component(artifact("tool_echo"), &Default::default());
    echo.name = "echo".into();
    echo.tools.insert(
        "echo".into(),
        ToolOverride {
            cost: Some(0.01),
            ..ToolOverride::default()
        },
    );
    let mut config = HostConfig::from_plugins(data.to_path_buf(), vec![echo]);
    config.hooks_explicitly_none = true;
    let far = PeriodCeilings {
        day: CeilingLimits {
            cost_micros: Some(u64::MAX / 4),
            calls: Some(u64::MAX / 4),
            tokens: Some(u64::MAX / 4),
        },
        ..PeriodCeilings::default()
    };
    let c = &mut config.budgets.ceilings;
    match ceilings {
        Ceilings::Off | Ceilings::None => {}
        Ceilings::Principal => {
            c.principals.insert("local".into(), far);
        }
        Ceilings::All => {
            c.principals.insert("local".into(), far.clone());
            c.projects.insert("bench".into(), far.clone());
            c.roles.insert("workagent".into(), far);
        }
    }
    let host = Arc::new(Host::load(config).await.expect("host loads"));
    let durable = Arc::new(glovebox::open_sessions(host.config()).expect("store opens"));
    let gateway = Gateway::new(host, durable);
    if let Ceilings::Off = ceilings {
        let tallies = gateway.sessions().tallies();
        let mut config = (*tallies.config()).clone();
        config.operators.insert("local".into());
        tallies.configure(config);
    }
    let session = gateway
        .sessions()
        .start(StartSession {
            role: Role::Workagent,
            project: "bench".into(),
            name: None,
            tags: vec![],
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        })
        .expect("session starts")
        .header
        .id;
    (gateway, session)
}

/// `n` echo calls in `session` through `call_in_session`, after 200 to
/// warm up, one at a time.
pub async fn sample_session(gateway: &Gateway, session: &str, n: usize) -> Vec<Duration> {
    let input = r#"{"message":"hi"}"#;
    warm_then_time(
        n,
        async || {
            gateway
                .scope(&glovebox::cli_operator())
                .call_in_session(session, "echo.echo", input)
                .await
        },
        |report| {
            report.expect("logged").outcome.expect("call");
        },
    )
    .await
}
