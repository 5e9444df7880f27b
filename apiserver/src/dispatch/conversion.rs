//! Converting custom objects between the versions of their definition: `None` rewrites the
//! `apiVersion` (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/
//! nop_converter.go`), `Webhook` sends a ConversionReview to the definition's webhook
//! (`webhook_converter.go`) and checks what comes back: the same count, the desired
//! version, the same kind, name, namespace and uid, and of the metadata only labels and
//! annotations taken from the answer.
//!
//! Also the equivalent resources of `matchPolicy: Equivalent` (the other served versions of a
//! definition), which admission webhooks are called with when their rules name another
//! version than the request's.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::object::Object;
use crate::registry::Resource;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};
use crate::webhook::client::Endpoint;
use crate::webhook::config::endpoint_of;

/// How long a conversion call may take (upstream's conversion webhooks have no
/// `timeoutSeconds`; its REST client's default is 30 s... here a bound of the same size).
const CONVERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// A definition's `conversion` with `strategy: Webhook`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConversionWebhook {
    /// `webhook.clientConfig`, or why it cannot be used.
    pub(crate) endpoint: Result<Endpoint, String>,
    /// `webhook.conversionReviewVersions`.
    pub(crate) review_versions: Vec<String>,
}

impl ConversionWebhook {
    /// The webhook of a definition's `spec.conversion`, if its strategy is `Webhook`.
    pub(crate) fn of(conversion: Option<&Value>) -> Option<ConversionWebhook> {
        let conversion = conversion?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let webhook = conversion.get("webhook");
        Some(ConversionWebhook {
            endpoint: endpoint_of(webhook.and_then(|w| w.get("clientConfig"))),
            review_versions: webhook
                .and_then(|w| w.get("conversionReviewVersions"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        })
    }
}

/// The other served versions of `resource` (upstream's `EquivalentResourceMapper`), for
/// custom resources; a built-in resource's versions are not converted between here.
pub(crate) fn equivalents(state: &AppState, resource: &Resource) -> Vec<Arc<Resource>> {
    let Some(custom) = &resource.custom else {
        return Vec::new();
    };
    state
        .registry()
        .custom()
        .into_iter()
        .filter(|other| {
            other.version != resource.version
                && other.plural == resource.plural
                && other
                    .custom
                    .as_ref()
                    .is_some_and(|c| c.crd_name == custom.crd_name)
        })
        .collect()
}

/// Whether objects of `resource` are converted by a webhook.
pub(crate) fn by_webhook(resource: &Resource) -> bool {
    resource
        .custom
        .as_ref()
        .is_some_and(|c| c.conversion.is_some())
}

/// A stored `object` as `resource` serves it: converted by the definition's webhook when it
/// is in another version (with `None`, the handlers rewrite the `apiVersion` themselves).
pub(crate) async fn served(
    state: &AppState,
    resource: &Resource,
    object: Object,
) -> ApiResult<Object> {
    if !by_webhook(resource)
        || object.get("apiVersion").and_then(Value::as_str)
            == Some(resource.group_version().as_str())
    {
        return Ok(object);
    }
    let mut converted = convert(state, vec![object], resource).await?;
    converted
        .pop()
        .ok_or_else(|| ApiError::internal("conversion returned no object"))
}

/// Stored objects as `resource` serves them, in one ConversionReview ([`served`]).
pub(crate) async fn served_all(
    state: &AppState,
    resource: &Resource,
    objects: Vec<Object>,
) -> ApiResult<Vec<Object>> {
    if !by_webhook(resource) {
        return Ok(objects);
    }
    convert(state, objects, resource).await
}

/// `object` of `resource` in the form it is stored in: the storage version when the
/// definition converts by webhook, else as it is.
pub(crate) async fn for_storage(
    state: &AppState,
    resource: &Resource,
    object: &Object,
) -> ApiResult<Option<Object>> {
    let Some(target) = storage_target(state, resource) else {
        return Ok(None);
    };
    let mut converted = convert(state, vec![object.clone()], &target).await?;
    Ok(converted.pop())
}

/// `object` in `target`'s version.
pub(crate) async fn convert_value(
    state: &AppState,
    object: &Value,
    target: &Resource,
) -> ApiResult<Value> {
    let Value::Object(map) = object else {
        return Ok(object.clone());
    };
    let mut converted = convert(state, vec![map.clone()], target).await?;
    Ok(converted.pop().map(Value::Object).unwrap_or(Value::Null))
}

/// `objects` (of one definition, in any versions) in `target`'s version: one ConversionReview
/// for those in another version when the definition converts by webhook, else their
/// `apiVersion` rewritten.
pub(crate) async fn convert(
    state: &AppState,
    mut objects: Vec<Object>,
    target: &Resource,
) -> ApiResult<Vec<Object>> {
    let desired = target.group_version();
    let webhook = target
        .custom
        .as_ref()
        .and_then(|c| ConversionWebhook::of(c.conversion.as_ref()));
    let Some(webhook) = webhook else {
        for object in &mut objects {
            object.insert("apiVersion".to_owned(), json!(desired));
        }
        return Ok(objects);
    };
    let pending: Vec<usize> = objects
        .iter()
        .enumerate()
        .filter(|(_, o)| o.get("apiVersion").and_then(Value::as_str) != Some(desired.as_str()))
        // An object of nothing but kind and apiVersion is not sent (`isEmptyUnstructuredObject`).
        .filter(|(_, o)| !(o.len() == 2 && o.contains_key("kind")))
        .map(|(i, _)| i)
        .collect();
    if pending.is_empty() {
        for object in &mut objects {
            object.insert("apiVersion".to_owned(), json!(desired));
        }
        return Ok(objects);
    }
    let first = &objects[pending[0]];
    let webhook = &webhook;
    let source = format!(
        "{}, Kind={}",
        first
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or(""),
        first
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or(&target.kind)
    );
    let failed =
        |why: String| ApiError::internal(format!("conversion webhook for {source} failed: {why}"));
    let version = webhook
        .review_versions
        .iter()
        .find(|v| *v == "v1" || *v == "v1beta1")
        .cloned()
        .ok_or_else(|| {
            failed(
                "webhook does not accept known ConversionReview versions (v1, v1beta1)".to_owned(),
            )
        })?;
    let endpoint = webhook
        .endpoint
        .as_ref()
        .map_err(|why| failed(why.clone()))?;
    let uid = crate::meta::new_uid();
    let sent: Vec<Value> = pending
        .iter()
        .map(|i| Value::Object(objects[*i].clone()))
        .collect();
    let review = json!({
        "kind": "ConversionReview",
        "apiVersion": format!("apiextensions.k8s.io/{version}"),
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": sent},
    });
    let body = serde_json::to_vec(&review).map_err(|err| failed(err.to_string()))?;
    let answer = super::post(state, endpoint, CONVERSION_TIMEOUT, body)
        .await
        .map_err(failed)?;
    let converted = converted_objects(&answer, &version, &uid).map_err(failed)?;
    if converted.len() != pending.len() {
        return Err(ApiError::internal(format!(
            "conversion webhook for {source} returned {} objects, expected {}",
            converted.len(),
            pending.len()
        )));
    }
    let single = objects.len() == 1;
    for (n, (index, converted)) in pending.iter().zip(converted).enumerate() {
        let at = if single {
            "invalid object".to_owned()
        } else {
            format!("invalid converted object at index {n}")
        };
        let invalid = |why: String| {
            ApiError::internal(format!(
                "conversion webhook for {source} returned {at}: {why}"
            ))
        };
        let Value::Object(mut converted) = converted else {
            return Err(invalid("the object is not a JSON object".to_owned()));
        };
        let original = &objects[*index];
        let text =
            |o: &Object, key: &str| o.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
        if text(&converted, "apiVersion") != desired {
            return Err(invalid(format!(
                "invalid groupVersion (expected {desired}, received {})",
                text(&converted, "apiVersion")
            )));
        }
        if text(&converted, "kind") != text(original, "kind") {
            return Err(invalid(format!(
                "invalid kind (expected {}, received {})",
                text(original, "kind"),
                text(&converted, "kind")
            )));
        }
        let meta = |o: &Object, key: &str| {
            o.get("metadata")
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        for (key, word) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
            if meta(original, key) != meta(&converted, key) {
                return Err(invalid(format!(
                    "must have the same {word}: {} != {}",
                    meta(original, key),
                    meta(&converted, key)
                )));
            }
        }
        restore_metadata(original, &mut converted).map_err(|why| {
            ApiError::internal(format!(
                "conversion webhook for {source} returned invalid metadata: {why}"
            ))
        })?;
        objects[*index] = converted;
    }
    for object in &mut objects {
        object.insert("apiVersion".to_owned(), json!(desired));
    }
    Ok(objects)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    response: Option<ReviewResponse>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReviewResponse {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    result: Value,
    #[serde(default)]
    converted_objects: Vec<Value>,
}

/// `getConvertedObjectsFromResponse`.
fn converted_objects(
    answer: &crate::webhook::client::Answer,
    version: &str,
    uid: &str,
) -> Result<Vec<Value>, String> {
    if !(200..=206).contains(&answer.status) {
        return Err(format!(
            "the server responded with the status code {} but did not return more information",
            answer.status
        ));
    }
    let review: Review = serde_json::from_slice(&answer.body)
        .map_err(|err| format!("couldn't get version/kind; json parse error: {err}"))?;
    if version == "v1"
        && (review.api_version != "apiextensions.k8s.io/v1" || review.kind != "ConversionReview")
    {
        return Err(format!(
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}, Kind={}",
            review.api_version, review.kind
        ));
    }
    let response = review.response.ok_or("no response provided")?;
    if version == "v1" && response.uid != uid {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            response.uid
        ));
    }
    let status = response
        .result
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("");
    if status != "Success" {
        let message = response
            .result
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !message.is_empty() {
            return Err(message.to_owned());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(response.converted_objects)
}

/// `restoreObjectMeta`: the original metadata, with the answer's labels and annotations.
fn restore_metadata(original: &Object, converted: &mut Object) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".to_owned()),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err("invalid metadata of type in converted object".to_owned()),
    };
    let mut metadata = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        match answered.get(field) {
            None | Some(Value::Null) => {
                metadata.shift_remove(field);
            }
            Some(Value::Object(values)) => {
                if let Some((key, _)) = values.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{key}] must be a string in converted object"
                    ));
                }
                metadata.insert(field.to_owned(), Value::Object(values.clone()));
            }
            Some(_) => {
                return Err(format!("invalid metadata.{field} in converted object"));
            }
        }
    }
    converted.insert("metadata".to_owned(), Value::Object(metadata));
    Ok(())
}

/// The version stored objects of `resource` are written in: the storage version when the
/// definition converts by webhook (every other version is converted on the way in and out),
/// else none (objects keep the version they were written in, read in any with `None`).
pub(crate) fn storage_target(state: &AppState, resource: &Resource) -> Option<Arc<Resource>> {
    let custom = resource.custom.as_ref()?;
    custom.conversion.as_ref()?;
    if custom.storage_version == resource.version {
        return None;
    }
    state
        .registry()
        .lookup(&resource.group, &custom.storage_version, &resource.plural)
}
