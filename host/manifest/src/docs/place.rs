//! Where a key of the page is: the header of the table it is in, or the
//! prefix of a key of the section's own table, and how a row names it.

/// Where a key is: the header of the table it is in (none: the section's
/// own table) and the prefix of a key of the section's table.
#[derive(Clone)]
pub(super) struct Place {
    /// `approvals.` in a section of several tables.
    pub(super) prefix: String,
    /// The dotted path of the table the keys are in, from the file's root.
    pub(super) path: String,
    /// The header of the table the keys are in, when it is not the
    /// section's: `[memory.propose]`, `[[fs]]`.
    pub(super) header: Option<String>,
}

impl Place {
    pub(super) fn top(table: &str) -> Place {
        Place {
            prefix: if table.is_empty() {
                String::new()
            } else {
                format!("{table}.")
            },
            path: String::new(),
            header: None,
        }
    }

    /// The section's own table, `table`.
    pub(super) fn under(mut self, table: &str) -> Place {
        self.path = table.to_string();
        self
    }

    /// The table `key` inside this one (an array of tables if `array`).
    pub(super) fn nested(&self, key: &str, array: bool) -> Place {
        let path = if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        };
        let header = if array {
            format!("[[{path}]]")
        } else {
            format!("[{path}]")
        };
        Place {
            prefix: String::new(),
            path,
            header: Some(header),
        }
    }

    pub(super) fn key(&self, key: &str) -> String {
        match &self.header {
            None => format!("`{}{key}`", self.prefix),
            Some(header) => format!("`{header}` `{key}`"),
        }
    }

    pub(super) fn keys(&self, keys: &[String]) -> String {
        let keys: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
        format!(
            "`{}` {}",
            self.header.clone().unwrap_or_default(),
            keys.join(", ")
        )
    }
}
