//! The HTTP API's OpenAPI 3.1 document, made from the operation registry
//! (`glovebox::operations`): a path per operation the API serves, its
//! arguments as path and query parameters (a read) or a JSON body (a
//! change), its output's schema, and the one error shape every operation
//! answers with. Nothing here is written per operation: a new operation in
//! the registry is in the document.

use glovebox::operations::{Entry, Method, OperationError, all};
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::API_PATH;

/// A generator whose references point into the document's components.
pub(crate) fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator()
}

/// The document (see the module docs).
pub fn document() -> Value {
    let mut generator = generator();
    let mut paths = Map::new();
    for entry in all() {
        let Some(route) = entry.http else { continue };
        let operation = operation(entry, &mut generator);
        let method = match route.method {
            Method::Get => "get",
            Method::Post => "post",
        };
        paths
            .entry(route.path)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("a path item is an object")
            .insert(method.to_string(), operation);
    }
    let error = generator.subschema_for::<OperationError>();
    let mut schemas = generator.take_definitions(true);
    schemas.insert(
        "ErrorAnswer".to_string(),
        json!({
            "type": "object",
            "description": "Why the operation failed: the same `kind` and `message` on every surface.",
            "required": ["error"],
            "properties": {"error": error},
        }),
    );
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Glovebox operator API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The operations of a running Glovebox server, for operators' automation. Every request needs an operator principal's token (`Authorization: Bearer gbx_…`); without declared principals, only the user who started the server, on loopback. A POST from a browser must come from the admin listener's own origin.",
        },
        "servers": [{"url": API_PATH}],
        "security": [{"operator": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "operator": {"type": "http", "scheme": "bearer", "description": "An operator principal's token (`glovebox principal add NAME --kind operator` prints one)."}
            },
            "responses": {
                "Error": {
                    "description": "The operation failed: `error.kind` says how, `error.message` names the culprit and the fix.",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorAnswer"}}}
                },
                "Unauthorized": {"description": "No operator's token (or a wrong one)."}
            }
        }
    });
    sanitize_names(&mut document);
    document
}

/// The table of `docs/operators/api.md` (between its `<!-- operations -->`
/// markers): a row per operation the API serves, its route, its arguments
/// besides the path's (the required ones marked) and its summary. A test
/// holds the page to it.
pub fn operations_table() -> String {
    let mut table =
        String::from("| route | operation | arguments | what it does |\n|---|---|---|---|\n");
    for entry in all() {
        let Some(route) = entry.http else { continue };
        let method = match route.method {
            Method::Get => "GET",
            Method::Post => "POST",
        };
        let definition = Value::Object(entry.input_schema());
        let required: Vec<&str> = definition["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let in_path: Vec<&str> = route.path_arguments().collect();
        let arguments: Vec<String> = definition["properties"]
            .as_object()
            .map(|p| {
                p.keys()
                    .filter(|k| !in_path.contains(&k.as_str()))
                    .map(|k| {
                        if required.contains(&k.as_str()) {
                            format!("`{k}` (required)")
                        } else {
                            format!("`{k}`")
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        table += &format!(
            "| `{method} {API_PATH}{}` | `{}`{} | {} | {} |\n",
            route.path,
            entry.name,
            match entry.mcp {
                Some(tool) => format!(" (MCP: `{tool}`)"),
                None => String::new(),
            },
            if arguments.is_empty() {
                "-".to_string()
            } else {
                arguments.join(", ")
            },
            entry.summary
        );
    }
    table
}

fn operation(entry: &Entry, generator: &mut SchemaGenerator) -> Value {
    let route = entry.http.expect("served");
    // Its arguments as its MCP tool and `glovebox operation --schema` give
    // them: one writing of them on every surface.
    let definition = Value::Object(entry.input_schema());
    let required: Vec<String> = definition["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let properties = definition["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let in_path: Vec<&str> = route.path_arguments().collect();
    let mut parameters = Vec::new();
    let mut body = Map::new();
    for (name, schema) in &properties {
        let place = if in_path.contains(&name.as_str()) {
            "path"
        } else if route.method == Method::Get {
            "query"
        } else {
            body.insert(name.clone(), schema.clone());
            continue;
        };
        let mut parameter = json!({
            "name": name,
            "in": place,
            "required": place == "path" || required.contains(name),
            "schema": without_description(schema),
        });
        if let Some(description) = schema.get("description") {
            parameter["description"] = description.clone();
        }
        parameters.push(parameter);
    }
    let output = entry.output_schema(generator);
    let family = entry.name.split('.').next().unwrap_or(entry.name);
    let mut operation = json!({
        "operationId": entry.name,
        "summary": entry.summary,
        "description": entry.description,
        "tags": [family],
        "responses": {
            "200": {
                "description": entry.summary,
                "content": {"application/json": {"schema": output}}
            },
            "401": {"$ref": "#/components/responses/Unauthorized"},
            "default": {"$ref": "#/components/responses/Error"}
        }
    });
    if !parameters.is_empty() {
        operation["parameters"] = Value::Array(parameters);
    }
    if route.method == Method::Post {
        let body_required: Vec<&String> =
            required.iter().filter(|r| body.contains_key(*r)).collect();
        operation["requestBody"] = json!({
            "required": !body_required.is_empty(),
            "content": {"application/json": {"schema": {
                "type": "object",
                "additionalProperties": false,
                "required": body_required,
                "properties": body,
            }}}
        });
    }
    operation
}

fn without_description(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(object) = schema.as_object_mut() {
        object.remove("description");
    }
    schema
}

/// OpenAPI allows `[A-Za-z0-9._-]` in a component's name; a generic type's
/// schema name (`Page<Approval>`) is made to fit, and its references with it.
fn sanitize_names(document: &mut Value) {
    fn fit(name: &str) -> String {
        name.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
            .trim_end_matches('_')
            .to_string()
    }
    fn walk(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get_mut("$ref")
                    && let Some(name) = r.strip_prefix("#/components/schemas/")
                {
                    *r = format!("#/components/schemas/{}", fit(name));
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    if let Some(Value::Object(schemas)) = document.pointer_mut("/components/schemas") {
        let taken = std::mem::take(schemas);
        *schemas = taken.into_iter().map(|(k, v)| (fit(&k), v)).collect();
    }
    walk(document);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/operators/api.md` lists what the registry serves:
    /// `GLOVEBOX_WRITE_DOCS=1 cargo test -p glovebox-dashboard` rewrites
    /// its table when an operation changed.
    #[test]
    fn the_api_page_lists_every_operation_as_the_registry_says() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/operators/api.md");
        let page = std::fs::read_to_string(&path).unwrap();
        let (start, end) = ("<!-- operations -->\n", "<!-- /operations -->");
        let (head, rest) = page
            .split_once(start)
            .expect("the page has its operations markers");
        let (_, tail) = rest
            .split_once(end)
            .expect("the page closes its operations markers");
        let wanted = format!("{head}{start}{}{end}{tail}", operations_table());
        if std::env::var_os("GLOVEBOX_WRITE_DOCS").is_some() {
            std::fs::write(&path, &wanted).unwrap();
        }
        assert!(
            page == wanted,
            "docs/operators/api.md's table is stale: run `GLOVEBOX_WRITE_DOCS=1 cargo test -p glovebox-dashboard` to rewrite it; it should be:\n{}",
            operations_table()
        );
    }

    #[test]
    fn every_served_operation_is_in_the_document_with_its_schemas_resolvable() {
        let document = document();
        let schemas = document["components"]["schemas"].as_object().unwrap();
        let mut operations = 0;
        for entry in all() {
            let Some(route) = entry.http else { continue };
            let method = match route.method {
                Method::Get => "get",
                Method::Post => "post",
            };
            let operation = &document["paths"][route.path][method];
            assert_eq!(operation["operationId"], entry.name, "{}", route.path);
            operations += 1;
        }
        assert!(operations > 0);
        // Every reference names a component that is there, by a name
        // OpenAPI allows.
        fn refs(value: &Value, found: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(r)) = map.get("$ref") {
                        found.push(r.clone());
                    }
                    map.values().for_each(|v| refs(v, found));
                }
                Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        refs(&document, &mut found);
        for r in found {
            if let Some(name) = r.strip_prefix("#/components/schemas/") {
                assert!(schemas.contains_key(name), "{r} is not a component");
                assert!(
                    name.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
                    "{name}"
                );
            } else {
                assert!(r.starts_with("#/components/responses/"), "{r}");
            }
        }
    }
}
