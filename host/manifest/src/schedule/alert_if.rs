//! `alert_if = "<field> <op> <number>"`: a threshold on a `call` action's
//! JSON output, parsed at load, that says when a run calls for a person.

/// `alert_if = "<path> <op> <number>"`: a threshold on a call's JSON output.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertIf {
    /// The dotted path into the output (`count`, `summary.overdue`).
    pub path: Vec<String>,
    pub op: Cmp,
    pub value: f64,
    text: String,
}

/// A comparison of [`AlertIf`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

/// Why an `alert_if` text is not a condition; each quotes the part at fault
/// and the whole text.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AlertIfError {
    /// Not three words.
    #[error("`{text}` is not `<field> <comparison> <number>`")]
    Shape { text: String },
    /// The middle word is not one of `> >= < <= == !=`.
    #[error("`{op}` in `{text}` is not a comparison")]
    Comparison { op: String, text: String },
    /// The last word is not a finite number.
    #[error("`{value}` in `{text}` is not a number")]
    Number { value: String, text: String },
    /// The first word has an empty segment.
    #[error("`{path}` in `{text}` is not a field path")]
    Path { path: String, text: String },
}

impl AlertIf {
    pub fn parse(text: &str) -> Result<AlertIf, AlertIfError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let [path, op, value] = words.as_slice() else {
            return Err(AlertIfError::Shape {
                text: text.to_string(),
            });
        };
        let op = match *op {
            ">" => Cmp::Gt,
            ">=" => Cmp::Ge,
            "<" => Cmp::Lt,
            "<=" => Cmp::Le,
            "==" => Cmp::Eq,
            "!=" => Cmp::Ne,
            other => {
                return Err(AlertIfError::Comparison {
                    op: other.to_string(),
                    text: text.to_string(),
                });
            }
        };
        let value: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| AlertIfError::Number {
                value: value.to_string(),
                text: text.to_string(),
            })?;
        let path: Vec<String> = path.split('.').map(str::to_string).collect();
        if path.iter().any(|p| p.is_empty()) {
            return Err(AlertIfError::Path {
                path: words[0].to_string(),
                text: text.to_string(),
            });
        }
        Ok(AlertIf {
            path,
            op,
            value,
            text: words.join(" "),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The number at the path of `output` (an array counts as its length),
    /// if there is one.
    pub fn observe(&self, output: &serde_json::Value) -> Option<f64> {
        let mut at = output;
        for key in &self.path {
            at = at.get(key)?;
        }
        match at {
            serde_json::Value::Number(n) => n.as_f64(),
            serde_json::Value::Array(a) => Some(a.len() as f64),
            _ => None,
        }
    }

    /// Whether `observed` meets the condition.
    pub fn holds(&self, observed: f64) -> bool {
        match self.op {
            Cmp::Gt => observed > self.value,
            Cmp::Ge => observed >= self.value,
            Cmp::Lt => observed < self.value,
            Cmp::Le => observed <= self.value,
            Cmp::Eq => observed == self.value,
            Cmp::Ne => observed != self.value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alert_conditions_read_numbers_and_array_lengths() {
        let alert = AlertIf::parse("count > 0").unwrap();
        let seen = alert.observe(&serde_json::json!({"count": 3})).unwrap();
        assert!(alert.holds(seen));
        assert!(!alert.holds(alert.observe(&serde_json::json!({"count": 0})).unwrap()));
        let nested = AlertIf::parse("report.items >= 2").unwrap();
        assert_eq!(
            nested.observe(&serde_json::json!({"report": {"items": [1, 2]}})),
            Some(2.0)
        );
        assert_eq!(nested.observe(&serde_json::json!({"report": "x"})), None);
        for bad in [
            "count",
            "count >",
            "count ~ 1",
            "count > x",
            ". > 1",
            "count > inf",
        ] {
            assert!(AlertIf::parse(bad).is_err(), "{bad:?} parsed");
        }
    }
}
