//! The properties the fuzz targets check, one function per target (`fuzz_targets/` only calls
//! them), kept in a library so that `cargo test` runs the very same checks over the seed
//! inputs on stable Rust without libFuzzer (`ci.sh`'s fallback, and a quick check of the
//! seeds themselves).
//!
//! Each target asserts properties, not just the absence of panics: a selector prints to text
//! that parses back to it; a patch that succeeds is an object of the resource's kind; a JSON
//! patch's result stays within the upstream copy limit's bound; merge and strategic merge
//! patches are idempotent, and agree where strategic merge has nothing strategic to do; a
//! server-side apply repeated changes nothing and never conflicts when forced; a protobuf body
//! that decodes re-encodes to bytes that decode to the same object; a decoded body survives
//! the stored form unchanged; every refusal is a client error (4xx), never a 500.
//!
//! Inputs are bytes: a header of one or two bytes, then parts separated by [`SEPARATOR`]. The
//! first header byte chooses the resource (`resources.txt`, by index modulo its length), the
//! second the options. `seed.py` writes seeds in this form.

use std::sync::{Arc, LazyLock};

use kubemock_apiserver::fuzzing::{self, FieldSelector, LabelSelector, Object};
use kubemock_apiserver::{ApiError, Registry, Resource, protobuf};
use serde_json::Value;

/// Separates the parts of an input: a byte that UTF-8 text (a selector, a JSON or YAML
/// document) never holds.
pub const SEPARATOR: u8 = 0xFF;

/// Upstream's bound on the bytes all the `copy` operations of one JSON patch may copy
/// (`JSONPatchMaxCopyBytes`, 3 MiB: kubernetes/apiserver `pkg/server/config.go`).
pub const JSON_PATCH_MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// The `fieldValidation` values an input's option byte chooses among.
const FIELD_VALIDATION: [&str; 3] = ["Warn", "Strict", "Ignore"];

/// The body media types the decode target's option byte chooses among.
const BODY_TYPES: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// The resources of `resources.txt`, looked up in the built-in registry.
static RESOURCES: LazyLock<Vec<Arc<Resource>>> = LazyLock::new(|| {
    let registry = Registry::builtin();
    include_str!("../resources.txt")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let [group, version, plural, kind] = words[..] else {
                panic!("resources.txt: {line:?} is not `group version plural kind`");
            };
            let group = if group == "core" { "" } else { group };
            let resource = registry
                .lookup(group, version, plural)
                .unwrap_or_else(|| panic!("resources.txt: {line:?} is not a built-in resource"));
            assert_eq!(resource.kind, kind, "resources.txt: {line:?}");
            resource
        })
        .collect()
});

/// The resource an input's first byte chooses.
fn resource(byte: u8) -> &'static Arc<Resource> {
    &RESOURCES[usize::from(byte) % RESOURCES.len()]
}

/// `data` as its header bytes and the rest; `None` when too short.
fn header<const N: usize>(data: &[u8]) -> Option<([u8; N], &[u8])> {
    let (head, rest) = data.split_first_chunk::<N>()?;
    Some((*head, rest))
}

/// The first `N` parts of `rest` (missing ones empty; the last takes the remainder).
fn parts<const N: usize>(rest: &[u8]) -> [&[u8]; N] {
    let mut out = [&[][..]; N];
    for (slot, part) in out.iter_mut().zip(rest.splitn(N, |b| *b == SEPARATOR)) {
        *slot = part;
    }
    out
}

/// A refusal must be a client error: bad input is the client's fault, and a 5xx here is a
/// server bug (an internal invariant broken by input).
fn assert_client_error(what: &str, err: &ApiError) {
    assert!(
        err.code.is_client_error(),
        "{what}: a {} ({}): {}",
        err.code,
        err.reason,
        err.message
    );
}

/// A successful write's object is an object of `resource`'s kind and version.
fn assert_typed(what: &str, object: &Object, resource: &Resource) {
    assert_eq!(
        object.get("kind").and_then(Value::as_str),
        Some(resource.kind.as_str()),
        "{what}: kind"
    );
    assert_eq!(
        object.get("apiVersion").and_then(Value::as_str),
        Some(resource.group_version().as_str()),
        "{what}: apiVersion"
    );
}

/// Where two JSON values first differ: a JSON pointer and the two values there, short enough
/// for a failure message (the values themselves may be whole objects).
fn difference(left: &Value, right: &Value) -> String {
    fn walk(path: &mut String, left: &Value, right: &Value) -> Option<String> {
        match (left, right) {
            (Value::Object(l), Value::Object(r)) => {
                for key in l.keys().chain(r.keys()) {
                    let len = path.len();
                    path.push('/');
                    path.push_str(key);
                    let found = match (l.get(key), r.get(key)) {
                        (Some(a), Some(b)) => walk(path, a, b),
                        (a, b) => Some(format!("{path}: {a:?} != {b:?}")),
                    };
                    if found.is_some() {
                        return found;
                    }
                    path.truncate(len);
                }
                None
            }
            (Value::Array(l), Value::Array(r)) if l.len() == r.len() => {
                for (i, (a, b)) in l.iter().zip(r).enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{i}"));
                    if let Some(found) = walk(path, a, b) {
                        return Some(found);
                    }
                    path.truncate(len);
                }
                None
            }
            (l, r) if l == r => None,
            (l, r) => {
                let short = |v: &Value| v.to_string().chars().take(300).collect::<String>();
                Some(format!("{path}: {} != {}", short(l), short(r)))
            }
        }
    }
    walk(&mut String::new(), left, right).unwrap_or_else(|| "no difference".to_owned())
}

/// Asserts that two objects are equal, showing where they differ.
fn assert_same(what: &str, left: &Object, right: &Object) {
    if left != right {
        let (l, r) = (Value::Object(left.clone()), Value::Object(right.clone()));
        panic!("{what}: {}", difference(&l, &r));
    }
}

/// Selectors. Input: `[resource] label-selector 0xFF field-selector 0xFF object-JSON`.
///
/// A label selector that parses prints (apimachinery's `String()`) as text that parses to the
/// same selector and prints the same. Matching never panics, whatever the object. A field
/// selector that is exactly `metadata.name=<n>` matches an object exactly when its name is
/// `<n>` (a missing name reads as empty).
pub fn selector(data: &[u8]) {
    let Some(([kind], rest)) = header::<1>(data) else {
        return;
    };
    let [label, field, object] = parts::<3>(rest);
    let object: Value = serde_json::from_slice(object).unwrap_or(Value::Null);
    if let Ok(text) = std::str::from_utf8(label)
        && let Ok(selector) = LabelSelector::parse(text)
    {
        let printed = selector.to_string();
        let reparsed = LabelSelector::parse(&printed).unwrap_or_else(|err| {
            panic!(
                "{printed:?}, printed from {text:?}, does not parse: {}",
                err.message
            )
        });
        assert_eq!(reparsed, selector, "{text:?} printed as {printed:?}");
        assert_eq!(reparsed.to_string(), printed, "{text:?}");
        selector.matches(&object);
    }
    if let Ok(text) = std::str::from_utf8(field)
        && let Ok(selector) = FieldSelector::parse(text, resource(kind))
    {
        let matched = selector.matches(&object);
        // A selector that requires a name matches only objects of that name.
        if let Some(name) = selector.exact_name()
            && matched
        {
            let actual = match object.pointer("/metadata/name") {
                None | Some(Value::Null) => Some(""),
                Some(Value::String(actual)) => Some(actual.as_str()),
                Some(_) => None,
            };
            if let Some(actual) = actual {
                assert_eq!(actual, name, "{text:?} matched a name {actual:?}");
            }
        }
    }
}

/// A patch input: `[resource, options] current-object-JSON 0xFF patch`. `None` when the
/// current object is not a JSON object (a stored object always is).
struct PatchInput<'a> {
    resource: &'static Arc<Resource>,
    field_validation: &'static str,
    current: Object,
    patch: &'a [u8],
}

impl<'a> PatchInput<'a> {
    fn parse(data: &'a [u8]) -> Option<PatchInput<'a>> {
        let ([kind, options], rest) = header::<2>(data)?;
        let [current, patch] = parts::<2>(rest);
        let Ok(Value::Object(current)) = serde_json::from_slice(current) else {
            return None;
        };
        Some(PatchInput {
            resource: resource(kind),
            field_validation: FIELD_VALIDATION[usize::from(options) % FIELD_VALIDATION.len()],
            current,
            patch,
        })
    }

    /// The patch of `content_type` applied to `current`, as PATCH applies it.
    fn apply(&self, content_type: &str, current: Object) -> Result<Object, ApiError> {
        fuzzing::patch(
            self.resource,
            content_type,
            self.patch,
            current,
            self.field_validation,
        )
    }
}

/// JSON patch (RFC 6902). Input: as [`PatchInput`].
///
/// A result is an object of the kind, and no larger than twice the input plus what the
/// upstream copy limit lets `copy` operations add: without that limit a few dozen `copy`
/// operations double an object each.
pub fn json_patch(data: &[u8]) {
    let Some(input) = PatchInput::parse(data) else {
        return;
    };
    match input.apply(JSON_PATCH, input.current.clone()) {
        Ok(patched) => {
            assert_typed("JSON patch", &patched, input.resource);
            let size = serde_json::to_vec(&patched).map_or(0, |bytes| bytes.len());
            let bound = 2 * data.len() + JSON_PATCH_MAX_COPY_BYTES + 4096;
            assert!(
                size <= bound,
                "a JSON patch of {} bytes made a {size}-byte object (bound {bound})",
                input.patch.len()
            );
        }
        Err(err) => assert_client_error("JSON patch", &err),
    }
}

/// JSON merge patch (RFC 7386). Input: as [`PatchInput`].
///
/// A result is an object of the kind, and applying the same patch to it changes nothing (a
/// merge patch is idempotent).
pub fn merge_patch(data: &[u8]) {
    let Some(input) = PatchInput::parse(data) else {
        return;
    };
    match input.apply(MERGE_PATCH, input.current.clone()) {
        Ok(once) => {
            assert_typed("merge patch", &once, input.resource);
            match input.apply(MERGE_PATCH, once.clone()) {
                Ok(twice) => assert_same("a merge patch applied twice", &twice, &once),
                Err(err) => panic!("a merge patch applies once, not twice: {}", err.message),
            }
        }
        Err(err) => assert_client_error("merge patch", &err),
    }
}

/// Whether a patch has nothing for strategic merge to do differently from a JSON merge
/// patch: no lists and no `$` directives anywhere.
fn plain(value: &Value) -> bool {
    match value {
        Value::Array(_) => false,
        Value::Object(map) => map.iter().all(|(k, v)| !k.starts_with('$') && plain(v)),
        _ => true,
    }
}

/// Whether a patch holds a `$patch` or `$deleteFromPrimitiveList/` directive anywhere.
///
/// Upstream takes such a directive inside content the original lacks over as it is (its
/// typed decoding then drops the directive's key, so `{"name": "A", "$patch": "delete"}` in a
/// new container's `env` adds `{"name": "A"}`); a second application then carries it out.
/// kubemock does the same, so these patches are not idempotent, upstream's either.
fn deletes(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(deletes),
        Value::Object(map) => map.iter().any(|(key, value)| {
            key == "$patch" || key.starts_with("$deleteFromPrimitiveList/") || deletes(value)
        }),
        _ => false,
    }
}

/// Strategic merge patch. Input: as [`PatchInput`].
///
/// A result is an object of the kind; applying the same patch again changes nothing (unless
/// it deletes: [`deletes`]; or fails, on a list element without its merge key that the first
/// application took over whole); and a patch without lists or directives gives what the same
/// JSON merge patch gives, when both apply.
pub fn strategic_patch(data: &[u8]) {
    let Some(input) = PatchInput::parse(data) else {
        return;
    };
    let patch = serde_json::from_slice::<Value>(input.patch).ok();
    let result = input.apply(STRATEGIC_MERGE_PATCH, input.current.clone());
    match &result {
        Ok(once) => {
            assert_typed("strategic merge patch", once, input.resource);
            if patch.as_ref().is_none_or(deletes) {
                return;
            }
            match input.apply(STRATEGIC_MERGE_PATCH, once.clone()) {
                Ok(twice) => assert_same("a strategic merge patch applied twice", &twice, once),
                // A list the object lacks is taken over whole, elements without the merge
                // key included (upstream's `mergeMap` too); merging into it then refuses them.
                Err(err) if err.message.contains("does not contain declared merge key") => {}
                Err(err) => panic!(
                    "a strategic merge patch applies once, not twice: {}",
                    err.message
                ),
            }
        }
        Err(err) => assert_client_error("strategic merge patch", err),
    }
    let is_plain = patch.as_ref().is_some_and(plain);
    if let (true, Ok(strategic)) = (is_plain, &result)
        && let Ok(merged) = input.apply(MERGE_PATCH, input.current.clone())
    {
        assert_same(
            "a strategic merge patch without lists or directives, and the same merge patch",
            strategic,
            &merged,
        );
    }
}

/// Server-side apply. Input: `[resource, options] config-A 0xFF config-B` (YAML or JSON).
///
/// Manager A creates the object from its configuration; manager B then applies its own
/// (forced when the option byte is odd). Each apply, repeated on its result, changes nothing
/// (managedFields included); a forced apply never conflicts; refusals are client errors.
pub fn apply(data: &[u8]) {
    let Some(([kind, options], rest)) = header::<2>(data) else {
        return;
    };
    let resource = resource(kind);
    let force = options % 2 == 1;
    let [config_a, config_b] = parts::<2>(rest);
    let live = match fuzzing::apply(resource, "fuzz-a", None, config_a, false) {
        Ok(live) => live,
        Err(err) => return assert_client_error("apply (create)", &err),
    };
    assert_typed("apply (create)", &live, resource);
    match fuzzing::apply(resource, "fuzz-a", Some(&live), config_a, false) {
        Ok(again) => assert_same("the creating configuration applied again", &again, &live),
        Err(err) => panic!("the creating configuration, applied again: {}", err.message),
    }
    let applied = match fuzzing::apply(resource, "fuzz-b", Some(&live), config_b, force) {
        Ok(applied) => applied,
        Err(err) => {
            assert_client_error("apply", &err);
            assert!(
                !(force && err.code.as_u16() == 409),
                "a forced apply conflicts: {}",
                err.message
            );
            return;
        }
    };
    assert_typed("apply", &applied, resource);
    match fuzzing::apply(resource, "fuzz-b", Some(&applied), config_b, force) {
        Ok(again) => assert_same("a configuration applied twice", &again, &applied),
        Err(err) => panic!("a configuration applies once, not twice: {}", err.message),
    }
}

/// `value` without the members whose value is an empty object (recursively): an empty
/// embedded message reads the same as a missing one in Go, and the encoder writes some that
/// the body did not have (a Status's `metadata`), so a first decode and a decode of its
/// encoding may differ in these alone.
fn without_empty_maps(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), without_empty_maps(value)))
                .filter(|(_, value)| value.as_object().is_none_or(|map| !map.is_empty()))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_empty_maps).collect()),
        other => other.clone(),
    }
}

/// The protobuf wire format. Input: a body (`k8s\0` envelope), also read as a watch frame.
///
/// A body that decodes encodes, and the encoding decodes to the same object (but for empty
/// messages: [`without_empty_maps`]) and re-encodes to the same bytes. A watch event that decodes (with an object) re-encodes to a frame that
/// decodes to the same event.
pub fn protobuf(data: &[u8]) {
    if let Ok(object) = protobuf::decode(data) {
        let encoded = protobuf::encode(&object)
            .unwrap_or_else(|err| panic!("a decoded object does not encode: {err}"));
        let decoded = protobuf::decode(&encoded)
            .unwrap_or_else(|err| panic!("an encoded object does not decode: {err}"));
        let (once, twice) = (without_empty_maps(&object), without_empty_maps(&decoded));
        assert!(
            twice == once,
            "decoded, encoded and decoded again: {}",
            difference(&twice, &once)
        );
        let reencoded = protobuf::encode(&decoded)
            .unwrap_or_else(|err| panic!("a decoded object does not encode: {err}"));
        assert!(
            reencoded == encoded,
            "encoded, decoded and encoded again: the bytes differ"
        );
    }
    if let Ok(event) = protobuf::decode_watch_event(data)
        && let (Some(event_type), Some(object)) = (
            event.get("type").and_then(Value::as_str),
            event.get("object").filter(|object| !object.is_null()),
        )
    {
        let frame = protobuf::encode_watch_event(event_type, object)
            .unwrap_or_else(|err| panic!("a decoded watch event does not encode: {err}"));
        let decoded = protobuf::decode_watch_event(frame.get(4..).unwrap_or_default())
            .unwrap_or_else(|err| panic!("an encoded watch event does not decode: {err}"));
        assert!(
            decoded == event,
            "a watch event decoded, encoded and decoded again: {}",
            difference(&decoded, &event)
        );
    }
}

/// Create and update bodies. Input: `[resource, options] body`; the options choose the media
/// type (JSON, YAML, protobuf) and `fieldValidation`.
///
/// A body decodes to an object of the kind, or is refused with a client error; the object
/// (without a resourceVersion, as the store keeps it) comes back from its stored bytes
/// unchanged (events.k8s.io Events, stored converted to core Events, only without panics;
/// autoscaling/v1 HPAs, stored as v2, unchanged from their second round trip on).
/// Time per input is bounded by the fuzzer's `-timeout`; a stack overflow is a crash.
pub fn decode(data: &[u8]) {
    let Some(([kind, options], body)) = header::<2>(data) else {
        return;
    };
    let resource = resource(kind);
    let options = usize::from(options);
    let content_type = BODY_TYPES[options % BODY_TYPES.len()];
    let field_validation = FIELD_VALIDATION[options / BODY_TYPES.len() % FIELD_VALIDATION.len()];
    let mut object = match fuzzing::decode_body(resource, content_type, body, field_validation) {
        Ok((object, _warnings)) => object,
        Err(err) => return assert_client_error("decoding a body", &err),
    };
    assert_typed("decoding a body", &object, resource);
    if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
        metadata.shift_remove("resourceVersion");
    }
    let stored = fuzzing::to_stored(resource, &object)
        .unwrap_or_else(|err| panic!("a decoded object is not stored: {}", err.message));
    let loaded = fuzzing::from_stored(resource, &stored)
        .unwrap_or_else(|err| panic!("a stored object does not load: {}", err.message));
    if resource.group == "autoscaling" && resource.version == "v1" {
        // Stored as autoscaling/v2: the first round trip normalizes (the default CPU target,
        // the round-trip annotations), a second changes nothing.
        let again = fuzzing::to_stored(resource, &loaded)
            .and_then(|stored| fuzzing::from_stored(resource, &stored))
            .unwrap_or_else(|err| panic!("a loaded HPA does not round-trip: {}", err.message));
        assert_same("a v1 HPA stored and loaded twice", &again, &loaded);
    } else if resource.group != "events.k8s.io" {
        assert_same("an object stored and loaded", &loaded, &object);
    }
}

#[cfg(test)]
mod tests {
    //! Each target's function over its checked-in seeds (`seeds/<target>/`), and over the
    //! run-time corpus (`corpus/<target>/`, from `seed.py` or a fuzzing run) when there is one.

    use std::path::Path;

    /// Runs `check` on every file of `seeds/<target>` and `corpus/<target>`; the number run.
    fn over_inputs(target: &str, check: fn(&[u8])) -> usize {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut count = 0;
        for dir in ["seeds", "corpus"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
                continue;
            };
            let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            paths.sort();
            for path in paths {
                let data = std::fs::read(&path).expect("a readable input");
                let result = std::panic::catch_unwind(|| check(&data));
                assert!(result.is_ok(), "{target} fails on {}", path.display());
                count += 1;
            }
        }
        count
    }

    macro_rules! seed_test {
        ($name:ident) => {
            #[test]
            fn $name() {
                let count = over_inputs(stringify!($name), super::$name);
                assert!(count > 0, "no seeds for {}", stringify!($name));
            }
        };
    }

    seed_test!(selector);
    seed_test!(json_patch);
    seed_test!(merge_patch);
    seed_test!(strategic_patch);
    seed_test!(apply);
    seed_test!(protobuf);
    seed_test!(decode);
}
