//! `[[secret]]`: credentials the host holds for its plugins and never hands
//! to them.
//!
//! Why: an `env` grant or a file puts an API key into the guest's memory,
//! and any tool (or any generated script) may then send it wherever it can
//! reach. A secret named here stays in the host: an `[[http]]` grant's
//! `inject` adds it to a header of the requests that grant allows, on their
//! way out, after the grant has judged them ([`crate::HttpInjection`]). The
//! host knows every value, so it refuses a request a guest makes with one in
//! it (the guest learned it some other way) and masks them in what it records
//! or shows ([`Secrets::mask`]).
//!
//! A value comes from one source: a file that is the owner's only (`0600`;
//! no grant may reach it, as for every secret file the config names), a
//! variable of the host's environment (which no plugin's `env` may then
//! name), or a command the operator names (run once at each load, its
//! standard output the value). Never from the config itself. Values are read
//! when the config loads, so a missing one is refused at start or reload, not
//! at the first request.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::source::Source;
use crate::{ConfigError, NamesSecretFile};

/// A value shorter than this is refused: masking it would blank every
/// occurrence of those few bytes in everything shown.
pub const MIN_SECRET_BYTES: usize = 8;
/// A value longer than this is refused (a header carries it).
pub const MAX_SECRET_BYTES: usize = 16 * 1024;
/// How long a secret's `command` may run.
pub const SECRET_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// `[[secret]]`: a credential the host injects at the egress, never a guest.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSecret {
    /// How grants name it: `${secret:NAME}` in an `[[http]]` grant's
    /// `inject`.
    name: String,
    /// A file holding the value (the owner's only: `chmod 600`; relative to
    /// the config's directory); no grant may reach it.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    file: Option<String>,
    /// A variable of the host's environment holding the value; no plugin's
    /// `env` may name it.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    env: Option<String>,
    /// A command printing the value (`["pass", "show", "github"]`), run at
    /// each load without a shell, within 10 s.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    command: Option<Vec<String>>,
}

impl NamesSecretFile for RawSecret {
    const KEYS: [&'static str; 3] = ["secret", "file", "secret"];

    fn named_file(&self) -> (Option<&str>, Option<&String>) {
        (Some(&self.name), self.file.as_ref())
    }
}

/// A secret's value: shown as `[secret:NAME]` by `Debug`, so no config
/// dump or log line carries it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(Arc<str>);

impl SecretValue {
    /// A value (tests, embedders; the config reads its own).
    pub fn new(value: impl Into<Arc<str>>) -> SecretValue {
        SecretValue(value.into())
    }

    /// The value itself, for the egress that injects it and the scans.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Where a secret's value came from (for `doctor` and messages; never the value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretSource {
    File(std::path::PathBuf),
    Env(String),
    Command(Vec<String>),
}

/// One `[[secret]]`, its value read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Secret {
    pub name: String,
    pub source: SecretSource,
    pub value: SecretValue,
}

/// Every `[[secret]]` of the config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrets(Vec<Secret>);

impl Secrets {
    /// A set of secrets with these values (tests, embedders).
    pub fn new(secrets: Vec<Secret>) -> Secrets {
        Secrets(secrets)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Secret> {
        self.0.iter()
    }

    /// The secret named `name`.
    pub fn get(&self, name: &str) -> Option<&Secret> {
        self.0.iter().find(|s| s.name == name)
    }

    /// The secret whose value `text` holds, if any (the first by config order).
    pub fn found_in(&self, text: &[u8]) -> Option<&Secret> {
        self.0.iter().find(|s| {
            let value = s.value.expose().as_bytes();
            text.windows(value.len()).any(|w| w == value)
        })
    }

    /// `text` with every secret's value, and its form inside a JSON string,
    /// replaced by `[secret:NAME]`.
    pub fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut text = Cow::Borrowed(text);
        for secret in &self.0 {
            let value = secret.value.expose();
            let in_json = serde_json::to_string(value).unwrap_or_default();
            let in_json = in_json.trim_matches('"');
            for form in [value, in_json] {
                if !form.is_empty() && text.contains(form) {
                    text = Cow::Owned(text.replace(form, &format!("[secret:{}]", secret.name)));
                }
            }
        }
        text
    }

    /// The longest value's length in bytes (0 without secrets): how much of a
    /// stream a scan must hold back to see a value cut across two pieces.
    pub fn longest(&self) -> usize {
        self.0.iter().map(|s| s.value.0.len()).max().unwrap_or(0)
    }
}

/// Reads the `[[secret]]` entries, each from its one source.
pub(crate) fn load_secrets(
    src: &Source,
    dir: &Path,
    raw: &[RawSecret],
) -> Result<Secrets, ConfigError> {
    let mut secrets: Vec<Secret> = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let key = |field: &str| format!("secret[{i}].{field}");
        if !valid_name(&entry.name) {
            return Err(src.invalid(
                &key("name"),
                format!("`{}` is not a secret name", entry.name),
                "use lowercase letters, digits, `-` and `_`, at most 64 (e.g. `github`)",
            ));
        }
        if secrets.iter().any(|s| s.name == entry.name) {
            return Err(src.invalid(
                &key("name"),
                format!("secret `{}` is declared twice", entry.name),
                "give each `[[secret]]` its own name",
            ));
        }
        let (field, source, value) = match (&entry.file, &entry.env, &entry.command) {
            (Some(file), None, None) => {
                let value = crate::principal::read_credential_file(src, &key("file"), dir, file)?;
                ("file", SecretSource::File(dir.join(file)), value)
            }
            (None, Some(var), None) => {
                let value = std::env::var(var).map_err(|e| {
                    src.invalid(
                        &key("env"),
                        format!("the host's environment variable `{var}` cannot be read: {e}"),
                        format!("set `{var}` in the environment glovebox starts in, or read the secret from a `file`"),
                    )
                })?;
                ("env", SecretSource::Env(var.clone()), value)
            }
            (None, None, Some(argv)) => {
                let value = run_command(argv).map_err(|problem| {
                    src.invalid(
                        &key("command"),
                        problem,
                        "name a program and its arguments, without a shell, that prints the value and exits 0 within 10 s",
                    )
                })?;
                ("command", SecretSource::Command(argv.clone()), value)
            }
            _ => {
                return Err(src.invalid(
                    &format!("secret[{i}]"),
                    format!("secret `{}` names {}", entry.name, count_sources(entry)),
                    "give exactly one of `file`, `env` and `command`; a value never goes in the config itself",
                ));
            }
        };
        let value = checked_value(&entry.name, value)
            .map_err(|problem| src.invalid(&key(field), problem, VALUE_HINT))?;
        secrets.push(Secret {
            name: entry.name.clone(),
            source,
            value: SecretValue(value.into()),
        });
    }
    Ok(Secrets(secrets))
}

const VALUE_HINT: &str = "a secret is one line of 8 to 16384 bytes without control characters (a trailing newline is dropped)";

fn count_sources(entry: &RawSecret) -> &'static str {
    match [
        entry.file.is_some(),
        entry.env.is_some(),
        entry.command.is_some(),
    ]
    .iter()
    .filter(|s| **s)
    .count()
    {
        0 => "no source",
        2 => "two sources",
        _ => "three sources",
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The value without its trailing line break, if it is one a header can
/// carry and long enough to mask.
fn checked_value(name: &str, value: String) -> Result<String, String> {
    let value = value
        .strip_suffix('\n')
        .map(|v| v.strip_suffix('\r').unwrap_or(v))
        .unwrap_or(&value);
    if value.chars().any(char::is_control) {
        return Err(format!(
            "the value of secret `{name}` has a line break or another control character"
        ));
    }
    if value.len() < MIN_SECRET_BYTES || value.len() > MAX_SECRET_BYTES {
        return Err(format!(
            "the value of secret `{name}` is {} bytes long",
            value.len()
        ));
    }
    Ok(value.to_string())
}

/// Runs `argv` (no shell) and returns what it printed, within
/// [`SECRET_COMMAND_TIMEOUT`]; an error says what went wrong (never the output).
fn run_command(argv: &[String]) -> Result<String, String> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let Some((program, args)) = argv.split_first() else {
        return Err("the command is empty".into());
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run `{program}`: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut stdout)
            .take(MAX_SECRET_BYTES as u64 + 2)
            .read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + SECRET_COMMAND_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`{program}` did not exit within 10 s"));
            }
            Err(e) => return Err(format!("cannot wait for `{program}`: {e}")),
        }
    };
    let out = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("`{program}` failed ({status})"));
    }
    String::from_utf8(out).map_err(|_| format!("`{program}` printed bytes that are not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(name: &str, value: &str) -> Secret {
        Secret {
            name: name.into(),
            source: SecretSource::Env("X".into()),
            value: SecretValue(value.into()),
        }
    }

    #[test]
    fn values_are_masked_raw_and_as_json_and_never_debug_printed() {
        let secrets = Secrets::new(vec![
            secret("github", "ghp_0123456789abcdef"),
            secret("quoted", "pa\"ss\\word"),
        ]);
        assert_eq!(
            secrets.mask("token ghp_0123456789abcdef here"),
            "token [secret:github] here"
        );
        let json = serde_json::json!({ "p": "pa\"ss\\word" }).to_string();
        assert_eq!(secrets.mask(&json), r#"{"p":"[secret:quoted]"}"#);
        assert!(matches!(secrets.mask("nothing"), Cow::Borrowed(_)));
        let shown = format!("{secrets:?}");
        assert!(
            !shown.contains("ghp_") && shown.contains("[redacted]"),
            "{shown}"
        );
        assert_eq!(
            secrets
                .found_in(b"xx ghp_0123456789abcdef")
                .map(|s| s.name.as_str()),
            Some("github")
        );
        assert!(secrets.found_in(b"ghp_0123456789abcde").is_none());
        assert_eq!(secrets.longest(), 20);
    }

    #[test]
    fn a_value_is_one_line_of_a_maskable_length() {
        assert_eq!(checked_value("a", "abcdefgh\n".into()).unwrap(), "abcdefgh");
        assert_eq!(
            checked_value("a", "abcdefgh\r\n".into()).unwrap(),
            "abcdefgh"
        );
        assert!(
            checked_value("a", "short".into())
                .unwrap_err()
                .contains("5 bytes")
        );
        assert!(
            checked_value("a", "abc\ndefgh".into())
                .unwrap_err()
                .contains("line break")
        );
        assert!(checked_value("a", "x".repeat(MAX_SECRET_BYTES + 1)).is_err());
    }

    #[test]
    fn a_command_prints_the_value_or_says_why_not() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            run_command(&argv(&["echo", "s3cret-value"])).unwrap(),
            "s3cret-value\n"
        );
        assert!(
            run_command(&argv(&["false"]))
                .unwrap_err()
                .contains("`false` failed")
        );
        assert!(
            run_command(&argv(&["/no/such/program"]))
                .unwrap_err()
                .contains("cannot run")
        );
        assert!(run_command(&[]).unwrap_err().contains("empty"));
    }
}
