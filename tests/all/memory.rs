//! docs/threats.md "Memory and size".

use std::sync::Arc;
use std::time::Duration;

use glovebox::manifest::HookConfig;
use glovebox::{CallContext, CallError, CallReport, Host};

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
    // 2 GiB through the capture pipes takes ~45 s alone in the test profile and more
    // beside other builds: the deadline is not under test.
    m.limits.deadline = std::time::Duration::from_secs(180);
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
    // Refuse at once, as before the queue (threat 44 tests the waiting).
    config.runtime.admission_wait = Duration::ZERO;
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
    config.runtime.admission_wait = Duration::ZERO;
    let h = std::sync::Arc::new(glovebox::Host::load(config).await.unwrap());
    let running = tokio::spawn({
        let h = h.clone();
        async move { util::call(&h, "sleep.sleep", "{}").await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let err = call_err(&h, "echo.echo", "{}").await;
    assert!(matches!(err, CallError::Busy { .. }), "{err}");
    assert!(err.to_string().contains("max_concurrent_calls"), "{err}");
    assert!(
        err.to_string().contains("`runtime.admission_wait` is 0s"),
        "{err}"
    );
    running.await.unwrap();
    assert_serving(&h).await;
}

/// A call of `tool` by `principal` in session `session` (outside the ledger:
/// the principal is the actor its entry point names).
async fn call_as(h: &Host, principal: &str, session: &str, tool: &str, input: &str) -> CallReport {
    let mut ctx = CallContext::standalone();
    ctx.session_id = session.to_string();
    glovebox::tasks::acting(principal, h.call(tool, input, ctx)).await
}

/// Waits until `n` calls wait for admission.
async fn until_waiting(h: &Host, n: usize) {
    for _ in 0..500 {
        if h.admission_waiting().0 == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "{n} calls never waited for admission (waiting: {})",
        h.admission_waiting().0
    );
}

// Threat 44: one tenant's slow calls do not make everyone else's calls
// busy. Two slots; mallory keeps four slow calls going (each holds its slot
// to its 1 s deadline, then is sent again), and alice's calls, sent all the
// while, wait their turn in the queue and all succeed: never `busy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_44_a_tenants_slow_calls_do_not_make_other_tenants_busy() {
    let mut sleeper = manifest("sleep", plugins::HOSTILE_SLEEP);
    sleeper.limits.deadline = Duration::from_secs(1);
    let (mut config, _data) = util::config(vec![sleeper, manifest("echo", plugins::TOOL_ECHO)]);
    config.runtime.max_concurrent_calls = 2;
    config.runtime.admission_wait = Duration::from_secs(30);
    // The fair queue between principals is what this checks: slow calls may
    // take every slot (by default they keep half for quicker calls, which
    // would let alice's calls past mallory's without a queue).
    config.runtime.slow_share = 1.0;
    let h = Arc::new(Host::load(config).await.unwrap());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let slow: Vec<_> = (0..4)
        .map(|i| {
            let (h, stop) = (h.clone(), stop.clone());
            tokio::spawn(async move {
                let session = format!("mallory-{i}");
                let mut outcomes = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let report = call_as(&h, "mallory", &session, "sleep.sleep", "{}").await;
                    outcomes.push(report.outcome.map(|_| ()));
                }
                outcomes
            })
        })
        .collect();
    // Mallory fills both slots and queues more before alice comes.
    until_waiting(&h, 2).await;
    let fast = (0..6).map(|i| {
        let h = h.clone();
        async move {
            let mut outcomes = Vec::new();
            for _ in 0..2 {
                let session = format!("alice-{i}");
                let report =
                    call_as(&h, "alice", &session, "echo.echo", r#"{"message":"hi"}"#).await;
                outcomes.push(report.outcome);
            }
            outcomes
        }
    });
    let fast = futures::future::join_all(fast).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for outcome in fast.into_iter().flatten() {
        let out = outcome.expect("alice's call waits its turn and runs: never busy");
        assert_eq!(out["message"], "hi");
    }
    // Mallory's calls ran to their deadline (or, past its own deadline in
    // the queue, were busy): the load was real.
    let mut timeouts = 0;
    for task in slow {
        for outcome in task.await.unwrap() {
            match outcome {
                Err(CallError::Timeout { .. }) => timeouts += 1,
                Err(CallError::Busy { reason }) => {
                    assert!(reason.contains("runtime.admission_wait"), "{reason}")
                }
                other => panic!("a slow call ended otherwise: {other:?}"),
            }
        }
    }
    assert!(timeouts >= 2, "mallory's slow calls held the slots");
    assert_eq!(h.admission_waiting(), (0, 0));
    assert_eq!(h.calls_in_flight(), 0, "every slot came back");
    assert_serving(&h).await;
}

// Threat 44, in time: slow calls keep a share of the slots for quicker
// ones. Two slots; mallory's four calls of a tool that sleeps for a minute
// (a tool not called yet counts as slow) hold one slot and queue for it,
// and alice's echo calls (echo is known to be quick) take the other at once
// instead of waiting out a sleeper (their wait, 10 s, would end busy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_44_slow_calls_leave_quicker_calls_a_share_of_the_slots() {
    let mut sleeper = manifest("sleep", plugins::HOSTILE_SLEEP);
    sleeper.limits.deadline = Duration::from_secs(120);
    let (mut config, _data) = util::config(vec![sleeper, manifest("echo", plugins::TOOL_ECHO)]);
    config.runtime.max_concurrent_calls = 2;
    config.runtime.admission_wait = Duration::from_secs(10);
    let h = Arc::new(Host::load(config).await.unwrap());
    let warm = call_as(&h, "alice", "alice-0", "echo.echo", r#"{"message":"hi"}"#).await;
    warm.outcome.expect("echo runs");
    let slow: Vec<_> = (0..4)
        .map(|i| {
            let h = h.clone();
            tokio::spawn(async move {
                let session = format!("mallory-{i}");
                call_as(&h, "mallory", &session, "sleep.sleep", r#"{"seconds":60}"#).await
            })
        })
        .collect();
    // One sleeper runs; the others wait for its slot, not for alice's.
    until_waiting(&h, 3).await;
    assert_eq!(h.calls_in_flight(), 1);
    for i in 0..4 {
        let report = call_as(
            &h,
            "alice",
            "alice-1",
            "echo.echo",
            &format!(r#"{{"message":"{i}"}}"#),
        )
        .await;
        let out = report
            .outcome
            .expect("alice's call gets the slot kept for quicker calls");
        assert_eq!(out["message"], i.to_string());
    }
    assert_eq!(h.admission_waiting().0, 3, "mallory's calls still wait");
    for task in &slow {
        task.abort();
    }
    for task in slow {
        let _ = task.await;
    }
    assert_serving(&h).await;
}

// Threat 44: the queue is bounded. Past `runtime.admission_queue` waiters a
// call is busy at once, and past `runtime.admission_wait` a waiter is busy;
// each answer names its key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_44_past_the_queue_or_the_wait_a_call_is_busy_naming_the_key() {
    let mut sleeper = manifest("sleep", plugins::HOSTILE_SLEEP);
    sleeper.limits.deadline = Duration::from_secs(5);
    let (mut config, _data) = util::config(vec![sleeper, manifest("echo", plugins::TOOL_ECHO)]);
    config.runtime.max_concurrent_calls = 1;
    config.runtime.admission_queue = 1;
    config.runtime.admission_wait = Duration::from_millis(1500);
    let h = Arc::new(Host::load(config).await.unwrap());
    let running = tokio::spawn({
        let h = h.clone();
        async move { call_as(&h, "mallory", "m", "sleep.sleep", "{}").await }
    });
    while h.calls_in_flight() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let waiting = tokio::spawn({
        let h = h.clone();
        async move { call_as(&h, "alice", "a", "echo.echo", "{}").await }
    });
    until_waiting(&h, 1).await;
    // The queue's one place is taken: busy at once.
    let report = call_as(&h, "bob", "b", "echo.echo", "{}").await;
    let err = report.outcome.expect_err("the queue is full");
    assert!(matches!(err, CallError::Busy { .. }), "{err}");
    assert!(
        err.to_string().contains("`runtime.admission_queue`"),
        "{err}"
    );
    assert!(err.to_string().contains("max_concurrent_calls"), "{err}");
    // The waiter gives up at its wait, while the sleeper still runs.
    let err = waiting.await.unwrap().outcome.expect_err("no slot in time");
    assert!(matches!(err, CallError::Busy { .. }), "{err}");
    assert!(
        err.to_string().contains("`runtime.admission_wait`"),
        "{err}"
    );
    assert!(err.to_string().contains("waited 1.5s"), "{err}");
    let ended = running.await.unwrap();
    assert!(matches!(ended.outcome, Err(CallError::Timeout { .. })));
    assert_eq!(h.admission_waiting(), (0, 0));
    assert_serving(&h).await;
}

fn cost_hook(deadline: Duration, component: &str) -> HookConfig {
    HookConfig {
        name: "cost".into(),
        component: component.into(),
        sha256: None,
        settings: serde_json::json!({}),
        deadline,
        memory: 16 * MIB,
        fuel: None,
        after: false,
        reuse: 1,
        signers: None,
    }
}

// Threat 44, hooks: a burst of calls far past the call slots, each judged by
// a permission hook, queues for the hooks and for the slots instead of being
// refused or denied: every call runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_44_a_burst_of_judged_calls_waits_and_runs() {
    let (mut config, _data) = util::config(vec![manifest("echo", plugins::TOOL_ECHO)]);
    config.runtime.max_concurrent_calls = 2;
    config.hooks = vec![cost_hook(
        Duration::from_secs(5),
        plugins::HOOK_COST_CONTROL,
    )];
    // Its `after` too: those runs go through admission like the judging.
    config.hooks[0].after = true;
    let h = Arc::new(Host::load(config).await.unwrap());
    let calls = (0..64).map(|i| {
        let h = h.clone();
        async move {
            let principal = format!("p{}", i % 4);
            call_as(
                &h,
                &principal,
                &format!("s{i}"),
                "echo.echo",
                r#"{"message":"x"}"#,
            )
            .await
        }
    });
    for report in futures::future::join_all(calls).await {
        report.outcome.expect("every judged call of the burst runs");
    }
    assert_eq!(h.admission_waiting(), (0, 0));
    assert_eq!(h.calls_in_flight(), 0);
}

// Threat 44, hooks: a hook run that finds every hook slot taken past its
// wait fails closed, and the denial says admission was full (not that the
// hook misbehaved). Eight looping hook runs hold the eight hook slots (each
// on its own worker thread) to their deadline; a ninth call is denied.
#[tokio::test(flavor = "multi_thread", worker_threads = 10)]
async fn threat_44_a_hook_that_finds_no_slot_in_time_fails_closed_saying_why() {
    let (mut config, _data) = util::config(vec![manifest("echo", plugins::TOOL_ECHO)]);
    config.runtime.admission_wait = Duration::ZERO; // hook runs still wait 1 s
    config.hooks = vec![cost_hook(
        Duration::from_secs(3),
        plugins::HOSTILE_HOOK_LOOP,
    )];
    let h = Arc::new(Host::load(config).await.unwrap());
    let calls: Vec<_> = (0..9)
        .map(|i| {
            let h = h.clone();
            tokio::spawn(async move { call_as(&h, "p", &format!("s{i}"), "echo.echo", "{}").await })
        })
        .collect();
    let mut full = 0;
    let mut timed_out = 0;
    for call in calls {
        let err = call
            .await
            .unwrap()
            .outcome
            .expect_err("the looping hook denies");
        assert!(matches!(err, CallError::Denied { .. }), "{err}");
        let text = err.to_string();
        if text.contains("admission was full") {
            assert!(text.contains("`runtime.admission_wait`"), "{text}");
            full += 1;
        } else {
            assert!(text.contains("timed out"), "{text}");
            timed_out += 1;
        }
    }
    assert_eq!(
        (timed_out, full),
        (8, 1),
        "eight hook slots, one call left out"
    );
    assert_eq!(h.admission_waiting(), (0, 0));
}

/// Runs `glovebox ARGS` with `site`'s config under a Python parent that reports
/// the child's peak RSS in KiB (the test binary's own RSS is shared by every test).
fn peak_rss_kib(site: &util::Site, args: &[&str]) -> (i32, String, u64) {
    let script = "import resource, subprocess, sys\n\
        p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n\
        sys.stdout.write(p.stdout)\n\
        sys.stderr.write(p.stderr)\n\
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
        sys.exit(p.returncode)\n";
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_glovebox"))
        .arg("--config")
        .arg(site.config())
        .args(args)
        .env_remove("GLOVEBOX_CONFIG")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, rss) = stdout.trim_end().rsplit_once('\n').unwrap_or(("", &stdout));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    (
        out.status.code().unwrap_or(-1),
        format!("{body}\n{err}"),
        rss.trim()
            .parse()
            .unwrap_or_else(|_| panic!("no RSS in {stdout:?}")),
    )
}

// Threat 40: what a call can make the host hold on its side (resource-table
// entries, open descriptors, random bytes, header maps) is bounded per call. Each
// hostile loop ends in a typed `host_limit` error naming the bound, the real
// binary's peak RSS stays within 48 MiB of an echo call's, and the host serves the
// next call.
#[test]
fn threat_40_host_side_structures_a_call_grows_are_bounded() {
    let site = util::Site::with_plugins(&[
        (
            "res.toml",
            format!(
                "name = \"res\"\ncomponent = \"{}\"\n[limits]\ndeadline = \"20s\"\nmemory = \"256 MiB\"\n[[fs]]\nhost = \"files\"\nguest = \"/files\"\n",
                plugins::HOSTILE_RESOURCES
            ),
        ),
        (
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        ),
    ]);
    std::fs::create_dir(site.path().join("files")).unwrap();
    std::fs::write(site.path().join("files").join("f"), "x").unwrap();
    let call =
        |tool: &str, input: &str| peak_rss_kib(&site, &["call", tool, "--json", "--input", input]);
    // The baseline: the same binary and config, one echo call.
    let (code, out, base) = call("echo.echo", r#"{"message":"hi"}"#);
    assert_eq!(code, 0, "{out}");

    for (tool, input, bound) in [
        ("res.pollables", "{}", "1024 resource-table entries"),
        (
            "res.descriptors",
            r#"{"path":"/files/f"}"#,
            "256 open files and directories",
        ),
        (
            "res.random",
            r#"{"len":1073741824}"#,
            "1048576 random bytes in one request",
        ),
        (
            "res.random",
            r#"{"len":1048576,"count":1000}"#,
            "16777216 random bytes in all",
        ),
        (
            "res.headers",
            r#"{"size":8192}"#,
            "1024 resource-table entries",
        ),
        (
            "res.headers",
            r#"{"size":61440,"count":1}"#,
            "16384 bytes of names and values in one header map",
        ),
    ] {
        let (code, out, peak) = call(tool, input);
        assert_eq!(code, 6, "{tool} {input}: {out}");
        assert!(
            out.contains("host_limit") && out.contains(bound),
            "{tool} {input}: {out}"
        );
        // Without the bounds, `pollables` holds a million entries and `headers`
        // grows by 8 KiB a map until its deadline: hundreds of MiB.
        assert!(
            peak < base + 48 * 1024,
            "{tool} {input}: peak RSS {peak} KiB against {base} KiB for an echo call"
        );
    }
    let (code, out, _) = call("echo.echo", r#"{"message":"still here"}"#);
    assert_eq!(code, 0, "{out}");
}
