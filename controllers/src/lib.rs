//! kubemock-controllers: the in-tree controllers and the controller manager, built on
//! `kubemock-client` alone, exactly as an out-of-tree controller would be, so the manager also
//! runs against a real cluster. Never depends on the API server, the store, sled or axum.
//!
//! # Layout
//! - [`manager`]: which controllers run, one shared informer factory, leader election.
//! - [`credentials`]: who each controller is: its ServiceAccount and a renewed TokenRequest
//!   token (kube-controller-manager's `--use-service-account-credentials`), or the manager.
//! - [`discovery`]: the served resources (preferred versions), for controllers that act on
//!   every resource.
//! - [`namespace`]: empties terminating namespaces, then finalizes them (docs/api-behaviour.md#namespace-deletion).
//! - [`clusterroleaggregation`]: fills the rules of aggregated ClusterRoles (`admin`, `edit`,
//!   `view`, ...) from the ClusterRoles their selectors match.
//! - [`deployment`]: ReplicaSets per template, rolling and recreate rollouts, conditions.
//! - [`daemonset`]: one pod per eligible node, revisions, rolling and OnDelete updates.
//! - [`replicaset`]: pods for ReplicaSets: adoption, expectations, slow start, status.
//! - [`statefulset`]: pods with stable names and claims, ordered or parallel, revisions,
//!   rolling and on-delete updates.
//! - [`cronjob`]: Jobs on cron schedules, concurrency policies, history limits.
//! - [`clock`]: the time source of time-driven controllers (system, or fake in tests).
//! - [`job`]: Jobs run pods to completion (NonIndexed and Indexed), fail past limits,
//!   expire by TTL.
//! - [`endpoints`]: Endpoints and EndpointSlices of Services, from the pods they select.
//! - [`scheduler`]: binds pending pods to nodes that fit them.
//! - [`podindex`]: the pod cache's index of pods by node, for controllers acting on a node's
//!   pods.
//! - [`kubelet`]: simulated nodes, and pods on them Running and Ready.
//! - [`nodelifecycle`]: nodes whose kubelet went silent: Unknown, tainted unreachable or
//!   not-ready, their pods not Ready; untainted when back.
//! - [`tainteviction`]: deletes pods from NoExecute-tainted nodes after their toleration.
//! - [`podautoscaler`]: HorizontalPodAutoscalers (autoscaling/v2): resource metrics read
//!   from `metrics.k8s.io`, `behavior`, stabilization windows, the target's `scale`.
//! - [`resourcequota`]: ResourceQuota `status.hard` and `status.used`, recounted.
//! - [`gc`]: the garbage collector: ownerReferences, background, foreground and orphan
//!   deletion (docs/api-behaviour.md#propagation-policy).
//! - [`volume`]: the PersistentVolume binder, the volume protection controllers, and a
//!   simulated provisioner with the default StorageClass.
//! - [`validatingadmissionpolicystatus`]: ValidatingAdmissionPolicies' `status.typeChecking`
//!   (their expressions type-checked against the schemas of the kinds they match).
//! - [`error`]: the one error type; a failed sync is retried rate-limited by its worker.
//!
//! # Invariants
//! - Every controller is level-driven: a sync reads the current state and moves it one step.
//! - Writes carry the resourceVersion they were computed from; a Conflict means "requeue".

mod claim;
pub mod clock;
pub mod clusterroleaggregation;
pub mod credentials;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod discovery;
pub mod disruption;
pub mod endpoints;
pub mod error;
pub mod gc;
pub mod job;
pub mod kubelet;
pub mod manager;
pub mod namespace;
pub mod nodelifecycle;
pub mod podautoscaler;
pub mod podindex;
pub mod replicaset;
pub mod resourcequota;
pub mod rootca;
pub mod scheduler;
pub mod statefulset;
pub mod tainteviction;
pub mod validatingadmissionpolicystatus;
pub mod volume;

pub use credentials::Credentials;
pub use error::{Error, Result};
pub use manager::{LeaderElection, ManagerConfig, campaign, run, run_as, run_with_leader_election};
