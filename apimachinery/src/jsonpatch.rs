//! JSON patch (RFC 6902) as the real server applies it (docs/api-behaviour.md#json-patch): upstream uses
//! `gopkg.in/evanphx/json-patch.v4` (v4.12.0), whose behaviour clients depend on where it
//! differs from the RFC, so this follows that library rather than the RFC:
//! - a path's first segment is not checked (`a/b` means `/b`), `~1` and `~0` are unescaped, and
//!   `""` (the whole document) only works for `replace` and `test`;
//! - array indexes are read as Go's `strconv.Atoi` reads them (`+1`, `01`), negative ones count
//!   from the end, `-` appends for `add`;
//! - `replace` of a missing object member adds it; `replace` of the whole document with a
//!   scalar does nothing; `copy` from a missing object member writes `null`;
//! - `test` of a missing member or of a `null` succeeds when the value is `null`; values are
//!   compared structurally, numbers by their JSON form (`1` is not `1.0`);
//! - an unknown `op` fails the patch; a `null` patch changes nothing.
//!
//! Limits, as upstream's (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`,
//! `pkg/server/config.go`): at most [`MAX_OPERATIONS`] operations (413), and `copy` operations
//! may add at most [`MAX_COPY_BYTES`] in all (the library's `AccumulatedCopySizeLimit`), so a
//! small patch cannot grow an object exponentially. kubemock adds one: no operation may nest
//! the document deeper than [`MAX_DEPTH`], checked before the value is copied
//! or inserted, so a patch cannot build what the server could not read back.

use std::io::Write;

use serde_json::{Map, Value};

use crate::json::{MAX_DEPTH, deeper_than, json_kind, too_deep, too_deep_message};

/// The most operations a JSON patch may have (upstream's `maxJSONPatchOperations`).
pub const MAX_OPERATIONS: usize = 10_000;

/// The most bytes `copy` operations may add to a document in one patch (upstream's
/// `JSONPatchMaxCopyBytes`, 3 MiB).
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// A decoded patch: its operations, each a JSON object (or `null`, which fails as an unknown
/// operation when applied, as upstream's does).
#[derive(Debug, Clone, PartialEq)]
pub struct Patch(Vec<Option<Map<String, Value>>>);

/// Why a patch could not be applied. Upstream answers every one of these with the same 422
/// and discards the text; it is kept for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyError(pub String);

impl Patch {
    /// Decodes a patch body as upstream's `jsonpatch.DecodePatch` (`json.Unmarshal` into a list
    /// of objects) does: the error is Go's decoder's message (a 400).
    pub fn decode(body: &[u8]) -> Result<Patch, String> {
        let value: Value = serde_json::from_slice(body).map_err(|err| err.to_string())?;
        let operations = match value {
            Value::Null => Vec::new(),
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::Object(map) => Ok(Some(map)),
                    Value::Null => Ok(None),
                    other => Err(format!(
                        "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                        json_kind(&other)
                    )),
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                    json_kind(&other)
                ));
            }
        };
        Ok(Patch(operations))
    }

    /// How many operations the patch has.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the patch has no operations (`[]` or `null`: it changes nothing).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks the operations as upstream's strict decoding into `[]jsonPatchOp` does under
    /// `fieldValidation=Warn` or `Strict`: `op`, `path` and `from` must be strings (else the
    /// 400 message is returned), and other members are unknown fields (returned as the
    /// messages to warn or refuse with).
    pub fn strict_fields(&self) -> Result<Vec<String>, String> {
        let mut unknown = Vec::new();
        for (index, operation) in self.0.iter().enumerate() {
            let Some(operation) = operation else { continue };
            for (key, value) in operation {
                match key.as_str() {
                    "op" | "path" | "from" if !value.is_string() && !value.is_null() => {
                        return Err(format!(
                            "json: cannot unmarshal {} into Go struct field jsonPatchOp.{key} of type string",
                            json_kind(value)
                        ));
                    }
                    "op" | "path" | "from" | "value" => {}
                    other => {
                        unknown.push(format!("json patch unknown field \"[{index}].{other}\""))
                    }
                }
            }
        }
        Ok(unknown)
    }

    /// Applies the patch to `doc`, an object or an array. On error `doc` may be partly
    /// patched; callers discard it.
    pub fn apply(&self, doc: &mut Value) -> Result<(), ApplyError> {
        self.apply_with_copy_limit(doc, MAX_COPY_BYTES)
    }

    /// [`Patch::apply`] with another limit on the bytes `copy` may add (the library's
    /// `AccumulatedCopySizeLimit`, which its own tests set to 100).
    pub fn apply_with_copy_limit(
        &self,
        doc: &mut Value,
        copy_limit: usize,
    ) -> Result<(), ApplyError> {
        let mut copied = 0_usize;
        for operation in &self.0 {
            let empty = Map::new();
            let operation = operation.as_ref().unwrap_or(&empty);
            let kind = operation
                .get("op")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            match kind {
                "add" => add(doc, operation)?,
                "remove" => remove(doc, operation)?,
                "replace" => replace(doc, operation)?,
                "move" => move_value(doc, operation)?,
                "test" => test(doc, operation)?,
                "copy" => copy(doc, operation, &mut copied, copy_limit)?,
                other => return Err(ApplyError(format!("Unexpected kind: {other}"))),
            }
        }
        Ok(())
    }
}

/// A string member of an operation (`path`, `from`).
fn member<'a>(operation: &'a Map<String, Value>, name: &str) -> Result<&'a str, ApplyError> {
    match operation.get(name) {
        Some(Value::String(text)) => Ok(text),
        Some(Value::Null) | None => Err(ApplyError(format!("operation missing {name} field"))),
        Some(_) => Err(ApplyError(format!("operation {name} is not a string"))),
    }
}

/// The operation's `value`: `None` when absent (JSON `null` is a value).
fn value_of(operation: &Map<String, Value>) -> Option<&Value> {
    operation.get("value")
}

/// The container `path` points into and the last segment, unescaped (the library's
/// `findObject`), with the depth of that container below the document.
fn find<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String, usize)> {
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() < 2 {
        return None;
    }
    let mut current = doc;
    for part in &segments[1..segments.len() - 1] {
        let key = unescape(part);
        let next = match current {
            Value::Object(map) => map.get_mut(&key)?,
            Value::Array(items) => {
                let index = index_in(atoi(&key)?, items.len())?;
                items.get_mut(index)?
            }
            _ => return None,
        };
        if !next.is_object() && !next.is_array() {
            return None;
        }
        current = next;
    }
    let last = unescape(segments[segments.len() - 1]);
    Some((current, last, segments.len() - 2))
}

/// RFC 6901 unescaping, as the library does it (`~1` first).
fn unescape(segment: &str) -> String {
    if segment.contains('~') {
        segment.replace("~1", "/").replace("~0", "~")
    } else {
        segment.to_owned()
    }
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits within 64 bits.
fn atoi(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.trim_start_matches('+').parse().ok()
}

/// Index `index` of a list of `len` items, a negative one counted back from the end, as the
/// library resolves indexes (an `add` passes one more than the list's length); `None` when out
/// of range.
fn index_in(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let index = if index < 0 { index + len } else { index };
    if (0..len).contains(&index) {
        usize::try_from(index).ok()
    } else {
        None
    }
}

/// The item `key` names in a list of `len` items.
fn item_index(key: &str, len: usize) -> Result<usize, ApplyError> {
    atoi(key)
        .and_then(|index| index_in(index, len))
        .ok_or_else(|| ApplyError(format!("Unable to access invalid index: {key}")))
}

/// The member or item `key` of `container`, `Ok(None)` for a missing object member (or a
/// `null` one: the library cannot tell them apart), `Err` for a bad array index.
fn get<'a>(container: &'a Value, key: &str) -> Result<Option<&'a Value>, ApplyError> {
    match container {
        Value::Object(map) => Ok(map.get(key).filter(|v| !v.is_null())),
        Value::Array(items) => Ok(items.get(item_index(key, items.len())?)),
        _ => Err(ApplyError("invalid state detected".to_owned())),
    }
}

/// Inserts `value` at `key` of `container` (the library's `add`).
fn insert(container: &mut Value, key: &str, value: Value) -> Result<(), ApplyError> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
            Ok(())
        }
        Value::Array(items) => {
            if key == "-" {
                items.push(value);
                return Ok(());
            }
            if atoi(key).is_none() {
                return Err(ApplyError(format!(
                    "value was not a proper array index: '{key}'"
                )));
            }
            let index = item_index(key, items.len() + 1)?;
            items.insert(index, value);
            Ok(())
        }
        _ => Err(ApplyError("invalid state detected".to_owned())),
    }
}

/// Removes `key` of `container` (the library's `remove`).
fn delete(container: &mut Value, key: &str) -> Result<Value, ApplyError> {
    match container {
        Value::Object(map) => map
            .shift_remove(key)
            .ok_or_else(|| ApplyError(format!("Unable to remove nonexistent key: {key}"))),
        Value::Array(items) => {
            let index = item_index(key, items.len())?;
            Ok(items.remove(index))
        }
        _ => Err(ApplyError("invalid state detected".to_owned())),
    }
}

/// Refuses a value that would nest the document deeper than [`MAX_DEPTH`] once placed in a
/// container `container_depth` levels down.
fn check_depth(container_depth: usize, value: &Value) -> Result<(), ApplyError> {
    let room = MAX_DEPTH.saturating_sub(container_depth + 1);
    if deeper_than(value, room) {
        return Err(ApplyError(too_deep_message()));
    }
    Ok(())
}

fn missing(kind: &str, path: &str) -> ApplyError {
    ApplyError(format!(
        "{kind} operation does not apply: doc is missing path: \"{path}\""
    ))
}

fn add(doc: &mut Value, operation: &Map<String, Value>) -> Result<(), ApplyError> {
    let path = member(operation, "path")?;
    let value = value_of(operation).cloned().unwrap_or(Value::Null);
    let (container, key, depth) = find(doc, path).ok_or_else(|| missing("add", path))?;
    check_depth(depth, &value)?;
    insert(container, &key, value)
}

fn remove(doc: &mut Value, operation: &Map<String, Value>) -> Result<(), ApplyError> {
    let path = member(operation, "path")?;
    let (container, key, _) = find(doc, path).ok_or_else(|| missing("remove", path))?;
    delete(container, &key).map(drop)
}

fn replace(doc: &mut Value, operation: &Map<String, Value>) -> Result<(), ApplyError> {
    let path = member(operation, "path")?;
    let Some(value) = value_of(operation) else {
        return Err(ApplyError("replace operation has no value".to_owned()));
    };
    if path.is_empty() {
        // The library replaces the document only with an object or an array, and silently
        // does nothing otherwise.
        if value.is_object() || value.is_array() {
            if too_deep(value) {
                return Err(ApplyError(too_deep_message()));
            }
            *doc = value.clone();
        }
        return Ok(());
    }
    let (container, key, depth) = find(doc, path).ok_or_else(|| missing("replace", path))?;
    get(container, &key)?;
    check_depth(depth, value)?;
    match container {
        Value::Object(map) => {
            map.insert(key, value.clone());
        }
        Value::Array(items) => {
            let index = item_index(&key, items.len())?;
            items[index] = value.clone();
        }
        _ => return Err(ApplyError("invalid state detected".to_owned())),
    }
    Ok(())
}

fn move_value(doc: &mut Value, operation: &Map<String, Value>) -> Result<(), ApplyError> {
    let from = member(operation, "from")?;
    let (container, key, _) = find(doc, from).ok_or_else(|| missing("move", from))?;
    get(container, &key)?;
    let value = delete(container, &key)?;
    let path = member(operation, "path")?;
    let (container, key, depth) = find(doc, path).ok_or_else(|| missing("move", path))?;
    check_depth(depth, &value)?;
    insert(container, &key, value)
}

fn test(doc: &mut Value, operation: &Map<String, Value>) -> Result<(), ApplyError> {
    let path = member(operation, "path")?;
    let failed = || ApplyError(format!("testing value {path} failed: test failed"));
    let expected = value_of(operation);
    if path.is_empty() {
        // The library's structural equality is serde_json's: objects regardless of member
        // order, arrays item by item, numbers by kind (`1` is not `1.0`).
        return match expected {
            Some(expected) if doc == expected => Ok(()),
            _ => Err(failed()),
        };
    }
    let (container, key, _) = find(doc, path).ok_or_else(|| missing("test", path))?;
    match (get(container, &key)?, expected) {
        (None, Some(Value::Null)) => Ok(()),
        (None, _) | (Some(_), None) => Err(failed()),
        (Some(actual), Some(expected)) if actual == expected => Ok(()),
        (Some(_), Some(_)) => Err(failed()),
    }
}

fn copy(
    doc: &mut Value,
    operation: &Map<String, Value>,
    copied: &mut usize,
    limit: usize,
) -> Result<(), ApplyError> {
    let from = member(operation, "from")?;
    let (container, key, _) = find(doc, from).ok_or_else(|| missing("copy", from))?;
    let source = get(container, &key)?;
    let size = source.map_or(0, json_size);
    let path = member(operation, "path")?;
    // Measured and limited before anything is cloned, as the library does.
    *copied = copied.saturating_add(size);
    if *copied > limit {
        return Err(ApplyError(format!(
            "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {limit}"
        )));
    }
    let value = source.cloned().unwrap_or(Value::Null);
    let (container, key, depth) = find(doc, path).ok_or_else(|| missing("copy", path))?;
    check_depth(depth, &value)?;
    insert(container, &key, value)
}

/// The length of `value` as compact JSON, without building it.
fn json_size(value: &Value) -> usize {
    struct Counter(usize);
    impl Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

#[cfg(test)]
mod upstream_cases;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(doc: Value, patch: Value) -> Result<Value, ApplyError> {
        let patch = Patch::decode(&serde_json::to_vec(&patch).expect("json")).expect("decodes");
        let mut doc = doc;
        patch.apply(&mut doc).map(|()| doc)
    }

    #[test]
    fn operations_follow_the_library_upstream_uses() {
        let doc = json!({"a": 1, "list": [1, 2, 3], "n": null});
        let ok = |patch: Value| {
            patched(doc.clone(), patch.clone()).unwrap_or_else(|e| panic!("{patch}: {e:?}"))
        };
        assert_eq!(ok(json!([{"op": "add", "path": "/b", "value": 2}]))["b"], 2);
        assert_eq!(
            ok(json!([{"op": "add", "path": "/list/-", "value": 4}]))["list"],
            json!([1, 2, 3, 4])
        );
        assert_eq!(
            ok(json!([{"op": "add", "path": "/list/0", "value": 0}]))["list"],
            json!([0, 1, 2, 3])
        );
        // A negative index counts back from one past the end, as the library counts for `add`.
        assert_eq!(
            ok(json!([{"op": "add", "path": "/list/-1", "value": 9}]))["list"],
            json!([1, 2, 3, 9])
        );
        assert_eq!(
            ok(json!([{"op": "add", "path": "/list/-4", "value": 9}]))["list"],
            json!([9, 1, 2, 3])
        );
        assert_eq!(
            ok(json!([{"op": "add", "path": "/list/+1", "value": 9}]))["list"],
            json!([1, 9, 2, 3])
        );
        // The first segment is not checked.
        assert_eq!(
            ok(json!([{"op": "add", "path": "x/c", "value": 3}]))["c"],
            3
        );
        assert_eq!(
            ok(json!([{"op": "remove", "path": "/list/-1"}]))["list"],
            json!([1, 2])
        );
        // Replacing a missing member adds it; replacing the document with a scalar is a no-op.
        assert_eq!(
            ok(json!([{"op": "replace", "path": "/z", "value": 1}]))["z"],
            1
        );
        assert_eq!(ok(json!([{"op": "replace", "path": "", "value": 5}])), doc);
        assert_eq!(
            ok(json!([{"op": "replace", "path": "", "value": {"x": 1}}])),
            json!({"x": 1})
        );
        // Copy or move from a missing member writes null.
        assert_eq!(
            ok(json!([{"op": "copy", "from": "/missing", "path": "/c"}]))["c"],
            Value::Null
        );
        assert_eq!(
            ok(json!([{"op": "move", "from": "/a", "path": "/list/1"}]))["list"],
            json!([1, 1, 2, 3])
        );
        // test of a missing member or of null with a null value succeeds.
        ok(json!([{"op": "test", "path": "/missing", "value": null}]));
        ok(json!([{"op": "test", "path": "/n", "value": null}]));
        ok(json!([{"op": "test", "path": "", "value": {"list": [1, 2, 3], "n": null, "a": 1}}]));
        assert_eq!(ok(Value::Null), doc);
        let fails = |patch: Value| assert!(patched(doc.clone(), patch.clone()).is_err(), "{patch}");
        fails(json!([{"op": "test", "path": "/a", "value": 1.0}]));
        fails(json!([{"op": "test", "path": "/a"}]));
        fails(json!([{"op": "add", "path": "", "value": 1}]));
        fails(json!([{"op": "add", "path": "/list/4", "value": 1}]));
        fails(json!([{"op": "add", "path": "/list/x", "value": 1}]));
        fails(json!([{"op": "remove", "path": "/missing"}]));
        fails(json!([{"op": "move", "from": "/missing", "path": "/b"}]));
        fails(json!([{"op": "remove", "path": "/list/3"}]));
        fails(json!([{"op": "replace", "path": "/list/3", "value": 1}]));
        fails(json!([{"op": "add", "path": "/a/b", "value": 1}]));
        fails(json!([{"op": "frobnicate", "path": "/a"}]));
        fails(json!([null]));
    }

    #[test]
    fn decoding_refuses_what_go_refuses_with_its_words() {
        assert_eq!(
            Patch::decode(b"{}").expect_err("object"),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        );
        assert_eq!(
            Patch::decode(b"[1]").expect_err("number"),
            "json: cannot unmarshal number into Go value of type jsonpatch.Operation"
        );
        assert_eq!(Patch::decode(b"null").expect("null").len(), 0);
        let patch =
            Patch::decode(br#"[{"op":"add","path":"/a","value":1,"extra":2}]"#).expect("ok");
        assert_eq!(
            patch.strict_fields().expect("strings"),
            ["json patch unknown field \"[0].extra\""]
        );
        let patch = Patch::decode(br#"[{"op":5}]"#).expect("ok");
        assert_eq!(
            patch.strict_fields().expect_err("op is a number"),
            "json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"
        );
    }

    /// Finding 6: each `copy` of an object into a new member of itself doubles it; 28 of them
    /// on 2 KiB used to reach gigabytes. The copied bytes are limited as upstream limits them.
    #[test]
    fn finding_6_copies_are_limited_to_three_mebibytes_in_all() {
        let doc = json!({"a": {"b": "x".repeat(2048)}});
        let ops: Vec<Value> = (0..28)
            .map(|i| json!({"op": "copy", "from": "/a", "path": format!("/a/c{i}")}))
            .collect();
        let err = patched(doc, Value::Array(ops)).expect_err("over 3 MiB");
        assert!(err.0.contains("exceeding the limit 3145728"), "{err:?}");
    }

    #[test]
    fn no_operation_nests_the_document_past_the_limit() {
        let mut deep = json!(1);
        for _ in 0..(MAX_DEPTH - 1) {
            deep = json!({ "d": deep });
        }
        // A value MAX_DEPTH - 1 deep fits at the top level, not one level further down.
        let at_top = patched(
            json!({}),
            json!([{"op": "add", "path": "/v", "value": deep}]),
        );
        assert!(at_top.is_ok());
        let lower = patched(
            json!({"o": {}}),
            json!([{"op": "add", "path": "/o/v", "value": deep}]),
        );
        assert_eq!(lower.expect_err("too deep").0, "exceeded max depth of 100");
    }
}
