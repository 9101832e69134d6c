//! `tool-js-json`: the tool is `json.js`; this crate only embeds it in the JS shell.
glovebox_js_shell::js_plugin!("../json.js");
