//! `plugins.accept`: an operator accepts the text of a plugin's tools as it
//! is now, so the tools held for a change (or for findings) are offered
//! again (`crate::tool_text`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;
use crate::tool_text::{self, Hold, ToolText};

pub struct AcceptPlugin;

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptPluginArgs {
    /// The plugin's name, as its manifest says (`files`).
    #[schemars(length(max = 64))]
    pub plugin: String,
}

/// One tool whose text was accepted.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AcceptedTool {
    /// `plugin.tool`.
    pub tool: String,
    /// The digest of its text, now accepted.
    pub digest: String,
    /// Whether it was held (and is offered again now).
    pub was_held: bool,
    /// What changed, when it was held for a change (`-` old, `+` new lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// What its text was held for, read by the operator who accepted it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

impl Operation for AcceptPlugin {
    const NAME: &'static str = "plugins.accept";
    const SUMMARY: &'static str =
        "Accepts the text (names, descriptions, schemas) of a plugin's tools as it is now.";
    const DESCRIPTION: &'static str = "Records each tool's text as accepted by the caller, so the tools held because their text changed since it was last accepted, or because it carries text aimed at the model, are listed and callable again. Returns each tool with what changed and what was found. Read the change first (`glovebox doctor`).";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::post("/plugins/{plugin}/accept"));
    type Args = AcceptPluginArgs;
    type Output = Vec<AcceptedTool>;

    async fn run(
        scope: Scope<'_>,
        args: AcceptPluginArgs,
    ) -> Result<Vec<AcceptedTool>, OperationError> {
        let gateway = scope.gateway();
        let host = gateway.host();
        let Some(plugin) = host.plugin_named(&args.plugin) else {
            let names: Vec<&str> = host
                .plugins()
                .iter()
                .map(|p| p.manifest.name.as_str())
                .collect();
            return Err(OperationError::not_found(
                "plugin_not_found",
                format!(
                    "no plugin is named `{}`; the config's plugins are {}",
                    args.plugin,
                    names.join(", ")
                ),
            ));
        };
        let held = host.held();
        let storage = gateway.ledger().storage.clone();
        let by = scope.caller().name.clone();
        let mut accepted = Vec::new();
        for tool in &plugin.tools {
            let text = ToolText::of(tool);
            tool_text::record(&*storage, &tool.name, &text, &by).map_err(|e| {
                OperationError::failed(format!("cannot record the text of `{}`: {e}", tool.name))
            })?;
            let hold = held.get(&tool.name);
            let (diff, findings) = match hold {
                Some(Hold::Changed { diff, findings, .. }) => {
                    (Some(diff.clone()), findings.clone())
                }
                Some(Hold::Flagged { findings, .. }) => (None, findings.clone()),
                _ => (None, Vec::new()),
            };
            accepted.push(AcceptedTool {
                tool: tool.name.clone(),
                digest: text.digest,
                was_held: hold.is_some(),
                diff,
                findings: findings
                    .iter()
                    .map(|f| format!("{} in {}: {}", f.rule, f.place, f.text))
                    .collect(),
            });
        }
        gateway.refresh_holds();
        Ok(accepted)
    }
}
