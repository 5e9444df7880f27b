//! What a simulated container sees, for the built-in programs of `exec`: its environment as
//! the kubelet builds it (upstream `pkg/kubelet/kubelet_pods.go` `makeEnvironmentVariables`:
//! `envFrom` first, then `env` with `value`, `configMapKeyRef`, `secretKeyRef` and the simple
//! `fieldRef`s, `$(VAR)` references expanded) and the files it mounts from ConfigMap, Secret,
//! downwardAPI and projected volumes (the kubelet's volume plugins under `pkg/volume/`), read
//! from the store when the session starts.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::Value;

use super::builtins::{Container, normalize};
use crate::object::{self, Object};
use crate::state::AppState;

/// A volume's files: relative path → content.
type Files = BTreeMap<String, Vec<u8>>;

/// The `PATH` of a container whose image sets none (the runtimes' default).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Builds the container `name` of `pod`.
pub(crate) async fn resolve(state: &AppState, pod: &Object, name: &str, tty: bool) -> Container {
    let namespace = object::meta_str(pod, "namespace").unwrap_or("").to_owned();
    let spec = pod.get("spec");
    let container = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|list| spec.and_then(|s| s.get(list)).and_then(Value::as_array))
        .flatten()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
        .cloned()
        .unwrap_or(Value::Null);
    let pod_name = object::name_of(pod).to_owned();
    let hostname = spec
        .and_then(|s| s.get("hostname"))
        .and_then(Value::as_str)
        .unwrap_or(&pod_name)
        .to_owned();
    let mut fetcher = Fetcher {
        state,
        namespace: &namespace,
        cache: BTreeMap::new(),
    };
    let mut env = vec![
        ("PATH".to_owned(), DEFAULT_PATH.to_owned()),
        ("HOSTNAME".to_owned(), hostname.clone()),
    ];
    if tty {
        env.push(("TERM".to_owned(), "xterm".to_owned()));
    }
    for source in array(&container, "envFrom") {
        let prefix = source.get("prefix").and_then(Value::as_str).unwrap_or("");
        for (kind, field) in [("configmaps", "configMapRef"), ("secrets", "secretRef")] {
            let Some(name) = source
                .get(field)
                .and_then(|r| r.get("name"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            for (key, value) in fetcher.data(kind, name).await {
                env.push((format!("{prefix}{key}"), lossy(&value)));
            }
        }
    }
    for var in array(&container, "env") {
        let Some(key) = var.get("name").and_then(Value::as_str) else {
            continue;
        };
        let value = match var.get("value").and_then(Value::as_str) {
            Some(value) => Some(expand(value, &env)),
            None => match var.get("valueFrom") {
                Some(from) => value_from(&mut fetcher, pod, from).await,
                None => Some(String::new()),
            },
        };
        if let Some(value) = value {
            env.retain(|(k, _)| k != key);
            env.push((key.to_owned(), value));
        }
    }
    let mut files = BTreeMap::new();
    let mut dirs = std::collections::BTreeSet::new();
    let volumes: BTreeMap<&str, &Value> = spec
        .and_then(|s| s.get("volumes"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(|n| (n, v)))
        .collect();
    for mount in array(&container, "volumeMounts") {
        let (Some(volume), Some(path)) = (
            mount
                .get("name")
                .and_then(Value::as_str)
                .and_then(|n| volumes.get(n)),
            mount.get("mountPath").and_then(Value::as_str),
        ) else {
            continue;
        };
        let content = volume_files(&mut fetcher, pod, volume).await;
        let path = normalize(path);
        match mount.get("subPath").and_then(Value::as_str) {
            Some(sub) if !sub.is_empty() => {
                if let Some(bytes) = content.get(sub) {
                    files.insert(path, bytes.clone());
                }
            }
            _ => {
                dirs.insert(path.clone());
                for (relative, bytes) in content {
                    let full = normalize(&format!("{path}/{relative}"));
                    let mut parent = full.as_str();
                    while let Some((head, _)) = parent.rsplit_once('/') {
                        if head.len() <= path.len() {
                            break;
                        }
                        dirs.insert(head.to_owned());
                        parent = head;
                    }
                    files.insert(full, bytes);
                }
            }
        }
    }
    Container {
        name: name.to_owned(),
        hostname,
        env,
        files,
        dirs,
        tty,
    }
}

fn array<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `$(VAR)` references to variables defined before (upstream `third_party/forked/golang/expansion`):
/// `$$` is a `$`, an unknown reference stays as written.
fn expand(value: &str, env: &[(String, String)]) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match env.iter().rev().find(|(k, _)| k == name) {
                Some((_, v)) => out.push_str(v),
                None => out.push_str(&format!("$({name})")),
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// An env var's `valueFrom`; `None` when an optional source is missing (the variable is not
/// set, as the kubelet does).
async fn value_from(fetcher: &mut Fetcher<'_>, pod: &Object, from: &Value) -> Option<String> {
    for (kind, field) in [
        ("configmaps", "configMapKeyRef"),
        ("secrets", "secretKeyRef"),
    ] {
        if let Some(selector) = from.get(field) {
            let name = selector.get("name").and_then(Value::as_str).unwrap_or("");
            let key = selector.get("key").and_then(Value::as_str).unwrap_or("");
            return fetcher.data(kind, name).await.get(key).map(|v| lossy(v));
        }
    }
    if let Some(path) = from
        .get("fieldRef")
        .and_then(|f| f.get("fieldPath"))
        .and_then(Value::as_str)
    {
        return Some(field_value(pod, path));
    }
    None
}

/// A downward API field path's value (upstream `pkg/api/v1/pod/util.go` /
/// `pkg/fieldpath/fieldpath.go` `ExtractFieldPathAsString`).
fn field_value(pod: &Object, path: &str) -> String {
    let text = |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or("").to_owned();
    let meta = pod.get("metadata");
    let map_entry = |map: &str, rest: &str| {
        let key = rest
            .strip_prefix("['")
            .and_then(|r| r.strip_suffix("']"))
            .unwrap_or(rest);
        text(meta.and_then(|m| m.get(map)).and_then(|m| m.get(key)))
    };
    if let Some(rest) = path.strip_prefix("metadata.labels") {
        if rest.is_empty() {
            return map_lines(meta.and_then(|m| m.get("labels")));
        }
        return map_entry("labels", rest);
    }
    if let Some(rest) = path.strip_prefix("metadata.annotations") {
        if rest.is_empty() {
            return map_lines(meta.and_then(|m| m.get("annotations")));
        }
        return map_entry("annotations", rest);
    }
    let root = Value::Object(pod.clone());
    let mut value = Some(&root);
    for part in path.split('.') {
        value = value.and_then(|v| v.get(part));
    }
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A label or annotation map as the downward API writes it: `key="value"` lines.
fn map_lines(map: Option<&Value>) -> String {
    map.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            format!(
                "{k}={}\n",
                Value::String(v.as_str().unwrap_or("").to_owned())
            )
        })
        .collect()
}

/// The files of a volume (ConfigMap, Secret, downwardAPI, projected); other volume kinds are
/// empty directories.
async fn volume_files(fetcher: &mut Fetcher<'_>, pod: &Object, volume: &Value) -> Files {
    let mut files = Files::new();
    if let Some(source) = volume.get("configMap") {
        source_files(fetcher, "configmaps", "name", source, &mut files).await;
    }
    if let Some(source) = volume.get("secret") {
        source_files(fetcher, "secrets", "secretName", source, &mut files).await;
    }
    if let Some(source) = volume.get("downwardAPI") {
        downward_files(pod, source, &mut files);
    }
    for source in array(volume.get("projected").unwrap_or(&Value::Null), "sources") {
        if let Some(source) = source.get("configMap") {
            source_files(fetcher, "configmaps", "name", source, &mut files).await;
        }
        if let Some(source) = source.get("secret") {
            source_files(fetcher, "secrets", "name", source, &mut files).await;
        }
        if let Some(source) = source.get("downwardAPI") {
            downward_files(pod, source, &mut files);
        }
        if let Some(token) = source.get("serviceAccountToken") {
            // kubemock issues no token at mount time: the file says so instead of holding
            // something a client would send as a credential.
            let path = token.get("path").and_then(Value::as_str).unwrap_or("token");
            files.insert(
                path.to_owned(),
                b"kubemock: simulated containers get no service account token; ask for one with the TokenRequest API (kubectl create token)\n".to_vec(),
            );
        }
    }
    files
}

/// A ConfigMap's or Secret's keys as files, all or the `items` chosen.
async fn source_files(
    fetcher: &mut Fetcher<'_>,
    kind: &str,
    name_field: &str,
    source: &Value,
    files: &mut Files,
) {
    let name = source.get(name_field).and_then(Value::as_str).unwrap_or("");
    let data = fetcher.data(kind, name).await;
    match source.get("items").and_then(Value::as_array) {
        Some(items) => {
            for item in items {
                let (Some(key), Some(path)) = (
                    item.get("key").and_then(Value::as_str),
                    item.get("path").and_then(Value::as_str),
                ) else {
                    continue;
                };
                if let Some(bytes) = data.get(key) {
                    files.insert(path.to_owned(), bytes.clone());
                }
            }
        }
        None => files.extend(data),
    }
}

fn downward_files(pod: &Object, source: &Value, files: &mut Files) {
    for item in array(source, "items") {
        let (Some(path), Some(field)) = (
            item.get("path").and_then(Value::as_str),
            item.get("fieldRef")
                .and_then(|f| f.get("fieldPath"))
                .and_then(Value::as_str),
        ) else {
            continue;
        };
        files.insert(path.to_owned(), field_value(pod, field).into_bytes());
    }
}

/// Reads ConfigMaps and Secrets of the pod's namespace, once each.
struct Fetcher<'a> {
    state: &'a AppState,
    namespace: &'a str,
    cache: BTreeMap<(String, String), Files>,
}

impl Fetcher<'_> {
    /// The data of ConfigMap or Secret `name` (`kind` is the plural), decoded; empty when
    /// it does not exist.
    async fn data(&mut self, kind: &str, name: &str) -> Files {
        let id = (kind.to_owned(), name.to_owned());
        if let Some(found) = self.cache.get(&id) {
            return found.clone();
        }
        let mut files = Files::new();
        if let Some(resource) = self.state.registry().lookup("", "v1", kind) {
            let key = crate::keys::object_key(&resource, Some(self.namespace), name);
            if let Ok(Some(kv)) = self.state.fetch(&key).await
                && let Ok(object) = object::from_stored(&kv)
            {
                let strings = object.get("data").and_then(Value::as_object);
                let binary = object.get("binaryData").and_then(Value::as_object);
                for (key, value) in strings.into_iter().flatten() {
                    let text = value.as_str().unwrap_or("");
                    let bytes = if kind == "secrets" {
                        base64::engine::general_purpose::STANDARD
                            .decode(text)
                            .unwrap_or_default()
                    } else {
                        text.as_bytes().to_vec()
                    };
                    files.insert(key.clone(), bytes);
                }
                for (key, value) in binary.into_iter().flatten() {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(value.as_str().unwrap_or(""))
                        .unwrap_or_default();
                    files.insert(key.clone(), bytes);
                }
            }
        }
        self.cache.insert(id, files.clone());
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependent_variables_expand_as_the_kubelet_does() {
        let env = vec![("A".to_owned(), "x".to_owned())];
        assert_eq!(expand("$(A)-$(B)-$$(A)-$", &env), "x-$(B)-$(A)-$");
    }

    #[test]
    fn field_paths() {
        let pod = serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1"},
            "status": {"podIP": "10.0.0.5"}
        });
        let pod = pod.as_object().cloned().unwrap_or_default();
        assert_eq!(field_value(&pod, "metadata.name"), "p");
        assert_eq!(field_value(&pod, "metadata.namespace"), "ns");
        assert_eq!(field_value(&pod, "spec.nodeName"), "node-1");
        assert_eq!(field_value(&pod, "status.podIP"), "10.0.0.5");
        assert_eq!(field_value(&pod, "metadata.labels['app']"), "web");
        assert_eq!(field_value(&pod, "metadata.labels"), "app=\"web\"\n");
    }
}
