//! Indexed completion mode (`completionMode: Indexed`, upstream `indexed_job_utils.go`):
//! each pod carries its completion index (annotation and label
//! `batch.kubernetes.io/job-completion-index`, hostname `<job>-<index>`), and the Job is
//! complete when every index in `0..completions` has a succeeded pod. The bookkeeping is
//! pure and kept here: which indexes succeeded (`status.completedIndexes`, in upstream's
//! interval notation `1,3-5`), which indexes to start next, which pods to remove.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod};

/// The annotation and label holding a pod's completion index.
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// The environment variable every container of an indexed Job's pod gets its index in.
pub const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// A pod's completion index (the annotation, else the label), if it is one below
/// `completions`.
pub(crate) fn completion_index(pod: &Pod, completions: i32) -> Option<i32> {
    let meta = &pod.metadata;
    let text = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(COMPLETION_INDEX))
        .or_else(|| meta.labels.as_ref().and_then(|l| l.get(COMPLETION_INDEX)))?;
    text.parse::<i32>()
        .ok()
        .filter(|index| (0..completions).contains(index))
}

/// Parses `status.completedIndexes` (`1,3-5`), keeping the indexes below `completions`.
pub(crate) fn parse_indexes(text: &str, completions: i32) -> BTreeSet<i32> {
    let mut indexes = BTreeSet::new();
    for interval in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (first, last) = match interval.split_once('-') {
            Some((first, last)) => (first.parse::<i32>(), last.parse::<i32>()),
            None => (interval.parse::<i32>(), interval.parse::<i32>()),
        };
        if let (Ok(first), Ok(last)) = (first, last) {
            indexes.extend(first.max(0)..=last.min(completions - 1));
        }
    }
    indexes
}

/// Formats indexes as `status.completedIndexes`: ascending, runs of two or more as
/// `first-last` (upstream `succeededIndexesToString`).
pub(crate) fn format_indexes(indexes: &BTreeSet<i32>) -> String {
    let mut intervals: Vec<(i32, i32)> = Vec::new();
    for &index in indexes {
        match intervals.last_mut() {
            Some((_, last)) if *last + 1 == index => *last = index,
            _ => intervals.push((index, index)),
        }
    }
    intervals
        .iter()
        .map(|&(first, last)| {
            if first == last {
                first.to_string()
            } else {
                format!("{first}-{last}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The `count` lowest indexes below `completions` that neither succeeded nor have an active
/// pod (upstream `firstPendingIndexes`).
pub(crate) fn pending_indexes(
    succeeded: &BTreeSet<i32>,
    active: &BTreeSet<i32>,
    completions: i32,
    count: usize,
) -> Vec<i32> {
    (0..completions)
        .filter(|i| !succeeded.contains(i) && !active.contains(i))
        .take(count)
        .collect()
}

/// Active pods to remove: those without a valid index, and all but the first (by name) of
/// several active pods of one index (upstream `appendDuplicatedIndexPodsForRemoval`).
/// Returns the indexes the remaining active pods hold, and the names of the pods to remove.
pub(crate) fn sort_active(active: &[&Pod], completions: i32) -> (BTreeSet<i32>, Vec<String>) {
    let mut by_index: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    let mut remove = Vec::new();
    for pod in active {
        let name = pod.metadata.name.clone().unwrap_or_default();
        match completion_index(pod, completions) {
            Some(index) => by_index.entry(index).or_default().push(name),
            None => remove.push(name),
        }
    }
    for names in by_index.values_mut() {
        names.sort();
        remove.extend(names.drain(1..));
    }
    remove.sort();
    (by_index.into_keys().collect(), remove)
}

/// Marks the pod template of index `index` of Job `job`: the annotation and label, the
/// hostname `<job>-<index>`, and the `JOB_COMPLETION_INDEX` variable (from the annotation
/// through the downward API) in every container that lacks it.
pub(crate) fn mark_pod(pod: &mut Pod, job: &str, index: i32) {
    let value = index.to_string();
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(COMPLETION_INDEX.to_owned(), value.clone());
    pod.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(COMPLETION_INDEX.to_owned(), value);
    pod.metadata.generate_name = Some(generate_name(job, index));
    if let Some(spec) = pod.spec.as_mut() {
        spec.hostname = Some(format!("{job}-{index}"));
        let containers = spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten());
        for container in containers {
            let env = container.env.get_or_insert_with(Vec::new);
            if env.iter().any(|e| e.name == COMPLETION_INDEX_ENV) {
                continue;
            }
            env.push(EnvVar {
                name: COMPLETION_INDEX_ENV.to_owned(),
                value: None,
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        api_version: None,
                        field_path: format!("metadata.annotations['{COMPLETION_INDEX}']"),
                    }),
                    ..EnvVarSource::default()
                }),
            });
        }
    }
}

/// The longest prefix of a generated name the API server keeps (it appends five random
/// characters to reach the 63 of a name).
const MAX_GENERATED_PREFIX: usize = 58;

/// `<job>-<index>-`, the Job's name cut so the prefix fits (upstream
/// `podGenerateNameWithIndex`).
fn generate_name(job: &str, index: i32) -> String {
    let suffix = format!("-{index}-");
    let keep = MAX_GENERATED_PREFIX.saturating_sub(suffix.len());
    let cut = job
        .char_indices()
        .map(|(i, _)| i)
        .take_while(|i| *i <= keep)
        .last()
        .unwrap_or(0);
    let job = if job.len() > keep { &job[..cut] } else { job };
    format!("{job}{suffix}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(name: &str, index: Option<&str>) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name,
                "annotations": index.map(|i| json!({COMPLETION_INDEX: i}))},
            "spec": {"containers": [{"name": "c", "image": "i"}]}
        }))
        .expect("a pod")
    }

    #[test]
    fn completed_indexes_read_and_write_as_intervals() {
        let indexes: BTreeSet<i32> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(format_indexes(&indexes), "0-2,4,6-7");
        assert_eq!(parse_indexes("0-2,4,6-7", 10), indexes);
        assert_eq!(format_indexes(&BTreeSet::new()), "");
        assert_eq!(
            parse_indexes("1,3-9", 5),
            [1, 3, 4].into_iter().collect(),
            "indexes past completions are dropped"
        );
        assert!(parse_indexes("", 5).is_empty());
    }

    #[test]
    fn pending_indexes_are_the_lowest_neither_done_nor_running() {
        let done: BTreeSet<i32> = [0, 2].into_iter().collect();
        let running: BTreeSet<i32> = [1].into_iter().collect();
        assert_eq!(pending_indexes(&done, &running, 6, 2), [3, 4]);
        assert_eq!(pending_indexes(&done, &running, 4, 5), [3]);
        assert!(pending_indexes(&done, &running, 3, 5).is_empty());
    }

    #[test]
    fn pods_without_a_valid_index_and_duplicates_are_removed() {
        let pods = [
            pod("a", Some("0")),
            pod("b", Some("0")),
            pod("c", Some("7")),
            pod("d", None),
            pod("e", Some("x")),
            pod("f", Some("1")),
        ];
        let active: Vec<&Pod> = pods.iter().collect();
        let (held, remove) = sort_active(&active, 3);
        assert_eq!(held, [0, 1].into_iter().collect());
        assert_eq!(remove, ["b", "c", "d", "e"]);
    }

    #[test]
    fn a_pod_is_marked_with_its_index_hostname_and_variable() {
        let mut p = pod("", None);
        p.metadata.name = None;
        mark_pod(&mut p, "work", 3);
        let annotations = p.metadata.annotations.clone().unwrap_or_default();
        let labels = p.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            annotations.get(COMPLETION_INDEX).map(String::as_str),
            Some("3")
        );
        assert_eq!(labels.get(COMPLETION_INDEX).map(String::as_str), Some("3"));
        assert_eq!(p.metadata.generate_name.as_deref(), Some("work-3-"));
        let spec = p.spec.expect("a spec");
        assert_eq!(spec.hostname.as_deref(), Some("work-3"));
        let env = &spec.containers[0].env.as_ref().expect("env")[0];
        assert_eq!(env.name, COMPLETION_INDEX_ENV);
        assert_eq!(
            env.value_from
                .as_ref()
                .and_then(|v| v.field_ref.as_ref())
                .map(|f| f.field_path.as_str()),
            Some("metadata.annotations['batch.kubernetes.io/job-completion-index']")
        );
        assert_eq!(completion_index(&pod("x", Some("2")), 3), Some(2));
        let long = "j".repeat(70);
        let name = generate_name(&long, 12);
        assert_eq!(name.len(), MAX_GENERATED_PREFIX);
        assert!(name.ends_with("-12-"), "{name}");
    }
}
