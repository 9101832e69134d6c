//! The subset match of a case's expected output: [`subset`].

use serde_json::Value;

/// Where an output differs from the fragment expected of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The JSON path to it, `$` for the whole output (`$.items[2].name`).
    pub path: String,
    /// What was expected there.
    pub expected: Value,
    /// What was there (`None`: the key is missing).
    pub actual: Option<Value>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.actual {
            None => write!(
                f,
                "at `{}`: expected {}, but it is missing",
                self.path, self.expected
            ),
            Some(actual) => write!(
                f,
                "at `{}`: expected {}, got {actual}",
                self.path, self.expected
            ),
        }
    }
}

/// Whether `actual` holds the fragment `expected`: every key of an expected
/// object is in the actual object with a value that holds the expected one
/// (other keys are ignored); an array holds another of the same length
/// whose items hold its items, in order; anything else must be equal.
/// `Err` names the first place where it does not.
pub fn subset(expected: &Value, actual: &Value) -> Result<(), Mismatch> {
    within(expected, actual, "$")
}

fn within(expected: &Value, actual: &Value, path: &str) -> Result<(), Mismatch> {
    let mismatch = || Mismatch {
        path: path.to_string(),
        expected: expected.clone(),
        actual: Some(actual.clone()),
    };
    match (expected, actual) {
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                let at = format!("{path}.{key}");
                match have.get(key) {
                    Some(got) => within(value, got, &at)?,
                    None => {
                        return Err(Mismatch {
                            path: at,
                            expected: value.clone(),
                            actual: None,
                        });
                    }
                }
            }
            Ok(())
        }
        (Value::Array(want), Value::Array(have)) if want.len() == have.len() => {
            for (i, (value, got)) in want.iter().zip(have).enumerate() {
                within(value, got, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ if expected == actual => Ok(()),
        _ => Err(mismatch()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_fragment_holds_when_its_keys_match_and_names_the_first_that_does_not() {
        let actual = json!({"content": "hi", "size": 2, "items": [{"n": 1}, {"n": 2}]});
        assert!(subset(&json!({"content": "hi"}), &actual).is_ok());
        assert!(subset(&json!({"items": [{}, {"n": 2}]}), &actual).is_ok());
        let wrong = subset(&json!({"items": [{}, {"n": 3}]}), &actual).unwrap_err();
        assert_eq!(wrong.path, "$.items[1].n");
        let missing = subset(&json!({"nope": 1}), &actual).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "at `$.nope`: expected 1, but it is missing"
        );
        // Arrays are compared whole, item by item: a shorter one does not hold.
        assert!(subset(&json!({"items": [{}]}), &actual).is_err());
    }
}
