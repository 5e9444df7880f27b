//! Who the simulated kubelets are. A real kubelet is `system:node:<name>` in `system:nodes`,
//! authorized by the Node authorizer to its own node's objects only; kubemock does not enforce
//! the Node authorizer, and its simulated kubelets serve every simulated node from one
//! client, so they run as one user of their own, [`SIMULATOR_USER`], bound to the bootstrap
//! policy's `system:node` ClusterRole (the kubelet's permissions, without the Node
//! authorizer's restriction to one node) by a ClusterRoleBinding kubemock creates, named like
//! the user. (kwok runs its simulated kubelets with an administrator's kubeconfig.)

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kubemock_client::{Api, Client, PostParams};
use serde_json::json;

/// The user the simulated kubelets authenticate as, and the name of its ClusterRoleBinding.
pub const SIMULATOR_USER: &str = "kubemock:node-simulator";

/// The ClusterRole the simulated kubelets are bound to: the bootstrap policy's kubelet role
/// (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`, `NodeRules`).
pub const SIMULATOR_ROLE: &str = "system:node";

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

/// Creates the simulated kubelets' ClusterRoleBinding with `admin` (a client allowed to bind
/// `system:node`) unless it exists; an existing one is left as it is (an operator may have
/// narrowed it on purpose).
pub async fn ensure_simulator_binding(admin: &Client) -> kubemock_client::Result<()> {
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    match bindings
        .create(&PostParams::default(), &simulator_binding())
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if err.is_already_exists() => Ok(()),
        Err(err) => Err(err),
    }
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
