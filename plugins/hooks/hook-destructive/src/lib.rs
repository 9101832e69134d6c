//! Permission hook: destructive operations. A call is destructive when its tool is
//! (`request.destructive`, after the operator's manifest overrides) or when its input
//! sets `force` or `cascade` at the top level. Such a call needs a human (`ask`) or is
//! denied with safer alternatives; any other call is allowed.
//!
//! Settings (optional): `{"mode": "ask"}` (the default) or `{"mode": "deny"}`.
//!
//! `force`/`cascade` count as set when they are `true`, the string `"true"` (any case) or
//! a non-zero number: when in doubt the call is treated as destructive. Input that is not
//! JSON cannot be judged and is denied; so are settings of the wrong shape (fail closed).

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

/// Top-level input flags that make any call destructive.
const FLAGS: [&str; 2] = ["force", "cascade"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Ask,
    Deny,
}

struct Destructive;

impl Guest for Destructive {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(settings: String, req: Request) -> Decision {
        judge(&settings, &req)
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(Destructive);

fn mode(settings: &str) -> Result<Mode, String> {
    let settings = Settings::parse(settings, &["mode"])?;
    match settings.opt_str("mode")? {
        None | Some("ask") => Ok(Mode::Ask),
        Some("deny") => Ok(Mode::Deny),
        Some(other) => Err(format!(
            "settings key `mode` must be \"ask\" or \"deny\", got \"{other}\""
        )),
    }
}

/// The flags of [`FLAGS`] that `input` sets.
fn flags_set(input: &str) -> Result<Vec<&'static str>, String> {
    if input.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: Value =
        serde_json::from_str(input).map_err(|e| format!("its input is not valid JSON: {e}"))?;
    let Value::Object(fields) = value else {
        return Ok(Vec::new());
    };
    Ok(FLAGS
        .into_iter()
        .filter(|flag| fields.get(*flag).is_some_and(is_set))
        .collect())
}

fn is_set(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::String(s) => s.trim().eq_ignore_ascii_case("true"),
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        _ => false,
    }
}

fn judge(settings: &str, req: &Request) -> Decision {
    let mode = match mode(settings) {
        Ok(mode) => mode,
        Err(problem) => return invalid_settings(&problem),
    };
    let flags = match flags_set(&req.input) {
        Ok(flags) => flags,
        Err(problem) => {
            return deny(
                format!(
                    "cannot tell whether the call to {} is destructive: {problem}",
                    req.tool
                ),
                ["send the input as a JSON object"],
            );
        }
    };
    if !req.destructive && flags.is_empty() {
        return allow();
    }
    let with = match flags.as_slice() {
        [] => String::new(),
        [one] => format!(" with `{one}` set"),
        [first, second, ..] => format!(" with `{first}` and `{second}` set"),
    };
    let what = format!("destructive call to {} ({}){with}", req.tool, req.action);
    match mode {
        Mode::Ask => ask(format!("{what}: approve to run it")),
        Mode::Deny => {
            let mut alternatives = vec![
                "do a soft delete instead: move the data to a trash location or mark it \
                 deleted, so that it can be restored"
                    .to_owned(),
                "ask for a manual review: describe the change and let a human operator run it"
                    .to_owned(),
                "take a backup first (copy what would be changed or removed), then ask an \
                 operator to run the call"
                    .to_owned(),
            ];
            if !flags.is_empty() {
                let names: Vec<String> = flags.iter().map(|f| format!("`{f}`")).collect();
                alternatives.push(format!(
                    "run it without {}, so that the tool's own safety checks apply",
                    names.join(" or ")
                ));
            }
            deny(
                format!("{what}: destructive calls are denied by policy"),
                alternatives,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glovebox_hook_sdk::testing::request;

    fn call(input: &str, destructive: bool) -> Request {
        request(
            "files.write",
            "execute:file:write",
            "workagent",
            input,
            0.0,
            destructive,
        )
    }

    #[test]
    fn non_destructive_calls_are_allowed() {
        for input in [
            "{}",
            "",
            r#"{"force": false, "cascade": null}"#,
            "[true]",
            "\"force\"",
        ] {
            assert_eq!(judge("", &call(input, false)), Decision::Allow, "{input}");
        }
        let nested = r#"{"options": {"force": true}}"#;
        assert_eq!(judge("", &call(nested, false)), Decision::Allow);
    }

    #[test]
    fn destructive_tools_ask_by_default() {
        assert_eq!(
            judge("", &call("{}", true)),
            Decision::Ask(
                "destructive call to files.write (execute:file:write): approve to run it"
                    .to_owned()
            )
        );
        assert_eq!(
            judge(r#"{"mode": "ask"}"#, &call("{}", true)),
            judge("{}", &call("{}", true))
        );
    }

    #[test]
    fn force_or_cascade_make_a_call_destructive() {
        assert_eq!(
            judge("", &call(r#"{"force": true}"#, false)),
            Decision::Ask(
                "destructive call to files.write (execute:file:write) with `force` set: \
                 approve to run it"
                    .to_owned()
            )
        );
        let both = r#"{"cascade": "TRUE", "force": 1}"#;
        match judge("", &call(both, false)) {
            Decision::Ask(text) => {
                assert!(text.contains("with `force` and `cascade` set"), "{text}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deny_mode_denies_with_alternatives() {
        let Decision::Deny(d) = judge(r#"{"mode": "deny"}"#, &call("{}", true)) else {
            panic!("expected a deny");
        };
        assert_eq!(
            d.reason,
            "destructive call to files.write (execute:file:write): destructive calls are \
             denied by policy"
        );
        assert_eq!(d.alternatives.len(), 3);
        assert!(d.alternatives[0].starts_with("do a soft delete"));
        assert!(d.alternatives[1].starts_with("ask for a manual review"));
        assert!(d.alternatives[2].starts_with("take a backup first"));

        let Decision::Deny(d) = judge(r#"{"mode": "deny"}"#, &call(r#"{"cascade": true}"#, false))
        else {
            panic!("expected a deny");
        };
        assert_eq!(d.alternatives.len(), 4);
        assert_eq!(
            d.alternatives[3],
            "run it without `cascade`, so that the tool's own safety checks apply"
        );
        assert_eq!(
            judge(r#"{"mode": "deny"}"#, &call("{}", false)),
            Decision::Allow
        );
    }

    #[test]
    fn bad_settings_and_bad_input_fail_closed() {
        let Decision::Deny(d) = judge(r#"{"mode": "maybe"}"#, &call("{}", false)) else {
            panic!("expected a deny");
        };
        assert_eq!(
            d.reason,
            "invalid hook settings: settings key `mode` must be \"ask\" or \"deny\", got \"maybe\""
        );
        let Decision::Deny(d) = judge(r#"{"mode": true}"#, &call("{}", false)) else {
            panic!("expected a deny");
        };
        assert_eq!(
            d.reason,
            "invalid hook settings: settings key `mode` must be a string, got a boolean"
        );
        let Decision::Deny(d) = judge("", &call("{not json", false)) else {
            panic!("expected a deny");
        };
        assert!(
            d.reason
                .starts_with("cannot tell whether the call to files.write is destructive"),
            "{}",
            d.reason
        );
    }
}
