//! CEL in admission: webhooks' `matchConditions` and ValidatingAdmissionPolicies with their
//! bindings, over real sockets. Upstream's behaviour is the reference:
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions/matcher.go` and
//! `.../webhook/generic/webhook.go` (`ShouldCallHook`), `.../policy/validating/dispatcher.go`
//! and `validator.go`, `.../policy/generic/policy_dispatcher.go` (`CollectParams`), and
//! `pkg/apis/admissionregistration/validation/validation.go`; the cases follow upstream's
//! `test/integration/apiserver/admissionwebhook/match_conditions_test.go` and
//! `test/integration/apiserver/cel/validatingadmissionpolicy_test.go`.
//!
//! In-process only: the servers must reach the test's webhook servers on 127.0.0.1.

use std::sync::Arc;

use kubemock_conformance::webhook_server::{Answer, WebhookServer, admission_answer};
use kubemock_conformance::{Harness, Reply, configmap};
use serde_json::{Value, json};

const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/// A webhook server that allows everything, counting calls.
async fn allowing_server() -> WebhookServer {
    WebhookServer::start(
        &[],
        Arc::new(|_, review| Answer::Json(admission_answer(review, json!({"allowed": true})))),
    )
    .await
}

/// A configuration of `kind` with one webhook on configmaps and these `extra` fields.
fn configuration(kind: &str, name: &str, server: &WebhookServer, extra: Value) -> Value {
    let mut hook = json!({
        "name": format!("{name}.example.com"),
        "clientConfig": {"url": server.url("/admit"), "caBundle": server.ca_bundle},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Value::Object(hook), Value::Object(extra)) = (&mut hook, extra) {
        hook.extend(extra);
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
           "metadata": {"name": name}, "webhooks": [hook]})
}

async fn create_configmap(h: &Harness, ns: &str, body: Value) -> Reply {
    h.post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body)
        .await
}

fn message(reply: &Reply) -> &str {
    reply.body["message"].as_str().unwrap_or("")
}

#[tokio::test]
async fn match_conditions_decide_whether_a_webhook_is_called() {
    let h = Harness::start().await;
    let ns = h.namespace("vap-conditions").await;
    let validating = allowing_server().await;
    let mutating = allowing_server().await;
    let conditions = json!({"matchConditions": [
        {"name": "not-skipped", "expression": "object.metadata.name != 'skip-me'"},
        {"name": "is-create-or-update", "expression": "request.operation in ['CREATE', 'UPDATE']"},
        {"name": "no-old-object-on-create",
         "expression": "request.operation != 'CREATE' || oldObject == null"},
    ]});
    let created = h
        .post(
            VALIDATING,
            &configuration(
                "ValidatingWebhookConfiguration",
                "checks",
                &validating,
                conditions.clone(),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let created = h
        .post(
            MUTATING,
            &configuration(
                "MutatingWebhookConfiguration",
                "defaults",
                &mutating,
                conditions,
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);

    let skipped = create_configmap(&h, &ns, configmap("skip-me", json!({}))).await;
    assert_eq!(skipped.status, 201, "{}", skipped.body);
    assert_eq!((validating.calls(), mutating.calls()), (0, 0));
    let checked = create_configmap(&h, &ns, configmap("check-me", json!({}))).await;
    assert_eq!(checked.status, 201, "{}", checked.body);
    assert_eq!((validating.calls(), mutating.calls()), (1, 1));
}

#[tokio::test]
async fn a_failing_match_condition_follows_the_failure_policy() {
    let h = Harness::start().await;
    let ns = h.namespace("vap-condition-errors").await;
    let server = allowing_server().await;
    // `object.data.size` is missing from a configmap without it: an evaluation error.
    let failing = |policy: &str| {
        json!({"failurePolicy": policy, "matchConditions": [
            {"name": "small", "expression": "object.data.size == 'small'"}]})
    };
    let created = h
        .post(
            VALIDATING,
            &configuration(
                "ValidatingWebhookConfiguration",
                "fail-closed",
                &server,
                failing("Fail"),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let refused = create_configmap(&h, &ns, configmap("no-size", json!({"a": "b"}))).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["reason"], "Forbidden");
    assert_eq!(
        message(&refused),
        "configmaps \"no-size\" is forbidden: expression 'object.data.size == 'small'' resulted in error: no such key: size"
    );
    assert_eq!(server.calls(), 0);
    // A false condition wins over the error of another.
    let sized = create_configmap(&h, &ns, configmap("sized", json!({"size": "big"}))).await;
    assert_eq!(sized.status, 201, "{}", sized.body);
    assert_eq!(server.calls(), 0);

    let removed = h.delete(&format!("{VALIDATING}/fail-closed"), None).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    let created = h
        .post(
            VALIDATING,
            &configuration(
                "ValidatingWebhookConfiguration",
                "fail-open",
                &server,
                failing("Ignore"),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let ignored = create_configmap(&h, &ns, configmap("no-size-2", json!({"a": "b"}))).await;
    assert_eq!(ignored.status, 201, "{}", ignored.body);
    assert_eq!(
        server.calls(),
        0,
        "an evaluation error under Ignore skips the webhook"
    );
    let small = create_configmap(&h, &ns, configmap("small", json!({"size": "small"}))).await;
    assert_eq!(small.status, 201, "{}", small.body);
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn bad_match_conditions_are_refused_with_upstreams_messages() {
    let h = Harness::start().await;
    let server = allowing_server().await;
    let with = |conditions: Value| {
        configuration(
            "ValidatingWebhookConfiguration",
            "bad",
            &server,
            json!({"matchConditions": conditions}),
        )
    };
    let not_bool = h
        .post(
            VALIDATING,
            &with(json!([{"name": "a", "expression": "object.metadata.name"}])),
        )
        .await;
    assert_eq!(not_bool.status, 422, "{}", not_bool.body);
    assert_eq!(
        message(&not_bool),
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name\": must evaluate to bool but got dyn"
    );
    let duplicate = h
        .post(
            VALIDATING,
            &with(json!([{"name": "a", "expression": "true"},
                         {"name": "a", "expression": "request.nope == 'x'"}])),
        )
        .await;
    assert_eq!(duplicate.status, 422, "{}", duplicate.body);
    let text = message(&duplicate);
    assert!(
        text.contains("webhooks[0].matchConditions[1].expression: Invalid value: \"request.nope == 'x'\": compilation failed: ERROR: <input>:1:8: undefined field 'nope'"),
        "{text}"
    );
    assert!(
        text.contains("webhooks[0].matchConditions[1].name: Duplicate value: \"a\""),
        "{text}"
    );
    // The authorizer library type-checks: `check` belongs to a resource or path check, not
    // to a group (upstream's overloads).
    let authorizer = h
        .post(
            VALIDATING,
            &with(json!([{"name": "a",
                "expression": "authorizer.group('').check('create').allowed()"}])),
        )
        .await;
    assert_eq!(authorizer.status, 422, "{}", authorizer.body);
    assert!(
        message(&authorizer).contains("found no matching overload for 'check'"),
        "{}",
        authorizer.body
    );
    // Nothing was stored.
    assert_eq!(h.get(&format!("{VALIDATING}/bad")).await.status, 404);
}

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

/// A policy on deployments' creates and updates with this `spec` (merged over the rules).
fn policy(name: &str, spec: Value) -> Value {
    let mut full = json!({
        "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
    });
    if let (Value::Object(full), Value::Object(spec)) = (&mut full, spec) {
        full.extend(spec);
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": name}, "spec": full})
}

fn binding(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
           "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": spec})
}

async fn install(h: &Harness, policy: Value, binding: Value) {
    let created = h.post(POLICIES, &policy).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let created = h.post(BINDINGS, &binding).await;
    assert_eq!(created.status, 201, "{}", created.body);
}

async fn create_deployment(h: &Harness, ns: &str, name: &str, replicas: i64) -> Reply {
    h.post(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        &kubemock_conformance::deployment(name, replicas, "nginx"),
    )
    .await
}

fn warnings(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect()
}

/// The issue's acceptance case: a policy with a ConfigMap param, bound with `Deny`, refuses a
/// Deployment with more replicas than the param allows (upstream's
/// `TestValidatingAdmissionPolicy` with params, `validatingadmissionpolicy_test.go`).
#[tokio::test]
async fn a_policy_with_a_configmap_param_refuses_a_deployment_with_too_many_replicas() {
    let h = Harness::start().await;
    let ns = h.namespace("vap-replicas").await;
    let limits = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap("limits", json!({"maxReplicas": "3"})),
        )
        .await;
    assert_eq!(limits.status, 201, "{}", limits.body);
    install(
        &h,
        policy(
            "replica-limit",
            json!({
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConditions": [{"name": "not-exempt",
                    "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
                "variables": [{"name": "replicas", "expression": "object.spec.replicas"},
                              {"name": "limit", "expression": "int(params.data.maxReplicas)"}],
                "validations": [{
                    "expression": "variables.replicas <= variables.limit",
                    "messageExpression": "'replicas ' + string(variables.replicas) + ' exceed ' + string(variables.limit)",
                }],
            }),
        ),
        binding(
            "replica-limit-binding",
            json!({"policyName": "replica-limit", "validationActions": ["Deny"],
                   "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await;
    let stored = h.get(&format!("{POLICIES}/replica-limit")).await;
    assert_eq!(
        stored.body["spec"]["failurePolicy"], "Fail",
        "{}",
        stored.body
    );
    assert_eq!(
        stored.body["spec"]["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );

    let refused = create_deployment(&h, &ns, "web", 5).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(refused.body["reason"], "Invalid");
    let expected = "ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: replicas 5 exceed 3";
    assert_eq!(
        message(&refused),
        format!("deployments.apps \"web\" is forbidden: {expected}")
    );
    assert_eq!(
        refused.body["details"],
        json!({"name": "web", "group": "apps", "kind": "deployments",
               "causes": [{"message": expected}]})
    );
    let allowed = create_deployment(&h, &ns, "small", 2).await;
    assert_eq!(allowed.status, 201, "{}", allowed.body);
    // An update is checked too.
    let mut bigger = allowed.body.clone();
    bigger["spec"]["replicas"] = json!(4);
    let refused = h
        .put(
            &format!("/apis/apps/v1/namespaces/{ns}/deployments/small"),
            &bigger,
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    // The match condition exempts labelled objects.
    let mut exempt = kubemock_conformance::deployment("exempt", 9, "nginx");
    exempt["metadata"]["labels"]["exempt"] = json!("yes");
    let created = h
        .post(
            &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
            &exempt,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    // The param is read on each request.
    let raised = h
        .patch(
            &format!("/api/v1/namespaces/{ns}/configmaps/limits"),
            "application/merge-patch+json",
            &json!({"data": {"maxReplicas": "10"}}),
        )
        .await;
    assert_eq!(raised.status, 200, "{}", raised.body);
    assert_eq!(create_deployment(&h, &ns, "web", 5).await.status, 201);
    // No param in another namespace: `Deny` makes it a configuration error, and the policy's
    // failurePolicy (Fail) refuses.
    let other = h.namespace("vap-replicas-other").await;
    let refused = create_deployment(&h, &other, "web", 1).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        message(&refused),
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
}

#[tokio::test]
async fn parameter_not_found_action_allow_admits_without_params() {
    let h = Harness::start().await;
    let ns = h.namespace("vap-allow").await;
    install(
        &h,
        policy(
            "needs-params",
            json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                   "validations": [{"expression": "object.spec.replicas < int(params.data.max)"}]}),
        ),
        binding(
            "needs-params",
            json!({"policyName": "needs-params", "validationActions": ["Deny"],
                   "paramRef": {"selector": {"matchLabels": {"limits": "yes"}},
                                "parameterNotFoundAction": "Allow"}}),
        ),
    )
    .await;
    assert_eq!(create_deployment(&h, &ns, "any", 50).await.status, 201);
    // Once a param is selected it applies; the default message names the expression.
    let mut limits = configmap("limits", json!({"max": "3"}));
    limits["metadata"]["labels"] = json!({"limits": "yes"});
    let created = h
        .post(&format!("/api/v1/namespaces/{ns}/configmaps"), &limits)
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let refused = create_deployment(&h, &ns, "big", 50).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        message(&refused).ends_with(
            "denied request: failed expression: object.spec.replicas < int(params.data.max)"
        ),
        "{}",
        refused.body
    );
}

#[tokio::test]
async fn evaluation_errors_follow_the_failure_policy_and_reasons_set_the_code() {
    let h = Harness::start().await;
    let ns = h.namespace("vap-failures").await;
    install(
        &h,
        policy(
            "strict",
            json!({"validations": [{"expression": "object.spec.nope > 1"}]}),
        ),
        binding(
            "strict",
            json!({"policyName": "strict", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let refused = create_deployment(&h, &ns, "web", 1).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        message(&refused),
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: expression 'object.spec.nope > 1' resulted in error: no such key: nope"
    );
    let relaxed = h
        .patch(
            &format!("{POLICIES}/strict"),
            "application/merge-patch+json",
            &json!({"spec": {"failurePolicy": "Ignore"}}),
        )
        .await;
    assert_eq!(relaxed.status, 200, "{}", relaxed.body);
    assert_eq!(create_deployment(&h, &ns, "web", 1).await.status, 201);
    // A reason picks the code.
    install(
        &h,
        policy(
            "forbidden-name",
            json!({"validations": [{"expression": "object.metadata.name != 'banned'",
                                    "message": "that name is banned", "reason": "Forbidden"}]}),
        ),
        binding(
            "forbidden-name",
            json!({"policyName": "forbidden-name", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let refused = create_deployment(&h, &ns, "banned", 1).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["reason"], "Forbidden");
    assert!(message(&refused).ends_with("denied request: that name is banned"));
}

#[tokio::test]
async fn warn_and_audit_actions_admit_with_a_warning_and_audit_annotations() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (audit_policy, _) = kubemock_apiserver::AuditPolicy::parse(
        b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .expect("a valid policy");
    let log = dir.path().join("audit.log");
    let audit = kubemock_apiserver::AuditConfig::start(
        audit_policy,
        &kubemock_apiserver::AuditLog::File(log.clone()),
    )
    .expect("open the log");
    let h = Harness::start_with(kubemock_apiserver::ServerConfig {
        audit: Some(audit),
        ..kubemock_apiserver::ServerConfig::default()
    })
    .await;
    let ns = h.namespace("vap-warn").await;
    install(
        &h,
        policy(
            "replicas",
            json!({"validations": [{"expression": "object.spec.replicas <= 2",
                                    "message": "at most 2 replicas"}],
                   "auditAnnotations": [{"key": "replicas",
                       "valueExpression": "'replicas: ' + string(object.spec.replicas)"}]}),
        ),
        binding(
            "replicas-warn",
            json!({"policyName": "replicas", "validationActions": ["Warn", "Audit"]}),
        ),
    )
    .await;
    let created = create_deployment(&h, &ns, "web", 5).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        warnings(&created),
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'replicas' with binding 'replicas-warn': at most 2 replicas\""
        ]
    );
    let audit_id = created
        .headers
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let annotations = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|e| e["auditID"] == audit_id.as_str() && e["stage"] == "ResponseComplete");
        if let Some(event) = found {
            break event["annotations"].clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no event for {audit_id}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(
        annotations["replicas/replicas"], "replicas: 5",
        "{annotations}"
    );
    let failure: Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap_or("null"),
    )
    .expect("JSON");
    assert_eq!(
        failure,
        json!([{"message": "at most 2 replicas", "policy": "replicas", "binding": "replicas-warn",
                "expressionIndex": 0, "validationActions": ["Warn", "Audit"]}])
    );
    // Within the limit: no warning.
    let quiet = create_deployment(&h, &ns, "small", 1).await;
    assert_eq!(quiet.status, 201, "{}", quiet.body);
    assert!(warnings(&quiet).is_empty());
}

#[tokio::test]
async fn bad_policies_and_bindings_are_refused_with_upstreams_messages() {
    let h = Harness::start().await;
    let refused = h
        .post(
            POLICIES,
            &policy(
                "bad",
                json!({"validations": [{"expression": "params.max > 1"},
                                       {"expression": "object.spec.replicas",
                                        "messageExpression": "1"}]}),
            ),
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    let text = message(&refused);
    assert!(
        text.starts_with("ValidatingAdmissionPolicy.admissionregistration.k8s.io \"bad\" is invalid: [spec.validations[0].expression: Invalid value: \"params.max > 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')"),
        "{text}"
    );
    assert!(
        text.contains("spec.validations[1].expression: Invalid value: \"object.spec.replicas\": must evaluate to bool but got dyn"),
        "{text}"
    );
    assert!(
        text.contains("spec.validations[1].messageExpression: Invalid value: \"1\": must evaluate to string but got int"),
        "{text}"
    );
    let empty = h.post(POLICIES, &policy("empty", json!({}))).await;
    assert_eq!(empty.status, 422, "{}", empty.body);
    assert!(
        message(&empty).contains("spec.validations: Required value: validations or auditAnnotations must contain at least one item"),
        "{}",
        empty.body
    );
    let no_actions = h
        .post(BINDINGS, &binding("b", json!({"policyName": "p"})))
        .await;
    assert_eq!(no_actions.status, 422, "{}", no_actions.body);
    assert_eq!(
        message(&no_actions),
        "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"b\" is invalid: spec.validationActions: Required value: at least one validation action is required"
    );
}

/// The CEL authorizer library asks the server's own authorizer (RBAC on a secure server), as
/// the requester, and `authorizer.requestResource` is the request's resource
/// (`staging/src/k8s.io/apiserver/pkg/cel/library/authz.go`): a policy that lets a user create
/// ConfigMaps only where they may also read Secrets refuses alice until a Role lets her.
#[tokio::test]
async fn a_policy_asks_rbac_through_the_authorizer_library() {
    use kubemock_apiserver::{SecurityOptions, ServerConfig, TestServer};
    let config = ServerConfig::secure(&SecurityOptions::default()).expect("a secure configuration");
    let server = TestServer::start_with(config, kubemock_storage::Config::ephemeral())
        .await
        .expect("start a secure server");
    let security = server.security().expect("secure");
    let as_user = |user: &str, groups: &[&str]| {
        let identity = security
            .issue_client_identity(user, groups)
            .expect("a client certificate");
        let pem = format!("{}{}", identity.certificate_pem, identity.key_pem);
        Harness::connect_with(
            server.url(),
            kubemock_conformance::tls_client(security.server_ca_pem(), Some(&pem), None),
        )
    };
    let admin = as_user("kubemock-admin", &["system:masters"]);
    let alice = as_user("alice", &["developers"]);
    let ns = admin.namespace("vap-authz").await;
    let role = |name: &str, resources: &str, verbs: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": name},
               "rules": [{"apiGroups": [""], "resources": [resources], "verbs": verbs}]})
    };
    let bind = |name: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
               "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]})
    };
    let roles = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles");
    let bindings = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings");
    for (name, resources, verbs) in [("writer", "configmaps", json!(["create"]))] {
        assert_eq!(
            admin
                .post(&roles, &role(name, resources, verbs))
                .await
                .status,
            201
        );
        assert_eq!(admin.post(&bindings, &bind(name)).await.status, 201);
    }
    let created = admin
        .post(
            POLICIES,
            &json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "secret-readers"},
                "spec": {
                    "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["CREATE"], "resources": ["configmaps"]}]},
                    "validations": [
                        {"expression": "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()",
                         "message": "only those who may read secrets here may create configmaps"},
                        {"expression": "authorizer.requestResource.check('create').allowed()",
                         "message": "the requester may not create what it asks to"}]
                }}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let created = admin
        .post(
            BINDINGS,
            &binding(
                "secret-readers",
                json!({"policyName": "secret-readers", "validationActions": ["Deny"]}),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let path = format!("/api/v1/namespaces/{ns}/configmaps");

    let refused = alice.post(&path, &configmap("one", json!({}))).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        message(&refused).contains("only those who may read secrets here may create configmaps"),
        "{}",
        refused.body
    );
    // The administrator may read secrets: the first rule holds for the requester only.
    let by_admin = admin.post(&path, &configmap("admins", json!({}))).await;
    assert_eq!(by_admin.status, 201, "{}", by_admin.body);

    assert_eq!(
        admin
            .post(&roles, &role("reader", "secrets", json!(["get"])))
            .await
            .status,
        201
    );
    assert_eq!(admin.post(&bindings, &bind("reader")).await.status, 201);
    let allowed = alice.post(&path, &configmap("two", json!({}))).await;
    assert_eq!(allowed.status, 201, "{}", allowed.body);
}

/// kubemock's controller manager with only the ValidatingAdmissionPolicy status controller
/// (kube-controller-manager's, upstream `pkg/controller/validatingadmissionpolicystatus/`),
/// against the in-process server; `None` against an external server, whose own controller
/// manager writes the status.
fn status_controller(h: &Harness) -> Option<tokio_util::sync::CancellationToken> {
    h.in_process()?;
    let token = tokio_util::sync::CancellationToken::new();
    let client =
        kubemock_client::Client::new(kubemock_client::Config::new(h.url())).expect("a client");
    let config = kubemock_controllers::ManagerConfig::from_list(
        "validatingadmissionpolicy-status-controller",
    )
    .expect("a known controller");
    tokio::spawn(kubemock_controllers::run(client, config, token.clone()));
    Some(token)
}

/// How long the status controller may take to write a status.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(20);

/// GETs the policy until its `status.observedGeneration` is `generation` (or panics after
/// [`SETTLE`]); its status then.
async fn status_at(h: &Harness, name: &str, generation: i64) -> Value {
    let deadline = std::time::Instant::now() + SETTLE;
    loop {
        let reply = h.get(&format!("{POLICIES}/{name}")).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        if reply.body["status"]["observedGeneration"] == generation {
            return reply.body["status"].clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "policy {name} not observed at generation {generation}: {}",
            reply.body
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Issue 20: a typo in a policy's expression shows in `status.typeChecking` with upstream's
/// text and fieldRef (`policy/validating/typechecking.go`), written by the status
/// controller's field manager; a correct policy gets an empty typeChecking; fixing the
/// expression clears the warning at the next generation.
#[tokio::test]
async fn type_checking_reports_a_misspelt_field_and_clears_when_fixed() {
    let h = Harness::start().await;
    let Some(_manager) = status_controller(&h) else {
        eprintln!("SKIPPED: needs the in-process server to run the status controller");
        return;
    };
    let typo = policy(
        "typo",
        json!({"validations": [
            {"expression": "object.spec.replica > 1", "messageExpression": "'too few: ' + string(object.spec.replicas)"}]}),
    );
    let created = h.post(POLICIES, &typo).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let correct = policy(
        "correct",
        json!({"validations": [{"expression": "object.spec.replicas > 1 && object.metadata.labels['app'] != ''"}]}),
    );
    let created = h.post(POLICIES, &correct).await;
    assert_eq!(created.status, 201, "{}", created.body);

    let status = status_at(&h, "typo", 1).await;
    assert_eq!(
        status["typeChecking"],
        json!({"expressionWarnings": [{
            "fieldRef": "spec.validations[0].expression",
            "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'\n | object.spec.replica > 1\n | ...........^\n",
        }]})
    );
    let status = status_at(&h, "correct", 1).await;
    assert_eq!(status, json!({"observedGeneration": 1, "typeChecking": {}}));

    let stored = h.get(&format!("{POLICIES}/typo")).await.body;
    let status_manager = stored["metadata"]["managedFields"]
        .as_array()
        .and_then(|m| {
            m.iter()
                .find(|e| e["manager"] == "validatingadmissionpolicy-status")
        })
        .unwrap_or_else(|| panic!("no status manager in {stored}"));
    assert_eq!(status_manager["operation"], "Apply");
    assert_eq!(status_manager["subresource"], "status");

    // The fix is a new generation: checked again, the warning gone.
    let mut fixed = stored.clone();
    fixed["spec"]["validations"][0]["expression"] = json!("object.spec.replicas > 1");
    let updated = h.put(&format!("{POLICIES}/typo"), &fixed).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert_eq!(updated.body["metadata"]["generation"], 2);
    let status = status_at(&h, "typo", 2).await;
    assert_eq!(status["typeChecking"], json!({}));
}

/// A policy on a custom resource is checked against the definition's schema, read from the
/// server's `/openapi/v3`; one created before its definition is checked, as upstream, at its
/// next generation (a new definition does not bump it).
#[tokio::test]
async fn type_checking_reads_custom_resources_schemas() {
    let h = Harness::start().await;
    let Some(_manager) = status_controller(&h) else {
        eprintln!("SKIPPED: needs the in-process server to run the status controller");
        return;
    };
    let on_gadgets = |name: &str, expression: &str| {
        let mut p = policy(name, json!({"validations": [{"expression": expression}]}));
        p["spec"]["matchConstraints"]["resourceRules"] = json!([{"apiGroups": ["tc.example.com"],
            "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["gadgets"]}]);
        p
    };
    let early = h
        .post(POLICIES, &on_gadgets("early", "object.spec.sise > 1"))
        .await;
    assert_eq!(early.status, 201, "{}", early.body);
    // No such resource yet: nothing to check against.
    assert_eq!(status_at(&h, "early", 1).await["typeChecking"], json!({}));

    let definition = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.tc.example.com"},
        "spec": {"group": "tc.example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}, "color": {"type": "string"}}}}}}}]}});
    let created = h
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &definition,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);

    let late = h
        .post(
            POLICIES,
            &on_gadgets("late", "object.spec.sise > 1 && object.metadata.name != ''"),
        )
        .await;
    assert_eq!(late.status, 201, "{}", late.body);
    let status = status_at(&h, "late", 1).await;
    assert_eq!(
        status["typeChecking"],
        json!({"expressionWarnings": [{
            "fieldRef": "spec.validations[0].expression",
            "warning": "tc.example.com/v1, Kind=Gadget: ERROR: <input>:1:12: undefined field 'sise'\n | object.spec.sise > 1 && object.metadata.name != ''\n | ...........^\n",
        }]})
    );

    // The early policy's next generation sees the definition.
    let mut early = h.get(&format!("{POLICIES}/early")).await.body;
    early["spec"]["validations"] = json!([{"expression": "object.spec.size > 1"},
                                         {"expression": "object.spec.color > 1"}]);
    let updated = h.put(&format!("{POLICIES}/early"), &early).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    let status = status_at(&h, "early", 2).await;
    let warnings = status["typeChecking"]["expressionWarnings"]
        .as_array()
        .unwrap_or_else(|| panic!("warnings in {status}"));
    assert_eq!(warnings.len(), 1, "{status}");
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[1].expression");
    let warning = warnings[0]["warning"].as_str().unwrap_or_default();
    assert!(
        warning.starts_with(
            "tc.example.com/v1, Kind=Gadget: ERROR: <input>:1:19: found no matching overload for '_>_' applied to '(string, int)'"
        ),
        "{warning}"
    );
}
