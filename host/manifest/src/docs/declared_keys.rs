//! The keys of a struct in the order it declares them, asked of serde: a
//! JSON Schema's properties are an object, which keeps no order, and the
//! page lists a table's keys as its struct does.

use serde::Deserialize;

/// The keys of struct `T` in declaration order: a deserializer that stops
/// at the struct serde asks it for, and keeps the field names it is given.
pub(super) fn declared_keys<'de, T: Deserialize<'de>>() -> Vec<String> {
    use serde::de::{self, Visitor};

    #[derive(Debug)]
    struct Fields(Vec<String>);
    impl std::fmt::Display for Fields {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "fields {:?}", self.0)
        }
    }
    impl std::error::Error for Fields {}
    impl de::Error for Fields {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Fields(Vec::new())
        }
    }
    struct Introspect;
    impl<'de> de::Deserializer<'de> for Introspect {
        type Error = Fields;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Fields> {
            Err(Fields(Vec::new()))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Fields> {
            Err(Fields(fields.iter().map(|f| f.to_string()).collect()))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    match T::deserialize(Introspect) {
        Err(Fields(fields)) if !fields.is_empty() => fields,
        _ => panic!(
            "{} is not a struct with named fields",
            std::any::type_name::<T>()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::RawFs;

    #[test]
    fn declared_keys_are_in_the_structs_order() {
        assert_eq!(
            declared_keys::<RawFs>(),
            ["host", "workspace", "guest", "access", "only"].map(String::from)
        );
    }
}
