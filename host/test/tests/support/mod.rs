//! Where the tests find the example components: in `plugins/target`, where
//! the root package's build script (`tests/build.rs`) builds every plugin of
//! `plugins/` (any build of the `glovebox` binary or its tests runs it). The
//! tests do not build them a second way.

#![allow(dead_code)]

use std::path::PathBuf;

/// The built component `stem` (`tool_files`), or a panic saying how to build it.
pub fn artifact(stem: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../plugins/target/wasm32-wasip2/release")
        .join(format!("{stem}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: build the example plugins first with `cargo build -p glovebox-cli` (its build script builds every plugin of `plugins/` into `plugins/target`)",
        path.display()
    );
    path
}

/// A compile cache for the test run, under the target dir, so the tests
/// neither write to the user's cache nor compile each component again.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("glovebox-test-cache")
}
