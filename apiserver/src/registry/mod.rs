//! The resource registry: one entry per served resource, as data. Discovery, routing, Table
//! printing, storage keys, defaulting and validation are all driven from here, so adding a
//! resource is adding an entry. Built-in kinds come from `builtin.rs`; CustomResourceDefinitions
//! add entries at run time (`crd`), which is why entries own their strings.

mod builtin;
mod custom;
pub(crate) mod kwok;
pub(crate) mod resource_metrics;
pub(crate) mod testing;

/// The OpenAPI schema of a kind kubemock serves in a group of its own (`testing`, `kwok`,
/// `metrics.k8s.io`), rather than from the built-in kinds' schemas.
pub(crate) fn own_schema(resource: &Resource) -> Option<serde_json::Value> {
    testing::schema(resource)
        .or_else(|| kwok::schema(resource))
        .or_else(|| resource_metrics::schema(resource))
}

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) use builtin::PRIORITIES;
pub(crate) use custom::{Custom, PrinterColumn, ScalePaths};

use parking_lot::RwLock;

/// A group/version/kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Gvk {
    /// API group; empty for core.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// A subresource of a resource (`status`, `scale`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource {
    /// Its name (`status`).
    pub name: String,
    /// The kind it takes and returns when not the parent's (`scale`: autoscaling/v1 Scale).
    pub response: Option<Gvk>,
    /// Its verbs, sorted.
    pub verbs: Vec<String>,
    /// How its responses print as a Table when not as the parent's (`scale`); `None` for the
    /// parent's printer.
    pub printer: Option<Printer>,
}

/// Which rule a resource's object names follow (docs/api-behaviour.md#names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain, at most 253 characters (most resources).
    Subdomain,
    /// DNS-1123 label, at most 63 (namespaces).
    Label,
    /// DNS-1035 label, at most 63, starting with a letter (services).
    Dns1035,
    /// Any name that can be one segment of a URL path (`path.IsValidPathSegmentName`:
    /// APIServices, whose names are `version.group`, `v1.` for the core group).
    PathSegment,
}

/// When `metadata.generation` is set and incremented (docs/api-behaviour.md#generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenerationPolicy {
    /// Never set (pods, configmaps, services, ...).
    None,
    /// 1 on create, +1 when `spec` changes.
    Spec,
    /// 1 on create, +1 when `spec` or `metadata.annotations` change (Deployment).
    SpecAndAnnotations,
    /// 1 on create, +1 when anything but `metadata` and `status` changes (custom resources).
    AllButMetadataAndStatus,
    /// 1 on create, +1 when anything but `metadata` changes (custom resources whose
    /// definition has no status subresource: `customResourceStrategy.PrepareForUpdate`).
    AllButMetadata,
    /// 1 on create, +1 when `webhooks` change (webhook configurations).
    Webhooks,
}

/// Where a resource's objects live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Storage {
    /// In the store, under the generic verbs.
    #[default]
    Stored,
    /// Nowhere: the reviews (created and answered), `componentstatuses` (computed) and
    /// `bindings` (a write to a pod) have handlers of their own (`handlers::virtual`).
    Virtual,
}

/// Which of the real server's printers renders a resource as a `meta.k8s.io` Table (docs/api-behaviour.md#tables): the
/// column set and the cell logic of `pkg/printers/internalversion/printers.go`, or the default
/// convertor of `pkg/registry/rest/table.go`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Printer {
    /// metrics-server's `PodMetrics` convertor (`pkg/api/table.go`): Name, cpu and memory
    /// (summed over the containers), Window.
    PodMetrics,
    /// metrics-server's `NodeMetrics` convertor: Name, cpu, memory, Window.
    NodeMetrics,
    /// Name and Created At: kinds without a printer upstream (Roles, ClusterRoles, LimitRanges,
    /// CustomResourceDefinitions).
    Default,
    /// A custom resource's `additionalPrinterColumns` (after Name).
    Columns(Arc<[PrinterColumn]>),
    /// Name, Ready, Status, Restarts, Age; wide: IP, Node, Nominated Node, Readiness Gates.
    Pod,
    /// Name, Ready, Up-to-date, Available, Age; wide: Containers, Images, Selector.
    Deployment,
    /// Name, Desired, Current, Ready, Age; wide: Containers, Images, Selector.
    ReplicaSet,
    /// Name, Type, Cluster-IP, External-IP, Port(s), Age; wide: Selector.
    Service,
    /// Name, Data, Age.
    ConfigMap,
    /// Name, Type, Data, Age.
    Secret,
    /// Name, Status, Age.
    Namespace,
    /// Name, Status, Roles, Age, Version; wide: addresses and node info.
    Node,
    /// core/v1 Events: Last Seen, Type, Reason, Object, Message; wide: Subobject, Source,
    /// First Seen, Count, Name.
    Event,
    /// events.k8s.io/v1 Events: the core printer over the same event (the real server stores
    /// both versions as one resource).
    EventV1,
    /// Name, Holder, Age.
    Lease,
    /// autoscaling/v1 Scale (the `scale` subresource): Name, Desired, Available, Age.
    Scale,
    /// Name, Endpoints (`ip:port`, the first three), Age.
    Endpoints,
    /// Name, AddressType, Ports, Endpoints, Age.
    EndpointSlice,
    /// Name, Ready, Age; wide: Containers, Images.
    StatefulSet,
    /// Name, Desired, Current, Ready, Up-to-date, Available, Node Selector, Age; wide:
    /// Containers, Images, Selector.
    DaemonSet,
    /// Name, Status, Completions, Duration, Age; wide: Containers, Images, Selector.
    Job,
    /// Name, Schedule, Timezone, Suspend, Active, Last Schedule, Age; wide: Containers, Images,
    /// Selector.
    CronJob,
    /// Name, Desired, Current, Ready, Age; wide: Containers, Images, Selector.
    ReplicationController,
    /// Name, Controller, Revision, Age.
    ControllerRevision,
    /// Name, Containers, Images, Pod Labels.
    PodTemplate,
    /// Name, Class, Hosts, Address, Ports, Age.
    Ingress,
    /// Name, Controller, Parameters, Age.
    IngressClass,
    /// Name, Pod-Selector, Age.
    NetworkPolicy,
    /// Name, Capacity, Access Modes, Reclaim Policy, Status, Claim, StorageClass,
    /// VolumeAttributesClass, Reason, Age; wide: VolumeMode.
    PersistentVolume,
    /// Name, Status, Volume, Capacity, Access Modes, StorageClass, VolumeAttributesClass, Age;
    /// wide: VolumeMode.
    PersistentVolumeClaim,
    /// Name, Provisioner, ReclaimPolicy, VolumeBindingMode, AllowVolumeExpansion, Age.
    StorageClass,
    /// Name, Secrets, Age.
    ServiceAccount,
    /// Name, Role, Age; wide: Users, Groups, ServiceAccounts.
    RoleBinding,
    /// As [`Printer::RoleBinding`], with the cluster binding's column descriptions.
    ClusterRoleBinding,
    /// autoscaling/v2 and v1: Name, Reference, Targets, MinPods, MaxPods, Replicas, Age.
    HorizontalPodAutoscaler,
    /// Name, Min Available, Max Unavailable, Allowed Disruptions, Age.
    PodDisruptionBudget,
    /// Name, Value, Global-Default, Age, PreemptionPolicy.
    PriorityClass,
    /// Name, Request, Limit, Age.
    ResourceQuota,
    /// Name, Status, Message, Error (no age: component statuses are computed).
    ComponentStatus,
    /// Name, Service, Available, Age (the aggregator's own convertor).
    ApiService,
    /// Name, Age, SignerName, Requestor, RequestedDuration, Condition.
    CertificateSigningRequest,
    /// Name, AttachRequired, PodInfoOnMount, StorageCapacity, TokenRequests,
    /// RequiresRepublish, Modes, Age.
    CsiDriver,
    /// Name, Drivers, Age.
    CsiNode,
    /// Name, StorageClassName, Capacity.
    CsiStorageCapacity,
    /// Name, Attacher, PV, Node, Attached, Age.
    VolumeAttachment,
    /// Mutating and validating webhook configurations: Name, Webhooks, Age.
    WebhookConfiguration,
    /// Name, Validations, ParamKind, Age.
    ValidatingAdmissionPolicy,
    /// Name, PolicyName, ParamRef, Age.
    ValidatingAdmissionPolicyBinding,
    /// Name, Handler, Age.
    RuntimeClass,
    /// Name, PriorityLevel, MatchingPrecedence, DistinguisherMethod, Age, MissingPL.
    FlowSchema,
    /// Name, Type, NominalConcurrencyShares, Queues, HandSize, QueueLengthLimit, Age.
    PriorityLevelConfiguration,
}

/// Which kind-specific admission (defaulting, validation, allocation: the `admission` module)
/// a resource's writes go through, besides the generic metadata rules (docs/api-behaviour.md#object-metadata, #server-side-defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Admission {
    /// Only the generic metadata rules.
    #[default]
    None,
    /// core/v1 Namespace.
    Namespace,
    /// core/v1 Pod.
    Pod,
    /// core/v1 PodTemplate.
    PodTemplate,
    /// core/v1 ReplicationController.
    ReplicationController,
    /// core/v1 Service (cluster IP and node port allocation).
    Service,
    /// core/v1 ConfigMap.
    ConfigMap,
    /// core/v1 PersistentVolumeClaim.
    PersistentVolumeClaim,
    /// core/v1 PersistentVolume.
    PersistentVolume,
    /// storage.k8s.io/v1 StorageClass.
    StorageClass,
    /// core/v1 Secret.
    Secret,
    /// core/v1 Event.
    Event,
    /// events.k8s.io/v1 Event.
    EventV1,
    /// autoscaling/v2 HorizontalPodAutoscaler (its defaults; the stored form).
    HorizontalPodAutoscaler,
    /// autoscaling/v1 HorizontalPodAutoscaler (stored as v2, converted both ways).
    HorizontalPodAutoscalerV1,
    /// apps/v1 Deployment.
    Deployment,
    /// apps/v1 ReplicaSet.
    ReplicaSet,
    /// apps/v1 StatefulSet.
    StatefulSet,
    /// apps/v1 DaemonSet.
    DaemonSet,
    /// batch/v1 Job.
    Job,
    /// batch/v1 CronJob.
    CronJob,
    /// coordination.k8s.io/v1 Lease.
    Lease,
    /// apiregistration.k8s.io/v1 APIService.
    ApiService,
    /// certificates.k8s.io/v1 CertificateSigningRequest.
    CertificateSigningRequest,
    /// rbac.authorization.k8s.io/v1 Role.
    Role,
    /// rbac.authorization.k8s.io/v1 ClusterRole.
    ClusterRole,
    /// rbac.authorization.k8s.io/v1 RoleBinding.
    RoleBinding,
    /// rbac.authorization.k8s.io/v1 ClusterRoleBinding.
    ClusterRoleBinding,
    /// admissionregistration.k8s.io/v1 Mutating/ValidatingWebhookConfiguration (their
    /// `matchConditions`).
    WebhookConfiguration,
    /// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy.
    ValidatingAdmissionPolicy,
    /// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding.
    ValidatingAdmissionPolicyBinding,
    /// testing.kubemock.dev/v1 Fault (`faults::spec`).
    Fault,
    /// kwok.x-k8s.io/v1alpha1 Stage (`kubemock_apimachinery::stage`).
    Stage,
}

/// How a resource behaves under the generic verbs, where kinds differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Behaviour {
    /// Name validation rule.
    pub names: NameRule,
    /// Generation tracking.
    pub generation: GenerationPolicy,
    /// PUT without `metadata.resourceVersion` is allowed (last writer wins) (docs/api-behaviour.md#update-and-conflicts).
    pub unconditional_update: bool,
    /// PUT of a missing object creates it (docs/api-behaviour.md#create-on-update).
    pub create_on_update: bool,
    /// An immediate DELETE answers with the deleted object rather than a Status (docs/api-behaviour.md#delete-responses).
    pub delete_returns_object: bool,
    /// The kind's defaulting and validation hooks.
    pub admission: Admission,
    /// Whether objects are stored.
    pub storage: Storage,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            names: NameRule::Subdomain,
            generation: GenerationPolicy::None,
            unconditional_update: true,
            create_on_update: false,
            delete_returns_object: false,
            admission: Admission::None,
            storage: Storage::Stored,
        }
    }
}

/// One served resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// API group; empty for core.
    pub group: String,
    /// Version.
    pub version: String,
    /// The plural resource name used in URLs (`deployments`).
    pub plural: String,
    /// The singular name (`deployment`).
    pub singular: String,
    /// The kind (`Deployment`).
    pub kind: String,
    /// True for namespaced resources.
    pub namespaced: bool,
    /// Verbs, sorted.
    pub verbs: Vec<String>,
    /// Short names (`deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Subresources, sorted by name.
    pub subresources: Vec<Subresource>,
    /// Kind-specific behaviour of the generic verbs.
    pub behaviour: Behaviour,
    /// How its objects print as a Table.
    pub printer: Printer,
    /// What a custom resource's definition adds (schema, scale paths, ...); `None` for
    /// built-in kinds.
    pub custom: Option<Arc<Custom>>,
}

impl Resource {
    /// `group/version`, or `version` for core.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kind qualified by its group, as Invalid messages name it (`Deployment.apps`).
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// The list kind (`DeploymentList`).
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// The resource qualified by its group, as error messages name it (`deployments.apps`).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// True if the resource serves `verb`.
    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// The subresource called `name`.
    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// True for custom resources (served from a CustomResourceDefinition).
    pub fn is_custom(&self) -> bool {
        self.custom.is_some()
    }

    /// True when objects of this resource may be stored in another API's form
    /// (docs/api-behaviour.md#events: events.k8s.io/v1 Events are core/v1 Events; autoscaling/v1
    /// HPAs are stored as v2, and a v2 read converts any stored in v1 by an older kubemock), so
    /// that stored bytes are never answered as they are; admission converts them both ways.
    pub(crate) fn stored_converted(&self) -> bool {
        matches!(
            self.behaviour.admission,
            Admission::EventV1
                | Admission::HorizontalPodAutoscaler
                | Admission::HorizontalPodAutoscalerV1
        )
    }

    /// True for events.k8s.io/v1 Events, whose keys are core/v1 Events' (docs/api-behaviour.md#events).
    pub(crate) fn stored_as_core_event(&self) -> bool {
        self.behaviour.admission == Admission::EventV1
    }
}

/// A group with its versions in preference order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Group name; empty for core.
    pub name: String,
    /// Versions, preferred first.
    pub versions: Vec<String>,
}

/// Every resource, in discovery order (groups in preference order, then as listed): built-in
/// ones first, then custom ones; with the positions of each plural name, since every request
/// looks its resource up (a scan comparing strings was 5 % of a create's CPU).
#[derive(Debug, Default)]
struct Resources {
    list: Vec<Arc<Resource>>,
    /// Positions in `list` by plural name (one per group and version that has it).
    by_plural: HashMap<String, Vec<usize>>,
}

impl Resources {
    fn new(list: Vec<Arc<Resource>>) -> Self {
        let mut by_plural: HashMap<String, Vec<usize>> = HashMap::new();
        for (at, resource) in list.iter().enumerate() {
            by_plural
                .entry(resource.plural.clone())
                .or_default()
                .push(at);
        }
        Resources { list, by_plural }
    }

    fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<Resource>> {
        self.by_plural
            .get(plural)?
            .iter()
            .map(|&at| &self.list[at])
            .find(|r| r.group == group && r.version == version)
    }
}

/// The registry. Reads clone `Arc`s under a short read lock.
#[derive(Debug)]
pub struct Registry {
    resources: RwLock<Resources>,
    /// Groups in discovery order, versions preferred first.
    groups: RwLock<Vec<Group>>,
    /// How many of `resources` are built in.
    builtin: usize,
    /// The built-in groups.
    builtin_groups: Vec<Group>,
    /// Incremented whenever the custom resources change (documents built from the registry
    /// are rebuilt when it moved).
    generation: AtomicU64,
    /// Wakes whoever waits for the custom resources to change (the APIService controller).
    changed: tokio::sync::Notify,
}

impl Registry {
    /// The registry of built-in resources (with metrics-server's `metrics.k8s.io` and
    /// kubemock's own `testing.kubemock.dev`).
    pub fn builtin() -> Self {
        let (mut groups, mut resources) = builtin::resources();
        groups.push(resource_metrics::group());
        resources.extend(resource_metrics::resources());
        groups.push(testing::group());
        resources.extend(testing::resources());
        groups.push(kwok::group());
        resources.extend(kwok::resources());
        Registry {
            builtin: resources.len(),
            resources: RwLock::new(Resources::new(
                resources.into_iter().map(Arc::new).collect(),
            )),
            builtin_groups: groups.clone(),
            groups: RwLock::new(groups),
            generation: AtomicU64::new(0),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// Replaces every custom resource with `custom` (in discovery order): what the
    /// CustomResourceDefinitions define now. Groups of custom resources follow the built-in
    /// ones, by name; their versions are in Kubernetes' version priority.
    pub fn set_custom(&self, custom: Vec<Arc<Resource>>) {
        let mut groups = self.builtin_groups.clone();
        let mut custom_groups: Vec<Group> = Vec::new();
        for resource in &custom {
            if groups.iter().any(|g| g.name == resource.group) {
                continue;
            }
            match custom_groups.iter_mut().find(|g| g.name == resource.group) {
                Some(group) if !group.versions.contains(&resource.version) => {
                    group.versions.push(resource.version.clone());
                }
                Some(_) => {}
                None => custom_groups.push(Group {
                    name: resource.group.clone(),
                    versions: vec![resource.version.clone()],
                }),
            }
        }
        for group in &mut custom_groups {
            group
                .versions
                .sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        }
        custom_groups.sort_by(|a, b| a.name.cmp(&b.name));
        groups.extend(custom_groups);
        {
            let mut resources = self.resources.write();
            let mut list = std::mem::take(&mut resources.list);
            list.truncate(self.builtin);
            list.extend(custom);
            *resources = Resources::new(list);
        }
        *self.groups.write() = groups;
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// Resolves at the next change of the custom resources (create the future before reading
    /// the registry, so that no change between the two is missed).
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Moves whenever the custom resources change.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Groups in discovery order (core first).
    pub fn groups(&self) -> Vec<Group> {
        self.groups.read().clone()
    }

    /// The named group (`""` for core).
    pub fn group(&self, name: &str) -> Option<Group> {
        self.groups.read().iter().find(|g| g.name == name).cloned()
    }

    /// Resources of one group/version, in discovery order.
    pub fn resources_in(&self, group: &str, version: &str) -> Vec<Arc<Resource>> {
        self.resources
            .read()
            .list
            .iter()
            .filter(|r| r.group == group && r.version == version)
            .cloned()
            .collect()
    }

    /// The resource `plural` in `group/version`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Resource>> {
        self.resources
            .read()
            .lookup(group, version, plural)
            .cloned()
    }

    /// Every custom resource.
    pub fn custom(&self) -> Vec<Arc<Resource>> {
        self.resources.read().list[self.builtin..].to_vec()
    }
}

/// Kubernetes' version priority (`v2` > `v1` > `v1beta2` > `v1beta1` > `v1alpha1` > `foo`):
/// a sortable key, greater is preferred.
pub(crate) fn version_priority(version: &str) -> (u8, u64, u64, std::cmp::Reverse<String>) {
    let parsed = version.strip_prefix('v').and_then(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        let (level, minor) = if tail.is_empty() {
            (3, 0)
        } else if let Some(n) = tail.strip_prefix("beta") {
            (2, n.parse().ok()?)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n.parse().ok()?)
        } else {
            return None;
        };
        Some((level, major, minor))
    });
    match parsed {
        Some((level, major, minor)) => (level, major, minor, std::cmp::Reverse(String::new())),
        None => (0, 0, 0, std::cmp::Reverse(version.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_include_what_users_expect_with_real_metadata() {
        let registry = Registry::builtin();
        let deployments = registry.lookup("apps", "v1", "deployments").unwrap();
        assert_eq!(deployments.kind, "Deployment");
        assert_eq!(deployments.short_names, ["deploy"]);
        assert_eq!(deployments.categories, ["all"]);
        assert_eq!(deployments.qualified(), "deployments.apps");
        let scale = deployments.subresource("scale").unwrap();
        assert_eq!(scale.response.as_ref().unwrap().kind, "Scale");
        let namespaces = registry.lookup("", "v1", "namespaces").unwrap();
        assert!(!namespaces.namespaced);
        assert!(!namespaces.has_verb("deletecollection"));
        assert!(namespaces.subresource("finalize").is_some());
        assert_eq!(
            registry.group("autoscaling").unwrap().versions,
            ["v2", "v1"]
        );
        assert_eq!(registry.groups()[0].name, "");
    }

    #[test]
    fn printers_are_chosen_per_resource_and_scale_prints_as_scale() {
        let registry = Registry::builtin();
        let printer = |group: &str, plural: &str| {
            registry
                .resources_in(group, "v1")
                .into_iter()
                .find(|r| r.plural == plural)
                .unwrap()
                .printer
                .clone()
        };
        assert_eq!(printer("", "pods"), Printer::Pod);
        assert_eq!(printer("", "namespaces"), Printer::Namespace);
        assert_eq!(printer("events.k8s.io", "events"), Printer::EventV1);
        assert_eq!(printer("batch", "jobs"), Printer::Job);
        assert_eq!(
            printer("rbac.authorization.k8s.io", "roles"),
            Printer::Default
        );
        assert_eq!(
            printer("autoscaling", "horizontalpodautoscalers"),
            Printer::HorizontalPodAutoscaler
        );
        assert_eq!(
            printer("apiextensions.k8s.io", "customresourcedefinitions"),
            Printer::Default
        );
        let deployments = registry.lookup("apps", "v1", "deployments").unwrap();
        assert_eq!(
            deployments.subresource("scale").unwrap().printer,
            Some(Printer::Scale)
        );
        assert_eq!(deployments.subresource("status").unwrap().printer, None);
    }

    /// `lookup` goes through the index by plural name: it finds every resource that discovery
    /// lists, the built-in one where a custom resource repeats its name, and custom resources
    /// only while they are set.
    #[test]
    fn lookup_finds_what_discovery_lists_and_follows_custom_resources() {
        let registry = Registry::builtin();
        for group in registry.groups() {
            for version in &group.versions {
                for r in registry.resources_in(&group.name, version) {
                    let found = registry.lookup(&group.name, version, &r.plural).unwrap();
                    assert!(Arc::ptr_eq(&found, &r), "{}", r.qualified());
                }
            }
        }
        let builtin = registry.lookup("", "v1", "configmaps").unwrap();
        let mut custom = (*builtin).clone();
        custom.group = "example.com".to_owned();
        custom.version = "v1alpha1".to_owned();
        let custom = Arc::new(custom);
        let mut shadow = (*builtin).clone();
        shadow.kind = "Shadow".to_owned();
        registry.set_custom(vec![custom.clone(), Arc::new(shadow)]);
        let found = registry.lookup("example.com", "v1alpha1", "configmaps");
        assert!(Arc::ptr_eq(&found.unwrap(), &custom));
        assert_eq!(
            registry.lookup("", "v1", "configmaps").unwrap().kind,
            "ConfigMap"
        );
        assert!(registry.lookup("example.com", "v1", "configmaps").is_none());
        assert!(registry.lookup("", "v1", "nothing").is_none());
        registry.set_custom(Vec::new());
        assert!(
            registry
                .lookup("example.com", "v1alpha1", "configmaps")
                .is_none()
        );
        assert!(registry.lookup("", "v1", "configmaps").is_some());
    }

    #[test]
    fn every_entry_is_consistent() {
        let registry = Registry::builtin();
        let groups = registry.groups();
        let mut total = 0;
        for group in &groups {
            for version in &group.versions {
                let resources = registry.resources_in(&group.name, version);
                assert!(!resources.is_empty(), "{}/{version} is empty", group.name);
                total += resources.len();
                for r in resources {
                    let mut sorted = r.verbs.clone();
                    sorted.sort();
                    assert_eq!(sorted, r.verbs, "{} verbs sorted", r.plural);
                    let virtual_kind = r.behaviour.storage == Storage::Virtual;
                    assert!(
                        virtual_kind
                            || (r.has_verb("get") && r.has_verb("list") && r.has_verb("watch")),
                        "{} is stored, so it is read and watched",
                        r.plural
                    );
                    // (metrics-server's storages name no singular.)
                    if r.group != resource_metrics::GROUP {
                        assert_eq!(r.singular, r.kind.to_lowercase(), "{}", r.plural);
                    }
                }
            }
        }
        assert!(total >= 59, "{total} resources");
    }

    #[test]
    fn versions_sort_by_kubernetes_priority() {
        let mut versions = vec!["v1alpha1", "foo", "v1", "v2beta1", "v1beta2", "v2", "bar"];
        versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        assert_eq!(
            versions,
            ["v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "bar", "foo"]
        );
    }
}
