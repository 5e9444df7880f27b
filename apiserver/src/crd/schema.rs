//! A custom resource's structural schema at work (docs/api-behaviour.md#serving-custom-resources): pruning of unknown fields, defaults,
//! and validation with the real server's messages (kube-openapi's validator as the
//! apiextensions-apiserver reports it: `spec.size: Invalid value: "x": spec.size in body must
//! be of type integer: "x"`, `spec.size: Required value`, ...).

use serde_json::{Map, Value};

use crate::meta::FieldError;
use crate::ratchet;

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// `additionalProperties` when it is a schema (`true` means any, like preserve).
fn additional(schema: &Value) -> Option<&Value> {
    schema.get("additionalProperties").filter(|v| v.is_object())
}

fn keeps_unknown(schema: &Value) -> bool {
    flag(schema, "x-kubernetes-preserve-unknown-fields")
        || schema.get("additionalProperties") == Some(&Value::Bool(true))
}

/// Removes the fields the schema does not declare (outside `x-kubernetes-preserve-unknown-
/// fields`), recording their paths (`spec.foo`, `spec.items[0].bar`). The root's `apiVersion`,
/// `kind` and `metadata` are the object's own and never pruned here.
pub(crate) fn prune(schema: &Value, object: &mut Map<String, Value>, unknown: &mut Vec<String>) {
    for (key, value) in object.iter_mut() {
        if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(child) = properties(schema).and_then(|p| p.get(key)) {
            prune_value(child, value, key.clone(), unknown);
        }
    }
    if keeps_unknown(schema) {
        return;
    }
    let declared = |key: &str| {
        matches!(key, "apiVersion" | "kind" | "metadata")
            || properties(schema).is_some_and(|p| p.contains_key(key))
    };
    let dropped: Vec<String> = object.keys().filter(|k| !declared(k)).cloned().collect();
    for key in dropped {
        object.shift_remove(&key);
        unknown.push(key);
    }
}

fn prune_value(schema: &Value, value: &mut Value, path: String, unknown: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(item_schema) = additional(schema) {
                for (key, child) in map.iter_mut() {
                    prune_value(item_schema, child, format!("{path}.{key}"), unknown);
                }
                return;
            }
            for (key, child) in map.iter_mut() {
                if let Some(child_schema) = properties(schema).and_then(|p| p.get(key)) {
                    prune_value(child_schema, child, format!("{path}.{key}"), unknown);
                }
            }
            if keeps_unknown(schema) {
                return;
            }
            let embedded = flag(schema, "x-kubernetes-embedded-resource");
            let dropped: Vec<String> = map
                .keys()
                .filter(|k| {
                    !(properties(schema).is_some_and(|p| p.contains_key(k.as_str()))
                        || embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
                })
                .cloned()
                .collect();
            for key in dropped {
                map.shift_remove(&key);
                unknown.push(format!("{path}.{key}"));
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter_mut().enumerate() {
                    prune_value(item_schema, item, format!("{path}[{index}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

/// Applies the schema's `default`s: a missing property with a default gets it (defaults
/// inside a default are applied too), recursively through objects and arrays.
pub(crate) fn default(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(props) = properties(schema) {
                for (key, child_schema) in props {
                    if !map.contains_key(key)
                        && let Some(default) = child_schema.get("default")
                    {
                        map.insert(key.clone(), default.clone());
                    }
                    if let Some(child) = map.get_mut(key) {
                        default_in(child_schema, child);
                    }
                }
            }
            if let Some(item_schema) = additional(schema) {
                for child in map.values_mut() {
                    default_in(item_schema, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    default_in(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

fn default_in(schema: &Value, value: &mut Value) {
    if !value.is_null() {
        default(schema, value);
    }
}

/// Every way `object` breaks `schema` (the root: an object of the custom resource). On an
/// update, `old` is the stored object, and errors in parts the update left unchanged are
/// dropped (`ratchet`).
pub(crate) fn validate(
    schema: &Value,
    object: &Map<String, Value>,
    old: Option<&Map<String, Value>>,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(props) = properties(schema) else {
        return errors;
    };
    check_required(schema, object, "", &mut errors);
    for (key, child) in object {
        if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(child_schema) = props.get(key) {
            let old_child = old.and_then(|o| o.get(key));
            check(child_schema, child, old_child, key, &mut errors);
        }
    }
    if !errors.is_empty() && old.is_some_and(|o| ratchet::unchanged_map(schema, o, object)) {
        errors.clear();
    }
    // A stable order (upstream's walk follows Go map order).
    errors.sort_by(|a, b| a.field.cmp(&b.field));
    errors
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn check_required(
    schema: &Value,
    map: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !map.contains_key(required) {
            errors.push(FieldError {
                field: join(path, required),
                reason: "FieldValueRequired",
                detail: "Required value".to_owned(),
            });
        }
    }
}

/// Go's `%#v`-like rendering of a value in `Invalid value:` texts.
fn shown(value: &Value) -> String {
    match value {
        Value::Null => "\"null\"".to_owned(),
        Value::String(s) => format!("{s:?}"),
        Value::Object(_) => "\"object\"".to_owned(),
        Value::Array(_) => "\"array\"".to_owned(),
        other => other.to_string(),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn invalid(path: &str, value: &Value, message: String) -> FieldError {
    FieldError {
        field: path.to_owned(),
        reason: "FieldValueInvalid",
        detail: format!("Invalid value: {}: {message}", shown(value)),
    }
}

/// Checks `value` under `schema`; `old` is its correlated old value on an update (`None`:
/// a create, or a node not correlated with the old object). The errors at or under a
/// correlated node that is unchanged are dropped: the update did not cause them.
fn check(
    schema: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let start = errors.len();
    check_node(schema, value, old, path, errors);
    if errors.len() > start && old.is_some_and(|o| ratchet::unchanged(schema, o, value)) {
        errors.truncate(start);
    }
}

fn check_node(
    schema: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if value.is_null() {
        if flag(schema, "nullable") || schema.get("type").is_none() {
            return;
        }
        let expected = schema.get("type").and_then(Value::as_str).unwrap_or("");
        errors.push(invalid(
            path,
            value,
            format!("{path} in body must be of type {expected}: \"null\""),
        ));
        return;
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        if !(value.is_string() || type_name(value) == "integer") {
            errors.push(invalid(
                path,
                value,
                format!(
                    "{path} in body must be of type integer,string: \"{}\"",
                    type_name(value)
                ),
            ));
            return;
        }
    } else if let Some(expected) = schema.get("type").and_then(Value::as_str) {
        let actual = type_name(value);
        let fits = actual == expected
            || (expected == "number" && actual == "integer")
            || (expected == "integer"
                && value
                    .as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && actual == "number"));
        if !fits {
            errors.push(invalid(
                path,
                value,
                format!("{path} in body must be of type {expected}: \"{actual}\""),
            ));
            return;
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        let supported: Vec<String> = options.iter().map(ToString::to_string).collect();
        errors.push(FieldError {
            field: path.to_owned(),
            reason: "FieldValueNotSupported",
            detail: format!(
                "Unsupported value: {}: supported values: {}",
                value,
                supported.join(", ")
            ),
        });
    }
    match value {
        Value::String(text) => check_string(schema, value, text, path, errors),
        Value::Number(number) => {
            let n = number.as_f64().unwrap_or(0.0);
            check_number(schema, value, n, path, errors);
        }
        Value::Array(items) => {
            let count = items.len() as u64;
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && count < min
            {
                errors.push(invalid(
                    path,
                    value,
                    format!("{path} in body should have at least {min} items"),
                ));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && count > max
            {
                errors.push(FieldError {
                    field: path.to_owned(),
                    reason: "FieldValueTooMany",
                    detail: format!("Too many: {count}: must have at most {max} items"),
                });
            }
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    let old_item = ratchet::correlated_item(schema, old, item);
                    check(
                        item_schema,
                        item,
                        old_item,
                        &format!("{path}[{index}]"),
                        errors,
                    );
                }
            }
        }
        Value::Object(map) => {
            check_required(schema, map, path, errors);
            let count = map.len() as u64;
            if let Some(min) = schema.get("minProperties").and_then(Value::as_u64)
                && count < min
            {
                errors.push(invalid(
                    path,
                    value,
                    format!("{path} in body should have at least {min} properties"),
                ));
            }
            if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
                && count > max
            {
                errors.push(FieldError {
                    field: path.to_owned(),
                    reason: "FieldValueTooMany",
                    detail: format!("Too many: {count}: must have at most {max} items"),
                });
            }
            for (key, child) in map {
                let child_path = join(path, key);
                let old_child = old.and_then(|o| o.get(key));
                if let Some(child_schema) = properties(schema).and_then(|p| p.get(key)) {
                    check(child_schema, child, old_child, &child_path, errors);
                } else if let Some(item_schema) = additional(schema) {
                    check(item_schema, child, old_child, &child_path, errors);
                }
            }
        }
        _ => {}
    }
}

fn check_string(
    schema: &Value,
    value: &Value,
    text: &str,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let length = text.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && length < min
    {
        errors.push(invalid(
            path,
            value,
            format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && length > max
    {
        errors.push(FieldError {
            field: path.to_owned(),
            reason: "FieldValueTooLong",
            detail: format!("Too long: may not be more than {max} bytes"),
        });
    }
    // kube-openapi's strfmt formats (`errors.InvalidType`: "must be of type uuid").
    if let Some(format) = schema.get("format").and_then(Value::as_str)
        && kubemock_cel::formats::validate_string_format(format, text) == Some(false)
    {
        errors.push(invalid(
            path,
            value,
            format!("{path} in body must be of type {format}: {:?}", text),
        ));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        match regex::Regex::new(pattern) {
            Ok(re) if !re.is_match(text) => errors.push(invalid(
                path,
                value,
                format!("{path} in body should match '{pattern}'"),
            )),
            _ => {}
        }
    }
}

fn check_number(schema: &Value, value: &Value, n: f64, path: &str, errors: &mut Vec<FieldError>) {
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        let exclusive = flag(schema, "exclusiveMinimum");
        if exclusive && n <= min {
            errors.push(invalid(
                path,
                value,
                format!("{path} in body should be greater than {}", number(min)),
            ));
        } else if n < min {
            errors.push(invalid(
                path,
                value,
                format!(
                    "{path} in body should be greater than or equal to {}",
                    number(min)
                ),
            ));
        }
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
        let exclusive = flag(schema, "exclusiveMaximum");
        if exclusive && n >= max {
            errors.push(invalid(
                path,
                value,
                format!("{path} in body should be less than {}", number(max)),
            ));
        } else if n > max {
            errors.push(invalid(
                path,
                value,
                format!(
                    "{path} in body should be less than or equal to {}",
                    number(max)
                ),
            ));
        }
    }
    if let Some(multiple) = schema.get("multipleOf").and_then(Value::as_f64)
        && multiple != 0.0
        && (n / multiple).fract() != 0.0
    {
        errors.push(invalid(
            path,
            value,
            format!(
                "{path} in body should be a multiple of {}",
                number(multiple)
            ),
        ));
    }
}

/// A bound as Go prints it (`1`, `1.5`).
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
                "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                "port": {"x-kubernetes-int-or-string": true},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "opt": {"type": "string", "nullable": true}
            }},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }})
    }

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    #[test]
    fn unknown_fields_are_pruned_outside_preserved_subtrees() {
        let mut o = object(
            json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"},
            "spec": {"size": 2, "bogus": 1, "free": {"anything": {"deep": 1}},
                     "labels": {"a": "b"}, "tags": ["x"]},
            "extra": true}),
        );
        let mut unknown = Vec::new();
        prune(&schema(), &mut o, &mut unknown);
        assert_eq!(unknown, ["spec.bogus", "extra"]);
        assert_eq!(o["spec"]["free"]["anything"]["deep"], 1);
        assert_eq!(o["spec"]["labels"]["a"], "b");
        assert_eq!(o["metadata"]["name"], "w");
    }

    #[test]
    fn defaults_fill_missing_fields() {
        let mut value = json!({"spec": {"size": 3}});
        default(&schema(), &mut value);
        assert_eq!(value["spec"], json!({"size": 3, "color": "red"}));
    }

    #[test]
    fn violations_are_reported_with_the_real_wording() {
        let errors = validate(
            &schema(),
            &object(
                json!({"spec": {"size": "big", "color": "blue", "name": "ABCDEFG",
                "port": true, "tags": ["a", "b", "c"], "opt": null}}),
            ),
            None,
        );
        let texts: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect();
        assert_eq!(
            texts,
            [
                "spec.color: Unsupported value: \"blue\": supported values: \"red\", \"green\"",
                "spec.name: Too long: may not be more than 5 bytes",
                "spec.name: Invalid value: \"ABCDEFG\": spec.name in body should match '^[a-z]+$'",
                "spec.port: Invalid value: true: spec.port in body must be of type integer,string: \"boolean\"",
                "spec.size: Invalid value: \"big\": spec.size in body must be of type integer: \"string\"",
                "spec.tags: Too many: 3: must have at most 2 items",
            ]
        );
        let missing = validate(&schema(), &object(json!({"spec": {}})), None);
        assert_eq!(missing[0].field, "spec.size");
        assert_eq!(missing[0].detail, "Required value");
        let small = validate(&schema(), &object(json!({"spec": {"size": 0}})), None);
        assert_eq!(
            small[0].detail,
            "Invalid value: 0: spec.size in body should be greater than or equal to 1"
        );
    }

    /// Ratcheting (`ratchet`): errors in what an update left as it was do not refuse it;
    /// errors in what it changed do, and so does anything on a create.
    #[test]
    fn errors_in_unchanged_parts_ratchet_on_update() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 3},
                "size": {"type": "integer", "maximum": 10},
                "args": {"type": "array", "items": {"type": "string", "maxLength": 2}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {
                        "name": {"type": "string"},
                        "port": {"type": "integer", "maximum": 100}}}}}}}});
        let stored = object(json!({"spec": {"name": "toolong", "size": 1,
            "args": ["long"], "ports": [{"name": "a", "port": 1000}, {"name": "b", "port": 1}]}}));
        let fields = |errors: Vec<FieldError>| -> Vec<String> {
            errors.into_iter().map(|e| e.field).collect()
        };
        // A create of the same object: every error.
        assert_eq!(
            fields(validate(&schema, &stored, None)),
            ["spec.args[0]", "spec.name", "spec.ports[0].port"]
        );
        // An update changing only spec.size (valid): nothing refused.
        let mut update = stored.clone();
        update["spec"]["size"] = json!(2);
        assert!(validate(&schema, &update, Some(&stored)).is_empty());
        // Reordering the map list keeps its items correlated and unchanged.
        update["spec"]["ports"] = json!([{"name": "b", "port": 1}, {"name": "a", "port": 1000}]);
        assert!(validate(&schema, &update, Some(&stored)).is_empty());
        // Changing the bad field to another bad value: refused.
        update["spec"]["name"] = json!("stilltoolong");
        assert_eq!(
            fields(validate(&schema, &update, Some(&stored))),
            ["spec.name"]
        );
        // An atomic list's items are not correlated: adding an item makes the list changed,
        // so its old bad item is reported again.
        let mut grown = stored.clone();
        grown["spec"]["args"] = json!(["long", "ok"]);
        assert_eq!(
            fields(validate(&schema, &grown, Some(&stored))),
            ["spec.args[0]"]
        );
        // A changed map-list item with a bad old value: refused at that item only.
        let mut port = stored.clone();
        port["spec"]["ports"] = json!([{"name": "a", "port": 2000}, {"name": "b", "port": 1}]);
        assert_eq!(
            fields(validate(&schema, &port, Some(&stored))),
            ["spec.ports[0].port"]
        );
    }
}
