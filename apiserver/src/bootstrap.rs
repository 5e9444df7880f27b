//! The objects a cluster has from its first moment (issue 3, item 4): the namespaces
//! `default`, `kube-system`, `kube-public` and `kube-node-lease` (phase Active, `kubernetes`
//! finalizer), the `kubernetes` Service in `default`, and a `default` ServiceAccount in every
//! namespace (created by the API server whenever it creates a namespace: see
//! `handlers::create::ensure_default_service_account`). Created through the normal create
//! pipeline, and only when missing, so a durable store keeps its objects across restarts. The
//! `kubernetes` Service has the first address of the service range (it is created before any
//! other Service can take it).

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::handlers::create::{create_object, ensure_default_service_account};
use crate::identity::UserInfo;
use crate::managedfields::Writer;
use crate::object;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

/// The namespaces every cluster starts with.
pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];
/// The field manager of what the API server creates itself.
const SERVER_MANAGER: &str = "kube-apiserver";
/// The `kubernetes` Service's cluster IP with the default service range (10.96.0.0/12): its
/// first address.
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// How often, and how far apart, a server whose `kubernetes` Service's address another server
/// took looks for that server's Service before giving up (the other server died between its
/// allocation and its create: docs/etcd.md).
const KUBERNETES_SERVICE_POLLS: usize = 100;
const KUBERNETES_SERVICE_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Creates whatever startup object is missing.
pub(crate) async fn bootstrap(state: &AppState) -> ApiResult<()> {
    let registry = state.registry();
    let namespaces = registry
        .lookup("", "v1", "namespaces")
        .ok_or_else(|| ApiError::internal("namespaces are not registered"))?;
    let services = registry
        .lookup("", "v1", "services")
        .ok_or_else(|| ApiError::internal("services are not registered"))?;
    // Writes go out together, so a durable store flushes each round in one group commit: the
    // namespaces, then their service accounts with the `kubernetes` Service.
    futures_util::future::try_join_all(SYSTEM_NAMESPACES.iter().map(|name| {
        let namespace =
            object::with_type_meta(to_object(json!({"metadata": {"name": name}})), &namespaces);
        let namespaces = &namespaces;
        let writer = Writer::server(SERVER_MANAGER, namespaces);
        async move {
            ignore_exists(
                create_object(
                    state,
                    namespaces,
                    None,
                    namespace,
                    false,
                    Some(&writer),
                    UserInfo::apiserver(),
                )
                .await,
            )
        }
    }))
    .await?;
    let cluster_ip = state.config().service_cluster_ip_range.first().to_string();
    let service = object::with_type_meta(
        to_object(json!({
            "metadata": {
                "name": "kubernetes",
                "namespace": "default",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}],
                "clusterIP": cluster_ip,
                "clusterIPs": [cluster_ip],
                "type": "ClusterIP",
                "sessionAffinity": "None",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "internalTrafficPolicy": "Cluster",
            },
            "status": {"loadBalancer": {}},
        })),
        &services,
    );
    let writer = Writer::server(SERVER_MANAGER, &services);
    // Only when missing: creating it again would fail on its address (taken by itself)
    // before it could fail on its name.
    let key = crate::keys::object_key(&services, Some("default"), "kubernetes");
    let service = async {
        if state.fetch(&key).await?.is_some() {
            return Ok(());
        }
        let created = create_object(
            state,
            &services,
            Some("default"),
            service,
            false,
            Some(&writer),
            UserInfo::apiserver(),
        )
        .await;
        match created {
            // Another server over the same store (docs/etcd.md) took the address first and
            // is creating the Service: wait for it.
            Err(err) if err.code == StatusCode::UNPROCESSABLE_ENTITY => {
                for _ in 0..KUBERNETES_SERVICE_POLLS {
                    if state.fetch(&key).await?.is_some() {
                        return Ok(());
                    }
                    tokio::time::sleep(KUBERNETES_SERVICE_POLL).await;
                }
                Err(err)
            }
            other => ignore_exists(other),
        }
    };
    let accounts = futures_util::future::try_join_all(
        SYSTEM_NAMESPACES
            .iter()
            .map(|name| ensure_default_service_account(state, name)),
    );
    futures_util::future::try_join(service, accounts).await?;
    Ok(())
}

fn to_object(value: Value) -> object::Object {
    match value {
        Value::Object(object) => object,
        _ => object::Object::new(),
    }
}

fn ignore_exists(result: ApiResult<object::Object>) -> ApiResult<()> {
    match result {
        Ok(_) => Ok(()),
        Err(err) if err.reason == "AlreadyExists" => Ok(()),
        Err(err) => Err(err),
    }
}
