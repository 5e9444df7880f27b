//! The `kubernetes.io/kube-apiserver-client` signer (kube-controller-manager's `csrsigning`
//! controller, `pkg/controller/certificates/signer/signer.go`): an approved, not failed,
//! CertificateSigningRequest of that signer gets a certificate from the cluster CA (`pki`) in
//! `status.certificate`, valid for `spec.expirationSeconds` within the signer's bounds; one
//! whose usages the signer does not allow gets a `Failed` condition instead. It runs inside the
//! API server because the CA's key lives there.
//!
//! Requests for other signers are left alone, as a cluster without their signer leaves them.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures_util::StreamExt;
use kubemock_storage::{Guard, KeyValue, RangeRequest, UpdateOutcome, WatchItem};
use serde_json::{Value, json};
use tracing::warn;

use crate::admission::certificates;
use crate::keys;
use crate::managedfields::{self, Writer};
use crate::meta;
use crate::object::{self, Object};
use crate::registry::Resource;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

/// The signer this controller is.
pub(crate) const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
/// The longest certificate it issues (`--cluster-signing-duration`, one year by default).
const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// The shortest (`csr.ExpirationSecondsToDuration` is bounded below by ten minutes).
const MIN_DURATION: Duration = Duration::from_secs(600);
/// kube-controller-manager's field manager.
const MANAGER: &str = "kube-controller-manager";
/// How soon a failed pass is tried again.
const RETRY: Duration = Duration::from_millis(200);

/// Runs the signer in the background until the server shuts down.
pub(crate) fn start(state: &AppState) {
    let background = state.clone();
    state
        .tasks()
        .spawn(crate::meta::keep_clock(run(background)));
}

fn requests(state: &AppState) -> Option<std::sync::Arc<Resource>> {
    state
        .registry()
        .lookup("certificates.k8s.io", "v1", "certificatesigningrequests")
}

async fn run(state: AppState) {
    let Some(resource) = requests(&state) else {
        return;
    };
    let prefix = keys::resource_prefix(&resource);
    loop {
        let revision = match pass(&state, &resource, &prefix).await {
            Ok(revision) => revision,
            Err(err) => {
                warn!(error = %err.message, "certificate signer");
                tokio::select! {
                    () = state.shutdown().cancelled() => return,
                    () = tokio::time::sleep(RETRY) => continue,
                }
            }
        };
        let Ok(mut watch) = state.store().watch(prefix.clone().into(), revision).await else {
            tokio::select! {
                () = state.shutdown().cancelled() => return,
                () = tokio::time::sleep(RETRY) => continue,
            }
        };
        loop {
            tokio::select! {
                () = state.shutdown().cancelled() => return,
                item = watch.next() => match item {
                    Some(Ok(WatchItem::Progress(_))) => {}
                    _ => break,
                },
            }
        }
    }
}

/// Signs (or fails) every request that waits for this signer; returns the revision read at.
async fn pass(state: &AppState, resource: &Resource, prefix: &str) -> ApiResult<u64> {
    let listed = state
        .store()
        .range(RangeRequest::prefix(prefix.to_owned()))
        .await
        .map_err(ApiError::from_storage)?;
    for kv in listed.items {
        handle(state, resource, kv).await?;
    }
    Ok(listed.revision)
}

fn has_true_condition(csr: &Object, kind: &str) -> bool {
    csr.get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == kind && c["status"] == "True")
        })
}

/// `validAPIServerClientUsages`: digital signature and key encipherment may be asked for,
/// client auth must be.
fn check_usages(usages: &[&str]) -> Result<(), String> {
    let mut client_auth = false;
    for usage in usages {
        match *usage {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if client_auth {
        Ok(())
    } else {
        Err("missing required usage for client certificate: client auth".to_owned())
    }
}

/// The validity of the certificate for a request asking for `expiration_seconds`.
fn validity(expiration_seconds: Option<i64>) -> Duration {
    match expiration_seconds.and_then(|s| u64::try_from(s).ok()) {
        None => MAX_DURATION,
        Some(seconds) => Duration::from_secs(seconds).clamp(MIN_DURATION, MAX_DURATION),
    }
}

async fn handle(state: &AppState, resource: &Resource, kv: KeyValue) -> ApiResult<()> {
    let csr = object::parse_stored(&kv.value)?;
    let approved = has_true_condition(&csr, "Approved") && !has_true_condition(&csr, "Denied");
    if !approved || has_true_condition(&csr, "Failed") {
        return Ok(());
    }
    let spec = csr.get("spec").cloned().unwrap_or(Value::Null);
    if spec.get("signerName").and_then(Value::as_str) != Some(KUBE_APISERVER_CLIENT) {
        return Ok(());
    }
    let already = csr
        .get("status")
        .and_then(|s| s.get("certificate"))
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty());
    let usages: Vec<&str> = spec
        .get("usages")
        .and_then(Value::as_array)
        .map(|u| u.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut updated = csr.clone();
    let status = match updated.entry("status").or_insert_with(|| json!({})) {
        Value::Object(status) => status,
        _ => return Ok(()),
    };
    match check_usages(&usages) {
        Err(message) => {
            let conditions = status.entry("conditions").or_insert_with(|| json!([]));
            if let Value::Array(conditions) = conditions {
                let now = meta::now_rfc3339();
                conditions.push(json!({"type": "Failed", "status": "True",
                    "reason": "SignerValidationFailure", "message": message,
                    "lastUpdateTime": now, "lastTransitionTime": now}));
            }
        }
        Ok(()) if already => return Ok(()),
        Ok(()) => {
            let Some(request) = certificates::request_pem(&Value::Object(csr.clone())) else {
                return Ok(());
            };
            let expiration = spec.get("expirationSeconds").and_then(Value::as_i64);
            let certificate = match state.pki().issue_client_certificate(
                &request,
                &usages,
                validity(expiration),
            ) {
                Ok(certificate) => certificate,
                Err(err) => {
                    // As upstream: a request it cannot sign is retried, and logged.
                    warn!(name = object::name_of(&csr), error = %err, "cannot sign the certificate request");
                    return Ok(());
                }
            };
            status.insert(
                "certificate".to_owned(),
                json!(STANDARD.encode(certificate)),
            );
        }
    }
    let writer = Writer::server(MANAGER, resource).on_subresource("status");
    managedfields::record_update(resource, &writer, Some(&csr), &mut updated);
    let bytes = object::to_stored(&updated)?;
    match state
        .store()
        .update(kv.key, bytes, Guard::ModRevision(kv.mod_revision))
        .await
        .map_err(ApiError::from_storage)?
    {
        // A conflict: the request changed meanwhile, and its event brings it back.
        UpdateOutcome::Updated { .. } | UpdateOutcome::Conflict(_) | UpdateOutcome::NotFound => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_signer_wants_client_auth_and_allows_little_else() {
        assert_eq!(
            check_usages(&["digital signature", "key encipherment", "client auth"]),
            Ok(())
        );
        assert_eq!(
            check_usages(&["client auth", "server auth"]),
            Err("invalid usage for client certificate: server auth".to_owned())
        );
        assert_eq!(
            check_usages(&["digital signature"]),
            Err("missing required usage for client certificate: client auth".to_owned())
        );
    }

    #[test]
    fn certificates_last_as_asked_within_the_signers_bounds() {
        assert_eq!(validity(None), MAX_DURATION);
        assert_eq!(validity(Some(3600)), Duration::from_secs(3600));
        assert_eq!(validity(Some(1)), MIN_DURATION);
        assert_eq!(validity(Some(i64::MAX)), MAX_DURATION);
    }
}
