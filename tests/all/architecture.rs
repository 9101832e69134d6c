//! The crates' layering: which glovebox crate may depend on what.
//!
//! The host is being cut into crates with one direction of dependency (the
//! bottom one, `glovebox-manifest`, is the operator's config; `glovebox-store`
//! is durable storage; `glovebox-runtime` is the engine and the sandbox, the
//! hands that run tools and hooks; `glovebox-ledger` is the durable record of
//! agent work, sessions and their logs; `glovebox` is the gateway on top, which
//! owns both and runs the call pipeline; `glovebox-mcp` adapts it to MCP; the
//! `glovebox` command, the root package, is a thin CLI over them). Cargo
//! refuses a cycle of normal dependencies, but not an edge that goes the wrong
//! way through a third-party crate or that pulls an engine into a crate meant
//! to be light: this test reads the resolved graph (`cargo metadata`) and fails
//! on such an edge, naming its path (`A -> B -> C`) and why it is forbidden.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// One crate's rule: the packages it must never reach through its normal
/// (non-dev, non-build) dependencies, directly or transitively, and why.
struct Rule {
    package: &'static str,
    forbidden: &'static [&'static str],
    /// Only its direct dependencies count: for an adapter, which does reach
    /// the engine, but only through the crate below it.
    direct: bool,
    why: &'static str,
}

/// The rules, one line per crate. A rule whose `package` is not (yet) a
/// workspace member is skipped without error, so a crate's rule can be written
/// before the crate is cut.
/// A forbidden package that is nowhere in the graph is simply never reached.
#[rustfmt::skip]
const RULES: &[Rule] = &[
    Rule { package: "glovebox-manifest", direct: false, forbidden: &["wasmtime", "sled", "rusqlite", "tokio", "glovebox-store", "glovebox-runtime", "glovebox"], why: "the config is the bottom crate: serde and toml only, readable without an engine, a storage engine or a runtime, and shared by every crate above without a cycle" },
    Rule { package: "glovebox-input", direct: false, forbidden: &["wasmtime", "tokio", "sled", "rusqlite", "glovebox-manifest", "glovebox-store", "glovebox-runtime", "glovebox-ledger", "glovebox"], why: "the tool-call JSON boundary (input size, syntax, nesting, schema) is pure: serde, serde_json and jsonschema only, so the exact checks the host runs on hostile input (and what an approval shows of it) are fuzzed without an engine (`fuzz/`)" },
    Rule { package: "glovebox-store", direct: false, forbidden: &["wasmtime", "tokio", "glovebox-manifest", "glovebox-runtime", "glovebox"], why: "storage is bytes under keys: it knows no components, no async runtime, no config and no host" },
    Rule { package: "glovebox-store-nats", direct: false, forbidden: &["wasmtime", "glovebox-manifest", "glovebox-runtime", "glovebox-ledger", "glovebox", "rmcp"], why: "the NATS backend is the storage trait over JetStream, with a tokio runtime of its own: bytes under keys like the embedded backends, so it knows no components, no config, no session log, no host and no protocol; the gateway opens it" },
    Rule { package: "glovebox-oci", direct: false, forbidden: &["wasmtime", "sled", "rusqlite", "glovebox-store", "glovebox-runtime", "glovebox-ledger", "glovebox", "rmcp"], why: "registry transfers are bytes checked against digests and pinned in a lock file: they run no component and touch no store, log or protocol, so a pull never needs an engine and the loader (manifest) stays offline" },
    Rule { package: "glovebox-runtime", direct: false, forbidden: &["sled", "rusqlite", "glovebox-store", "glovebox-ledger", "rmcp", "glovebox"], why: "the hands run a component and say how it ended: what a call did is recorded by the host above them, so they never touch a storage engine, the store, the session log (the hands never write the log) or MCP, and run (and are tested) without a data dir" },
    Rule { package: "glovebox-ledger", direct: false, forbidden: &["wasmtime", "tokio", "glovebox-runtime", "rmcp", "glovebox"], why: "the ledger is the durable record of agent work, kept synchronously through the storage trait: it records what the host hands it, so it never runs a component, needs no async runtime, never reaches the hands or MCP, and can be read, checked and tested without an engine" },
    Rule { package: "glovebox", direct: false, forbidden: &["rmcp", "glovebox-mcp", "clap", "glovebox-cli"], why: "the gateway is the embedding API: one pipeline for every way in, which knows no protocol (MCP, HTTP) and no command line, so an embedder gets it without a server and every adapter goes through the same path" },
    Rule { package: "glovebox-listener", direct: false, forbidden: &["wasmtime", "sled", "rusqlite", "rmcp", "axum", "glovebox-manifest", "glovebox-store", "glovebox-runtime", "glovebox-ledger", "glovebox", "glovebox-mcp", "glovebox-dashboard"], why: "the listeners' transport limits (connection cap, header timeout, accept back-off, two-step stop) are HTTP/1.1 only: they know no route, no protocol above HTTP and no host, so both listeners hold the same bounds and neither leaks into the other" },
    Rule { package: "glovebox-dashboard", direct: true, forbidden: &["wasmtime", "wasmtime-wasi", "sled", "rusqlite", "rmcp", "glovebox-mcp", "glovebox-runtime", "glovebox-store", "glovebox-ledger", "clap", "glovebox-cli"], why: "the dashboard is an operator's view over the gateway: it reads and acts only through the gateway's public API (the command line's), so it never reaches the engine, a storage engine or MCP directly" },
    Rule { package: "glovebox-test", direct: true, forbidden: &["wasmtime", "wasmtime-wasi", "sled", "rusqlite", "rmcp", "glovebox-mcp", "glovebox-runtime", "glovebox-store", "glovebox-ledger", "clap", "glovebox-cli"], why: "the plugin authors' harness drives the gateway's public API as an embedder does, so what a plugin's tests see is what the host does, through the same manifest loader and call pipeline, never a path of its own into the engine or the store" },
    Rule { package: "glovebox-mcp", direct: true, forbidden: &["wasmtime", "wasmtime-wasi", "sled", "rusqlite", "glovebox-runtime", "glovebox-store", "glovebox-ledger", "clap", "glovebox-cli"], why: "the MCP adapter is thin: it translates MCP to the gateway's calls and back, and reaches the engine and storage only through the gateway's pipeline, never directly" },
];

/// The resolved graph of the workspace, by package id.
struct Graph {
    /// Package id → name.
    names: HashMap<String, String>,
    /// The workspace members' ids.
    members: Vec<String>,
    /// Package id → the ids it depends on, each with whether the edge is a
    /// normal dependency (for some target) rather than only dev or build.
    deps: HashMap<String, Vec<(String, bool)>>,
}

impl Graph {
    /// `cargo metadata` of the workspace this test belongs to.
    fn load() -> Graph {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        // Only this platform's dependencies: the others (macOS's, Windows')
        // are never downloaded on this machine, and `--offline` cannot fetch them.
        let out = Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--offline",
                "--filter-platform",
                &host_triple(),
                "--manifest-path",
            ])
            .arg(&manifest)
            .output()
            .expect("run `cargo metadata`");
        assert!(
            out.status.success(),
            "`cargo metadata` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");

        let names = meta["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .map(|p| (text(&p["id"]), text(&p["name"])))
            .collect();
        let members = meta["workspace_members"]
            .as_array()
            .expect("workspace_members")
            .iter()
            .map(text)
            .collect();
        // Note: the resolve graph unifies features over the whole workspace, so
        // an optional dependency enabled by one member shows in every member
        // that reaches its crate: the check errs on the side of reporting.
        let deps = meta["resolve"]["nodes"]
            .as_array()
            .expect("resolve.nodes (was --no-deps given?)")
            .iter()
            .map(|node| {
                let deps = node["deps"]
                    .as_array()
                    .expect("resolve.nodes[].deps")
                    .iter()
                    .map(|d| {
                        // `kind` is null for a normal dependency, "dev" or "build" otherwise.
                        let normal = d["dep_kinds"]
                            .as_array()
                            .expect("resolve.nodes[].deps[].dep_kinds (cargo 1.41+)")
                            .iter()
                            .any(|k| k["kind"].is_null());
                        (text(&d["pkg"]), normal)
                    })
                    .collect();
                (text(&node["id"]), deps)
            })
            .collect();
        Graph {
            names,
            members,
            deps,
        }
    }

    fn name(&self, id: &str) -> &str {
        &self.names[id]
    }

    /// The workspace member called `name`, if there is one.
    fn member(&self, name: &str) -> Option<&str> {
        self.members
            .iter()
            .find(|id| self.name(id) == name)
            .map(String::as_str)
    }

    /// Everything `from` reaches through normal dependencies, each with the
    /// package it was reached from (a shortest path back to `from`).
    fn reach<'a>(&'a self, from: &'a str) -> HashMap<&'a str, &'a str> {
        let mut parent = HashMap::from([(from, from)]);
        let mut queue = VecDeque::from([from]);
        while let Some(id) = queue.pop_front() {
            for (dep, normal) in self.deps.get(id).into_iter().flatten() {
                if *normal && !parent.contains_key(dep.as_str()) {
                    parent.insert(dep.as_str(), id);
                    queue.push_back(dep.as_str());
                }
            }
        }
        parent
    }

    /// What `from` depends on directly (normal dependencies), in the shape
    /// of [`Graph::reach`].
    fn direct<'a>(&'a self, from: &'a str) -> HashMap<&'a str, &'a str> {
        let mut parent = HashMap::from([(from, from)]);
        for (dep, normal) in self.deps.get(from).into_iter().flatten() {
            if *normal {
                parent.insert(dep.as_str(), from);
            }
        }
        parent
    }

    /// `from -> ... -> to` by name, along `parent` (from [`Graph::reach`]).
    fn path(&self, parent: &HashMap<&str, &str>, to: &str) -> String {
        let mut path = vec![self.name(to)];
        let mut at = to;
        while parent[at] != at {
            at = parent[at];
            path.push(self.name(at));
        }
        path.reverse();
        path.join(" -> ")
    }
}

/// The target triple of this machine, as `rustc -vV` says.
fn host_triple() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("run `rustc -vV`");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("`rustc -vV` names the host triple")
        .trim()
        .to_string()
}

fn text(v: &Value) -> String {
    v.as_str().expect("a string in cargo metadata").to_string()
}

#[test]
fn no_crate_depends_on_what_its_layer_forbids() {
    let graph = Graph::load();

    // The test must not pass by reading nothing: the host does reach wasmtime.
    let host = graph.member("glovebox").expect("the `glovebox` package");
    let from_host = graph.reach(host);
    assert!(
        from_host.keys().any(|id| graph.name(id) == "wasmtime"),
        "the graph read from `cargo metadata` has no glovebox -> wasmtime path: the test reads it wrong"
    );

    let mut broken = Vec::new();
    let mut checked = Vec::new();
    for rule in RULES {
        // Not a workspace member (yet): nothing to check.
        let Some(id) = graph.member(rule.package) else {
            eprintln!(
                "architecture: no package `{}` yet, rule skipped",
                rule.package
            );
            continue;
        };
        checked.push(rule.package);
        let parent = if rule.direct {
            graph.direct(id)
        } else {
            graph.reach(id)
        };
        let mut reached: Vec<&str> = parent
            .keys()
            .copied()
            .filter(|dep| *dep != id && rule.forbidden.contains(&graph.name(dep)))
            .collect();
        reached.sort_by_key(|dep| graph.path(&parent, dep));
        for dep in reached {
            broken.push(format!(
                "{} must not depend on {}, but does: {}\n  why: {}",
                rule.package,
                graph.name(dep),
                graph.path(&parent, dep),
                rule.why
            ));
        }
    }
    assert!(
        [
            "glovebox-manifest",
            "glovebox-store",
            "glovebox-store-nats",
            "glovebox-oci",
            "glovebox-runtime",
            "glovebox-ledger",
            "glovebox",
            "glovebox-mcp"
        ]
        .iter()
        .all(|package| checked.contains(package)),
        "the rules of every glovebox crate were not checked (renamed?): checked {checked:?}"
    );
    assert!(
        broken.is_empty(),
        "forbidden dependencies (see tests/all/architecture.rs):\n{}",
        broken.join("\n")
    );
}

/// No cycle among the workspace's packages, counting dev-dependencies too:
/// Cargo refuses a cycle of normal dependencies but allows one through a
/// dev-dependency (a lower crate's tests using a higher crate), which builds the
/// lower crate twice and is the kind of cycle the crate split removes.
#[test]
fn workspace_packages_have_no_cycle() {
    let graph = Graph::load();
    let members: BTreeSet<&str> = graph.members.iter().map(String::as_str).collect();
    let edges: BTreeMap<&str, Vec<&str>> = members
        .iter()
        .map(|&id| {
            let to = graph.deps[id]
                .iter()
                .map(|(dep, _)| dep.as_str())
                .filter(|dep| members.contains(dep) && *dep != id)
                .collect();
            (id, to)
        })
        .collect();

    if let Some(cycle) = find_cycle(&edges) {
        let names: Vec<&str> = cycle.iter().map(|id| graph.name(id)).collect();
        panic!(
            "the workspace's packages depend on each other in a cycle: {}\n  why: each crate may only depend on crates below it (see tests/all/architecture.rs)",
            names.join(" -> ")
        );
    }
}

/// A cycle of `edges` (node → the nodes it depends on), as the path that closes it
/// (`a -> b -> a`).
fn find_cycle<'a>(edges: &BTreeMap<&'a str, Vec<&'a str>>) -> Option<Vec<&'a str>> {
    /// Depth-first; `stack` is the path from the root to `id`.
    fn visit<'a>(
        id: &'a str,
        edges: &BTreeMap<&'a str, Vec<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(at) = stack.iter().position(|s| *s == id) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(id);
            return Some(cycle);
        }
        if !done.insert(id) {
            return None;
        }
        stack.push(id);
        for &dep in edges.get(id).into_iter().flatten() {
            if let Some(cycle) = visit(dep, edges, stack, done) {
                return Some(cycle);
            }
        }
        stack.pop();
        None
    }

    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|&id| visit(id, edges, &mut Vec::new(), &mut done))
}

/// The cycle finder itself, on a made-up graph (the real one has no cycle).
#[test]
fn find_cycle_names_the_cycle() {
    let mut edges = BTreeMap::from([
        ("host", vec!["store", "manifest"]),
        ("store", vec![]),
        ("manifest", vec![]),
    ]);
    assert_eq!(find_cycle(&edges), None);
    edges.insert("manifest", vec!["store"]);
    assert_eq!(find_cycle(&edges), None);
    edges.insert("store", vec!["host"]);
    assert_eq!(find_cycle(&edges), Some(vec!["host", "store", "host"]));
}
