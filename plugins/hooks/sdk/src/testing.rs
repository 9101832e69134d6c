//! Helpers for hooks' native unit tests.

use crate::Request;
use alloc::string::String;
use alloc::vec::Vec;

/// A request for `tool` with `action`, from a session of `role`, with `input` (JSON
/// text), an estimated cost and the destructive flag; ids, tags and the principal
/// (`agent-1`) are placeholders; there is no project and no HTTP request.
pub fn request(
    tool: &str,
    action: &str,
    role: &str,
    input: &str,
    estimated_cost: f64,
    destructive: bool,
) -> Request {
    Request {
        call_id: String::from("call-1"),
        tool: String::from(tool),
        action: String::from(action),
        role: String::from(role),
        session: String::from("session-1"),
        input: String::from(input),
        estimated_cost,
        destructive,
        tags: Vec::new(),
        principal: String::from("agent-1"),
        project: None,
        http: None,
    }
}
