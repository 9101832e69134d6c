//! `{{name}}`: a Glovebox permission hook. It judges the calls whose action deletes
//! files (`execute:file:delete`) or runs a shell command (`execute:shell:*`), and
//! denies those whose input asks for a recursive deletion (`"recursive": true`),
//! telling the agent what it may do instead; it allows the others. A call it cannot
//! judge (input that is not JSON, unknown settings) is denied: hooks fail closed.
//!
//! It runs with no capabilities at all (no filesystem, network, environment or
//! stdio), so it is `no_std` on wasm32; natively it has `std`, for unit tests.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

struct Hook;

impl Guest for Hook {
    /// The action patterns this hook judges; calls with other actions never reach it.
    fn triggers() -> Vec<String> {
        vec![
            "execute:file:delete".to_owned(),
            "execute:shell:*".to_owned(),
        ]
    }

    fn validate(settings: String, req: Request) -> Decision {
        judge(&settings, &req)
    }

    /// Told how a call it allowed ended (only with `after = true` in the host config).
    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(Hook);

fn judge(settings: &str, req: &Request) -> Decision {
    // This hook takes no settings: any key is a mistake of the operator's.
    if let Err(problem) = Settings::parse(settings, &[]) {
        return invalid_settings(&problem);
    }
    let input: Value = match serde_json::from_str(&req.input) {
        Ok(input) => input,
        Err(e) => {
            return deny(
                format!(
                    "cannot judge the call to {}: its input is not JSON ({e})",
                    req.tool
                ),
                ["send the input as a JSON object"],
            );
        }
    };
    if input.get("recursive") == Some(&Value::Bool(true)) {
        return deny(
            format!(
                "{} ({}) asks for a recursive deletion",
                req.tool, req.action
            ),
            [
                "delete the files one by one, naming each",
                "move the directory into a trash directory instead",
            ],
        );
    }
    allow()
}
