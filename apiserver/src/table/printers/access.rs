//! The printers of the identity and access kinds: ServiceAccounts, RoleBindings and
//! ClusterRoleBindings (`printServiceAccount`, `printRoleBinding`, `printClusterRoleBinding`).
//! Roles and ClusterRoles have none upstream: they print with the default convertor.

use serde_json::{Value, json};

use super::{AGE, Column, NAME, age, column, docs, list, name, text, wide};

pub(super) const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    NAME,
    column("Secrets", "string", docs::SERVICE_ACCOUNT_SECRETS),
    AGE,
];

pub(super) const ROLE_BINDING_COLUMNS: &[Column] = &[
    NAME,
    column("Role", "string", docs::ROLE_BINDING_ROLE_REF),
    AGE,
    wide("Users", docs::ROLE_BINDING_USERS),
    wide("Groups", docs::ROLE_BINDING_GROUPS),
    wide("ServiceAccounts", docs::ROLE_BINDING_SERVICE_ACCOUNTS),
];

pub(super) const CLUSTER_ROLE_BINDING_COLUMNS: &[Column] = &[
    NAME,
    column("Role", "string", docs::CLUSTER_ROLE_BINDING_ROLE_REF),
    AGE,
    wide("Users", docs::CLUSTER_ROLE_BINDING_USERS),
    wide("Groups", docs::CLUSTER_ROLE_BINDING_GROUPS),
    wide(
        "ServiceAccounts",
        docs::CLUSTER_ROLE_BINDING_SERVICE_ACCOUNTS,
    ),
];

/// `printServiceAccount`: how many secrets it lists.
pub(super) fn service_account(account: &Value, now: i128) -> Vec<Value> {
    vec![
        json!(name(account)),
        json!(list(account, &["secrets"]).len()),
        json!(age(account, now)),
    ]
}

/// `printRoleBinding` and `printClusterRoleBinding`: the role as `Kind/name`, and the subjects
/// by kind (`rbac.SubjectsStrings`; service accounts as `namespace/name`), each list joined
/// with `, `.
pub(super) fn binding(binding: &Value, now: i128) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        text(binding, &["roleRef", "kind"]),
        text(binding, &["roleRef", "name"])
    );
    let subjects = list(binding, &["subjects"]);
    let of_kind = |kind: &str| {
        subjects
            .iter()
            .filter(|subject| text(subject, &["kind"]) == kind)
            .map(|subject| match kind {
                "ServiceAccount" => format!(
                    "{}/{}",
                    text(subject, &["namespace"]),
                    text(subject, &["name"])
                ),
                _ => text(subject, &["name"]).to_owned(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        json!(name(binding)),
        json!(role),
        json!(age(binding, now)),
        json!(of_kind("User")),
        json!(of_kind("Group")),
        json!(of_kind("ServiceAccount")),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::tests::{CREATED, cells};
    use super::*;
    use crate::registry::Printer;

    #[test]
    fn service_accounts_count_their_secrets() {
        let account = json!({"metadata": {"name": "default", "creationTimestamp": CREATED},
                             "secrets": [{"name": "a"}, {"name": "b"}]});
        assert_eq!(
            cells(Printer::ServiceAccount, account),
            [json!("default"), json!(2), json!("10m")]
        );
        assert_eq!(
            cells(Printer::ServiceAccount, json!({"metadata": {"name": "x"}}))[1],
            0
        );
    }

    #[test]
    fn bindings_print_the_role_and_subjects_by_kind() {
        let binding = json!({
            "metadata": {"name": "readers", "creationTimestamp": CREATED},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "ServiceAccount", "name": "ci", "namespace": "build"},
                {"kind": "Group", "name": "devs"},
                {"kind": "User", "name": "bob"},
                {"kind": "Robot", "name": "r2"},
            ],
        });
        let expected = [
            json!("readers"),
            json!("ClusterRole/view"),
            json!("10m"),
            json!("alice, bob"),
            json!("devs"),
            json!("build/ci"),
        ];
        assert_eq!(cells(Printer::RoleBinding, binding.clone()), expected);
        assert_eq!(cells(Printer::ClusterRoleBinding, binding), expected);
        let bare = cells(Printer::RoleBinding, json!({"metadata": {"name": "b"}}));
        assert_eq!(bare[1], "/");
        assert_eq!(bare[3..], [json!(""), json!(""), json!("")]);
    }
}
