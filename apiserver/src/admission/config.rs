//! ConfigMaps and Secrets: base64 data checked as the real decoder does (a 400), a Secret's
//! `stringData` merged into `data` and never stored, its type defaulted to Opaque and checked
//! against its required keys, keys validated as config keys, the 1 MiB limit, and the
//! `immutable` flag (and a Secret's type) holding on update.

use base64::Engine;
use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value, json};

use super::fields::{forbidden, go_str, immutable, invalid, required, too_long};
use crate::meta::FieldError;
use crate::object::Object;
use crate::status::{ApiError, ApiResult};

/// Go's `base64.StdEncoding`, which `[]byte` fields decode with: padded, and (not being
/// `Strict`) tolerant of non-zero trailing bits.
const STANDARD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// `corevalidation.MaxSecretSize`, also the ConfigMap limit.
const MAX_DATA_BYTES: usize = 1024 * 1024;
/// Config keys may be no longer than a DNS-1123 subdomain.
const MAX_KEY_LENGTH: usize = 253;

/// Checks the base64 of a Secret's `data` (or a ConfigMap's `binaryData`) as JSON decoding
/// into `[]byte` does, and merges a Secret's `stringData` into `data` (its values win).
pub(super) fn decode(kind: &str, object: &mut Object) -> ApiResult<()> {
    let field = if kind == "Secret" {
        "data"
    } else {
        "binaryData"
    };
    if let Some(Value::Object(data)) = object.get(field) {
        for value in data.values() {
            let text = value.as_str().unwrap_or("");
            let cleaned: String = text.chars().filter(|c| *c != '\r' && *c != '\n').collect();
            if let Err(err) = STANDARD.decode(cleaned.as_bytes()) {
                let at = match err {
                    base64::DecodeError::InvalidByte(at, _)
                    | base64::DecodeError::InvalidLastSymbol(at, _) => at,
                    base64::DecodeError::InvalidLength(at) => at,
                    base64::DecodeError::InvalidPadding => cleaned.len(),
                };
                return Err(ApiError::bad_request(format!(
                    "{kind} in version \"v1\" cannot be handled as a {kind}: illegal base64 data at input byte {at}"
                )));
            }
        }
    }
    if kind == "Secret"
        && let Some(string_data) = object.shift_remove("stringData")
    {
        let Value::Object(string_data) = string_data else {
            return Ok(());
        };
        let data = object
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        if !data.is_object() {
            *data = Value::Object(Map::new());
        }
        if let Value::Object(data) = data {
            for (key, value) in string_data {
                let text = value.as_str().unwrap_or("");
                data.insert(key, json!(STANDARD.encode(text.as_bytes())));
            }
        }
    }
    Ok(())
}

/// `SetDefaults_Secret`.
pub(super) fn default_secret(object: &mut Object) {
    super::fields::default_to(object, "type", json!("Opaque"));
}

/// `ValidateConfigMap`.
pub(super) fn validate_config_map(object: &Object, errors: &mut Vec<FieldError>) {
    let mut size = 0;
    let binary_keys: Vec<&String> = object
        .get("binaryData")
        .and_then(Value::as_object)
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    if let Some(Value::Object(data)) = object.get("data") {
        for (key, value) in data {
            key_errors("data", key, errors);
            if binary_keys.contains(&key) {
                errors.push(invalid(
                    format!("data[{key}]"),
                    go_str(key),
                    "duplicate of key present in binaryData",
                ));
            }
            size += key.len() + value.as_str().map_or(0, str::len);
        }
    }
    if let Some(Value::Object(data)) = object.get("binaryData") {
        for (key, value) in data {
            key_errors("binaryData", key, errors);
            size += key.len() + decoded_len(value);
        }
    }
    if size > MAX_DATA_BYTES {
        errors.push(too_long(
            "",
            &format!("may not be more than {MAX_DATA_BYTES} bytes"),
        ));
    }
}

/// `ValidateSecret`.
pub(super) fn validate_secret(object: &Object, errors: &mut Vec<FieldError>) {
    let data = object.get("data").and_then(Value::as_object);
    let mut size = 0;
    for (key, value) in data.into_iter().flatten() {
        key_errors("data", key, errors);
        size += decoded_len(value);
    }
    if size > MAX_DATA_BYTES {
        errors.push(too_long(
            "data",
            &format!("may not be more than {MAX_DATA_BYTES} bytes"),
        ));
    }
    let has = |key: &str| data.is_some_and(|d| d.contains_key(key));
    let non_empty = |key: &str| {
        data.and_then(|d| d.get(key))
            .is_some_and(|v| decoded_len(v) > 0)
    };
    match object.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let annotated = object
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !annotated {
                errors.push(required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" => json_key(data, ".dockercfg", errors),
        "kubernetes.io/dockerconfigjson" => json_key(data, ".dockerconfigjson", errors),
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errors.push(required("data[username]", ""));
            errors.push(required("data[password]", ""));
        }
        "kubernetes.io/ssh-auth" if !non_empty("ssh-privatekey") => {
            errors.push(required("data[ssh-privatekey]", ""));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    errors.push(required(format!("data[{key}]"), ""));
                }
            }
        }
        _ => {}
    }
}

/// A docker config key must be present and hold JSON.
fn json_key(data: Option<&Map<String, Value>>, key: &str, errors: &mut Vec<FieldError>) {
    let Some(value) = data.and_then(|d| d.get(key)) else {
        errors.push(required(format!("data[{key}]"), ""));
        return;
    };
    let bytes = STANDARD
        .decode(value.as_str().unwrap_or("").as_bytes())
        .unwrap_or_default();
    if let Err(err) = serde_json::from_slice::<Value>(&bytes) {
        errors.push(invalid(
            format!("data[{key}]"),
            "\"<secret contents redacted>\"".to_owned(),
            &err.to_string(),
        ));
    }
}

fn decoded_len(value: &Value) -> usize {
    let text = value.as_str().unwrap_or("");
    text.len() / 4 * 3 - text.bytes().rev().take_while(|b| *b == b'=').count().min(2)
}

/// `IsConfigMapKey`, reported at `field[key]`.
fn key_errors(field: &str, key: &str, errors: &mut Vec<FieldError>) {
    let at = format!("{field}[{key}]");
    if key.len() > MAX_KEY_LENGTH {
        errors.push(invalid(
            at.clone(),
            go_str(key),
            &format!("must be no more than {MAX_KEY_LENGTH} characters"),
        ));
    }
    let valid = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if !valid {
        errors.push(invalid(
            at.clone(),
            go_str(key),
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
        ));
    }
    let prefix = match key {
        "." => Some("must not be '.'"),
        ".." => Some("must not be '..'"),
        k if k.starts_with("..") => Some("must not start with '..'"),
        _ => None,
    };
    if let Some(message) = prefix {
        errors.push(invalid(at, go_str(key), message));
    }
}

/// `ValidateConfigMapUpdate` / `ValidateSecretUpdate`: an immutable object keeps its data and
/// its flag; a Secret keeps its type.
pub(super) fn validate_update(
    kind: &str,
    existing: &Object,
    updated: &Object,
    errors: &mut Vec<FieldError>,
) {
    if kind == "Secret" {
        let old = existing.get("type").and_then(Value::as_str).unwrap_or("");
        let new = updated.get("type").and_then(Value::as_str).unwrap_or("");
        if old != new {
            errors.push(immutable("type", go_str(new)));
        }
    }
    let flag = |o: &Object| o.get("immutable").and_then(Value::as_bool) == Some(true);
    if !flag(existing) {
        return;
    }
    if !flag(updated) {
        errors.push(forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
    let fields: &[&str] = if kind == "Secret" {
        &["data"]
    } else {
        &["data", "binaryData"]
    };
    for field in fields {
        let empty = |v: Option<&Value>| v.is_none_or(|v| v.as_object().is_some_and(Map::is_empty));
        let (old, new) = (existing.get(*field), updated.get(*field));
        if old != new && !(empty(old) && empty(new)) {
            errors.push(forbidden(
                *field,
                "field is immutable when `immutable` is set",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_data_is_merged_into_data_and_dropped() {
        let mut secret = json!({"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "z"}})
            .as_object()
            .cloned()
            .unwrap();
        decode("Secret", &mut secret).unwrap();
        default_secret(&mut secret);
        assert_eq!(secret["data"], json!({"a": "eA==", "b": "eg=="}));
        assert!(secret.get("stringData").is_none());
        assert_eq!(secret["type"], "Opaque");
    }

    #[test]
    fn bad_base64_is_a_bad_request() {
        let mut secret = json!({"data": {"a": "not base64!"}})
            .as_object()
            .cloned()
            .unwrap();
        let err = decode("Secret", &mut secret).unwrap_err();
        assert_eq!(err.code.as_u16(), 400);
        assert!(err.message.starts_with("Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte"), "{}", err.message);
    }

    #[test]
    fn keys_and_types_are_validated() {
        let secret = json!({"type": "kubernetes.io/tls", "data": {"bad key": ""}})
            .as_object()
            .cloned()
            .unwrap();
        let mut errors = Vec::new();
        validate_secret(&secret, &mut errors);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["data[bad key]", "data[tls.crt]", "data[tls.key]"]);
        assert_eq!(decoded_len(&json!("eA==")), 1);
        assert_eq!(decoded_len(&json!("eHl6")), 3);
    }

    #[test]
    fn immutable_objects_keep_their_data() {
        let old = json!({"immutable": true, "data": {"a": "1"}})
            .as_object()
            .cloned()
            .unwrap();
        let mut new = old.clone();
        let mut errors = Vec::new();
        validate_update("ConfigMap", &old, &new, &mut errors);
        assert!(errors.is_empty());
        new.insert("data".into(), json!({"a": "2"}));
        new.shift_remove("immutable");
        validate_update("ConfigMap", &old, &new, &mut errors);
        let texts: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect();
        assert_eq!(
            texts,
            [
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set"
            ]
        );
    }
}
