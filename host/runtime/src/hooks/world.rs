//! The hook worlds the host serves, side by side: 0.1.0 (`wit/plugin.wit`) and
//! 0.2.0 (`wit/v0.2/plugin.wit`, whose request names the caller). A hook is
//! loaded as whichever version it exports; past this file the chain does not
//! care which: it hands a [`HookRequest`] in and gets a 0.1.0-shaped decision
//! back (the two versions' decisions are the same record), so one check of the
//! answer serves both.

use wasmtime::Store;
use wasmtime::component::InstancePre;

use super::HookRequest;
use super::sandbox::HookState;
use crate::bindings::hook::exports::glovebox::plugin::permission_hook as v0_1;
use crate::bindings::hook_v0_2::exports::glovebox::plugin::permission_hook as v0_2;
use crate::bindings::{hook, hook_v0_2};

/// The interface 0.1.0 hook plugins export.
pub const HOOK_INTERFACE_V0_1: &str = "glovebox:plugin/permission-hook@0.1.0";
/// The interface 0.2.0 hook plugins export: the newest, which the host
/// prefers when a component exports both.
pub const HOOK_INTERFACE: &str = "glovebox:plugin/permission-hook@0.2.0";

/// Every hook interface the host serves, newest first.
pub const HOOK_INTERFACES: [&str; 2] = [HOOK_INTERFACE, HOOK_INTERFACE_V0_1];

/// Whether `export` (a component's export name) is a hook interface the host
/// serves: a component that exports one is a hook, not a tool.
pub fn is_hook_interface(export: &str) -> bool {
    HOOK_INTERFACES.contains(&export)
}

/// Which version of the hook world a component exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HookVersion {
    V0_1,
    V0_2,
}

impl HookVersion {
    /// The version whose interface is `export`, if any.
    pub fn of_export(export: &str) -> Option<HookVersion> {
        match export {
            HOOK_INTERFACE => Some(HookVersion::V0_2),
            HOOK_INTERFACE_V0_1 => Some(HookVersion::V0_1),
            _ => None,
        }
    }

    /// The name of the interface this version exports.
    pub fn interface(self) -> &'static str {
        match self {
            HookVersion::V0_1 => HOOK_INTERFACE_V0_1,
            HookVersion::V0_2 => HOOK_INTERFACE,
        }
    }
}

/// A hook component, linked and type-checked against its world: what a fresh
/// instance is made from for every run.
pub(crate) enum HookPre {
    V0_1(hook::HookPluginPre<HookState>),
    V0_2(hook_v0_2::HookPluginPre<HookState>),
}

/// A fresh instance of a hook, of either world.
pub(crate) enum HookInstance {
    V0_1(hook::HookPlugin),
    V0_2(hook_v0_2::HookPlugin),
}

impl HookPre {
    /// Checks `pre`'s exports against `version`'s world.
    pub fn new(version: HookVersion, pre: InstancePre<HookState>) -> wasmtime::Result<HookPre> {
        Ok(match version {
            HookVersion::V0_1 => HookPre::V0_1(hook::HookPluginPre::new(pre)?),
            HookVersion::V0_2 => HookPre::V0_2(hook_v0_2::HookPluginPre::new(pre)?),
        })
    }

    /// A fresh instance in `store`.
    pub async fn instantiate(
        &self,
        store: &mut Store<HookState>,
    ) -> wasmtime::Result<HookInstance> {
        Ok(match self {
            HookPre::V0_1(pre) => HookInstance::V0_1(pre.instantiate_async(store).await?),
            HookPre::V0_2(pre) => HookInstance::V0_2(pre.instantiate_async(store).await?),
        })
    }
}

/// A request in the words of one world: made once per chain evaluation, for
/// the versions the chain's hooks speak.
#[derive(Default)]
pub(crate) struct Requests {
    v0_1: Option<v0_1::Request>,
    v0_2: Option<v0_2::Request>,
}

impl Requests {
    fn v0_1(&mut self, req: &HookRequest) -> &v0_1::Request {
        self.v0_1.get_or_insert_with(|| v0_1::Request {
            call_id: req.call_id.clone(),
            tool: req.tool.clone(),
            action: req.action.clone(),
            role: req.role.clone(),
            session: req.session.clone(),
            input: req.input.clone(),
            estimated_cost: req.estimated_cost,
            destructive: req.destructive,
            tags: req.tags.clone(),
        })
    }

    fn v0_2(&mut self, req: &HookRequest) -> &v0_2::Request {
        self.v0_2.get_or_insert_with(|| v0_2::Request {
            call_id: req.call_id.clone(),
            tool: req.tool.clone(),
            action: req.action.clone(),
            role: req.role.clone(),
            session: req.session.clone(),
            input: req.input.clone(),
            estimated_cost: req.estimated_cost,
            destructive: req.destructive,
            tags: req.tags.clone(),
            principal: req.principal.clone(),
            project: req.project.clone(),
            http: req.http.as_ref().map(|h| v0_2::HttpRequest {
                method: h.method.clone(),
                url: h.url.clone(),
                scheme: h.scheme.clone(),
                host: h.host.clone(),
                path: h.path.clone(),
            }),
        })
    }
}

impl HookInstance {
    /// The hook's `triggers`.
    pub async fn triggers(&self, store: &mut Store<HookState>) -> wasmtime::Result<Vec<String>> {
        match self {
            HookInstance::V0_1(h) => {
                h.glovebox_plugin_permission_hook()
                    .call_triggers(store)
                    .await
            }
            HookInstance::V0_2(h) => {
                h.glovebox_plugin_permission_hook()
                    .call_triggers(store)
                    .await
            }
        }
    }

    /// The hook's `validate` of `req`, its answer in 0.1.0's shape.
    pub async fn validate(
        &self,
        store: &mut Store<HookState>,
        settings: &str,
        req: &HookRequest,
        requests: &mut Requests,
    ) -> wasmtime::Result<v0_1::Decision> {
        match self {
            HookInstance::V0_1(h) => {
                h.glovebox_plugin_permission_hook()
                    .call_validate(store, settings, requests.v0_1(req))
                    .await
            }
            HookInstance::V0_2(h) => h
                .glovebox_plugin_permission_hook()
                .call_validate(store, settings, requests.v0_2(req))
                .await
                .map(decision_v0_1),
        }
    }

    /// The hook's `after`: how the call it allowed ended.
    pub async fn after(
        &self,
        store: &mut Store<HookState>,
        settings: &str,
        req: &HookRequest,
        requests: &mut Requests,
        ok: bool,
        summary: &str,
    ) -> wasmtime::Result<()> {
        match self {
            HookInstance::V0_1(h) => {
                h.glovebox_plugin_permission_hook()
                    .call_after(store, settings, requests.v0_1(req), ok, summary)
                    .await
            }
            HookInstance::V0_2(h) => {
                h.glovebox_plugin_permission_hook()
                    .call_after(store, settings, requests.v0_2(req), ok, summary)
                    .await
            }
        }
    }
}

/// A 0.2.0 decision in 0.1.0's words (the same variant).
fn decision_v0_1(decision: v0_2::Decision) -> v0_1::Decision {
    match decision {
        v0_2::Decision::Allow => v0_1::Decision::Allow,
        v0_2::Decision::Deny(v0_2::Denial {
            reason,
            alternatives,
        }) => v0_1::Decision::Deny(v0_1::Denial {
            reason,
            alternatives,
        }),
        v0_2::Decision::Ask(text) => v0_1::Decision::Ask(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chain tests' request (`hooks/tests.rs`), with a caller and an
    /// HTTP request: every field a world carries, set.
    fn request(project: Option<&str>) -> HookRequest {
        HookRequest {
            principal: "alice".into(),
            project: project.map(str::to_string),
            http: Some(super::super::HookHttp {
                method: "PUT".into(),
                url: "https://h/a".into(),
                scheme: "https".into(),
                host: "h".into(),
                path: "/a".into(),
            }),
            ..super::super::tests::request("execute:database:delete")
        }
    }

    #[test]
    fn requests_reach_each_world_unchanged() {
        let req = request(Some("billing"));
        let mut requests = Requests::default();
        let old = requests.v0_1(&req).clone();
        assert_eq!(old.call_id, "call-1");
        assert_eq!(old.tool, "db.delete");
        assert_eq!(old.action, "execute:database:delete");
        assert_eq!(old.role, "workagent");
        assert_eq!(old.session, "s-1");
        assert_eq!(old.input, "{}");
        assert_eq!(old.estimated_cost, 1.0);
        assert!(old.destructive);
        assert_eq!(old.tags, ["nightly"]);
        let new = requests.v0_2(&req);
        assert_eq!(
            (new.call_id.as_str(), new.tool.as_str(), new.action.as_str()),
            ("call-1", "db.delete", "execute:database:delete")
        );
        assert_eq!(
            (new.role.as_str(), new.session.as_str()),
            ("workagent", "s-1")
        );
        assert_eq!((new.input.as_str(), new.estimated_cost), ("{}", 1.0));
        assert!(new.destructive);
        assert_eq!(new.tags, ["nightly"]);
        assert_eq!(new.principal, "alice");
        assert_eq!(new.project.as_deref(), Some("billing"));
        let http = new.http.as_ref().unwrap();
        assert_eq!(
            (
                http.method.as_str(),
                http.scheme.as_str(),
                http.host.as_str(),
                http.path.as_str()
            ),
            ("PUT", "https", "h", "/a")
        );
        assert_eq!(http.url, "https://h/a");
        let none = request(None);
        assert_eq!(Requests::default().v0_2(&none).project, None);
    }

    #[test]
    fn each_world_is_known_by_its_export_and_the_newest_is_preferred() {
        assert_eq!(
            HookVersion::of_export(HOOK_INTERFACE),
            Some(HookVersion::V0_2)
        );
        assert_eq!(
            HookVersion::of_export(HOOK_INTERFACE_V0_1),
            Some(HookVersion::V0_1)
        );
        assert_eq!(HookVersion::of_export("glovebox:plugin/tool@0.1.0"), None);
        assert_eq!(HOOK_INTERFACES[0], HOOK_INTERFACE);
        assert!(is_hook_interface(HOOK_INTERFACE_V0_1));
        assert!(!is_hook_interface("glovebox:plugin/permission-hook@0.3.0"));
    }

    #[test]
    fn a_new_decision_reads_as_the_old_one() {
        let deny = decision_v0_1(v0_2::Decision::Deny(v0_2::Denial {
            reason: "no".into(),
            alternatives: vec!["ask".into()],
        }));
        assert!(
            matches!(&deny, v0_1::Decision::Deny(d) if d.reason == "no" && d.alternatives == ["ask"]),
            "{deny:?}"
        );
        let ask = decision_v0_1(v0_2::Decision::Ask("sure?".into()));
        assert!(
            matches!(&ask, v0_1::Decision::Ask(t) if t == "sure?"),
            "{ask:?}"
        );
        let allow = decision_v0_1(v0_2::Decision::Allow);
        assert!(matches!(allow, v0_1::Decision::Allow), "{allow:?}");
    }
}
