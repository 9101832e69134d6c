//! Glovebox's integration tests: one binary, a module per area. Every plugin
//! used here is built from `plugins/` by `tests/build.rs`.

#![forbid(unsafe_code)]

mod api;
mod approval_display;
mod approvals;
mod architecture;
mod billing;
mod blockers;
mod ceilings;
mod children;
mod cli;
mod code_js;
mod code_python;
mod completion;
mod cpu;
mod dashboard;
mod doctor;
mod drain;
mod examples;
mod fleet;
mod gate_plugins;
mod hooks;
mod http_limits;
mod identity;
mod job_records;
mod jobs;
mod malformed;
mod mcp;
mod mcp_conformance;
mod mcp_limits;
mod mcp_sdk;
mod mcp_ts;
mod memory;
mod memory_bank;
mod nats;
mod network;
mod notify;
mod notify_bounds;
mod oauth;
mod operator;
mod otlp;
mod pipeline;
mod principals;
mod quota;
mod regression;
mod rescue;
mod resources;
mod schedule;
mod scratch;
mod sessions;
mod sweep;
mod tasks;
mod util;
