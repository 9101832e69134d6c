//! Whose memory an agent's session reads and proposes to: the scopes a
//! session names (`project`, `user`, `role`, or `kind:name`), where in the
//! index the entries it may read are, and the rule a proposal must pass
//! (its own scopes only, and a role `[memory.propose]` lists).

use super::error::MemoryError;
use super::index;
use super::records::Scope;
use crate::manifest::{MemoryConfig, MemoryScopeKind, Principal};
use crate::session::SessionState;

/// The scope `spec` names from a session: `project`, `user` and `role` are
/// the session's own (its project, its owner, its role); anything else is
/// read as `kind:name`.
pub fn resolve_scope(
    spec: &str,
    session: &SessionState,
    caller: &Principal,
) -> Result<Scope, MemoryError> {
    let spec = spec.trim();
    match spec.parse::<MemoryScopeKind>() {
        Ok(MemoryScopeKind::Project) => Ok(Scope::Project(session.header.project.clone())),
        Ok(MemoryScopeKind::User) => Ok(Scope::User(caller.name.clone())),
        Ok(MemoryScopeKind::Role) => Ok(Scope::Role(session.header.role)),
        Err(_) => spec
            .parse::<Scope>()
            .map_err(|e| MemoryError::InvalidInput(e.to_string())),
    }
}

/// Where in the index the approved entries `caller` may read from
/// `session` are: its user's and its session role's, and its projects'
/// (every project's for a principal with `*`).
pub fn readable_prefixes(caller: &Principal, session: &SessionState) -> Vec<String> {
    let mut within = vec![
        index::scope_prefix(&Scope::User(caller.name.clone())),
        index::scope_prefix(&Scope::Role(session.header.role)),
    ];
    if caller.is_operator() || caller.projects.iter().any(|p| p == "*") {
        within.push(index::ALL_PROJECTS.to_string());
    } else {
        let mut projects = caller.projects.clone();
        projects.sort();
        projects.dedup();
        within.extend(
            projects
                .into_iter()
                .map(|p| index::scope_prefix(&Scope::Project(p))),
        );
    }
    within
}

/// Whether `scope` is one of `caller`'s from `session`: one of its
/// principal's projects, its own user, or its session's role.
pub fn readable(caller: &Principal, session: &SessionState, scope: &Scope) -> bool {
    match scope {
        Scope::Project(p) => caller.may_touch(p),
        Scope::User(u) => *u == caller.name,
        Scope::Role(r) => *r == session.header.role,
    }
}

/// Refuses a proposal by `caller` from `session` to `scope` unless the
/// scope is the caller's ([`readable`]) and `[memory.propose]` lists the
/// session's role for that kind of scope.
pub fn check_proposer(
    config: &MemoryConfig,
    caller: &Principal,
    session: &SessionState,
    scope: &Scope,
) -> Result<(), MemoryError> {
    if !readable(caller, session, scope) {
        return Err(MemoryError::NotAllowed(format!(
            "{caller} may not write to memory scope `{scope}`: an agent writes only to its own scopes (its principal's projects, `user:{}`, and `role:{}` from this session); propose to one of those",
            caller.name, session.header.role
        )));
    }
    let kind = scope.kind();
    if !config.may_propose(session.header.role, kind) {
        let listed = config
            .propose
            .get(&kind)
            .map(|roles| {
                roles
                    .iter()
                    .map(|r| format!("\"{r}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        return Err(MemoryError::NotAllowed(format!(
            "sessions of role `{role}` may not propose to {kind} scopes: `[memory.propose] {kind}` in the host config is [{listed}]; an operator adds \"{role}\" there to allow it",
            role = session.header.role,
        )));
    }
    Ok(())
}
