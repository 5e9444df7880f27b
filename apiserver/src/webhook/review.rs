//! AdmissionReview requests and responses: building the review a webhook is sent
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/request/admissionreview.go`,
//! `CreateAdmissionObjects`: v1, or v1beta1 when a webhook lists only that), checking its
//! answer (`VerifyAdmissionResponse`), and the Status of a denial (`errors/statuserror.go`,
//! `ToStatusErr`).

use std::collections::BTreeMap;

use axum::http::StatusCode;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::client::Answer;
use crate::identity::UserInfo;
use crate::status::{ApiError, Cause, Details};

/// Where the webhook's view of the request differs from the request's own: the resource and
/// kind it matched (an equivalent version under `matchPolicy: Equivalent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gvr {
    /// Group.
    pub(crate) group: String,
    /// Version.
    pub(crate) version: String,
    /// Resource (plural).
    pub(crate) resource: String,
    /// Kind.
    pub(crate) kind: String,
}

/// Everything an AdmissionReview's `request` says.
#[derive(Debug)]
pub(crate) struct ReviewRequest<'a> {
    /// `uid`.
    pub(crate) uid: &'a str,
    /// What the webhook matched (`kind`, `resource`).
    pub(crate) matched: &'a Gvr,
    /// What the request addressed (`requestKind`, `requestResource`).
    pub(crate) requested: &'a Gvr,
    /// `subResource`, empty for none.
    pub(crate) subresource: &'a str,
    /// `name`.
    pub(crate) name: &'a str,
    /// `namespace`.
    pub(crate) namespace: &'a str,
    /// `operation`.
    pub(crate) operation: &'a str,
    /// `userInfo`.
    pub(crate) user: &'a UserInfo,
    /// `object`.
    pub(crate) object: Option<&'a Value>,
    /// `oldObject`.
    pub(crate) old: Option<&'a Value>,
    /// `dryRun`.
    pub(crate) dry_run: bool,
    /// `options`.
    pub(crate) options: &'a Value,
}

/// The first of `versions` this server speaks (`CreateAdmissionObjects`), or upstream's error.
pub(crate) fn review_version(versions: &[String]) -> Result<&'static str, String> {
    for version in versions {
        match version.as_str() {
            "v1" => return Ok("v1"),
            "v1beta1" => return Ok("v1beta1"),
            _ => {}
        }
    }
    Err("webhook does not accept known AdmissionReview versions (v1, v1beta1)".to_owned())
}

/// The AdmissionReview of `request` in `version` (same shape in v1 and v1beta1).
pub(crate) fn build(version: &str, request: &ReviewRequest<'_>) -> Value {
    let gvk = |g: &Gvr| json!({"group": g.group, "version": g.version, "kind": g.kind});
    let gvr = |g: &Gvr| json!({"group": g.group, "version": g.version, "resource": g.resource});
    let mut user = Map::new();
    if !request.user.name.is_empty() {
        user.insert("username".to_owned(), json!(request.user.name));
    }
    if !request.user.uid.is_empty() {
        user.insert("uid".to_owned(), json!(request.user.uid));
    }
    if !request.user.groups.is_empty() {
        user.insert("groups".to_owned(), json!(request.user.groups));
    }
    if !request.user.extra.is_empty() {
        user.insert(
            "extra".to_owned(),
            Value::Object(request.user.extra.clone()),
        );
    }
    let mut body = Map::new();
    body.insert("uid".to_owned(), json!(request.uid));
    body.insert("kind".to_owned(), gvk(request.matched));
    body.insert("resource".to_owned(), gvr(request.matched));
    if !request.subresource.is_empty() {
        body.insert("subResource".to_owned(), json!(request.subresource));
    }
    body.insert("requestKind".to_owned(), gvk(request.requested));
    body.insert("requestResource".to_owned(), gvr(request.requested));
    if !request.subresource.is_empty() {
        body.insert("requestSubResource".to_owned(), json!(request.subresource));
    }
    if !request.name.is_empty() {
        body.insert("name".to_owned(), json!(request.name));
    }
    if !request.namespace.is_empty() {
        body.insert("namespace".to_owned(), json!(request.namespace));
    }
    body.insert("operation".to_owned(), json!(request.operation));
    body.insert("userInfo".to_owned(), Value::Object(user));
    body.insert(
        "object".to_owned(),
        request.object.cloned().unwrap_or(Value::Null),
    );
    body.insert(
        "oldObject".to_owned(),
        request.old.cloned().unwrap_or(Value::Null),
    );
    body.insert("dryRun".to_owned(), json!(request.dry_run));
    body.insert("options".to_owned(), request.options.clone());
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": body,
    })
}

/// The AdmissionRequest CEL expressions see as `request` (`CreateAdmissionRequest` of
/// `staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/condition.go`): the review's
/// request without `uid`, `object` and `oldObject`.
pub(crate) fn cel_request(request: &ReviewRequest<'_>) -> Value {
    let mut review = build("v1", request);
    let mut body = review
        .get_mut("request")
        .map(Value::take)
        .unwrap_or_default();
    if let Some(fields) = body.as_object_mut() {
        for key in ["uid", "object", "oldObject"] {
            fields.remove(key);
        }
    }
    body
}

/// A verified answer (`AdmissionResponse`).
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// `allowed`.
    pub(crate) allowed: bool,
    /// `status` (Go's `Result`), the Status of a denial.
    pub(crate) result: Option<Value>,
    /// `patch`, decoded; empty when none.
    pub(crate) patch: Vec<u8>,
    /// `patchType` (normalised to `JSONPatch` for v1beta1).
    pub(crate) patch_type: String,
    /// `auditAnnotations`.
    pub(crate) audit_annotations: BTreeMap<String, String>,
    /// `warnings`.
    pub(crate) warnings: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    response: Option<Response>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    allowed: bool,
    /// `Result`, whose JSON name is `status` (`k8s.io/api/admission/v1/types.go`); a
    /// `result` key is nobody's field and is ignored, as Go's decoder ignores it.
    #[serde(rename = "status")]
    result: Option<Value>,
    patch: Option<String>,
    patch_type: Option<String>,
    #[serde(default)]
    audit_annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    warnings: Option<Vec<String>>,
}

/// Why a call failed before a verdict: the text after `failed calling webhook "NAME": `.
pub(crate) type Failure = String;

/// Decodes the answer (a transport-level failure when it is no AdmissionReview, as the
/// REST client's `Into` fails) and checks it (`VerifyAdmissionResponse`).
pub(crate) fn verify(
    answer: &Answer,
    sent_version: &str,
    uid: &str,
    mutating: bool,
) -> Result<Verdict, Failure> {
    if !(200..=206).contains(&answer.status) {
        return Err(format!("failed to call webhook: {}", unsuccessful(answer)));
    }
    let review: Review = serde_json::from_slice(&answer.body)
        .map_err(|err| format!("failed to call webhook: {}", decode_words(&err)))?;
    let invalid = |why: String| format!("received invalid webhook response: {why}");
    let response = review
        .response
        .ok_or_else(|| invalid("webhook response was absent".to_owned()))?;
    let patch = match response.patch.as_deref() {
        None | Some("") => Vec::new(),
        Some(text) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|err| format!("failed to call webhook: illegal base64 data: {err}"))?,
    };
    let mut verdict = Verdict {
        allowed: response.allowed,
        result: response.result,
        audit_annotations: response.audit_annotations.unwrap_or_default(),
        warnings: response.warnings.unwrap_or_default(),
        ..Verdict::default()
    };
    if sent_version == "v1beta1" {
        if mutating && !patch.is_empty() {
            verdict.patch = patch;
            verdict.patch_type = "JSONPatch".to_owned();
        }
        return Ok(verdict);
    }
    if response.uid != uid {
        return Err(invalid(format!(
            "expected response.uid={uid:?}, got {:?}",
            response.uid
        )));
    }
    if review.api_version != "admission.k8s.io/v1" || review.kind != "AdmissionReview" {
        let (group, version) = review
            .api_version
            .split_once('/')
            .unwrap_or(("", review.api_version.as_str()));
        return Err(invalid(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}, Kind={}",
            if group.is_empty() {
                version.to_owned()
            } else {
                format!("{group}/{version}")
            },
            review.kind
        )));
    }
    if mutating {
        match (&response.patch_type, patch.is_empty()) {
            (None, false) => {
                return Err(invalid(
                    "webhook returned response.patch but not response.patchType".to_owned(),
                ));
            }
            (Some(_), true) => {
                return Err(invalid(
                    "webhook returned response.patchType but not response.patch".to_owned(),
                ));
            }
            (Some(kind), false) if kind.is_empty() => {
                return Err(invalid(format!(
                    "webhook returned invalid response.patchType of {kind:?}"
                )));
            }
            _ => {}
        }
        verdict.patch = patch;
        verdict.patch_type = response.patch_type.unwrap_or_default();
    } else {
        if !patch.is_empty() {
            return Err(invalid(
                "validating webhook may not return response.patch".to_owned(),
            ));
        }
        if response.patch_type.is_some() {
            return Err(invalid(
                "validating webhook may not return response.patchType".to_owned(),
            ));
        }
    }
    Ok(verdict)
}

/// The most of an unsuccessful answer's text quoted in the error (client-go's
/// `maxUnstructuredResponseTextBytes`).
const MAX_QUOTED_TEXT: usize = 2048;

/// client-go's error for an answer outside 200-206: the Status it carries, or a generic
/// server response error (`NewGenericServerResponse`).
fn unsuccessful(answer: &Answer) -> String {
    if let Ok(status) = serde_json::from_slice::<Value>(&answer.body)
        && status.get("kind").and_then(Value::as_str) == Some("Status")
        && let Some(message) = status.get("message").and_then(Value::as_str)
    {
        return message.to_owned();
    }
    let text = String::from_utf8_lossy(&answer.body);
    let quoted = if text.len() <= MAX_QUOTED_TEXT {
        text.trim().to_owned()
    } else {
        String::new()
    };
    match answer.status {
        404 => "the server could not find the requested resource".to_owned(),
        500 if !quoted.is_empty() => {
            format!("an error on the server ({quoted:?}) has prevented the request from succeeding")
        }
        500 => "an error on the server has prevented the request from succeeding".to_owned(),
        503 => "the server is currently unable to handle the request".to_owned(),
        code => format!(
            "the server responded with the status code {code} but did not return more information"
        ),
    }
}

/// A decoding failure of the answer in the words of Go's decoder where it is close.
fn decode_words(err: &serde_json::Error) -> String {
    if err.is_syntax() || err.is_eof() {
        format!("couldn't get version/kind; json parse error: {err}")
    } else {
        err.to_string()
    }
}

/// The Status reasons of `metav1.StatusReason`: a webhook's `result.reason` is sent on as it
/// is when it is one of them (the others are dropped: the Status type here has fixed reasons).
const REASONS: &[&str] = &[
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "StoreReadError",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

/// `ToStatusErr`: the Status of webhook `name`'s denial with `result`.
pub(crate) fn denial(name: &str, result: Option<&Value>) -> ApiError {
    let denied_by = format!("admission webhook {name:?} denied the request");
    let text = |key: &str| {
        result
            .and_then(|r| r.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let code = result
        .and_then(|r| r.get("code"))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .and_then(|c| StatusCode::from_u16(c).ok())
        .unwrap_or(StatusCode::BAD_REQUEST);
    let reason = REASONS
        .iter()
        .find(|r| **r == text("reason"))
        .copied()
        .unwrap_or("");
    let message = if !text("message").is_empty() {
        format!("{denied_by}: {}", text("message"))
    } else if !text("reason").is_empty() {
        format!("{denied_by}: {}", text("reason"))
    } else {
        format!("{denied_by} without explanation")
    };
    let mut error = ApiError::new(code, reason, message);
    if let Some(details) = result.and_then(|r| r.get("details")) {
        error = error.with_details(details_of(details));
    }
    error
}

/// A Status's `details` as a webhook sent them.
fn details_of(details: &Value) -> Details {
    let text = |key: &str| details.get(key).and_then(Value::as_str).map(str::to_owned);
    Details {
        name: text("name"),
        group: text("group"),
        kind: text("kind"),
        uid: text("uid"),
        causes: details
            .get("causes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let text = |key: &str| c.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
                Cause {
                    reason: text("reason"),
                    message: text("message"),
                    field: text("field"),
                }
            })
            .collect(),
        retry_after_seconds: details.get("retryAfterSeconds").and_then(Value::as_u64),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn answer(body: Value) -> Answer {
        Answer {
            status: 200,
            body: Bytes::from(body.to_string()),
        }
    }

    fn review(response: Value) -> Value {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
    }

    /// The denial's Status is the response's `status` (Go's `Result`): controller-runtime's
    /// `admission.Denied` sends it there, and a `result` key is ignored as Go ignores it.
    #[test]
    fn a_denials_status_is_read_from_status() {
        let denied = |response: Value| {
            let verdict = verify(&answer(review(response)), "v1", "u1", false).unwrap_or_default();
            denial("hook", verdict.result.as_ref()).message
        };
        assert_eq!(
            denied(json!({"uid": "u1", "allowed": false,
                          "status": {"code": 403, "reason": "Forbidden", "message": "no"}})),
            "admission webhook \"hook\" denied the request: no"
        );
        assert_eq!(
            denied(json!({"uid": "u1", "allowed": false, "result": {"message": "no"}})),
            "admission webhook \"hook\" denied the request without explanation"
        );
    }

    /// The cases of `request/admissionreview_test.go` (`TestVerifyAdmissionResponse`).
    #[test]
    fn answers_are_verified_as_upstream_does() {
        let err = |a: &Answer, mutating| verify(a, "v1", "u1", mutating).err().unwrap_or_default();
        assert_eq!(
            err(
                &answer(json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})),
                false
            ),
            "received invalid webhook response: webhook response was absent"
        );
        assert_eq!(
            err(
                &answer(review(json!({"uid": "u2", "allowed": true}))),
                false
            ),
            "received invalid webhook response: expected response.uid=\"u1\", got \"u2\""
        );
        let beta = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "response": {"uid": "u1", "allowed": true}});
        assert_eq!(
            err(&answer(beta), false),
            "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"
        );
        let patch = base64::engine::general_purpose::STANDARD.encode("[]");
        assert_eq!(
            err(
                &answer(review(
                    json!({"uid": "u1", "allowed": true, "patch": patch})
                )),
                true
            ),
            "received invalid webhook response: webhook returned response.patch but not response.patchType"
        );
        assert_eq!(
            err(
                &answer(review(
                    json!({"uid": "u1", "allowed": true, "patchType": "JSONPatch"})
                )),
                true
            ),
            "received invalid webhook response: webhook returned response.patchType but not response.patch"
        );
        assert_eq!(
            err(
                &answer(review(
                    json!({"uid": "u1", "allowed": true, "patch": patch, "patchType": "JSONPatch"})
                )),
                false
            ),
            "received invalid webhook response: validating webhook may not return response.patch"
        );
        let ok = verify(
            &answer(review(json!({"uid": "u1", "allowed": true, "patch": patch, "patchType": "JSONPatch", "warnings": ["w"]}))),
            "v1",
            "u1",
            true,
        )
        .expect("a valid answer");
        assert_eq!(ok.patch, b"[]");
        assert_eq!(ok.warnings, ["w"]);
        assert!(err(&answer(json!("not a review")), false).starts_with("failed to call webhook: "));
        let broken = Answer {
            status: 200,
            body: Bytes::from_static(b"{"),
        };
        assert!(
            err(&broken, false)
                .starts_with("failed to call webhook: couldn't get version/kind; json parse error")
        );
    }

    /// `errors/statuserror_test.go` (`TestToStatusErr`).
    #[test]
    fn denials_are_worded_as_upstreams_tostatuserr() {
        let message = |result: Option<Value>| denial("hook", result.as_ref()).message;
        assert_eq!(
            message(None),
            "admission webhook \"hook\" denied the request without explanation"
        );
        assert_eq!(
            message(Some(json!({"reason": "Forbidden"}))),
            "admission webhook \"hook\" denied the request: Forbidden"
        );
        assert_eq!(
            message(Some(json!({"message": "no way", "reason": "Forbidden"}))),
            "admission webhook \"hook\" denied the request: no way"
        );
        let error = denial("hook", Some(&json!({"code": 200})));
        assert_eq!(error.code, StatusCode::BAD_REQUEST);
        let error = denial("hook", Some(&json!({"code": 403, "reason": "Forbidden"})));
        assert_eq!(
            (error.code, error.reason),
            (StatusCode::FORBIDDEN, "Forbidden")
        );
    }
}
