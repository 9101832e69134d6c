//! Sizes, durations and fuel as operators write them: `"64 MiB"` or `67108864`,
//! `"5s"` or `5000` (milliseconds), `1000000` or `"off"`.
//!
//! A text that is not one is a [`SizeError`] or a [`DurationError`] quoting
//! it; the config adds the key and what to write.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// Why a text is not a size.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SizeError {
    /// Empty, negative, or not a number with a known unit.
    #[error("invalid size `{text}`")]
    Invalid { text: String },
    /// More bytes than a `u64` holds.
    #[error("size `{text}` is too large")]
    TooLarge { text: String },
}

/// Why a text is not a duration: not a number with a unit (`5s`, `250ms`,
/// `1m 30s`).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[error("invalid duration `{text}`")]
pub struct DurationError {
    /// The text as given.
    pub text: String,
}

/// Why a text is not fuel: neither an integer nor `"off"`.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[error("invalid fuel `{text}`")]
pub(super) struct FuelError {
    /// The text as given.
    pub text: String,
}

/// Parses a size such as `"64 MiB"`, `"512KiB"`, `"1 GB"` or `"4096"` into bytes.
///
/// Binary units (`KiB`, `MiB`, `GiB`) are powers of 1024, decimal ones (`KB`, `MB`, `GB`)
/// powers of 1000; units are case-insensitive.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let trimmed = text.trim();
    let invalid = || SizeError::Invalid {
        text: text.to_string(),
    };
    if trimmed.is_empty() || trimmed.starts_with('-') {
        return Err(invalid());
    }
    let bytes = trimmed
        .parse::<bytesize::ByteSize>()
        .map_err(|_| invalid())?
        .as_u64();
    // bytesize saturates on overflow instead of failing.
    if bytes == u64::MAX && trimmed.parse::<u64>() != Ok(u64::MAX) {
        return Err(SizeError::TooLarge {
            text: text.to_string(),
        });
    }
    Ok(bytes)
}

/// Parses a duration such as `"5s"`, `"250ms"`, `"2m"` or `"1m 30s"`.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    humantime::parse_duration(text.trim()).map_err(|_| DurationError {
        text: text.to_string(),
    })
}

/// Formats a byte count the way an operator would write it: `64 MiB`, `1536 B`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(&str, u32); 4] = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    for (unit, shift) in UNITS {
        if bytes != 0 && bytes.trailing_zeros() >= shift {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} B")
}

/// A byte count as people read it, to a tenth and without a trailing `.0`:
/// `259.4 MiB`, `3 TiB`, `512 B` (a
/// configured value is written exactly, by [`format_size`]).
pub fn approximate_size(bytes: u64) -> String {
    const UNITS: [(&str, u32); 6] = [
        ("EiB", 60),
        ("PiB", 50),
        ("TiB", 40),
        ("GiB", 30),
        ("MiB", 20),
        ("KiB", 10),
    ];
    match UNITS.iter().find(|(_, shift)| bytes >> shift != 0) {
        Some((unit, shift)) => {
            let text = format!("{:.1}", bytes as f64 / (1u64 << shift) as f64);
            format!("{} {unit}", text.strip_suffix(".0").unwrap_or(&text))
        }
        None => format!("{bytes} B"),
    }
}

/// A value written as a non-negative integer or as a text, as [`Size`],
/// [`Millis`] and [`Fuel`] are; a text that is not one is refused with
/// the text parser's own error (`Why`).
struct IntegerOrText<T, Why> {
    /// What a value is: `expecting`'s answer.
    expecting: &'static str,
    /// What a negative integer is said not to be: `size -1 is negative`.
    noun: &'static str,
    integer: fn(u64) -> T,
    text: fn(&str) -> Result<T, Why>,
}

impl<T, Why: fmt::Display> Visitor<'_> for IntegerOrText<T, Why> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        u64::try_from(v)
            .map(self.integer)
            .map_err(|_| E::custom(format!("{} {v} is negative", self.noun)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Ok((self.integer)(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.text)(v).map_err(E::custom)
    }
}

/// A size in bytes: an integer, or a string with a unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IntegerOrText {
            expecting: "a size: an integer number of bytes or a string like \"64 MiB\"",
            noun: "size",
            integer: Size,
            text: |v| parse_size(v).map(Size),
        })
    }
}

/// A duration: a string with a unit, or an integer number of milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Millis(pub Duration);

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IntegerOrText {
            expecting: "a duration: a string like \"5s\" or an integer number of milliseconds",
            noun: "duration",
            integer: |ms| Millis(Duration::from_millis(ms)),
            text: |v| parse_duration(v).map(Millis),
        })
    }
}

/// Fuel: an integer amount, or `"off"` (which lets a plugin undo a fuel default).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Fuel {
    Off,
    Amount(u64),
}

impl<'de> Deserialize<'de> for Fuel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IntegerOrText {
            expecting: "a positive integer amount of fuel or \"off\"",
            noun: "fuel",
            integer: Fuel::Amount,
            text: |v| {
                if v.trim().eq_ignore_ascii_case("off") {
                    Ok(Fuel::Off)
                } else {
                    Err(FuelError {
                        text: v.to_string(),
                    })
                }
            },
        })
    }
}

/// What TOML accepts for a [`Size`], [`Millis`] and [`Fuel`], for the
/// config's JSON Schema (`docs/configuration.md` is made from it): their
/// parsing is written by hand above, so their schemas are too.
#[cfg(feature = "schemars")]
mod schemas {
    use std::borrow::Cow;

    use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

    use super::{Fuel, Millis, Size};

    impl JsonSchema for Size {
        fn schema_name() -> Cow<'static, str> {
            "Size".into()
        }

        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "A size: an integer number of bytes, or a string with a unit (`\"64 MiB\"`, `\"512KiB\"`, `\"1 GB\"`; KiB, MiB and GiB are powers of 1024, KB, MB and GB powers of 1000, case-insensitive).",
                "anyOf": [
                    { "type": "integer", "minimum": 0 },
                    { "type": "string", "examples": ["64 MiB", "512KiB", "1 GB"] }
                ]
            })
        }
    }

    impl JsonSchema for Millis {
        fn schema_name() -> Cow<'static, str> {
            "Duration".into()
        }

        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "A duration: a string with a unit (`\"5s\"`, `\"250ms\"`, `\"2m\"`, `\"1m 30s\"`, `\"30d\"`), or an integer number of milliseconds.",
                "anyOf": [
                    { "type": "integer", "minimum": 0 },
                    { "type": "string", "examples": ["5s", "250ms", "2m", "1m 30s"] }
                ]
            })
        }
    }

    impl JsonSchema for Fuel {
        fn schema_name() -> Cow<'static, str> {
            "Fuel".into()
        }

        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "Fuel: a positive integer amount (roughly, instructions), or `\"off\"` for no metering.",
                "anyOf": [
                    { "type": "integer", "minimum": 1 },
                    { "const": "off" }
                ]
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_size("64 MiB"), Ok(64 << 20));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("1 GB"), Ok(1_000_000_000));
        assert_eq!(parse_size(" 2 gib "), Ok(2 << 30));
        assert_eq!(parse_size("1.5 KiB"), Ok(1536));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("10 B"), Ok(10));
    }

    #[test]
    fn sizes_for_people_are_rounded_to_a_tenth_of_their_largest_unit() {
        assert_eq!(approximate_size(272_040_856), "259.4 MiB");
        assert_eq!(approximate_size(1023), "1023 B");
        assert_eq!(approximate_size(1536), "1.5 KiB");
        assert_eq!(approximate_size(3 << 40), "3 TiB");
        assert_eq!(approximate_size(256 << 20), "256 MiB");
        assert_eq!(approximate_size((9 << 30) - (200 << 20)), "8.8 GiB");
        assert_eq!(approximate_size(1 << 60), "1 EiB");
    }

    #[test]
    fn bad_sizes_are_rejected() {
        for bad in [
            "", "  ", "MiB", "64 MBs", "-1 MiB", "sixty", "1.2.3 KB", "64 MiB x",
        ] {
            let error = parse_size(bad).unwrap_err().to_string();
            assert!(error.contains(&format!("`{bad}`")), "{bad:?}: {error}");
        }
        // bytesize would saturate this to u64::MAX.
        let too_large = parse_size("100000 EiB").unwrap_err();
        assert_eq!(too_large.to_string(), "size `100000 EiB` is too large");
        assert!(matches!(too_large, SizeError::TooLarge { .. }));
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
        assert!(
            parse_duration("5").is_err(),
            "a bare number string has no unit"
        );
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn sizes_format_in_the_largest_exact_unit() {
        assert_eq!(format_size(64 << 20), "64 MiB");
        assert_eq!(format_size(4 << 30), "4 GiB");
        assert_eq!(format_size(1536), "1536 B");
        assert_eq!(format_size(0), "0 B");
    }

    #[derive(serde::Deserialize)]
    struct Doc {
        size: Option<Size>,
        time: Option<Millis>,
        fuel: Option<Fuel>,
    }

    fn doc(text: &str) -> Result<Doc, toml::de::Error> {
        toml::from_str(text)
    }

    /// Why `text` is refused, as the value's deserializer says it (without
    /// where in the document).
    fn refusal(text: &str) -> String {
        doc(text).err().unwrap().message().to_owned()
    }

    #[test]
    fn values_accept_integers_and_strings() {
        let d = doc("size = 1024\ntime = 1500\nfuel = 7").unwrap();
        assert_eq!(d.size, Some(Size(1024)));
        assert_eq!(d.time, Some(Millis(Duration::from_millis(1500))));
        assert_eq!(d.fuel, Some(Fuel::Amount(7)));
        let d = doc("size = \"1 KiB\"\ntime = \"2s\"\nfuel = \"off\"").unwrap();
        assert_eq!(d.size, Some(Size(1024)));
        assert_eq!(d.time, Some(Millis(Duration::from_secs(2))));
        assert_eq!(d.fuel, Some(Fuel::Off));
    }

    #[test]
    fn values_reject_negatives_and_other_types() {
        assert_eq!(refusal("size = -1"), "size -1 is negative");
        assert_eq!(refusal("time = -5"), "duration -5 is negative");
        assert_eq!(refusal("fuel = -5"), "fuel -5 is negative");
        assert_eq!(refusal("fuel = \"lots\""), "invalid fuel `lots`");
        assert_eq!(refusal("size = \"lots\""), "invalid size `lots`");
        assert_eq!(refusal("time = \"lots\""), "invalid duration `lots`");
        let error = refusal("size = true");
        assert!(error.contains("expected a size"), "{error}");
        let error = refusal("time = 1.5");
        assert!(error.contains("expected a duration"), "{error}");
    }
}
