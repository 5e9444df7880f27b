//! The resources the fuzzer aims at, and one valid object of each: the seeds every mutation
//! starts from. A seed that the server refuses unmutated would make every request a 4xx and
//! hide the paths behind validation, so the seeds are real objects (`sweep` and the tests
//! check that each seed creates). Custom resources come from two definitions the fuzzer sets
//! up first ([`setup_definitions`]) and from definitions it creates while fuzzing.

use serde_json::{Value, json};

/// The group of the custom resources the fuzzer defines before it starts.
pub(crate) const FUZZ_GROUP: &str = "fuzz.example.com";
/// The namespaces the fuzzer creates before it starts; most namespaced requests go to these.
pub(crate) const NAMESPACES: [&str; 2] = ["fuzz-a", "fuzz-b"];
/// Names per resource in the pool: small, so that requests meet objects earlier ones made.
pub(crate) const POOL_NAMES: usize = 5;

/// One resource of the API, as the fuzzer addresses it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target {
    /// API group (`""` for core).
    pub(crate) group: &'static str,
    /// Version.
    pub(crate) version: &'static str,
    /// Plural resource name (the URL segment).
    pub(crate) plural: &'static str,
    /// Kind of its objects.
    pub(crate) kind: &'static str,
    /// Namespaced or cluster-scoped.
    pub(crate) namespaced: bool,
    /// Subresources the fuzzer sends to (`status`, `scale`).
    pub(crate) subresources: &'static [&'static str],
    /// How often it is picked, relative to the others.
    pub(crate) weight: u32,
    /// Which object it is.
    pub(crate) seed: Seed,
}

/// The valid object of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seed {
    ConfigMap,
    Secret,
    Pod,
    Service,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    CronJob,
    Lease,
    Event,
    EventV1,
    Namespace,
    Node,
    ServiceAccount,
    Endpoints,
    Role,
    ClusterRole,
    RoleBinding,
    Ingress,
    NetworkPolicy,
    PodDisruptionBudget,
    HorizontalPodAutoscaler,
    PriorityClass,
    StorageClass,
    PersistentVolumeClaim,
    PersistentVolume,
    LimitRange,
    ResourceQuota,
    ReplicationController,
    PodTemplate,
    EndpointSlice,
    IngressClass,
    ControllerRevision,
    /// A definition the fuzzer creates while fuzzing (`things.fN.fuzz.example.com`).
    Definition,
    /// A custom resource of the namespaced definition set up first.
    Widget,
    /// A custom resource of the cluster-scoped, schemaless definition set up first.
    Gadget,
    /// A custom resource of a definition created while fuzzing (often absent: 404).
    Thing,
}

const fn t(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    seed: Seed,
) -> Target {
    Target {
        group,
        version,
        plural,
        kind,
        namespaced,
        subresources: &[],
        weight: 2,
        seed,
    }
}

impl Target {
    const fn sub(mut self, subresources: &'static [&'static str]) -> Self {
        self.subresources = subresources;
        self
    }

    const fn weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }

    /// `apiVersion` of its objects.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The `i`th name of its pool.
    pub(crate) fn pool_name(&self, i: usize) -> String {
        match self.seed {
            Seed::Definition => format!("things.f{i}.{FUZZ_GROUP}"),
            Seed::Namespace => format!("fuzz-ns-{i}"),
            _ => format!("f{i}"),
        }
    }

    /// URL prefix of its group version: `/api/v1` or `/apis/GROUP/VERSION`.
    pub(crate) fn prefix(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// A valid object of this target named `name` in `namespace`.
    pub(crate) fn object(&self, name: &str, namespace: &str) -> Value {
        let mut metadata = json!({"name": name, "labels": {"app": "fuzz", "tier": "x"},
            "annotations": {"fuzz.example.com/note": "seed"}});
        if self.namespaced {
            metadata["namespace"] = json!(namespace);
        }
        let mut object = json!({"apiVersion": self.api_version(), "kind": self.kind,
            "metadata": metadata});
        let body = seed_body(self.seed, name, namespace);
        if let (Some(object), Value::Object(body)) = (object.as_object_mut(), body) {
            object.extend(body);
        }
        object
    }
}

/// A pod template of the workloads, labelled to match their selectors.
fn template() -> Value {
    json!({
        "metadata": {"labels": {"app": "fuzz"}},
        "spec": {"containers": [container()], "restartPolicy": "Always"}
    })
}

fn container() -> Value {
    json!({
        "name": "c",
        "image": "busybox:1.36",
        "command": ["sleep", "3600"],
        "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
        "env": [{"name": "A", "value": "b"}],
        "resources": {"limits": {"cpu": "100m", "memory": "64Mi"},
            "requests": {"cpu": "50m", "memory": "32Mi"}}
    })
}

/// Everything of a seed but `apiVersion`, `kind` and `metadata`.
fn seed_body(seed: Seed, name: &str, namespace: &str) -> Value {
    let selector = json!({"matchLabels": {"app": "fuzz"}});
    match seed {
        Seed::ConfigMap => json!({"data": {"k": "v", "multi": "a\nb"},
            "binaryData": {"bin": "AAEC"}}),
        Seed::Secret => json!({"type": "Opaque", "data": {"k": "dmFsdWU="},
            "stringData": {"s": "plain"}}),
        Seed::Pod => json!({"spec": {"containers": [container()],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 5}}),
        Seed::Service => json!({"spec": {"type": "ClusterIP", "selector": {"app": "fuzz"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}),
        Seed::Deployment => json!({"spec": {"replicas": 2, "selector": selector,
            "template": template(), "strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}}),
        Seed::ReplicaSet => json!({"spec": {"replicas": 1, "selector": selector,
            "template": template()}}),
        Seed::StatefulSet => json!({"spec": {"replicas": 1, "serviceName": "svc",
            "selector": selector, "template": template()}}),
        Seed::DaemonSet => json!({"spec": {"selector": selector, "template": template()}}),
        Seed::Job => json!({"spec": {"backoffLimit": 2, "completions": 1, "parallelism": 1,
            "template": {"spec": {"containers": [container()], "restartPolicy": "Never"}}}}),
        Seed::CronJob => json!({"spec": {"schedule": "*/5 * * * *",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [container()],
                "restartPolicy": "OnFailure"}}}}}}),
        Seed::Lease => json!({"spec": {"holderIdentity": "fuzz", "leaseDurationSeconds": 15,
            "renewTime": "2024-01-01T00:00:00.000000Z", "leaseTransitions": 0}}),
        Seed::Event => json!({"involvedObject": {"kind": "Pod", "name": "f0",
                "namespace": namespace, "apiVersion": "v1"},
            "reason": "Fuzzed", "message": "a fuzzed event", "type": "Normal", "count": 1,
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:01Z",
            "source": {"component": "fuzz"}}),
        Seed::EventV1 => json!({"eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "example.com/fuzz", "reportingInstance": "fuzz-1",
            "action": "Fuzz", "reason": "Fuzzed", "type": "Normal", "note": "a fuzzed event",
            "regarding": {"kind": "Pod", "name": "f0", "namespace": namespace,
                "apiVersion": "v1"}}),
        Seed::Namespace => json!({"spec": {"finalizers": ["kubernetes"]}}),
        Seed::Node => json!({"spec": {"podCIDR": "10.244.0.0/24", "unschedulable": false},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
        Seed::ServiceAccount => json!({"automountServiceAccountToken": false,
            "secrets": [{"name": "s"}]}),
        Seed::Endpoints => json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}]}),
        Seed::Role | Seed::ClusterRole => json!({"rules": [{"apiGroups": [""],
            "resources": ["pods"], "verbs": ["get", "list"]}]}),
        Seed::RoleBinding => json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role", "name": "f0"},
            "subjects": [{"kind": "ServiceAccount", "name": "default",
                "namespace": namespace}]}),
        Seed::Ingress => json!({"spec": {"rules": [{"host": "fuzz.example.com",
            "http": {"paths": [{"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]}}),
        Seed::NetworkPolicy => json!({"spec": {"podSelector": selector,
            "policyTypes": ["Ingress"], "ingress": [{"ports": [{"port": 80}]}]}}),
        Seed::PodDisruptionBudget => json!({"spec": {"minAvailable": 1,
            "selector": selector}}),
        Seed::HorizontalPodAutoscaler => json!({"spec": {"minReplicas": 1, "maxReplicas": 3,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "f0"},
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]}}),
        Seed::PriorityClass => json!({"value": 1000, "globalDefault": false,
            "description": "fuzz"}),
        Seed::StorageClass => json!({"provisioner": "example.com/fuzz",
            "reclaimPolicy": "Delete", "parameters": {"k": "v"}}),
        Seed::PersistentVolumeClaim => json!({"spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}),
        Seed::PersistentVolume => json!({"spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/fuzz"}}}),
        Seed::LimitRange => json!({"spec": {"limits": [{"type": "Container",
            "default": {"cpu": "1"}, "defaultRequest": {"cpu": "100m"}}]}}),
        Seed::ResourceQuota => json!({"spec": {"hard": {"pods": "10", "requests.cpu": "4"}}}),
        Seed::ReplicationController => json!({"spec": {"replicas": 1,
            "selector": {"app": "fuzz"}, "template": template()}}),
        Seed::PodTemplate => json!({"template": template()}),
        Seed::EndpointSlice => json!({"addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}),
        Seed::IngressClass => json!({"spec": {"controller": "example.com/ingress"}}),
        Seed::ControllerRevision => json!({"revision": 1, "data": {"spec": {"k": "v"}}}),
        Seed::Definition => {
            let group = name.split_once('.').map_or(name, |(_, group)| group);
            definition_spec(group, "things", "Thing", true, false)
        }
        Seed::Widget => json!({"spec": {"size": 3, "color": "red", "tags": ["a", "b"],
            "config": {"k": "v"}, "free": {"anything": [1, "two", {"three": 3}]}}}),
        Seed::Gadget | Seed::Thing => json!({"spec": {"anything": {"goes": [1, 2.5, "x",
            null, true]}}}),
    }
}

/// A definition's `spec` (and nothing else): `plural.group`, one version `v1`, a schema with
/// typed fields (`strict`) or one that keeps anything, `status` and `scale` subresources and
/// printer columns.
fn definition_spec(group: &str, plural: &str, kind: &str, namespaced: bool, strict: bool) -> Value {
    let schema = if strict {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer", "minimum": 0, "maximum": 1000},
                "color": {"type": "string", "maxLength": 64},
                "tags": {"type": "array", "items": {"type": "string"}},
                "config": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    } else {
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    };
    let singular = plural.trim_end_matches('s');
    json!({"spec": {
        "group": group,
        "scope": if namespaced { "Namespaced" } else { "Cluster" },
        "names": {"plural": plural, "singular": singular, "kind": kind,
            "listKind": format!("{kind}List")},
        "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": schema},
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size",
                "statusReplicasPath": ".status.size"}},
            "additionalPrinterColumns": [{"name": "Color", "type": "string",
                "jsonPath": ".spec.color"}, {"name": "Size", "type": "integer",
                "jsonPath": ".spec.size"}]}]}})
}

/// The definitions created before fuzzing: `widgets` (namespaced, typed schema) and `gadgets`
/// (cluster-scoped, keeps anything).
pub(crate) fn setup_definitions() -> Vec<Value> {
    [
        ("widgets", "Widget", true, true),
        ("gadgets", "Gadget", false, false),
    ]
    .into_iter()
    .map(|(plural, kind, namespaced, strict)| {
        let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": format!("{plural}.{FUZZ_GROUP}")}});
        if let (Some(crd), Value::Object(spec)) = (
            crd.as_object_mut(),
            definition_spec(FUZZ_GROUP, plural, kind, namespaced, strict),
        ) {
            crd.extend(spec);
        }
        crd
    })
    .collect()
}

const APPS: &str = "apps";
const NS: bool = true;
const CLUSTER: bool = false;
const STATUS: &[&str] = &["status"];
const SCALE_STATUS: &[&str] = &["scale", "status"];

/// Every target. The kinds with the most logic behind them (admission, generation, scale,
/// custom resources) weigh more.
pub(crate) const TARGETS: &[Target] = &[
    t("", "v1", "configmaps", "ConfigMap", NS, Seed::ConfigMap).weight(6),
    t("", "v1", "secrets", "Secret", NS, Seed::Secret).weight(4),
    t("", "v1", "pods", "Pod", NS, Seed::Pod)
        .sub(STATUS)
        .weight(6),
    t("", "v1", "services", "Service", NS, Seed::Service)
        .sub(STATUS)
        .weight(4),
    t(
        APPS,
        "v1",
        "deployments",
        "Deployment",
        NS,
        Seed::Deployment,
    )
    .sub(SCALE_STATUS)
    .weight(6),
    t(
        APPS,
        "v1",
        "replicasets",
        "ReplicaSet",
        NS,
        Seed::ReplicaSet,
    )
    .sub(SCALE_STATUS),
    t(
        APPS,
        "v1",
        "statefulsets",
        "StatefulSet",
        NS,
        Seed::StatefulSet,
    )
    .sub(SCALE_STATUS),
    t(APPS, "v1", "daemonsets", "DaemonSet", NS, Seed::DaemonSet).sub(STATUS),
    t("batch", "v1", "jobs", "Job", NS, Seed::Job)
        .sub(STATUS)
        .weight(3),
    t("batch", "v1", "cronjobs", "CronJob", NS, Seed::CronJob).sub(STATUS),
    t(
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        NS,
        Seed::Lease,
    )
    .weight(3),
    t("", "v1", "events", "Event", NS, Seed::Event).weight(3),
    t("events.k8s.io", "v1", "events", "Event", NS, Seed::EventV1),
    t(
        "",
        "v1",
        "namespaces",
        "Namespace",
        CLUSTER,
        Seed::Namespace,
    )
    .sub(STATUS)
    .weight(3),
    t("", "v1", "nodes", "Node", CLUSTER, Seed::Node).sub(STATUS),
    t(
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        NS,
        Seed::ServiceAccount,
    ),
    t("", "v1", "endpoints", "Endpoints", NS, Seed::Endpoints),
    t(
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        NS,
        Seed::Role,
    ),
    t(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        CLUSTER,
        Seed::ClusterRole,
    ),
    t(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        NS,
        Seed::RoleBinding,
    ),
    t(
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        NS,
        Seed::Ingress,
    )
    .sub(STATUS),
    t(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        NS,
        Seed::NetworkPolicy,
    ),
    t(
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        CLUSTER,
        Seed::IngressClass,
    ),
    t(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        NS,
        Seed::PodDisruptionBudget,
    )
    .sub(STATUS),
    t(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        NS,
        Seed::HorizontalPodAutoscaler,
    )
    .sub(STATUS),
    t(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        CLUSTER,
        Seed::PriorityClass,
    ),
    t(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        CLUSTER,
        Seed::StorageClass,
    ),
    t(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        NS,
        Seed::PersistentVolumeClaim,
    )
    .sub(STATUS),
    t(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        CLUSTER,
        Seed::PersistentVolume,
    )
    .sub(STATUS),
    t("", "v1", "limitranges", "LimitRange", NS, Seed::LimitRange),
    t(
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        NS,
        Seed::ResourceQuota,
    )
    .sub(STATUS),
    t(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        NS,
        Seed::ReplicationController,
    )
    .sub(SCALE_STATUS),
    t(
        "",
        "v1",
        "podtemplates",
        "PodTemplate",
        NS,
        Seed::PodTemplate,
    ),
    t(
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        NS,
        Seed::EndpointSlice,
    ),
    t(
        APPS,
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        NS,
        Seed::ControllerRevision,
    ),
    t(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        CLUSTER,
        Seed::Definition,
    )
    .sub(STATUS)
    .weight(3),
    t(FUZZ_GROUP, "v1", "widgets", "Widget", NS, Seed::Widget)
        .sub(SCALE_STATUS)
        .weight(6),
    t(FUZZ_GROUP, "v1", "gadgets", "Gadget", CLUSTER, Seed::Gadget)
        .sub(STATUS)
        .weight(3),
    t(
        "f0.fuzz.example.com",
        "v1",
        "things",
        "Thing",
        NS,
        Seed::Thing,
    )
    .sub(SCALE_STATUS),
];

/// Whether `plural` needs a resourceVersion on PUT (docs/api-behaviour.md#update-and-conflicts: definitions, leases, custom
/// resources), so that the fuzzer should usually send the last one it saw.
pub(crate) fn conditional_update(target: &Target) -> bool {
    matches!(
        target.seed,
        Seed::Definition | Seed::Lease | Seed::Widget | Seed::Gadget | Seed::Thing
    )
}
