//! The built-in resources, as the real kube-apiserver 1.32 lists them in discovery with its
//! default API groups (`pkg/controlplane/apiserver/options`, `DefaultAPIResourceConfigSource`:
//! the stable versions): kinds, scopes, verbs, short names, categories and the subresources
//! kubemock serves, and which of the real server's Table printers each kind has (docs/api-behaviour.md#tables; kinds
//! without one print with the default convertor). Streaming subresources (log, exec, attach,
//! portforward, proxy) are left out of discovery rather than advertised and 404;
//! `conformance/data/discovery-1.32.json` lists what 1.32 serves and each difference.

use super::{
    Admission, Behaviour, GenerationPolicy, Group, Gvk, NameRule, Printer, Resource, Storage,
    Subresource,
};

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
/// Verbs of the review kinds (`TokenReview`, `SubjectAccessReview`, ...) and `bindings`: they
/// are created and answered, never stored.
const CREATE_ONLY: &[&str] = &["create"];
/// Verbs of the streaming subresources of pods (`exec`, `attach`, `portforward`).
const GET_CREATE: &[&str] = &["create", "get"];
/// Verbs of the `proxy` subresources of pods and nodes.
const PROXY_VERBS: &[&str] = &["create", "delete", "get", "patch", "update"];
/// Verbs of `componentstatuses`, computed on every read.
const GET_LIST: &[&str] = &["get", "list"];
/// The category of the kinds that extend the API (`kubectl get api-extensions`).
const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// Groups in the order the real server lists them (core first; then by the aggregator's group
/// priority, `pkg/controlplane/apiserver/aggregator.go` `apiVersionPriorities`, ties by name),
/// versions preferred first.
const GROUPS: &[(&str, &[&str])] = &[
    ("", &["v1"]),
    ("apiregistration.k8s.io", &["v1"]),
    ("apps", &["v1"]),
    ("events.k8s.io", &["v1"]),
    ("authentication.k8s.io", &["v1"]),
    ("authorization.k8s.io", &["v1"]),
    ("autoscaling", &["v2", "v1"]),
    ("batch", &["v1"]),
    ("certificates.k8s.io", &["v1"]),
    ("networking.k8s.io", &["v1"]),
    ("policy", &["v1"]),
    ("rbac.authorization.k8s.io", &["v1"]),
    ("storage.k8s.io", &["v1"]),
    ("admissionregistration.k8s.io", &["v1"]),
    ("apiextensions.k8s.io", &["v1"]),
    ("scheduling.k8s.io", &["v1"]),
    ("coordination.k8s.io", &["v1"]),
    ("node.k8s.io", &["v1"]),
    ("discovery.k8s.io", &["v1"]),
    ("flowcontrol.apiserver.k8s.io", &["v1"]),
];

/// The aggregator's priorities of each built-in group-version (`groupPriorityMinimum`,
/// `versionPriority` of its local APIService: `pkg/controlplane/apiserver/aggregator.go`
/// `apiVersionPriorities` and `DefaultGenericAPIServicePriorities`).
pub(crate) const PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apiregistration.k8s.io", "v1", 18000, 15),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v1", 17500, 15),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    // metrics-server's APIService (`registry::resource_metrics`), served in-process.
    (
        super::resource_metrics::GROUP,
        super::resource_metrics::VERSION,
        super::resource_metrics::PRIORITY.0,
        super::resource_metrics::PRIORITY.1,
    ),
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
    /// Its verbs (sorted).
    verbs: &'static [&'static str],
    /// Subresource names (see [`subresource`]), sorted.
    subresources: &'static [&'static str],
    behaviour: Behaviour,
    printer: Printer,
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
        verbs: ALL_VERBS,
        subresources: &[],
        behaviour: Behaviour {
            names: NameRule::Subdomain,
            generation: GenerationPolicy::None,
            unconditional_update: true,
            create_on_update: false,
            delete_returns_object: false,
            admission: Admission::None,
            storage: Storage::Stored,
        },
        printer: Printer::Default,
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

    const fn categories(mut self, categories: &'static [&'static str]) -> Self {
        self.categories = categories;
        self
    }

    const fn verbs(mut self, verbs: &'static [&'static str]) -> Self {
        self.verbs = verbs;
        self
    }

    /// Objects are computed or answered by a handler of their own, never stored.
    const fn virtual_kind(mut self) -> Self {
        self.behaviour.storage = Storage::Virtual;
        self
    }

    const fn sub(mut self, names: &'static [&'static str]) -> Self {
        self.subresources = names;
        self
    }

    const fn names(mut self, rule: NameRule) -> Self {
        self.behaviour.names = rule;
        self
    }

    /// Generation set on create and bumped on spec changes (docs/api-behaviour.md#generation).
    const fn generation(mut self, policy: GenerationPolicy) -> Self {
        self.behaviour.generation = policy;
        self
    }

    /// PUT must carry a resourceVersion (docs/api-behaviour.md#update-and-conflicts: CRDs, leases, custom resources).
    const fn conditional_update_only(mut self) -> Self {
        self.behaviour.unconditional_update = false;
        self
    }

    /// PUT of a missing object creates it (docs/api-behaviour.md#create-on-update).
    const fn create_on_update(mut self) -> Self {
        self.behaviour.create_on_update = true;
        self
    }

    /// DELETE answers with the deleted object (docs/api-behaviour.md#delete-responses).
    const fn returns_deleted(mut self) -> Self {
        self.behaviour.delete_returns_object = true;
        self
    }

    /// Writes go through this kind's defaulting and validation (`admission`).
    const fn admit(mut self, admission: Admission) -> Self {
        self.behaviour.admission = admission;
        self
    }

    /// Tables print with the real printer of this kind (docs/api-behaviour.md#tables) rather than the default convertor.
    const fn printer(mut self, printer: Printer) -> Self {
        // (An assignment would drop the old value, which a const fn cannot.)
        std::mem::forget(std::mem::replace(&mut self.printer, printer));
        self
    }
}

const NS: bool = true;
const CLUSTER: bool = false;
const SPEC: GenerationPolicy = GenerationPolicy::Spec;
const CORE: &str = "";
const APPS: &str = "apps";
const BATCH: &str = "batch";
const NETWORKING: &str = "networking.k8s.io";
const RBAC: &str = "rbac.authorization.k8s.io";
const STORAGE: &str = "storage.k8s.io";
const APIREGISTRATION: &str = "apiregistration.k8s.io";
const AUTHENTICATION: &str = "authentication.k8s.io";
const AUTHORIZATION: &str = "authorization.k8s.io";
const ADMISSIONREGISTRATION: &str = "admissionregistration.k8s.io";
const FLOWCONTROL: &str = "flowcontrol.apiserver.k8s.io";
const V1: &str = "v1";

#[rustfmt::skip]
const ENTRIES: &[Entry] = &[
    // core/v1
    entry(CORE, V1, "bindings", "Binding", NS).verbs(CREATE_ONLY).virtual_kind(),
    entry(CORE, V1, "componentstatuses", "ComponentStatus", CLUSTER).short(&["cs"])
        .verbs(GET_LIST).virtual_kind().printer(Printer::ComponentStatus),
    entry(CORE, V1, "configmaps", "ConfigMap", NS).short(&["cm"]).admit(Admission::ConfigMap).printer(Printer::ConfigMap),
    entry(CORE, V1, "endpoints", "Endpoints", NS).short(&["ep"]).create_on_update()
        .printer(Printer::Endpoints),
    entry(CORE, V1, "events", "Event", NS).short(&["ev"]).create_on_update()
        .admit(Admission::Event)
        .printer(Printer::Event),
    entry(CORE, V1, "limitranges", "LimitRange", NS).short(&["limits"]),
    entry(CORE, V1, "namespaces", "Namespace", CLUSTER).short(&["ns"]).verbs(NAMESPACE_VERBS)
        .sub(&["finalize", "status"]).names(NameRule::Label).returns_deleted()
        .admit(Admission::Namespace)
        .printer(Printer::Namespace),
    entry(CORE, V1, "nodes", "Node", CLUSTER).short(&["no"]).sub(&["proxy", "status"])
        .printer(Printer::Node),
    entry(CORE, V1, "persistentvolumeclaims", "PersistentVolumeClaim", NS).short(&["pvc"])
        .sub(&["status"]).admit(Admission::PersistentVolumeClaim)
        .printer(Printer::PersistentVolumeClaim),
    entry(CORE, V1, "persistentvolumes", "PersistentVolume", CLUSTER).short(&["pv"])
        .sub(&["status"]).admit(Admission::PersistentVolume)
        .printer(Printer::PersistentVolume),
    entry(CORE, V1, "pods", "Pod", NS).short(&["po"]).all()
        .sub(&["attach", "binding", "ephemeralcontainers", "eviction", "exec", "log",
               "portforward", "proxy", "status"])
        .admit(Admission::Pod)
        .returns_deleted().printer(Printer::Pod),
    entry(CORE, V1, "podtemplates", "PodTemplate", NS).admit(Admission::PodTemplate)
        .printer(Printer::PodTemplate),
    entry(CORE, V1, "replicationcontrollers", "ReplicationController", NS).short(&["rc"]).all()
        .sub(&["scale", "status"]).generation(SPEC).admit(Admission::ReplicationController)
        .printer(Printer::ReplicationController),
    entry(CORE, V1, "resourcequotas", "ResourceQuota", NS).short(&["quota"]).sub(&["status"])
        .printer(Printer::ResourceQuota),
    entry(CORE, V1, "secrets", "Secret", NS).printer(Printer::Secret).admit(Admission::Secret),
    entry(CORE, V1, "serviceaccounts", "ServiceAccount", NS).short(&["sa"]).sub(&["token"])
        .returns_deleted().printer(Printer::ServiceAccount),
    entry(CORE, V1, "services", "Service", NS).short(&["svc"]).all().sub(&["status"])
        .names(NameRule::Dns1035).create_on_update().returns_deleted()
        .printer(Printer::Service).admit(Admission::Service),
    // apiregistration.k8s.io/v1
    entry(APIREGISTRATION, V1, "apiservices", "APIService", CLUSTER).categories(API_EXTENSIONS)
        .sub(&["status"]).names(NameRule::PathSegment).printer(Printer::ApiService)
        .admit(Admission::ApiService),
    // apps/v1
    entry(APPS, V1, "controllerrevisions", "ControllerRevision", NS)
        .printer(Printer::ControllerRevision),
    entry(APPS, V1, "daemonsets", "DaemonSet", NS).short(&["ds"]).all().sub(&["status"])
        .generation(SPEC).admit(Admission::DaemonSet).printer(Printer::DaemonSet),
    entry(APPS, V1, "deployments", "Deployment", NS).short(&["deploy"]).all()
        .sub(&["scale", "status"]).generation(GenerationPolicy::SpecAndAnnotations)
        .printer(Printer::Deployment).admit(Admission::Deployment),
    entry(APPS, V1, "replicasets", "ReplicaSet", NS).short(&["rs"]).all()
        .sub(&["scale", "status"]).generation(SPEC).printer(Printer::ReplicaSet)
        .admit(Admission::ReplicaSet),
    entry(APPS, V1, "statefulsets", "StatefulSet", NS).short(&["sts"]).all()
        .sub(&["scale", "status"]).generation(SPEC).admit(Admission::StatefulSet)
        .printer(Printer::StatefulSet),
    // events.k8s.io/v1
    entry("events.k8s.io", V1, "events", "Event", NS).short(&["ev"]).create_on_update()
        .printer(Printer::EventV1).admit(Admission::EventV1),
    // authentication.k8s.io/v1
    entry(AUTHENTICATION, V1, "selfsubjectreviews", "SelfSubjectReview", CLUSTER)
        .verbs(CREATE_ONLY).virtual_kind(),
    entry(AUTHENTICATION, V1, "tokenreviews", "TokenReview", CLUSTER)
        .verbs(CREATE_ONLY).virtual_kind(),
    // authorization.k8s.io/v1
    entry(AUTHORIZATION, V1, "localsubjectaccessreviews", "LocalSubjectAccessReview", NS)
        .verbs(CREATE_ONLY).virtual_kind(),
    entry(AUTHORIZATION, V1, "selfsubjectaccessreviews", "SelfSubjectAccessReview", CLUSTER)
        .verbs(CREATE_ONLY).virtual_kind(),
    entry(AUTHORIZATION, V1, "selfsubjectrulesreviews", "SelfSubjectRulesReview", CLUSTER)
        .verbs(CREATE_ONLY).virtual_kind(),
    entry(AUTHORIZATION, V1, "subjectaccessreviews", "SubjectAccessReview", CLUSTER)
        .verbs(CREATE_ONLY).virtual_kind(),
    // autoscaling/v2 and v1: stored as v2, v1 converted on the way in and out
    entry("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", NS)
        .short(&["hpa"]).all().sub(&["status"]).printer(Printer::HorizontalPodAutoscaler)
        .admit(Admission::HorizontalPodAutoscaler),
    entry("autoscaling", V1, "horizontalpodautoscalers", "HorizontalPodAutoscaler", NS)
        .short(&["hpa"]).all().sub(&["status"]).printer(Printer::HorizontalPodAutoscaler)
        .admit(Admission::HorizontalPodAutoscalerV1),
    // batch/v1
    entry(BATCH, V1, "cronjobs", "CronJob", NS).short(&["cj"]).all().sub(&["status"])
        .generation(SPEC).admit(Admission::CronJob).printer(Printer::CronJob),
    entry(BATCH, V1, "jobs", "Job", NS).all().sub(&["status"]).generation(SPEC)
        .admit(Admission::Job).printer(Printer::Job),
    // certificates.k8s.io/v1
    entry("certificates.k8s.io", V1, "certificatesigningrequests", "CertificateSigningRequest",
        CLUSTER).short(&["csr"]).sub(&["approval", "status"])
        .admit(Admission::CertificateSigningRequest)
        .printer(Printer::CertificateSigningRequest),
    // networking.k8s.io/v1
    entry(NETWORKING, V1, "ingressclasses", "IngressClass", CLUSTER)
        .printer(Printer::IngressClass),
    entry(NETWORKING, V1, "ingresses", "Ingress", NS).short(&["ing"]).sub(&["status"])
        .printer(Printer::Ingress),
    entry(NETWORKING, V1, "networkpolicies", "NetworkPolicy", NS).short(&["netpol"])
        .generation(SPEC).printer(Printer::NetworkPolicy),
    // policy/v1
    entry("policy", V1, "poddisruptionbudgets", "PodDisruptionBudget", NS).short(&["pdb"])
        .sub(&["status"]).generation(SPEC).printer(Printer::PodDisruptionBudget),
    // rbac.authorization.k8s.io/v1: names are path segments (`ValidateRBACName`,
    // pkg/apis/rbac/validation), so `system:basic-user` is one.
    entry(RBAC, V1, "clusterrolebindings", "ClusterRoleBinding", CLUSTER).create_on_update()
        .names(NameRule::PathSegment).admit(Admission::ClusterRoleBinding)
        .printer(Printer::ClusterRoleBinding),
    entry(RBAC, V1, "clusterroles", "ClusterRole", CLUSTER).create_on_update()
        .names(NameRule::PathSegment).admit(Admission::ClusterRole),
    entry(RBAC, V1, "rolebindings", "RoleBinding", NS).create_on_update()
        .names(NameRule::PathSegment).admit(Admission::RoleBinding).printer(Printer::RoleBinding),
    entry(RBAC, V1, "roles", "Role", NS).create_on_update().names(NameRule::PathSegment)
        .admit(Admission::Role),
    // storage.k8s.io/v1
    entry(STORAGE, V1, "csidrivers", "CSIDriver", CLUSTER).printer(Printer::CsiDriver),
    entry(STORAGE, V1, "csinodes", "CSINode", CLUSTER).printer(Printer::CsiNode),
    entry(STORAGE, V1, "csistoragecapacities", "CSIStorageCapacity", NS)
        .printer(Printer::CsiStorageCapacity),
    entry(STORAGE, V1, "storageclasses", "StorageClass", CLUSTER).short(&["sc"])
        .returns_deleted().admit(Admission::StorageClass).printer(Printer::StorageClass),
    entry(STORAGE, V1, "volumeattachments", "VolumeAttachment", CLUSTER).sub(&["status"])
        .printer(Printer::VolumeAttachment),
    // admissionregistration.k8s.io/v1
    entry(ADMISSIONREGISTRATION, V1, "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration", CLUSTER).categories(API_EXTENSIONS)
        .generation(GenerationPolicy::Webhooks).printer(Printer::WebhookConfiguration)
        .admit(Admission::WebhookConfiguration),
    entry(ADMISSIONREGISTRATION, V1, "validatingadmissionpolicies", "ValidatingAdmissionPolicy",
        CLUSTER).categories(API_EXTENSIONS).sub(&["status"]).generation(SPEC)
        .printer(Printer::ValidatingAdmissionPolicy).admit(Admission::ValidatingAdmissionPolicy),
    entry(ADMISSIONREGISTRATION, V1, "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding", CLUSTER).categories(API_EXTENSIONS).generation(SPEC)
        .printer(Printer::ValidatingAdmissionPolicyBinding)
        .admit(Admission::ValidatingAdmissionPolicyBinding),
    entry(ADMISSIONREGISTRATION, V1, "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration", CLUSTER).categories(API_EXTENSIONS)
        .generation(GenerationPolicy::Webhooks).printer(Printer::WebhookConfiguration)
        .admit(Admission::WebhookConfiguration),
    // apiextensions.k8s.io/v1
    entry("apiextensions.k8s.io", V1, "customresourcedefinitions", "CustomResourceDefinition",
        CLUSTER).short(&["crd", "crds"]).categories(API_EXTENSIONS).sub(&["status"])
        .generation(SPEC).conditional_update_only(),
    // scheduling.k8s.io/v1
    entry("scheduling.k8s.io", V1, "priorityclasses", "PriorityClass", CLUSTER).short(&["pc"])
        .printer(Printer::PriorityClass),
    // coordination.k8s.io/v1
    entry("coordination.k8s.io", V1, "leases", "Lease", NS).conditional_update_only()
        .create_on_update().printer(Printer::Lease).admit(Admission::Lease),
    // node.k8s.io/v1
    entry("node.k8s.io", V1, "runtimeclasses", "RuntimeClass", CLUSTER)
        .printer(Printer::RuntimeClass),
    // discovery.k8s.io/v1
    entry("discovery.k8s.io", V1, "endpointslices", "EndpointSlice", NS)
        .printer(Printer::EndpointSlice),
    // flowcontrol.apiserver.k8s.io/v1
    entry(FLOWCONTROL, V1, "flowschemas", "FlowSchema", CLUSTER).sub(&["status"])
        .generation(SPEC).printer(Printer::FlowSchema),
    entry(FLOWCONTROL, V1, "prioritylevelconfigurations", "PriorityLevelConfiguration", CLUSTER)
        .sub(&["status"]).generation(SPEC).printer(Printer::PriorityLevelConfiguration),
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn gvk(group: &str, version: &str, kind: &str) -> Option<Gvk> {
    Some(Gvk {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
    })
}

/// A subresource as the real server lists it: its verbs and, when not the parent's, its kind.
fn subresource(name: &str, group: &str, version: &str, parent: &str) -> Subresource {
    let (response, verbs, printer) = match name {
        "scale" => (
            gvk("autoscaling", "v1", "Scale"),
            GET_UPDATE_PATCH,
            Some(Printer::Scale),
        ),
        "binding" => (gvk(group, version, "Binding"), CREATE_ONLY, None),
        "eviction" => (gvk("policy", "v1", "Eviction"), CREATE_ONLY, None),
        "token" => (
            gvk("authentication.k8s.io", "v1", "TokenRequest"),
            CREATE_ONLY,
            None,
        ),
        "finalize" => (None, &["update"][..], None),
        // As discovery lists them upstream; kubemock answers what it does not simulate with a
        // 400 saying so (`handlers::logs`).
        "log" => (None, &["get"][..], None),
        "exec" => (gvk(group, version, "PodExecOptions"), GET_CREATE, None),
        "attach" => (gvk(group, version, "PodAttachOptions"), GET_CREATE, None),
        "portforward" => (
            gvk(group, version, "PodPortForwardOptions"),
            GET_CREATE,
            None,
        ),
        "proxy" => (
            gvk(group, version, &format!("{parent}ProxyOptions")),
            PROXY_VERBS,
            None,
        ),
        // status, approval, ephemeralcontainers: the parent's kind.
        _ => (None, GET_UPDATE_PATCH, None),
    };
    Subresource {
        name: name.to_owned(),
        response,
        verbs: strings(verbs),
        printer,
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
                resources.push(Resource {
                    group: e.group.to_owned(),
                    version: e.version.to_owned(),
                    plural: e.plural.to_owned(),
                    singular: e.kind.to_lowercase(),
                    kind: e.kind.to_owned(),
                    namespaced: e.namespaced,
                    verbs: strings(e.verbs),
                    short_names: strings(e.short_names),
                    categories: strings(e.categories),
                    subresources: e
                        .subresources
                        .iter()
                        .map(|name| subresource(name, e.group, e.version, e.kind))
                        .collect(),
                    behaviour: e.behaviour,
                    printer: e.printer.clone(),
                    custom: None,
                });
            }
        }
    }
    (groups, resources)
}
