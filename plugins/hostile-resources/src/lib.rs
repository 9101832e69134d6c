//! Hostile: makes the host keep things for it, in a loop, until something stops it.
//! Each tool takes `count` (how many, default effectively unbounded) and keeps
//! everything it made alive until the end, so the host must hold all of it:
//!
//! - `pollables`: timers (`subscribe-duration`), one resource-table entry each;
//! - `descriptors`: opens the file `path` again and again (a host descriptor each);
//! - `random`: asks for `len` random bytes in one request, `count` times;
//! - `headers`: header maps (`fields`), each with one `size`-byte header value.
//!
//! A host that bounds these ends the call with an error; the result, if the guest
//! ever gets there, says how far it got.

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, Value, invalid, json, output, spec,
    unknown_tool,
};
use wasip2::clocks::monotonic_clock;
use wasip2::http::types::Fields;

struct Resources;

const FOREVER: u64 = 100_000_000;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "count": { "type": "integer", "minimum": 0 },
            "path": { "type": "string" },
            "len": { "type": "integer", "minimum": 0 },
            "size": { "type": "integer", "minimum": 0 }
        },
        "additionalProperties": false
    })
}

impl Guest for Resources {
    fn list_tools() -> Vec<ToolSpec> {
        ["pollables", "descriptors", "random", "headers"]
            .into_iter()
            .map(|name| {
                spec(
                    name,
                    "Hostile: grows a host-side structure in a loop.",
                    schema(),
                    "read:hostile:resources",
                    false,
                    true,
                )
            })
            .collect()
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        let input = Input::parse_strict(&input, &["count", "path", "len", "size"])?;
        let count = input.opt_u64("count")?.unwrap_or(FOREVER);
        let made = match tool.as_str() {
            "pollables" => {
                let mut kept = Vec::new();
                for _ in 0..count {
                    kept.push(monotonic_clock::subscribe_duration(3_600_000_000_000));
                }
                kept.len()
            }
            "descriptors" => {
                let path = input.str("path")?;
                let mut kept = Vec::new();
                for _ in 0..count {
                    match std::fs::File::open(path) {
                        Ok(file) => kept.push(file),
                        Err(e) => {
                            return output(&json!({ "made": kept.len(), "error": e.to_string() }));
                        }
                    }
                }
                kept.len()
            }
            "random" => {
                let len = input.opt_u64("len")?.unwrap_or(1 << 30);
                let mut total = 0usize;
                for _ in 0..count {
                    total += wasip2::random::random::get_random_bytes(len).len();
                }
                total
            }
            "headers" => {
                let size = input.opt_u64("size")?.unwrap_or(60 * 1024);
                let value = vec![b'x'; usize::try_from(size).map_err(|_| invalid("size"))?];
                let mut kept = Vec::new();
                for _ in 0..count {
                    let fields = Fields::new();
                    if let Err(e) = fields.append("x-filler", &value) {
                        return output(&json!({ "made": kept.len(), "error": format!("{e:?}") }));
                    }
                    kept.push(fields);
                }
                kept.len()
            }
            _ => return Err(unknown_tool(&tool, &Self::list_tools())),
        };
        output(&json!({ "made": made }))
    }
}

glovebox_plugin_sdk::export!(Resources);
