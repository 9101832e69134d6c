//! `code-python`: Python an agent wrote, run by CPython inside the sandbox (issue 6), and
//! `stats`, a tool plugin written in Python. Both are built with componentize-py
//! (`tests/build_python.rs`).
//!
//! Generated code is hostile by default: each hostile case must end in a clear error
//! (the result's `error` field, or a typed `CallError`) and the host must serve the
//! next call at once.

use std::path::Path;
use std::time::Duration;

use glovebox::manifest::{Access, HttpScheme};
use glovebox::{CallError, PluginManifest};
use serde_json::{Value, json};

use crate::util::TestServer;
use crate::util::{
    self, assert_serving, call_err, call_ok, error_of, fs_grant, http_grant, manifest, plugins,
};

const MIB: u64 = 1024 * 1024;

/// The runner as the example manifest sets it up, with a short deadline for the tests.
fn runner() -> PluginManifest {
    let mut m = manifest("code-python", plugins::CODE_PYTHON);
    m.limits.memory = 256 * MIB;
    m.limits.deadline = Duration::from_secs(2);
    m.limits.output = 2 * MIB;
    m
}

/// The runner with `dir` granted read-write at `/scratch`, as a session's scratch dir is.
fn runner_with_scratch(dir: &Path) -> PluginManifest {
    let mut m = runner();
    m.fs.push(fs_grant(dir, "/scratch", Access::ReadWrite));
    m
}

/// Serializes host loads in this module: the first one compiles the 20 MB interpreter
/// into the shared compile cache, and the other tests then load it from there instead
/// of compiling it again at the same time (2 cores in CI).
static LOADING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn host_with(plugins: Vec<PluginManifest>) -> util::TestHost {
    let mut all = plugins;
    all.push(manifest("echo", plugins::TOOL_ECHO));
    let _loading = LOADING.lock().await;
    util::host(all).await
}

/// Runs `code` (with the extra input fields of `more`) and returns the result object.
async fn run(h: &util::TestHost, code: &str, more: Value) -> Value {
    util::run_code(h, "code-python.run", code, more).await
}

/// The runner still works: a trivial call right after a hostile one.
async fn assert_runner_serves(h: &util::TestHost) {
    let out = run(h, "print(sum(range(10)))", json!({})).await;
    assert_eq!(out["stdout"], "45\n", "{out}");
    assert_serving(h).await;
}

#[tokio::test]
async fn runs_code_and_reports_output_value_and_errors() {
    let h = host_with(vec![runner()]).await;

    // The benchmark's call: stdout, no value.
    let out = run(&h, "print(sum(range(10)))", json!({})).await;
    assert_eq!(out, json!({ "stdout": "45\n", "stderr": "" }));

    // The last expression's value, as JSON when it can be; both streams.
    let code = "import sys\nprint('n =', 3)\nprint('careful', file=sys.stderr)\n{'sum': 1 + 2, 'list': [1, 2.5, None]}";
    let out = run(&h, code, json!({})).await;
    assert_eq!(out["stdout"], "n = 3\n");
    assert_eq!(out["stderr"], "careful\n");
    assert_eq!(out["value"], json!({ "sum": 3, "list": [1, 2.5, null] }));
    assert!(out.get("error").is_none(), "{out}");
    // Else its repr(); None and statements give no value.
    let out = run(
        &h,
        "class P:\n    def __repr__(self): return 'P()'\nP()",
        json!({}),
    )
    .await;
    assert_eq!(out["value"], "P()");
    assert_eq!(run(&h, "float('nan')", json!({})).await["value"], "nan");
    for code in ["None", "x = 1", "print('only')", ""] {
        let out = run(&h, code, json!({})).await;
        assert!(out.get("value").is_none(), "{code}: {out}");
    }

    // stdin and args.
    let code = "import sys\nname = input()\nrest = sys.stdin.read()\nprint(sys.argv)\n[name, rest]";
    let out = run(
        &h,
        code,
        json!({"stdin": "ada\nmore\n", "args": ["-v", "x y"]}),
    )
    .await;
    assert_eq!(out["stdout"], "['<code>', '-v', 'x y']\n");
    assert_eq!(out["value"], json!(["ada", "more\n"]));

    // An exception: the traceback shows the user's frames and lines, not the runner's;
    // what was printed before it is kept.
    let code = "print('before')\ndef ratio(a, b):\n    return a / b\nratio(1, 0)";
    let out = run(&h, code, json!({})).await;
    assert_eq!(out["stdout"], "before\n");
    let error = error_of(&out);
    assert!(
        error.starts_with("Traceback (most recent call last):\n  File \"<code>\", line 4"),
        "{error}"
    );
    assert!(
        error.contains("line 3, in ratio\n    return a / b"),
        "{error}"
    );
    assert!(
        error.ends_with("ZeroDivisionError: division by zero\n"),
        "{error}"
    );
    assert!(
        !error.contains("app.py"),
        "the runner's frames show: {error}"
    );
    // A syntax error names the line.
    let out = run(&h, "x = 1\ny = (", json!({})).await;
    let error = error_of(&out);
    assert!(error.contains("File \"<code>\", line 2"), "{error}");
    assert!(error.contains("SyntaxError"), "{error}");
    // sys.exit: a status other than 0 is an error.
    let out = run(&h, "print('bye')\nraise SystemExit(3)", json!({})).await;
    assert_eq!(out["stdout"], "bye\n");
    assert_eq!(out["error"], "exit status 3");
    let out = run(&h, "import sys\nsys.exit(0)", json!({})).await;
    assert!(out.get("error").is_none(), "{out}");
    let out = run(&h, "import sys\nsys.exit('no input file')", json!({})).await;
    assert_eq!(out["error"], "exit status 1");
    assert_eq!(out["stderr"], "no input file\n");

    // The standard library modules generated code reaches for are there.
    let code = "import sqlite3, datetime, json, re, statistics, collections, pathlib, decimal\n\
                db = sqlite3.connect(':memory:')\n\
                db.execute('create table t (x)')\n\
                db.executemany('insert into t values (?)', [(1,), (2,), (4,)])\n\
                [db.execute('select sum(x) from t').fetchone()[0],\n \
                 datetime.datetime.strptime('2024-02-29', '%Y-%m-%d').strftime('%a'),\n \
                 statistics.median([3, 1, 2]), re.findall(r'\\d+', 'a1b22'),\n \
                 collections.Counter('abca').most_common(1)[0][0], str(decimal.Decimal('0.1') * 3)]";
    let out = run(&h, code, json!({})).await;
    assert_eq!(
        out["value"],
        json!([7, "Thu", 2, ["1", "22"], "a", "0.3"]),
        "{out}"
    );

    // Every call is a fresh interpreter with fresh globals, and `random` is seeded per
    // call (the snapshot has one state for every call).
    run(
        &h,
        "leftover = 1\nimport math\nmath.leftover = 2",
        json!({}),
    )
    .await;
    let out = run(
        &h,
        "import math\n[__name__, 'leftover' in globals(), hasattr(math, 'leftover')]",
        json!({}),
    )
    .await;
    assert_eq!(out["value"], json!(["__main__", false, false]));
    let draw = "import random\nrandom.random()";
    let a = run(&h, draw, json!({})).await["value"].clone();
    let b = run(&h, draw, json!({})).await["value"].clone();
    assert!(a.is_f64() && a != b, "{a} {b}");
    let draw = "from random import randrange\nrandrange(10**12)";
    let a = run(&h, draw, json!({})).await["value"].clone();
    let b = run(&h, draw, json!({})).await["value"].clone();
    assert!(a.is_u64() && a != b, "{a} {b}");
    let seeded = "import random\nrandom.seed(7)\nrandom.random()";
    let a = run(&h, seeded, json!({})).await["value"].clone();
    let b = run(&h, seeded, json!({})).await["value"].clone();
    assert!(a.is_f64() && a == b, "{a} {b}");

    // Input that is not what the schema says is refused before the code runs.
    for input in [
        json!({}),
        json!({"code": 1}),
        json!({"code": "1", "stdin": 2}),
        json!({"code": "1", "args": "x"}),
        json!({"code": "1", "args": [1]}),
        json!({"code": "1", "extra": true}),
    ] {
        let err = call_err(&h, "code-python.run", &input.to_string()).await;
        assert!(
            matches!(err, CallError::InvalidInput { .. }),
            "{input}: {err}"
        );
    }
    assert_serving(&h).await;
}

#[tokio::test]
async fn the_scratch_dir_is_the_working_dir_and_the_only_place_to_write() {
    let scratch = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let h = host_with(vec![runner_with_scratch(scratch.path())]).await;

    // Relative paths land in the scratch dir, and the files outlive the call.
    let out = run(
        &h,
        "import os\nopen('notes.txt', 'w').write('kept')\nos.getcwd()",
        json!({}),
    )
    .await;
    assert_eq!(out["value"], "/scratch", "{out}");
    assert_eq!(
        std::fs::read_to_string(scratch.path().join("notes.txt")).unwrap(),
        "kept"
    );
    let out = run(&h, "open('notes.txt').read()", json!({})).await;
    assert_eq!(out["value"], "kept");

    // Writing anywhere else fails with a clear error and leaves nothing behind.
    let host_path = outside.path().join("planted.txt");
    for path in [
        "/tmp/x",
        "../x",
        "/scratch/../x",
        "/x",
        host_path.to_str().unwrap(),
    ] {
        let code = format!("open({path:?}, 'w').write('x')");
        let out = run(&h, &code, json!({})).await;
        let error = error_of(&out);
        assert!(
            error.contains("FileNotFoundError") || error.contains("PermissionError"),
            "{path}: {error}"
        );
    }
    assert!(!host_path.exists());
    let mut names: Vec<_> = std::fs::read_dir(scratch.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["notes.txt"]);
    assert_runner_serves(&h).await;
}

/// Generated code that writes without end stops at `limits.write`: its
/// writes fail as a full disk (OSError in Python), the call ends in a
/// `quota` error, and no more than the budget reached the disk.
#[tokio::test]
async fn threat_42_python_writing_past_its_write_quota_gets_a_quota_error() {
    let scratch = tempfile::tempdir().unwrap();
    let mut m = runner_with_scratch(scratch.path());
    m.limits.write = MIB;
    let h = host_with(vec![m]).await;
    let code = "f = open('big.bin', 'wb')\nfor _ in range(64):\n    f.write(b'x' * 131072)\n    f.flush()\nf.close()";
    let input = json!({ "code": code }).to_string();
    let err = call_err(&h, "code-python.run", &input).await;
    assert!(matches!(err, CallError::Quota { .. }), "{err}");
    assert!(err.to_string().contains("`limits.write`"), "{err}");
    let on_disk = std::fs::metadata(scratch.path().join("big.bin"))
        .unwrap()
        .len();
    assert!(on_disk <= MIB, "{on_disk} bytes on disk");
    assert_runner_serves(&h).await;
}

#[tokio::test]
async fn hostile_code_ends_in_a_clear_error_and_the_host_serves_on() {
    let scratch = tempfile::tempdir().unwrap();
    let h = host_with(vec![runner_with_scratch(scratch.path())]).await;

    // Infinite loops, busy or printing: the host's deadline stops them.
    for code in ["while True: pass", "while True: print('spam')"] {
        let err = call_err(&h, "code-python.run", &json!({ "code": code }).to_string()).await;
        assert!(matches!(err, CallError::Timeout { .. }), "{code}: {err}");
        assert_runner_serves(&h).await;
    }

    // A memory bomb: the manifest's memory cap stops it (or Python's MemoryError does).
    let code = "keep = []\nwhile True: keep.append(bytearray(1 << 20))";
    let report = util::call(&h, "code-python.run", &json!({ "code": code }).to_string()).await;
    match &report.outcome {
        Err(err) => assert!(
            matches!(err, CallError::MemoryLimit { limit, .. } if *limit == 256 * MIB),
            "{err}"
        ),
        Ok(out) => assert!(error_of(out).contains("MemoryError"), "{out}"),
    }
    assert!(report.metering.peak_memory_bytes <= 256 * MIB);
    assert_runner_serves(&h).await;

    // Deep recursion: a RecursionError with the user's frame, not a crash.
    let out = run(
        &h,
        "def down(n):\n    return down(n + 1)\ndown(0)",
        json!({}),
    )
    .await;
    let error = error_of(&out);
    assert!(error.contains("line 2, in down"), "{error}");
    assert!(
        error.ends_with("RecursionError: maximum recursion depth exceeded\n"),
        "{error}"
    );
    // With the limit lifted, recursion ends in a typed limit, never a host
    // crash (the deadline, too, when a loaded machine is slow to reach the
    // stack's end: seen in a full parallel run on two cores).
    let code =
        "import sys\nsys.setrecursionlimit(10**8)\ndef down(n):\n    return down(n + 1)\ndown(0)";
    let report = util::call(&h, "code-python.run", &json!({ "code": code }).to_string()).await;
    match &report.outcome {
        Err(err) => assert!(
            matches!(
                err,
                CallError::MemoryLimit { .. }
                    | CallError::StackOverflow { .. }
                    | CallError::Trap { .. }
                    | CallError::Timeout { .. }
            ),
            "{err}"
        ),
        Ok(out) => assert!(error_of(out).contains("Error"), "{out}"),
    }
    assert_runner_serves(&h).await;

    // Printing gigabytes: 256 KiB kept, the rest dropped and counted, memory bounded.
    let code = "line = 'x' * (1 << 20)\nfor _ in range(4096):\n    print(line)\n'done'";
    let report = util::call(&h, "code-python.run", &json!({ "code": code }).to_string()).await;
    let out = report.outcome.expect("printing is not an error");
    assert_eq!(out["value"], "done");
    assert_eq!(out["stdout_truncated"], true);
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("xxxx"));
    assert!(
        stdout.len() < 256 * 1024 + 256,
        "{} bytes kept",
        stdout.len()
    );
    assert!(stdout.contains("\n[stdout truncated: "), "no marker");
    assert!(
        report.metering.peak_memory_bytes < 64 * MIB,
        "peak {}",
        report.metering.peak_memory_bytes
    );
    // Past the runner, straight to the process's stdout: the host's stdio cap holds.
    // (32 MiB, 512 times the cap: enough to show it, and quick on a loaded machine
    // within the 2 s deadline.)
    let code = "import os\nchunk = b'y' * (1 << 20)\nfor _ in range(32):\n    os.write(1, chunk)";
    let report = util::call(&h, "code-python.run", &json!({ "code": code }).to_string()).await;
    report.outcome.as_ref().expect("writing is not an error");
    assert!(report.stdout.truncated);
    assert_eq!(report.stdout.total_bytes, 32 * MIB);
    assert_runner_serves(&h).await;

    // Host files, the home dir, the root: none of them is there.
    for code in [
        "open('/etc/passwd').read()",
        "import os\nos.listdir(os.path.expanduser('~'))",
        "import os\nos.listdir('/root')",
        "import os\nos.listdir('/')",
        "open('../../../../etc/passwd').read()",
    ] {
        let out = run(&h, code, json!({})).await;
        let error = error_of(&out);
        assert!(error.contains("Error"), "{code}: {error}");
        assert!(!out.to_string().contains("root:"), "{code} leaked: {out}");
    }
    // No environment (the host's is not inherited), no processes, no FFI, no sockets.
    let out = run(&h, "import os\ndict(os.environ)", json!({})).await;
    assert_eq!(out["value"], json!({}));
    for (code, expected) in [
        ("import os\nos.system('id')", "AttributeError"),
        ("import os\nos.fork()", "AttributeError"),
        (
            "import subprocess\nsubprocess.run(['id'])",
            "ModuleNotFoundError: No module named 'subprocess'",
        ),
        (
            "import ctypes",
            "ModuleNotFoundError: No module named 'ctypes'",
        ),
        (
            "import socket\nsocket.create_connection(('example.com', 80))",
            "ModuleNotFoundError: No module named 'socket'",
        ),
        (
            "import urllib.request\nurllib.request.urlopen('http://example.com')",
            "ModuleNotFoundError",
        ),
    ] {
        let out = run(&h, code, json!({})).await;
        let error = error_of(&out);
        assert!(error.contains(expected), "{code}: {error}");
    }
    // Nothing of it landed in the scratch dir.
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
    assert_runner_serves(&h).await;
}

#[tokio::test]
async fn fetch_reaches_granted_hosts_only() {
    let granted = TestServer::start().await;
    let other = TestServer::start().await;
    let mut m = runner();
    m.http
        .push(http_grant(HttpScheme::Http, "127.0.0.1", granted.port));
    let h = host_with(vec![m]).await;
    let base = format!("http://127.0.0.1:{}", granted.port);

    // `fetch` is a global: status, headers, body as text and bytes.
    let code = format!(
        "r = fetch('{base}/hello')\n\
         [r.status, r.ok, r.text(), r.headers['content-length'], \
          r.content == b'hello from the test server', type(r.headers).__name__]"
    );
    let out = run(&h, &code, json!({})).await;
    assert_eq!(
        out["value"],
        json!([200, true, "hello from the test server", "26", true, "dict"]),
        "{out}"
    );
    assert_eq!(granted.accepted(), 1);
    // And importable; any status is a response; a redirect within the grant is followed.
    let code = format!(
        "from glovebox import fetch as get\n\
         r = get('{base}/redirect?to={base}/hello', headers={{'accept': 'text/plain'}})\n\
         [get('{base}/missing', method='POST', body={{'a': 1}}).status, r.status, r.url, r.text()]"
    );
    let out = run(&h, &code, json!({})).await;
    assert_eq!(
        out["value"],
        json!([
            404,
            200,
            format!("{base}/hello"),
            "hello from the test server"
        ]),
        "{out}"
    );
    assert_eq!(granted.accepted(), 4);

    // A host that was not granted: a PermissionError that says so, nothing sent.
    let url = format!("http://127.0.0.1:{}/hello", other.port);
    let code = format!("print('before')\nfetch('{url}')");
    let report = util::call(&h, "code-python.run", &json!({ "code": code }).to_string()).await;
    let out = report.outcome.expect("an error result, not a failed call");
    assert_eq!(out["stdout"], "before\n");
    let error = error_of(&out);
    let expected = format!(
        "PermissionError: fetch('{url}'): the host refused the request: http://127.0.0.1:{} \
         was not granted to this tool (the operator grants hosts in the plugin's manifest, \
         [[http]])\n",
        other.port
    );
    assert!(error.ends_with(&expected), "{error}");
    assert!(error.contains("File \"<code>\", line 2"), "{error}");
    assert!(
        !error.contains("glovebox.py"),
        "the runner's frames show: {error}"
    );
    assert_eq!(report.http_denials.len(), 1, "{:?}", report.http_denials);
    assert_eq!(
        other.accepted(),
        0,
        "the refused request reached the network"
    );
    // A redirect from the granted host to another one is checked again.
    let code = format!("fetch('{base}/redirect?to={url}')");
    let out = run(&h, &code, json!({})).await;
    assert!(error_of(&out).contains("was not granted"), "{out}");
    assert_eq!(other.accepted(), 0);
    // Caught, it is an ordinary exception; a bad URL is a ValueError.
    let code = "try:\n    fetch('https://example.com/')\nexcept PermissionError as e:\n    caught = str(e)\ncaught";
    let out = run(&h, code, json!({})).await;
    assert_eq!(
        out["value"],
        "fetch('https://example.com/'): the host refused the request: https://example.com was \
         not granted to this tool (the operator grants hosts in the plugin's manifest, [[http]])",
        "{out}"
    );
    for (code, expected) in [
        (
            "fetch('file:///etc/passwd')",
            "ValueError: fetch('file:///etc/passwd'): scheme `file` is not supported",
        ),
        (
            "fetch('example.com/x')",
            "ValueError: fetch('example.com/x'): not an absolute URL",
        ),
        (
            "fetch('http://user:pw@example.com/')",
            "ValueError: fetch('http://user:pw@example.com/'): user info",
        ),
    ] {
        let out = run(&h, code, json!({})).await;
        assert!(error_of(&out).contains(expected), "{code}: {out}");
    }
    assert_eq!(granted.accepted(), 5);
    assert_runner_serves(&h).await;

    // Without any `[[http]]` grant, every host is refused, the test server's too.
    let h = host_with(vec![runner()]).await;
    let report = util::call(
        &h,
        "code-python.run",
        &json!({ "code": format!("fetch('{base}/hello')") }).to_string(),
    )
    .await;
    let out = report.outcome.expect("an error result, not a failed call");
    let error = error_of(&out);
    assert!(
        error.contains(&format!(
            "PermissionError: fetch('{base}/hello'): the host refused the request: {base} was \
             not granted to this tool"
        )),
        "{error}"
    );
    assert_eq!(report.http_denials.len(), 1, "{:?}", report.http_denials);
    assert_eq!(
        granted.accepted(),
        5,
        "the refused request reached the network"
    );
    assert_runner_serves(&h).await;
}

#[tokio::test]
async fn a_tool_written_in_python() {
    let h = host_with(vec![manifest("stats", plugins::TOOL_PY_STATS)]).await;
    let mut tools: Vec<(&str, &str)> = h
        .tools()
        .into_iter()
        .filter(|t| t.plugin == "stats")
        .map(|t| (t.tool.as_str(), t.action.as_str()))
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            ("correlate", "compute:stats:correlate"),
            ("describe", "compute:stats:describe"),
        ]
    );

    let out = call_ok(&h, "stats.describe", r#"{"data":[1,2,3,4,5,6,7,8,9,10.5]}"#).await;
    assert_eq!(out["count"], 10);
    assert_eq!(out["sum"], 55.5);
    assert_eq!(out["mean"], 5.55);
    assert_eq!(out["median"], 5.5);
    assert_eq!(out["min"], 1);
    assert_eq!(out["max"], 10.5);
    assert_eq!(out["quantiles"], json!([3.25, 5.5, 7.75]));
    assert!(
        (out["stdev"].as_f64().unwrap() - 3.113_144).abs() < 1e-6,
        "{out}"
    );
    let out = call_ok(&h, "stats.describe", r#"{"data":[1,2,3,4],"quantiles":2}"#).await;
    assert_eq!(out["quantiles"], json!([2.5]));
    // One number: what needs two is null.
    let out = call_ok(&h, "stats.describe", r#"{"data":[5]}"#).await;
    assert_eq!(out["stdev"], Value::Null);
    assert_eq!(out["quantiles"], Value::Null);
    assert_eq!(out["pstdev"], 0.0);

    let out = call_ok(&h, "stats.correlate", r#"{"x":[1,2,3,4],"y":[2,4,6,8.5]}"#).await;
    assert_eq!(out["count"], 4);
    assert_eq!(out["spearman"], 1.0);
    assert!(out["pearson"].as_f64().unwrap() > 0.99, "{out}");
    assert!(
        (out["slope"].as_f64().unwrap() - 2.15).abs() < 1e-9,
        "{out}"
    );

    // Invalid input is refused with a message that names the field: by the host against
    // the schema, or by the tool for what a schema cannot say.
    for (tool, input, field) in [
        ("stats.describe", json!({}), "data"),
        ("stats.describe", json!({"data": []}), "data"),
        ("stats.describe", json!({"data": [1, "2"]}), "data"),
        ("stats.describe", json!({"data": [1, true]}), "data"),
        (
            "stats.describe",
            json!({"data": [1], "quantiles": 1}),
            "quantiles",
        ),
        ("stats.describe", json!({"data": [1], "bins": 3}), "bins"),
        (
            "stats.correlate",
            json!({"x": [1, 2, 3], "y": [1, 2]}),
            "`x` and `y`",
        ),
        (
            "stats.correlate",
            json!({"x": [1, 2, 3], "y": [4, 4, 4]}),
            "`y` is constant",
        ),
    ] {
        let err = call_err(&h, tool, &input.to_string()).await;
        assert!(
            matches!(err, CallError::InvalidInput { .. }),
            "{input}: {err}"
        );
        assert!(err.to_string().contains(field), "{input}: {err}");
    }
    assert_serving(&h).await;
}

/// The runners with the session scratch grant, as `examples/` sets them up: a
/// notebook across runs and languages within one session, and nothing shared
/// between sessions.
#[tokio::test]
async fn sessions_keep_their_own_scratch_across_runs_and_languages() {
    let mut py = runner();
    py.scratch = Some("/scratch".into());
    let mut js = manifest("code-js", plugins::CODE_JS);
    js.limits.memory = 128 * MIB;
    js.limits.deadline = Duration::from_secs(5);
    js.scratch = Some("/scratch".into());
    let h = host_with(vec![py, js]).await;
    let in_session = |id: &str| {
        let mut ctx = glovebox::CallContext::standalone();
        ctx.session_id = id.to_string();
        ctx
    };
    let call = async |session: &str, tool: &str, code: &str| {
        let input = json!({ "code": code }).to_string();
        h.call(tool, &input, in_session(session))
            .await
            .into_result()
            .unwrap_or_else(|e| panic!("{tool} in {session}: {e}"))
    };

    let out = call(
        "s-first",
        "code-python.run",
        "open('notes.txt', 'w').write('from python')\nimport os\nsorted(os.listdir('.'))",
    )
    .await;
    assert_eq!(out["value"], json!(["notes.txt"]), "{out}");
    // The same session, the other language, a fresh instance: the file is there.
    let out = call(
        "s-first",
        "code-js.run",
        "fs.appendFile('notes.txt', ' and js'); fs.readFile('notes.txt')",
    )
    .await;
    assert_eq!(out["value"], "from python and js", "{out}");
    let out = call(
        "s-first",
        "code-python.run",
        "open('/scratch/notes.txt').read()",
    )
    .await;
    assert_eq!(out["value"], "from python and js", "{out}");

    // A second session sees an empty directory, by relative or absolute path.
    let out = call(
        "s-second",
        "code-python.run",
        "import os\nos.listdir('/scratch')",
    )
    .await;
    assert_eq!(out["value"], json!([]), "{out}");
    let out = call(
        "s-second",
        "code-python.run",
        "open('../s-first/notes.txt').read()",
    )
    .await;
    assert!(error_of(&out).contains("Error"), "{out}");
    let out = call(
        "s-second",
        "code-js.run",
        "fs.readFile('/scratch/notes.txt')",
    )
    .await;
    assert!(
        out["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{out}"
    );
    let root = h.data.path().join("scratch");
    assert_eq!(
        std::fs::read_to_string(root.join("s-first").join("notes.txt")).unwrap(),
        "from python and js"
    );
    assert!(!root.join("s-second").join("notes.txt").exists());
}
