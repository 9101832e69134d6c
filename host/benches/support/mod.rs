//! Helpers shared by the benches. Each bench is a crate of its own that
//! includes this module (`mod support;`) and uses part of it.
#![allow(dead_code)]

pub mod append;
pub mod calls;
pub mod mcp;
pub mod resume;

use std::path::PathBuf;

/// A built plugin or hook component, by crate name with underscores.
pub fn artifact(name: &str) -> PathBuf {
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
