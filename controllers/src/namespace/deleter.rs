//! Empties a terminating namespace: for every served namespaced resource that can be
//! deleted (custom resources included), delete the collection (background propagation, so
//! the garbage collector never adds an orphan finalizer), then list what is left and why
//! (finalizers, pods in their grace period). One pass per sync; the controller repeats until
//! nothing is left (upstream `namespaced_resources_deleter.go`, `deleteAllContent`).

use k8s_openapi::api::core::v1::Pod;
use kubemock_client::{
    Api, ApiResource, Client, DeleteParams, DynamicObject, ListParams, Resource,
};

use super::conditions::ContentReport;
use crate::discovery::{self, ServedResource};

/// What a pass over a namespace's content found: the report for the conditions, and how long
/// the rest will probably take (seconds; upstream's estimate, 0 when nothing is pending).
#[derive(Debug, Default)]
pub(crate) struct Pass {
    pub(crate) report: ContentReport,
    pub(crate) estimate_seconds: i64,
}

/// Upstream's default estimate for objects held by finalizers (`finalizerEstimateSeconds`).
const FINALIZER_ESTIMATE_SECONDS: i64 = 15;

/// One pass: delete everything deletable in `namespace`, then count what remains.
pub(crate) async fn delete_all_content(client: &Client, namespace: &str) -> Pass {
    let mut pass = Pass::default();
    let discovered = match discovery::preferred_resources(client).await {
        Ok(discovered) => discovered,
        Err(err) => {
            pass.report.discovery_failure = Some(format!("{err}: {}", err.source));
            return pass;
        }
    };
    pass.report.discovery_failure = discovered.failure_message();
    for served in discovered
        .supporting(&["delete"])
        .filter(|s| s.resource.namespaced)
    {
        match delete_resource(client, served, namespace).await {
            Ok((remaining, estimate)) => {
                pass.estimate_seconds = pass.estimate_seconds.max(estimate);
                if remaining.is_empty() {
                    continue;
                }
                let key = format!("{}.{}", served.resource.plural, served.resource.group);
                pass.report.remaining.insert(key, remaining.len());
                let mut has_finalizers = false;
                for finalizer in remaining
                    .iter()
                    .flat_map(|o| o.meta().finalizers.iter().flatten())
                {
                    has_finalizers = true;
                    *pass.report.finalizers.entry(finalizer.clone()).or_default() += 1;
                }
                if estimate == 0 {
                    if has_finalizers {
                        pass.estimate_seconds =
                            pass.estimate_seconds.max(FINALIZER_ESTIMATE_SECONDS);
                    } else {
                        // Nothing explains why they are still here.
                        pass.report.delete_errors.push(format!(
                            "unexpected items still remain in namespace: {namespace} for gvr: {}",
                            gvr(&served.resource)
                        ));
                    }
                }
            }
            Err(err) => pass.report.delete_errors.push(err),
        }
    }
    pass
}

/// Go's `%v` of a GroupVersionResource: `{apps v1 deployments}`.
fn gvr(resource: &ApiResource) -> String {
    format!(
        "{{{} {} {}}}",
        resource.group, resource.version, resource.plural
    )
}

/// Deletes the content of one resource in `namespace`; returns what remains and the grace
/// estimate, or the error message.
async fn delete_resource(
    client: &Client,
    served: &ServedResource,
    namespace: &str,
) -> Result<(Vec<DynamicObject>, i64), String> {
    let resource = &served.resource;
    let api: Api<DynamicObject> = Api::dynamic(client.clone(), resource, Some(namespace));
    let describe = |err: kubemock_client::Error| format!("{}: {err}", gvr(resource));
    let estimate = if resource.group.is_empty() && resource.plural == "pods" {
        pods_grace_estimate(client, namespace)
            .await
            .map_err(describe)?
    } else {
        0
    };
    let collection_deleted = if served.supports(&["deletecollection"]) {
        match api
            .delete_collection(&DeleteParams::background(), &ListParams::default())
            .await
        {
            Ok(_) => true,
            Err(err) if err.is_not_found() || err.code() == Some(405) => false,
            Err(err) => return Err(describe(err)),
        }
    } else {
        false
    };
    if !served.supports(&["list"]) {
        return Ok((Vec::new(), estimate));
    }
    if !collection_deleted {
        for item in api
            .list_all(&ListParams::default())
            .await
            .map_err(describe)?
            .items
        {
            let name = item.metadata.name.clone().unwrap_or_default();
            match api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(err) if err.is_not_found() => {}
                Err(err) => return Err(describe(err)),
            }
        }
    }
    let remaining = api
        .list_all(&ListParams::default())
        .await
        .map_err(describe)?
        .items;
    Ok((remaining, estimate))
}

/// Upstream's `estimateGracefulTerminationForPods`: the longest termination grace period of
/// the namespace's pods that are not finished.
async fn pods_grace_estimate(client: &Client, namespace: &str) -> kubemock_client::Result<i64> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let list = pods.list_all(&ListParams::default()).await?;
    Ok(list
        .items
        .iter()
        .filter(|pod| {
            !matches!(
                pod.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            )
        })
        .filter_map(|pod| pod.spec.as_ref()?.termination_grace_period_seconds)
        .max()
        .unwrap_or(0)
        .max(0))
}
