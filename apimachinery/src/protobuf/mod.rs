//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`, docs/api-behaviour.md#content-types): the `k8s\0` magic and
//! the `runtime.Unknown` envelope (`typeMeta`, `raw` = the object's message, `contentEncoding`,
//! `contentType`) around messages of the 1.32 schemas, both ways, and the watch stream's
//! frames. client-go's typed clientsets (and so kubectl's `create namespace`, `create
//! configmap`, ...) send built-in kinds this way and ask for answers in it.
//!
//! The schemas come from `build.rs`; [`schema`] parses them, `table` compiles them, `decode`
//! and `encode` walk them, over [`wire`]'s reading and writing of the wire format. A watch stream (`;stream=watch`) is a sequence of frames, each a
//! 4-byte big-endian length and a `metav1.WatchEvent` message *without* envelope (the real
//! server's stream serializer is the raw one), whose `object` is a `RawExtension` holding the
//! enveloped object (`k8s.io/apimachinery/pkg/runtime/serializer/codec_factory.go`,
//! `k8s.io/apiserver/pkg/endpoints/handlers/watch.go`).

mod comments;
mod decode;
mod encode;
pub mod schema;
mod table;
pub mod wire;

use std::sync::LazyLock;

use serde_json::{Map, Value};

use self::decode::Decoder;
use self::encode::Encoder;
use self::schema::ProtoSchema;
use self::table::Table;
use self::wire::{Reader, Wire, Writer};

/// The envelope's magic prefix.
pub(crate) const MAGIC: &[u8] = b"k8s\0";

/// The media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The first allocation of an encoding: most objects fit, few waste much.
const INITIAL_CAPACITY: usize = 1024;

/// The 1.32 `generated.proto` files without comments, concatenated (`build.rs`).
static SCHEMA_TEXT: &str = include_str!(concat!(env!("OUT_DIR"), "/k8s-protos.txt"));

/// The parsed schemas (a few milliseconds, on first use), with JSON names from the OpenAPI
/// schemas of the same types.
pub static SCHEMA: LazyLock<Result<ProtoSchema, String>> = LazyLock::new(|| {
    let mut schema = ProtoSchema::parse(SCHEMA_TEXT)?;
    let openapi = &*crate::openapi::SCHEMAS;
    schema.set_json_names(|message| {
        let component = openapi.component(&openapi_name(message))?;
        let properties = component.get("properties")?.as_object()?;
        Some(properties.keys().cloned().collect())
    });
    Ok(schema)
});

/// The schemas compiled for decoding and encoding.
pub(crate) static TABLE: LazyLock<Result<Table, String>> = LazyLock::new(|| {
    let schema = SCHEMA.as_ref().map_err(Clone::clone)?;
    Table::compile(schema)
});

/// The OpenAPI component name of a protobuf message (`api.core.v1.Pod` is
/// `io.k8s.api.core.v1.Pod`).
fn openapi_name(message: &str) -> String {
    let (root, rest) = message.split_once('.').unwrap_or((message, ""));
    format!("io.k8s.{}.{rest}", root.replace('_', "-"))
}

fn table() -> Result<&'static Table, String> {
    TABLE
        .as_ref()
        .map_err(|err| format!("protobuf schemas unavailable: {err}"))
}

/// Whether built-in `kind` of `apiVersion` has a protobuf message.
pub fn has_kind(api_version: &str, kind: &str) -> bool {
    table().is_ok_and(|table| table.kind(api_version, kind).is_some())
}

/// Decodes an enveloped object (`k8s\0` + `runtime.Unknown`) to its JSON object, `kind` and
/// `apiVersion` first, from the envelope.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    decode_as(body, None)
}

/// Like [`decode`], as message `message` when given (an envelope without a kind).
pub(crate) fn decode_as(body: &[u8], message: Option<u32>) -> Result<Value, String> {
    let table = table()?;
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or("the protobuf body does not start with the k8s\\0 magic")?;
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    let mut content_encoding = String::new();
    let mut reader = Reader::new(envelope);
    while let Some((number, wire)) = reader.key()? {
        match (number, wire) {
            (1, Wire::Len) => {
                let mut type_meta = Reader::new(reader.bytes()?);
                while let Some((number, wire)) = type_meta.key()? {
                    match (number, wire) {
                        (1, Wire::Len) => api_version = type_meta.string()?,
                        (2, Wire::Len) => kind = type_meta.string()?,
                        _ => type_meta.skip(wire)?,
                    }
                }
            }
            (2, Wire::Len) => raw = reader.bytes()?,
            (3, Wire::Len) => content_encoding = reader.string()?,
            _ => reader.skip(wire)?,
        }
    }
    if !content_encoding.is_empty() {
        return Err(format!("unsupported content encoding {content_encoding:?}"));
    }
    let message = match message {
        Some(message) => message,
        None => table
            .kind(&api_version, &kind)
            .ok_or_else(|| format!("no protobuf schema for {kind} in {api_version:?}"))?,
    };
    let mut decoder = Decoder::new(table, |raw| decode(raw).ok());
    let Value::Object(object) = decoder.message(message, raw, 0)? else {
        return Err(format!("{kind} did not decode to an object"));
    };
    let mut out = Map::with_capacity(object.len() + 2);
    if !kind.is_empty() {
        out.insert("kind".to_owned(), Value::String(kind));
    }
    if !api_version.is_empty() {
        out.insert("apiVersion".to_owned(), Value::String(api_version));
    }
    out.extend(object);
    Ok(Value::Object(out))
}

/// Encodes a JSON object of a built-in kind (its `kind` and `apiVersion` name the message) as
/// Go's protobuf serializer writes it: `k8s\0`, then the envelope.
pub fn encode(object: &Value) -> Result<Vec<u8>, String> {
    let mut out = Writer::with_capacity(INITIAL_CAPACITY);
    write_enveloped(&mut out, object)?;
    Ok(out.buf)
}

/// Like [`encode`], as message `message` with the given type (for fixtures whose JSON carries
/// no kind).
#[cfg(test)]
pub(crate) fn encode_as(
    message: u32,
    api_version: &str,
    kind: &str,
    object: &Value,
) -> Result<Vec<u8>, String> {
    let mut out = Writer::with_capacity(256);
    write_envelope(&mut out, message, api_version, kind, object)?;
    Ok(out.buf)
}

/// Writes the enveloped `object` at the end of `out`.
fn write_enveloped(out: &mut Writer, object: &Value) -> Result<(), String> {
    let text = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let message = table()?
        .kind(api_version, kind)
        .ok_or_else(|| format!("no protobuf schema for {kind} in {api_version:?}"))?;
    write_envelope(out, message, api_version, kind, object)
}

fn write_envelope(
    out: &mut Writer,
    message: u32,
    api_version: &str,
    kind: &str,
    object: &Value,
) -> Result<(), String> {
    let table = table()?;
    out.buf.extend_from_slice(MAGIC);
    // runtime.Unknown: typeMeta (1), raw (2), contentEncoding (3), contentType (4); Go writes
    // the empty strings too.
    let type_meta = out.begin_len(1);
    out.bytes_field(1, api_version.as_bytes());
    out.bytes_field(2, kind.as_bytes());
    out.end_len(type_meta);
    let raw = out.begin_len(2);
    let mut encoder = Encoder::new(table, std::mem::take(out));
    let written = encoder.message(message, Some(object), 0);
    *out = encoder.out;
    written?;
    out.end_len(raw);
    out.bytes_field(3, b"");
    out.bytes_field(4, b"");
    Ok(())
}

/// One frame of a protobuf watch stream: the 4-byte big-endian length, then the
/// `metav1.WatchEvent` (type (1), object (2): a `RawExtension` whose raw (1) is the enveloped
/// object).
pub fn encode_watch_event(event_type: &str, object: &Value) -> Result<Vec<u8>, String> {
    let mut out = Writer::with_capacity(INITIAL_CAPACITY);
    out.buf.extend_from_slice(&[0; 4]);
    out.bytes_field(1, event_type.as_bytes());
    let extension = out.begin_len(2);
    let raw = out.begin_len(1);
    write_enveloped(&mut out, object)?;
    out.end_len(raw);
    out.end_len(extension);
    let len = u32::try_from(out.buf.len() - 4).map_err(|_| "watch event too large")?;
    out.buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(out.buf)
}

/// Decodes one watch frame's `WatchEvent` (without its length prefix) to the JSON event
/// `{"type", "object"}`.
pub fn decode_watch_event(frame: &[u8]) -> Result<Value, String> {
    let mut event_type = String::new();
    let mut object = Value::Null;
    let mut reader = Reader::new(frame);
    while let Some((number, wire)) = reader.key()? {
        match (number, wire) {
            (1, Wire::Len) => event_type = reader.string()?,
            (2, Wire::Len) => {
                let mut extension = Reader::new(reader.bytes()?);
                while let Some((number, wire)) = extension.key()? {
                    match (number, wire) {
                        (1, Wire::Len) => object = decode(extension.bytes()?)?,
                        _ => extension.skip(wire)?,
                    }
                }
            }
            _ => reader.skip(wire)?,
        }
    }
    let mut event = Map::new();
    event.insert("type".to_owned(), Value::String(event_type));
    event.insert("object".to_owned(), object);
    Ok(Value::Object(event))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_schemas_parse_and_know_the_served_kinds() {
        let schema = SCHEMA.as_ref().expect("the schemas parse");
        assert!(schema.len() > 500, "{}", schema.len());
        for (api_version, kind) in [
            ("v1", "ConfigMap"),
            ("v1", "Namespace"),
            ("apps/v1", "Deployment"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("meta.k8s.io/v1", "DeleteOptions"),
            ("v1", "DeleteOptions"),
        ] {
            assert!(
                schema.kind(api_version, kind).is_some(),
                "{api_version} {kind}"
            );
            assert!(has_kind(api_version, kind), "{api_version} {kind}");
        }
        assert!(!has_kind("example.com/v1", "Widget"));
        let service = schema.kind("v1", "ServiceSpec").expect("ServiceSpec");
        assert!(service.field_named("clusterIP").is_some());
        assert!(service.field_named("externalIPs").is_some());
    }

    /// Protobuf encoding helpers for building test inputs by hand.
    fn varint(mut value: u64, out: &mut Vec<u8>) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    fn len_field(number: u32, bytes: &[u8], out: &mut Vec<u8>) {
        varint(u64::from(number) << 3 | 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    fn varint_field(number: u32, value: u64, out: &mut Vec<u8>) {
        varint(u64::from(number) << 3, out);
        varint(value, out);
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut type_meta = Vec::new();
        len_field(1, api_version.as_bytes(), &mut type_meta);
        len_field(2, kind.as_bytes(), &mut type_meta);
        let mut unknown = Vec::new();
        len_field(1, &type_meta, &mut unknown);
        len_field(2, raw, &mut unknown);
        len_field(3, b"", &mut unknown);
        len_field(4, b"", &mut unknown);
        let mut out = MAGIC.to_vec();
        out.extend(unknown);
        out
    }

    /// A ConfigMap as gogo writes it: the ObjectMeta value fields present even when empty.
    fn configmap_as_go_writes_it() -> Vec<u8> {
        let mut metadata = Vec::new();
        len_field(1, b"c1", &mut metadata);
        len_field(2, b"", &mut metadata);
        len_field(3, b"default", &mut metadata);
        len_field(4, b"", &mut metadata);
        len_field(5, b"", &mut metadata);
        len_field(6, b"", &mut metadata);
        varint_field(7, 0, &mut metadata);
        len_field(8, b"", &mut metadata);
        let mut label = Vec::new();
        len_field(1, b"app", &mut label);
        len_field(2, b"web", &mut label);
        len_field(11, &label, &mut metadata);
        let mut configmap = Vec::new();
        len_field(1, &metadata, &mut configmap);
        let mut entry = Vec::new();
        len_field(1, b"greeting", &mut entry);
        len_field(2, b"", &mut entry);
        len_field(2, &entry, &mut configmap);
        let mut binary = Vec::new();
        len_field(1, b"blob", &mut binary);
        len_field(2, &[0, 1, 2], &mut binary);
        len_field(3, &binary, &mut configmap);
        varint_field(4, 1, &mut configmap);
        envelope("v1", "ConfigMap", &configmap)
    }

    #[test]
    fn a_configmap_decodes_as_go_sends_it_and_encodes_back_to_the_same_bytes() {
        let bytes = configmap_as_go_writes_it();
        let decoded = decode(&bytes).expect("decodes");
        // Go's zero values in value fields (the empty strings, generation 0, the zero
        // creationTimestamp) are absent, as in kubemock's JSON.
        assert_eq!(
            decoded,
            json!({
                "kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"name": "c1", "namespace": "default", "labels": {"app": "web"}},
                "immutable": true,
                "data": {"greeting": ""},
                "binaryData": {"blob": "AAEC"},
            })
        );
        assert_eq!(encode(&decoded).expect("encodes"), bytes);
        // A creation time, as seconds.
        let mut time = Vec::new();
        varint_field(1, 1_714_564_800, &mut time);
        varint_field(2, 0, &mut time);
        let mut metadata = Vec::new();
        len_field(8, &time, &mut metadata);
        let mut configmap = Vec::new();
        len_field(1, &metadata, &mut configmap);
        let decoded = decode(&envelope("v1", "ConfigMap", &configmap)).expect("decodes");
        assert_eq!(
            decoded["metadata"]["creationTimestamp"],
            "2024-05-01T12:00:00Z"
        );
    }

    #[test]
    fn absent_fields_are_left_out_but_go_value_fields_are_written_zero() {
        let object = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": "m", "reason": "NotFound",
            "details": {"name": "x", "kind": "pods"}, "code": 404});
        let bytes = encode(&object).expect("encodes");
        let mut list_meta = Vec::new();
        len_field(1, b"", &mut list_meta);
        len_field(2, b"", &mut list_meta);
        len_field(3, b"", &mut list_meta);
        let mut details = Vec::new();
        len_field(1, b"x", &mut details);
        len_field(2, b"", &mut details);
        len_field(3, b"pods", &mut details);
        varint_field(5, 0, &mut details);
        len_field(6, b"", &mut details);
        let mut status = Vec::new();
        len_field(1, &list_meta, &mut status);
        len_field(2, b"Failure", &mut status);
        len_field(3, b"m", &mut status);
        len_field(4, b"NotFound", &mut status);
        len_field(5, &details, &mut status);
        varint_field(6, 404, &mut status);
        assert_eq!(bytes, envelope("v1", "Status", &status));
        assert_eq!(decode(&bytes).expect("decodes"), object);
        // A pod's spec: only what the JSON holds; int32 negatives sign-extended; unknown
        // properties ignored; maps sorted.
        let pod = json!({"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "p", "annotations": {"b": "2", "a": "1"}},
            "spec": {"containers": [{"name": "c", "image": "i",
                "ports": [{"containerPort": -1}]}], "bogus": 1}});
        let bytes = encode(&pod).expect("encodes");
        let mut back = pod.clone();
        back["spec"]
            .as_object_mut()
            .expect("spec")
            .shift_remove("bogus");
        assert_eq!(decode(&bytes).expect("decodes"), back);
        let raw = bytes.windows(11).any(|w| {
            w == [
                0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ]
        });
        assert!(raw, "containerPort -1 as ten bytes: {bytes:02x?}");
    }

    #[test]
    fn special_forms_encode_and_decode() {
        let table = table().expect("table");
        let mut decoder = Decoder::new(table, |raw| decode(raw).ok());
        let index = |name: &str| table.index(name).expect(name);
        let mut round_trip = |name: &str, value: Value| {
            let mut encoder = Encoder::new(table, Writer::default());
            encoder
                .message(index(name), Some(&value), 0)
                .expect("encodes");
            let bytes = encoder.out.buf;
            (
                decoder.message(index(name), &bytes, 0).expect("decodes"),
                bytes,
            )
        };
        let int_or_string = "apimachinery.pkg.util.intstr.IntOrString";
        assert_eq!(
            round_trip(int_or_string, json!(-5)),
            (
                json!(-5),
                vec![
                    0x08, 0, 0x10, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                    0x1a, 0
                ]
            )
        );
        assert_eq!(
            round_trip(int_or_string, json!("25%")),
            (
                json!("25%"),
                vec![0x08, 1, 0x10, 0, 0x1a, 3, b'2', b'5', b'%']
            )
        );
        let quantity = "apimachinery.pkg.api.resource.Quantity";
        assert_eq!(round_trip(quantity, json!("500m")).0, json!("500m"));
        assert_eq!(round_trip(quantity, json!(2)).0, json!("2"));
        let time = "apimachinery.pkg.apis.meta.v1.Time";
        assert_eq!(
            round_trip(time, json!("2024-05-01T12:00:00Z")).0,
            json!("2024-05-01T12:00:00Z")
        );
        assert_eq!(round_trip(time, Value::Null), (Value::Null, vec![]));
        let micro = "apimachinery.pkg.apis.meta.v1.MicroTime";
        assert_eq!(
            round_trip(micro, json!("2024-05-01T12:00:00.123456Z")).0,
            json!("2024-05-01T12:00:00.123456Z")
        );
        let duration = "apimachinery.pkg.apis.meta.v1.Duration";
        assert_eq!(round_trip(duration, json!("1m30s")).0, json!("1m30s"));
        let raw = "apimachinery.pkg.runtime.RawExtension";
        let embedded = json!({"apiVersion": "v1", "kind": "X", "a": [1, {"b": null}]});
        assert_eq!(round_trip(raw, embedded.clone()).0, embedded);
        let fields = "apimachinery.pkg.apis.meta.v1.FieldsV1";
        assert_eq!(
            round_trip(fields, json!({"f:data": {}})),
            (json!({"f:data": {}}), b"\x0a\x0d{\"f:data\":{}}".to_vec())
        );
        let extra = "api.authentication.v1.ExtraValue";
        assert_eq!(round_trip(extra, json!(["a", "b"])).0, json!(["a", "b"]));
    }

    #[test]
    fn values_of_the_wrong_type_are_errors() {
        for bad in [
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a": 1}}),
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"generation": "x"}}),
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": "x"}),
            json!({"kind": "ConfigMap", "apiVersion": "v1", "binaryData": {"a": "!!"}}),
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"creationTimestamp": "yesterday"}}),
            json!({"kind": "Pod", "apiVersion": "v1", "spec": {"containers": {}}}),
            json!({"kind": "Widget", "apiVersion": "example.com/v1"}),
        ] {
            assert!(encode(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_time_beyond_year_9999_decoded_from_protobuf_encodes_back() {
        // Found by the `protobuf` fuzz target: decoding wrote such a time as Go formats it,
        // encoding refused to read it back.
        let object = json!({"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "p", "creationTimestamp": "117354-08-12T23:15:33Z",
                         "deletionTimestamp": "-0001-12-31T23:59:59Z"}});
        let bytes = encode(&object).expect("encodes");
        let decoded = decode(&bytes).expect("decodes");
        assert_eq!(decoded["metadata"], object["metadata"]);
        assert_eq!(encode(&decoded).expect("encodes again"), bytes);
    }

    #[test]
    fn watch_frames_round_trip() {
        let object = json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "c", "resourceVersion": "7"}, "data": {"a": "b"}});
        let frame = encode_watch_event("ADDED", &object).expect("encodes");
        let len = u32::from_be_bytes(frame[..4].try_into().expect("4 bytes")) as usize;
        assert_eq!(len, frame.len() - 4);
        assert_eq!(frame[4], 0x0a, "a raw WatchEvent, no envelope");
        assert_eq!(
            decode_watch_event(&frame[4..]).expect("decodes"),
            json!({"type": "ADDED", "object": object})
        );
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        assert!(decode(b"not protobuf").is_err());
        assert!(decode(b"k8s\0\x0a\xff\xff").is_err());
        assert!(decode(&envelope("v1", "NoSuchKind", b"")).is_err());
        let mut truncated = envelope("v1", "ConfigMap", b"\x0a\x05ab");
        assert!(decode(&truncated).is_err());
        truncated.truncate(6);
        assert!(decode(&truncated).is_err());
        // Every prefix of a valid body fails cleanly or decodes.
        let body = configmap_as_go_writes_it();
        for end in 0..body.len() {
            let _ = decode(&body[..end]);
        }
        assert!(decode_watch_event(b"\x12\x03\x0a\x01k").is_err());
    }

    /// The message a fixture file is named after (`apps.v1.Deployment.pb`, `core.v1.Pod.pb`):
    /// (apiVersion, kind, message).
    fn fixture_type(path: &std::path::Path) -> Option<(String, String, u32)> {
        let stem = path.file_stem()?.to_str()?;
        let (rest, kind) = stem.rsplit_once('.')?;
        let (group, version) = rest.rsplit_once('.')?;
        let api_version = if group == "core" {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        let message = table().ok()?.kind(&api_version, kind)?;
        Some((api_version, kind.to_owned(), message))
    }

    /// Golden test over upstream's fixture pairs, reference data kept outside the repository
    /// (`../shared/protobuf/fixtures` beside the checkout, where CI lays it out): decoding each
    /// `.pb` gives its `.json`, and encoding the `.json` gives the `.pb`'s bytes. Every kind the
    /// API server serves (every kind with a schema in [`crate::openapi`]) must pass both ways;
    /// the others are counted. Without the data the test fails in CI (`CI` set), where the
    /// data must be there, and elsewhere prints a SKIPPED line naming the missing path (uncaptured).
    #[test]
    fn upstream_fixtures_decode_to_their_json_and_encode_to_their_bytes() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/protobuf/fixtures");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            let in_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
            assert!(
                !in_ci,
                "CI is set but the protobuf fixtures are missing: {}",
                dir.display()
            );
            // Straight to stderr, past the test harness's capture: a skip must be seen.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr().lock(),
                "SKIPPED upstream_fixtures_decode_to_their_json_and_encode_to_their_bytes: \
                 no protobuf fixtures at {} (reference data outside the repository); \
                 nothing was checked",
                dir.display()
            );
            return;
        };
        // The kinds the API server serves are those with an OpenAPI schema (the apiserver's
        // own tests check that each has one), and their lists.
        let mut served = std::collections::HashSet::new();
        for (group, version, kind) in crate::openapi::SCHEMAS.kinds() {
            let group_version = if group.is_empty() {
                version.to_owned()
            } else {
                format!("{group}/{version}")
            };
            served.insert((group_version.clone(), kind.to_owned()));
            served.insert((group_version, format!("{kind}List")));
        }
        let mut paths: Vec<_> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "pb"))
            .collect();
        paths.sort();
        let (mut decoded, mut encoded, mut served_seen) = (0, 0, 0);
        let mut failures = Vec::new();
        for pb in &paths {
            let bytes = std::fs::read(pb).expect("read the fixture");
            let expected: Value = serde_json::from_slice(
                &std::fs::read(pb.with_extension("json")).expect("its JSON pair"),
            )
            .expect("JSON");
            let name = pb
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let Some((api_version, kind, message)) = fixture_type(pb) else {
                failures.push((name, false, "no message for the file name".to_owned()));
                continue;
            };
            let is_served = served.contains(&(api_version.clone(), kind.clone()));
            served_seen += usize::from(is_served);
            match decode_as(&bytes, Some(message)) {
                Ok(actual) if actual == expected => decoded += 1,
                Ok(actual) => failures.push((
                    name.clone(),
                    is_served,
                    format!("decode: {}", first_difference(&expected, &actual, "")),
                )),
                Err(err) => failures.push((name.clone(), is_served, format!("decode: {err}"))),
            }
            // The envelope's type: the JSON's (WatchEvent and a few others carry none).
            let text = |field: &str| expected.get(field).and_then(Value::as_str).unwrap_or("");
            // The same bytes whatever the order of the JSON's keys (every object's reversed:
            // fields and map entries written by number and key, not as they come), except in
            // embedded JSON (RawExtension), written as the text it is.
            let reversed = encode_as(
                message,
                text("apiVersion"),
                text("kind"),
                &reversed(&expected),
            );
            let same_when_reversed = match &reversed {
                Ok(other) if *other == bytes => true,
                Ok(other) => {
                    EMBEDDED_JSON.contains(&kind.as_str())
                        && decode_as(other, Some(message)).as_ref() == Ok(&expected)
                }
                Err(_) => false,
            };
            match encode_as(message, text("apiVersion"), text("kind"), &expected) {
                Ok(actual) if actual == bytes && !same_when_reversed => failures.push((
                    name,
                    is_served,
                    "encode: keys in reverse order give other bytes".to_owned(),
                )),
                Ok(actual) if actual == bytes => encoded += 1,
                Ok(actual) => failures.push((
                    name,
                    is_served,
                    format!("encode: {}", first_byte_difference(&bytes, &actual)),
                )),
                Err(err) => failures.push((name, is_served, format!("encode: {err}"))),
            }
        }
        eprintln!(
            "protobuf fixtures: {decoded} of {} decode to their JSON, {encoded} encode to their \
             bytes; {served_seen} are kinds the API server serves",
            paths.len()
        );
        for (name, _, why) in &failures {
            eprintln!("  {name}: {why}");
        }
        let served_failures: Vec<_> = failures.iter().filter(|(_, s, _)| *s).collect();
        assert!(
            served_failures.is_empty(),
            "served kinds fail: {served_failures:#?}"
        );
        assert!(
            served_seen >= 38,
            "only {served_seen} served kinds have fixtures"
        );
        // Floors from the 1.32.9 fixtures; the rest are kinds not served here whose JSON
        // names this build does not know (no OpenAPI schema generated for them).
        assert!(decoded >= 149, "only {decoded} decoded");
        assert!(encoded >= 149, "only {encoded} encoded");
    }

    /// The fixtures' kinds with embedded JSON (`RawExtension`).
    const EMBEDDED_JSON: &[&str] = &[
        "AdmissionReview",
        "ConversionReview",
        "ControllerRevision",
        "WatchEvent",
    ];

    /// `value` with the keys of every object in reverse order.
    fn reversed(value: &Value) -> Value {
        match value {
            Value::Object(object) => Value::Object(
                object
                    .iter()
                    .rev()
                    .map(|(key, value)| (key.clone(), reversed(value)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }

    fn first_byte_difference(expected: &[u8], actual: &[u8]) -> String {
        let at = expected
            .iter()
            .zip(actual)
            .position(|(a, b)| a != b)
            .unwrap_or(expected.len().min(actual.len()));
        let around = |bytes: &[u8]| {
            let from = at.saturating_sub(8);
            format!("{:02x?}", &bytes[from..bytes.len().min(at + 16)])
        };
        format!(
            "lengths {} vs {}, first difference at byte {at}: expected {} got {}",
            expected.len(),
            actual.len(),
            around(expected),
            around(actual)
        )
    }

    fn first_difference(expected: &Value, actual: &Value, path: &str) -> String {
        match (expected, actual) {
            (Value::Object(e), Value::Object(a)) => {
                for (key, value) in e {
                    match a.get(key) {
                        Some(other) if other == value => {}
                        Some(other) => {
                            return first_difference(value, other, &format!("{path}.{key}"));
                        }
                        None => return format!("{path}.{key} missing (expected {value})"),
                    }
                }
                for key in a.keys() {
                    if !e.contains_key(key) {
                        return format!("{path}.{key} unexpected ({})", a[key]);
                    }
                }
                format!("{path}: equal?")
            }
            (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
                for (i, (x, y)) in e.iter().zip(a).enumerate() {
                    if x != y {
                        return first_difference(x, y, &format!("{path}[{i}]"));
                    }
                }
                format!("{path}: equal?")
            }
            _ => format!("{path}: expected {expected}, got {actual}"),
        }
    }
}
