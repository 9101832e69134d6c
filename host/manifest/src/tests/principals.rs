//! `[[principal]]`: who may connect; each bad entry is refused naming its key and the fix.

use super::super::{PrincipalKind, Role, authenticate, credential_of};
use super::{Fixture, assert_error};

fn principal(extra: &str) -> String {
    format!(
        "hooks = \"none\"\n[[principal]]\nname = \"ci\"\nkind = \"agent\"\ncredential = \"{}\"\nroles = [\"workagent\"]\nprojects = [\"demo\"]\n{extra}",
        credential_of("token-ci")
    )
}

#[test]
fn a_principal_loads_and_its_token_authenticates() {
    let fx = Fixture::new();
    let c = fx.host(&principal("tags = [\"team-a\"]\n")).unwrap();
    assert_eq!(c.principals.len(), 1);
    let p = &c.principals[0].principal;
    assert_eq!(p.name, "ci");
    assert_eq!(p.kind, PrincipalKind::Agent);
    assert_eq!(p.roles, vec![Role::Workagent]);
    assert_eq!(p.projects, vec!["demo".to_string()]);
    assert_eq!(p.tags, vec!["team-a".to_string()]);
    assert!(authenticate(&c.principals, "token-ci").is_some());
    assert!(authenticate(&c.principals, "token-other").is_none());
    // No principal: none declared (the host then serves the built-in `local` agent).
    assert!(fx.host("hooks = \"none\"\n").unwrap().principals.is_empty());
}

#[cfg(unix)]
#[test]
fn a_credential_file_must_be_the_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
    let hash = fx.write("ops.sha256", &format!("{}\n", credential_of("token-ops")));
    let text = "hooks = \"none\"\n[[principal]]\nname = \"ops\"\nkind = \"operator\"\ncredential_file = \"ops.sha256\"\n";
    std::fs::set_permissions(&hash, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_error(
        &fx.host_error(text),
        &file,
        "principal[0].credential_file",
        &["readable or writable by others", "chmod 600"],
    );
    std::fs::set_permissions(&hash, std::fs::Permissions::from_mode(0o600)).unwrap();
    let c = fx.host(text).unwrap();
    assert!(
        authenticate(&c.principals, "token-ops")
            .unwrap()
            .principal
            .is_operator()
    );
}
