//! The webhooks of stored Mutating/ValidatingWebhookConfigurations, read once per write of a
//! configuration (not per request), and upstream's matching of a request against them:
//! `rules` (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules/
//! rules.go`), `namespaceSelector` and `objectSelector` (`predicates/namespace/matcher.go`,
//! `predicates/object/matcher.go`), with the v1 defaults (`pkg/apis/admissionregistration/v1/
//! defaults.go`: failurePolicy Fail, matchPolicy Equivalent, timeoutSeconds 10, scope `*`,
//! reinvocationPolicy Never, service port 443), and the webhooks' `matchConditions`, compiled
//! here once per configuration version.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use kubemock_cel::admission::{Compiler, Declarations, Expression, Returns};
use serde_json::Value;

use super::client::{DEFAULT_SERVICE_PORT, Endpoint, Location};

/// `timeoutSeconds` when a webhook has none.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The two kinds of configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// MutatingWebhookConfiguration.
    Mutating,
    /// ValidatingWebhookConfiguration.
    Validating,
}

/// An admission operation (`admission.Operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
}

impl Operation {
    /// The wire name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// One of a webhook's `rules` (`RuleWithOperations`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rule {
    /// `operations`.
    pub(crate) operations: Vec<String>,
    /// `apiGroups`.
    pub(crate) api_groups: Vec<String>,
    /// `apiVersions`.
    pub(crate) api_versions: Vec<String>,
    /// `resources` (`res`, `res/sub`, `*`, `*/sub`, `res/*`).
    pub(crate) resources: Vec<String>,
    /// `scope`: `*`, `Cluster` or `Namespaced`.
    pub(crate) scope: String,
}

/// What a rule is matched against: the request's resource (or an equivalent one).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Matched<'a> {
    /// The operation.
    pub(crate) operation: Operation,
    /// Group, version, resource (plural).
    pub(crate) group: &'a str,
    /// The version.
    pub(crate) version: &'a str,
    /// The resource (plural).
    pub(crate) resource: &'a str,
    /// The subresource, empty for none.
    pub(crate) subresource: &'a str,
    /// The request's namespace, empty for none.
    pub(crate) namespace: &'a str,
}

impl Rule {
    /// `rules.Matcher.Matches`.
    pub(crate) fn matches(&self, m: &Matched<'_>) -> bool {
        let any = |items: &[String], wanted: &str| items.iter().any(|i| i == "*" || i == wanted);
        let namespaces = m.group.is_empty() && m.version == "v1" && m.resource == "namespaces";
        let scope = match self.scope.as_str() {
            "" | "*" => true,
            "Namespaced" => !namespaces && !m.namespace.is_empty(),
            "Cluster" => namespaces || m.namespace.is_empty(),
            _ => false,
        };
        scope
            && self
                .operations
                .iter()
                .any(|op| op == "*" || op == m.operation.as_str())
            && any(&self.api_groups, m.group)
            && any(&self.api_versions, m.version)
            && self.resources.iter().any(|r| {
                let (res, sub) = r.split_once('/').unwrap_or((r, ""));
                (res == "*" || res == m.resource) && (sub == "*" || sub == m.subresource)
            })
    }
}

/// One webhook of a configuration, with the v1 defaults applied.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    /// Mutating or validating.
    pub(crate) kind: Kind,
    /// The configuration's name.
    pub(crate) configuration: String,
    /// `name`.
    pub(crate) name: String,
    /// Unique among the hooks in use (configuration and index): reinvocation tracks hooks by
    /// it, as upstream's accessor UID.
    pub(crate) uid: String,
    /// `clientConfig`, or why it cannot be used (a call fails with it).
    pub(crate) endpoint: Result<Endpoint, String>,
    /// `rules`.
    pub(crate) rules: Vec<Rule>,
    /// `failurePolicy: Ignore`.
    pub(crate) ignore_failures: bool,
    /// `matchPolicy: Equivalent` (the v1 default).
    pub(crate) equivalent: bool,
    /// `namespaceSelector` when it selects something.
    pub(crate) namespace_selector: Option<Value>,
    /// `objectSelector` when it selects something.
    pub(crate) object_selector: Option<Value>,
    /// `sideEffects`, if set.
    pub(crate) side_effects: Option<String>,
    /// `timeoutSeconds`.
    pub(crate) timeout: Duration,
    /// `admissionReviewVersions`.
    pub(crate) review_versions: Vec<String>,
    /// `reinvocationPolicy: IfNeeded`.
    pub(crate) reinvoke: bool,
    /// `matchConditions`, compiled once per configuration version.
    pub(crate) match_conditions: Arc<[Expression]>,
}

/// The webhooks of a stored configuration `object` of `kind`.
pub(crate) fn hooks_of(kind: Kind, object: &Value) -> Vec<Hook> {
    let configuration = object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let webhooks = object.get("webhooks").and_then(Value::as_array);
    webhooks
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(index, hook)| {
            let text = |key: &str| hook.get(key).and_then(Value::as_str).map(str::to_owned);
            let selector = |key: &str| hook.get(key).filter(|s| !selector_is_empty(s)).cloned();
            Hook {
                kind,
                configuration: configuration.clone(),
                name: text("name").unwrap_or_default(),
                uid: format!("{configuration}/{index}"),
                endpoint: endpoint_of(hook.get("clientConfig")),
                rules: hook
                    .get("rules")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(rule_of)
                    .collect(),
                ignore_failures: text("failurePolicy").as_deref() == Some("Ignore"),
                equivalent: text("matchPolicy").as_deref() != Some("Exact"),
                namespace_selector: selector("namespaceSelector"),
                object_selector: selector("objectSelector"),
                side_effects: text("sideEffects"),
                timeout: hook
                    .get("timeoutSeconds")
                    .and_then(Value::as_u64)
                    .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
                review_versions: strings(hook.get("admissionReviewVersions")),
                reinvoke: text("reinvocationPolicy").as_deref() == Some("IfNeeded"),
                match_conditions: compile_match_conditions(hook.get("matchConditions")),
            }
        })
        .collect()
}

/// The compiler of webhooks' match conditions (`GetCompiledMatcher` in
/// `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/accessors.go`: no params, the
/// authorizer declared).
pub(crate) fn match_condition_compiler() -> Compiler {
    Compiler::new(
        Declarations {
            params: false,
            authorizer: true,
        },
        false,
    )
}

/// A webhook's (or a policy's) `matchConditions` compiled; one that does not compile (stored
/// before it was checked) fails when evaluated, as upstream's.
pub(crate) fn compile_conditions(
    compiler: &Compiler,
    conditions: Option<&Value>,
) -> Arc<[Expression]> {
    conditions
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|condition| {
            let expression = condition
                .get("expression")
                .and_then(Value::as_str)
                .unwrap_or("");
            compiler.compile(expression, Returns::Bool, true)
        })
        .collect()
}

fn compile_match_conditions(conditions: Option<&Value>) -> Arc<[Expression]> {
    compile_conditions(&match_condition_compiler(), conditions)
}

/// A `clientConfig` (a webhook's, or a CRD conversion's `webhook.clientConfig`).
pub(crate) fn endpoint_of(config: Option<&Value>) -> Result<Endpoint, String> {
    let config = config.ok_or("webhook configuration must have either service or URL")?;
    let ca_bundle = match config.get("caBundle").and_then(Value::as_str) {
        None | Some("") => None,
        Some(text) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|err| format!("illegal base64 data in caBundle: {err}"))?,
        ),
    };
    let location = if let Some(service) = config.get("service") {
        let text = |key: &str| {
            service
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        Location::Service {
            namespace: text("namespace"),
            name: text("name"),
            path: rooted_clean(&text("path")),
            port: service
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(DEFAULT_SERVICE_PORT),
        }
    } else if let Some(url) = config.get("url").and_then(Value::as_str) {
        Location::Url(clean_url_path(url))
    } else {
        return Err("webhook configuration must have either service or URL".to_owned());
    };
    Ok(Endpoint {
        location,
        ca_bundle,
    })
}

/// `path` as upstream's REST client sends it: `path.Join("/", path)` in Go, rooted and
/// cleaned (`//a/./b/` is `/a/b`, empty is `/`). Upstream's webhook client puts the URL's or
/// the service's path in `APIPath` (`staging/src/k8s.io/apiserver/pkg/util/webhook/
/// client.go`), which client-go joins into the request's path (`DefaultVersionedAPIPath` and
/// `NewRESTClient` in `staging/src/k8s.io/client-go/rest/`). envtest writes `https://HOST:PORT/`
/// before a service's path that already starts with `/` (`updateClientConfig` in
/// controller-runtime's `pkg/envtest/webhook.go`): the double slash never reaches the server.
fn rooted_clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `url` with its path cleaned as [`rooted_clean`] cleans it (the scheme, host and any query
/// kept as they are).
fn clean_url_path(url: &str) -> String {
    let Some(authority_at) = url.find("://").map(|at| at + 3) else {
        return url.to_owned();
    };
    let rest = &url[authority_at..];
    let path_at = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(path_at);
    let query_at = after.find(['?', '#']).unwrap_or(after.len());
    let (path, query) = after.split_at(query_at);
    format!(
        "{}{authority}{}{query}",
        &url[..authority_at],
        rooted_clean(path)
    )
}

pub(crate) fn rule_of(rule: &Value) -> Rule {
    Rule {
        operations: strings(rule.get("operations")),
        api_groups: strings(rule.get("apiGroups")),
        api_versions: strings(rule.get("apiVersions")),
        resources: strings(rule.get("resources")),
        scope: rule
            .get("scope")
            .and_then(Value::as_str)
            .unwrap_or("*")
            .to_owned(),
    }
}

pub(crate) fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Whether a label selector selects nothing in particular (and so matches everything).
fn selector_is_empty(selector: &Value) -> bool {
    let count = |key: &str| match selector.get(key) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    count("matchLabels") + count("matchExpressions") == 0
}

/// Whether `selector` (a LabelSelector) selects `labels`; an invalid selector selects
/// nothing.
pub(crate) fn selector_matches(selector: &Value, labels: Option<&Value>) -> bool {
    let Ok(selector) = kubemock_apimachinery::labels::Selector::from_label_selector_json(selector)
    else {
        return false;
    };
    let empty = serde_json::Map::new();
    selector.matches(labels.and_then(Value::as_object).unwrap_or(&empty))
}

/// `MatchObjectSelector`: the selector matches the object's labels or the old object's.
pub(crate) fn object_selected(hook: &Hook, object: Option<&Value>, old: Option<&Value>) -> bool {
    selected_by(hook.object_selector.as_ref(), object, old)
}

/// `MatchObjectSelector` for any selector (none selects everything).
pub(crate) fn selected_by(
    selector: Option<&Value>,
    object: Option<&Value>,
    old: Option<&Value>,
) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    let labels =
        |o: &Value| selector_matches(selector, o.get("metadata").and_then(|m| m.get("labels")));
    object.is_some_and(labels) || old.is_some_and(labels)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn matched<'a>(
        operation: Operation,
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
    ) -> Matched<'a> {
        Matched {
            operation,
            group: "",
            version: "v1",
            resource,
            subresource: sub,
            namespace: ns,
        }
    }

    /// Cases of `predicates/rules/rules_test.go` (`TestScope`, `TestResource`).
    #[test]
    fn rules_match_as_upstreams_tables_say() {
        let rule = |resources: &[&str], scope: &str| Rule {
            operations: vec!["*".to_owned()],
            api_groups: vec!["*".to_owned()],
            api_versions: vec!["*".to_owned()],
            resources: resources.iter().map(|s| (*s).to_owned()).collect(),
            scope: scope.to_owned(),
        };
        let create = Operation::Create;
        assert!(rule(&["pods"], "*").matches(&matched(create, "pods", "", "ns")));
        assert!(!rule(&["pods"], "*").matches(&matched(create, "pods", "status", "ns")));
        assert!(rule(&["pods/status"], "*").matches(&matched(create, "pods", "status", "ns")));
        assert!(rule(&["*/status"], "*").matches(&matched(create, "deployments", "status", "ns")));
        assert!(!rule(&["*/status"], "*").matches(&matched(create, "deployments", "", "ns")));
        assert!(rule(&["pods/*"], "*").matches(&matched(create, "pods", "", "ns")));
        assert!(rule(&["*"], "*").matches(&matched(create, "pods", "", "ns")));
        assert!(!rule(&["*"], "*").matches(&matched(create, "pods", "log", "ns")));
        // Namespaces are cluster-scoped whatever their namespace attribute says.
        assert!(!rule(&["*"], "Namespaced").matches(&matched(create, "namespaces", "", "ns")));
        assert!(rule(&["*"], "Cluster").matches(&matched(create, "namespaces", "", "ns")));
        assert!(rule(&["*"], "Cluster").matches(&matched(create, "nodes", "", "")));
        assert!(!rule(&["*"], "Cluster").matches(&matched(create, "pods", "", "ns")));
        let updates = Rule {
            operations: vec!["UPDATE".to_owned()],
            ..rule(&["*"], "*")
        };
        assert!(!updates.matches(&matched(create, "pods", "", "ns")));
        assert!(updates.matches(&matched(Operation::Update, "pods", "", "ns")));
    }

    #[test]
    fn v1_defaults_apply_to_a_minimal_webhook() {
        let hooks = hooks_of(
            Kind::Validating,
            &json!({"metadata": {"name": "c"}, "webhooks": [{
                "name": "a.example.com",
                "clientConfig": {"service": {"namespace": "ns", "name": "svc"}, "caBundle": "AAAA"},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
                "admissionReviewVersions": ["v1"], "sideEffects": "None"}]}),
        );
        assert_eq!(hooks.len(), 1);
        let hook = &hooks[0];
        assert!(!hook.ignore_failures && hook.equivalent && !hook.reinvoke);
        assert_eq!(hook.timeout, Duration::from_secs(10));
        assert_eq!(hook.rules[0].scope, "*");
        let endpoint = hook.endpoint.as_ref().expect("an endpoint");
        assert_eq!(endpoint.ca_bundle.as_deref(), Some(&[0u8, 0, 0][..]));
        assert!(matches!(
            endpoint.location,
            Location::Service { port: 443, .. }
        ));
    }

    /// envtest's `https://HOST:PORT/` + `/path`, and a path-less URL or service, are called
    /// at the path client-go's `path.Join` makes of them.
    #[test]
    fn paths_are_cleaned_as_upstreams_rest_client_cleans_them() {
        let location = |config: Value| endpoint_of(Some(&config)).map(|e| e.location);
        assert_eq!(
            location(json!({"url": "https://127.0.0.1:9443//mutate-v1-x/"})),
            Ok(Location::Url(
                "https://127.0.0.1:9443/mutate-v1-x".to_owned()
            ))
        );
        assert_eq!(
            location(json!({"url": "https://127.0.0.1:9443"})),
            Ok(Location::Url("https://127.0.0.1:9443/".to_owned()))
        );
        assert_eq!(
            location(json!({"url": "https://h:1/a/./b/../c"})),
            Ok(Location::Url("https://h:1/a/c".to_owned()))
        );
        assert!(matches!(
            location(json!({"service": {"namespace": "ns", "name": "svc"}})),
            Ok(Location::Service { path, .. }) if path == "/"
        ));
        assert!(matches!(
            location(json!({"service": {"namespace": "ns", "name": "svc", "path": "//convert/"}})),
            Ok(Location::Service { path, .. }) if path == "/convert"
        ));
    }
}
