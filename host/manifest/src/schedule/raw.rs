//! `[[schedule]]` and `[[trigger]]` as written: serde's view of an entry,
//! every key optional so that a missing one is refused by the checks with
//! the key and the fix, and the schema's view (defaults and meanings) that
//! `docs/configuration.md` is made from.

use serde::Deserialize;

/// A `[[schedule]]` or `[[trigger]]` as written: its own keys, then the
/// keys of its action (the same in both; serde's `flatten` would lose
/// `deny_unknown_fields`, so they are spelled out once here).
macro_rules! raw_entry {
    ($(#[$doc:meta])* $ty:ident { $($(#[$meta:meta])* $key:ident: $kty:ty,)* }) => {
        $(#[$doc])*
        #[derive(Default, Deserialize)]
        #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
        #[serde(deny_unknown_fields)]
        pub(crate) struct $ty {
            $($(#[$meta])* pub(super) $key: $kty,)*
            /// `"start"` (start or resume a session with a handoff), `"call"`
            /// (run a tool in a session) or `"sweep"` (a pass of the
            /// stuck-agent detector).
            #[cfg_attr(feature = "schemars", schemars(required))]
            #[cfg_attr(feature = "schemars", schemars(extend("enum" = ["start", "call", "sweep"])))]
            action: Option<String>,
            /// The session it works in, in its own principal's names; started
            /// when none of that name is live (`start` and `call`).
            #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required with `start`, `call`)")))]
            session: Option<String>,
            /// Its only project (`start` and `call`).
            #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required with `start`, `call`)")))]
            project: Option<String>,
            /// Its one role (`start` and `call`).
            #[cfg_attr(feature = "schemars", schemars(extend("default" = "workagent")))]
            role: Option<String>,
            /// With `action = "call"`: the tool to call (`plugin.tool`).
            #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required with `call`)")))]
            tool: Option<String>,
            /// With `action = "call"`: the tool's input, a table.
            #[cfg_attr(feature = "schemars", schemars(extend("default" = {})))]
            #[cfg_attr(
                feature = "schemars",
                schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")
            )]
            input: Option<toml::Value>,
            /// With `action = "start"`: the objective of the handoff posted into the session.
            #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(required with `start`)")))]
            objective: Option<String>,
            /// With `action = "start"`: the handoff's success criteria.
            #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
            success_criteria: Option<Vec<String>>,
            /// With `action = "start"`: the handoff's next steps.
            #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
            next_steps: Option<Vec<String>>,
            /// With `action = "call"`: `<field> <op> <number>` over the tool's
            /// JSON output (`>`, `>=`, `<`, `<=`, `==`, `!=`); needs `notify`.
            #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
            alert_if: Option<String>,
            /// `[[notify]]` targets told when the alert holds or the run fails.
            #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
            notify: Option<Vec<String>>,
        }

        impl $ty {
            pub(super) fn run(&self) -> RawRun<'_> {
                RawRun {
                    action: self.action.as_deref(),
                    session: self.session.as_deref(),
                    project: self.project.as_deref(),
                    role: self.role.as_deref(),
                    tool: self.tool.as_deref(),
                    input: self.input.as_ref(),
                    objective: self.objective.as_deref(),
                    success_criteria: self.success_criteria.as_deref(),
                    next_steps: self.next_steps.as_deref(),
                    alert_if: self.alert_if.as_deref(),
                    notify: self.notify.as_deref(),
                }
            }
        }
    };
}

raw_entry!(
    /// `[[schedule]]`: work started on a cron expression
    /// ([`operators/schedules.md`](operators/schedules.md)).
    RawSchedule {
        /// The principal it acts as: `schedule:<name>`, `trigger:<name>`
        /// (1 to 64 letters, digits, `-`, `_` and `.`).
        #[cfg_attr(feature = "schemars", schemars(required))]
        name: Option<String>,
        /// Five fields in UTC (a sixth, first, for seconds), or `@hourly`, `@daily`, ...
        #[cfg_attr(feature = "schemars", schemars(required))]
        cron: Option<String>,
        /// A fire missed while the host was down runs once at start.
        #[cfg_attr(feature = "schemars", schemars(extend("default" = true)))]
        catch_up: Option<bool>,
    }
);

raw_entry!(
    /// `[[trigger]]`: work started when an event happens or a webhook comes
    /// ([`operators/schedules.md`](operators/schedules.md)).
    RawTrigger {
        /// The principal it acts as: `schedule:<name>`, `trigger:<name>`
        /// (1 to 64 letters, digits, `-`, `_` and `.`).
        #[cfg_attr(feature = "schemars", schemars(required))]
        name: Option<String>,
        /// A `[[notify]]` event kind, or `"webhook"` (`POST /hooks/<name>` on
        /// the admin listener).
        #[cfg_attr(feature = "schemars", schemars(required))]
        on: Option<String>,
        /// Only events of sessions of this project (not on webhooks).
        #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "any")))]
        from_project: Option<String>,
        /// A webhook trigger's signing secret, inline (16+ characters); or `secret_file`.
        #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(one of the two with `webhook`)")))]
        secret: Option<String>,
        /// A webhook trigger's signing secret in a 0600 file (16+ characters); or `secret`.
        #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(one of the two with `webhook`)")))]
        secret_file: Option<String>,
        /// After a fire, events within this time are folded into one fire
        /// when it ends; `"0s"` fires on every event; at most `"24h"`; not on
        /// webhooks.
        #[cfg_attr(feature = "schemars", schemars(extend("default" = "1m")))]
        cooldown: Option<crate::units::Millis>,
    }
);

impl crate::NamesSecretFile for RawTrigger {
    const KEYS: [&'static str; 3] = ["trigger", "secret_file", "trigger"];
    fn named_file(&self) -> (Option<&str>, Option<&String>) {
        (self.name.as_deref(), self.secret_file.as_ref())
    }
}

/// The action's keys of an entry.
pub(super) struct RawRun<'a> {
    pub(super) action: Option<&'a str>,
    pub(super) session: Option<&'a str>,
    pub(super) project: Option<&'a str>,
    pub(super) role: Option<&'a str>,
    pub(super) tool: Option<&'a str>,
    pub(super) input: Option<&'a toml::Value>,
    pub(super) objective: Option<&'a str>,
    pub(super) success_criteria: Option<&'a [String]>,
    pub(super) next_steps: Option<&'a [String]>,
    pub(super) alert_if: Option<&'a str>,
    pub(super) notify: Option<&'a [String]>,
}
