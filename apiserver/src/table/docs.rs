//! Column descriptions, verbatim: the real printers describe most columns with the API
//! field's documentation (`SwaggerDoc()` of the k8s.io/api 1.32 types), and clients show them
//! (`kubectl explain`-like UIs, `-o json` of a Table). Kept apart so the printers stay readable.

/// `metav1.ObjectMeta` `name`.
pub(super) const NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// `metav1.ObjectMeta` `creationTimestamp`.
pub(super) const CREATION_TIMESTAMP: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// `PodStatus` `podIP`.
pub(super) const POD_IP: &str = "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.";

/// `PodSpec` `nodeName`.
pub(super) const POD_NODE_NAME: &str = "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename";

/// `PodStatus` `nominatedNodeName`.
pub(super) const POD_NOMINATED_NODE_NAME: &str = "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.";

/// `PodSpec` `readinessGates`.
pub(super) const POD_READINESS_GATES: &str = "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates";

/// `ServiceSpec` `type`.
pub(super) const SERVICE_TYPE: &str = "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";

/// `ServiceSpec` `clusterIP`.
pub(super) const SERVICE_CLUSTER_IP: &str = "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";

/// `ServiceSpec` `externalIPs`.
pub(super) const SERVICE_EXTERNAL_IPS: &str = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";

/// `ServiceSpec` `ports`.
pub(super) const SERVICE_PORTS: &str = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";

/// `ServiceSpec` `selector`.
pub(super) const SERVICE_SELECTOR: &str = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";

/// `ConfigMap` `data`.
pub(super) const CONFIGMAP_DATA: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";

/// `Secret` `type`.
pub(super) const SECRET_TYPE: &str = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types";

/// `Secret` `data`.
pub(super) const SECRET_DATA: &str = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4";

/// `NodeSystemInfo` `kubeletVersion`.
pub(super) const NODE_KUBELET_VERSION: &str = "Kubelet Version reported by the node.";

/// `NodeStatus` `addresses` (both IP columns).
pub(super) const NODE_ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

/// `NodeSystemInfo` `osImage`.
pub(super) const NODE_OS_IMAGE: &str =
    "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).";

/// `NodeSystemInfo` `kernelVersion`.
pub(super) const NODE_KERNEL_VERSION: &str =
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).";

/// `NodeSystemInfo` `containerRuntimeVersion`.
pub(super) const NODE_CONTAINER_RUNTIME: &str = "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).";

/// `Event` `lastTimestamp`.
pub(super) const EVENT_LAST_TIMESTAMP: &str =
    "The time at which the most recent occurrence of this event was recorded.";

/// `Event` `type`.
pub(super) const EVENT_TYPE: &str =
    "Type of this event (Normal, Warning), new types could be added in the future";

/// `Event` `reason`.
pub(super) const EVENT_REASON: &str = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";

/// `Event` `involvedObject`.
pub(super) const EVENT_INVOLVED_OBJECT: &str = "The object that this event is about.";

/// `ObjectReference` `fieldPath`.
pub(super) const EVENT_FIELD_PATH: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";

/// `Event` `source`.
pub(super) const EVENT_SOURCE: &str =
    "The component reporting this event. Should be a short machine understandable string.";

/// `Event` `message`.
pub(super) const EVENT_MESSAGE: &str =
    "A human-readable description of the status of this operation.";

/// `Event` `firstTimestamp`.
pub(super) const EVENT_FIRST_TIMESTAMP: &str =
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";

/// `Event` `count`.
pub(super) const EVENT_COUNT: &str = "The number of times this event has occurred.";

/// `LeaseSpec` `holderIdentity`.
pub(super) const LEASE_HOLDER: &str = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.";

/// extensions/v1beta1 `ReplicaSetSpec` `replicas`.
pub(super) const RS_SPEC_REPLICAS: &str = "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller";

/// extensions/v1beta1 `ReplicaSetStatus` `replicas`.
pub(super) const RS_STATUS_REPLICAS: &str = "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller";

/// extensions/v1beta1 `ReplicaSetStatus` `readyReplicas`.
pub(super) const RS_READY_REPLICAS: &str =
    "readyReplicas is the number of pods targeted by this ReplicaSet with a Ready Condition.";

/// extensions/v1beta1 `ReplicaSetSpec` `selector`.
pub(super) const RS_SELECTOR: &str = "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

/// extensions/v1beta1 `DeploymentStatus` `updatedReplicas`.
pub(super) const DEPLOYMENT_UPDATED: &str = "Total number of non-terminated pods targeted by this deployment that have the desired template spec.";

/// extensions/v1beta1 `DeploymentStatus` `availableReplicas`.
pub(super) const DEPLOYMENT_AVAILABLE: &str = "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.";

/// extensions/v1beta1 `DeploymentSpec` `selector`.
pub(super) const DEPLOYMENT_SELECTOR: &str = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.";

/// autoscaling/v1 `ScaleSpec` `replicas`.
pub(super) const SCALE_SPEC_REPLICAS: &str =
    "replicas is the desired number of instances for the scaled object.";

/// autoscaling/v1 `ScaleStatus` `replicas`.
pub(super) const SCALE_STATUS_REPLICAS: &str =
    "replicas is the actual number of observed instances of the scaled object.";

/// Pod Ready column.
pub(super) const POD_READY: &str =
    "The aggregate readiness state of this pod for accepting traffic.";

/// Pod Status column.
pub(super) const POD_STATUS: &str = "The aggregate status of the containers in this pod.";

/// Pod Restarts column.
pub(super) const POD_RESTARTS: &str = "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.";

/// Containers column of workloads.
pub(super) const CONTAINERS: &str = "Names of each container in the template.";

/// Images column of workloads.
pub(super) const IMAGES: &str = "Images referenced by each container in the template.";

/// Deployment and StatefulSet Ready column.
pub(super) const DEPLOYMENT_READY: &str = "Number of the pod with ready state";

/// Namespace Status column.
pub(super) const NAMESPACE_STATUS: &str = "The status of the namespace";

/// Node Status column.
pub(super) const NODE_STATUS: &str = "The status of the node";

/// Node Roles column.
pub(super) const NODE_ROLES: &str = "The roles of the node";

/// core/v1 `Endpoints` `subsets`.
pub(super) const ENDPOINTS_SUBSETS: &str = "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.";

/// discovery/v1beta1 `EndpointSlice` `addressType`.
pub(super) const ENDPOINT_SLICE_ADDRESS_TYPE: &str = "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name.";

/// discovery/v1beta1 `EndpointSlice` `ports`.
pub(super) const ENDPOINT_SLICE_PORTS: &str = "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports.";

/// discovery/v1beta1 `EndpointSlice` `endpoints`.
pub(super) const ENDPOINT_SLICE_ENDPOINTS: &str = "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.";

/// extensions/v1beta1 `DaemonSetStatus` `desiredNumberScheduled`.
pub(super) const DS_DESIRED: &str = "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";

/// extensions/v1beta1 `DaemonSetStatus` `currentNumberScheduled`.
pub(super) const DS_CURRENT: &str = "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";

/// extensions/v1beta1 `DaemonSetStatus` `numberReady`.
pub(super) const DS_READY: &str = "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.";

/// extensions/v1beta1 `DaemonSetStatus` `updatedNumberScheduled`.
pub(super) const DS_UPDATED: &str = "The total number of nodes that are running updated daemon pod";

/// extensions/v1beta1 `DaemonSetStatus` `numberAvailable`.
pub(super) const DS_AVAILABLE: &str = "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)";

/// `PodSpec` `nodeSelector`.
pub(super) const POD_NODE_SELECTOR: &str = "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/";

/// extensions/v1beta1 `DaemonSetSpec` `selector`.
pub(super) const DS_SELECTOR: &str = "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

/// Job Status column.
pub(super) const JOB_STATUS: &str = "Status of the job.";

/// batch/v1 `JobStatus` `succeeded`.
pub(super) const JOB_SUCCEEDED: &str = "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.";

/// Job Duration column.
pub(super) const JOB_DURATION: &str = "Time required to complete the job.";

/// batch/v1 `JobSpec` `selector`.
pub(super) const JOB_SELECTOR: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

/// batch/v1beta1 `CronJobSpec` `schedule`.
pub(super) const CRONJOB_SCHEDULE: &str =
    "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.";

/// batch/v1beta1 `CronJobSpec` `timeZone`.
pub(super) const CRONJOB_TIME_ZONE: &str = "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones";

/// batch/v1beta1 `CronJobSpec` `suspend`.
pub(super) const CRONJOB_SUSPEND: &str = "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.";

/// batch/v1beta1 `CronJobStatus` `active`.
pub(super) const CRONJOB_ACTIVE: &str = "A list of pointers to currently running jobs.";

/// batch/v1beta1 `CronJobStatus` `lastScheduleTime`.
pub(super) const CRONJOB_LAST_SCHEDULE: &str =
    "Information when was the last time the job was successfully scheduled.";

/// core/v1 `ReplicationControllerSpec` `replicas`.
pub(super) const RC_SPEC_REPLICAS: &str = "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller";

/// core/v1 `ReplicationControllerStatus` `replicas`.
pub(super) const RC_STATUS_REPLICAS: &str = "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller";

/// core/v1 `ReplicationControllerStatus` `readyReplicas`.
pub(super) const RC_READY_REPLICAS: &str =
    "The number of ready replicas for this replication controller.";

/// core/v1 `ReplicationControllerSpec` `selector`.
pub(super) const RC_SELECTOR: &str = "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

/// PodTemplate Pod Labels column.
pub(super) const POD_TEMPLATE_LABELS: &str = "The labels for the pod template.";

/// ControllerRevision Controller column.
pub(super) const REVISION_CONTROLLER: &str = "Controller of the object";

/// apps/v1beta1 `ControllerRevision` `revision`.
pub(super) const REVISION: &str =
    "Revision indicates the revision of the state represented by Data.";

/// core/v1 `ServiceAccount` `secrets`.
pub(super) const SERVICE_ACCOUNT_SECRETS: &str = "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret";

/// core/v1 `PersistentVolumeSpec` `capacity`.
pub(super) const PV_CAPACITY: &str = "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity";

/// core/v1 `PersistentVolumeSpec` `accessModes`.
pub(super) const PV_ACCESS_MODES: &str = "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes";

/// core/v1 `PersistentVolumeSpec` `persistentVolumeReclaimPolicy`.
pub(super) const PV_RECLAIM_POLICY: &str = "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming";

/// core/v1 `PersistentVolumeStatus` `phase`.
pub(super) const PV_PHASE: &str = "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase";

/// core/v1 `PersistentVolumeSpec` `claimRef`.
pub(super) const PV_CLAIM_REF: &str = "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding";

/// PersistentVolume StorageClass column.
pub(super) const PV_STORAGE_CLASS: &str = "StorageClass of the pv";

/// PersistentVolume VolumeAttributesClass column.
pub(super) const PV_VOLUME_ATTRIBUTES_CLASS: &str = "VolumeAttributesClass of the pv";

/// core/v1 `PersistentVolumeStatus` `reason`.
pub(super) const PV_REASON: &str = "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.";

/// core/v1 `PersistentVolumeSpec` `volumeMode`.
pub(super) const PV_VOLUME_MODE: &str = "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.";

/// core/v1 `PersistentVolumeClaimStatus` `phase`.
pub(super) const PVC_PHASE: &str = "phase represents the current phase of PersistentVolumeClaim.";

/// core/v1 `PersistentVolumeClaimSpec` `volumeName`.
pub(super) const PVC_VOLUME_NAME: &str =
    "volumeName is the binding reference to the PersistentVolume backing this claim.";

/// core/v1 `PersistentVolumeClaimStatus` `capacity`.
pub(super) const PVC_CAPACITY: &str =
    "capacity represents the actual resources of the underlying volume.";

/// core/v1 `PersistentVolumeClaimStatus` `accessModes`.
pub(super) const PVC_ACCESS_MODES: &str = "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1";

/// PersistentVolumeClaim StorageClass column.
pub(super) const PVC_STORAGE_CLASS: &str = "StorageClass of the pvc";

/// PersistentVolumeClaim VolumeAttributesClass column.
pub(super) const PVC_VOLUME_ATTRIBUTES_CLASS: &str = "VolumeAttributesClass of the pvc";

/// core/v1 `PersistentVolumeClaimSpec` `volumeMode`.
pub(super) const PVC_VOLUME_MODE: &str = "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.";

/// storage/v1 `StorageClass` `provisioner`.
pub(super) const SC_PROVISIONER: &str = "provisioner indicates the type of the provisioner.";

/// storage/v1 `StorageClass` `reclaimPolicy`.
pub(super) const SC_RECLAIM_POLICY: &str = "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.";

/// storage/v1 `StorageClass` `volumeBindingMode`.
pub(super) const SC_VOLUME_BINDING_MODE: &str = "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.";

/// storage/v1 `StorageClass` `allowVolumeExpansion`.
pub(super) const SC_ALLOW_VOLUME_EXPANSION: &str =
    "allowVolumeExpansion shows whether the storage class allow volume expand.";

/// Ingress Class column.
pub(super) const INGRESS_CLASS: &str =
    "The name of the IngressClass resource that should be used for additional configuration";

/// Ingress Hosts column.
pub(super) const INGRESS_HOSTS: &str =
    "Hosts that incoming requests are matched against before the ingress rule";

/// Ingress Address column.
pub(super) const INGRESS_ADDRESS: &str =
    "Address is a list containing ingress points for the load-balancer";

/// Ingress Ports column.
pub(super) const INGRESS_PORTS: &str = "Ports of TLS configurations that open";

/// IngressClass Controller column.
pub(super) const INGRESS_CLASS_CONTROLLER: &str =
    "Controller that is responsible for handling this class";

/// IngressClass Parameters column.
pub(super) const INGRESS_CLASS_PARAMETERS: &str =
    "A reference to a resource with additional parameters";

/// extensions/v1beta1 `NetworkPolicySpec` `podSelector`.
pub(super) const NETWORK_POLICY_POD_SELECTOR: &str = "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods.  In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace.";

/// autoscaling/v2beta1 `HorizontalPodAutoscalerSpec` `scaleTargetRef`.
pub(super) const HPA_REFERENCE: &str = "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.";

/// autoscaling/v2beta1 `HorizontalPodAutoscalerSpec` `metrics`.
pub(super) const HPA_METRICS: &str = "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond.";

/// autoscaling/v2beta1 `HorizontalPodAutoscalerSpec` `minReplicas`.
pub(super) const HPA_MIN_REPLICAS: &str = "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.";

/// autoscaling/v2beta1 `HorizontalPodAutoscalerSpec` `maxReplicas`.
pub(super) const HPA_MAX_REPLICAS: &str = "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.";

/// autoscaling/v2beta1 `HorizontalPodAutoscalerStatus` `currentReplicas`.
pub(super) const HPA_CURRENT_REPLICAS: &str = "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.";

/// PodDisruptionBudget Min Available column.
pub(super) const PDB_MIN_AVAILABLE: &str = "The minimum number of pods that must be available.";

/// PodDisruptionBudget Max Unavailable column.
pub(super) const PDB_MAX_UNAVAILABLE: &str = "The maximum number of pods that may be unavailable.";

/// PodDisruptionBudget Allowed Disruptions column.
pub(super) const PDB_ALLOWED_DISRUPTIONS: &str =
    "Calculated number of pods that may be disrupted at this time.";

/// scheduling/v1 `PriorityClass` `value`.
pub(super) const PRIORITY_VALUE: &str = "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.";

/// scheduling/v1 `PriorityClass` `globalDefault`.
pub(super) const PRIORITY_GLOBAL_DEFAULT: &str = "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.";

/// scheduling/v1 `PriorityClass` `preemptionPolicy`.
pub(super) const PRIORITY_PREEMPTION_POLICY: &str = "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.";

/// ResourceQuota Request column.
pub(super) const QUOTA_REQUEST: &str =
    "Request represents a minimum amount of cpu/memory that a container may consume.";

/// ResourceQuota Limit column.
pub(super) const QUOTA_LIMIT: &str = "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.";

/// rbac/v1beta1 `RoleBinding` `roleRef`.
pub(super) const ROLE_BINDING_ROLE_REF: &str = "roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.";

/// rbac/v1beta1 `ClusterRoleBinding` `roleRef`.
pub(super) const CLUSTER_ROLE_BINDING_ROLE_REF: &str = "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.";

/// RoleBinding Users column.
pub(super) const ROLE_BINDING_USERS: &str = "Users in the roleBinding";

/// RoleBinding Groups column.
pub(super) const ROLE_BINDING_GROUPS: &str = "Groups in the roleBinding";

/// RoleBinding ServiceAccounts column.
pub(super) const ROLE_BINDING_SERVICE_ACCOUNTS: &str = "ServiceAccounts in the roleBinding";

/// ClusterRoleBinding Users column.
pub(super) const CLUSTER_ROLE_BINDING_USERS: &str = "Users in the clusterRoleBinding";

/// ClusterRoleBinding Groups column.
pub(super) const CLUSTER_ROLE_BINDING_GROUPS: &str = "Groups in the clusterRoleBinding";

/// ClusterRoleBinding ServiceAccounts column.
pub(super) const CLUSTER_ROLE_BINDING_SERVICE_ACCOUNTS: &str =
    "ServiceAccounts in the clusterRoleBinding";

// ----- the API extension, certificate, flow-control, node and CSI kinds (printers/cluster.rs) -----

/// `certificate_signing_request_spec` `signerName`.
pub(super) const CSR_SIGNER_NAME: &str = "signerName indicates the requested signer, and is a qualified name.\n\nList/watch requests for CertificateSigningRequests can filter on this field using a \"spec.signerName=NAME\" fieldSelector.\n\nWell-known Kubernetes signers are:\n 1. \"kubernetes.io/kube-apiserver-client\": issues client certificates that can be used to authenticate to kube-apiserver.\n  Requests for this signer are never auto-approved by kube-controller-manager, can be issued by the \"csrsigning\" controller in kube-controller-manager.\n 2. \"kubernetes.io/kube-apiserver-client-kubelet\": issues client certificates that kubelets use to authenticate to kube-apiserver.\n  Requests for this signer can be auto-approved by the \"csrapproving\" controller in kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n 3. \"kubernetes.io/kubelet-serving\" issues serving certificates that kubelets use to serve TLS endpoints, which kube-apiserver can connect to securely.\n  Requests for this signer are never auto-approved by kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n\nMore details are available at https://k8s.io/docs/reference/access-authn-authz/certificate-signing-requests/#kubernetes-signers\n\nCustom signerNames can also be specified. The signer defines:\n 1. Trust distribution: how trust (CA bundles) are distributed.\n 2. Permitted subjects: and behavior when a disallowed subject is requested.\n 3. Required, permitted, or forbidden x509 extensions in the request (including whether subjectAltNames are allowed, which types, restrictions on allowed values) and behavior when a disallowed extension is requested.\n 4. Required, permitted, or forbidden key usages / extended key usages.\n 5. Expiration/certificate lifetime: whether it is fixed by the signer, configurable by the admin.\n 6. Whether or not requests for CA certificates are allowed.";

/// `certificate_signing_request_spec` `request`.
pub(super) const CSR_REQUEST: &str = "request contains an x509 certificate signing request encoded in a \"CERTIFICATE REQUEST\" PEM block. When serialized as JSON or YAML, the data is additionally base64-encoded.";

/// `certificate_signing_request_spec` `expirationSeconds`.
pub(super) const CSR_EXPIRATION_SECONDS: &str = "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.";

/// `certificate_signing_request_status` `conditions`.
pub(super) const CSR_CONDITIONS: &str = "conditions applied to the request. Known conditions are \"Approved\", \"Denied\", and \"Failed\".";

/// `volume_attachment_spec` `attacher`.
pub(super) const VOLUME_ATTACHMENT_ATTACHER: &str = "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().";

/// `volume_attachment_source` `persistentVolumeName`.
pub(super) const VOLUME_ATTACHMENT_PV: &str =
    "persistentVolumeName represents the name of the persistent volume to attach.";

/// `volume_attachment_spec` `nodeName`.
pub(super) const VOLUME_ATTACHMENT_NODE: &str =
    "nodeName represents the node that the volume should be attached to.";

/// `volume_attachment_status` `attached`.
pub(super) const VOLUME_ATTACHMENT_ATTACHED: &str = "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.";

/// `csi_driver_spec` `attachRequired`.
pub(super) const CSI_DRIVER_ATTACH_REQUIRED: &str = "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the CSIDriverRegistry feature gate is enabled and the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.";

/// `csi_driver_spec` `podInfoOnMount`.
pub(super) const CSI_DRIVER_POD_INFO_ON_MOUNT: &str = "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume\n                                defined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and now is mutable.";

/// `csi_driver_spec` `storageCapacity`.
pub(super) const CSI_DRIVER_STORAGE_CAPACITY: &str = "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable.";

/// `csi_driver_spec` `tokenRequests`.
pub(super) const CSI_DRIVER_TOKEN_REQUESTS: &str = "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n  \"<audience>\": {\n    \"token\": <token>,\n    \"expirationTimestamp\": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.";

/// `csi_driver_spec` `requiresRepublish`.
pub(super) const CSI_DRIVER_REQUIRES_REPUBLISH: &str = "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container.";

/// `csi_driver_spec` `volumeLifecycleModes`.
pub(super) const CSI_DRIVER_MODES: &str = "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.";

/// `csi_storage_capacity` `storageClassName`.
pub(super) const CSI_STORAGE_CAPACITY_CLASS: &str = "storageClassName represents the name of the StorageClass that the reported capacity applies to. It must meet the same requirements as the name of a StorageClass object (non-empty, DNS subdomain). If that object no longer exists, the CSIStorageCapacity object is obsolete and should be removed by its creator. This field is immutable.";

/// `csi_storage_capacity` `capacity`.
pub(super) const CSI_STORAGE_CAPACITY_CAPACITY: &str = "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.\n\nThe semantic is currently (CSI spec 1.2) defined as: The available capacity, in bytes, of the storage that can be used to provision volumes. If not set, that information is currently unavailable.";

/// `priority_level_configuration_reference` `name`.
pub(super) const FLOW_SCHEMA_PRIORITY_LEVEL: &str =
    "`name` is the name of the priority level configuration being referenced Required.";

/// `flow_schema_spec` `matchingPrecedence`.
pub(super) const FLOW_SCHEMA_MATCHING_PRECEDENCE: &str = "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.";

/// `flow_schema_spec` `distinguisherMethod`.
pub(super) const FLOW_SCHEMA_DISTINGUISHER: &str = "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.";

/// `priority_level_configuration_spec` `type`.
pub(super) const PRIORITY_LEVEL_TYPE: &str = "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.";

/// `limited_priority_level_configuration` `nominalConcurrencyShares`.
pub(super) const PRIORITY_LEVEL_SHARES: &str = "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)";

/// `queuing_configuration` `queues`.
pub(super) const PRIORITY_LEVEL_QUEUES: &str = "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.";

/// `queuing_configuration` `handSize`.
pub(super) const PRIORITY_LEVEL_HAND_SIZE: &str = "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.";

/// `queuing_configuration` `queueLengthLimit`.
pub(super) const PRIORITY_LEVEL_QUEUE_LENGTH: &str = "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.";

/// ComponentStatus Status column.
pub(super) const COMPONENT_STATUS: &str = "Status of the component conditions";

/// ComponentStatus Message column.
pub(super) const COMPONENT_MESSAGE: &str = "Message of the component conditions";

/// ComponentStatus Error column.
pub(super) const COMPONENT_ERROR: &str = "Error of the component conditions";

/// APIService Service column (kube-aggregator's convertor).
pub(super) const API_SERVICE_SERVICE: &str =
    "The reference to the service that hosts the API endpoint.";

/// APIService Available column.
pub(super) const API_SERVICE_AVAILABLE: &str = "Whether this service is available.";

/// CSINode Drivers column.
pub(super) const CSI_NODE_DRIVERS: &str =
    "Drivers indicates the number of CSI drivers registered on the node";

/// Webhook configurations' Webhooks column.
pub(super) const WEBHOOKS: &str =
    "Webhooks indicates the number of webhooks registered in this configuration";

/// ValidatingAdmissionPolicy Validations column.
pub(super) const VAP_VALIDATIONS: &str =
    "Validations indicates the number of validation rules defined in this configuration";

/// ValidatingAdmissionPolicy ParamKind column.
pub(super) const VAP_PARAM_KIND: &str =
    "ParamKind specifies the kind of resources used to parameterize this policy";

/// ValidatingAdmissionPolicyBinding PolicyName column.
pub(super) const VAPB_POLICY_NAME: &str =
    "PolicyName indicates the policy definition which the policy binding binded to";

/// ValidatingAdmissionPolicyBinding ParamRef column (upstream's spelling).
pub(super) const VAPB_PARAM_REF: &str =
    "ParamRef indicates the param resource which sets the configration param";

/// FlowSchema MissingPL column.
pub(super) const FLOW_SCHEMA_MISSING_PL: &str =
    "references a broken or non-existent PriorityLevelConfiguration";
