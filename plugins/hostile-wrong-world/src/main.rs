//! Hostile: a plain `wasi:cli/command` component (it exports `wasi:cli/run`, not the
//! Glovebox `tool` interface). The host must refuse it at load time as the wrong world.

fn main() {
    println!("hi");
}
