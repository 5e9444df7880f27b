//! Field ownership (docs/api-behaviour.md#server-side-apply): `metadata.managedFields` kept on every write, and server-side apply.
//!
//! Every create, update and patch records, for its field manager (the `fieldManager` parameter
//! or the User-Agent up to its first `/`), the fields it changed, as an `Update` entry; an
//! apply patch merges the applied configuration into the live object, records exactly the
//! fields it applied as an `Apply` entry, removes the fields it applied last time and no
//! longer does (unless another manager owns them), and fails with 409 when it would change a
//! field another manager owns, unless forced. The algorithm is upstream's
//! (structured-merge-diff `merge.Updater`), over JSON with the kind's [`Types`].

use std::sync::{Arc, LazyLock};

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::meta::{self, FieldError};
use crate::object::{self, Object};
use crate::registry::Resource;
use crate::status::{ApiError, ApiResult, Cause, Details};
use kubemock_apimachinery::managedfields::fieldpath::{Path, PathElement, Set, path_string};
use kubemock_apimachinery::managedfields::typed;
use kubemock_apimachinery::managedfields::types::Types;
use kubemock_apimachinery::protobuf::SCHEMA;

/// The longest field manager name the real server accepts.
const MAX_MANAGER_LENGTH: usize = 128;

/// Who is writing: a manager, with the API version and subresource of its request.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    /// The manager's name.
    pub(crate) manager: String,
    /// The request's group/version (`apps/v1`).
    pub(crate) api_version: String,
    /// `status`, `scale`, or empty for the object itself.
    pub(crate) subresource: String,
    /// Record without the kind's schema (see [`Writer::server`]).
    untyped: bool,
}

impl Writer {
    /// The writer of a request: the `fieldManager` parameter, else the User-Agent up to its
    /// first `/` (upstream's `managerOrUserAgent`). `options` names the options kind in
    /// validation errors (`CreateOptions`, ...).
    pub(crate) fn of_request(
        field_manager: Option<&str>,
        user_agent: Option<&str>,
        resource: &Resource,
        subresource: Option<&str>,
        options: &str,
    ) -> ApiResult<Writer> {
        let manager = match field_manager {
            Some(manager) => {
                validate_manager(manager, options)?;
                manager.to_owned()
            }
            None => {
                let agent = user_agent.unwrap_or("");
                let prefix = agent.split('/').next().unwrap_or("");
                prefix
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(MAX_MANAGER_LENGTH)
                    .collect()
            }
        };
        Ok(Writer {
            manager,
            api_version: resource.group_version(),
            subresource: subresource.unwrap_or("").to_owned(),
            untyped: false,
        })
    }

    /// A component of the server itself, writing its startup objects and the default
    /// ServiceAccounts. These are recorded without the kind's schema, which is generated in
    /// the background while they are written (startup must not wait for it): their maps are
    /// granular as with the schema, a list among them is owned as a whole.
    pub(crate) fn server(manager: &str, resource: &Resource) -> Writer {
        Writer {
            manager: manager.to_owned(),
            api_version: resource.group_version(),
            subresource: String::new(),
            untyped: true,
        }
    }

    /// The same writer, writing `subresource` (a server component's status writes).
    #[must_use]
    pub(crate) fn on_subresource(mut self, subresource: &str) -> Writer {
        subresource.clone_into(&mut self.subresource);
        self
    }
}

/// Upstream's `ValidateFieldManager`.
fn validate_manager(manager: &str, options: &str) -> ApiResult<()> {
    let mut errors = Vec::new();
    if manager.chars().count() > MAX_MANAGER_LENGTH {
        errors.push(FieldError {
            field: "fieldManager".to_owned(),
            reason: "FieldValueTooLong",
            detail: format!("Too long: may not be more than {MAX_MANAGER_LENGTH} bytes"),
        });
    }
    for (position, c) in manager.chars().enumerate() {
        if c.is_control() {
            errors.push(FieldError {
                field: "fieldManager".to_owned(),
                reason: "FieldValueInvalid",
                detail: format!(
                    "Invalid value: {manager:?}: invalid character U+{:04X} (at position {position})",
                    u32::from(c)
                ),
            });
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(meta::invalid(
            &format!("{options}.meta.k8s.io"),
            "meta.k8s.io",
            options,
            "",
            errors,
        ))
    }
}

/// The operation of a managedFields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `metadata.managedFields` entry.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    time: Option<String>,
    subresource: String,
    set: Set,
}

impl Entry {
    /// Upstream's manager identity: an applier is the same manager whatever its version.
    fn is(
        &self,
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: &str,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource == subresource
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    /// How conflict messages name the manager.
    fn label(&self) -> String {
        match self.operation {
            Operation::Update => format!("{:?} using {}", self.manager, self.api_version),
            Operation::Apply => format!("{:?}", self.manager),
        }
    }

    fn decode(value: &Value) -> Option<Entry> {
        let object = value.as_object()?;
        let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
        let operation = match text("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return None,
        };
        if !matches!(text("fieldsType"), "FieldsV1" | "") {
            return None;
        }
        let set = match object.get("fieldsV1") {
            Some(fields) => Set::from_fields_v1(fields)?,
            None => Set::new(),
        };
        Some(Entry {
            manager: text("manager").to_owned(),
            operation,
            api_version: text("apiVersion").to_owned(),
            time: object
                .get("time")
                .and_then(Value::as_str)
                .map(str::to_owned),
            subresource: text("subresource").to_owned(),
            set,
        })
    }

    fn encode(&self) -> Value {
        // Go's `omitempty` on every member.
        let mut out = Map::new();
        if !self.manager.is_empty() {
            out.insert("manager".to_owned(), json!(self.manager));
        }
        out.insert("operation".to_owned(), json!(self.operation.as_str()));
        if !self.api_version.is_empty() {
            out.insert("apiVersion".to_owned(), json!(self.api_version));
        }
        if let Some(time) = &self.time {
            out.insert("time".to_owned(), json!(time));
        }
        out.insert("fieldsType".to_owned(), json!("FieldsV1"));
        out.insert("fieldsV1".to_owned(), self.set.to_fields_v1());
        if !self.subresource.is_empty() {
            out.insert("subresource".to_owned(), json!(self.subresource));
        }
        Value::Object(out)
    }
}

/// What `metadata.managedFields` of an object says, `None` when it is absent, empty or not
/// valid (upstream then falls back to the live object's).
fn decode_entries(object: &Object) -> Option<Vec<Entry>> {
    let entries = object
        .get("metadata")?
        .get("managedFields")?
        .as_array()
        .filter(|e| !e.is_empty())?;
    entries.iter().map(Entry::decode).collect()
}

/// `[{}]`: the documented way for a non-apply write to strip every entry.
fn is_reset(object: &Object) -> bool {
    object
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .is_some_and(|e| e.len() == 1 && e[0].as_object().is_some_and(Map::is_empty))
}

/// Writes `entries` into `object`, sorted as upstream sorts them.
fn store_entries(object: &mut Object, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.set.is_empty());
    entries.sort_by(|a, b| {
        (
            a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    let metadata = object::metadata_mut(object);
    if entries.is_empty() {
        metadata.shift_remove("managedFields");
    } else {
        metadata.insert(
            "managedFields".to_owned(),
            Value::Array(entries.iter().map(Entry::encode).collect()),
        );
    }
}

/// The types of `resource`'s kind.
pub(crate) fn types_of(resource: &Resource) -> Arc<Types> {
    if let Some(custom) = &resource.custom {
        return Arc::clone(&custom.types);
    }
    match SCHEMA.as_ref() {
        Ok(schema) => Types::for_kind(schema, &resource.group_version(), &resource.kind),
        Err(_) => Types::untyped(),
    }
}

fn field(name: &str) -> PathElement {
    PathElement::Field(name.to_owned())
}

/// Fields no manager owns (upstream's strip set, removed member by member).
static STRIPPED: LazyLock<Set> = LazyLock::new(|| {
    let mut set = Set::new();
    for path in [
        vec!["apiVersion"],
        vec!["kind"],
        vec!["metadata"],
        vec!["metadata", "name"],
        vec!["metadata", "namespace"],
        vec!["metadata", "creationTimestamp"],
        vec!["metadata", "selfLink"],
        vec!["metadata", "uid"],
        vec!["metadata", "clusterName"],
        vec!["metadata", "generation"],
        vec!["metadata", "managedFields"],
        vec!["metadata", "resourceVersion"],
    ] {
        let path: Path = path.into_iter().map(field).collect();
        set.insert(&path);
    }
    set
});

/// The field a write through `subresource` never owns (upstream's reset fields): the status
/// for writes of the object when a status subresource exists, the spec for status writes.
fn reset_field(resource: &Resource, subresource: &str) -> Option<&'static str> {
    match subresource {
        "status" => Some("spec"),
        "" if resource.subresource("status").is_some() => Some("status"),
        _ => None,
    }
}

/// `set` without what no manager of a `subresource` write owns.
fn owned_part(resource: &Resource, subresource: &str, mut set: Set) -> Set {
    set.subtract(&STRIPPED);
    if let Some(reset) = reset_field(resource, subresource) {
        set.remove_subtree(&[field(reset)]);
    }
    set
}

/// What an empty object of `resource`'s kind looks like as Go marshals it: the value a
/// create is compared with. Struct-typed (non-pointer) fields are present as `{}` and slices
/// without `omitempty` as `null`, which decides whether a created container is marked as
/// added itself (`.` in `FieldsV1`), exactly as on a real server.
fn zero_object(resource: &Resource, types: &Types) -> Value {
    let pod_template = || json!({"metadata": {}, "spec": {"containers": null}});
    let spec = match (resource.group.as_str(), resource.kind.as_str()) {
        ("apps", "Deployment") => {
            Some(json!({"selector": null, "template": pod_template(), "strategy": {}}))
        }
        ("apps", "ReplicaSet") => Some(json!({"selector": null, "template": pod_template()})),
        ("apps", "StatefulSet" | "DaemonSet") => {
            Some(json!({"selector": null, "template": pod_template(), "updateStrategy": {}}))
        }
        ("batch", "Job") => Some(json!({"template": pod_template()})),
        ("batch", "CronJob") => {
            Some(json!({"jobTemplate": {"metadata": {}, "spec": {"template": pod_template()}}}))
        }
        ("", "Pod") => Some(json!({"containers": null})),
        _ => None,
    };
    if resource.is_custom() {
        // An empty custom object is just that.
        return Value::Object(Map::new());
    }
    let mut zero = Map::new();
    zero.insert("metadata".to_owned(), json!({}));
    if types.declares(types.root, "spec") {
        zero.insert("spec".to_owned(), spec.unwrap_or_else(|| json!({})));
    }
    if types.declares(types.root, "status") {
        let status = match (resource.group.as_str(), resource.kind.as_str()) {
            ("", "Service") => json!({"loadBalancer": {}}),
            _ => json!({}),
        };
        zero.insert("status".to_owned(), status);
    }
    if (resource.group.as_str(), resource.kind.as_str()) == ("", "PodTemplate") {
        zero.insert("template".to_owned(), pod_template());
    }
    Value::Object(zero)
}

/// The object as the walks see it: without its managedFields, and with the struct fields Go
/// would marshal as `{}` even when unset (a stored Deployment without `status` has one on a
/// real server), so that their appearance is no change.
fn comparable(object: &Object, zero: &Value) -> Value {
    let mut copy = Value::Object(object.clone());
    if let Some(Value::Object(metadata)) = copy.get_mut("metadata") {
        metadata.shift_remove("managedFields");
    }
    fill_absent(&mut copy, zero);
    copy
}

/// `value` with the members of `zero` it lacks.
fn fill(mut value: Value, zero: &Value) -> Value {
    fill_absent(&mut value, zero);
    value
}

/// Adds to `value` the members of `zero` it lacks, recursively.
fn fill_absent(value: &mut Value, zero: &Value) {
    let (Value::Object(map), Value::Object(zero)) = (value, zero) else {
        return;
    };
    for (key, default) in zero {
        match map.get_mut(key) {
            Some(present) => fill_absent(present, default),
            None => {
                map.insert(key.clone(), default.clone());
            }
        }
    }
}

/// Takes from every manager but the writer (`me`) what the write sets (`changed`) or
/// removes; returns what was taken for a set field, the conflicts of an apply.
fn settle(
    entries: &mut [Entry],
    me: &dyn Fn(&Entry) -> bool,
    changed: &Set,
    removed: &Set,
) -> Vec<(String, Path)> {
    let mut conflicts = Vec::new();
    for entry in entries.iter_mut().filter(|e| !me(e)) {
        let conflict = entry.set.intersection(changed);
        for path in conflict.paths() {
            conflicts.push((entry.label(), path));
        }
        entry.set = entry.set.difference(&conflict).difference(removed);
    }
    conflicts
}

/// Records the write of `new` over `old` (`None` for a create) by `who` in
/// `new.metadata.managedFields`.
pub(crate) fn record_update(
    resource: &Resource,
    who: &Writer,
    old: Option<&Object>,
    new: &mut Object,
) {
    if is_reset(new) {
        object::metadata_mut(new).shift_remove("managedFields");
        return;
    }
    let types = if who.untyped {
        Types::untyped()
    } else {
        types_of(resource)
    };
    let mut entries = decode_entries(new)
        .or_else(|| old.and_then(decode_entries))
        .unwrap_or_default();
    let zero = zero_object(resource, &types);
    let empty = Map::new();
    let zero_map = zero.as_object().unwrap_or(&empty);
    // (A create compares with the zero object; managedFields are stripped from the sets.)
    // The reset field is not compared: `owned_part` drops it from both sets (a status write
    // then skips the object's spec, a pod's largest part).
    let skip = reset_field(resource, &who.subresource);
    let comparison =
        typed::compare_objects(&types, old.unwrap_or(zero_map), new, &zero, skip.as_slice());
    let (changed, removed) = comparison.into_changed_and_removed();
    let changed = owned_part(resource, &who.subresource, changed);
    let removed = owned_part(resource, &who.subresource, removed);
    let is_me = |e: &Entry| {
        e.is(
            &who.manager,
            Operation::Update,
            &who.api_version,
            &who.subresource,
        )
    };
    settle(&mut entries, &is_me, &changed, &removed);
    let mine = entries.iter().position(is_me);
    // (A create's writer, new to the object, owns just what it changed: no copies.)
    let (after, time) = match mine {
        Some(i) => {
            let before = &entries[i].set;
            let mut after = before.clone();
            after.subtract(&removed);
            after.absorb(changed);
            let time = if after == *before {
                entries[i].time.clone()
            } else {
                Some(meta::now_rfc3339())
            };
            (after, time)
        }
        None => (changed, Some(meta::now_rfc3339())),
    };
    let entry = Entry {
        manager: who.manager.clone(),
        operation: Operation::Update,
        api_version: who.api_version.clone(),
        time,
        subresource: who.subresource.clone(),
        set: after,
    };
    match mine {
        Some(i) => entries[i] = entry,
        None => entries.push(entry),
    }
    store_entries(new, entries);
}

/// Server-side apply of `config` by `who` over `live` (`None`: the object does not exist yet
/// and is created from the configuration). Returns the object to write, with its
/// managedFields, or the 409 of docs/api-behaviour.md#server-side-apply listing the conflicts.
pub(crate) fn apply(
    resource: &Resource,
    who: &Writer,
    live: Option<&Object>,
    config: &Object,
    force: bool,
) -> ApiResult<Object> {
    let types = types_of(resource);
    let mut entries = live.and_then(decode_entries).unwrap_or_default();
    let zero = zero_object(resource, &types);
    let live_value = match live {
        Some(live) => comparable(live, &zero),
        None => zero.clone(),
    };
    let config_value = Value::Object(config.clone());
    // Upstream converts the configuration to a typed value first, and refuses it when that
    // fails (a 500 there, as any error it does not map; bad input here).
    typed::check_applied(&types, &config_value).map_err(|err| {
        ApiError::bad_request(format!(
            "failed to create typed patch object ({}, Kind={}) {}/{}: {err}",
            resource.group_version(),
            resource.kind,
            object::meta_str(config, "namespace").unwrap_or(""),
            object::name_of(config),
        ))
    })?;
    // The merge starts from the object as stored (or nothing): the zero object only stands
    // for "no fields yet" in the comparison below.
    let mut base = Value::Object(live.cloned().unwrap_or_default());
    if let Some(Value::Object(metadata)) = base.get_mut("metadata") {
        metadata.shift_remove("managedFields");
    }
    let mut merged = typed::merge(&types, &base, &config_value);
    let applied = owned_part(
        resource,
        &who.subresource,
        typed::field_set(&types, &config_value),
    );
    let is_me = |e: &Entry| e.is(&who.manager, Operation::Apply, "", &who.subresource);
    let mine = entries.iter().position(is_me);
    let last = mine.map(|i| entries[i].set.clone()).unwrap_or_default();

    // Fields applied last time and not now go, unless someone else still owns them.
    let others = entries
        .iter()
        .filter(|e| !is_me(e))
        .fold(applied.clone(), |owned, e| owned.union(&e.set));
    let mut dropped = Set::new();
    for path in last.difference(&others).paths() {
        if !others.has_below(&path) {
            dropped.insert(&path);
        }
    }
    typed::remove(&types, &mut merged, &dropped);

    let comparison = typed::compare(&types, &live_value, &fill(merged.clone(), &zero));
    let (changed, removed) = comparison.into_changed_and_removed();
    let changed = owned_part(resource, &who.subresource, changed);
    let removed = owned_part(resource, &who.subresource, removed);
    let mut trial = entries.clone();
    let conflicts = settle(&mut trial, &is_me, &changed, &removed);
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(conflicts));
    }
    entries = trial;
    let time = match mine {
        Some(i) if applied == last && entries[i].api_version == who.api_version => {
            entries[i].time.clone()
        }
        _ => Some(meta::now_rfc3339()),
    };
    let entry = Entry {
        manager: who.manager.clone(),
        operation: Operation::Apply,
        api_version: who.api_version.clone(),
        time,
        subresource: who.subresource.clone(),
        set: applied,
    };
    match mine {
        Some(i) => entries[i] = entry,
        None => entries.push(entry),
    }
    let Value::Object(mut merged) = merged else {
        return Err(ApiError::bad_request(
            "the applied configuration is not an object",
        ));
    };
    store_entries(&mut merged, entries);
    Ok(merged)
}

/// The 409 of a conflicting apply, worded as upstream words it.
fn conflict_error(mut conflicts: Vec<(String, Path)>) -> ApiError {
    conflicts.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let causes = conflicts
        .iter()
        .map(|(manager, path)| Cause {
            reason: "FieldManagerConflict".to_owned(),
            message: format!("conflict with {manager}"),
            field: path_string(path),
        })
        .collect();
    let message = if let [(manager, path)] = conflicts.as_slice() {
        format!(
            "Apply failed with 1 conflict: conflict with {manager}: {}",
            path_string(path)
        )
    } else {
        let mut lines = Vec::new();
        let mut current: Option<&str> = None;
        for (manager, path) in &conflicts {
            if current != Some(manager) {
                lines.push(format!("conflicts with {manager}:"));
                current = Some(manager);
            }
            lines.push(format!("- {}", path_string(path)));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    ApiError::new(StatusCode::CONFLICT, "Conflict", message).with_details(Details {
        causes,
        ..Details::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn deployments() -> Arc<Resource> {
        Registry::builtin()
            .lookup("apps", "v1", "deployments")
            .expect("deployments")
    }

    fn writer(manager: &str) -> Writer {
        Writer {
            untyped: false,
            ..Writer::server(manager, &deployments())
        }
    }

    fn deployment(image: &str, replicas: i64) -> Object {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": image}]}}}})
        .as_object()
        .cloned()
        .expect("object")
    }

    fn entry<'a>(object: &'a Object, manager: &str) -> &'a Value {
        object["metadata"]["managedFields"]
            .as_array()
            .expect("managedFields")
            .iter()
            .find(|e| e["manager"] == manager)
            .expect("entry")
    }

    #[test]
    fn a_create_records_what_the_real_server_records() {
        let resource = deployments();
        let mut created = deployment("nginx", 1);
        record_update(&resource, &writer("kubectl-create"), None, &mut created);
        let entry = entry(&created, "kubectl-create");
        assert_eq!(entry["operation"], "Update");
        assert_eq!(entry["apiVersion"], "apps/v1");
        assert_eq!(
            entry["fieldsV1"],
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:replicas": {}, "f:selector": {},
                    "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
        );
    }

    #[test]
    fn an_applied_configuration_with_a_keyless_or_repeated_list_item_is_refused() {
        // Found by the `apply` fuzz target: a container without a name was merged in as a new
        // element on every apply (upstream refuses the configuration: no duplicates, every
        // key field, in its typed conversion).
        let resource = deployments();
        let containers = |list: Value| {
            let mut config = deployment("nginx", 1);
            config["spec"]["template"]["spec"]["containers"] = list;
            config
        };
        for (list, detail) in [
            (
                json!([{"name": "c", "image": "a"}, {"image": "b"}]),
                ".spec.template.spec.containers: element 1: associative list with keys has an \
                 element that omits key field \"name\" (and doesn't have default value)",
            ),
            (
                json!([{"name": "c", "image": "a"}, {"name": "c", "image": "b"}]),
                ".spec.template.spec.containers: duplicate entries for key [name=\"c\"]",
            ),
            (
                json!([{"name": "c", "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]}]),
                ".spec.template.spec.containers[name=\"c\"].ports: duplicate entries for key \
                 [containerPort=80,protocol=\"TCP\"]",
            ),
        ] {
            let error = apply(
                &resource,
                &writer("kubectl"),
                None,
                &containers(list),
                false,
            )
            .expect_err("refused");
            assert_eq!(error.code, StatusCode::BAD_REQUEST);
            assert_eq!(
                error.message,
                format!(
                    "failed to create typed patch object (apps/v1, Kind=Deployment) default/web: {detail}"
                )
            );
        }
        // A key field with a default may be left out (a port's protocol).
        let ports = containers(json!([{"name": "c", "ports": [{"containerPort": 80}]}]));
        apply(&resource, &writer("kubectl"), None, &ports, false).expect("applies");
    }

    #[test]
    fn apply_conflicts_with_another_manager_unless_forced() {
        let resource = deployments();
        let mut live = deployment("nginx", 1);
        record_update(&resource, &writer("kubectl-create"), None, &mut live);
        let config = deployment("nginx", 3);
        let error = apply(&resource, &writer("kubectl"), Some(&live), &config, false)
            .expect_err("replicas are owned by kubectl-create");
        assert_eq!(error.code, StatusCode::CONFLICT);
        assert_eq!(
            error.message,
            "Apply failed with 1 conflict: conflict with \"kubectl-create\" using apps/v1: .spec.replicas"
        );
        let forced =
            apply(&resource, &writer("kubectl"), Some(&live), &config, true).expect("forced");
        assert_eq!(forced["spec"]["replicas"], 3);
        let create = entry(&forced, "kubectl-create");
        assert!(create["fieldsV1"]["f:spec"].get("f:replicas").is_none());
        let mine = entry(&forced, "kubectl");
        assert_eq!(mine["operation"], "Apply");
        assert!(mine["fieldsV1"]["f:spec"].get("f:replicas").is_some());
    }

    #[test]
    fn an_applier_that_stops_applying_a_field_removes_it() {
        let resource = deployments();
        let mut first = deployment("nginx", 1);
        first["metadata"]["labels"]["tier"] = json!("web");
        let live = apply(&resource, &writer("mgr"), None, &first, false).expect("created");
        assert_eq!(live["metadata"]["labels"]["tier"], "web");
        let second = deployment("nginx", 1);
        let updated = apply(&resource, &writer("mgr"), Some(&live), &second, false).expect("ok");
        assert!(updated["metadata"]["labels"].get("tier").is_none());
        // Applying the same configuration again changes nothing, managedFields included.
        let again = apply(&resource, &writer("mgr"), Some(&updated), &second, false).expect("ok");
        assert_eq!(again, updated);
    }

    #[test]
    fn fields_shared_with_another_manager_survive_their_removal_from_one() {
        let resource = deployments();
        let mut config = deployment("nginx", 1);
        config["metadata"]["labels"]["tier"] = json!("web");
        let live = apply(&resource, &writer("a"), None, &config, false).expect("a");
        let live = apply(&resource, &writer("b"), Some(&live), &config, false).expect("b");
        let without = deployment("nginx", 1);
        let live = apply(&resource, &writer("a"), Some(&live), &without, false).expect("a again");
        assert_eq!(live["metadata"]["labels"]["tier"], "web");
    }

    #[test]
    fn several_conflicts_are_listed_per_manager() {
        let resource = deployments();
        let mut live = deployment("nginx", 1);
        record_update(&resource, &writer("creator"), None, &mut live);
        let error = apply(
            &resource,
            &writer("kubectl"),
            Some(&live),
            &deployment("httpd", 2),
            false,
        )
        .expect_err("conflicts");
        assert_eq!(
            error.message,
            "Apply failed with 2 conflicts: conflicts with \"creator\" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name=\"c\"].image"
        );
        let causes = &error.details.as_ref().expect("details").causes;
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].reason, "FieldManagerConflict");
    }

    #[test]
    fn updates_take_ownership_and_reset_strips_entries() {
        let resource = deployments();
        let mut live = deployment("nginx", 1);
        record_update(&resource, &writer("a"), None, &mut live);
        let mut next = live.clone();
        next["spec"]["replicas"] = json!(5);
        record_update(&resource, &writer("b"), Some(&live), &mut next);
        assert!(
            entry(&next, "a")["fieldsV1"]["f:spec"]
                .get("f:replicas")
                .is_none()
        );
        assert_eq!(
            entry(&next, "b")["fieldsV1"],
            json!({"f:spec": {"f:replicas": {}}})
        );
        let mut reset = next.clone();
        reset["metadata"]["managedFields"] = json!([{}]);
        record_update(&resource, &writer("c"), Some(&next), &mut reset);
        assert!(reset["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn manager_names_come_from_the_parameter_or_the_user_agent() {
        let resource = deployments();
        let from_agent = Writer::of_request(
            None,
            Some("kubectl/v1.32.0 (linux/amd64) kubernetes/abc"),
            &resource,
            None,
            "CreateOptions",
        )
        .expect("valid");
        assert_eq!(from_agent.manager, "kubectl");
        let long = "x".repeat(129);
        let error = Writer::of_request(Some(&long), None, &resource, None, "PatchOptions")
            .expect_err("long");
        assert_eq!(error.code, StatusCode::UNPROCESSABLE_ENTITY);
    }
}
