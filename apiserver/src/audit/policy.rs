//! The audit policy (`--audit-policy-file`): which requests are recorded, at which level and
//! in which stages. Read as kube-apiserver reads it (`pkg/audit/policy/reader.go`: only
//! `audit.k8s.io/v1`, YAML or JSON, unknown fields warned about and ignored, validated by
//! `pkg/apis/audit/validation`, at least one rule) and evaluated as its checker does
//! (`pkg/audit/policy/checker.go`: the first matching rule decides, no match is `None`; a
//! rule's omitted stages are its own and the policy's).

use serde::Deserialize;
use serde_json::Value;

use crate::authz::Attributes;
use crate::identity::UserInfo;

/// The only policy version kube-apiserver 1.32 reads (`apiGroupVersions` in `reader.go`).
const POLICY_API_VERSION: &str = "audit.k8s.io/v1";

/// How much of a request is recorded (`audit.Level`), least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    /// Nothing.
    None,
    /// Who asked what, and the answer's status.
    Metadata,
    /// Also the request's body.
    Request,
    /// Also the response's body.
    RequestResponse,
}

impl Level {
    /// The name in events and policies.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    fn parse(text: &str) -> Option<Level> {
        Some(match text {
            "None" => Level::None,
            "Metadata" => Level::Metadata,
            "Request" => Level::Request,
            "RequestResponse" => Level::RequestResponse,
            _ => return None,
        })
    }
}

/// The stages of a request an event is written at (`audit.Stage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// As soon as the request is received, before it is handled.
    RequestReceived,
    /// When the response's headers are sent (long-running requests only: watches).
    ResponseStarted,
    /// When the response is complete.
    ResponseComplete,
    /// When handling the request panicked.
    Panic,
}

impl Stage {
    /// The name in events and policies.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    fn parse(text: &str) -> Option<Stage> {
        Some(match text {
            "RequestReceived" => Stage::RequestReceived,
            "ResponseStarted" => Stage::ResponseStarted,
            "ResponseComplete" => Stage::ResponseComplete,
            "Panic" => Stage::Panic,
            _ => return None,
        })
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of stages (a bit per stage).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stages(u8);

impl Stages {
    /// Whether `stage` is in the set.
    pub(crate) fn contains(self, stage: Stage) -> bool {
        self.0 & stage.bit() != 0
    }

    fn of(stages: &[Stage]) -> Stages {
        Stages(stages.iter().fold(0, |bits, s| bits | s.bit()))
    }
}

/// What the policy says of one request (`audit.RequestAuditConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decision {
    /// The level; `None` records nothing.
    pub(crate) level: Level,
    /// Stages not recorded.
    pub(crate) omit_stages: Stages,
    /// `metadata.managedFields` left out of recorded objects.
    pub(crate) omit_managed_fields: bool,
}

/// A group's resources a rule names (`audit.GroupResources`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct GroupResources {
    group: String,
    resources: Vec<String>,
    resource_names: Vec<String>,
}

/// One rule (`audit.PolicyRule`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRule {
    #[serde(default)]
    level: String,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPolicy {
    #[serde(default)]
    rules: Vec<RawRule>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    level: Level,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    non_resource_urls: Vec<String>,
    /// The rule's stages and the policy's (`unionStages`).
    omit_stages: Stages,
    omit_managed_fields: Option<bool>,
}

/// An `audit.k8s.io/v1` `Policy`, read and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    rules: Vec<Rule>,
    omit_stages: Stages,
    omit_managed_fields: bool,
}

/// Why a policy file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// Neither YAML nor JSON.
    #[error("failed decoding: {0}")]
    Decode(String),
    /// Not an `audit.k8s.io/v1` `Policy`.
    #[error(
        "unknown group version field {api_version}, kind {kind} in policy: kube-apiserver 1.32 reads only audit.k8s.io/v1 Policy"
    )]
    Version {
        /// The `apiVersion` given.
        api_version: String,
        /// The `kind` given.
        kind: String,
    },
    /// Fails validation (`pkg/apis/audit/validation`), one message per field.
    #[error("{}", .0.join(", "))]
    Invalid(Vec<String>),
    /// No rules.
    #[error("loaded illegal policy with 0 rules")]
    NoRules,
}

/// Known fields, for the lenient decoding's warning (`reader.go` falls back to it).
const POLICY_FIELDS: [&str; 6] = [
    "apiVersion",
    "kind",
    "metadata",
    "rules",
    "omitStages",
    "omitManagedFields",
];
const RULE_FIELDS: [&str; 9] = [
    "level",
    "users",
    "userGroups",
    "verbs",
    "resources",
    "namespaces",
    "nonResourceURLs",
    "omitStages",
    "omitManagedFields",
];
const GROUP_RESOURCES_FIELDS: [&str; 3] = ["group", "resources", "resourceNames"];

impl Policy {
    /// Reads a policy file's bytes (YAML or JSON). Returns the policy and warnings about
    /// fields it does not know (which upstream also ignores, warning that it fell back to
    /// lenient decoding).
    pub fn parse(bytes: &[u8]) -> Result<(Policy, Vec<String>), PolicyError> {
        let value: Value = match serde_json::from_slice(bytes) {
            Ok(value) => value,
            Err(_) => serde_yaml_ng::from_slice(bytes)
                .map_err(|err| PolicyError::Decode(err.to_string()))?,
        };
        let field = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or("");
        if field("apiVersion") != POLICY_API_VERSION || field("kind") != "Policy" {
            return Err(PolicyError::Version {
                api_version: field("apiVersion").to_owned(),
                kind: field("kind").to_owned(),
            });
        }
        let warnings = unknown_fields(&value);
        let raw: RawPolicy = serde_json::from_value(value.clone())
            .map_err(|err| PolicyError::Decode(err.to_string()))?;
        let policy = Policy::validate(raw)?;
        Ok((policy, warnings))
    }

    /// `validation.ValidatePolicy`, then the policy as the checker keeps it.
    fn validate(raw: RawPolicy) -> Result<Policy, PolicyError> {
        let mut errors = Vec::new();
        let omit_stages = stages(&raw.omit_stages, "omitStages", &mut errors);
        let mut rules = Vec::new();
        for (i, rule) in raw.rules.into_iter().enumerate() {
            let path = format!("rules[{i}]");
            let level = match Level::parse(&rule.level) {
                Some(level) => level,
                None if rule.level.is_empty() => {
                    errors.push(format!("{path}.level: Required value"));
                    Level::None
                }
                None => {
                    errors.push(format!(
                        "{path}.level: Unsupported value: {:?}: supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\"",
                        rule.level
                    ));
                    Level::None
                }
            };
            for (j, url) in rule.non_resource_urls.iter().enumerate() {
                if !url.starts_with('/') && url != "*" {
                    errors.push(format!(
                        "{path}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL rules must begin with a '/' character"
                    ));
                }
                if url.find('*').is_some_and(|at| at != url.len() - 1) {
                    errors.push(format!(
                        "{path}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL wildcards '*' must be the final character of the rule"
                    ));
                }
            }
            for (j, resources) in rule.resources.iter().enumerate() {
                let group_errors = if resources.group.is_empty() {
                    Vec::new()
                } else {
                    kubemock_apimachinery::validation::is_dns1123_subdomain(&resources.group)
                };
                if !group_errors.is_empty() {
                    errors.push(format!(
                        "{path}.resources[{j}].group: Invalid value: {:?}: {}",
                        resources.group,
                        group_errors.join(",")
                    ));
                }
                if !resources.resource_names.is_empty() && resources.resources.is_empty() {
                    errors.push(format!(
                        "{path}.resources[{j}].resourceNames: Invalid value: {:?}: using resourceNames requires at least one resource",
                        resources.resource_names
                    ));
                }
            }
            if (!rule.resources.is_empty() || !rule.namespaces.is_empty())
                && !rule.non_resource_urls.is_empty()
            {
                errors.push(format!(
                    "{path}.nonResourceURLs: Invalid value: {:?}: rules cannot apply to both regular resources and non-resource URLs",
                    rule.non_resource_urls
                ));
            }
            let own = stages(
                &rule.omit_stages,
                &format!("{path}.omitStages"),
                &mut errors,
            );
            rules.push(Rule {
                level,
                users: rule.users,
                user_groups: rule.user_groups,
                verbs: rule.verbs,
                resources: rule.resources,
                namespaces: rule.namespaces,
                non_resource_urls: rule.non_resource_urls,
                omit_stages: Stages(own.0 | omit_stages.0),
                omit_managed_fields: rule.omit_managed_fields,
            });
        }
        if !errors.is_empty() {
            return Err(PolicyError::Invalid(errors));
        }
        if rules.is_empty() {
            return Err(PolicyError::NoRules);
        }
        Ok(Policy {
            rules,
            omit_stages,
            omit_managed_fields: raw.omit_managed_fields,
        })
    }

    /// What the policy says of a request with `attributes` by `user` (`None` when
    /// authentication failed: rules naming users or groups do not match it).
    pub(crate) fn evaluate(&self, attributes: &Attributes, user: Option<&UserInfo>) -> Decision {
        for rule in &self.rules {
            if rule.matches(attributes, user) {
                return Decision {
                    level: rule.level,
                    omit_stages: rule.omit_stages,
                    omit_managed_fields: rule
                        .omit_managed_fields
                        .unwrap_or(self.omit_managed_fields),
                };
            }
        }
        Decision {
            level: Level::None,
            omit_stages: self.omit_stages,
            omit_managed_fields: self.omit_managed_fields,
        }
    }
}

fn stages(names: &[String], path: &str, errors: &mut Vec<String>) -> Stages {
    let mut parsed = Vec::new();
    for (i, name) in names.iter().enumerate() {
        match Stage::parse(name) {
            Some(stage) => parsed.push(stage),
            None => errors.push(format!(
                "{path}[{i}]: Invalid value: {name:?}: allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"
            )),
        }
    }
    Stages::of(&parsed)
}

/// Fields of the policy, its rules and their resources that the policy type does not have.
fn unknown_fields(policy: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut check = |value: &Value, path: &str, known: &[&str]| {
        if let Some(object) = value.as_object() {
            for key in object.keys() {
                if !known.contains(&key.as_str()) {
                    found.push(format!("unknown field \"{path}{key}\""));
                }
            }
        }
    };
    check(policy, "", &POLICY_FIELDS);
    let rules = policy.get("rules").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        check(rule, &format!("rules[{i}]."), &RULE_FIELDS);
        let resources = rule.get("resources").and_then(Value::as_array);
        for (j, resources) in resources.into_iter().flatten().enumerate() {
            check(
                resources,
                &format!("rules[{i}].resources[{j}]."),
                &GROUP_RESOURCES_FIELDS,
            );
        }
    }
    found
}

impl Rule {
    /// `ruleMatches`.
    fn matches(&self, attributes: &Attributes, user: Option<&UserInfo>) -> bool {
        if !self.users.is_empty() && !user.is_some_and(|u| self.users.contains(&u.name)) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !user.is_some_and(|u| u.groups.iter().any(|g| self.user_groups.contains(g)))
        {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.contains(&attributes.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(attributes);
        }
        if !self.non_resource_urls.is_empty() {
            return !attributes.resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(&attributes.path, spec));
        }
        true
    }

    /// `ruleMatchesResource`.
    fn matches_resource(&self, attributes: &Attributes) -> bool {
        if !attributes.resource_request {
            return false;
        }
        // Cluster-scoped resources have the empty namespace.
        if !self.namespaces.is_empty() && !self.namespaces.contains(&attributes.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let resource = attributes.resource.as_str();
        let subresource = attributes.subresource.as_str();
        let combined = if subresource.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}/{subresource}")
        };
        self.resources
            .iter()
            .filter(|gr| gr.group == attributes.api_group)
            .any(|gr| {
                if gr.resources.is_empty() {
                    return true;
                }
                if !gr.resource_names.is_empty() && !gr.resource_names.contains(&attributes.name) {
                    return false;
                }
                gr.resources.iter().any(|spec| {
                    spec == &combined
                        || spec == "*"
                        || (!subresource.is_empty() && spec.strip_prefix("*/") == Some(subresource))
                        || spec.strip_suffix("/*") == Some(resource)
                })
            })
    }
}

/// `pathMatches`: exact, `*`, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attributes(verb: &str, path: &str) -> Attributes {
        let (method, path) = match verb {
            "create" => ("POST", path),
            "delete" | "deletecollection" => ("DELETE", path),
            "update" => ("PUT", path),
            "patch" => ("PATCH", path),
            _ => ("GET", path),
        };
        crate::authz::request::attributes_of(
            &method.parse().unwrap(),
            &path.parse().unwrap(),
            UserInfo::default(),
        )
    }

    fn policy(yaml: &str) -> Policy {
        Policy::parse(yaml.as_bytes()).unwrap().0
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..UserInfo::default()
        }
    }

    #[test]
    fn the_first_matching_rule_decides_and_no_match_is_none() {
        let p = policy(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n\
             - level: None\n  users: [system:kube-proxy]\n\
             - level: RequestResponse\n  userGroups: [admins]\n  omitStages: [Panic]\n\
             - level: Request\n  resources: [{group: \"\", resources: [\"pods/log\", \"secrets\"]}]\n\
             - level: Metadata\n  resources: [{group: apps, resources: [\"*/scale\"]}]\n\
             - level: Metadata\n  resources: [{group: \"\", resources: [\"configmaps\"], resourceNames: [c1]}]\n\
             - level: Request\n  namespaces: [kube-system]\n\
             - level: Metadata\n  nonResourceURLs: [\"/healthz*\", /version]\n\
             - level: Request\n  verbs: [watch]\n",
        );
        let alice = user("alice", &["system:authenticated"]);
        let at = |verb: &str, path: &str, who: Option<&UserInfo>| {
            p.evaluate(&attributes(verb, path), who).level
        };
        let proxy = user("system:kube-proxy", &["admins"]);
        assert_eq!(
            at("get", "/api/v1/namespaces/d/pods/p/log", Some(&proxy)),
            Level::None
        );
        let admin = user("bob", &["admins"]);
        let decision = p.evaluate(&attributes("get", "/api/v1/nodes"), Some(&admin));
        assert_eq!(decision.level, Level::RequestResponse);
        assert!(decision.omit_stages.contains(Stage::Panic));
        assert!(decision.omit_stages.contains(Stage::RequestReceived));
        assert!(!decision.omit_stages.contains(Stage::ResponseComplete));
        assert_eq!(
            at("get", "/api/v1/namespaces/d/pods/p/log", Some(&alice)),
            Level::Request
        );
        assert_eq!(
            at("get", "/api/v1/namespaces/d/pods/p", Some(&alice)),
            Level::None
        );
        assert_eq!(at("list", "/api/v1/secrets", Some(&alice)), Level::Request);
        assert_eq!(
            at(
                "update",
                "/apis/apps/v1/namespaces/d/deployments/w/scale",
                Some(&alice)
            ),
            Level::Metadata
        );
        assert_eq!(
            at(
                "update",
                "/apis/apps/v1/namespaces/d/deployments/w",
                Some(&alice)
            ),
            Level::None
        );
        assert_eq!(
            at("get", "/api/v1/namespaces/d/configmaps/c1", Some(&alice)),
            Level::Metadata
        );
        assert_eq!(
            at("get", "/api/v1/namespaces/d/configmaps/c2", Some(&alice)),
            Level::None
        );
        assert_eq!(
            at("get", "/api/v1/namespaces/kube-system/configmaps/x", None),
            Level::Request
        );
        assert_eq!(at("get", "/healthz/etcd", None), Level::Metadata);
        assert_eq!(at("get", "/version", None), Level::Metadata);
        assert_eq!(at("get", "/versions", None), Level::None);
        assert_eq!(
            at("get", "/api/v1/namespaces/d/pods?watch=1", None),
            Level::Request
        );
        // Rules naming users or groups never match a request that failed authentication.
        assert_eq!(
            p.evaluate(&attributes("get", "/api/v1/nodes"), None).level,
            Level::None
        );
    }

    #[test]
    fn wildcards_and_subresources_match_as_upstream() {
        let p = policy(
            r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[
                {"level":"Metadata","resources":[{"group":"","resources":["pods/*"]}]},
                {"level":"Request","resources":[{"group":"","resources":["*"]}]},
                {"level":"RequestResponse","resources":[{"group":"apps"}]}]}"#,
        );
        let at = |verb: &str, path: &str| p.evaluate(&attributes(verb, path), None).level;
        assert_eq!(
            at("get", "/api/v1/namespaces/d/pods/p/log"),
            Level::Metadata
        );
        assert_eq!(at("get", "/api/v1/namespaces/d/pods/p"), Level::Metadata);
        assert_eq!(at("get", "/api/v1/namespaces/d/services/s"), Level::Request);
        assert_eq!(
            at("list", "/apis/apps/v1/deployments"),
            Level::RequestResponse
        );
        assert_eq!(at("list", "/apis/batch/v1/jobs"), Level::None);
        assert_eq!(at("get", "/healthz"), Level::None);
    }

    #[test]
    fn only_v1_policies_are_read() {
        for version in ["audit.k8s.io/v1beta1", "audit.k8s.io/v1alpha1"] {
            let text = format!("apiVersion: {version}\nkind: Policy\nrules: [{{level: None}}]\n");
            let err = Policy::parse(text.as_bytes()).unwrap_err();
            assert!(matches!(err, PolicyError::Version { .. }), "{err}");
            assert!(err.to_string().contains(version), "{err}");
        }
    }

    #[test]
    fn invalid_policies_are_refused_with_field_messages() {
        let cases = [
            ("rules: []", "loaded illegal policy with 0 rules"),
            (
                "rules: [{level: Everything}]",
                "rules[0].level: Unsupported value",
            ),
            ("rules: [{users: [a]}]", "rules[0].level: Required value"),
            (
                "omitStages: [Done]\nrules: [{level: None}]",
                "omitStages[0]: Invalid value",
            ),
            (
                "rules: [{level: None, nonResourceURLs: [healthz]}]",
                "must begin with a '/' character",
            ),
            (
                "rules: [{level: None, nonResourceURLs: [\"/a*b\"]}]",
                "must be the final character",
            ),
            (
                "rules: [{level: None, namespaces: [a], nonResourceURLs: [/a]}]",
                "rules cannot apply to both",
            ),
            (
                "rules: [{level: None, resources: [{resourceNames: [x]}]}]",
                "using resourceNames requires at least one resource",
            ),
            (
                "rules: [{level: None, resources: [{group: Not_A_Group}]}]",
                "rules[0].resources[0].group: Invalid value",
            ),
        ];
        for (body, message) in cases {
            let text = format!("apiVersion: audit.k8s.io/v1\nkind: Policy\n{body}\n");
            let err = Policy::parse(text.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(message), "{body}: {err}");
        }
        let text = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, user: [a]}]\n";
        let (_, warnings) = Policy::parse(text.as_bytes()).unwrap();
        assert_eq!(warnings, ["unknown field \"rules[0].user\""]);
    }
}
