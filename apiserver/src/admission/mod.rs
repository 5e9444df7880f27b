//! Admission: what the real API server does to an object of a built-in kind between decoding
//! it and storing it — defaulting (`pkg/apis/*/v1/defaults.go`, on every decode, so on updates
//! too), the registry strategies' create-time preparation (initial status, a Job's selector),
//! the admission plugins whose traces users see on a created pod, validation
//! (`pkg/apis/*/validation`, one 422 cause per field), and the allocation of Service cluster
//! IPs and node ports. docs/api-behaviour.md#server-side-defaults lists what clients commonly observe.
//!
//! Which kind a resource is comes from its registry entry (`Behaviour::admission`); the verb
//! handlers make one call each: [`admit_create`], [`admit_update`], and [`deleted`] once an
//! object is gone (a Service gives back its addresses). Objects stored in another API's form
//! (events.k8s.io/v1 Events are core/v1 Events, docs/api-behaviour.md#events) pass [`to_storage`] on the way in and
//! [`from_storage`] on the way out.
//!
//! # Layout
//! - `fields`: field errors in the real wording and the Go renderings of the values they quote.
//! - `pods`: pod spec and container defaults (pods and templates), pod admission, pod rules.
//! - `workloads`: Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs,
//!   ReplicationControllers, PodTemplates.
//! - `services`: Service defaults, validation and allocation; `allocator`: the address sets.
//! - `config`: ConfigMaps and Secrets.
//! - `storage`: PersistentVolumeClaims, PersistentVolumes and StorageClasses (the default class,
//!   the protection finalizers).
//! - `events`: Events and Leases (docs/api-behaviour.md#leases-and-events).
//! - `rbac`: Roles, ClusterRoles and their bindings.
//! - `quota`: the ResourceQuota plugin: new objects charged against their namespace's quotas.
//! - `policies`: webhook configurations' `matchConditions`, ValidatingAdmissionPolicies and
//!   their bindings (defaults, and CEL compiled when written).

mod apiservices;
mod autoscaling;
pub(crate) mod certificates;
mod config;
mod events;
mod fields;
mod pods;
mod policies;
pub(crate) mod quota;
mod rbac;
mod services;
mod storage;
mod workloads;

use std::borrow::Cow;

use serde_json::{Value, json};
use tracing::{debug, warn};

pub(crate) use fields::{selector_is_empty, selector_matches};

use crate::allocator::Reservation;
use crate::identity::UserInfo;
use crate::meta::{self, FieldError};
use crate::object::{self, Object};
use crate::registry::{Admission, Resource};
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

/// The defaults decoding applies (`pkg/apis/*/v1/defaults.go`, and the decode-time
/// conversions and checks: a 400 when they fail), for callers that need them before the rest
/// of admission (the field manager records the writer's fields between the two). Idempotent:
/// [`admit_create`] applies them too.
pub(crate) fn apply_defaults(resource: &Resource, object: &mut Object) -> ApiResult<()> {
    default(resource.behaviour.admission, object)
}

/// Admits a new object: defaults, create-time preparation, validation and (Services)
/// allocation, for `user`'s request (a CertificateSigningRequest records its requester). The
/// returned reservation must be committed once the object is stored; dropping it gives back
/// what it took.
pub(crate) async fn admit_create(
    state: &AppState,
    resource: &Resource,
    object: &mut Object,
    dry_run: bool,
    user: &UserInfo,
) -> ApiResult<Reservation> {
    let admission = resource.behaviour.admission;
    if admission == Admission::None {
        return Ok(Reservation::default());
    }
    default(admission, object)?;
    if admission == Admission::Pod {
        resolve_priority(state, resource, object).await?;
    }
    if admission == Admission::PersistentVolumeClaim && !storage::claim_has_class(object) {
        default_storage_class(state, object).await?;
    }
    prepare_create(
        admission,
        object,
        user,
        state.config().service_account_admission,
    );
    if matches!(
        admission,
        Admission::Namespace | Admission::Job | Admission::DaemonSet
    ) {
        // Their defaults may add labels: keep metadata in the real server's order.
        meta::canonicalize_metadata(object::metadata_mut(object));
    }
    let mut errors = Vec::new();
    validate(admission, object, &mut errors);
    if admission == Admission::Pod {
        pods::validate_pod_create(object, &mut errors);
    }
    match admission {
        Admission::WebhookConfiguration => {
            policies::validate_webhook_configuration(object, None, &mut errors);
        }
        Admission::ValidatingAdmissionPolicy => {
            policies::validate_policy(object, None, &mut errors);
        }
        _ => {}
    }
    if !errors.is_empty() {
        return Err(invalid(resource, object, errors));
    }
    if admission != Admission::Service {
        return Ok(Reservation::default());
    }
    let allocator = state.service_allocator().await?;
    services::allocate(&allocator, None, object, dry_run)
        .await
        .map_err(|failure| failure.into_error(|errors| invalid(resource, object, errors)))
}

/// Admits an update of `existing` to `object` (the request's body, or the patched object):
/// defaults (on both: the stored object is read as the real server decodes it), what the
/// strategy keeps from the old object, validation including the kind's immutable fields, and
/// (Services) allocation. Subresource writes (`status`, `finalize`) are not admitted here.
pub(crate) async fn admit_update(
    state: &AppState,
    resource: &Resource,
    subresource: Option<&str>,
    existing: &Object,
    object: &mut Object,
    dry_run: bool,
) -> ApiResult<Reservation> {
    let admission = resource.behaviour.admission;
    // A CertificateSigningRequest is validated once merged (`validate_merged`): what its
    // strategies keep of the old object decides what the body may say.
    if matches!(
        admission,
        Admission::None | Admission::CertificateSigningRequest
    ) || subresource.is_some()
    {
        return Ok(Reservation::default());
    }
    let mut old = existing.clone();
    // The stored object was admitted when written; a store written by an older, laxer build
    // must not make it impossible to update (the client's object is what is checked).
    if let Err(err) = default(admission, &mut old) {
        debug!(message = %err.message, "the stored object does not decode strictly");
    }
    default(admission, object)?;
    if admission == Admission::Service {
        services::prepare_update(&old, object);
    }
    if admission == Admission::DaemonSet {
        workloads::set_template_generation(object, Some(&old));
        meta::canonicalize_metadata(object::metadata_mut(object));
    }
    let mut errors = Vec::new();
    match admission {
        Admission::Event => events::validate_event_update(&old, object, false, &mut errors),
        Admission::EventV1 => events::validate_event_update(&old, object, true, &mut errors),
        _ => {
            validate(admission, object, &mut errors);
            validate_update(admission, &old, object, &mut errors);
        }
    }
    if !errors.is_empty() {
        return Err(invalid(resource, object, errors));
    }
    if admission == Admission::PersistentVolumeClaim {
        let allows = storage_class_allows_expansion(state, storage::claim_class(object)).await?;
        if let Some(why) = storage::resize_refusal(existing, object, allows) {
            let name = object::name_of(object).to_owned();
            return Err(ApiError::forbidden(resource, &name, why, Vec::new()));
        }
    }
    if admission != Admission::Service {
        return Ok(Reservation::default());
    }
    let allocator = state.service_allocator().await?;
    services::allocate(&allocator, Some(&old), object, dry_run)
        .await
        .map_err(|failure| failure.into_error(|errors| invalid(resource, object, errors)))
}

/// Admits the object an update of `existing` will store, once the strategies have merged it
/// (`handlers::update::merge`): the kinds whose update paths validate what they keep
/// (CertificateSigningRequests and their `/status` and `/approval`; a pod's `/status`, whose
/// QoS class is immutable; a pod's `/ephemeralcontainers`, defaulted and validated as
/// `podEphemeralContainersStrategy` does).
pub(crate) fn validate_merged(
    resource: &Resource,
    subresource: Option<&str>,
    existing: &Object,
    updated: &mut Object,
) -> ApiResult<()> {
    let mut errors = Vec::new();
    match (resource.behaviour.admission, subresource) {
        (Admission::CertificateSigningRequest, _) => certificates::validate_update(
            existing,
            updated,
            certificates::Options::of(subresource),
            &mut errors,
        ),
        (Admission::Pod, Some("status")) => {
            pods::validate_status_update(existing, updated, &mut errors);
        }
        (Admission::Pod, Some("ephemeralcontainers")) => {
            pods::default_pod(updated);
            pods::validate_pod_spec(updated.get("spec"), "spec", &mut errors);
            pods::validate_ephemeral_update(existing, updated, &mut errors);
        }
        _ => return Ok(()),
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(invalid(resource, updated, errors))
    }
}

/// Called once an object of `resource` is removed from the store, with its last stored bytes:
/// a Service gives back its cluster IP and node ports.
pub(crate) async fn deleted(state: &AppState, resource: &Resource, stored: &[u8]) {
    if resource.behaviour.admission != Admission::Service {
        return;
    }
    let Ok(service) = serde_json::from_slice::<Value>(stored) else {
        return;
    };
    match state.service_allocator().await {
        Ok(allocator) => {
            allocator
                .release(&crate::allocator::Held::of_service(&service))
                .await;
        }
        Err(err) => {
            warn!(message = %err.message, "the service allocator is unavailable; addresses not released")
        }
    }
}

/// The Priority admission plugin: a pod's priority (and preemption policy) come from its
/// PriorityClass (the built-in `system-*` ones, a stored one, or the global default when it
/// names none); a missing class or a priority that disagrees with the class is a 403.
async fn resolve_priority(
    state: &AppState,
    resource: &Resource,
    pod: &mut Object,
) -> ApiResult<()> {
    let class_name = fields::obj_at(pod, &["spec", "priorityClassName"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let class = if let Some((_, value)) = pods::SYSTEM_PRIORITY_CLASSES
        .iter()
        .find(|(name, _)| *name == class_name)
    {
        Some(json!({"value": value}))
    } else {
        priority_class(state, &class_name).await?
    };
    let name = object::name_of(pod).to_owned();
    let forbidden = |why: String| ApiError::forbidden(resource, &name, &why, Vec::new());
    let class = match class {
        Some(class) => class,
        // No class and no global default: priority 0.
        None if class_name.is_empty() => json!({"value": 0}),
        None => {
            return Err(forbidden(format!(
                "no PriorityClass with name {class_name} was found"
            )));
        }
    };
    let priority = class.get("value").and_then(Value::as_i64).unwrap_or(0);
    let policy = class
        .get("preemptionPolicy")
        .and_then(Value::as_str)
        .unwrap_or("PreemptLowerPriority")
        .to_owned();
    let spec = fields::child(pod, "spec");
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != priority
    {
        return Err(forbidden(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
        )));
    }
    if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
        && given != policy
    {
        return Err(forbidden(format!(
            "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
        )));
    }
    if class_name.is_empty()
        && let Some(default) = class.get("metadata").and_then(|m| m.get("name")).cloned()
    {
        spec.insert("priorityClassName".to_owned(), default);
    }
    spec.insert("priority".to_owned(), json!(priority));
    spec.insert("preemptionPolicy".to_owned(), json!(policy));
    Ok(())
}

/// The stored PriorityClass `name`, or with an empty name the global default one.
async fn priority_class(state: &AppState, name: &str) -> ApiResult<Option<Value>> {
    let Some(classes) = state
        .registry()
        .lookup("scheduling.k8s.io", "v1", "priorityclasses")
    else {
        return Ok(None);
    };
    let parse = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).ok();
    if !name.is_empty() {
        let key = crate::keys::object_key(&classes, None, name);
        let found = state.fetch(&key).await?;
        return Ok(found.and_then(|kv| parse(&kv.value)));
    }
    let prefix = crate::keys::resource_prefix(&classes);
    let page = state
        .store()
        .range(kubemock_storage::RangeRequest::prefix(prefix))
        .await
        .map_err(ApiError::from_storage)?;
    Ok(page
        .items
        .iter()
        .filter_map(|kv| parse(&kv.value))
        .find(|class| class.get("globalDefault").and_then(Value::as_bool) == Some(true)))
}

/// The DefaultStorageClass admission plugin (`plugin/pkg/admission/storage/storageclass/
/// setdefault`): a new claim that names no class gets the default StorageClass, if one is
/// marked.
async fn default_storage_class(state: &AppState, claim: &mut Object) -> ApiResult<()> {
    let Some(classes) = state
        .registry()
        .lookup("storage.k8s.io", "v1", "storageclasses")
    else {
        return Ok(());
    };
    let prefix = crate::keys::resource_prefix(&classes);
    let page = state
        .store()
        .range(kubemock_storage::RangeRequest::prefix(prefix))
        .await
        .map_err(ApiError::from_storage)?;
    let classes: Vec<Value> = page
        .items
        .iter()
        .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
        .collect();
    if let Some(name) = kubemock_apimachinery::volume::default_class_name(&classes) {
        fields::child(claim, "spec").insert("storageClassName".to_owned(), json!(name));
    }
    Ok(())
}

/// Whether the StorageClass `name` exists and sets `allowVolumeExpansion: true`.
async fn storage_class_allows_expansion(state: &AppState, name: &str) -> ApiResult<bool> {
    let Some(classes) = state
        .registry()
        .lookup("storage.k8s.io", "v1", "storageclasses")
    else {
        return Ok(false);
    };
    if name.is_empty() {
        return Ok(false);
    }
    let key = crate::keys::object_key(&classes, None, name);
    let found = state.fetch(&key).await?;
    Ok(found
        .and_then(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
        .and_then(|class| class.get("allowVolumeExpansion").and_then(Value::as_bool))
        .unwrap_or(false))
}

/// A stored object as `resource` serves it.
pub(crate) fn from_storage(resource: &Resource, object: Object) -> Object {
    match resource.behaviour.admission {
        Admission::EventV1 => events::core_to_v1(object),
        Admission::HorizontalPodAutoscaler => autoscaling::convert(object, autoscaling::V2),
        Admission::HorizontalPodAutoscalerV1 => autoscaling::convert(object, autoscaling::V1),
        _ => object,
    }
}

/// An events.k8s.io/v1 Event as the core/v1 Event it is stored as (docs/api-behaviour.md#events).
pub(crate) fn event_v1_to_core(event: &Object) -> Object {
    events::v1_to_core(event)
}

/// An object of `resource` in its stored form.
pub(crate) fn to_storage<'a>(resource: &Resource, object: &'a Object) -> Cow<'a, Object> {
    match resource.behaviour.admission {
        Admission::EventV1 => Cow::Owned(events::v1_to_core(object)),
        Admission::HorizontalPodAutoscalerV1 => {
            let mut v1 = object.clone();
            v1.insert("apiVersion".to_owned(), json!(autoscaling::V1));
            Cow::Owned(autoscaling::convert(v1, autoscaling::V2))
        }
        _ => Cow::Borrowed(object),
    }
}

/// The 422 for `object` of `resource` with these causes.
fn invalid(resource: &Resource, object: &Object, errors: Vec<FieldError>) -> ApiError {
    meta::invalid(
        &resource.qualified_kind(),
        &resource.group,
        &resource.kind,
        object::name_of(object),
        errors,
    )
}

/// Defaulting, as on every decode (and the decode-time conversions and checks: a Secret's
/// `stringData`, base64, timestamps: a 400 when they fail).
fn default(admission: Admission, object: &mut Object) -> ApiResult<()> {
    match admission {
        Admission::None => {}
        Admission::Namespace => {
            let name = object::name_of(object).to_owned();
            if !name.is_empty() {
                let labels = fields::child(object::metadata_mut(object), "labels");
                labels.insert("kubernetes.io/metadata.name".to_owned(), json!(name));
            }
            fields::default_to(fields::child(object, "status"), "phase", json!("Active"));
        }
        Admission::Pod => pods::default_pod(object),
        Admission::PodTemplate => workloads::default_pod_template(object),
        Admission::ReplicationController => workloads::default_replication_controller(object),
        Admission::Deployment => workloads::default_deployment(object),
        Admission::ReplicaSet => workloads::default_replica_set(object),
        Admission::StatefulSet => workloads::default_stateful_set(object),
        Admission::DaemonSet => workloads::default_daemon_set(object),
        Admission::Job => workloads::default_job(object),
        Admission::CronJob => workloads::default_cron_job(object),
        Admission::Service => services::default_service(object),
        Admission::ConfigMap => config::decode("ConfigMap", object)?,
        Admission::PersistentVolumeClaim => storage::default_claim(object),
        Admission::PersistentVolume => storage::default_volume(object),
        Admission::StorageClass => storage::default_class(object),
        Admission::Secret => {
            config::decode("Secret", object)?;
            config::default_secret(object);
        }
        Admission::Event => {
            events::normalize_times("Event", "Event", object)?;
            events::default_event(object);
        }
        Admission::EventV1 => events::normalize_times("EventV1", "Event", object)?,
        Admission::HorizontalPodAutoscaler => autoscaling::default_v2(object),
        Admission::HorizontalPodAutoscalerV1 => autoscaling::default_v1(object),
        Admission::Lease => events::normalize_times("Lease", "Lease", object)?,
        Admission::ApiService => apiservices::default(object),
        Admission::CertificateSigningRequest
        | Admission::WebhookConfiguration
        | Admission::Fault
        | Admission::Stage => {}
        Admission::ValidatingAdmissionPolicy => policies::default_policy(object),
        Admission::ValidatingAdmissionPolicyBinding => policies::default_binding(object),
        Admission::Role
        | Admission::ClusterRole
        | Admission::RoleBinding
        | Admission::ClusterRoleBinding => {
            if let Some(kind) = rbac_kind(admission) {
                rbac::default(kind, object);
            }
        }
    }
    Ok(())
}

/// The strategies' `PrepareForCreate` (status reset, generated fields) and the admission
/// plugins that act on creates.
fn prepare_create(
    admission: Admission,
    object: &mut Object,
    user: &UserInfo,
    service_accounts: bool,
) {
    let kind = match admission {
        Admission::Namespace => {
            let spec = fields::child(object, "spec");
            let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
            if let Value::Array(finalizers) = finalizers
                && !finalizers.iter().any(|f| f == "kubernetes")
            {
                finalizers.push(json!("kubernetes"));
            }
            object.insert("status".to_owned(), json!({"phase": "Active"}));
            return;
        }
        Admission::Pod => {
            pods::admit_new_pod(object, service_accounts);
            return;
        }
        Admission::Service => {
            services::reset_status(object);
            return;
        }
        Admission::ApiService => {
            apiservices::prepare_create(object);
            return;
        }
        Admission::CertificateSigningRequest => {
            certificates::prepare_create(object, user);
            return;
        }
        Admission::PersistentVolumeClaim | Admission::PersistentVolume => {
            storage::prepare_create(object, admission == Admission::PersistentVolume);
            return;
        }
        // The status is the server's (`faults::flush`).
        Admission::Fault => {
            object.shift_remove("status");
            return;
        }
        Admission::Job => {
            workloads::generate_job_selector(object);
            "Job"
        }
        Admission::Deployment => "Deployment",
        Admission::ReplicaSet => "ReplicaSet",
        Admission::ReplicationController => "ReplicationController",
        Admission::StatefulSet => "StatefulSet",
        Admission::DaemonSet => {
            workloads::set_template_generation(object, None);
            "DaemonSet"
        }
        Admission::CronJob => "CronJob",
        _ => return,
    };
    object.insert("status".to_owned(), workloads::initial_status(kind));
}

/// The kind's validation of a whole object (create, and the new object of an update).
fn validate(admission: Admission, object: &Object, errors: &mut Vec<FieldError>) {
    match admission {
        Admission::Pod => pods::validate_pod_spec(object.get("spec"), "spec", errors),
        Admission::PodTemplate => workloads::validate_pod_template(object, errors),
        Admission::ReplicationController => {
            workloads::validate_replication_controller(object, errors);
        }
        Admission::Deployment => workloads::validate_deployment(object, errors),
        Admission::ReplicaSet => workloads::validate_replica_set(object, errors),
        Admission::StatefulSet => workloads::validate_stateful_set(object, errors),
        Admission::DaemonSet => workloads::validate_daemon_set(object, errors),
        Admission::Job => workloads::validate_job(object, errors),
        Admission::CronJob => workloads::validate_cron_job(object, errors),
        Admission::Service => services::validate_service(object, errors),
        Admission::ConfigMap => config::validate_config_map(object, errors),
        Admission::Secret => config::validate_secret(object, errors),
        Admission::PersistentVolumeClaim => storage::validate_claim(object, errors),
        Admission::PersistentVolume => storage::validate_volume(object, errors),
        Admission::StorageClass => storage::validate_class(object, errors),
        Admission::Event => events::validate_event(object, false, errors),
        Admission::EventV1 => events::validate_event(object, true, errors),
        Admission::Lease => events::validate_lease(object, errors),
        Admission::HorizontalPodAutoscaler | Admission::HorizontalPodAutoscalerV1 => {
            autoscaling::validate(object, errors);
        }
        Admission::ApiService => apiservices::validate(object, errors),
        Admission::CertificateSigningRequest => certificates::validate(object, errors),
        Admission::Role
        | Admission::ClusterRole
        | Admission::RoleBinding
        | Admission::ClusterRoleBinding => {
            if let Some(kind) = rbac_kind(admission) {
                rbac::validate(kind, object, errors);
            }
        }
        Admission::ValidatingAdmissionPolicyBinding => policies::validate_binding(object, errors),
        // Checked with the old object at hand (`admit_create`, `validate_update`).
        Admission::WebhookConfiguration | Admission::ValidatingAdmissionPolicy => {}
        Admission::Fault => {
            if let Err(found) = crate::faults::spec::compile(object) {
                errors.extend(found);
            }
        }
        // The compilation the simulated kubelet runs (`kubelet::stages`): what it would not
        // run is refused here.
        Admission::Stage => {
            let value = serde_json::Value::Object(object.clone());
            if let Err(found) = kubemock_apimachinery::stage::Stage::compile(&value) {
                errors.extend(found.into_iter().map(FieldError::from));
            }
        }
        Admission::None | Admission::Namespace => {}
    }
}

/// The RBAC kind an admission is, if it is one.
fn rbac_kind(admission: Admission) -> Option<rbac::Kind> {
    match admission {
        Admission::Role => Some(rbac::Kind::Role),
        Admission::ClusterRole => Some(rbac::Kind::ClusterRole),
        Admission::RoleBinding => Some(rbac::Kind::RoleBinding),
        Admission::ClusterRoleBinding => Some(rbac::Kind::ClusterRoleBinding),
        _ => None,
    }
}

/// The kind's update rules (immutable fields).
fn validate_update(
    admission: Admission,
    existing: &Object,
    object: &Object,
    errors: &mut Vec<FieldError>,
) {
    match admission {
        Admission::Pod => pods::validate_pod_update(existing, object, errors),
        Admission::Deployment => {
            workloads::validate_workload_update("Deployment", existing, object, errors);
        }
        Admission::ReplicaSet => {
            workloads::validate_workload_update("ReplicaSet", existing, object, errors);
        }
        Admission::StatefulSet => {
            workloads::validate_workload_update("StatefulSet", existing, object, errors);
        }
        Admission::DaemonSet => {
            workloads::validate_workload_update("DaemonSet", existing, object, errors);
        }
        Admission::Job => workloads::validate_workload_update("Job", existing, object, errors),
        Admission::Service => services::validate_service_update(existing, object, errors),
        Admission::ConfigMap => config::validate_update("ConfigMap", existing, object, errors),
        Admission::Secret => config::validate_update("Secret", existing, object, errors),
        Admission::PersistentVolumeClaim => {
            storage::validate_claim_update(existing, object, errors);
        }
        Admission::PersistentVolume => storage::validate_volume_update(existing, object, errors),
        Admission::StorageClass => storage::validate_class_update(existing, object, errors),
        Admission::WebhookConfiguration => {
            policies::validate_webhook_configuration(object, Some(existing), errors);
        }
        Admission::ValidatingAdmissionPolicy => {
            policies::validate_policy(object, Some(existing), errors);
        }
        _ => {
            if let Some(kind) = rbac_kind(admission) {
                rbac::validate_update(kind, existing, object, errors);
            }
        }
    }
}
