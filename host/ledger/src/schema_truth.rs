//! Checks, for the tests, that the JSON Schemas the ledger's types publish
//! (with the `schemars` feature: the MCP tools' and the HTTP API's output
//! schemas) say what serde really writes: a value of a type, serialized,
//! must fit the schema schemars generates for that type.
//!
//! Why a test and not care: a schema is derived from the type's fields, but
//! serde's attributes (`flatten`, `tag`, `skip_serializing_if`, `default`)
//! decide the bytes, and a schema that disagrees with them is found only by
//! the client it misleads. Each value is checked against the schema as
//! schemars writes it for both of its contracts: what deserializes (the
//! generator's default, which the operations' schemas use) and what
//! serializes. Checked strictly: an object may hold only the fields its
//! schema names (see [`strict`]), so a field serde writes and the schema
//! leaves out fails too.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use jsonschema::Validator;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde_json::Value;

/// `T`'s root schema (draft 2020-12, with its definitions), for
/// deserializing or, when `serialize`, for serializing.
pub(crate) fn schema_of<T: JsonSchema>(serialize: bool) -> Value {
    let settings = SchemaSettings::draft2020_12();
    let settings = if serialize {
        settings.for_serialize()
    } else {
        settings
    };
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The validators of `T`'s schemas, made once for many values.
pub(crate) struct Fits<T> {
    contracts: Vec<(&'static str, Validator)>,
    of: PhantomData<fn(&T)>,
}

impl<T: JsonSchema + Serialize> Fits<T> {
    pub(crate) fn new() -> Fits<T> {
        let contracts = [("deserialize", false), ("serialize", true)]
            .into_iter()
            .map(|(contract, serialize)| {
                let mut schema = schema_of::<T>(serialize);
                strict(&mut schema);
                let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| {
                    panic!(
                        "the {contract} schema of {} is not a valid JSON Schema: {e}",
                        T::schema_name()
                    )
                });
                (contract, validator)
            })
            .collect();
        Fits {
            contracts,
            of: PhantomData,
        }
    }

    /// Panics, naming `what`, the contract and every error, unless `value`
    /// as serde_json writes it fits both schemas.
    #[track_caller]
    pub(crate) fn check(&self, what: &str, value: &T) {
        let json = serde_json::to_value(value).expect("the value serializes");
        for (contract, validator) in &self.contracts {
            let errors = errors(validator, &json);
            assert!(
                errors.is_empty(),
                "{what} does not fit the {contract} schema of {}:\n  {}\nthe value: {json}",
                T::schema_name(),
                errors.join("\n  ")
            );
        }
    }
}

/// The validators of each variant of `T`, an internally tagged enum, by
/// its `tag`'s value (its schema is a `oneOf` of them, for deserializing):
/// where `T`'s whole schema only says that no variant fits a value, its
/// variant's own says why.
pub(crate) fn variants<T: JsonSchema>(tag: &str) -> BTreeMap<String, Validator> {
    let root = schema_of::<T>(false);
    let Some(Value::Array(variants)) = root.get("oneOf") else {
        panic!("the schema of {} is not a oneOf: {root}", T::schema_name());
    };
    variants
        .iter()
        .map(|variant| {
            let name = variant
                .get("properties")
                .and_then(|p| p.get(tag))
                .and_then(|t| t.get("const"))
                .and_then(Value::as_str)
                .unwrap_or_else(|| {
                    panic!(
                        "a variant of {} without a `{tag}`: {variant}",
                        T::schema_name()
                    )
                })
                .to_string();
            let mut schema = variant.clone();
            if let (Value::Object(o), Some(defs)) = (&mut schema, root.get("$defs")) {
                o.insert("$defs".into(), defs.clone());
            }
            strict(&mut schema);
            let validator = jsonschema::validator_for(&schema)
                .unwrap_or_else(|e| panic!("the schema of variant `{name}` is not valid: {e}"));
            (name, validator)
        })
        .collect()
}

/// Every error of `value` against `validator`, each with where it is.
pub(crate) fn errors(validator: &Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("at `{}`: {e}", e.instance_path()))
        .collect()
}

/// Makes `schema` refuse the fields it does not name: every object schema
/// with `properties` and no word on other fields gets
/// `unevaluatedProperties: false`. Not a definition that is a part of
/// another object (a `$ref` beside `properties`: an internally tagged
/// enum's newtype variant, whose `type` the definition does not name): the
/// object that refers to it is made strict, and its `$ref` counts as
/// evaluated there.
fn strict(schema: &mut Value) {
    fn parts(schema: &Value, found: &mut std::collections::BTreeSet<String>) {
        match schema {
            Value::Object(o) => {
                if o.contains_key("properties")
                    && let Some(Value::String(r)) = o.get("$ref")
                    && let Some(name) = r.strip_prefix("#/$defs/")
                {
                    found.insert(name.to_string());
                }
                o.values().for_each(|v| parts(v, found));
            }
            Value::Array(a) => a.iter().for_each(|v| parts(v, found)),
            _ => {}
        }
    }
    fn close(schema: &mut Value) {
        match schema {
            Value::Object(o) => {
                if o.contains_key("properties")
                    && !o.contains_key("additionalProperties")
                    && !o.contains_key("unevaluatedProperties")
                {
                    o.insert("unevaluatedProperties".into(), Value::Bool(false));
                }
                o.values_mut().for_each(close);
            }
            Value::Array(a) => a.iter_mut().for_each(close),
            _ => {}
        }
    }
    let mut found = std::collections::BTreeSet::new();
    parts(schema, &mut found);
    let mut open = serde_json::Map::new();
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for name in &found {
            if let Some(def) = defs.remove(name) {
                open.insert(name.clone(), def);
            }
        }
    }
    close(schema);
    // The parts go back as they were, their own inner objects made strict.
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for (name, mut def) in open {
            if let Value::Object(o) = &mut def {
                for v in o.values_mut() {
                    close(v);
                }
            }
            defs.insert(name, def);
        }
    }
}
