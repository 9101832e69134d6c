//! What a tool plugin's manifest and a permission hook's entry both check
//! about the component they name: its name, a pinned digest, and the memory
//! it asks for against the host's caps.
//!
//! Why a module of its own: the plugin loader (`plugin.rs`), the hooks'
//! section (`hooks.rs`) and the config that reads both (`host_config.rs`)
//! share these rules; kept in any one of them, the other two import each
//! other in a circle.

use super::RuntimeConfig;
use super::units::format_size;

/// The bound a plugin's `memory` must stay within, and where the operator can raise it.
pub(super) struct MemoryCap<'a> {
    per_instance: u64,
    budget: u64,
    config_file: &'a str,
}

impl<'a> MemoryCap<'a> {
    pub(super) fn new(runtime: &RuntimeConfig, config_file: &'a str) -> Self {
        MemoryCap {
            per_instance: runtime.max_memory_per_instance,
            budget: runtime.memory_budget,
            config_file,
        }
    }

    /// `Some((problem, hint))` when `memory` is above what the host allows.
    pub(super) fn check(&self, memory: u64) -> Option<(String, String)> {
        let (bound, key) = if memory > self.per_instance {
            (self.per_instance, "runtime.max_memory_per_instance")
        } else if memory > self.budget {
            (self.budget, "runtime.memory_budget")
        } else {
            return None;
        };
        Some((
            format!(
                "memory limit {} is above the host's `{key}` of {}",
                format_size(memory),
                format_size(bound)
            ),
            format!(
                "lower the limit, or raise `{key}` in `{}`",
                self.config_file
            ),
        ))
    }
}

/// A pinned digest as 64 lowercase hex digits, or `None` if `text` is not one.
pub(super) fn normalize_sha256(text: &str) -> Option<String> {
    let hash = text.trim().to_ascii_lowercase();
    (hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hash)
}

/// `[a-z0-9][a-z0-9_-]*`, at most 64 characters: the name of a plugin or a hook.
pub fn valid_plugin_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z' | '0'..='9'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '-'))
        && name.len() <= 64
}
