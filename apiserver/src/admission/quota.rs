//! The ResourceQuota admission plugin (`staging/src/k8s.io/apiserver/pkg/admission/plugin/
//! resourcequota/controller.go`, `checkRequest`; `plugin/pkg/admission/resourcequota`): a new
//! object is charged against every quota of its namespace that covers it, and refused with
//! upstream's 403 when one would be exceeded (`exceeded quota: q, requested: pods=1, used:
//! pods=2, limited: pods=2`), when a quota on cpu or memory finds a container without them
//! (`failed quota: q: must specify limits.cpu for: app`), or when a quota's usage is not
//! known yet (`status unknown for quota`). The charge is written to the quota's
//! `status.used` with a compare-and-swap on its revision, retried on a conflict with the
//! quotas read again, so two concurrent creates cannot both take the last unit. The quota
//! controller later recounts `status.used` from what the namespace holds.
//!
//! Only creates are charged (upstream also charges pod `resize` updates, which kubemock does
//! not serve, and claim growth, which it refuses). Admission configuration
//! (`limitedResources`) is not read.

use serde_json::Value;

use kubemock_apimachinery::quota::{self, ResourceList};
use kubemock_storage::{Guard, RangeRequest, UpdateOutcome};

use crate::keys;
use crate::object::{self, Object};
use crate::registry::Resource;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

/// Attempts at charging the quotas before giving up: each conflict means another request
/// charged one of them first, and the next attempt reads them again.
const CHARGE_ATTEMPTS: usize = 16;

/// Resources never charged (`ignoredResources`, `pkg/quota/v1/install/registry.go`): virtual
/// ones, and Events.
const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];

/// Charges the new `object` of `resource` in `namespace` against its namespace's quotas, or
/// refuses it. A dry run is checked, not charged.
pub(crate) async fn charge_create(
    state: &AppState,
    resource: &Resource,
    namespace: Option<&str>,
    object: &Object,
    dry_run: bool,
) -> ApiResult<()> {
    let Some(namespace) = namespace.filter(|_| resource.namespaced) else {
        return Ok(());
    };
    if IGNORED.contains(&(resource.group.as_str(), resource.plural.as_str())) {
        return Ok(());
    }
    let Some(quotas) = state.registry().lookup("", "v1", "resourcequotas") else {
        return Ok(());
    };
    let prefix = keys::collection_prefix(&quotas, Some(namespace));
    // Built once a quota is found: most namespaces have none, and copying the object for
    // every create cost it for nothing.
    let mut item: Option<Value> = None;
    let forbidden =
        |why: String| ApiError::forbidden(resource, object::name_of(object), &why, Vec::new());
    for _ in 0..CHARGE_ATTEMPTS {
        let page = state
            .store()
            .range(RangeRequest::prefix(prefix.clone()))
            .await
            .map_err(ApiError::from_storage)?;
        if page.items.is_empty() {
            return Ok(());
        }
        let stored: Vec<(bytes::Bytes, u64, Value)> = page
            .items
            .iter()
            .filter_map(|kv| {
                let value = object::parse_stored(&kv.value).ok()?;
                Some((kv.key.clone(), kv.mod_revision, Value::Object(value)))
            })
            .collect();
        let item = item.get_or_insert_with(|| Value::Object(object.clone()));
        let charges = check(
            &resource.group,
            &resource.plural,
            item,
            &stored.iter().map(|(_, _, q)| q).collect::<Vec<_>>(),
            crate::meta::now_unix_nanos(),
        )
        .map_err(forbidden)?;
        if dry_run || charges.is_empty() {
            return Ok(());
        }
        let mut conflicted = false;
        for (index, used) in charges {
            let (key, revision, quota) = &stored[index];
            let Value::Object(mut updated) = quota.clone() else {
                continue;
            };
            if let Some(status) = updated.get_mut("status").and_then(Value::as_object_mut) {
                status.insert("used".to_owned(), quota::to_json(&used));
            }
            let bytes = object::to_stored(&updated)?;
            match state
                .store()
                .update(key.clone(), bytes, Guard::ModRevision(*revision))
                .await
                .map_err(ApiError::from_storage)?
            {
                UpdateOutcome::Updated { .. } => {}
                UpdateOutcome::Conflict(_) | UpdateOutcome::NotFound => {
                    // Quotas charged before this one keep the charge (upstream's partial
                    // updates too): the quota controller recounts them.
                    conflicted = true;
                    break;
                }
            }
        }
        if !conflicted {
            return Ok(());
        }
    }
    Err(ApiError::internal("resource quota evaluation timed out"))
}

/// Upstream's `checkRequest` for a create: the quotas (by index in `quotas`) whose
/// `status.used` the new object `item` of `group`/`resource` changes, with their new usage;
/// or the reason it is refused.
pub(crate) fn check(
    group: &str,
    resource: &str,
    item: &Value,
    quotas: &[&Value],
    now_nanos: i128,
) -> Result<Vec<(usize, ResourceList)>, String> {
    let mut covering = Vec::new();
    for (index, quota_object) in quotas.iter().enumerate() {
        if !quota::matches(quota_object, group, resource, item) {
            continue;
        }
        let quota_name = quota_object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let hard = quota::from_json(quota_object.pointer("/status/hard"));
        let restricted: Vec<String> = hard
            .keys()
            .filter(|name| quota::tracks(group, resource, name))
            .cloned()
            .collect();
        if (group, resource) == ("", "pods")
            && let Some(why) = quota::pod_constraints(item, &restricted)
        {
            return Err(format!("failed quota: {quota_name}: {why}"));
        }
        let used = quota::from_json(quota_object.pointer("/status/used"));
        if restricted.iter().any(|name| !used.contains_key(name)) {
            return Err(format!(
                "status unknown for quota: {quota_name}, resources: {}",
                restricted.join(",")
            ));
        }
        covering.push(index);
    }
    let delta = quota::usage(group, resource, item, now_nanos);
    let negative = quota::negative(&delta);
    if !negative.is_empty() {
        return Err(format!(
            "quota usage is negative for resource(s): {}",
            negative.join(",")
        ));
    }
    let delta = quota::remove_zeros(&delta);
    let mut charges = Vec::new();
    if delta.is_empty() {
        return Ok(charges);
    }
    for index in covering {
        let quota_object = quotas[index];
        let quota_name = quota_object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let hard = quota::from_json(quota_object.pointer("/status/hard"));
        let used = quota::from_json(quota_object.pointer("/status/used"));
        let requested = quota::mask(&delta, hard.keys());
        let new_usage = quota::add(&used, &requested);
        let masked = quota::mask(&new_usage, requested.keys());
        let exceeded = quota::exceeded(&masked, &hard);
        if !exceeded.is_empty() {
            return Err(format!(
                "exceeded quota: {quota_name}, requested: {}, used: {}, limited: {}",
                quota::pretty(&quota::mask(&requested, &exceeded)),
                quota::pretty(&quota::mask(&used, &exceeded)),
                quota::pretty(&quota::mask(&hard, &exceeded)),
            ));
        }
        if new_usage != used {
            charges.push((index, new_usage));
        }
    }
    Ok(charges)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn quota(name: &str, hard: Value, used: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": {"hard": hard},
            "status": {"hard": hard, "used": used}})
    }

    fn pod(resources: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "resources": resources}]},
            "status": {"qosClass": "BestEffort"}})
    }

    #[test]
    fn the_pod_past_the_limit_is_refused_with_upstreams_message() {
        let q = quota("pods", json!({"pods": "2"}), json!({"pods": "1"}));
        let charges = check("", "pods", &pod(json!({})), &[&q], 0).expect("fits");
        assert_eq!(quota::pretty(&charges[0].1), "pods=2");
        let full = quota("pods", json!({"pods": "2"}), json!({"pods": "2"}));
        assert_eq!(
            check("", "pods", &pod(json!({})), &[&full], 0),
            Err(
                "exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2".to_owned()
            )
        );
    }

    #[test]
    fn a_quota_on_limits_wants_them_and_an_unknown_status_refuses() {
        let q = quota(
            "compute",
            json!({"limits.cpu": "2"}),
            json!({"limits.cpu": "0"}),
        );
        assert_eq!(
            check("", "pods", &pod(json!({})), &[&q], 0),
            Err("failed quota: compute: must specify limits.cpu for: app".to_owned())
        );
        let with = pod(json!({"limits": {"cpu": "500m"}, "requests": {"cpu": "500m"}}));
        assert_eq!(
            quota::pretty(&check("", "pods", &with, &[&q], 0).expect("fits")[0].1),
            "limits.cpu=500m"
        );
        let fresh = json!({"metadata": {"name": "fresh"}, "status": {"hard": {"pods": "1"}}});
        assert_eq!(
            check("", "pods", &pod(json!({})), &[&fresh], 0),
            Err("status unknown for quota: fresh, resources: pods".to_owned())
        );
    }

    #[test]
    fn objects_no_quota_tracks_pass_uncharged() {
        let q = quota("pods", json!({"pods": "0"}), json!({"pods": "0"}));
        assert_eq!(
            check("", "configmaps", &json!({}), &[&q], 0),
            Ok(Vec::new())
        );
        let counts = quota(
            "counts",
            json!({"count/deployments.apps": "1"}),
            json!({"count/deployments.apps": "1"}),
        );
        assert!(
            check("apps", "deployments", &json!({}), &[&counts], 0)
                .is_err_and(|e| e
                    .starts_with("exceeded quota: counts, requested: count/deployments.apps=1"))
        );
    }
}
