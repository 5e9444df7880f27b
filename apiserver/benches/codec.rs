//! Benchmarks of the wire formats of one object: JSON (serde_json, as every JSON request and
//! answer is read and written) against Kubernetes protobuf (`kubemock_apiserver::protobuf`),
//! decoding bytes to the JSON value the handlers work on and encoding it back.
//!
//! What is measured, for a Pod and a Deployment built here in the shape of upstream's
//! fixtures (most fields set: metadata with labels, annotations, owner references and managed
//! fields; containers with ports, env, resources, probes, mounts and security contexts;
//! volumes, affinity, tolerations; status with conditions and container states), so that the
//! benchmark needs nothing outside the repository:
//! - `decode/{json,protobuf}/{pod,deployment}`: bytes to `serde_json::Value`;
//! - `encode/{json,protobuf}/{pod,deployment}`: `serde_json::Value` to bytes.
//!
//! Target (issue 7): protobuf costs no more than JSON on the same object, both ways. Read the
//! medians (`target/criterion/<group>/<bench>/new/estimates.json`, `median`).
//!
//! Both run under the kubemock binary's allocator (mimalloc), as they do in the server.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kubemock_apiserver::protobuf;
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn metadata(name: &str, owner: &str) -> Value {
    json!({
        "name": name,
        "generateName": format!("{owner}-"),
        "namespace": "production",
        "uid": "6f1c2a0e-3b1d-4a55-9d1e-0c8f5b3a9e21",
        "resourceVersion": "184467",
        "generation": 3,
        "creationTimestamp": "2024-05-01T12:00:00Z",
        "labels": {"app": "web", "tier": "frontend", "pod-template-hash": "7d9f8c6b5",
                   "app.kubernetes.io/version": "1.27.0"},
        "annotations": {"kubernetes.io/change-cause": "kubectl apply --filename=web.yaml",
                        "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                             "uid": "0a9e7c3d-1f2b-4c5d-8e6f-7a8b9c0d1e2f",
                             "controller": true, "blockOwnerDeletion": true}],
        "finalizers": ["example.com/cleanup"],
        "managedFields": [{
            "manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
            "time": "2024-05-01T12:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:tier": {}},
                                        "f:ownerReferences": {".": {}}},
                         "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}}}
        }]
    })
}

fn container(name: &str, image: &str) -> Value {
    json!({
        "name": name,
        "image": image,
        "command": ["/bin/server"],
        "args": ["--port=8080", "--log-level=info", "--config=/etc/web/config.yaml"],
        "workingDir": "/srv",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                  {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
        "envFrom": [{"configMapRef": {"name": "web-config"}}],
        "env": [{"name": "MODE", "value": "production"},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "web-secret", "key": "token"}}}],
        "resources": {"limits": {"cpu": "500m", "memory": "256Mi"},
                      "requests": {"cpu": "100m", "memory": "128Mi"}},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/web", "readOnly": true},
                         {"name": "cache", "mountPath": "/var/cache/web"}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                          "initialDelaySeconds": 10, "timeoutSeconds": 1, "periodSeconds": 10,
                          "successThreshold": 1, "failureThreshold": 3},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"},
                           "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1,
                           "failureThreshold": 3},
        "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", "sleep 5"]}}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"capabilities": {"drop": ["ALL"]}, "runAsUser": 1000,
                            "runAsNonRoot": true, "readOnlyRootFilesystem": true,
                            "allowPrivilegeEscalation": false}
    })
}

fn pod_spec() -> Value {
    json!({
        "volumes": [{"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}},
                    {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}},
                    {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}], "defaultMode": 420}}],
        "initContainers": [container("init", "busybox:1.36")],
        "containers": [container("web", "nginx:1.27"), container("sidecar", "envoy:1.30")],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "nodeSelector": {"kubernetes.io/os": "linux", "disk": "ssd"},
        "serviceAccountName": "web",
        "serviceAccount": "web",
        "nodeName": "node-1",
        "securityContext": {"fsGroup": 2000, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        "imagePullSecrets": [{"name": "registry"}],
        "hostname": "web-0",
        "subdomain": "web",
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100,
            "podAffinityTerm": {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                                "topologyKey": "kubernetes.io/hostname"}}]}},
        "schedulerName": "default-scheduler",
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        "priority": 0,
        "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority",
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                       "whenUnsatisfiable": "ScheduleAnyway",
                                       "labelSelector": {"matchLabels": {"app": "web"}}}]
    })
}

fn pod() -> Value {
    let condition = |kind: &str| json!({"type": kind, "status": "True", "lastTransitionTime": "2024-05-01T12:00:05Z"});
    let status = |name: &str, image: &str| {
        json!({"name": name, "state": {"running": {"startedAt": "2024-05-01T12:00:03Z"}},
               "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                             "startedAt": "2024-05-01T11:00:00Z", "finishedAt": "2024-05-01T11:59:59Z",
                             "containerID": "containerd://4b1f"}},
               "ready": true, "restartCount": 1, "image": image,
               "imageID": "docker.io/library/nginx@sha256:3b7732505933ca591ce4a6d860cb713ad96a3176b82f7979a8dfa9973486a0d6",
               "containerID": "containerd://9c4e", "started": true})
    };
    json!({
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": metadata("web-7d9f8c6b5-x2x7k", "web-7d9f8c6b5"),
        "spec": pod_spec(),
        "status": {
            "phase": "Running",
            "conditions": [condition("Initialized"), condition("Ready"),
                           condition("ContainersReady"), condition("PodScheduled")],
            "hostIP": "10.0.0.12", "hostIPs": [{"ip": "10.0.0.12"}],
            "podIP": "10.244.1.17", "podIPs": [{"ip": "10.244.1.17"}],
            "startTime": "2024-05-01T12:00:01Z",
            "initContainerStatuses": [status("init", "busybox:1.36")],
            "containerStatuses": [status("web", "nginx:1.27"), status("sidecar", "envoy:1.30")],
            "qosClass": "Burstable"
        }
    })
}

fn deployment() -> Value {
    let condition = |kind: &str, reason: &str| {
        json!({"type": kind, "status": "True", "lastUpdateTime": "2024-05-01T12:00:05Z",
               "lastTransitionTime": "2024-05-01T12:00:00Z", "reason": reason,
               "message": "ReplicaSet \"web-7d9f8c6b5\" has successfully progressed."})
    };
    let mut template_metadata = metadata("", "web");
    template_metadata = json!({"labels": template_metadata["labels"].clone(),
                               "annotations": template_metadata["annotations"].clone()});
    json!({
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": metadata("web", "web-app"),
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["frontend", "edge"]}]},
            "template": {"metadata": template_metadata, "spec": pod_spec()},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
            "minReadySeconds": 5,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {
            "observedGeneration": 3, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
            "availableReplicas": 3,
            "conditions": [condition("Available", "MinimumReplicasAvailable"),
                           condition("Progressing", "NewReplicaSetAvailable")]
        }
    })
}

fn codec(c: &mut Criterion) {
    for (name, object) in [("pod", pod()), ("deployment", deployment())] {
        let json_bytes = serde_json::to_vec(&object).expect("JSON");
        let protobuf_bytes = protobuf::encode(&object).expect("protobuf");
        assert_eq!(
            protobuf::decode(&protobuf_bytes).expect("decodes"),
            object,
            "{name} round-trips"
        );
        eprintln!(
            "{name}: {} bytes of JSON, {} of protobuf",
            json_bytes.len(),
            protobuf_bytes.len()
        );
        let mut decode = c.benchmark_group("decode");
        decode.bench_function(format!("json/{name}"), |b| {
            b.iter(|| serde_json::from_slice::<Value>(black_box(&json_bytes)).expect("JSON"))
        });
        decode.bench_function(format!("protobuf/{name}"), |b| {
            b.iter(|| protobuf::decode(black_box(&protobuf_bytes)).expect("protobuf"))
        });
        decode.finish();
        let mut encode = c.benchmark_group("encode");
        encode.bench_function(format!("json/{name}"), |b| {
            b.iter(|| serde_json::to_vec(black_box(&object)).expect("JSON"))
        });
        encode.bench_function(format!("protobuf/{name}"), |b| {
            b.iter(|| protobuf::encode(black_box(&object)).expect("protobuf"))
        });
        encode.finish();
    }
}

criterion_group!(benches, codec);
criterion_main!(benches);
