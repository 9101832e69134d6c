//! The doctor page's action on a plugin whose tools are held for their text
//! (`held_tool_text`): accepting the text as it is now. It runs the
//! registry's operation `plugins.accept` as the signed-in operator, exactly
//! as `glovebox plugin accept` and `POST /api/v1/plugins/{plugin}/accept`
//! do; the listener's guard (`auth.rs`) has already checked the `Host`, the
//! POST's origin and the operator, as for every button.

use axum::extract::Path as UrlPath;
use axum::response::{IntoResponse, Redirect, Response};
use glovebox::operations::{self, AcceptPlugin, AcceptPluginArgs};

use crate::doctor::{Flash, shown};
use crate::html::url;
use crate::viewer::Viewer;

/// `POST /ui/plugins/PLUGIN/accept`: the operation `plugins.accept`; then
/// the doctor page, saying what it did or why not.
pub async fn accept(viewer: Viewer, UrlPath(plugin): UrlPath<String>) -> Response {
    let scope = viewer.app.gateway.scope(&viewer.op.0);
    let args = AcceptPluginArgs {
        plugin: plugin.clone(),
    };
    match operations::run::<AcceptPlugin>(scope, args).await {
        Ok(tools) => {
            tracing::info!(%plugin, tools = tools.len(), principal = %viewer.op.0.name, "dashboard: plugin text accepted");
            Redirect::to(&format!("/ui/doctor?accepted={}", url(&plugin))).into_response()
        }
        Err(e) => {
            let status = crate::api::status(e.class);
            shown(viewer, status, Flash::Refused(e.message)).await
        }
    }
}
