//! CertificateSigningRequests (`certificates.k8s.io/v1`): the strategies of
//! `pkg/registry/certificates/certificates/strategy.go` (the requester recorded and the status
//! cleared on create; the object, `/status` and `/approval` each changing only their part, with
//! condition timestamps filled in) and the validation of
//! `pkg/apis/certificates/validation/validation.go` (the request is a signed PEM
//! `CERTIFICATE REQUEST`, usages known and unique, the signer name qualified, Approved and Denied
//! conditions exclusive and never removed, the issued certificate PEM `CERTIFICATE` blocks set
//! once), with the options each update path has.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};
use x509_parser::pem::Pem;
use x509_parser::prelude::FromDer;

use super::fields::{self, go_str};
use crate::identity::UserInfo;
use crate::meta::{self, FieldError};
use crate::object::Object;
use crate::registry::NameRule;

/// The shortest `expirationSeconds` a request may ask for (ten minutes).
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// DNS-1123 subdomains (the signer name's domain) are at most this long.
const SUBDOMAIN_MAX: usize = 253;

/// Every usage upstream knows (`allValidUsages`), sorted as `sets.String.List()` sorts them.
const VALID_USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// The condition types that may only be `True`.
const TRUE_ONLY: &[&str] = &["Approved", "Denied", "Failed"];

/// What an update path may change (`certificateValidationOptions`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Options {
    /// `/approval`: Approved and Denied conditions.
    pub(crate) approval: bool,
    /// `/status`: the certificate.
    pub(crate) certificate: bool,
}

impl Options {
    /// The options of a write to `subresource` (`None`: the object itself).
    pub(crate) fn of(subresource: Option<&str>) -> Options {
        Options {
            approval: subresource == Some("approval"),
            certificate: subresource == Some("status"),
        }
    }
}

/// `csrStrategy.PrepareForCreate`: the requester's identity replaces whatever the body said,
/// and a new request has no status.
pub(super) fn prepare_create(csr: &mut Object, user: &UserInfo) {
    let spec = fields::child(csr, "spec");
    for key in ["username", "uid", "groups", "extra"] {
        spec.shift_remove(key);
    }
    spec.insert("username".to_owned(), json!(user.name));
    if !user.uid.is_empty() {
        spec.insert("uid".to_owned(), json!(user.uid));
    }
    spec.insert("groups".to_owned(), json!(user.groups));
    if !user.extra.is_empty() {
        spec.insert("extra".to_owned(), Value::Object(user.extra.clone()));
    }
    csr.insert("status".to_owned(), json!({}));
}

/// The strategies' `PrepareForUpdate`: what a write to `subresource` keeps from `old`. The
/// object keeps its spec and status; `/status` keeps the spec and the approval conditions;
/// `/approval` keeps the spec and everything of the status but its conditions. Conditions get
/// their timestamps (`populateConditionTimestamps`).
pub(crate) fn prepare_update(subresource: Option<&str>, old: &Object, new: &mut Object) {
    copy(old, new, "spec");
    match subresource {
        None => copy(old, new, "status"),
        Some("approval") => {
            let conditions = new.get("status").and_then(|s| s.get("conditions")).cloned();
            copy(old, new, "status");
            let status = fields::child(new, "status");
            match conditions {
                Some(conditions) => status.insert("conditions".to_owned(), conditions),
                None => status.shift_remove("conditions"),
            };
            populate_timestamps(old, new);
        }
        Some("status") => {
            populate_timestamps(old, new);
            // Approved and Denied come from the old object only: `/approval` sets them.
            let new_conditions = conditions(new).to_vec();
            let mut kept: Vec<Value> = Vec::new();
            for kind in ["Approved", "Denied"] {
                kept.extend(
                    conditions(old)
                        .iter()
                        .filter(|c| fields::str_at(c, &["type"]) == kind)
                        .cloned(),
                );
            }
            kept.extend(
                new_conditions
                    .into_iter()
                    .filter(|c| !matches!(fields::str_at(c, &["type"]), "Approved" | "Denied")),
            );
            let status = fields::child(new, "status");
            if kept.is_empty() {
                status.shift_remove("conditions");
            } else {
                status.insert("conditions".to_owned(), Value::Array(kept));
            }
        }
        Some(_) => {}
    }
}

fn copy(from: &Object, to: &mut Object, field: &str) {
    match from.get(field) {
        Some(value) => to.insert(field.to_owned(), value.clone()),
        None => to.shift_remove(field),
    };
}

fn conditions(csr: &Object) -> &[Value] {
    fields::items(csr.get("status"), "conditions")
}

/// `populateConditionTimestamps`: a condition without `lastUpdateTime` gets now; without
/// `lastTransitionTime` it keeps the old condition's of the same type and status, else now.
fn populate_timestamps(old: &Object, new: &mut Object) {
    let now = meta::now_rfc3339();
    let old_conditions = conditions(old).to_vec();
    let Some(Value::Object(status)) = new.get_mut("status") else {
        return;
    };
    let Some(Value::Array(conditions)) = status.get_mut("conditions") else {
        return;
    };
    for condition in conditions.iter_mut() {
        let Value::Object(condition) = condition else {
            continue;
        };
        let unset = |c: &Map<String, Value>, key: &str| {
            c.get(key).and_then(Value::as_str).is_none_or(str::is_empty)
        };
        if unset(condition, "lastUpdateTime") {
            condition.insert("lastUpdateTime".to_owned(), json!(now));
        }
        if unset(condition, "lastTransitionTime") {
            let kind = condition.get("type").cloned();
            let state = condition.get("status").cloned();
            let kept = old_conditions
                .iter()
                .find(|c| c.get("type") == kind.as_ref() && c.get("status") == state.as_ref())
                .and_then(|c| c.get("lastTransitionTime"))
                .filter(|t| t.as_str().is_some_and(|t| !t.is_empty()))
                .cloned();
            condition.insert(
                "lastTransitionTime".to_owned(),
                kept.unwrap_or_else(|| json!(now)),
            );
        }
    }
}

/// The bytes of a `[]byte` field (base64 in JSON), empty when absent.
fn bytes_at(value: &Value, path: &[&str]) -> Vec<u8> {
    STANDARD
        .decode(fields::str_at(value, path))
        .unwrap_or_default()
}

/// A `[]byte` as Go's `%#v` prints it (`[]byte{0x2d, 0x2d}`).
fn go_bytes(bytes: &[u8]) -> String {
    let inner: Vec<String> = bytes.iter().map(|b| format!("0x{b:x}")).collect();
    format!("[]byte{{{}}}", inner.join(", "))
}

/// The first PEM block of `data` (Go's `pem.Decode` skips text before it).
fn first_pem(data: &[u8]) -> Option<Pem> {
    Pem::iter_from_buffer(data).find_map(Result::ok)
}

/// `validateCSR`: a PEM `CERTIFICATE REQUEST` whose signature verifies.
fn check_request(request: &[u8]) -> Result<(), String> {
    let block = first_pem(request)
        .filter(|block| block.label == "CERTIFICATE REQUEST")
        .ok_or_else(|| "PEM block type must be CERTIFICATE REQUEST".to_owned())?;
    let (_, parsed) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
            .map_err(|err| format!("x509: malformed certificate request: {err}"))?;
    parsed
        .verify_signature()
        .map_err(|err| format!("x509: {err}"))
}

/// `validateCertificate`: PEM `CERTIFICATE` blocks only, each a certificate (a block with
/// headers does not parse, so it counts as no block).
fn check_certificate(data: &[u8]) -> Result<(), String> {
    if data.is_empty() {
        return Ok(());
    }
    let mut blocks = 0;
    for block in Pem::iter_from_buffer(data) {
        let Ok(block) = block else { break };
        if block.label != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                go_str(&block.label)
            ));
        }
        blocks += 1;
        x509_parser::parse_x509_certificate(&block.contents)
            .map_err(|err| format!("x509: malformed certificate: {err}"))?;
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".to_owned());
    }
    Ok(())
}

/// The problems of one DNS-1123 label, as `validation.IsDNS1123Label` words them.
fn label_problems(label: &str) -> Vec<String> {
    let prefix = format!("Invalid value: {}: ", go_str(label));
    meta::name_errors(label, NameRule::Label, false)
        .into_iter()
        .map(|problem| problem.strip_prefix(&prefix).unwrap_or(&problem).to_owned())
        .collect()
}

/// `ValidateSignerName`.
pub(crate) fn validate_signer_name(field: &str, signer: &str, errors: &mut Vec<FieldError>) {
    if signer.is_empty() {
        errors.push(fields::required(field, ""));
        return;
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, path] = segments[..] else {
        errors.push(fields::invalid(
            field,
            go_str(signer),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return;
    };
    if domain.len() > SUBDOMAIN_MAX {
        errors.push(FieldError {
            field: field.to_owned(),
            reason: "FieldValueTooLong",
            detail: format!("Too long: may not be more than {SUBDOMAIN_MAX} bytes"),
        });
    }
    let domain_labels: Vec<&str> = domain.split('.').collect();
    for label in &domain_labels {
        let problems = label_problems(label);
        if !problems.is_empty() {
            for problem in problems {
                errors.push(fields::invalid(
                    field,
                    go_str(domain),
                    &format!("validating label {}: {problem}", go_str(label)),
                ));
            }
            break;
        }
    }
    if domain_labels.len() < 2 {
        errors.push(fields::invalid(
            field,
            go_str(domain),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    for label in path.split('.') {
        let problems = label_problems(label);
        if !problems.is_empty() {
            for problem in problems {
                errors.push(fields::invalid(
                    field,
                    go_str(path),
                    &format!("validating label {}: {problem}", go_str(label)),
                ));
            }
            break;
        }
    }
    let max_path = SUBDOMAIN_MAX.saturating_sub(domain.len() + 1);
    if path.len() > max_path {
        errors.push(FieldError {
            field: field.to_owned(),
            reason: "FieldValueTooLong",
            detail: format!("Too long: may not be more than {max_path} bytes"),
        });
    }
}

/// `validateCertificateSigningRequest` (create, and the new object of every update).
pub(crate) fn validate(csr: &Object, errors: &mut Vec<FieldError>) {
    let spec = csr.get("spec").cloned().unwrap_or(Value::Null);
    let request = bytes_at(&spec, &["request"]);
    if let Err(problem) = check_request(&request) {
        errors.push(fields::invalid(
            "spec.request",
            go_bytes(&request),
            &problem,
        ));
    }
    let usages: Vec<&str> = fields::items(Some(&spec), "usages")
        .iter()
        .map(|u| u.as_str().unwrap_or(""))
        .collect();
    if usages.is_empty() {
        errors.push(fields::required("spec.usages", ""));
    }
    for (i, usage) in usages.iter().enumerate() {
        if !VALID_USAGES.contains(usage) {
            errors.push(fields::not_supported(
                format!("spec.usages[{i}]"),
                usage,
                VALID_USAGES,
            ));
        }
    }
    for (i, usage) in usages.iter().enumerate() {
        if usages[..i].contains(usage) {
            errors.push(fields::duplicate(
                format!("spec.usages[{i}]"),
                go_str(usage),
            ));
        }
    }
    let signer = fields::str_at(&spec, &["signerName"]);
    if signer == "kubernetes.io/legacy-unknown" {
        errors.push(fields::invalid(
            "spec.signerName",
            go_str(signer),
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        validate_signer_name("spec.signerName", signer, errors);
    }
    if let Some(seconds) = spec.get("expirationSeconds").and_then(Value::as_i64)
        && seconds < MIN_EXPIRATION_SECONDS
    {
        errors.push(fields::invalid(
            "spec.expirationSeconds",
            seconds.to_string(),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    validate_conditions(csr, errors);
    let certificate = csr
        .get("status")
        .map(|status| bytes_at(status, &["certificate"]))
        .unwrap_or_default();
    if let Err(problem) = check_certificate(&certificate) {
        errors.push(fields::invalid(
            "status.certificate",
            go_str("<certificate data>"),
            &problem,
        ));
    }
}

/// `validateConditions`.
fn validate_conditions(csr: &Object, errors: &mut Vec<FieldError>) {
    let (mut approved, mut denied) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for (i, condition) in conditions(csr).iter().enumerate() {
        let path = format!("status.conditions[{i}]");
        let kind = fields::str_at(condition, &["type"]);
        let status = fields::str_at(condition, &["status"]);
        if kind.is_empty() {
            errors.push(fields::required(format!("{path}.type"), ""));
        }
        let allowed: &[&str] = if TRUE_ONLY.contains(&kind) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            errors.push(fields::required(format!("{path}.status"), ""));
        } else if !allowed.contains(&status) {
            errors.push(fields::not_supported(
                format!("{path}.status"),
                status,
                allowed,
            ));
        }
        match kind {
            "Approved" => {
                approved = true;
                if denied {
                    errors.push(fields::invalid(
                        format!("{path}.type"),
                        go_str(kind),
                        "Approved and Denied conditions are mutually exclusive",
                    ));
                }
            }
            "Denied" => {
                denied = true;
                if approved {
                    errors.push(fields::invalid(
                        format!("{path}.type"),
                        go_str(kind),
                        "Approved and Denied conditions are mutually exclusive",
                    ));
                }
            }
            _ => {}
        }
        if seen.contains(&kind) {
            errors.push(fields::duplicate(format!("{path}.type"), go_str(kind)));
        }
        seen.push(kind);
    }
}

/// `validateCertificateSigningRequestUpdate`: conditions are never removed, approval
/// conditions change only through `/approval`, and the certificate is set only through
/// `/status`, once.
pub(crate) fn validate_update(
    old: &Object,
    new: &Object,
    options: Options,
    errors: &mut Vec<FieldError>,
) {
    validate(new, errors);
    let of_kind = |csr: &Object, kind: &str| -> Vec<Value> {
        conditions(csr)
            .iter()
            .filter(|c| fields::str_at(c, &["type"]) == kind)
            .cloned()
            .collect()
    };
    for kind in ["Approved", "Denied", "Failed"] {
        if of_kind(new, kind).len() < of_kind(old, kind).len() {
            errors.push(fields::forbidden(
                "status.conditions",
                &format!(
                    "updates may not remove a condition of type {}",
                    go_str(kind)
                ),
            ));
        }
    }
    if !options.approval {
        for kind in ["Approved", "Denied"] {
            let (before, after) = (of_kind(old, kind), of_kind(new, kind));
            if after.len() > before.len() {
                errors.push(fields::forbidden(
                    "status.conditions",
                    &format!("updates may not add a condition of type {}", go_str(kind)),
                ));
            } else if after.len() == before.len() && after != before {
                errors.push(fields::forbidden(
                    "status.conditions",
                    &format!(
                        "updates may not modify a condition of type {}",
                        go_str(kind)
                    ),
                ));
            }
        }
    }
    let certificate = |csr: &Object| {
        csr.get("status")
            .map(|status| bytes_at(status, &["certificate"]))
            .unwrap_or_default()
    };
    let (before, after) = (certificate(old), certificate(new));
    if before != after {
        if !options.certificate {
            errors.push(fields::forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !before.is_empty() {
            errors.push(fields::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        }
    }
}

/// The request of `csr` as PEM text, if it is text.
pub(crate) fn request_pem(csr: &Value) -> Option<String> {
    String::from_utf8(bytes_at(csr, &["spec", "request"])).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair};

    fn request() -> String {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        params.serialize_request(&key).unwrap().pem().unwrap()
    }

    fn csr(request: &str, spec: Value) -> Object {
        let mut object = json!({"metadata": {"name": "alice"},
            "spec": {"request": STANDARD.encode(request),
                     "signerName": "kubernetes.io/kube-apiserver-client",
                     "usages": ["client auth"]}});
        if let (Value::Object(base), Value::Object(extra)) = (&mut object["spec"], spec) {
            base.extend(extra);
        }
        object.as_object().unwrap().clone()
    }

    fn messages(errors: Vec<FieldError>) -> Vec<String> {
        errors
            .into_iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    #[test]
    fn a_signed_request_with_known_usages_and_a_qualified_signer_is_valid() {
        let mut errors = Vec::new();
        validate(&csr(&request(), json!({})), &mut errors);
        assert_eq!(messages(errors), Vec::<String>::new());
    }

    #[test]
    fn requests_usages_signers_and_durations_are_checked_in_upstreams_words() {
        let mut errors = Vec::new();
        let bad = csr(
            "not pem",
            json!({"usages": ["client auth", "bogus", "client auth"],
                   "signerName": "example", "expirationSeconds": 60}),
        );
        validate(&bad, &mut errors);
        let texts = messages(errors);
        assert_eq!(
            texts[0],
            "spec.request: Invalid value: []byte{0x6e, 0x6f, 0x74, 0x20, 0x70, 0x65, 0x6d}: PEM block type must be CERTIFICATE REQUEST"
        );
        assert!(texts[1].starts_with(
            "spec.usages[1]: Unsupported value: \"bogus\": supported values: \"any\", \"cert sign\""
        ));
        assert_eq!(texts[2], "spec.usages[2]: Duplicate value: \"client auth\"");
        assert_eq!(
            texts[3],
            "spec.signerName: Invalid value: \"example\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
        );
        assert_eq!(
            texts[4],
            "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)"
        );
        let mut errors = Vec::new();
        validate_signer_name("spec.signerName", "example/Bad", &mut errors);
        assert_eq!(
            messages(errors),
            [
                "spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots",
                "spec.signerName: Invalid value: \"Bad\": validating label \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
    }

    #[test]
    fn approval_conditions_change_only_through_approval_and_are_never_removed() {
        let old = csr(&request(), json!({}));
        let mut approved = old.clone();
        approved.insert(
            "status".to_owned(),
            json!({"conditions": [{"type": "Approved", "status": "True", "reason": "KubectlApprove"}]}),
        );
        let mut errors = Vec::new();
        validate_update(&old, &approved, Options::of(Some("approval")), &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        let mut errors = Vec::new();
        validate_update(&old, &approved, Options::of(Some("status")), &mut errors);
        assert_eq!(
            messages(errors),
            ["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
        );
        let mut errors = Vec::new();
        validate_update(&approved, &old, Options::of(Some("approval")), &mut errors);
        assert_eq!(
            messages(errors),
            [
                "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
            ]
        );
        let mut both = approved.clone();
        both["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Denied", "status": "False"}));
        let mut errors = Vec::new();
        validate(&both, &mut errors);
        assert_eq!(
            messages(errors),
            [
                "status.conditions[1].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
            ]
        );
    }

    #[test]
    fn the_approval_path_keeps_all_but_conditions_and_stamps_them() {
        let old = csr(&request(), json!({}));
        let mut new = old.clone();
        new.insert(
            "spec".to_owned(),
            json!({"request": "", "signerName": "x/y", "usages": []}),
        );
        new.insert(
            "status".to_owned(),
            json!({"certificate": "eA==", "conditions": [{"type": "Approved", "status": "True"}]}),
        );
        prepare_update(Some("approval"), &old, &mut new);
        assert_eq!(new["spec"], old["spec"]);
        assert!(new["status"].get("certificate").is_none());
        let condition = &new["status"]["conditions"][0];
        assert!(condition["lastUpdateTime"].is_string());
        assert_eq!(condition["lastTransitionTime"], condition["lastUpdateTime"]);
    }
}
