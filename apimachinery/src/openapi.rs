//! The OpenAPI schemas of the built-in kinds, generated from a maintained source (the
//! `k8s-openapi` crate's `schemars` implementations, of the Kubernetes version the build chose:
//! 1.33 here, docs/crates.md) rather than written by
//! hand. They feed the API server's OpenAPI documents (`kubectl explain`, validation
//! discovery) and its field validation, and give the protobuf codec ([`crate::protobuf`]) its
//! JSON names, so all three always agree.

use std::collections::HashMap;
use std::sync::LazyLock;

use k8s_openapi::api::{
    admissionregistration, apps, authentication, authorization, autoscaling, batch, certificates,
    coordination, core, discovery, events, flowcontrol, networking, node, policy, rbac, scheduling,
    storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

/// Where component schemas live in an OpenAPI v3 document.
pub const COMPONENTS_PREFIX: &str = "#/components/schemas/";

/// A kind's group, version and kind.
pub type KindKey = (String, String, String);

/// The schemas of every built-in kind, generated on first use (some milliseconds of CPU; a
/// server forces it in the background as it starts).
pub static SCHEMAS: LazyLock<Schemas> = LazyLock::new(Schemas::builtin);

/// Every built-in kind's schema, and the component schemas they reference.
pub struct Schemas {
    /// Component schemas by name (`io.k8s.api.apps.v1.Deployment`).
    components: Map<String, Value>,
    /// The component name of each kind.
    kinds: HashMap<KindKey, String>,
}

/// Adds the schema of `T` (and what it references) to `generator`; returns its kind and name.
fn kind_schema<T>(generator: &mut SchemaGenerator) -> (KindKey, String)
where
    T: k8s_openapi::Resource + schemars::JsonSchema,
{
    generator.subschema_for::<T>();
    (
        (
            T::GROUP.to_owned(),
            T::VERSION.to_owned(),
            T::KIND.to_owned(),
        ),
        T::schema_name().into_owned(),
    )
}

/// The kinds with schemas: one line per kind the registry serves, plus the kinds of
/// subresources (`Scale`, `Binding`, `Eviction`, `TokenRequest`).
macro_rules! kind_schemas {
    ($generator:expr; $($kind:ty),* $(,)?) => {
        vec![$(kind_schema::<$kind>($generator)),*]
    };
}

impl Schemas {
    /// Generates the schemas of every built-in kind (a few milliseconds; done once).
    pub fn builtin() -> Schemas {
        // OpenAPI 3's settings put references at `#/components/schemas/` (COMPONENTS_PREFIX).
        let mut generator = SchemaGenerator::new(SchemaSettings::openapi3());
        let kinds = kind_schemas![&mut generator;
            core::v1::Binding, core::v1::ComponentStatus, core::v1::ConfigMap,
            core::v1::Endpoints, core::v1::Event,
            core::v1::LimitRange, core::v1::Namespace, core::v1::Node,
            core::v1::PersistentVolume, core::v1::PersistentVolumeClaim, core::v1::Pod,
            core::v1::PodTemplate, core::v1::ReplicationController, core::v1::ResourceQuota,
            core::v1::Secret, core::v1::Service, core::v1::ServiceAccount,
            apps::v1::ControllerRevision, apps::v1::DaemonSet, apps::v1::Deployment,
            apps::v1::ReplicaSet, apps::v1::StatefulSet,
            autoscaling::v1::HorizontalPodAutoscaler, autoscaling::v1::Scale,
            autoscaling::v2::HorizontalPodAutoscaler,
            batch::v1::CronJob, batch::v1::Job,
            coordination::v1::Lease,
            discovery::v1::EndpointSlice,
            events::v1::Event,
            networking::v1::Ingress, networking::v1::IngressClass, networking::v1::NetworkPolicy,
            policy::v1::Eviction, policy::v1::PodDisruptionBudget,
            rbac::v1::ClusterRole, rbac::v1::ClusterRoleBinding, rbac::v1::Role,
            rbac::v1::RoleBinding,
            scheduling::v1::PriorityClass,
            storage::v1::CSIDriver, storage::v1::CSINode, storage::v1::CSIStorageCapacity,
            storage::v1::StorageClass, storage::v1::VolumeAttachment,
            apiextensions::v1::CustomResourceDefinition,
            apiregistration::v1::APIService,
            authentication::v1::SelfSubjectReview, authentication::v1::TokenRequest,
            authentication::v1::TokenReview,
            authorization::v1::LocalSubjectAccessReview,
            authorization::v1::SelfSubjectAccessReview,
            authorization::v1::SelfSubjectRulesReview, authorization::v1::SubjectAccessReview,
            certificates::v1::CertificateSigningRequest,
            admissionregistration::v1::MutatingWebhookConfiguration,
            admissionregistration::v1::ValidatingAdmissionPolicy,
            admissionregistration::v1::ValidatingAdmissionPolicyBinding,
            admissionregistration::v1::ValidatingWebhookConfiguration,
            flowcontrol::v1::FlowSchema, flowcontrol::v1::PriorityLevelConfiguration,
            node::v1::RuntimeClass,
        ];
        // Without schemars' OpenAPI transforms: k8s-openapi writes the schemas as the real
        // document has them (a `$ref` beside its `description`, no `nullable`).
        let mut components: Map<String, Value> = generator.take_definitions(false);
        components.sort_keys();
        let mut kinds_by_key = HashMap::new();
        for ((group, version, kind), name) in kinds {
            if let Some(Value::Object(schema)) = components.get_mut(&name) {
                // As the real document marks top-level kinds (`kubectl explain` looks for it).
                schema.insert(
                    "x-kubernetes-group-version-kind".to_owned(),
                    json!([{ "group": group, "kind": kind, "version": version }]),
                );
                // k8s-openapi requires `metadata`; the real schemas do not.
                if let Some(Value::Array(required)) = schema.get_mut("required") {
                    required.retain(|field| field != "metadata");
                    if required.is_empty() {
                        schema.shift_remove("required");
                    }
                }
            }
            kinds_by_key.insert((group, version, kind), name);
        }
        Schemas {
            components,
            kinds: kinds_by_key,
        }
    }

    /// The component name of a kind's schema.
    pub fn kind(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.kinds
            .get(&(group.to_owned(), version.to_owned(), kind.to_owned()))
            .map(String::as_str)
    }

    /// Every kind with a schema: (group, version, kind), in no particular order.
    pub fn kinds(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.kinds
            .keys()
            .map(|(group, version, kind)| (group.as_str(), version.as_str(), kind.as_str()))
    }

    /// A component schema by name.
    pub fn component(&self, name: &str) -> Option<&Value> {
        self.components.get(name)
    }

    /// `schema` with references followed (a `$ref` alone, or as schemars' single-element
    /// `allOf`): the component it ends at, and that component's name (`None` when `schema`
    /// is not a reference).
    pub fn follow<'a>(&'a self, mut schema: &'a Value) -> (Option<&'a str>, &'a Value) {
        let mut name = None;
        // References do not chain deeply; the bound only guards against a cycle.
        for _ in 0..16 {
            let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
                match schema
                    .get("allOf")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                {
                    Some([single]) => single.get("$ref").and_then(Value::as_str),
                    _ => None,
                }
            });
            let Some((component, target)) = reference
                .and_then(|r| r.strip_prefix(COMPONENTS_PREFIX))
                .and_then(|component| self.components.get_key_value(component))
            else {
                break;
            };
            name = Some(component.as_str());
            schema = target;
        }
        (name, schema)
    }

    /// The named components and every component they reference, transitively, sorted by
    /// name: what one group-version's document needs.
    pub fn closure<'a>(&self, roots: impl IntoIterator<Item = &'a str>) -> Map<String, Value> {
        let mut out = Map::new();
        let mut pending: Vec<String> = roots.into_iter().map(str::to_owned).collect();
        while let Some(name) = pending.pop() {
            if out.contains_key(&name) {
                continue;
            }
            let Some(schema) = self.components.get(&name) else {
                continue;
            };
            collect_references(schema, &mut pending);
            out.insert(name, schema.clone());
        }
        out.sort_keys();
        out
    }
}

/// Pushes the component names `value` references.
fn collect_references(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                match (key.as_str(), child) {
                    ("$ref", Value::String(reference)) => {
                        if let Some(name) = reference.strip_prefix(COMPONENTS_PREFIX) {
                            into.push(name.to_owned());
                        }
                    }
                    _ => collect_references(child, into),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_references(item, into)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_and_closures_are_complete() {
        let schemas = Schemas::builtin();
        let name = schemas
            .kind("apps", "v1", "Deployment")
            .expect("Deployment");
        assert_eq!(name, "io.k8s.api.apps.v1.Deployment");
        let deployment = schemas.component(name).expect("component");
        assert_eq!(
            deployment["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        assert!(deployment.get("required").is_none());
        let spec = schemas.follow(&deployment["properties"]["spec"]).1;
        assert!(spec["properties"]["template"].is_object());
        let closure = schemas.closure([name]);
        assert!(closure.contains_key("io.k8s.api.core.v1.Container"));
        assert!(closure.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        let mut references = Vec::new();
        collect_references(&Value::Object(closure.clone()), &mut references);
        for reference in references {
            assert!(closure.contains_key(&reference), "{reference} missing");
        }
    }
}
