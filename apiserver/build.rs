//! Turns the bootstrap RBAC policy (`data/bootstrap-rbac-1.32/*.yaml`, upstream's golden
//! files) into one JSON document, `$OUT_DIR/bootstrap-rbac.json`, which `rbac` embeds: the
//! server reads JSON in a fraction of the time YAML would take at every start.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() -> Result<(), String> {
    println!("cargo:rerun-if-changed=build.rs");
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|err| format!("OUT_DIR: {err}"))?);
    bootstrap_rbac_policy(&out_dir)
}

/// The bootstrap RBAC policy's files, by the list they go to.
const RBAC_POLICY: [(&str, &[&str]); 4] = [
    ("clusterRoles", &["cluster-roles", "controller-roles"]),
    (
        "clusterRoleBindings",
        &["cluster-role-bindings", "controller-role-bindings"],
    ),
    ("roles", &["namespace-roles"]),
    ("roleBindings", &["namespace-role-bindings"]),
];
/// Where the policy's files are, under the package.
const RBAC_POLICY_DIR: &str = "data/bootstrap-rbac-1.32";

/// The order of the fields of the RBAC kinds (and of what they hold) in their Go structs, which
/// is the order upstream's JSON lists them in; the golden YAML has them sorted.
const OBJECT_ORDER: [&str; 7] = [
    "kind",
    "apiVersion",
    "metadata",
    "subjects",
    "roleRef",
    "rules",
    "aggregationRule",
];
/// `ObjectMeta`'s fields that the policy uses, in Go's order.
const METADATA_ORDER: [&str; 4] = ["name", "namespace", "labels", "annotations"];
/// `PolicyRule`'s fields, in Go's order.
const RULE_ORDER: [&str; 5] = [
    "verbs",
    "apiGroups",
    "resources",
    "resourceNames",
    "nonResourceURLs",
];
/// `Subject`'s and `RoleRef`'s fields, in Go's order.
const SUBJECT_ORDER: [&str; 4] = ["kind", "apiGroup", "name", "namespace"];
const ROLE_REF_ORDER: [&str; 3] = ["apiGroup", "kind", "name"];
/// `LabelSelector`'s fields, in Go's order.
const SELECTOR_ORDER: [&str; 2] = ["matchLabels", "matchExpressions"];

/// `value`'s fields in `order` (the others after them, as they were), and so on down the
/// RBAC kinds' fields.
fn in_go_order(value: serde_json::Value, order: &[&str]) -> serde_json::Value {
    let serde_json::Value::Object(mut map) = value else {
        return value;
    };
    let mut ordered = serde_json::Map::new();
    for field in order {
        if let Some(value) = map.remove(*field) {
            ordered.insert((*field).to_owned(), value);
        }
    }
    ordered.extend(map);
    for (field, value) in &mut ordered {
        let nested: &[&str] = match field.as_str() {
            "metadata" => &METADATA_ORDER,
            "rules" => &RULE_ORDER,
            "subjects" => &SUBJECT_ORDER,
            "roleRef" => &ROLE_REF_ORDER,
            "clusterRoleSelectors" => &SELECTOR_ORDER,
            "aggregationRule" => &["clusterRoleSelectors"],
            _ => continue,
        };
        *value = match std::mem::take(value) {
            serde_json::Value::Array(items) => serde_json::Value::Array(
                items.into_iter().map(|i| in_go_order(i, nested)).collect(),
            ),
            other => in_go_order(other, nested),
        };
    }
    serde_json::Value::Object(ordered)
}

/// Writes `bootstrap-rbac.json`: `{"clusterRoles": [...], "clusterRoleBindings": [...],
/// "roles": [...], "roleBindings": [...]}`, the items of the policy's `List`s without the
/// `creationTimestamp: null` Go's encoder writes for a zero time.
fn bootstrap_rbac_policy(out_dir: &Path) -> Result<(), String> {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?)
        .join(RBAC_POLICY_DIR);
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut policy = serde_json::Map::new();
    for (list, files) in RBAC_POLICY {
        let mut items = Vec::new();
        for file in files {
            let path = dir.join(format!("{file}.yaml"));
            println!("cargo:rerun-if-changed={}", path.display());
            let text = fs::read_to_string(&path)
                .map_err(|err| format!("reading {}: {err}", path.display()))?;
            let document: serde_json::Value = serde_yaml_ng::from_str(&text)
                .map_err(|err| format!("parsing {}: {err}", path.display()))?;
            let serde_json::Value::Array(list_items) = document["items"].clone() else {
                return Err(format!("{} has no items", path.display()));
            };
            for mut item in list_items {
                if let Some(metadata) = item
                    .get_mut("metadata")
                    .and_then(serde_json::Value::as_object_mut)
                {
                    metadata.remove("creationTimestamp");
                }
                items.push(in_go_order(item, &OBJECT_ORDER));
            }
        }
        policy.insert(list.to_owned(), serde_json::Value::Array(items));
    }
    let json = serde_json::to_string(&policy).map_err(|err| err.to_string())?;
    fs::write(out_dir.join("bootstrap-rbac.json"), json)
        .map_err(|err| format!("writing the RBAC policy: {err}"))
}
