//! docs/api-behaviour.md#server-side-defaults: the defaults a real server fills in on create and on every update, and
//! the validation of the kinds controllers drive (422 Invalid, one cause per field, in the real
//! wording), immutable fields included.

use kubemock_conformance::{Harness, causes, deployment};
use serde_json::{Value, json};

fn pod(name: &str, containers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": containers}})
}

#[tokio::test]
async fn s3_10_a_created_pod_shows_the_defaults_and_admission_additions_of_a_real_cluster() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-pod").await;
    let body = pod(
        "web",
        json!([{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]},
               {"name": "side", "image": "busybox:1.36"}]),
    );
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/pods"), &body)
        .await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    let spec = &reply.body["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["securityContext"], json!({}));
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["serviceAccount"], "default");
    let web = &spec["containers"][0];
    assert_eq!(web["imagePullPolicy"], "Always", "untagged image");
    assert_eq!(spec["containers"][1]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(web["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(web["terminationMessagePolicy"], "File");
    assert_eq!(web["resources"], json!({}));
    assert_eq!(web["ports"][0]["protocol"], "TCP");
    let tolerations = spec["tolerations"].as_array().expect("tolerations");
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        assert!(
            tolerations.iter().any(|t| t["key"] == key
                && t["operator"] == "Exists"
                && t["effect"] == "NoExecute"
                && t["tolerationSeconds"] == 300),
            "{key} in {tolerations:?}"
        );
    }
    let volume = &spec["volumes"][0];
    assert!(
        volume["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("kube-api-access-")),
        "{volume}"
    );
    assert_eq!(
        web["volumeMounts"][0],
        json!({"name": volume["name"], "readOnly": true,
               "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
    );
    assert_eq!(
        reply.body["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
    // What was created is what is stored.
    let stored = h.get(&format!("/api/v1/namespaces/{ns}/pods/web")).await;
    assert_eq!(stored.body["spec"], reply.body["spec"]);
    // The creator owns what decoding defaulted, not what admission added (docs/api-behaviour.md#server-side-apply).
    let managed = &reply.body["metadata"]["managedFields"][0];
    let spec_fields = &managed["fieldsV1"]["f:spec"];
    assert!(spec_fields.get("f:dnsPolicy").is_some(), "{managed}");
    assert!(spec_fields.get("f:restartPolicy").is_some(), "{managed}");
    for added in [
        "f:tolerations",
        "f:volumes",
        "f:priority",
        "f:serviceAccountName",
    ] {
        assert!(spec_fields.get(added).is_none(), "{added} in {managed}");
    }
}

#[tokio::test]
async fn s3_10_a_pods_priority_comes_from_its_priority_class() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-priority").await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let containers = json!([{"name": "c", "image": "busybox"}]);
    let mut missing = pod("missing", containers.clone());
    missing["spec"]["priorityClassName"] = json!("no-such-class");
    let reply = h.post(&pods, &missing).await;
    assert_eq!(reply.status, 403, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "pods \"missing\" is forbidden: no PriorityClass with name no-such-class was found"
    );
    let mut system = pod("system", containers.clone());
    system["spec"]["priorityClassName"] = json!("system-node-critical");
    let reply = h.post(&pods, &system).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(reply.body["spec"]["priority"], 2_000_001_000);
    let class_name = format!("{ns}-high");
    let class = h
        .post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            &json!({"metadata": {"name": class_name}, "value": 1000,
                    "preemptionPolicy": "Never"}),
        )
        .await;
    assert_eq!(class.status, 201, "{:?}", class.body);
    let mut high = pod("high", containers.clone());
    high["spec"]["priorityClassName"] = json!(class_name);
    let reply = h.post(&pods, &high).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(reply.body["spec"]["priority"], 1000);
    assert_eq!(reply.body["spec"]["preemptionPolicy"], "Never");
    let mut pinned = pod("pinned", containers);
    pinned["spec"]["priority"] = json!(5);
    let reply = h.post(&pods, &pinned).await;
    assert_eq!(reply.status, 403, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "pods \"pinned\" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"
    );
    let deleted = h
        .delete(
            &format!("/apis/scheduling.k8s.io/v1/priorityclasses/{class_name}"),
            None,
        )
        .await;
    assert_eq!(deleted.status, 200);
}

/// Quantities are read as upstream reads them (`ParseQuantity`): a malformed one is the
/// decoder's 400, a valid one is stored canonically, and a negative request, or one above its
/// limit, is the validation's 422 (`ValidateResourceRequirements`).
#[tokio::test]
async fn s3_10_pod_quantities_are_parsed_stored_canonically_and_validated() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s3-10-quantity").await;
        let pods = format!("/api/v1/namespaces/{ns}/pods");
        let with = |name: &str, resources: Value| {
            pod(
                name,
                json!([{"name": "c", "image": "nginx", "resources": resources}]),
            )
        };
        let reply = h
            .request(
                reqwest::Method::POST,
                &pods,
                Some(
                    with("abc", json!({"requests": {"cpu": "abc"}}))
                        .to_string()
                        .into_bytes(),
                ),
                "application/json",
            )
            .await;
        assert_eq!(reply.status, 400, "{:?}", reply.body);
        assert_eq!(
            reply.body["message"],
            "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
        let created = h
            .post(
                &pods,
                &with(
                    "canonical",
                    json!({"requests": {"cpu": "0.5", "memory": "1.5Gi"}}),
                ),
            )
            .await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        assert_eq!(
            created.body["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "500m", "memory": "1536Mi"})
        );
        let reply = h
            .post(
                &pods,
                &with(
                    "over",
                    json!({"requests": {"cpu": "2", "memory": "-1"}, "limits": {"cpu": "1"}}),
                ),
            )
            .await;
        assert_eq!(reply.status, 422, "{:?}", reply.body);
        let causes = kubemock_conformance::causes(&reply.body);
        assert!(
            causes.contains(&"spec.containers[0].resources.requests[memory]: Invalid value: \"-1\": must be greater than or equal to 0".to_owned()),
            "{causes:?}"
        );
        assert!(
            causes.contains(&"spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1".to_owned()),
            "{causes:?}"
        );
    }
}

#[tokio::test]
async fn s3_10_pods_need_unique_container_names_and_images() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-pod-invalid").await;
    let body = pod(
        "bad",
        json!([{"name": "a", "image": "x"}, {"name": "a"}, {"name": "Bad_Name", "image": "y"}]),
    );
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/pods"), &body)
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(reply.body["reason"], "Invalid");
    assert_eq!(reply.body["details"]["kind"], "Pod");
    assert_eq!(
        causes(&reply.body),
        [
            "spec.containers[1].name: Duplicate value: \"a\"",
            "spec.containers[1].image: Required value",
            "spec.containers[2].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ]
    );
    assert!(
        reply.body["message"].as_str().unwrap_or("").starts_with(
            "Pod \"bad\" is invalid: [spec.containers[1].name: Duplicate value: \"a\", "
        ),
        "{}",
        reply.body["message"]
    );
    let none = h
        .post(
            &format!("/api/v1/namespaces/{ns}/pods"),
            &pod("empty", json!([])),
        )
        .await;
    assert_eq!(none.status, 422);
    assert_eq!(causes(&none.body), ["spec.containers: Required value"]);
}

#[tokio::test]
async fn s3_10_a_pod_spec_is_immutable_except_images() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-pod-update").await;
    let path = format!("/api/v1/namespaces/{ns}/pods/p");
    let created = h
        .post(
            &format!("/api/v1/namespaces/{ns}/pods"),
            &pod("p", json!([{"name": "c", "image": "busybox:1.36"}])),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let image = h
        .patch(
            &path,
            "application/strategic-merge-patch+json",
            &json!({"spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]}}),
        )
        .await;
    assert_eq!(image.status, 200, "{:?}", image.body);
    assert_eq!(image.body["spec"]["containers"][0]["image"], "busybox:1.37");
    let env = h
        .patch(
            &path,
            "application/strategic-merge-patch+json",
            &json!({"spec": {"containers": [{"name": "c", "env": [{"name": "X", "value": "1"}]}]}}),
        )
        .await;
    assert_eq!(env.status, 422, "{:?}", env.body);
    let message = env.body["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"),
        "{message}"
    );
    assert_eq!(env.body["details"]["causes"][0]["field"], "spec");
    assert_eq!(
        env.body["details"]["causes"][0]["reason"],
        "FieldValueForbidden"
    );
    // A PUT of the pod as read back (defaults included) is no change at all.
    let mut current = h.get(&path).await.body;
    current["metadata"]["labels"] = json!({"x": "y"});
    let put = h.put(&path, &current).await;
    assert_eq!(put.status, 200, "{:?}", put.body);
}

#[tokio::test]
async fn s3_10_a_deployment_gets_its_defaults_and_its_template_the_pod_spec_defaults() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-deploy").await;
    let mut body = deployment("web", 2, "nginx:1.27");
    body["spec"]
        .as_object_mut()
        .expect("spec")
        .shift_remove("replicas");
    let reply = h
        .post(&format!("/apis/apps/v1/namespaces/{ns}/deployments"), &body)
        .await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    let spec = &reply.body["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    let template = &spec["template"]["spec"];
    assert_eq!(template["restartPolicy"], "Always");
    assert_eq!(template["dnsPolicy"], "ClusterFirst");
    assert_eq!(template["terminationGracePeriodSeconds"], 30);
    assert_eq!(template["schedulerName"], "default-scheduler");
    assert_eq!(template["securityContext"], json!({}));
    assert_eq!(template["containers"][0]["imagePullPolicy"], "IfNotPresent");
    // Pod-only defaults and admission additions stay out of templates.
    assert!(template.get("enableServiceLinks").is_none());
    assert!(template.get("serviceAccountName").is_none());
    assert_eq!(reply.body["status"], json!({}));
    assert_eq!(reply.body["metadata"]["generation"], 1);
}

#[tokio::test]
async fn s3_10_defaults_apply_again_on_update_so_a_bare_put_changes_nothing() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-put-defaults").await;
    let collection = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let created = h.post(&collection, &deployment("web", 1, "nginx")).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    // The manifest as first written, without any default, PUT back with the current version.
    let mut bare = deployment("web", 1, "nginx");
    bare["metadata"]["resourceVersion"] = created.body["metadata"]["resourceVersion"].clone();
    let put = h.put(&format!("{collection}/web"), &bare).await;
    assert_eq!(put.status, 200, "{:?}", put.body);
    assert_eq!(put.body["spec"], created.body["spec"]);
    assert_eq!(put.body["metadata"]["generation"], 1, "nothing changed");
    assert_eq!(
        put.body["metadata"]["resourceVersion"], created.body["metadata"]["resourceVersion"],
        "a no-op write"
    );
}

#[tokio::test]
async fn s3_10_a_deployment_selector_is_required_must_match_and_is_immutable() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-selector").await;
    let collection = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let mut missing = deployment("a", 1, "nginx");
    missing["spec"]
        .as_object_mut()
        .expect("spec")
        .shift_remove("selector");
    let reply = h.post(&collection, &missing).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "Deployment.apps \"a\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"a\"}: `selector` does not match template `labels`]"
    );
    assert_eq!(reply.body["details"]["group"], "apps");
    assert_eq!(
        reply.body["details"]["causes"][0],
        json!({"reason": "FieldValueRequired", "message": "Required value", "field": "spec.selector"})
    );
    let mut mismatch = deployment("b", 1, "nginx");
    mismatch["spec"]["selector"]["matchLabels"]["app"] = json!("other");
    let reply = h.post(&collection, &mismatch).await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        causes(&reply.body),
        [
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"b\"}: `selector` does not match template `labels`"
        ]
    );
    let created = h.post(&collection, &deployment("c", 1, "nginx")).await;
    assert_eq!(created.status, 201);
    let patch = json!({"spec": {"selector": {"matchLabels": {"tier": "web"}},
                                "template": {"metadata": {"labels": {"tier": "web"}}}}});
    let reply = h
        .patch(
            &format!("{collection}/c"),
            "application/strategic-merge-patch+json",
            &patch,
        )
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "Deployment.apps \"c\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"c\", \"tier\":\"web\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    );
}

#[tokio::test]
async fn s3_10_deployment_strategy_and_template_rules() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-strategy").await;
    let collection = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let mut body = deployment("d", 1, "nginx");
    body["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}});
    body["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    body["spec"]["replicas"] = json!(-1);
    let reply = h.post(&collection, &body).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        causes(&reply.body),
        [
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
        ]
    );
    let mut recreate = deployment("r", 1, "nginx");
    recreate["spec"]["strategy"] = json!({"type": "Recreate"});
    let reply = h.post(&collection, &recreate).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(reply.body["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[tokio::test]
async fn s3_10_other_workloads_get_their_defaults_and_initial_status() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-workloads").await;
    let template = json!({"metadata": {"labels": {"app": "w"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}});
    let selector = json!({"matchLabels": {"app": "w"}});
    let rs = h
        .post(
            &format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
            &json!({"metadata": {"name": "rs"}, "spec": {"selector": selector, "template": template}}),
        )
        .await;
    assert_eq!(rs.status, 201, "{:?}", rs.body);
    assert_eq!(rs.body["spec"]["replicas"], 1);
    assert_eq!(rs.body["status"], json!({"replicas": 0}));
    let sts = h
        .post(
            &format!("/apis/apps/v1/namespaces/{ns}/statefulsets"),
            &json!({"metadata": {"name": "sts"},
                    "spec": {"serviceName": "sts", "selector": selector, "template": template}}),
        )
        .await;
    assert_eq!(sts.status, 201, "{:?}", sts.body);
    let spec = &sts.body["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(spec["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        spec["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(
        spec["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    let ds = h
        .post(
            &format!("/apis/apps/v1/namespaces/{ns}/daemonsets"),
            &json!({"metadata": {"name": "ds"}, "spec": {"selector": selector, "template": template}}),
        )
        .await;
    assert_eq!(ds.status, 201, "{:?}", ds.body);
    assert_eq!(
        ds.body["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(ds.body["status"]["desiredNumberScheduled"], 0);
    // The template generation (the DaemonSet controller's `pod-template-generation` label)
    // starts at 1 and moves only when the template changes, whatever the client sends.
    let generation = |reply: &kubemock_conformance::Reply| {
        reply.body["metadata"]["annotations"]["deprecated.daemonset.template.generation"].clone()
    };
    assert_eq!(generation(&ds), "1", "{:?}", ds.body);
    let ds_path = format!("/apis/apps/v1/namespaces/{ns}/daemonsets/ds");
    let merge = "application/merge-patch+json";
    let relabelled = h
        .patch(
            &ds_path,
            merge,
            &json!({"metadata": {"labels": {"x": "y"},
            "annotations": {"deprecated.daemonset.template.generation": "7"}}}),
        )
        .await;
    assert_eq!(relabelled.status, 200, "{:?}", relabelled.body);
    assert_eq!(generation(&relabelled), "1");
    let changed = h
        .patch(
            &ds_path,
            merge,
            &json!({"spec": {"template": {"spec": {"containers":
            [{"name": "c", "image": "busybox:1.37"}]}}}}),
        )
        .await;
    assert_eq!(changed.status, 200, "{:?}", changed.body);
    assert_eq!(generation(&changed), "2");
    let cron = h
        .post(
            &format!("/apis/batch/v1/namespaces/{ns}/cronjobs"),
            &json!({"metadata": {"name": "cj"}, "spec": {"schedule": "*/5 * * * *",
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                    "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        )
        .await;
    assert_eq!(cron.status, 201, "{:?}", cron.body);
    let spec = &cron.body["spec"];
    assert_eq!(spec["concurrencyPolicy"], "Allow");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["successfulJobsHistoryLimit"], 3);
    assert_eq!(spec["failedJobsHistoryLimit"], 1);
    let bad_cron = h
        .post(
            &format!("/apis/batch/v1/namespaces/{ns}/cronjobs"),
            &json!({"metadata": {"name": "bad"}, "spec": {"schedule": "often",
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                    "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        )
        .await;
    assert_eq!(bad_cron.status, 422);
    assert_eq!(
        causes(&bad_cron.body),
        ["spec.schedule: Invalid value: \"often\": expected exactly 5 fields, found 1: often"]
    );
}

#[tokio::test]
async fn s3_10_a_job_gets_a_generated_selector_and_needs_a_restart_policy() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-job").await;
    let collection = format!("/apis/batch/v1/namespaces/{ns}/jobs");
    let job = |restart: Option<&str>| {
        let mut spec = json!({"containers": [{"name": "pi", "image": "perl:5.34"}]});
        if let Some(restart) = restart {
            spec["restartPolicy"] = json!(restart);
        }
        json!({"metadata": {"name": "pi"}, "spec": {"template": {"spec": spec}}})
    };
    let reply = h.post(&collection, &job(None)).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        causes(&reply.body),
        [
            "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
        ]
    );
    let reply = h.post(&collection, &job(Some("Never"))).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    let uid = reply.body["metadata"]["uid"].clone();
    let spec = &reply.body["spec"];
    assert_eq!(
        spec["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    let labels = &spec["template"]["metadata"]["labels"];
    assert_eq!(labels["batch.kubernetes.io/job-name"], "pi");
    assert_eq!(labels["job-name"], "pi");
    assert_eq!(labels["controller-uid"], uid);
    assert_eq!(spec["parallelism"], 1);
    assert_eq!(spec["completions"], 1);
    assert_eq!(spec["backoffLimit"], 6);
    assert_eq!(spec["completionMode"], "NonIndexed");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
    let changed = h
        .patch(
            &format!("{collection}/pi"),
            "application/merge-patch+json",
            &json!({"spec": {"completions": 3}}),
        )
        .await;
    assert_eq!(changed.status, 422, "{:?}", changed.body);
    assert_eq!(
        causes(&changed.body),
        ["spec.completions: Invalid value: 3: field is immutable"]
    );
}

#[tokio::test]
async fn s3_10_secrets_merge_string_data_default_their_type_and_check_keys() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-secret").await;
    let collection = format!("/api/v1/namespaces/{ns}/secrets");
    let reply = h
        .post(
            &collection,
            &json!({"metadata": {"name": "s"}, "data": {"a": "eA==", "b": "eQ=="},
                    "stringData": {"b": "hello", "c": "world"}}),
        )
        .await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(reply.body["type"], "Opaque");
    assert_eq!(
        reply.body["data"],
        json!({"a": "eA==", "b": "aGVsbG8=", "c": "d29ybGQ="})
    );
    assert!(reply.body.get("stringData").is_none());
    let stored = h.get(&format!("{collection}/s")).await;
    assert!(stored.body.get("stringData").is_none());
    let bad = h
        .post(
            &collection,
            &json!({"metadata": {"name": "b64"}, "data": {"a": "%%%"}}),
        )
        .await;
    assert_eq!(bad.status, 400, "{:?}", bad.body);
    assert_eq!(
        bad.body["message"],
        "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 0"
    );
    let keys = h
        .post(
            &collection,
            &json!({"metadata": {"name": "keys"}, "type": "kubernetes.io/tls",
                    "stringData": {"bad key": "x"}}),
        )
        .await;
    assert_eq!(keys.status, 422, "{:?}", keys.body);
    assert_eq!(
        causes(&keys.body),
        [
            "data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
            "data[tls.crt]: Required value",
            "data[tls.key]: Required value",
        ]
    );
    let retype = h
        .patch(
            &format!("{collection}/s"),
            "application/merge-patch+json",
            &json!({"type": "kubernetes.io/basic-auth", "stringData": {"username": "u"}}),
        )
        .await;
    assert_eq!(retype.status, 422, "{:?}", retype.body);
    assert_eq!(
        causes(&retype.body),
        ["type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"]
    );
}

#[tokio::test]
async fn s3_10_immutable_config_maps_and_secrets_refuse_data_changes() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-immutable").await;
    for (plural, data) in [
        ("configmaps", json!({"k": "v"})),
        ("secrets", json!({"k": "dg=="})),
    ] {
        let collection = format!("/api/v1/namespaces/{ns}/{plural}");
        let created = h
            .post(
                &collection,
                &json!({"metadata": {"name": "frozen"}, "immutable": true, "data": data}),
            )
            .await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        let path = format!("{collection}/frozen");
        let labels = h
            .patch(
                &path,
                "application/merge-patch+json",
                &json!({"metadata": {"labels": {"still": "mutable"}}}),
            )
            .await;
        assert_eq!(labels.status, 200, "{plural}: {:?}", labels.body);
        let data = h
            .patch(
                &path,
                "application/merge-patch+json",
                &json!({"data": {"k": "d2=="}}),
            )
            .await;
        assert_eq!(data.status, 422, "{plural}: {:?}", data.body);
        assert_eq!(
            causes(&data.body),
            ["data: Forbidden: field is immutable when `immutable` is set"]
        );
        let unfreeze = h
            .patch(
                &path,
                "application/merge-patch+json",
                &json!({"immutable": false}),
            )
            .await;
        assert_eq!(unfreeze.status, 422, "{plural}: {:?}", unfreeze.body);
        assert_eq!(
            causes(&unfreeze.body),
            ["immutable: Forbidden: field is immutable when `immutable` is set"]
        );
    }
    let bad_key = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &json!({"metadata": {"name": "dots"}, "data": {"..": "x"}}),
        )
        .await;
    assert_eq!(bad_key.status, 422);
    assert_eq!(
        causes(&bad_key.body),
        ["data[..]: Invalid value: \"..\": must not be '..'"]
    );
}

/// A pod's QoS class is computed on create (`ComputePodQOS`: cpu and memory above zero,
/// summed, compared as quantities) and immutable on status writes (`ValidatePodStatusUpdate`,
/// `pkg/apis/core/validation/validation.go`); a status that omits it keeps the stored one.
#[tokio::test]
async fn s3_10_a_pods_qos_class_is_computed_on_create_and_immutable() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-qos").await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let resources = |requests: Value, limits: Value| {
        json!([{"name": "c", "image": "busybox",
                "resources": {"requests": requests, "limits": limits}}])
    };
    for (name, containers, class) in [
        (
            "guaranteed",
            resources(
                json!({"cpu": "1", "memory": "1Gi"}),
                json!({"cpu": "1000m", "memory": "1024Mi"}),
            ),
            "Guaranteed",
        ),
        (
            "burstable",
            resources(json!({"cpu": "100m"}), json!({})),
            "Burstable",
        ),
        (
            "best-effort",
            resources(json!({"cpu": "0", "ephemeral-storage": "1Gi"}), json!({})),
            "BestEffort",
        ),
    ] {
        let reply = h.post(&pods, &pod(name, containers)).await;
        assert_eq!(reply.status, 201, "{:?}", reply.body);
        assert_eq!(reply.body["status"]["qosClass"], class, "{name}");
    }
    let status = format!("{pods}/burstable/status");
    let reply = h
        .patch(
            &status,
            "application/merge-patch+json",
            &json!({"status": {"qosClass": "BestEffort"}}),
        )
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "Pod \"burstable\" is invalid: status.qosClass: Invalid value: \"BestEffort\": field is immutable"
    );
    let reply = h
        .patch(
            &status,
            "application/merge-patch+json",
            &json!({"status": {"qosClass": null, "phase": "Running"}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["status"]["qosClass"], "Burstable");
}

/// An HPA through both versions: stored as autoscaling/v2, v1 converted on the way in and out
/// with its round-trip annotations (`pkg/apis/autoscaling/v1/conversion.go`), each version's
/// defaults (`v1/defaults.go`, `v2/defaults.go`), and the spec validation
/// (`pkg/apis/autoscaling/validation/validation.go`).
#[tokio::test]
async fn s3_10_a_horizontal_pod_autoscaler_reads_the_same_through_v1_and_v2() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-10-hpa").await;
    let v1 = format!("/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers");
    let v2 = format!("/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers");
    let target = json!({"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"});

    // v1 without a CPU target: the conversion's default made explicit in the answer.
    let created = h
        .post(
            &v1,
            &json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "old"}, "spec": {"scaleTargetRef": target, "maxReplicas": 4}}),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["spec"]["targetCPUUtilizationPercentage"], 80);
    assert_eq!(created.body["spec"]["minReplicas"], 1);
    let as_v2 = h.get(&format!("{v2}/old")).await;
    assert_eq!(as_v2.body["apiVersion"], "autoscaling/v2");
    assert_eq!(
        as_v2.body["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    assert!(
        as_v2.body["spec"]
            .get("targetCPUUtilizationPercentage")
            .is_none()
    );

    // v2 with a Pods metric and behavior: v1 shows the CPU target, the rest in annotations.
    let created = h
        .post(
            &v2,
            &json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "new"}, "spec": {"scaleTargetRef": target, "maxReplicas": 9,
            "metrics": [
                {"type": "Pods", "pods": {"metric": {"name": "qps"},
                    "target": {"type": "AverageValue", "averageValue": "100"}}},
                {"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 30}}}}),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    // v2's behavior defaults fill what was not given.
    let behavior = &created.body["spec"]["behavior"];
    assert_eq!(behavior["scaleDown"]["stabilizationWindowSeconds"], 30);
    assert_eq!(behavior["scaleDown"]["selectPolicy"], "Max");
    assert_eq!(
        behavior["scaleUp"]["policies"][0],
        json!({"type": "Pods", "value": 4, "periodSeconds": 15})
    );
    let as_v1 = h.get(&format!("{v1}/new")).await;
    assert_eq!(as_v1.body["apiVersion"], "autoscaling/v1");
    assert_eq!(as_v1.body["spec"]["targetCPUUtilizationPercentage"], 50);
    assert!(as_v1.body["spec"].get("metrics").is_none());
    let annotations = &as_v1.body["metadata"]["annotations"];
    let others: Value = serde_json::from_str(
        annotations["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .expect("metrics"),
    )
    .expect("json");
    assert_eq!(
        others,
        json!([{"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "100"}}])
    );
    assert!(annotations["autoscaling.alpha.kubernetes.io/behavior"].is_string());

    // A v1 client's update of what it read keeps the v2 fields it cannot see.
    let mut changed = as_v1.body.clone();
    changed["spec"]["maxReplicas"] = json!(12);
    let updated = h.put(&format!("{v1}/new"), &changed).await;
    assert_eq!(updated.status, 200, "{:?}", updated.body);
    let again = h.get(&format!("{v2}/new")).await;
    assert_eq!(again.body["spec"]["maxReplicas"], 12);
    assert_eq!(
        again.body["spec"]["metrics"],
        created.body["spec"]["metrics"].clone()
    );
    assert_eq!(
        again.body["spec"]["behavior"],
        created.body["spec"]["behavior"]
    );
    assert!(
        again.body["metadata"].get("annotations").is_none(),
        "{}",
        again.body
    );

    // Status written through v2 reads as v1's CPU utilization.
    let mut status = again.body.clone();
    status["status"] = json!({"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageValue": "120m", "averageUtilization": 61}}}]});
    let written = h.put(&format!("{v2}/new/status"), &status).await;
    assert_eq!(written.status, 200, "{:?}", written.body);
    let as_v1 = h.get(&format!("{v1}/new")).await;
    assert_eq!(as_v1.body["status"]["currentCPUUtilizationPercentage"], 61);
    assert_eq!(as_v1.body["status"]["desiredReplicas"], 3);

    // A list through v1 converts every item.
    let listed = h.get(&v1).await;
    let items = listed.body["items"].as_array().expect("items");
    assert_eq!(items.len(), 2);
    assert!(
        items
            .iter()
            .all(|i| i["spec"].get("targetCPUUtilizationPercentage").is_some())
    );

    // Validation, in upstream's words.
    let bad = h
        .post(
            &v2,
            &json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "bad"}, "spec": {"scaleTargetRef": {"kind": "Deployment"},
            "minReplicas": 5, "maxReplicas": 2}}),
        )
        .await;
    assert_eq!(bad.status, 422, "{:?}", bad.body);
    assert_eq!(
        causes(&bad.body),
        vec![
            "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
            "spec.scaleTargetRef.name: Required value",
        ]
    );
}
