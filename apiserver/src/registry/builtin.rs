//! The built-in resources, as the real kube-apiserver 1.32 lists them in discovery: kinds,
//! scopes, verbs, short names, categories and the subresources kubemock serves (status, scale,
//! finalize, binding). Streaming subresources (log, exec, attach, portforward, proxy) and
//! those kubemock does not implement are left out of discovery rather than advertised and 404.

use super::{Group, Gvk, Resource, Subresource};

/// Verbs of almost every resource.
const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// Namespaces cannot be deleted as a collection.
const NAMESPACE_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
/// Verbs of `status` and `scale`.
const GET_UPDATE_PATCH: &[&str] = &["get", "patch", "update"];

/// Groups in the order the real server lists them (core first), versions preferred first.
const GROUPS: &[(&str, &[&str])] = &[
    ("", &["v1"]),
    ("apps", &["v1"]),
    ("events.k8s.io", &["v1"]),
    ("autoscaling", &["v2", "v1"]),
    ("batch", &["v1"]),
    ("networking.k8s.io", &["v1"]),
    ("policy", &["v1"]),
    ("rbac.authorization.k8s.io", &["v1"]),
    ("storage.k8s.io", &["v1"]),
    ("apiextensions.k8s.io", &["v1"]),
    ("scheduling.k8s.io", &["v1"]),
    ("coordination.k8s.io", &["v1"]),
    ("discovery.k8s.io", &["v1"]),
];

/// A compact description of one built-in resource.
struct Entry {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    /// `status`, `scale`, `finalize`, `binding`.
    subresources: &'static [&'static str],
}

const fn entry(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> Entry {
    Entry {
        group,
        version,
        plural,
        kind,
        namespaced,
        short_names: &[],
        categories: &[],
        subresources: &[],
    }
}

impl Entry {
    const fn short(mut self, names: &'static [&'static str]) -> Self {
        self.short_names = names;
        self
    }

    const fn all(mut self) -> Self {
        self.categories = &["all"];
        self
    }

    const fn sub(mut self, names: &'static [&'static str]) -> Self {
        self.subresources = names;
        self
    }
}

const NS: bool = true;
const CLUSTER: bool = false;

const ENTRIES: &[Entry] = &[
    // core/v1
    entry("", "v1", "configmaps", "ConfigMap", NS).short(&["cm"]),
    entry("", "v1", "endpoints", "Endpoints", NS).short(&["ep"]),
    entry("", "v1", "events", "Event", NS).short(&["ev"]),
    entry("", "v1", "limitranges", "LimitRange", NS).short(&["limits"]),
    entry("", "v1", "namespaces", "Namespace", CLUSTER)
        .short(&["ns"])
        .sub(&["finalize", "status"]),
    entry("", "v1", "nodes", "Node", CLUSTER)
        .short(&["no"])
        .sub(&["status"]),
    entry(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        NS,
    )
    .short(&["pvc"])
    .sub(&["status"]),
    entry("", "v1", "persistentvolumes", "PersistentVolume", CLUSTER)
        .short(&["pv"])
        .sub(&["status"]),
    entry("", "v1", "pods", "Pod", NS)
        .short(&["po"])
        .all()
        .sub(&["binding", "status"]),
    entry("", "v1", "podtemplates", "PodTemplate", NS),
    entry(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        NS,
    )
    .short(&["rc"])
    .all()
    .sub(&["scale", "status"]),
    entry("", "v1", "resourcequotas", "ResourceQuota", NS)
        .short(&["quota"])
        .sub(&["status"]),
    entry("", "v1", "secrets", "Secret", NS),
    entry("", "v1", "serviceaccounts", "ServiceAccount", NS).short(&["sa"]),
    entry("", "v1", "services", "Service", NS)
        .short(&["svc"])
        .all()
        .sub(&["status"]),
    // apps/v1
    entry(
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        NS,
    ),
    entry("apps", "v1", "daemonsets", "DaemonSet", NS)
        .short(&["ds"])
        .all()
        .sub(&["status"]),
    entry("apps", "v1", "deployments", "Deployment", NS)
        .short(&["deploy"])
        .all()
        .sub(&["scale", "status"]),
    entry("apps", "v1", "replicasets", "ReplicaSet", NS)
        .short(&["rs"])
        .all()
        .sub(&["scale", "status"]),
    entry("apps", "v1", "statefulsets", "StatefulSet", NS)
        .short(&["sts"])
        .all()
        .sub(&["scale", "status"]),
    // events.k8s.io/v1
    entry("events.k8s.io", "v1", "events", "Event", NS).short(&["ev"]),
    // autoscaling/v2 and v1
    entry(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        NS,
    )
    .short(&["hpa"])
    .all()
    .sub(&["status"]),
    entry(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        NS,
    )
    .short(&["hpa"])
    .all()
    .sub(&["status"]),
    // batch/v1
    entry("batch", "v1", "cronjobs", "CronJob", NS)
        .short(&["cj"])
        .all()
        .sub(&["status"]),
    entry("batch", "v1", "jobs", "Job", NS)
        .all()
        .sub(&["status"]),
    // networking.k8s.io/v1
    entry(
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        CLUSTER,
    ),
    entry("networking.k8s.io", "v1", "ingresses", "Ingress", NS)
        .short(&["ing"])
        .sub(&["status"]),
    entry(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        NS,
    )
    .short(&["netpol"]),
    // policy/v1
    entry(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        NS,
    )
    .short(&["pdb"])
    .sub(&["status"]),
    // rbac.authorization.k8s.io/v1
    entry(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        CLUSTER,
    ),
    entry(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        CLUSTER,
    ),
    entry(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        NS,
    ),
    entry("rbac.authorization.k8s.io", "v1", "roles", "Role", NS),
    // storage.k8s.io/v1
    entry(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        CLUSTER,
    )
    .short(&["sc"]),
    // apiextensions.k8s.io/v1
    entry(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        CLUSTER,
    )
    .short(&["crd", "crds"])
    .sub(&["status"]),
    // scheduling.k8s.io/v1
    entry(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        CLUSTER,
    )
    .short(&["pc"]),
    // coordination.k8s.io/v1
    entry("coordination.k8s.io", "v1", "leases", "Lease", NS),
    // discovery.k8s.io/v1
    entry(
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        NS,
    ),
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn subresource(name: &str, group: &str, version: &str) -> Subresource {
    match name {
        "scale" => Subresource {
            name: "scale".to_owned(),
            response: Some(Gvk {
                group: "autoscaling".to_owned(),
                version: "v1".to_owned(),
                kind: "Scale".to_owned(),
            }),
            verbs: strings(GET_UPDATE_PATCH),
        },
        "binding" => Subresource {
            name: "binding".to_owned(),
            response: Some(Gvk {
                group: group.to_owned(),
                version: version.to_owned(),
                kind: "Binding".to_owned(),
            }),
            verbs: strings(&["create"]),
        },
        "finalize" => Subresource {
            name: "finalize".to_owned(),
            response: None,
            verbs: strings(&["update"]),
        },
        other => Subresource {
            name: other.to_owned(),
            response: None,
            verbs: strings(GET_UPDATE_PATCH),
        },
    }
}

/// The built-in groups and resources.
pub(super) fn resources() -> (Vec<Group>, Vec<Resource>) {
    let groups: Vec<Group> = GROUPS
        .iter()
        .map(|(name, versions)| Group {
            name: (*name).to_owned(),
            versions: strings(versions),
        })
        .collect();
    let mut resources = Vec::new();
    // Discovery order: groups in order, versions in preference order, resources by name.
    for group in &groups {
        for version in &group.versions {
            for e in ENTRIES
                .iter()
                .filter(|e| e.group == group.name && e.version == *version)
            {
                let verbs = if e.plural == "namespaces" {
                    NAMESPACE_VERBS
                } else {
                    ALL_VERBS
                };
                resources.push(Resource {
                    group: e.group.to_owned(),
                    version: e.version.to_owned(),
                    plural: e.plural.to_owned(),
                    singular: e.kind.to_lowercase(),
                    kind: e.kind.to_owned(),
                    namespaced: e.namespaced,
                    verbs: strings(verbs),
                    short_names: strings(e.short_names),
                    categories: strings(e.categories),
                    subresources: e
                        .subresources
                        .iter()
                        .map(|name| subresource(name, e.group, e.version))
                        .collect(),
                });
            }
        }
    }
    (groups, resources)
}
