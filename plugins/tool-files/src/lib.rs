//! File tools over the directories the host preopened for this plugin.
//!
//! Paths are guest paths such as `/data/notes.txt`: the host decides which host
//! directories appear under which guest paths, and Rust's std on wasm32-wasip2 resolves
//! an absolute path against those preopens. Nothing outside them is reachable.
//!
//! `write` creates or overwrites; `create` only creates (it fails if anything is at the
//! path), so a hook can let an agent add a file where it may not change one (the test
//! ratchet lets `files.create` add new tests).

use std::fs;
use std::io::Read;

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, Value, failed, invalid, json, output, spec,
    unknown_tool,
};

/// `read` returns at most this many bytes.
const MAX_READ: u64 = 1024 * 1024;
/// `list` returns at most this many entries.
const MAX_ENTRIES: usize = 10_000;

struct Files;

fn path_schema(description: &str) -> Value {
    json!({
        "type": "object",
        "properties": { "path": { "type": "string", "description": description } },
        "required": ["path"],
        "additionalProperties": false
    })
}

impl Guest for Files {
    fn list_tools() -> Vec<ToolSpec> {
        vec![
            spec(
                "list",
                "Lists a directory. Returns {\"entries\": [{\"name\", \"kind\": \"file\"|\"dir\"|\"symlink\", \"size\"}]} \
                 sorted by name.",
                path_schema("Directory to list, as a guest path such as /data."),
                "read:file:list",
                false,
                true,
            ),
            spec(
                "read",
                "Reads a UTF-8 text file of at most 1 MiB. Returns {\"content\": ...}.",
                path_schema("File to read, as a guest path such as /data/notes.txt."),
                "read:file:read",
                false,
                true,
            ),
            spec(
                "write",
                "Creates or overwrites a file with the given text. Returns {\"written\": bytes}.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "description": "File to write, as a guest path such as /data/notes.txt." },
                        "content": { "type": "string", "description": "The new content of the file." }
                    },
                    "required": ["path", "content"],
                    "additionalProperties": false
                }),
                "execute:file:write",
                true,
                true,
            ),
            spec(
                "create",
                "Creates a new file with the given text; fails, changing nothing, if anything \
                 already exists at the path (it never overwrites). Returns {\"written\": bytes}.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "description": "File to create, as a guest path such as /data/tests/new_test.py; it must not exist." },
                        "content": { "type": "string", "description": "The content of the new file." }
                    },
                    "required": ["path", "content"],
                    "additionalProperties": false
                }),
                "execute:file:create",
                true,
                false,
            ),
        ]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        let result = match tool.as_str() {
            "list" => list(&Input::parse_strict(&input, &["path"])?)?,
            "read" => read(&Input::parse_strict(&input, &["path"])?)?,
            "write" => write(&Input::parse_strict(&input, &["path", "content"])?)?,
            "create" => create(&Input::parse_strict(&input, &["path", "content"])?)?,
            _ => return Err(unknown_tool(&tool, &Self::list_tools())),
        };
        output(&result)
    }
}

fn path_field(input: &Input) -> Result<&str, ToolError> {
    let path = input.str("path")?;
    if path.is_empty() {
        return Err(invalid("field `path` must not be empty"));
    }
    Ok(path)
}

fn list(input: &Input) -> Result<Value, ToolError> {
    let path = path_field(input)?;
    let cannot = |e: std::io::Error| failed(format!("cannot list `{path}`: {e}"));
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in fs::read_dir(path).map_err(cannot)? {
        if entries.len() == MAX_ENTRIES {
            truncated = true;
            break;
        }
        let entry = entry.map_err(cannot)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => "symlink",
            Ok(t) if t.is_dir() => "dir",
            Ok(t) if t.is_file() => "file",
            _ => "other",
        };
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        entries.push((name, kind, size));
    }
    entries.sort();
    let entries: Vec<Value> = entries
        .into_iter()
        .map(|(name, kind, size)| json!({ "name": name, "kind": kind, "size": size }))
        .collect();
    let mut result = json!({ "entries": entries });
    if truncated {
        result["truncated"] = json!(true);
    }
    Ok(result)
}

fn read(input: &Input) -> Result<Value, ToolError> {
    let path = path_field(input)?;
    let cannot = |e: std::io::Error| failed(format!("cannot read `{path}`: {e}"));
    let file = fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if meta.is_dir() {
        return Err(failed(format!(
            "cannot read `{path}`: it is a directory (use `list`)"
        )));
    }
    if meta.len() > MAX_READ {
        return Err(failed(format!(
            "cannot read `{path}`: it is {} bytes, and `read` returns at most {MAX_READ} bytes (1 MiB)",
            meta.len()
        )));
    }
    // The file may grow after the size check: never read more than the cap.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_READ + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_READ {
        return Err(failed(format!(
            "cannot read `{path}`: it is larger than {MAX_READ} bytes (1 MiB), the most `read` returns"
        )));
    }
    let content = String::from_utf8(bytes).map_err(|e| {
        failed(format!(
            "cannot read `{path}`: it is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok(json!({ "content": content }))
}

fn write(input: &Input) -> Result<Value, ToolError> {
    let path = path_field(input)?;
    let content = input.str("content")?;
    fs::write(path, content).map_err(|e| failed(format!("cannot write `{path}`: {e}")))?;
    Ok(json!({ "written": content.len() }))
}

/// A new file only: opened with `create_new` (`O_EXCL`), so the check that
/// nothing is there and the creation are one step, and an existing file (or
/// a symlink, even a dangling one) is left as it was.
fn create(input: &Input) -> Result<Value, ToolError> {
    use std::io::Write;
    let path = path_field(input)?;
    let content = input.str("content")?;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => failed(format!(
                "cannot create `{path}`: it already exists (`create` never overwrites; `write` does)"
            )),
            _ => failed(format!("cannot create `{path}`: {e}")),
        })?;
    file.write_all(content.as_bytes())
        .map_err(|e| failed(format!("cannot write `{path}`: {e}")))?;
    Ok(json!({ "written": content.len() }))
}

glovebox_plugin_sdk::export!(Files);
