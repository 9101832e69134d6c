//! Issue 40's egress figure: what deciding one outgoing request costs against
//! an `[[http]]` grant with 50 method and path rules (reading the request's
//! path, then its method and every pattern), for a request the last pattern
//! allows and one that every pattern refuses. The goal is at most 10 µs.
//!
//! `cargo bench -p glovebox-manifest --bench egress` (the bench profile, that
//! is release; `docs/run-benchmarks.sh` runs it after the main table). It
//! builds this crate only, so it takes a minute, not wasmtime's twenty.

use std::time::{Duration, Instant};

use glovebox_manifest::{HttpRules, RequestPath};

/// Rules in the grant: 2 methods and 48 paths.
const RULES: usize = 50;

/// Methods `GET` and `HEAD`, then plain, `*` and `**` patterns of the shapes
/// operators write; the allowed request matches only the last.
fn rules() -> HttpRules {
    let methods = vec!["GET".to_string(), "HEAD".to_string()];
    let mut paths: Vec<String> = (0..RULES - 3)
        .map(|i| match i % 3 {
            0 => format!("/repos/org{i}/widget"),
            1 => format!("/repos/org{i}/*/issues"),
            _ => format!("/repos/org{i}/**/comments"),
        })
        .collect();
    paths.push("/repos/acme/*/pulls/**".into());
    HttpRules::parse(&methods, &paths).expect("bench rules")
}

/// The decision the sandbox makes for one request on the grant's origin.
fn decide(rules: &HttpRules, method: &str, raw_path: &str) -> bool {
    match RequestPath::parse(raw_path) {
        Ok(path) => rules.allows_method(method) && rules.allows_path(&path.matched),
        Err(_) => false,
    }
}

fn main() {
    let quick = std::env::var_os("GLOVEBOX_BENCH_QUICK").is_some();
    let n = if quick { 20_000 } else { 500_000 };
    let rules = rules();
    let cases = [
        (
            "allowed by the last pattern",
            "GET",
            "/repos/acme/widget/pulls/7/files",
            true,
        ),
        (
            "refused by every pattern",
            "GET",
            "/repos/acme/widget/%2e%2e/%2e%2e/admin/keys",
            false,
        ),
    ];
    println!(
        "Egress rules: one request against a grant with {RULES} method and path rules ({n} decisions each)"
    );
    println!("| request | median | p99 | decisions/s | goal |");
    println!("|---|---:|---:|---:|---|");
    for (name, method, path, expected) in cases {
        assert_eq!(decide(&rules, method, path), expected, "{name}");
        for _ in 0..n / 10 {
            std::hint::black_box(decide(&rules, method, std::hint::black_box(path)));
        }
        let mut samples: Vec<Duration> = Vec::with_capacity(n);
        let all = Instant::now();
        for _ in 0..n {
            let t = Instant::now();
            std::hint::black_box(decide(&rules, method, std::hint::black_box(path)));
            samples.push(t.elapsed());
        }
        let rate = n as f64 / all.elapsed().as_secs_f64();
        samples.sort();
        let at = |q: f64| samples[((n - 1) as f64 * q).round() as usize];
        let median = at(0.5);
        let goal = if median <= Duration::from_micros(10) {
            "≤ 10 µs: met"
        } else {
            "≤ 10 µs: missed"
        };
        println!(
            "| `{method} {path}` ({name}) | {:.2} µs | {:.2} µs | {:.0} | {goal} |",
            median.as_secs_f64() * 1e6,
            at(0.99).as_secs_f64() * 1e6,
            rate
        );
    }
}
