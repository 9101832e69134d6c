//! Hostile: probes the filesystem. Each tool attempts one operation and reports what
//! happened as data, never as a tool error, so that a test can tell "denied by the
//! sandbox" from "the plugin broke":
//!
//! - success: `{"ok": true, "data": ...}`
//! - OS error: `{"ok": false, "error": "<io::Error display>"}`
//!
//! Tests use it for escapes (`../../etc/passwd`, absolute paths, symlinks out of the
//! preopen, symlink loops), for every kind of write into a read-only grant, and to show
//! that a plugin without a grant sees no preopens at all.
//!
//! `fill` writes without end (or `bytes` bytes) through each way WASI has to put
//! bytes in a file, and reports how far it got: the write quota's probe. It answers
//! `{"ok": bool, "written": n, "error"?: ...}`.

use std::fs;
use std::io;
use std::time::SystemTime;

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, Value, json, output, spec, unknown_tool,
};

struct HostileFs;

fn schema(fields: &[&str]) -> Value {
    let properties: glovebox_plugin_sdk::Map<String, Value> = fields
        .iter()
        .map(|f| ((*f).to_owned(), json!({ "type": "string" })))
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": fields,
        "additionalProperties": false
    })
}

/// (name, description, input fields, action, destructive)
const TOOLS: &[(&str, &str, &[&str], &str, bool)] = &[
    (
        "read",
        "Reads a file (lossy UTF-8).",
        &["path"],
        "read:hostile:fs",
        false,
    ),
    (
        "write",
        "Creates or overwrites a file.",
        &["path", "content"],
        "execute:hostile:fs",
        true,
    ),
    (
        "create",
        "Creates a new file; fails if it exists.",
        &["path"],
        "execute:hostile:fs",
        true,
    ),
    (
        "truncate",
        "Opens an existing file with truncation.",
        &["path"],
        "execute:hostile:fs",
        true,
    ),
    (
        "rename",
        "Renames `from` to `to`.",
        &["from", "to"],
        "execute:hostile:fs",
        true,
    ),
    (
        "hard-link",
        "Creates a hard link `to` pointing at `from`.",
        &["from", "to"],
        "execute:hostile:fs",
        true,
    ),
    (
        "symlink",
        "Creates a symlink `link` whose target is `target`.",
        &["target", "link"],
        "execute:hostile:fs",
        true,
    ),
    (
        "set-times",
        "Sets a file's modification time to now.",
        &["path"],
        "execute:hostile:fs",
        true,
    ),
    (
        "delete",
        "Removes a file.",
        &["path"],
        "execute:hostile:fs",
        true,
    ),
    (
        "mkdir",
        "Creates a directory.",
        &["path"],
        "execute:hostile:fs",
        true,
    ),
    (
        "rmdir",
        "Removes an empty directory.",
        &["path"],
        "execute:hostile:fs",
        true,
    ),
    (
        "list",
        "Lists the names in a directory, sorted.",
        &["path"],
        "read:hostile:fs",
        false,
    ),
    (
        "stat",
        "Metadata of a path, following symlinks.",
        &["path"],
        "read:hostile:fs",
        false,
    ),
    (
        "read-link",
        "Reads the target of a symlink.",
        &["path"],
        "read:hostile:fs",
        false,
    ),
    (
        "fill",
        "Writes `bytes` bytes (a decimal number) to `path` in 64 KiB chunks, `via` \
         `stream` (std's write), `append` (an append-mode file), `pwrite` \
         (`descriptor.write` at offsets) or `set-size` (grows the file); or \
         `bytes` empty entries under directory `path`, `via` `files` or `dirs`.",
        &["path", "bytes", "via"],
        "execute:hostile:fs",
        true,
    ),
    (
        "preopens",
        "Lists the guest paths of the preopened directories.",
        &[],
        "read:hostile:fs",
        false,
    ),
];

impl Guest for HostileFs {
    fn list_tools() -> Vec<ToolSpec> {
        TOOLS
            .iter()
            .map(|(name, description, fields, action, destructive)| {
                spec(
                    name,
                    &format!("Hostile filesystem probe: {description}"),
                    schema(fields),
                    action,
                    *destructive,
                    false,
                )
            })
            .collect()
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        let Some((_, _, fields, _, _)) = TOOLS.iter().find(|t| t.0 == tool) else {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        };
        let input = Input::parse_strict(&input, fields)?;
        let arg = |name: &str| input.str(name);
        if tool == "fill" {
            let bytes: u64 = arg("bytes")?
                .parse()
                .map_err(|_| ToolError::InvalidInput("`bytes` is a decimal number".to_string()))?;
            let mut written = 0u64;
            let result = fill(arg("path")?, bytes, arg("via")?, &mut written);
            return output(&match result {
                Ok(()) => json!({ "ok": true, "written": written }),
                Err(e) => json!({ "ok": false, "written": written, "error": e.to_string() }),
            });
        }
        let result: io::Result<Value> = match tool.as_str() {
            "read" => fs::read(arg("path")?).map(|b| json!(String::from_utf8_lossy(&b))),
            "write" => fs::write(arg("path")?, arg("content")?).map(|()| Value::Null),
            "create" => fs::File::create_new(arg("path")?).map(|_| Value::Null),
            "truncate" => fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(arg("path")?)
                .map(|_| Value::Null),
            "rename" => fs::rename(arg("from")?, arg("to")?).map(|()| Value::Null),
            "hard-link" => fs::hard_link(arg("from")?, arg("to")?).map(|()| Value::Null),
            "symlink" => symlink(arg("target")?, arg("link")?).map(|()| Value::Null),
            "set-times" => fs::OpenOptions::new()
                .write(true)
                .open(arg("path")?)
                .and_then(|f| f.set_modified(SystemTime::now()))
                .map(|()| Value::Null),
            "delete" => fs::remove_file(arg("path")?).map(|()| Value::Null),
            "mkdir" => fs::create_dir(arg("path")?).map(|()| Value::Null),
            "rmdir" => fs::remove_dir(arg("path")?).map(|()| Value::Null),
            "list" => list(arg("path")?),
            "stat" => fs::metadata(arg("path")?).map(|m| {
                json!({
                    "kind": if m.is_dir() { "dir" } else if m.is_file() { "file" } else { "other" },
                    "size": m.len(),
                    "readonly": m.permissions().readonly(),
                })
            }),
            "read-link" => fs::read_link(arg("path")?).map(|p| json!(p.to_string_lossy())),
            "preopens" => Ok(json!(
                wasip2::filesystem::preopens::get_directories()
                    .into_iter()
                    .map(|(_descriptor, path)| path)
                    .collect::<Vec<_>>()
            )),
            _ => return Err(unknown_tool(&tool, &Self::list_tools())),
        };
        output(&match result {
            Ok(data) => json!({ "ok": true, "data": data }),
            Err(e) => json!({ "ok": false, "error": e.to_string() }),
        })
    }
}

/// `symlink(target, link)`: std's `symlink_path` is unstable on WASI, so this does what
/// wasi-libc does: find the preopen that holds `link` and call `symlink-at` on it.
fn symlink(target: &str, link: &str) -> io::Result<()> {
    let (dir, relative) = preopen_of(link)?;
    dir.symlink_at(target, &relative)
        .map_err(|e| io::Error::other(format!("{}: {}", e.name(), e.message())))
}

/// Writes `bytes` bytes to `path` through `via`, counting what was written.
fn fill(path: &str, bytes: u64, via: &str, written: &mut u64) -> io::Result<()> {
    const CHUNK: u64 = 64 * 1024;
    let chunk = vec![b'x'; CHUNK as usize];
    let next = |written: u64| (bytes - written).min(CHUNK) as usize;
    match via {
        "stream" | "append" => {
            use std::io::Write;
            let mut file = if via == "append" {
                fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?
            } else {
                fs::File::create(path)?
            };
            while *written < bytes {
                let n = file.write(&chunk[..next(*written)])?;
                *written += n as u64;
            }
            file.flush()
        }
        "pwrite" => {
            use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
            let (dir, relative) = preopen_of(path)?;
            let file = dir
                .open_at(
                    PathFlags::empty(),
                    &relative,
                    OpenFlags::CREATE | OpenFlags::TRUNCATE,
                    DescriptorFlags::WRITE,
                )
                .map_err(wasi_error)?;
            while *written < bytes {
                let n = file
                    .write(&chunk[..next(*written)], *written)
                    .map_err(wasi_error)?;
                *written += n;
            }
            Ok(())
        }
        "set-size" => {
            let file = fs::File::create(path)?;
            file.set_len(bytes)?;
            *written = bytes;
            Ok(())
        }
        // Entries rather than bytes: `bytes` empty files (or directories)
        // `path/0`, `path/1`, ...; `written` counts the entries made.
        "files" | "dirs" => {
            while *written < bytes {
                let entry = format!("{path}/{written}");
                if via == "files" {
                    fs::File::create_new(&entry)?;
                } else {
                    fs::create_dir(&entry)?;
                }
                *written += 1;
            }
            Ok(())
        }
        other => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`via` is stream, append, pwrite, set-size, files or dirs, not `{other}`"),
        )),
    }
}

fn wasi_error(e: wasip2::filesystem::types::ErrorCode) -> io::Error {
    io::Error::other(format!("{}: {}", e.name(), e.message()))
}

/// The preopen that holds `path` (the longest), and `path` relative to it.
fn preopen_of(path: &str) -> io::Result<(wasip2::filesystem::types::Descriptor, String)> {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .filter_map(|(dir, guest_path)| {
            let rest = strip_dir_prefix(path, &guest_path)?;
            Some((guest_path.len(), dir, rest.to_owned()))
        })
        .max_by_key(|(len, _, _)| *len)
        .map(|(_, dir, rest)| (dir, rest))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no preopened directory contains `{path}`"),
            )
        })
}

/// `path` relative to the preopen `dir`, if `path` lies inside it.
fn strip_dir_prefix<'a>(path: &'a str, dir: &str) -> Option<&'a str> {
    if dir == "." || dir.is_empty() {
        return (!path.starts_with('/')).then_some(path);
    }
    let dir = dir.trim_end_matches('/');
    let rest = path.strip_prefix(dir)?;
    if rest.is_empty() {
        Some(".")
    } else {
        rest.strip_prefix('/').map(|r| r.trim_start_matches('/'))
    }
}

fn list(path: &str) -> io::Result<Value> {
    let mut names = fs::read_dir(path)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<io::Result<Vec<_>>>()?;
    names.sort();
    Ok(json!(names))
}

glovebox_plugin_sdk::export!(HostileFs);
