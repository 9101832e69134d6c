//! `glovebox operation`: any operation of the registry
//! (`glovebox::operations`) by name, its arguments as a JSON object and its
//! output as JSON, the same the HTTP API takes and gives. Without a name it
//! lists them; `--schema` prints an operation's argument and output schemas.
//!
//! While a server holds the data dir the command runs inside it over the
//! control socket (`control/`) as every store command does, as the
//! operator at the socket (`cli:<uid>`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use glovebox::operations::{self, Method};
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::exit::Exit;
use crate::output::print_json;

pub async fn run(
    config: &Path,
    name: Option<String>,
    args: Option<String>,
    schema: bool,
) -> Result<ExitCode> {
    let Some(name) = name else {
        list()?;
        return Ok(ExitCode::SUCCESS);
    };
    let Some(entry) = operations::named(&name) else {
        err!("error: no operation `{name}`: `glovebox operation` lists them");
        return Ok(Exit::Usage.into());
    };
    if schema {
        let mut generator = SchemaSettings::draft2020_12().into_generator();
        let output = entry.output_schema(&mut generator);
        print_json(&json!({
            "operation": entry.name,
            "arguments": entry.input_schema(),
            "output": output,
            "$defs": generator.take_definitions(true),
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let args: Value = match args.as_deref() {
        None => json!({}),
        Some(text) => match serde_json::from_str(text) {
            Ok(value @ Value::Object(_)) => value,
            Ok(_) | Err(_) => {
                err!(
                    "error: `--args` is not a JSON object: give the arguments as one (`--args '{{\"id\": \"ap-…\"}}'`; `glovebox operation {name} --schema` shows them)"
                );
                return Ok(Exit::Usage.into());
            }
        },
    };
    match crate::operate::call(config, entry, args).await? {
        Ok(output) => {
            print_json(&output)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(crate::operation_refused(&e)),
    }
}

/// Every operation: its name, its route in the HTTP API, what it does.
fn list() -> Result<()> {
    for entry in operations::all() {
        let route = entry
            .http
            .map(|r| {
                let method = match r.method {
                    Method::Get => "GET",
                    Method::Post => "POST",
                };
                format!("{method} /api/v1{}", r.path)
            })
            .unwrap_or_default();
        out!("{:20} {:42} {}", entry.name, route, entry.summary);
    }
    Ok(())
}
