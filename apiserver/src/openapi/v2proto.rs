//! `/openapi/v2` in protobuf (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`):
//! the Swagger 2.0 document as gnostic's `openapi.v2.Document` message
//! (`github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto`), which kube-openapi serves and
//! kubectl 1.27 and 1.28 ask for before `apply` and `explain`.
//!
//! gnostic's messages are not the JSON's shape: maps are lists of `Named*` pairs in document
//! order, a schema's `type` and `items` are lists, parameters are a `oneof` tree (body or
//! header/form/query/path), and values of any type (`default`, `enum`, `example`, vendor
//! extensions) are `Any` messages holding their YAML (JSON, being YAML, is written as it is;
//! kube-openapi reads them with a YAML decoder). Fields appear in field-number order, proto3
//! zero values left out, as Go's marshaller writes them. Members the messages do not have
//! (`nullable`, from OpenAPI 3 schemas) are left out, as gnostic's compiler leaves unknown
//! members out.

use serde_json::{Map, Value};

use kubemock_apimachinery::protobuf::wire::{Wire, Writer};

/// One message being written.
struct Message(Writer);

impl Message {
    fn new() -> Self {
        Message(Writer::with_capacity(64))
    }

    fn into_bytes(self) -> Vec<u8> {
        self.0.buf
    }

    /// A `string` field (empty ones are proto3 defaults: left out).
    fn string(&mut self, number: u32, value: Option<&Value>) {
        if let Some(text) = value.and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.0.bytes_field(number, text.as_bytes());
        }
    }

    /// A `repeated string` field.
    fn strings(&mut self, number: u32, value: Option<&Value>) {
        for text in value.and_then(Value::as_array).into_iter().flatten() {
            if let Some(text) = text.as_str() {
                self.0.bytes_field(number, text.as_bytes());
            }
        }
    }

    /// A `bool` field.
    fn boolean(&mut self, number: u32, value: Option<&Value>) {
        if value.and_then(Value::as_bool) == Some(true) {
            self.0.varint_field(number, 1);
        }
    }

    /// An `int64` field.
    fn int64(&mut self, number: u32, value: Option<&Value>) {
        if let Some(n) = value.and_then(Value::as_i64).filter(|n| *n != 0) {
            // Two's complement, as protobuf varints carry negative int64s.
            self.0.varint_field(number, n as u64);
        }
    }

    /// A `double` field.
    fn double(&mut self, number: u32, value: Option<&Value>) {
        if let Some(n) = value.and_then(Value::as_f64).filter(|n| *n != 0.0) {
            self.0.key(number, Wire::Fixed64);
            self.0.buf.extend_from_slice(&n.to_bits().to_le_bytes());
        }
    }

    /// A message field.
    fn message(&mut self, number: u32, bytes: &[u8]) {
        self.0.bytes_field(number, bytes);
    }
}

/// The document, encoded.
pub(crate) fn encode(document: &Value) -> Vec<u8> {
    let mut out = Message::new();
    out.string(1, document.get("swagger"));
    if let Some(info) = document.get("info") {
        let mut message = Message::new();
        message.string(1, info.get("title"));
        message.string(2, info.get("version"));
        message.string(3, info.get("description"));
        vendor_extensions(&mut message, 7, info);
        out.message(2, &message.into_bytes());
    }
    out.string(3, document.get("host"));
    out.string(4, document.get("basePath"));
    out.strings(5, document.get("schemes"));
    out.strings(6, document.get("consumes"));
    out.strings(7, document.get("produces"));
    if let Some(paths) = document.get("paths").and_then(Value::as_object) {
        let mut message = Message::new();
        vendor_extensions(&mut message, 1, &Value::Object(paths.clone()));
        for (path, item) in paths {
            if path.starts_with("x-") {
                continue;
            }
            message.message(2, &named(path, &path_item(item)));
        }
        out.message(8, &message.into_bytes());
    }
    if let Some(definitions) = document.get("definitions").and_then(Value::as_object) {
        let mut message = Message::new();
        for (name, schema_value) in definitions {
            message.message(1, &named(name, &schema(schema_value)));
        }
        out.message(9, &message.into_bytes());
    }
    vendor_extensions(&mut out, 16, document);
    out.into_bytes()
}

/// A `Named*` pair: `name = 1`, `value = 2`.
fn named(name: &str, value: &[u8]) -> Vec<u8> {
    let mut message = Message::new();
    message.0.bytes_field(1, name.as_bytes());
    message.message(2, value);
    message.into_bytes()
}

/// An `Any` holding `value` as YAML (its JSON text).
fn any(value: &Value) -> Vec<u8> {
    let mut message = Message::new();
    let text = value.to_string();
    message.0.bytes_field(2, text.as_bytes());
    message.into_bytes()
}

/// The `x-*` members of `object` as `repeated NamedAny` field `number`.
fn vendor_extensions(message: &mut Message, number: u32, object: &Value) {
    for (key, value) in object.as_object().into_iter().flatten() {
        if key.starts_with("x-") {
            message.message(number, &named(key, &any(value)));
        }
    }
}

/// `PathItem`.
fn path_item(item: &Value) -> Vec<u8> {
    let mut message = Message::new();
    message.string(1, item.get("$ref"));
    for (method, number) in [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("options", 6),
        ("head", 7),
        ("patch", 8),
    ] {
        if let Some(operation_value) = item.get(method) {
            message.message(number, &operation(operation_value));
        }
    }
    for parameter in item
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        message.message(9, &parameters_item(parameter));
    }
    vendor_extensions(&mut message, 10, item);
    message.into_bytes()
}

/// `Operation`.
fn operation(operation: &Value) -> Vec<u8> {
    let mut message = Message::new();
    message.strings(1, operation.get("tags"));
    message.string(2, operation.get("summary"));
    message.string(3, operation.get("description"));
    message.string(5, operation.get("operationId"));
    message.strings(6, operation.get("produces"));
    message.strings(7, operation.get("consumes"));
    for parameter in operation
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        message.message(8, &parameters_item(parameter));
    }
    if let Some(responses) = operation.get("responses").and_then(Value::as_object) {
        let mut list = Message::new();
        for (code, response_value) in responses {
            if code.starts_with("x-") {
                continue;
            }
            // `ResponseValue`: a response (1) or a reference (2).
            let mut value = Message::new();
            if let Some(reference) = response_value.get("$ref") {
                let mut json_reference = Message::new();
                json_reference.string(1, Some(reference));
                value.message(2, &json_reference.into_bytes());
            } else {
                value.message(1, &response(response_value));
            }
            list.message(1, &named(code, &value.into_bytes()));
        }
        vendor_extensions(&mut list, 2, &Value::Object(responses.clone()));
        message.message(9, &list.into_bytes());
    }
    message.strings(10, operation.get("schemes"));
    message.boolean(11, operation.get("deprecated"));
    vendor_extensions(&mut message, 13, operation);
    message.into_bytes()
}

/// `Response`.
fn response(response: &Value) -> Vec<u8> {
    let mut message = Message::new();
    message.string(1, response.get("description"));
    if let Some(schema_value) = response.get("schema") {
        // `SchemaItem`: a schema (1) or a file schema (2).
        let mut item = Message::new();
        item.message(1, &schema(schema_value));
        message.message(2, &item.into_bytes());
    }
    vendor_extensions(&mut message, 5, response);
    message.into_bytes()
}

/// `ParametersItem`: a parameter (1) or a reference (2).
fn parameters_item(parameter: &Value) -> Vec<u8> {
    let mut item = Message::new();
    if let Some(reference) = parameter.get("$ref") {
        let mut json_reference = Message::new();
        json_reference.string(1, Some(reference));
        item.message(2, &json_reference.into_bytes());
        return item.into_bytes();
    }
    // `Parameter`: a body parameter (1) or another (2).
    let mut wrapper = Message::new();
    let place = parameter.get("in").and_then(Value::as_str).unwrap_or("");
    if place == "body" {
        let mut body = Message::new();
        body.string(1, parameter.get("description"));
        body.string(2, parameter.get("name"));
        body.string(3, parameter.get("in"));
        body.boolean(4, parameter.get("required"));
        if let Some(schema_value) = parameter.get("schema") {
            body.message(5, &schema(schema_value));
        }
        vendor_extensions(&mut body, 6, parameter);
        wrapper.message(1, &body.into_bytes());
    } else {
        // `NonBodyParameter`: header (1), form data (2), query (3) or path (4); each sub-schema
        // has `required, in, description, name` first, then (form and query only)
        // `allow_empty_value`, then the primitive's fields.
        let (choice, allow_empty) = match place {
            "header" => (1, false),
            "formData" => (2, true),
            "path" => (4, false),
            _ => (3, true),
        };
        let mut sub = Message::new();
        sub.boolean(1, parameter.get("required"));
        sub.string(2, parameter.get("in"));
        sub.string(3, parameter.get("description"));
        sub.string(4, parameter.get("name"));
        let first = if allow_empty {
            sub.boolean(5, parameter.get("allowEmptyValue"));
            6
        } else {
            5
        };
        primitive_fields(&mut sub, first, parameter);
        let mut non_body = Message::new();
        non_body.message(choice, &sub.into_bytes());
        wrapper.message(2, &non_body.into_bytes());
    }
    item.message(1, &wrapper.into_bytes());
    item.into_bytes()
}

/// The fields a primitive parameter shares with `PrimitivesItems`, numbered from `first`:
/// type, format, items, collectionFormat, default, maximum, exclusiveMaximum, minimum,
/// exclusiveMinimum, maxLength, minLength, pattern, maxItems, minItems, uniqueItems, enum,
/// multipleOf, then the vendor extensions.
fn primitive_fields(message: &mut Message, first: u32, value: &Value) {
    message.string(first, value.get("type"));
    message.string(first + 1, value.get("format"));
    if let Some(items) = value.get("items") {
        let mut nested = Message::new();
        primitive_fields(&mut nested, 1, items);
        message.message(first + 2, &nested.into_bytes());
    }
    message.string(first + 3, value.get("collectionFormat"));
    if let Some(default) = value.get("default") {
        message.message(first + 4, &any(default));
    }
    message.double(first + 5, value.get("maximum"));
    message.boolean(first + 6, value.get("exclusiveMaximum"));
    message.double(first + 7, value.get("minimum"));
    message.boolean(first + 8, value.get("exclusiveMinimum"));
    message.int64(first + 9, value.get("maxLength"));
    message.int64(first + 10, value.get("minLength"));
    message.string(first + 11, value.get("pattern"));
    message.int64(first + 12, value.get("maxItems"));
    message.int64(first + 13, value.get("minItems"));
    message.boolean(first + 14, value.get("uniqueItems"));
    for option in value
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        message.message(first + 15, &any(option));
    }
    message.double(first + 16, value.get("multipleOf"));
    vendor_extensions(message, first + 17, value);
}

/// `Schema`.
fn schema(schema: &Value) -> Vec<u8> {
    let mut message = Message::new();
    message.string(1, schema.get("$ref"));
    message.string(2, schema.get("format"));
    message.string(3, schema.get("title"));
    message.string(4, schema.get("description"));
    if let Some(default) = schema.get("default") {
        message.message(5, &any(default));
    }
    message.double(6, schema.get("multipleOf"));
    message.double(7, schema.get("maximum"));
    message.boolean(8, schema.get("exclusiveMaximum"));
    message.double(9, schema.get("minimum"));
    message.boolean(10, schema.get("exclusiveMinimum"));
    message.int64(11, schema.get("maxLength"));
    message.int64(12, schema.get("minLength"));
    message.string(13, schema.get("pattern"));
    message.int64(14, schema.get("maxItems"));
    message.int64(15, schema.get("minItems"));
    message.boolean(16, schema.get("uniqueItems"));
    message.int64(17, schema.get("maxProperties"));
    message.int64(18, schema.get("minProperties"));
    message.strings(19, schema.get("required"));
    for option in schema
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        message.message(20, &any(option));
    }
    match schema.get("additionalProperties") {
        Some(Value::Bool(allowed)) => {
            let mut item = Message::new();
            item.boolean(2, Some(&Value::Bool(*allowed)));
            if !allowed {
                // `false` is the oneof's value, and must be written although it is a zero.
                item.0.varint_field(2, 0);
            }
            message.message(21, &item.into_bytes());
        }
        Some(nested @ Value::Object(_)) => {
            let mut item = Message::new();
            item.message(1, &self::schema(nested));
            message.message(21, &item.into_bytes());
        }
        _ => {}
    }
    match schema.get("type") {
        Some(Value::String(kind)) => {
            let mut item = Message::new();
            item.0.bytes_field(1, kind.as_bytes());
            message.message(22, &item.into_bytes());
        }
        Some(kinds @ Value::Array(_)) => {
            let mut item = Message::new();
            item.strings(1, Some(kinds));
            message.message(22, &item.into_bytes());
        }
        _ => {}
    }
    match schema.get("items") {
        Some(nested @ Value::Object(_)) => {
            let mut item = Message::new();
            item.message(1, &self::schema(nested));
            message.message(23, &item.into_bytes());
        }
        Some(Value::Array(list)) => {
            let mut item = Message::new();
            for nested in list {
                item.message(1, &self::schema(nested));
            }
            message.message(23, &item.into_bytes());
        }
        _ => {}
    }
    for nested in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        message.message(24, &self::schema(nested));
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        message.message(25, &properties_message(properties));
    }
    message.string(26, schema.get("discriminator"));
    message.boolean(27, schema.get("readOnly"));
    if let Some(example) = schema.get("example") {
        message.message(30, &any(example));
    }
    vendor_extensions(&mut message, 31, schema);
    message.into_bytes()
}

/// `Properties`: the named schemas in document order.
fn properties_message(properties: &Map<String, Value>) -> Vec<u8> {
    let mut message = Message::new();
    for (name, nested) in properties {
        message.message(1, &named(name, &schema(nested)));
    }
    message.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubemock_apimachinery::protobuf::wire::Reader;
    use serde_json::json;

    /// The fields of a message: (number, bytes of a length-delimited field, or the varint).
    fn fields(bytes: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let mut reader = Reader::new(bytes);
        let mut out = Vec::new();
        while let Some((number, wire)) = reader.key().unwrap() {
            match wire {
                Wire::Len => out.push((number, reader.bytes().unwrap().to_vec())),
                Wire::Varint => out.push((number, reader.varint().unwrap().to_le_bytes().to_vec())),
                Wire::Fixed64 => out.push((number, reader.fixed64().unwrap().to_vec())),
                Wire::Fixed32 => panic!("no float fields in these messages"),
            }
        }
        out
    }

    fn field(bytes: &[u8], number: u32) -> Vec<u8> {
        fields(bytes)
            .into_iter()
            .find(|(n, _)| *n == number)
            .map(|(_, b)| b)
            .unwrap_or_else(|| panic!("no field {number}"))
    }

    #[test]
    fn a_definition_is_a_named_schema_with_its_kind_as_a_yaml_extension() {
        let document = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": {"/api/v1/pods": {"get": {"operationId": "listCoreV1PodForAllNamespaces",
                "parameters": [{"name": "limit", "in": "query", "type": "integer",
                                "uniqueItems": true}],
                "responses": {"200": {"description": "OK"}}}}},
            "definitions": {"io.k8s.api.core.v1.Pod": {
                "type": "object", "required": ["spec"],
                "properties": {"spec": {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec"}},
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pod", "version": "v1"}]}},
        });
        let bytes = encode(&document);
        assert_eq!(field(&bytes, 1), b"2.0");
        let info = field(&bytes, 2);
        assert_eq!(field(&info, 1), b"Kubernetes");
        let definitions = field(&bytes, 9);
        let pod = field(&definitions, 1);
        assert_eq!(field(&pod, 1), b"io.k8s.api.core.v1.Pod");
        let schema = field(&pod, 2);
        assert_eq!(field(&field(&schema, 22), 1), b"object");
        assert_eq!(field(&schema, 19), b"spec");
        let property = field(&field(&schema, 25), 1);
        assert_eq!(field(&property, 1), b"spec");
        assert_eq!(
            field(&field(&property, 2), 1),
            b"#/definitions/io.k8s.api.core.v1.PodSpec"
        );
        let extension = field(&schema, 31);
        assert_eq!(field(&extension, 1), b"x-kubernetes-group-version-kind");
        let yaml = field(&field(&extension, 2), 2);
        let value: Value = serde_yaml_ng::from_slice(&yaml).unwrap();
        assert_eq!(
            value,
            json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
        let paths = field(&bytes, 8);
        let named_path = field(&paths, 2);
        assert_eq!(field(&named_path, 1), b"/api/v1/pods");
        let get = field(&field(&named_path, 2), 2);
        assert_eq!(field(&get, 5), b"listCoreV1PodForAllNamespaces");
        let query = field(&field(&field(&field(&get, 8), 1), 2), 3);
        assert_eq!(field(&query, 2), b"query");
        assert_eq!(field(&query, 4), b"limit");
        assert_eq!(field(&query, 6), b"integer");
    }
}
