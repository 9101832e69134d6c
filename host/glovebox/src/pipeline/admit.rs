//! Admit: a request becomes a call the pipeline can take, or a bad request
//! that is not a call at all (nothing is logged, nothing is judged).
//!
//! The tool is resolved and the input is checked once (size, JSON, the tool's
//! schema) into an [`Admitted`] call; every later stage, every adapter and
//! the jobs runner hand that on instead of the text, so no input is parsed or
//! checked twice.

use serde_json::Value;

use crate::admitted::Admitted;
use crate::call::parse_input;
use crate::error::CallError;
use crate::host::Host;
use crate::plugin::LoadedPlugin;

impl Host {
    /// Resolves `tool` (`plugin.tool`, or a bare name one plugin alone
    /// offers) and checks `input`, JSON text: its size, that it parses, and
    /// the tool's input schema.
    pub fn admit(&self, tool: &str, input: &str) -> Result<Admitted, CallError> {
        let (plugin, index) = self.locate(tool)?;
        let name = &plugin.tools[index].name;
        let parsed = parse_input(name, input, self.config().runtime.max_input_bytes)?;
        check_schema(&plugin, index, &parsed)?;
        Ok(Admitted::new(plugin, index, input.to_string()))
    }

    /// [`Host::admit`] for an input that is already parsed (an MCP request's
    /// arguments): it is checked as it is and serialized once.
    pub fn admit_value(&self, tool: &str, input: &Value) -> Result<Admitted, CallError> {
        let (plugin, index) = self.locate(tool)?;
        let text = input.to_string();
        glovebox_input::check_size(text.len(), self.config().runtime.max_input_bytes).map_err(
            |reason| CallError::InvalidInput {
                tool: plugin.tools[index].name.clone(),
                reason: reason.to_string(),
            },
        )?;
        check_schema(&plugin, index, input)?;
        Ok(Admitted::new(plugin, index, text))
    }
}

/// The tool's input schema, checked (`glovebox_input::check_schema`): the
/// first few violations, each with where in the input it is.
fn check_schema(plugin: &LoadedPlugin, tool: usize, input: &Value) -> Result<(), CallError> {
    glovebox_input::check_schema(&plugin.validators[tool], input).map_err(|reason| {
        CallError::InvalidInput {
            tool: plugin.tools[tool].name.clone(),
            reason: reason.to_string(),
        }
    })
}
