//! THREATS.md "Memory and size".

use glovebox::CallError;

use crate::util::{self, assert_serving, call_err, call_ok, host_with_echo, manifest, plugins};

const MIB: u64 = 1024 * 1024;

// Threat 6: memory.grow towards 4 GiB stops at the manifest's cap.
#[tokio::test]
async fn memory_bomb_stops_at_the_manifest_cap() {
    let mut m = manifest("bomb", plugins::HOSTILE_MEMORY_BOMB);
    m.limits.memory = 48 * MIB;
    let h = host_with_echo(m).await;
    let report = util::call(&h, "bomb.grow", r#"{"mib":4096}"#).await;
    let err = report.outcome.expect_err("the bomb cannot finish");
    assert!(
        matches!(err, CallError::MemoryLimit { limit, .. } if limit == 48 * MIB),
        "{err}"
    );
    assert!(err.to_string().contains("limits.memory"), "{err}");
    // The instance got close to the cap but never past it.
    let peak = report.metering.peak_memory_bytes;
    assert!(peak <= 48 * MIB && peak > 16 * MIB, "peak {peak}");
    assert_serving(&h).await;
}

// Threat 7: a huge result is an error once past the output cap; nothing of it is returned.
#[tokio::test]
async fn huge_output_is_refused_past_the_output_cap() {
    let mut m = manifest("huge", plugins::HOSTILE_HUGE_OUTPUT);
    m.limits.memory = 1024 * MIB;
    m.limits.output = MIB;
    // Building 300 MiB takes a while on a loaded machine; the deadline is not under test.
    m.limits.deadline = std::time::Duration::from_secs(60);
    let h = host_with_echo(m).await;
    let report = util::call(&h, "huge.huge", r#"{"mib":300}"#).await;
    let err = report.outcome.expect_err("300 MiB is over the 1 MiB cap");
    assert!(
        matches!(err, CallError::OutputTooLarge { limit, .. } if limit == MIB),
        "{err}"
    );
    assert_eq!(
        report.metering.bytes_out, 0,
        "nothing oversized is passed on"
    );
    // Just over the cap is refused by the host's own check too.
    let err = call_err(&h, "huge.huge", r#"{"mib":1}"#).await;
    assert!(matches!(err, CallError::OutputTooLarge { .. }), "{err}");
    // A result under the cap passes.
    let out = call_ok(&h, "huge.huge", r#"{"mib":0}"#).await;
    assert!(out["data"].is_string());
    assert_serving(&h).await;
}

// Threat 8: gigabytes written to stdout/stderr are captured bounded and marked truncated.
#[tokio::test]
async fn stdout_flood_is_captured_bounded_and_marked_truncated() {
    let mut m = manifest("flood", plugins::HOSTILE_STDOUT_FLOOD);
    m.limits.stdio = 64 * 1024;
    m.limits.deadline = std::time::Duration::from_secs(60);
    let h = host_with_echo(m).await;
    let report = util::call(&h, "flood.flood", r#"{"mib":1024}"#).await;
    assert_eq!(
        report.outcome.as_ref().expect("the flood itself succeeds")["done"],
        true
    );
    for captured in [&report.stdout, &report.stderr] {
        assert!(captured.truncated);
        assert_eq!(captured.text.len(), 64 * 1024);
        assert_eq!(captured.total_bytes, 1024 * MIB);
    }
    assert_serving(&h).await;
}

// Threat 9: huge input and deeply nested JSON get a clear error, no host stack overflow.
#[tokio::test]
async fn huge_or_deeply_nested_input_is_refused() {
    let (mut config, _data) = util::config(vec![manifest("echo", plugins::TOOL_ECHO)]);
    config.runtime.max_input_bytes = 1024 * 1024;
    let h = glovebox::Host::load(config).await.unwrap();
    let huge = format!(r#"{{"message":"{}"}}"#, "x".repeat(2 * 1024 * 1024));
    let err = call_err(&h, "echo.echo", &huge).await;
    assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
    assert!(err.to_string().contains("max_input_bytes"), "{err}");

    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let err = call_err(&h, "echo.echo", &nested).await;
    assert!(matches!(err, CallError::InvalidInput { .. }), "{err}");
    assert!(err.to_string().contains("recursion limit"), "{err}");
    assert_serving(&h).await;
}

// Threat 10: calls at their caps beyond the memory budget are answered `busy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_control_answers_busy_past_the_memory_budget() {
    let mut sleeper = manifest("sleep", plugins::HOSTILE_SLEEP);
    sleeper.limits.memory = 256 * MIB;
    sleeper.limits.deadline = std::time::Duration::from_secs(2);
    let mut echo = manifest("echo", plugins::TOOL_ECHO);
    echo.limits.memory = 32 * MIB;
    let (mut config, _data) = util::config(vec![sleeper, echo]);
    config.runtime.memory_budget = 512 * MIB;
    let h = std::sync::Arc::new(glovebox::Host::load(config).await.unwrap());
    // Two sleepers reserve the whole budget...
    let a = tokio::spawn({
        let h = h.clone();
        async move { util::call(&h, "sleep.sleep", r#"{"seconds":10}"#).await }
    });
    let b = tokio::spawn({
        let h = h.clone();
        async move { util::call(&h, "sleep.sleep", r#"{"seconds":10}"#).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // ...so a third call is refused at once, before it runs.
    let err = call_err(&h, "echo.echo", "{}").await;
    assert!(matches!(err, CallError::Busy { .. }), "{err}");
    assert!(err.to_string().contains("memory_budget"), "{err}");
    for r in [a.await.unwrap(), b.await.unwrap()] {
        assert!(matches!(r.outcome, Err(CallError::Timeout { .. })));
    }
    // Once they end, the budget is free again.
    assert_serving(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_control_answers_busy_past_the_call_limit() {
    let mut sleeper = manifest("sleep", plugins::HOSTILE_SLEEP);
    sleeper.limits.deadline = std::time::Duration::from_secs(1);
    let (mut config, _data) = util::config(vec![sleeper, manifest("echo", plugins::TOOL_ECHO)]);
    config.runtime.max_concurrent_calls = 1;
    let h = std::sync::Arc::new(glovebox::Host::load(config).await.unwrap());
    let running = tokio::spawn({
        let h = h.clone();
        async move { util::call(&h, "sleep.sleep", "{}").await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let err = call_err(&h, "echo.echo", "{}").await;
    assert!(matches!(err, CallError::Busy { .. }), "{err}");
    assert!(err.to_string().contains("max_concurrent_calls"), "{err}");
    running.await.unwrap();
    assert_serving(&h).await;
}
