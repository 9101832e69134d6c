//! Links the component with an 8 MiB stack in linear memory (Rust's default is 1 MiB).
//!
//! boa recurses on the Rust stack while it parses nested code (about 12 KiB of linear
//! stack per nested bracket, against about 4 KiB of the host's native wasm stack) and
//! when native code calls back into JavaScript. With 8 MiB, the native stack (512 KiB by
//! default in the host) always runs out first, which the host reports as a typed stack
//! overflow; with a small linear stack, deep nesting (some 40 brackets at 512 KiB) would
//! end in an out-of-bounds trap instead. The stack is at the start of linear memory
//! (`--stack-first`), so an overflow traps and never corrupts data.

fn main() {
    if std::env::var("TARGET").is_ok_and(|t| t.starts_with("wasm32")) {
        println!("cargo:rustc-link-arg=-zstack-size=8388608");
    }
}
