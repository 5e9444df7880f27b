//! Mutations of valid objects: wrong JSON types at any field, nulls, missing and extra fields,
//! deep nesting, huge and odd strings, bad names, resourceVersions and uids, and damage to the
//! encoded bytes (truncation, garbage, invalid UTF-8).
//!
//! Deep nesting is never built as a `serde_json::Value`: serialising or dropping a value
//! thousands of levels deep recurses that deep in the fuzzer itself. A mutation puts a short
//! placeholder string in the value instead, and [`Body::render`] splices the nested text in
//! after encoding; the same splice writes numbers no `Value` can hold (`1e400`, 2^64).

use fastrand::Rng;
use serde_json::{Map, Value, json};

/// Marks a placeholder in an encoded body; the index into [`Body::raw`] follows it.
const PLACEHOLDER: &str = "ZZFUZZRAW";
/// Deepest a value is walked when picking a field to mutate (seeds are far shallower).
const MAX_WALK_DEPTH: usize = 16;
/// Nesting depths tried: around serde_json's recursion limit (128) and far past it.
const DEPTHS: [usize; 9] = [8, 64, 100, 126, 127, 128, 129, 1000, 20_000];
/// Lengths of huge strings: up to and past the server's 3 MiB body limit.
const HUGE_LENGTHS: [usize; 6] = [
    1024,
    16 * 1024,
    256 * 1024,
    1024 * 1024,
    3_000_000,
    3_300_000,
];

/// Strings that are valid UTF-8 but unusual.
pub(crate) const ODD_STRINGS: &[&str] = &[
    "",
    " ",
    "0",
    "3",
    "-1",
    "1.5",
    "1e3",
    "true",
    "null",
    "{}",
    "[]",
    "100Mi",
    "10%",
    "2024-13-45T99:99:99Z",
    "../../etc/passwd",
    "a/b",
    "*",
    "%",
    "\\",
    "a\u{0}b",
    "\u{feff}bom",
    "é",
    "ünïcödé",
    "日本語",
    "\u{202e}rtl",
    "e\u{301}\u{301}\u{301}",
    "🦀🦀",
    "\u{10ffff}",
    "line\nbreak\r\n",
    "tab\there",
    "\"quoted\"",
    "<script>",
    "$patch",
];

/// Names that are not valid object names (or are, barely).
pub(crate) const BAD_NAMES: &[&str] = &[
    "",
    "UPPER",
    "a..b",
    "-lead",
    "trail-",
    "with space",
    "a_b",
    "ünï",
    "a/b",
    ".",
    "..",
    "a%2Fb",
    "🦀",
    "x.y.z",
    "0",
    "a:b",
];

/// resourceVersions that are not the current one: malformed, zero, negative, huge, future.
pub(crate) const BAD_RESOURCE_VERSIONS: &[&str] = &[
    "abc",
    "0",
    "-1",
    "",
    " 1",
    "1e3",
    "999999999",
    "18446744073709551616",
    "9223372036854775807",
    "1",
    "0x10",
];

/// uids that are not the object's.
pub(crate) const BAD_UIDS: &[&str] = &[
    "",
    "not-a-uid",
    "00000000-0000-0000-0000-000000000000",
    "🦀",
    "123",
];

/// An object body under construction: its value, and the raw text its placeholders stand for.
#[derive(Debug, Clone)]
pub(crate) struct Body {
    pub(crate) value: Value,
    /// Raw JSON text for each placeholder, by index.
    pub(crate) raw: Vec<String>,
    /// The deepest nesting a placeholder adds (0: none).
    pub(crate) depth: usize,
}

impl Body {
    pub(crate) fn new(value: Value) -> Self {
        Body {
            value,
            raw: Vec::new(),
            depth: 0,
        }
    }

    /// A placeholder value standing for `text`.
    pub(crate) fn raw_value(&mut self, text: String) -> Value {
        let at = self.raw.len();
        self.raw.push(text);
        Value::String(format!("{PLACEHOLDER}{at}Z"))
    }

    /// A placeholder for a value nested `depth` levels deep.
    pub(crate) fn deep_value(&mut self, rng: &mut Rng, depth: usize) -> Value {
        self.depth = self.depth.max(depth);
        self.raw_value(nested_text(rng.u8(..3), depth))
    }

    /// JSON bytes, placeholders spliced in.
    pub(crate) fn to_json(&self) -> Vec<u8> {
        let text = serde_json::to_string(&self.value).unwrap_or_default();
        self.splice(text, true).into_bytes()
    }

    /// YAML bytes (block style, as kubectl writes), placeholders spliced in as flow JSON,
    /// which YAML reads too.
    pub(crate) fn to_yaml(&self) -> Vec<u8> {
        let text = serde_yaml_ng::to_string(&self.value).unwrap_or_default();
        self.splice(text, false).into_bytes()
    }

    fn splice(&self, mut text: String, quoted: bool) -> String {
        // Highest index first, so that `…1Z` is not found inside `…11Z`.
        for (at, raw) in self.raw.iter().enumerate().rev() {
            let mark = format!("{PLACEHOLDER}{at}Z");
            let target = if quoted {
                format!("\"{mark}\"")
            } else {
                mark.clone()
            };
            if text.contains(&target) {
                text = text.replace(&target, raw);
            } else {
                // YAML may have quoted it after all.
                text = text
                    .replace(&format!("\"{mark}\""), raw)
                    .replace(&format!("'{mark}'"), raw)
                    .replace(&mark, raw);
            }
        }
        text
    }
}

/// `depth` levels of arrays (`shape` 0), objects (1) or both alternating (2), as JSON text.
pub(crate) fn nested_text(shape: u8, depth: usize) -> String {
    let mut text = String::with_capacity(depth * 8);
    for level in 0..depth {
        let array = match shape {
            0 => true,
            1 => false,
            _ => level % 2 == 0,
        };
        text.push_str(if array { "[" } else { "{\"a\":" });
    }
    text.push('1');
    for level in (0..depth).rev() {
        let array = match shape {
            0 => true,
            1 => false,
            _ => level % 2 == 0,
        };
        text.push(if array { ']' } else { '}' });
    }
    text
}

/// Picks one of `items`.
pub(crate) fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> &'a T {
    &items[rng.usize(..items.len())]
}

/// Every JSON pointer in `value` (the root is `""`), at most [`MAX_WALK_DEPTH`] deep.
pub(crate) fn pointers(value: &Value) -> Vec<String> {
    fn walk(value: &Value, at: &str, depth: usize, out: &mut Vec<String>) {
        out.push(at.to_owned());
        if depth >= MAX_WALK_DEPTH {
            return;
        }
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    let key = key.replace('~', "~0").replace('/', "~1");
                    walk(child, &format!("{at}/{key}"), depth + 1, out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, &format!("{at}/{i}"), depth + 1, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, "", 0, &mut out);
    out
}

/// A value of another JSON type than `value`'s.
pub(crate) fn wrong_type(rng: &mut Rng, body: &mut Body, value: &Value) -> Value {
    let big = [
        "1e400",
        "18446744073709551616",
        "-9223372036854775809",
        "1.0e-400",
        "123456789012345678901234567890",
    ];
    match value {
        Value::String(_) => match rng.u8(..8) {
            0 => json!(7),
            1 => json!(1.5),
            2 => json!(true),
            3 => json!({}),
            4 => json!({"k": 1}),
            5 => json!(["a"]),
            6 => Value::Null,
            _ => json!(-1),
        },
        Value::Number(_) => match rng.u8(..10) {
            0 => json!("3"),
            1 => json!(1.5),
            2 => json!(-1),
            3 => json!(i64::MAX),
            4 => json!(u64::MAX),
            5 => body.raw_value((*pick(rng, &big)).to_owned()),
            6 => json!({}),
            7 => json!([1]),
            8 => json!(true),
            _ => Value::Null,
        },
        Value::Object(_) => match rng.u8(..7) {
            0 => json!("str"),
            1 => json!([]),
            2 => json!([{"a": "b"}]),
            3 => json!(7),
            4 => json!(true),
            5 => Value::Null,
            _ => json!({"": {"": []}}),
        },
        Value::Array(_) => match rng.u8(..7) {
            0 => json!({}),
            1 => json!("str"),
            2 => json!(7),
            3 => json!({"0": "a"}),
            4 => json!([null]),
            5 => json!([[]]),
            _ => json!([1, "two", {"three": 3}]),
        },
        Value::Bool(_) => match rng.u8(..4) {
            0 => json!("true"),
            1 => json!(1),
            2 => json!({}),
            _ => Value::Null,
        },
        Value::Null => match rng.u8(..3) {
            0 => json!(""),
            1 => json!({}),
            _ => json!(0),
        },
    }
}

/// A string that is unusual (odd, unicode, long or huge).
pub(crate) fn odd_string(rng: &mut Rng) -> String {
    match rng.u8(..10) {
        0 => "x".repeat(rng.usize(60..400)),
        1 => huge_string(rng),
        _ => (*pick(rng, ODD_STRINGS)).to_owned(),
    }
}

/// A string of one of the [`HUGE_LENGTHS`], mostly ASCII, sometimes multi-byte.
pub(crate) fn huge_string(rng: &mut Rng) -> String {
    // The megabyte ones a quarter of the time: they fill the server's memory fast.
    let len = if rng.u8(..4) == 0 {
        *pick(rng, &HUGE_LENGTHS)
    } else {
        *pick(rng, &HUGE_LENGTHS[..3])
    };
    if rng.bool() {
        "h".repeat(len)
    } else {
        "é🦀".repeat(len / 6 + 1)
    }
}

/// Some value for a field the object does not have, or a patch operation's value.
pub(crate) fn any_value(rng: &mut Rng, body: &mut Body) -> Value {
    match rng.u8(..12) {
        0 => json!(odd_string(rng)),
        1 => json!(rng.i64(..)),
        2 => json!({"k": "v"}),
        3 => json!(["a", "b"]),
        4 => Value::Null,
        5 => json!(true),
        6 => {
            let depth = *pick(rng, &DEPTHS);
            body.deep_value(rng, depth)
        }
        7 => json!({"nested": {"deeper": [1, {"x": null}]}}),
        8 => json!(1.25),
        9 => json!([]),
        10 => json!({}),
        _ => json!("v"),
    }
}

/// Mutations of a body's value; which one and where is drawn from `rng`.
pub(crate) fn mutate(rng: &mut Rng, body: &mut Body, kind: &str) {
    let pointers = pointers(&body.value);
    let at = pick(rng, &pointers).clone();
    match rng.u8(..20) {
        0..=4 => {
            // A wrong type at a field.
            if let Some(old) = body.value.pointer(&at).cloned() {
                let new = wrong_type(rng, body, &old);
                set(&mut body.value, &at, new);
            }
        }
        5 => set(&mut body.value, &at, Value::Null),
        6 => remove(&mut body.value, &at),
        7 => {
            // An extra field in some object.
            let objects: Vec<&String> = pointers
                .iter()
                .filter(|p| body.value.pointer(p).is_some_and(Value::is_object))
                .collect();
            if objects.is_empty() {
                return;
            }
            let at = (*pick(rng, &objects)).clone();
            let key = match rng.u8(..6) {
                0 => odd_string(rng),
                1 => "$patch".to_owned(),
                2 => "metadata".to_owned(),
                _ => "extraField".to_owned(),
            };
            let value = any_value(rng, body);
            if let Some(Value::Object(map)) = body.value.pointer_mut(&at) {
                map.insert(key, value);
            }
        }
        8 => {
            let depth = *pick(rng, &DEPTHS);
            let deep = body.deep_value(rng, depth);
            set(&mut body.value, &at, deep);
        }
        9 => {
            let text = odd_string(rng);
            set(&mut body.value, &at, json!(text));
        }
        10 => {
            let name = match rng.u8(..4) {
                0 => "x".repeat(rng.usize(250..300)),
                _ => (*pick(rng, BAD_NAMES)).to_owned(),
            };
            if rng.u8(..4) == 0 {
                remove(&mut body.value, "/metadata/name");
                set(&mut body.value, "/metadata/generateName", json!(name));
            } else {
                set(&mut body.value, "/metadata/name", json!(name));
            }
        }
        11 => set(
            &mut body.value,
            "/metadata/resourceVersion",
            json!(pick(rng, BAD_RESOURCE_VERSIONS)),
        ),
        12 => set(&mut body.value, "/metadata/uid", json!(pick(rng, BAD_UIDS))),
        13 => mutate_metadata(rng, body),
        14 => {
            // Another kind or apiVersion, or none.
            let field = if rng.bool() { "/kind" } else { "/apiVersion" };
            match rng.u8(..4) {
                0 => remove(&mut body.value, field),
                1 => set(&mut body.value, field, json!("v2")),
                2 => set(
                    &mut body.value,
                    field,
                    json!(if kind == "Pod" { "ConfigMap" } else { "Pod" }),
                ),
                _ => set(&mut body.value, field, json!("")),
            }
        }
        15 => {
            // Duplicate or empty lists and maps.
            if let Some(value) = body.value.pointer_mut(&at) {
                match value {
                    Value::Array(items) if !items.is_empty() => {
                        let first = items[0].clone();
                        items.push(first);
                    }
                    Value::Array(items) => items.push(Value::Null),
                    Value::Object(map) => map.clear(),
                    other => *other = json!([]),
                }
            }
        }
        16 => {
            // A field removed from a well-known place.
            let field = *pick(
                rng,
                &[
                    "/metadata",
                    "/metadata/name",
                    "/spec",
                    "/apiVersion",
                    "/kind",
                    "/data",
                ],
            );
            remove(&mut body.value, field);
        }
        17 => {
            let namespace = *pick(rng, &["other", "", "Bad_NS", "default", "fuzz-b"]);
            set(&mut body.value, "/metadata/namespace", json!(namespace));
        }
        18 => body.value = wrong_type(rng, body, &Value::Object(Map::new())),
        _ => {
            // Big and odd numbers at a numeric field, or anywhere.
            let numbers: Vec<&String> = pointers
                .iter()
                .filter(|p| body.value.pointer(p).is_some_and(Value::is_number))
                .collect();
            let at = if numbers.is_empty() {
                at.clone()
            } else {
                (*pick(rng, &numbers)).clone()
            };
            let number = match rng.u8(..6) {
                0 => json!(-1),
                1 => json!(i64::MAX),
                2 => json!(u64::MAX),
                3 => json!(0.5),
                4 => body.raw_value("1e400".to_owned()),
                _ => json!(i32::MAX as i64 + 1),
            };
            set(&mut body.value, &at, number);
        }
    }
}

/// A mutation aimed at `metadata`: labels, annotations, finalizers, owner references,
/// managed fields, timestamps, generation.
fn mutate_metadata(rng: &mut Rng, body: &mut Body) {
    let (field, value) = match rng.u8(..14) {
        0 => ("labels", json!({"a": {"k": 1}})),
        1 => (
            "labels",
            json!({"bad key!": "v", "a/b/c": "x", "k": "bad value!"}),
        ),
        2 => ("annotations", json!("str")),
        3 => ("annotations", json!({"a": 7})),
        4 => ("labels", json!([{"a": "b"}])),
        5 => (
            "finalizers",
            json!([odd_string(rng), "example.com/fuzz", "example.com/fuzz"]),
        ),
        6 => ("finalizers", json!("example.com/fuzz")),
        7 => (
            "ownerReferences",
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "f0",
                "uid": pick(rng, BAD_UIDS), "controller": true}]),
        ),
        8 => ("ownerReferences", json!({"a": 1})),
        9 => (
            "managedFields",
            json!([{"manager": "x", "operation": "Apply", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:bogus": {"k": 1}}}]),
        ),
        10 => ("managedFields", json!("garbage")),
        11 => ("creationTimestamp", json!(pick(rng, ODD_STRINGS))),
        12 => ("deletionTimestamp", json!("2024-01-01T00:00:00Z")),
        _ => (
            "generation",
            json!(pick(rng, &[json!("3"), json!(-5), json!(1.5)])),
        ),
    };
    set(&mut body.value, &format!("/metadata/{field}"), value);
}

/// Sets the value at `pointer`, creating missing objects on the way; a no-op where a parent
/// is a scalar or an array index is out of range.
pub(crate) fn set(value: &mut Value, pointer: &str, new: Value) {
    if pointer.is_empty() {
        *value = new;
        return;
    }
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    if value.pointer(parent).is_none() {
        set(value, parent, Value::Object(Map::new()));
    }
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(last, new);
        }
        Some(Value::Array(items)) => {
            if let Some(slot) = last.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                *slot = new;
            }
        }
        _ => {}
    }
}

/// Removes the value at `pointer` (the root becomes `null`).
pub(crate) fn remove(value: &mut Value, pointer: &str) {
    if pointer.is_empty() {
        *value = Value::Null;
        return;
    }
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                items.remove(i);
            }
        }
        _ => {}
    }
}

/// Damage to encoded bytes: truncation, garbage, invalid UTF-8, a BOM, trailing data.
pub(crate) fn damage_bytes(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let len = bytes.len();
    match rng.u8(..9) {
        0 => bytes.truncate(rng.usize(..=len)),
        1 => {
            let at = rng.usize(..=len);
            let garbage: Vec<u8> = (0..rng.usize(1..16)).map(|_| rng.u8(..)).collect();
            bytes.splice(at..at, garbage);
        }
        2 if len > 0 => {
            let at = rng.usize(..len);
            bytes[at] = rng.u8(..);
        }
        3 => {
            let at = rng.usize(..=len);
            bytes.splice(at..at, [0xff, 0xfe, 0xc3, 0x28]);
        }
        4 => {
            bytes.splice(0..0, [0xef, 0xbb, 0xbf]);
        }
        5 => bytes.extend_from_slice(b"}]garbage{"),
        6 => {
            // A duplicate key at the front of the top-level object.
            if bytes.first() == Some(&b'{') {
                bytes.splice(1..1, b"\"metadata\":{\"name\":\"dup\"},".iter().copied());
            }
        }
        7 => bytes.clear(),
        _ => {
            let bodies: [&[u8]; 6] = [b"null", b"[]", b"\"str\"", b"7", b"{", b"{}"];
            *bytes = pick(rng, &bodies).to_vec();
        }
    }
}

/// Random bytes, sometimes with the protobuf magic in front.
pub(crate) fn garbage_bytes(rng: &mut Rng) -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..rng.usize(0..512)).map(|_| rng.u8(..)).collect();
    if rng.bool() {
        bytes.splice(0..0, *b"k8s\0");
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_spliced_into_json_and_yaml() {
        let mut rng = Rng::with_seed(1);
        let mut body = Body::new(json!({"a": 1}));
        let deep = body.deep_value(&mut rng, 300);
        let big = body.raw_value("1e400".to_owned());
        body.value["deep"] = deep;
        body.value["big"] = big;
        let text = String::from_utf8(body.to_json()).unwrap();
        assert!(!text.contains(PLACEHOLDER), "{text}");
        assert!(text.contains("\"big\":1e400"), "{text}");
        assert_eq!(body.depth, 300);
        let yaml = String::from_utf8(body.to_yaml()).unwrap();
        assert!(!yaml.contains(PLACEHOLDER), "{yaml}");
    }

    #[test]
    fn nested_text_is_balanced_json_of_the_depth_asked() {
        for shape in 0..3 {
            let text = nested_text(shape, 50);
            let value: Value = serde_json::from_str(&text).unwrap();
            let mut depth = 0;
            let mut at = &value;
            loop {
                at = match at {
                    Value::Array(items) => &items[0],
                    Value::Object(map) => &map["a"],
                    _ => break,
                };
                depth += 1;
            }
            assert_eq!(depth, 50);
        }
    }

    #[test]
    fn set_and_remove_follow_json_pointers() {
        let mut value = json!({"a": [1, 2], "b/c": {"d": 1}});
        set(&mut value, "/x/y", json!(3));
        set(&mut value, "/a/1", json!("two"));
        set(&mut value, "/a/9", json!("ignored"));
        remove(&mut value, "/b~1c/d");
        assert_eq!(value, json!({"a": [1, "two"], "b/c": {}, "x": {"y": 3}}));
        assert!(pointers(&value).contains(&"/b~1c".to_owned()));
    }
}
