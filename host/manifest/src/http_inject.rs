//! An `[[http]]` grant's `inject`: a header the host adds to the requests
//! the grant allows, its value naming `[[secret]]`s (`Bearer ${secret:github}`).
//!
//! The header is set on the way out, after the grant has judged the request
//! and after the request was scanned for secret values the guest put in it
//! itself; whatever the guest set under that name is replaced. So a plugin
//! uses an API key it never holds (see [`crate::Secrets`]).

use crate::Secrets;

/// Headers the host never lets a grant set: they frame the request or name
/// its destination, which the grant's origin already decides.
const FRAMING: [&str; 6] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
];

/// `inject = { header = "Authorization", value = "Bearer ${secret:github}" }`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HttpInjection {
    /// Lowercase.
    pub header: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Part {
    Text(String),
    Secret(String),
}

/// Why an `inject` cannot be read: the field at fault, what is wrong, what to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InjectError {
    pub field: &'static str,
    pub problem: String,
    pub hint: &'static str,
}

impl HttpInjection {
    /// Parses a header name and a value template.
    pub fn parse(header: &str, value: &str) -> Result<HttpInjection, InjectError> {
        let valid_name = !header.is_empty()
            && header.len() <= 64
            && header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid_name {
            return Err(InjectError {
                field: "header",
                problem: format!("`{header}` is not a header name"),
                hint: "write a header's name, e.g. `Authorization` or `X-Api-Key`",
            });
        }
        let lower = header.to_ascii_lowercase();
        if FRAMING.contains(&lower.as_str()) {
            return Err(InjectError {
                field: "header",
                problem: format!("`{header}` frames the request; a grant cannot set it"),
                hint: "inject a credential header, e.g. `Authorization` or `X-Api-Key`",
            });
        }
        let template_error = |problem: String| InjectError {
            field: "value",
            problem,
            hint: "write the header's value with `${secret:NAME}` where a `[[secret]]` goes, e.g. `Bearer ${secret:github}`",
        };
        let mut parts = Vec::new();
        let mut rest = value;
        while let Some(at) = rest.find("${") {
            if at > 0 {
                parts.push(Part::Text(rest[..at].to_string()));
            }
            let after = &rest[at + 2..];
            let Some(end) = after.find('}') else {
                return Err(template_error(format!(
                    "`{value}` has a `${{` without its `}}`"
                )));
            };
            let Some(name) = after[..end].strip_prefix("secret:") else {
                return Err(template_error(format!(
                    "`{value}` has `${{{}}}`, which is not a secret",
                    &after[..end]
                )));
            };
            parts.push(Part::Secret(name.to_string()));
            rest = &after[end + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        let text_ok = |t: &String| {
            t.bytes()
                .all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic())
        };
        if !parts.iter().all(|p| match p {
            Part::Text(t) => text_ok(t),
            Part::Secret(_) => true,
        }) {
            return Err(template_error(format!(
                "`{value}` has characters a header cannot carry"
            )));
        }
        if !parts.iter().any(|p| matches!(p, Part::Secret(_))) {
            return Err(template_error(format!("`{value}` names no secret")));
        }
        Ok(HttpInjection {
            header: lower,
            parts,
        })
    }

    /// The secrets the value names.
    pub fn secret_names(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Secret(name) => Some(name.as_str()),
            Part::Text(_) => None,
        })
    }

    /// The header's value with the secrets' values in, or the first secret
    /// `secrets` lacks.
    pub fn resolve(&self, secrets: &Secrets) -> Result<String, String> {
        let mut value = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => value.push_str(text),
                Part::Secret(name) => match secrets.get(name) {
                    Some(secret) => value.push_str(secret.value.expose()),
                    None => return Err(name.clone()),
                },
            }
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Secret, SecretSource};

    #[test]
    fn a_template_names_secrets_between_text() {
        let i = HttpInjection::parse("Authorization", "Bearer ${secret:github}").unwrap();
        assert_eq!(i.header, "authorization");
        assert_eq!(i.secret_names().collect::<Vec<_>>(), ["github"]);
        let secrets = Secrets::new(vec![Secret {
            name: "github".into(),
            source: SecretSource::Env("T".into()),
            value: crate::SecretValue::new("ghp_abcdefgh"),
        }]);
        assert_eq!(i.resolve(&secrets).unwrap(), "Bearer ghp_abcdefgh");
        let two = HttpInjection::parse("X-Key", "${secret:a}:${secret:github}").unwrap();
        assert_eq!(two.resolve(&secrets), Err("a".to_string()));
    }

    #[test]
    fn bad_injections_say_what_is_wrong() {
        let cases = [
            ("Host", "${secret:a}", "header", "frames the request"),
            (
                "Content-Length",
                "${secret:a}",
                "header",
                "frames the request",
            ),
            ("X Key", "${secret:a}", "header", "is not a header name"),
            ("X-Key", "Bearer ${secret:a", "value", "without its `}`"),
            ("X-Key", "${env:HOME}", "value", "which is not a secret"),
            ("X-Key", "Bearer token", "value", "names no secret"),
            ("X-Key", "a\r\nb ${secret:a}", "value", "cannot carry"),
        ];
        for (header, value, field, expected) in cases {
            let e = HttpInjection::parse(header, value).unwrap_err();
            assert_eq!(e.field, field, "{header} {value}");
            assert!(e.problem.contains(expected), "{}", e.problem);
        }
    }
}
