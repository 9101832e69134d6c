//! docs/threats.md "CPU and time", plus fresh instances and host faults.

use std::time::{Duration, Instant};

use glovebox::CallError;

use crate::util::{self, assert_serving, call_err, call_ok, host_with_echo, manifest, plugins};

const DEADLINE: Duration = Duration::from_millis(500);

fn with_deadline(name: &str, component: &str) -> glovebox::PluginManifest {
    let mut m = manifest(name, component);
    m.limits.deadline = DEADLINE;
    m
}

// Threat 1: an infinite loop is killed at its deadline, never later than 2x.
#[tokio::test]
async fn infinite_loop_is_killed_at_its_deadline() {
    let h = host_with_echo(with_deadline("loop", plugins::HOSTILE_INFINITE_LOOP)).await;
    let start = Instant::now();
    let err = call_err(&h, "loop.spin", "{}").await;
    let took = start.elapsed();
    assert!(matches!(err, CallError::Timeout { .. }), "{err}");
    assert_eq!(err.kind(), "timeout");
    assert!(took >= DEADLINE, "stopped before its deadline: {took:?}");
    assert!(
        took < DEADLINE * 2,
        "stopped after twice its deadline: {took:?}"
    );
    assert_serving(&h).await;
}

// Threat 2: the same deadline applies while the component instantiates.
#[tokio::test]
async fn infinite_loop_in_the_start_function_is_stopped_at_the_deadline() {
    let start = Instant::now();
    let err = util::try_host(vec![with_deadline(
        "start-loop",
        plugins::HOSTILE_START_LOOP,
    )])
    .await
    .err()
    .expect("a plugin that never finishes instantiating cannot load");
    let took = start.elapsed();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("start-loop") && msg.contains("deadline"),
        "{msg}"
    );
    // Compiling is not under the deadline, so allow for it; the loop itself
    // must not run far past the deadline.
    assert!(
        took < DEADLINE * 2 + Duration::from_secs(20),
        "took {took:?}"
    );
}

// Threat 4: a tool blocked inside a host call is cancelled at its deadline.
#[tokio::test]
async fn tool_blocked_in_a_host_call_is_cancelled_at_the_deadline() {
    let h = host_with_echo(with_deadline("sleep", plugins::HOSTILE_SLEEP)).await;
    let start = Instant::now();
    let err = call_err(&h, "sleep.sleep", r#"{"seconds":3600}"#).await;
    let took = start.elapsed();
    assert!(matches!(err, CallError::Timeout { .. }), "{err}");
    assert!(
        took < DEADLINE * 2,
        "cancelled after twice its deadline: {took:?}"
    );
    assert_serving(&h).await;
}

// Every call gets fresh hands: a static counter never sees a previous call.
#[tokio::test]
async fn every_call_runs_in_a_fresh_instance() {
    let h = host_with_echo(manifest("state", plugins::HOSTILE_STATE)).await;
    for _ in 0..5 {
        assert_eq!(call_ok(&h, "state.count", "{}").await["count"], 1);
    }
}

// Threat 32: a panic inside host glue ends that call, not the host.
#[tokio::test]
async fn a_panic_in_host_glue_fails_only_that_call() {
    let h = host_with_echo(manifest("glue-fault", plugins::TOOL_ECHO)).await;
    glovebox::fault_injection::panic_on_tool("glue-fault.echo");
    let err = call_err(&h, "glue-fault.echo", "{}").await;
    assert!(matches!(err, CallError::Internal { .. }), "{err}");
    assert!(err.to_string().contains("injected fault"), "{err}");
    assert_serving(&h).await;
}

// Threat 1 under concurrency: loops on every slot do not stop other calls
// from finishing once their deadlines pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_loops_all_end_at_their_deadlines() {
    let h = host_with_echo(with_deadline("loop", plugins::HOSTILE_INFINITE_LOOP)).await;
    let start = Instant::now();
    let calls = (0..4).map(|_| util::call(&h, "loop.spin", "{}"));
    let reports = futures::future::join_all(calls).await;
    for r in reports {
        assert!(matches!(r.outcome, Err(CallError::Timeout { .. })));
    }
    assert!(start.elapsed() < DEADLINE * 4, "took {:?}", start.elapsed());
    assert_serving(&h).await;
}
