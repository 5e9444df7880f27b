//! Objects as JSON: decoding request bodies (docs/api-behaviour.md#kind-and-apiversion-in-bodies, #content-types), and the two forms of an object — as
//! stored (no resourceVersion: that is the store's `mod_revision`, docs/store.md#guarantees, guarantee 2) and
//! as answered (resourceVersion set, metadata in the real server's field order).

use axum::http::HeaderMap;
use bytes::Bytes;
use kubemock_storage::{KeyValue, Revision};
use serde_json::{Map, Value};

use crate::codec::{self, Syntax};
use crate::meta;
use crate::registry::Resource;
use crate::status::{ApiError, ApiResult, MAX_BODY_BYTES};

/// A Kubernetes object: a JSON object.
pub(crate) type Object = Map<String, Value>;

/// Decodes a request body as an object of `resource` (JSON or YAML, `codec`), `kind` and
/// `apiVersion` checked when present and filled in when absent.
pub(crate) fn decode_body(
    headers: &HeaderMap,
    body: &[u8],
    resource: &Resource,
) -> ApiResult<Object> {
    let syntax = Syntax::of_body(headers)?;
    if syntax == Syntax::Protobuf && !codec::supports_protobuf(resource) {
        // Custom resources have no protobuf form.
        return Err(ApiError::unsupported_media_type(&[
            "application/json",
            "application/yaml",
        ]));
    }
    let value = syntax.parse(body).map_err(|err| {
        let start = String::from_utf8_lossy(&body[..body.len().min(40)]).into_owned();
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {err} ({start})",
            resource.kind
        ))
    })?;
    typed_object(value, resource)
}

/// `value` as an object of `resource`: a JSON object whose `kind` and `apiVersion`, when
/// present, name the resource's kind; both set on the result (docs/api-behaviour.md#kind-and-apiversion-in-bodies).
pub(crate) fn typed_object(value: Value, resource: &Resource) -> ApiResult<Object> {
    let Value::Object(mut object) = value else {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: expected an object",
            resource.kind
        )));
    };
    let expected_version = resource.group_version();
    match object.get("apiVersion").and_then(Value::as_str) {
        Some(version) if !version.is_empty() && version != expected_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({version}) does not match the expected API version ({expected_version})"
            )));
        }
        _ => {}
    }
    match object.get("kind").and_then(Value::as_str) {
        Some(kind) if !kind.is_empty() && kind != resource.kind => {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{}\" cannot be handled as a {}: the kind does not match the endpoint",
                resource.version, resource.kind
            )));
        }
        _ => {}
    }
    object.shift_remove("kind");
    object.shift_remove("apiVersion");
    Ok(with_type_meta(object, resource))
}

/// `object` with `kind` and `apiVersion` first, as typed objects serialise.
pub(crate) fn with_type_meta(object: Object, resource: &Resource) -> Object {
    let mut out = Map::with_capacity(object.len() + 2);
    out.insert("kind".to_owned(), Value::String(resource.kind.clone()));
    out.insert(
        "apiVersion".to_owned(),
        Value::String(resource.group_version()),
    );
    for (key, value) in object {
        if key != "kind" && key != "apiVersion" {
            out.insert(key, value);
        }
    }
    out
}

/// The object's metadata, created empty if absent or not an object.
pub(crate) fn metadata_mut(object: &mut Object) -> &mut Map<String, Value> {
    child_object(object, "metadata")
}

/// The object at `key` of `map`, created (or replaced, if not an object) empty.
pub(crate) fn child_object<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> &'a mut Map<String, Value> {
    let entry = map
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    match entry {
        Value::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

/// A string field of the object's metadata.
pub(crate) fn meta_str<'a>(object: &'a Object, field: &str) -> Option<&'a str> {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
}

/// The object's name (empty if none).
pub(crate) fn name_of(object: &Object) -> &str {
    meta_str(object, "name").unwrap_or("")
}

/// Sets `metadata.resourceVersion` to `revision`, keeping the canonical field order.
pub(crate) fn set_resource_version(object: &mut Object, revision: Revision) {
    let metadata = metadata_mut(object);
    let value = Value::String(meta::resource_version(revision));
    if let Some(existing) = metadata.get_mut("resourceVersion") {
        *existing = value;
        return;
    }
    // Metadata is kept in canonical order: the resourceVersion goes right after the fields
    // that precede it (on every read, so no full reordering).
    let index = metadata
        .keys()
        .take_while(|key| meta::precedes_resource_version(key))
        .count();
    metadata.shift_insert(index, "resourceVersion".to_owned(), value);
}

/// The stored bytes of an object (never with a resourceVersion).
pub(crate) fn to_stored(object: &Object) -> ApiResult<Bytes> {
    debug_assert!(meta_str(object, "resourceVersion").is_none());
    // kind, apiVersion, metadata first, as Go structs serialise (and as `answer_bytes` needs).
    let in_order = object
        .keys()
        .take(3)
        .eq(["kind", "apiVersion", "metadata"].iter().copied());
    let encoded = if in_order || !object.contains_key("metadata") {
        serde_json::to_vec(object)
    } else {
        let mut ordered = Map::with_capacity(object.len());
        for key in ["kind", "apiVersion", "metadata"] {
            if let Some(value) = object.get(key) {
                ordered.insert(key.to_owned(), value.clone());
            }
        }
        for (key, value) in object {
            if !ordered.contains_key(key) {
                ordered.insert(key.clone(), value.clone());
            }
        }
        serde_json::to_vec(&ordered)
    };
    let encoded = encoded.map_err(ApiError::internal)?;
    // What a patch or a status write makes of an object is bounded like a request body, so
    // one object never grows past what a client could send (etcd refuses 1.5 MiB by default).
    if encoded.len() > MAX_BODY_BYTES {
        return Err(ApiError::too_large());
    }
    Ok(Bytes::from(encoded))
}

/// A stored object as answered, straight from its bytes: the resourceVersion is spliced into
/// its canonical place in `metadata`, without building the object tree (the hot path of GET).
/// `None` when the stored bytes are not in the form `to_stored` writes; callers then parse.
pub(crate) fn answer_bytes(kv: &KeyValue) -> Option<Vec<u8>> {
    let mut out = splice_resource_version(kv, true)?;
    out.push(b'\n');
    Some(out)
}

/// A JSON watch event line (`{"type":KIND,"object":...}` and a newline) of a stored object,
/// straight from its bytes like [`answer_bytes`]: what every watcher of a kind without
/// selectors gets, without building the object tree per watcher and per event. `None` when
/// the bytes are not in `to_stored`'s form.
pub(crate) fn watch_event_bytes(kind: &str, kv: &KeyValue) -> Option<Vec<u8>> {
    let object = splice_resource_version(kv, true)?;
    let mut line = Vec::with_capacity(object.len() + kind.len() + 24);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(&object);
    line.extend_from_slice(b"}\n");
    Some(line)
}

/// A JSON watch event line of a stored object's `PartialObjectMetadata` in
/// `meta.k8s.io/{version}` (what [`crate::partial::object`] makes of the parsed object, and
/// in the same key order), straight from its bytes: the metadata is copied as it is stored,
/// with the resourceVersion spliced in, and the rest of the object is skipped without being
/// built. `None` when the bytes are not in `to_stored`'s form.
pub(crate) fn partial_watch_event_bytes(
    kind: &str,
    kv: &KeyValue,
    version: &str,
) -> Option<Vec<u8>> {
    let (object, start) = splice(kv, true)?;
    let end = object_end(&object, start)?;
    let metadata = &object[start..end];
    let mut line = Vec::with_capacity(metadata.len() + kind.len() + 96);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"");
    line.extend_from_slice(crate::partial::META_GROUP.as_bytes());
    line.push(b'/');
    line.extend_from_slice(version.as_bytes());
    line.extend_from_slice(b"\",\"metadata\":");
    line.extend_from_slice(metadata);
    line.extend_from_slice(b"}}\n");
    Some(line)
}

/// The end (exclusive) of the JSON object that starts at `start` in `bytes`: its matching
/// closing brace, counting braces and brackets outside strings. `None` when `start` is not a
/// `{` or the object does not close.
fn object_end(bytes: &[u8], start: usize) -> Option<usize> {
    if bytes.get(start) != Some(&b'{') {
        return None;
    }
    let mut depth = 0_usize;
    let mut in_string = false;
    let mut at = start;
    while let Some(&byte) = bytes.get(at) {
        if in_string {
            match byte {
                b'\\' => at += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(at + 1);
                    }
                }
                _ => {}
            }
        }
        at += 1;
    }
    None
}

/// A stored object as a built-in list item (docs/api-behaviour.md#list-shape: without kind and apiVersion), straight from
/// its bytes like [`answer_bytes`]; `None` when the bytes are not in `to_stored`'s form.
pub(crate) fn list_item_bytes(kv: &KeyValue) -> Option<Vec<u8>> {
    splice_resource_version(kv, false)
}

/// The stored bytes with the resourceVersion spliced into `metadata`, with or without the
/// leading kind and apiVersion.
fn splice_resource_version(kv: &KeyValue, type_meta: bool) -> Option<Vec<u8>> {
    splice(kv, type_meta).map(|(out, _)| out)
}

/// [`splice_resource_version`], and where the `metadata` object (its `{`) starts in the
/// output.
fn splice(kv: &KeyValue, type_meta: bool) -> Option<(Vec<u8>, usize)> {
    const METADATA_KEY: &[u8] = b"\"metadata\":";
    let bytes = &kv.value[..];
    let mut at = 0;
    let expect = |at: &mut usize, token: &[u8]| -> Option<()> {
        bytes.get(*at..*at + token.len()).filter(|b| *b == token)?;
        *at += token.len();
        Some(())
    };
    // A plain string (no escapes) up to its closing quote.
    let plain = |at: &mut usize| -> Option<()> {
        let end = bytes
            .get(*at..)?
            .iter()
            .position(|b| *b == b'"' || *b == b'\\')?;
        if bytes[*at + end] != b'"' {
            return None;
        }
        *at += end + 1;
        Some(())
    };
    expect(&mut at, b"{\"kind\":\"")?;
    plain(&mut at)?;
    expect(&mut at, b",\"apiVersion\":\"")?;
    plain(&mut at)?;
    let metadata_at = at + 1;
    expect(&mut at, b",\"metadata\":{")?;
    let mut first = true;
    let insert_at = loop {
        match bytes.get(at)? {
            b'}' => break at,
            b'"' => {}
            _ => return None,
        }
        let key_start = at;
        at += 1;
        let key_end = at + bytes.get(at..)?.iter().position(|b| *b == b'"')?;
        let key = std::str::from_utf8(&bytes[at..key_end]).ok()?;
        if key == "resourceVersion" {
            return None;
        }
        if !meta::precedes_resource_version(key) {
            at = key_start;
            break at;
        }
        at = key_end + 1;
        expect(&mut at, b":\"")?;
        // The value: a JSON string, escapes allowed.
        loop {
            match bytes.get(at)? {
                b'\\' => at += 2,
                b'"' => {
                    at += 1;
                    break;
                }
                _ => at += 1,
            }
        }
        first = false;
        match bytes.get(at)? {
            b',' => at += 1,
            b'}' => {}
            _ => return None,
        }
    };
    let closing = bytes.get(insert_at) == Some(&b'}');
    let field = format!(
        "\"resourceVersion\":\"{}\"",
        meta::resource_version(kv.mod_revision)
    );
    let mut out = Vec::with_capacity(bytes.len() + field.len() + 3);
    let metadata_start = if type_meta {
        out.extend_from_slice(&bytes[..insert_at]);
        metadata_at + METADATA_KEY.len()
    } else {
        out.push(b'{');
        out.extend_from_slice(&bytes[metadata_at..insert_at]);
        1 + METADATA_KEY.len()
    };
    if closing && !first {
        out.push(b',');
    }
    out.extend_from_slice(field.as_bytes());
    if !closing {
        out.push(b',');
    }
    out.extend_from_slice(&bytes[insert_at..]);
    Some((out, metadata_start))
}

/// The object of a stored key/value, with its resourceVersion.
pub(crate) fn from_stored(kv: &KeyValue) -> ApiResult<Object> {
    let mut object = parse_stored(&kv.value)?;
    set_resource_version(&mut object, kv.mod_revision);
    Ok(object)
}

/// A stored object as answered at `revision` (a copy with its resourceVersion).
pub(crate) fn answered(stored: &Object, revision: Revision) -> Object {
    let mut object = stored.clone();
    set_resource_version(&mut object, revision);
    object
}

/// The object in stored bytes, as stored (no resourceVersion).
pub(crate) fn parse_stored(bytes: &[u8]) -> ApiResult<Object> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ApiError::internal("stored value is not a JSON object")),
        Err(err) => Err(ApiError::internal(format!(
            "stored value is not JSON: {err}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kv(value: &Value, revision: Revision) -> KeyValue {
        let Value::Object(object) = value else {
            panic!("an object")
        };
        KeyValue {
            key: b"k".to_vec().into(),
            value: to_stored(object).expect("stored"),
            create_revision: 1,
            mod_revision: revision,
            version: 1,
        }
    }

    #[test]
    fn answer_bytes_equal_the_parsed_answer() {
        for value in [
            json!({"kind": "ConfigMap", "apiVersion": "v1",
                   "metadata": {"name": "c", "namespace": "d", "uid": "u\"x", "creationTimestamp": "t"},
                   "data": {"a": "b"}}),
            json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "n"}}),
            json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {}}),
            json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"labels": {"a": "b"}}}),
            // Out of order: stored reordered.
            json!({"kind": "Pod", "spec": {"template": {"metadata": {"name": "x"}}}, "apiVersion": "v1",
                   "metadata": {"name": "p", "generation": 2}}),
            // Braces, brackets, quotes and escapes inside metadata's strings; nested objects.
            json!({"kind": "Pod", "apiVersion": "v1",
                   "metadata": {"name": "q", "annotations": {"a}": "{\"[x]\\", "b": "]}"},
                                "ownerReferences": [{"uid": "u", "kind": "R"}],
                                "finalizers": ["f/}"]},
                   "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}}),
        ] {
            let kv = kv(&value, 42);
            let fast = answer_bytes(&kv).expect("the fast form applies");
            let slow = serde_json::to_vec(&Value::Object(from_stored(&kv).expect("parses")))
                .expect("serialises");
            assert_eq!(
                String::from_utf8_lossy(&fast).trim_end(),
                String::from_utf8_lossy(&slow),
                "{value}"
            );
            // As a watch event: the line the general path writes for the parsed object.
            for kind in ["ADDED", "MODIFIED"] {
                let line = watch_event_bytes(kind, &kv).expect("the fast form applies");
                let general = crate::negotiate::Encoding::Json
                    .watch_event(kind, Value::Object(from_stored(&kv).expect("parses")));
                assert_eq!(
                    String::from_utf8_lossy(&line),
                    String::from_utf8_lossy(&general),
                    "{value}"
                );
            }
            // A metadata watch's line: the general path's PartialObjectMetadata.
            for (kind, version) in [("ADDED", "v1"), ("MODIFIED", "v1beta1")] {
                let line =
                    partial_watch_event_bytes(kind, &kv, version).expect("the fast form applies");
                let general = crate::negotiate::Encoding::Json.watch_event(
                    kind,
                    crate::partial::object(
                        version,
                        &Value::Object(from_stored(&kv).expect("parses")),
                    ),
                );
                assert_eq!(
                    String::from_utf8_lossy(&line),
                    String::from_utf8_lossy(&general),
                    "{value}"
                );
            }
            // As a list item: the same without kind and apiVersion.
            let item = list_item_bytes(&kv).expect("the fast form applies");
            let mut parsed = from_stored(&kv).expect("parses");
            parsed.shift_remove("kind");
            parsed.shift_remove("apiVersion");
            assert_eq!(
                String::from_utf8_lossy(&item),
                String::from_utf8_lossy(&serde_json::to_vec(&parsed).expect("serialises")),
                "{value}"
            );
        }
        // Not the stored form: no fast answer.
        let odd = KeyValue {
            key: b"k".to_vec().into(),
            value: Bytes::from_static(b"{\"metadata\":{}}"),
            create_revision: 1,
            mod_revision: 2,
            version: 1,
        };
        assert!(answer_bytes(&odd).is_none());
        assert!(watch_event_bytes("ADDED", &odd).is_none());
        assert!(partial_watch_event_bytes("ADDED", &odd, "v1").is_none());
        // An object that does not close: no end found.
        assert_eq!(object_end(b"{\"a\":{\"b\":\"}\"}", 0), None);
        assert_eq!(object_end(b"{\"a\":[1,{}]}", 0), Some(12));
        assert_eq!(object_end(b"[]", 0), None);
    }
}
