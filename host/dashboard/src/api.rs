//! The HTTP API for operators' automation: every operation of the registry
//! (`glovebox::operations`) that declares a route, served under `/api/v1`
//! on the admin listener, and the OpenAPI document made from the same
//! registry at `/api/v1/openapi.json` (`openapi.rs`).
//!
//! Who may call it is decided before any of this runs, by the listener's one
//! guard (`auth.rs`): the `Host` check, the same-origin check of every POST,
//! and an operator principal's token (or the server's own user, without
//! declared principals). What each operation may do for that operator is
//! the registry's and the caller's scope's to decide, as on every surface.
//!
//! A read takes its arguments from the path and the query string (read by
//! the argument's schema type: `limit=5` is a number, `all=true` a boolean,
//! a repeated key a list); a change from the path and a JSON object in the
//! body. An answer is the operation's output as JSON, or
//! `{"error": {"class", "kind", "message"}}` with the status its class
//! means ([`status`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Extension;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use glovebox::operations::{Entry, ErrorClass, Method, OperationError, all};
use serde_json::{Map, Value, json};

use crate::auth::Operator;
use crate::{API_PATH, App};

/// The HTTP status an error of `class` answers with: here and nowhere else.
pub fn status(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::Invalid => StatusCode::BAD_REQUEST,
        ErrorClass::NotFound => StatusCode::NOT_FOUND,
        ErrorClass::NotAllowed => StatusCode::FORBIDDEN,
        ErrorClass::Conflict => StatusCode::CONFLICT,
        ErrorClass::Limited => StatusCode::TOO_MANY_REQUESTS,
        ErrorClass::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Failed => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A JSON answer.
fn json_answer(status: StatusCode, value: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn failure(e: &OperationError) -> Response {
    json_answer(status(e.class), &json!({ "error": e }))
}

/// The API's routes, one per operation the registry serves over HTTP.
pub(crate) fn routes(mut router: Router<Arc<App>>) -> Router<Arc<App>> {
    let document = Arc::new(crate::openapi::document());
    router = router.route(
        &format!("{API_PATH}/openapi.json"),
        get(move || async move { json_answer(StatusCode::OK, &document) }),
    );
    let mut generator = crate::openapi::generator();
    for entry in all() {
        let Some(route) = entry.http else { continue };
        let path = format!("{API_PATH}{}", route.path);
        // A route without `{name}` segments has no path parameters: `None`.
        type Params = Option<Path<HashMap<String, String>>>;
        let method = match route.method {
            Method::Get => {
                let kinds = Arc::new(kinds(&entry.args_object(&mut generator)));
                get(
                    move |State(app): State<Arc<App>>,
                          Extension(op): Extension<Operator>,
                          params: Params,
                          Query(query): Query<Vec<(String, String)>>| async move {
                        let params = params.map(|Path(p)| p).unwrap_or_default();
                        match read_args(&kinds, params, query) {
                            Ok(args) => answer(&app, &op, entry, args).await,
                            Err(e) => failure(&e),
                        }
                    },
                )
            }
            Method::Post => post(
                move |State(app): State<Arc<App>>,
                      Extension(op): Extension<Operator>,
                      params: Params,
                      body: Bytes| async move {
                    let params = params.map(|Path(p)| p).unwrap_or_default();
                    match body_args(params, &body) {
                        Ok(args) => answer(&app, &op, entry, args).await,
                        Err(e) => failure(&e),
                    }
                },
            ),
        };
        router = router.route(&path, method);
    }
    router
}

/// Runs `entry` as the operator with `args`.
async fn answer(app: &App, op: &Operator, entry: &'static Entry, args: Value) -> Response {
    tracing::info!(operation = entry.name, principal = %op.0.name, "api");
    let scope = app.gateway.scope(&op.0).with_jobs(&app.jobs);
    match entry.call(scope, args).await {
        Ok(output) => json_answer(StatusCode::OK, &output),
        Err(e) => failure(&e),
    }
}

/// How a query-string value of an argument is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Boolean,
    Integer,
    Number,
    List,
    Text,
}

/// Each argument's [`Kind`], from its schema's `type` (a nullable type
/// `["integer", "null"]` is read as its other type).
fn kinds(definition: &Value) -> HashMap<String, Kind> {
    let Some(properties) = definition["properties"].as_object() else {
        return HashMap::new();
    };
    properties
        .iter()
        .map(|(name, schema)| {
            let types: Vec<&str> = match &schema["type"] {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let kind = match types.iter().find(|t| **t != "null").copied() {
                Some("boolean") => Kind::Boolean,
                Some("integer") => Kind::Integer,
                Some("number") => Kind::Number,
                Some("array") => Kind::List,
                _ => Kind::Text,
            };
            (name.clone(), kind)
        })
        .collect()
}

/// A read's arguments: the path's, then the query string's, each read as
/// its schema says. An argument the operation does not take is left for
/// the operation to refuse by name.
fn read_args(
    kinds: &HashMap<String, Kind>,
    params: HashMap<String, String>,
    query: Vec<(String, String)>,
) -> Result<Value, OperationError> {
    let mut args: Map<String, Value> = params
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    for (name, text) in query {
        let kind = kinds.get(&name).copied().unwrap_or(Kind::Text);
        let bad = |what: &str| {
            OperationError::invalid(format!("the query's `{name}` = `{text}` is not {what}"))
        };
        let value = match kind {
            Kind::Boolean => match text.as_str() {
                "true" | "" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => return Err(bad("`true` or `false`")),
            },
            Kind::Integer => Value::from(text.parse::<i64>().map_err(|_| bad("an integer"))?),
            Kind::Number => json!(text.parse::<f64>().map_err(|_| bad("a number"))?),
            Kind::List => {
                match args
                    .entry(name.clone())
                    .or_insert_with(|| Value::Array(Vec::new()))
                {
                    Value::Array(items) => items.push(Value::String(text)),
                    _ => return Err(bad("a list item (the path gives it already)")),
                }
                continue;
            }
            Kind::Text => Value::String(text),
        };
        if args.insert(name.clone(), value).is_some() {
            return Err(OperationError::invalid(format!(
                "`{name}` is given twice (it takes one value)"
            )));
        }
    }
    Ok(Value::Object(args))
}

/// A change's arguments: a JSON object in the body (none: `{}`), and the
/// path's.
fn body_args(params: HashMap<String, String>, body: &[u8]) -> Result<Value, OperationError> {
    let mut args = if body.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(args)) => args,
            Ok(_) => {
                return Err(OperationError::invalid(
                    "the body is not a JSON object: send the arguments as one (`{\"reason\": \"…\"}`)",
                ));
            }
            Err(e) => {
                return Err(OperationError::invalid(format!(
                    "the body is not JSON ({e}): send the arguments as a JSON object"
                )));
            }
        }
    };
    for (name, value) in params {
        if args.get(&name).is_some_and(|v| v.as_str() != Some(&value)) {
            return Err(OperationError::invalid(format!(
                "`{name}` is given in the path and, differently, in the body: give it once"
            )));
        }
        args.insert(name, Value::String(value));
    }
    Ok(Value::Object(args))
}

/// `GET /api/v1` and anything under it that is no route: where to look.
pub(crate) async fn not_found() -> Response {
    failure(&OperationError::not_found(
        "no_route",
        format!("no such route: the API's routes are in {API_PATH}/openapi.json"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_read_by_their_schema_type() {
        let kinds = kinds(&json!({"properties": {
            "all": {"type": "boolean"},
            "limit": {"type": ["integer", "null"]},
            "tag": {"type": "array", "items": {"type": "string"}},
            "owner": {"type": ["string", "null"]},
        }}));
        let query = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let args = read_args(
            &kinds,
            HashMap::from([("id".to_string(), "ap-1".to_string())]),
            query(&[
                ("all", "true"),
                ("limit", "5"),
                ("tag", "a"),
                ("tag", "b"),
                ("owner", "7"),
            ]),
        )
        .unwrap();
        assert_eq!(
            args,
            json!({"id": "ap-1", "all": true, "limit": 5, "tag": ["a", "b"], "owner": "7"})
        );
        let e = read_args(&kinds, HashMap::new(), query(&[("limit", "many")])).unwrap_err();
        assert_eq!(e.class, ErrorClass::Invalid);
        assert!(
            e.message.contains("`limit` = `many` is not an integer"),
            "{e}"
        );
        let e = read_args(
            &kinds,
            HashMap::new(),
            query(&[("owner", "a"), ("owner", "b")]),
        )
        .unwrap_err();
        assert!(e.message.contains("`owner` is given twice"), "{e}");
    }

    #[test]
    fn a_body_is_a_json_object_and_the_path_wins_only_when_it_agrees() {
        let path = HashMap::from([("id".to_string(), "ap-1".to_string())]);
        assert_eq!(
            body_args(path.clone(), b" ").unwrap(),
            json!({"id": "ap-1"})
        );
        assert_eq!(
            body_args(path.clone(), br#"{"reason": "no"}"#).unwrap(),
            json!({"id": "ap-1", "reason": "no"})
        );
        let e = body_args(path.clone(), br#"{"id": "ap-2"}"#).unwrap_err();
        assert!(
            e.message
                .contains("in the path and, differently, in the body"),
            "{e}"
        );
        let e = body_args(path.clone(), b"[1]").unwrap_err();
        assert!(e.message.contains("not a JSON object"), "{e}");
        let e = body_args(path, b"{").unwrap_err();
        assert!(e.message.contains("the body is not JSON"), "{e}");
    }

    #[test]
    fn every_error_class_has_its_own_status() {
        let classes = [
            ErrorClass::Invalid,
            ErrorClass::NotFound,
            ErrorClass::NotAllowed,
            ErrorClass::Conflict,
            ErrorClass::Limited,
            ErrorClass::Unavailable,
            ErrorClass::Failed,
        ];
        let statuses: std::collections::BTreeSet<u16> =
            classes.iter().map(|c| status(*c).as_u16()).collect();
        assert_eq!(statuses.len(), classes.len());
    }
}
