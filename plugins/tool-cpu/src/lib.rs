//! `burn`: CPU-bound work, for measuring how background jobs use the cores.
//!
//! It computes a hash chain (splitmix64 rounds) in pure computation, either for
//! `ms` milliseconds of wall time or for exactly `iterations` rounds (a fixed
//! amount of work, the honest unit for a speed-up measurement), and returns how
//! many rounds it did and the final hash.

use core::hint::black_box;

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, invalid, json, output, spec, unknown_tool,
};
use wasip2::clocks::monotonic_clock;

struct Cpu;

/// Rounds between two looks at the clock.
const CHUNK: u64 = 4096;
/// The most `ms` accepted: ten minutes.
const MAX_MS: u64 = 600_000;

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Guest for Cpu {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "burn",
            "Busy-computes a hash chain for `ms` milliseconds of wall time (default 100), or for exactly `iterations` rounds; returns the rounds done and the hash.",
            json!({
                "type": "object",
                "properties": {
                    "ms": { "type": "integer", "minimum": 0, "maximum": MAX_MS },
                    "iterations": { "type": "integer", "minimum": 0 }
                },
                "additionalProperties": false
            }),
            "compute:cpu:burn",
            false,
            true,
        )]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        if tool != "burn" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let input = Input::parse_strict(&input, &["ms", "iterations"])?;
        let ms = input.opt_u64("ms")?;
        let rounds = input.opt_u64("iterations")?;
        if ms.is_some() && rounds.is_some() {
            return Err(invalid("give `ms` or `iterations`, not both"));
        }
        let start = monotonic_clock::now();
        let mut hash: u64 = 0;
        let mut done: u64 = 0;
        match rounds {
            Some(rounds) => {
                while done < rounds {
                    hash = black_box(mix(hash));
                    done += 1;
                }
            }
            None => {
                let budget = ms.unwrap_or(100).min(MAX_MS).saturating_mul(1_000_000);
                while monotonic_clock::now().saturating_sub(start) < budget {
                    for _ in 0..CHUNK {
                        hash = black_box(mix(hash));
                    }
                    done += CHUNK;
                }
            }
        }
        let elapsed_ms = monotonic_clock::now().saturating_sub(start) as f64 / 1e6;
        output(&json!({
            "iterations": done,
            "hash": format!("{hash:016x}"),
            "elapsed_ms": elapsed_ms,
        }))
    }
}

glovebox_plugin_sdk::export!(Cpu);
