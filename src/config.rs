//! `glovebox config schema`: the JSON Schema of `glovebox.toml` (or, with
//! `--manifest`, of a plugin manifest), for an editor to check a config as
//! it is written. The schemas are the config parser's own
//! (`glovebox_manifest::schema`), the ones `docs/configuration.md` is made
//! from.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use glovebox::manifest::schema::{host_config_schema, manifest_schema};

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Print the JSON Schema of `glovebox.toml`, or of a plugin manifest.
    Schema {
        /// The schema of a plugin manifest instead.
        #[arg(long)]
        manifest: bool,
    },
}

pub fn run(command: ConfigCommand) -> Result<ExitCode> {
    match command {
        ConfigCommand::Schema { manifest } => {
            let schema = if manifest {
                manifest_schema()
            } else {
                host_config_schema()
            };
            out!("{}", serde_json::to_string_pretty(&schema)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}
