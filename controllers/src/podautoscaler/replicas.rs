//! The replica calculator of the HorizontalPodAutoscaler controller, ported from upstream's
//! `pkg/controller/podautoscaler/replica_calculator.go` and `metrics/utilization.go`
//! (k8s.io/kubernetes v1.32): how many replicas a resource metric asks for, given the pods the
//! target's selector picks and their metrics. Pure functions over the pods, the metrics and
//! "now", so the upstream test cases port as tables (`tests` below).
//!
//! - Pods being deleted or Failed are ignored; Pending ones count as unready; for `cpu`, a pod
//!   not Ready, or within the CPU initialization period and measured before one window after
//!   its readiness changed, is unready too (`groupPods`).
//! - Without unready or missing pods: `ceil(ratio × ready pods)`, unless the ratio is within
//!   the tolerance of 1.
//! - Missing pods count as using 100% of their request (or the target, when above 100%) on a
//!   scale-down and 0% on a scale-up; unready pods 0% on a scale-up; a recount that changes
//!   direction or falls within the tolerance keeps the current count.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kubemock_apimachinery::quantity::Quantity;

/// One pod's metric: its value in milli-units (`PodMetric`), with the time and window of the
/// sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodMetric {
    /// When the sample was taken.
    pub timestamp: Timestamp,
    /// The span it covers.
    pub window: SignedDuration,
    /// The value, in thousandths (`MilliValue`).
    pub value: i64,
}

/// Metrics by pod name (`PodMetricsInfo`).
pub type PodMetrics = BTreeMap<String, PodMetric>;

/// What a calculation looks at: the pods the target's selector picks, their metrics, and
/// the time.
#[derive(Debug)]
pub struct Observed<'a> {
    /// The pods.
    pub pods: &'a [&'a Pod],
    /// Their metrics, by pod name.
    pub metrics: PodMetrics,
    /// Now, on the controller's clock.
    pub now: Timestamp,
}

/// The calculator's settings (kube-controller-manager's `--horizontal-pod-autoscaler-*`).
#[derive(Debug, Clone, Copy)]
pub struct Calculator {
    /// A ratio within this of 1 changes nothing (`--horizontal-pod-autoscaler-tolerance`, 0.1).
    pub tolerance: f64,
    /// After a pod starts, CPU samples taken before a window after its readiness changed are
    /// not trusted (`--horizontal-pod-autoscaler-cpu-initialization-period`, 5 minutes).
    pub cpu_initialization_period: SignedDuration,
    /// A pod not Ready whose readiness last changed within this of its start has never been
    /// Ready (`--horizontal-pod-autoscaler-initial-readiness-delay`, 30 s).
    pub initial_readiness_delay: SignedDuration,
}

impl Default for Calculator {
    fn default() -> Self {
        Calculator {
            tolerance: 0.1,
            cpu_initialization_period: SignedDuration::from_mins(5),
            initial_readiness_delay: SignedDuration::from_secs(30),
        }
    }
}

/// How the pods fall (`groupPods`): ready ones counted, the others by name.
#[derive(Debug, Default, PartialEq, Eq)]
struct Groups {
    ready: usize,
    unready: BTreeSet<String>,
    missing: BTreeSet<String>,
    ignored: BTreeSet<String>,
}

fn name_of(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

fn group_pods(
    calc: &Calculator,
    pods: &[&Pod],
    metrics: &PodMetrics,
    resource: &str,
    now: Timestamp,
) -> Groups {
    let mut groups = Groups::default();
    for pod in pods {
        let name = name_of(pod);
        let status = pod.status.as_ref();
        let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("");
        if pod.metadata.deletion_timestamp.is_some() || phase == "Failed" {
            groups.ignored.insert(name);
            continue;
        }
        if phase == "Pending" {
            groups.unready.insert(name);
            continue;
        }
        let Some(metric) = metrics.get(&name) else {
            groups.missing.insert(name);
            continue;
        };
        if resource == "cpu" {
            let ready = status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
            let start = status.and_then(|s| s.start_time.as_ref()).map(|t| t.0);
            let unready = match (ready, start) {
                (Some(ready), Some(start)) => {
                    let transition = ready
                        .last_transition_time
                        .as_ref()
                        .map_or(Timestamp::MIN, |t| t.0);
                    if start + calc.cpu_initialization_period > now {
                        ready.status == "False" || metric.timestamp < transition + metric.window
                    } else {
                        ready.status == "False" && start + calc.initial_readiness_delay > transition
                    }
                }
                _ => true,
            };
            if unready {
                groups.unready.insert(name);
                continue;
            }
        }
        groups.ready += 1;
    }
    groups
}

/// Each pod's request of `resource` in milli-units, summed over its containers (or only
/// `container`) and restartable init containers (`calculatePodRequests`); an error names the
/// first container without one.
pub(super) fn pod_requests(
    pods: &[&Pod],
    container: Option<&str>,
    resource: &str,
) -> Result<BTreeMap<String, i64>, String> {
    let mut requests = BTreeMap::new();
    for pod in pods {
        let mut sum = 0i64;
        let spec = pod.spec.as_ref();
        let sidecars = spec
            .and_then(|s| s.init_containers.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"));
        let containers = spec.map(|s| s.containers.iter()).into_iter().flatten();
        for c in containers.chain(sidecars) {
            if container.is_some_and(|wanted| wanted != c.name) {
                continue;
            }
            let request = c
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get(resource))
                .and_then(|q| Quantity::parse(&q.0).ok());
            match request {
                Some(q) => sum = sum.saturating_add(q.milli_value()),
                None => {
                    return Err(format!(
                        "missing request for {resource} in container {} of Pod {}",
                        c.name,
                        name_of(pod)
                    ));
                }
            }
        }
        requests.insert(name_of(pod), sum);
    }
    Ok(requests)
}

/// The ratio of the pods' utilization to the target, the utilization (percent of the
/// requests) and the average raw value (`GetResourceUtilizationRatio`).
pub(super) fn utilization_ratio(
    metrics: &PodMetrics,
    requests: &BTreeMap<String, i64>,
    target: i32,
) -> Result<(f64, i32, i64), String> {
    let (mut total, mut requested, mut entries) = (0i64, 0i64, 0i64);
    for (pod, metric) in metrics {
        let Some(request) = requests.get(pod) else {
            continue;
        };
        total += metric.value;
        requested += request;
        entries += 1;
    }
    if requested == 0 {
        return Err("no metrics returned matched known pods".to_owned());
    }
    let utilization = i32::try_from(total * 100 / requested).unwrap_or(i32::MAX);
    Ok((
        f64::from(utilization) / f64::from(target),
        utilization,
        total / entries,
    ))
}

/// The ratio of the pods' average value to the target, and that average
/// (`GetMetricUsageRatio`).
pub(super) fn usage_ratio(metrics: &PodMetrics, target: i64) -> (f64, i64) {
    let total: i64 = metrics.values().map(|m| m.value).sum();
    let count = i64::try_from(metrics.len()).unwrap_or(i64::MAX).max(1);
    let current = total / count;
    (current as f64 / target as f64, current)
}

fn ceil_count(ratio: f64, count: usize) -> i32 {
    let value = (ratio * count as f64).ceil();
    if value >= f64::from(i32::MAX) {
        i32::MAX
    } else {
        value as i32
    }
}

impl Calculator {
    /// Replicas for a target utilization of `resource` (`GetResourceReplicas`, after the
    /// metrics are read): the count, the utilization and the average raw value.
    pub fn resource_replicas(
        &self,
        current: i32,
        target: i32,
        resource: &str,
        container: Option<&str>,
        observed: Observed<'_>,
    ) -> Result<(i32, i32, i64), String> {
        let pods = observed.pods;
        let (groups, mut metrics) = self.counted(observed, resource)?;
        let requests = pod_requests(pods, container, resource)?;
        let (ratio, utilization, raw) = utilization_ratio(&metrics, &requests, target)?;
        let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
        if !scale_up_with_unready && groups.missing.is_empty() {
            if (1.0 - ratio).abs() <= self.tolerance {
                return Ok((current, utilization, raw));
            }
            return Ok((ceil_count(ratio, groups.ready), utilization, raw));
        }
        if !groups.missing.is_empty() {
            if ratio < 1.0 {
                let fallback = i64::from(target.max(100));
                for name in &groups.missing {
                    let request = requests.get(name).copied().unwrap_or(0);
                    metrics.insert(name.clone(), zero_metric(request * fallback / 100));
                }
            } else if ratio > 1.0 {
                for name in &groups.missing {
                    metrics.insert(name.clone(), zero_metric(0));
                }
            }
        }
        if scale_up_with_unready {
            for name in &groups.unready {
                metrics.insert(name.clone(), zero_metric(0));
            }
        }
        let (new_ratio, _, _) = utilization_ratio(&metrics, &requests, target)?;
        Ok((
            self.settle(current, ratio, new_ratio, metrics.len()),
            utilization,
            raw,
        ))
    }

    /// Replicas for a target average value (`GetRawResourceReplicas` and
    /// `calcPlainMetricReplicas`): the count and the average value.
    pub fn plain_replicas(
        &self,
        current: i32,
        target: i64,
        resource: &str,
        observed: Observed<'_>,
    ) -> Result<(i32, i64), String> {
        let (groups, mut metrics) = self.counted(observed, resource)?;
        let (ratio, usage) = usage_ratio(&metrics, target);
        let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
        if !scale_up_with_unready && groups.missing.is_empty() {
            if (1.0 - ratio).abs() <= self.tolerance {
                return Ok((current, usage));
            }
            return Ok((ceil_count(ratio, groups.ready), usage));
        }
        // On a scale-down missing pods use exactly the target, on a scale-up nothing.
        let assumed = if ratio < 1.0 {
            Some(target)
        } else if ratio > 1.0 {
            Some(0)
        } else {
            None
        };
        if let Some(value) = assumed {
            for name in &groups.missing {
                metrics.insert(name.clone(), zero_metric(value));
            }
        }
        if scale_up_with_unready {
            for name in &groups.unready {
                metrics.insert(name.clone(), zero_metric(0));
            }
        }
        let (new_ratio, _) = usage_ratio(&metrics, target);
        Ok((self.settle(current, ratio, new_ratio, metrics.len()), usage))
    }

    /// The start of both calculations: the pods grouped, and the metrics of those that count
    /// (neither ignored nor unready); an error when there is no pod or no such metric.
    fn counted(
        &self,
        observed: Observed<'_>,
        resource: &str,
    ) -> Result<(Groups, PodMetrics), String> {
        let Observed {
            pods,
            mut metrics,
            now,
        } = observed;
        if pods.is_empty() {
            return Err("no pods returned by selector while calculating replica count".to_owned());
        }
        let groups = group_pods(self, pods, &metrics, resource, now);
        for name in groups.ignored.iter().chain(&groups.unready) {
            metrics.remove(name);
        }
        if metrics.is_empty() {
            return Err(
                "did not receive metrics for targeted pods (pods might be unready)".to_owned(),
            );
        }
        Ok((groups, metrics))
    }

    /// The end of both calculations once missing and unready pods have assumed values: the
    /// current count when the change is within the tolerance or would reverse direction.
    fn settle(&self, current: i32, ratio: f64, new_ratio: f64, count: usize) -> i32 {
        if (1.0 - new_ratio).abs() <= self.tolerance
            || (ratio < 1.0 && new_ratio > 1.0)
            || (ratio > 1.0 && new_ratio < 1.0)
        {
            return current;
        }
        let replicas = ceil_count(new_ratio, count);
        if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
            return current;
        }
        replicas
    }
}

/// An assumed metric (only the value is read after grouping).
fn zero_metric(value: i64) -> PodMetric {
    PodMetric {
        timestamp: Timestamp::MIN,
        window: SignedDuration::ZERO,
        value,
    }
}

#[cfg(test)]
mod tests {
    //! Cases of upstream's `replica_calculator_test.go` (k8s.io/kubernetes v1.32), as tables:
    //! the pods (phase, readiness, requests), the metric values (milli), the target and the
    //! expected count and utilization.

    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{
        Container, PodCondition, PodSpec, PodStatus, ResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).expect("valid")
    }

    /// A Running pod, Ready since long ago (upstream's default test pods), requesting `cpu`.
    fn pod(name: &str, phase: &str, ready: &str, cpu_request: &str) -> Pod {
        let long_ago = Time(now() - SignedDuration::from_mins(10));
        Pod {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".to_owned(),
                    resources: Some(ResourceRequirements {
                        requests: Some(BTreeMap::from([(
                            "cpu".to_owned(),
                            K8sQuantity(cpu_request.to_owned()),
                        )])),
                        ..ResourceRequirements::default()
                    }),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.to_owned()),
                start_time: Some(long_ago.clone()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".to_owned(),
                    status: ready.to_owned(),
                    last_transition_time: Some(long_ago),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
        }
    }

    fn metrics(values: &[(&str, i64)]) -> PodMetrics {
        values
            .iter()
            .map(|(name, value)| {
                (
                    (*name).to_owned(),
                    PodMetric {
                        timestamp: now(),
                        window: SignedDuration::from_secs(30),
                        value: *value,
                    },
                )
            })
            .collect()
    }

    fn observed<'a>(pods: &'a [&'a Pod], values: &[(&str, i64)]) -> Observed<'a> {
        Observed {
            pods,
            metrics: metrics(values),
            now: now(),
        }
    }

    fn run(pods: &[Pod], values: &[(&str, i64)], current: i32, target: i32) -> (i32, i32) {
        let refs: Vec<&Pod> = pods.iter().collect();
        let (replicas, utilization, _) = Calculator::default()
            .resource_replicas(current, target, "cpu", None, observed(&refs, values))
            .expect("computes");
        (replicas, utilization)
    }

    fn running(names: &[&str]) -> Vec<Pod> {
        names
            .iter()
            .map(|n| pod(n, "Running", "True", "1"))
            .collect()
    }

    /// `TestReplicaCalcScaleUp`: 3 pods requesting 1 CPU at 300m, 500m, 700m, target 30%.
    #[test]
    fn scale_up() {
        let pods = running(&["a", "b", "c"]);
        let got = run(&pods, &[("a", 300), ("b", 500), ("c", 700)], 3, 30);
        assert_eq!(got, (5, 50));
    }

    /// `TestReplicaCalcScaleDown`: 5 pods at 100, 300, 500, 250, 250 millicores, target 50%.
    #[test]
    fn scale_down() {
        let pods = running(&["a", "b", "c", "d", "e"]);
        let values = [("a", 100), ("b", 300), ("c", 500), ("d", 250), ("e", 250)];
        assert_eq!(run(&pods, &values, 5, 50), (3, 28));
    }

    /// `TestReplicaCalcTolerance`: requests 0.9, 1.0 and 1.1 CPU using 1010m, 1030m and
    /// 1020m, target 100%: 102% is within the tolerance.
    #[test]
    fn tolerance() {
        let pods = [
            pod("a", "Running", "True", "900m"),
            pod("b", "Running", "True", "1"),
            pod("c", "Running", "True", "1100m"),
        ];
        let got = run(&pods, &[("a", 1010), ("b", 1030), ("c", 1020)], 3, 100);
        assert_eq!(got, (3, 102));
    }

    /// `TestReplicaCalcScaleUpUnreadyLessScale`: an unready pod counts as 0% on a scale-up.
    #[test]
    fn scale_up_with_an_unready_pod() {
        let mut pods = running(&["a", "b", "c"]);
        pods[0] = pod("a", "Running", "False", "1");
        let got = run(&pods, &[("a", 300), ("b", 500), ("c", 700)], 3, 30);
        assert_eq!(got, (4, 60));
    }

    /// `TestReplicaCalcScaleDownIgnoresFailedPods`: Failed pods are ignored.
    #[test]
    fn scale_down_ignores_failed_pods() {
        let mut pods = running(&["a", "b", "c", "d", "e"]);
        pods.push(pod("f", "Failed", "False", "1"));
        pods.push(pod("g", "Failed", "False", "1"));
        let values = [("a", 100), ("b", 300), ("c", 500), ("d", 250), ("e", 250)];
        assert_eq!(run(&pods, &values, 5, 50), (3, 28));
    }

    /// `TestReplicaCalcMissingMetricsNoChangeGt`: 2 pods, one measured at 190%; the missing
    /// one counts as 0% on a scale-up, which brings the ratio back within the tolerance.
    #[test]
    fn missing_metrics_on_a_scale_up_keep_the_count() {
        let pods = running(&["a", "b"]);
        assert_eq!(run(&pods, &[("a", 1900)], 2, 100), (2, 190));
    }

    /// `TestReplicaCalcMissingMetricsNoChangeLt`: one measured at 60%; the missing one
    /// counts as 100% on a scale-down: 80% of 2 pods is still 2.
    #[test]
    fn missing_metrics_on_a_scale_down_count_as_the_request() {
        let pods = running(&["a", "b"]);
        assert_eq!(run(&pods, &[("a", 600)], 2, 100), (2, 60));
    }

    /// `calculatePodRequests`: a container without a request refuses, in upstream's words.
    #[test]
    fn a_container_without_a_request_refuses() {
        let mut pods = running(&["a"]);
        if let Some(spec) = pods[0].spec.as_mut() {
            spec.containers[0].resources = None;
        }
        let refs: Vec<&Pod> = pods.iter().collect();
        let err = Calculator::default()
            .resource_replicas(1, 50, "cpu", None, observed(&refs, &[("a", 100)]))
            .expect_err("no request");
        assert_eq!(err, "missing request for cpu in container c of Pod a");
    }

    /// `TestReplicaCalcScaleUpCM` (pods metric values): 20000, 10000, 30000 milli against a
    /// target of 15000: ceil(20000/15000 × 3) = 4.
    #[test]
    fn plain_values_scale_up() {
        let pods = running(&["a", "b", "c"]);
        let refs: Vec<&Pod> = pods.iter().collect();
        let got = Calculator::default()
            .plain_replicas(
                3,
                15_000,
                "memory",
                observed(&refs, &[("a", 20_000), ("b", 10_000), ("c", 30_000)]),
            )
            .expect("computes");
        assert_eq!(got, (4, 20_000));
    }
}
