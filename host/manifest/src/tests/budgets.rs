//! `[budgets]`: a session's caps per role, and the spend ceilings per
//! principal, project and role per day, week and month; each bad entry is
//! refused naming its key and the fix.

use super::super::{BudgetCaps, CeilingLimits, Measure, Period, Role, Scope, credential_of};
use super::{Fixture, assert_error};

/// A config declaring the agent `alice`, then `budgets`.
fn config(budgets: &str) -> String {
    format!(
        "hooks = \"none\"\n[[principal]]\nname = \"alice\"\nkind = \"agent\"\ncredential = \"{}\"\nroles = [\"workagent\"]\nprojects = [\"*\"]\n\n[budgets]\n{budgets}",
        credential_of("token-alice")
    )
}

#[test]
fn ceilings_load_per_principal_project_and_role_beside_the_session_caps() {
    let fx = Fixture::new();
    let c = fx
        .host(&config(
            r#"
[budgets.principal.alice.day]
cost = 50.0
calls = 5000
tokens = 2_000_000

[budgets.principal.local.week]
calls = 10

[budgets.project.demo.month]
cost = 1000.0

[budgets.role.workagent]
cost = 20.0
calls = 500
wall = "2h"

[budgets.role.workagent.day]
cost = 200.0
"#,
        ))
        .unwrap();
    let b = &c.budgets;
    // The per-session caps of the role are as they always were.
    assert_eq!(
        b.roles[&Role::Workagent],
        BudgetCaps::new(
            Some(20.0),
            Some(500),
            Some(std::time::Duration::from_secs(7200))
        )
        .unwrap()
    );
    let alice = b.ceilings.of(&Scope::principal("alice")).unwrap();
    assert_eq!(
        alice.day,
        CeilingLimits {
            cost_micros: Some(50_000_000),
            calls: Some(5000),
            tokens: Some(2_000_000),
        }
    );
    assert!(alice.week.is_empty() && alice.month.is_empty());
    let local = b.ceilings.of(&Scope::principal("local")).unwrap();
    assert_eq!(local.get(Period::Week).get(Measure::Calls), Some(10));
    let demo = b.ceilings.of(&Scope::project("demo")).unwrap();
    assert_eq!(demo.month.cost_micros, Some(1_000_000_000));
    let role = b.ceilings.of(&Scope::role(Role::Workagent)).unwrap();
    assert_eq!(role.day.cost_micros, Some(200_000_000));
    assert!(b.ceilings.of(&Scope::role(Role::Supervisor)).is_none());
    assert_eq!(b.ceilings.scopes().len(), 4);

    // None by default, and a role with session caps only has no ceiling.
    let c = fx
        .host(&config("[budgets.role.workagent]\ncost = 1.0\n"))
        .unwrap();
    assert!(c.budgets.ceilings.is_empty());
    assert!(
        fx.host("hooks = \"none\"\n")
            .unwrap()
            .budgets
            .ceilings
            .is_empty()
    );
}

#[test]
fn bad_ceilings_name_the_key_and_the_fix() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
    let bad = |budgets: &str| fx.host_error(&config(budgets));

    // A ceiling for a principal nobody declared would bound nothing.
    assert_error(
        &bad("[budgets.principal.alcie.day]\ncost = 1.0\n"),
        &file,
        "budgets.principal.alcie",
        &["no principal `alcie` is declared", "`alice`", "`local`"],
    );
    assert_error(
        &bad("[budgets.principal.alice.day]\ncost = -1.0\n"),
        &file,
        "budgets.principal.alice.day.cost",
        &["not a non-negative number", "cost = 50.0"],
    );
    assert_error(
        &bad("[budgets.project.demo.week]\ncalls = -5\n"),
        &file,
        "budgets.project.demo.week.calls",
        &["negative number of calls", "calls = 5000"],
    );
    assert_error(
        &bad("[budgets.role.workagent.month]\ntokens = -5\n"),
        &file,
        "budgets.role.workagent.month.tokens",
        &["negative number of tokens"],
    );
    assert_error(
        &bad("[budgets.role.workagent.day]\n"),
        &file,
        "budgets.role.workagent.day",
        &["sets no ceiling", "`cost`, `calls` and `tokens`"],
    );
    assert_error(
        &bad("[budgets.role.boss.day]\ncost = 1.0\n"),
        &file,
        "budgets.role.boss",
        &["unknown role `boss`"],
    );

    // A typo is an unknown key, naming the keys that are allowed.
    let e = bad("[budgets.principal.alice]\ncost = 5.0\n");
    let m = e.to_string();
    assert!(m.contains("unknown key `budgets.principal.alice"), "{m}");
    assert!(m.contains("`day`") && m.contains("`month`"), "{m}");
    let e = bad("[budgets.principal.alice.daily]\ncost = 5.0\n");
    assert!(e.to_string().contains("`week`"), "{e}");
    let e = bad("[budgets.project.demo.day]\nwall = \"1h\"\n");
    let m = e.to_string();
    assert!(m.contains("unknown key `budgets.project.demo.day"), "{m}");
    assert!(m.contains("`tokens`"), "{m}");
    let e = bad("[budgets.team.x.day]\ncost = 5.0\n");
    assert!(e.to_string().contains("`principal`"), "{e}");
}

/// The commented `[budgets]` block of `examples/glovebox.toml` loads as
/// written once uncommented.
#[test]
fn the_example_budgets_load_when_uncommented() {
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/glovebox.toml"),
    )
    .unwrap();
    let block: String = example
        .lines()
        .skip_while(|l| *l != "# [budgets]")
        .take_while(|l| !l.is_empty())
        .map(|l| format!("{}\n", l.trim_start_matches("# ")))
        .collect();
    assert!(block.contains("[budgets.principal.local.day]"), "{block}");
    let fx = Fixture::new();
    let c = fx
        .host(&format!("hooks = \"none\"\n{block}"))
        .unwrap_or_else(|e| panic!("{e}\n{block}"));
    assert_eq!(c.budgets.ceilings.scopes().len(), 3);
    assert_eq!(c.budgets.roles[&Role::Workagent].calls, Some(500));
}
