//! Who the simulated kubelets are. A real kubelet is `system:node:<name>` in `system:nodes`,
//! authorized by the Node authorizer to its own node's objects only; kubemock does not enforce
//! the Node authorizer, and its simulated kubelets serve every simulated node from one
//! client, so they run as one user of their own, [`SIMULATOR_USER`], bound to the bootstrap
//! policy's `system:node` ClusterRole (the kubelet's permissions, without the Node
//! authorizer's restriction to one node) by a ClusterRoleBinding kubemock creates, named like
//! the user. (kwok runs its simulated kubelets with an administrator's kubeconfig.) They also
//! read kwok's Stages (`super::stages`), which `system:node` does not grant: a ClusterRole
//! [`STAGES_ROLE`] and its binding, both named like it, grant that.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kubemock_client::{Api, Client, PostParams};
use serde_json::json;

/// The user the simulated kubelets authenticate as, and the name of its ClusterRoleBinding.
pub const SIMULATOR_USER: &str = "kubemock:node-simulator";

/// The ClusterRole the simulated kubelets are bound to: the bootstrap policy's kubelet role
/// (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`, `NodeRules`).
pub const SIMULATOR_ROLE: &str = "system:node";

/// The ClusterRole (and the name of its binding to [`SIMULATOR_USER`]) that lets the
/// simulated kubelets read kwok's Stages.
pub const STAGES_ROLE: &str = "kubemock:node-simulator:stages";

/// [`STAGES_ROLE`]: get, list and watch `stages.kwok.x-k8s.io`.
pub fn stages_role() -> ClusterRole {
    serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": STAGES_ROLE, "labels": {"app.kubernetes.io/managed-by": "kubemock"}},
        "rules": [{"apiGroups": [kubemock_apimachinery::stage::GROUP],
            "resources": [kubemock_apimachinery::stage::PLURAL], "verbs": ["get", "list", "watch"]}],
    }))
    .expect("the role is a valid ClusterRole")
}

/// The binding of [`SIMULATOR_USER`] to [`STAGES_ROLE`].
pub fn stages_binding() -> ClusterRoleBinding {
    serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": STAGES_ROLE, "labels": {"app.kubernetes.io/managed-by": "kubemock"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": STAGES_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": SIMULATOR_USER}],
    }))
    .expect("the binding is a valid ClusterRoleBinding")
}

/// The ClusterRoleBinding of [`SIMULATOR_USER`] to [`SIMULATOR_ROLE`].
pub fn simulator_binding() -> ClusterRoleBinding {
    serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": SIMULATOR_USER, "labels": {"app.kubernetes.io/managed-by": "kubemock"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": SIMULATOR_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": SIMULATOR_USER}],
    }))
    .expect("the binding is a valid ClusterRoleBinding")
}

/// Creates the simulated kubelets' ClusterRoleBindings (and [`STAGES_ROLE`]) with `admin` (a
/// client allowed to bind `system:node`) unless they exist; existing ones are left as they
/// are (an operator may have narrowed them on purpose).
pub async fn ensure_simulator_binding(admin: &Client) -> kubemock_client::Result<()> {
    let exists_ok = |result: kubemock_client::Result<_>| match result {
        Ok(_) => Ok(()),
        Err(err) if err.is_already_exists() => Ok(()),
        Err(err) => Err(err),
    };
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    exists_ok(
        roles
            .create(&PostParams::default(), &stages_role())
            .await
            .map(|_| ()),
    )?;
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    exists_ok(
        bindings
            .create(&PostParams::default(), &stages_binding())
            .await
            .map(|_| ()),
    )?;
    exists_ok(
        bindings
            .create(&PostParams::default(), &simulator_binding())
            .await
            .map(|_| ()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binding_names_the_simulator_user_and_the_kubelet_role() {
        let binding = simulator_binding();
        assert_eq!(binding.metadata.name.as_deref(), Some(SIMULATOR_USER));
        assert_eq!(binding.role_ref.name, SIMULATOR_ROLE);
        let subjects = binding.subjects.expect("subjects");
        assert_eq!(
            (subjects[0].kind.as_str(), subjects[0].name.as_str()),
            ("User", SIMULATOR_USER)
        );
    }
}
