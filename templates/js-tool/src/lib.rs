//! `{{name}}`: the tool is `tool.js`; this crate only embeds it in the JavaScript shell.
glovebox_js_shell::js_plugin!("../tool.js");
