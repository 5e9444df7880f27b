//! Gathers the Kubernetes 1.32 protobuf schemas (`generated.proto` of every API group and of
//! apimachinery) for the protobuf codec, from the `k8s-rs-pb` crate that carries them: a
//! registry dependency, so a build needs nothing outside cargo. Comments are stripped and the
//! files concatenated into `$OUT_DIR/k8s-protos.txt`, which `codec::protobuf` embeds and
//! parses at run time. (Only the `.proto` sources are used; `k8s-rs-pb` is a build dependency
//! without features, so none of its generated code is compiled.)
//!
//! Also turns the bootstrap RBAC policy (`data/bootstrap-rbac-1.32/*.yaml`, upstream's golden
//! files) into one JSON document, `$OUT_DIR/bootstrap-rbac.json`, which `rbac` embeds: the
//! server reads JSON in a fraction of the time YAML would take at every start.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/codec/proto_comments.rs"]
mod proto_comments;
use proto_comments::strip_comments;

/// The schema crate and the Kubernetes version whose schemas are used.
const SCHEMA_CRATE: &str = "k8s-rs-pb";
const SCHEMA_VERSION_DIR: &str = "src/v1_32";

fn main() -> Result<(), String> {
    println!("cargo:rerun-if-changed=build.rs");
    let root = schema_crate_dir()
        .map_err(|err| format!("cannot find the {SCHEMA_CRATE} sources: {err}"))?
        .join(SCHEMA_VERSION_DIR);
    let mut files = Vec::new();
    collect_protos(&root, &mut files);
    files.sort();
    if files.len() < 50 {
        return Err(format!(
            "expected the Kubernetes .proto files under {}, found {}",
            root.display(),
            files.len()
        ));
    }
    let mut out = String::new();
    for file in &files {
        let text =
            fs::read_to_string(file).map_err(|err| format!("reading {}: {err}", file.display()))?;
        out.push_str(&strip_comments(&text));
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|err| format!("OUT_DIR: {err}"))?);
    fs::write(out_dir.join("k8s-protos.txt"), out)
        .map_err(|err| format!("writing the schemas: {err}"))?;
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

/// The directory of the schema crate's package: asked of `cargo metadata` (offline first,
/// as the build has already fetched every dependency), then looked up in the registry cache.
fn schema_crate_dir() -> Result<PathBuf, String> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?)
        .join("Cargo.toml");
    let target = env::var("TARGET").map_err(|e| e.to_string())?;
    let mut errors = Vec::new();
    for offline in [true, false] {
        let mut command = Command::new(&cargo);
        command
            .args(["metadata", "--format-version", "1", "--filter-platform"])
            .arg(&target)
            .arg("--manifest-path")
            .arg(&manifest);
        if offline {
            command.arg("--offline");
        }
        match command.output() {
            Ok(output) if output.status.success() => {
                let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
                    .map_err(|e| format!("cargo metadata: {e}"))?;
                let found = metadata["packages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|p| p["name"] == SCHEMA_CRATE)
                    .and_then(|p| p["manifest_path"].as_str())
                    .and_then(|path| Path::new(path).parent().map(Path::to_path_buf));
                match found {
                    Some(dir) => return Ok(dir),
                    None => errors.push(format!("cargo metadata does not list {SCHEMA_CRATE}")),
                }
            }
            Ok(output) => errors.push(String::from_utf8_lossy(&output.stderr).into_owned()),
            Err(err) => errors.push(err.to_string()),
        }
    }
    Err(errors.join("; "))
}

fn collect_protos(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_protos(&path, into);
        } else if path.extension().is_some_and(|e| e == "proto") {
            into.push(path);
        }
    }
}
