//! The ValidatingAdmissionPolicy status controller (kube-controller-manager's
//! `validatingadmissionpolicy-status-controller`, upstream
//! `pkg/controller/validatingadmissionpolicystatus/controller.go`): each policy whose
//! `metadata.generation` is past its `status.observedGeneration` is type-checked
//! ([`kubemock_cel::typecheck`]) and gets `status.observedGeneration` and
//! `status.typeChecking.expressionWarnings`, written by server-side apply on the status
//! subresource as the field manager `validatingadmissionpolicy-status` (forced). A typo such
//! as `object.spec.replica` shows up there while the policy keeps running as written.
//!
//! It is a controller, as upstream's, rather than part of the API server: so it runs where
//! upstream's runs (not under `--no-controllers`, as envtest runs no controller manager) and
//! against any server. It finds the schemas as upstream's does: the built-in kinds' from the
//! compiled-in definitions (`kubemock_apimachinery::openapi`, upstream's
//! `DefinitionsSchemaResolver`), anything else (custom resources) from the server's
//! `/openapi/v3/{group-version}` document (`ClientDiscoveryResolver`,
//! `staging/src/k8s.io/apiserver/pkg/cel/openapi/resolver/`), and maps the rules' resources
//! to kinds from discovery (`/api/v1`, `/apis/{group}/{version}`), read afresh at every
//! sync.
//!
//! As upstream, a policy is checked once per generation: a CustomResourceDefinition created
//! after the policy that matches it is type-checked at the policy's next change, not when the
//! definition appears.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use kubemock_apimachinery::openapi::SCHEMAS;
use kubemock_cel::Type;
use kubemock_cel::schema::{populate_refs, resolved_type};
use kubemock_cel::typecheck::{
    self, ExpressionWarning, GroupVersionKind, GroupVersionResource, RestMapper,
};
use kubemock_client::controller::Action;
use kubemock_client::request::RequestBuilder;
use kubemock_client::{
    Api, Client, Controller, InformerFactory, ListParams, ObjectKey, Patch, PatchParams,
    SharedInformer, Store,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::Result;

/// Concurrent syncs (upstream's default `ConcurrentPolicySyncs`).
const WORKERS: usize = 5;
/// The field manager of the status (upstream's `ControllerName`).
pub const FIELD_MANAGER: &str = "validatingadmissionpolicy-status";

/// What a sync needs.
struct Context {
    client: Client,
    policies: Store<ValidatingAdmissionPolicy>,
}

/// The ValidatingAdmissionPolicy status controller.
pub struct ValidatingAdmissionPolicyStatusController {
    client: Client,
    policies: SharedInformer<ValidatingAdmissionPolicy>,
}

impl ValidatingAdmissionPolicyStatusController {
    /// A controller on `factory`'s shared ValidatingAdmissionPolicy informer.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        ValidatingAdmissionPolicyStatusController {
            client,
            policies: factory.informer::<ValidatingAdmissionPolicy>(),
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            policies: self.policies.store(),
        });
        Controller::new("validatingadmissionpolicy-status", self.policies)
            .workers(WORKERS)
            .run(
                move |key| sync(key, ctx.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
    }
}

/// Type-checks one policy and writes its status (upstream's `reconcile`).
async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(policy) = ctx.policies.get(&key) else {
        return Ok(Action::await_change());
    };
    let generation = policy.metadata.generation.unwrap_or(0);
    let observed = policy
        .status
        .as_ref()
        .and_then(|s| s.observed_generation)
        .unwrap_or(0);
    if generation <= observed {
        return Ok(Action::await_change());
    }
    let name = policy.metadata.name.as_deref().unwrap_or_default();
    let spec = serde_json::to_value(&policy.spec).unwrap_or_default();
    let warnings = type_check(&ctx.client, &spec).await;
    tracing::debug!(
        policy = name,
        generation,
        warnings = warnings.len(),
        "type-checked validating admission policy"
    );
    let warnings: Vec<Value> = warnings
        .into_iter()
        .map(|w| json!({"fieldRef": w.field_ref, "warning": w.warning}))
        .collect();
    // Upstream applies `TypeChecking().WithExpressionWarnings(...)`: no warnings, no field.
    let mut type_checking = json!({});
    if !warnings.is_empty() {
        type_checking["expressionWarnings"] = Value::Array(warnings);
    }
    let config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "status": {"observedGeneration": generation, "typeChecking": type_checking},
    });
    Api::<ValidatingAdmissionPolicy>::all(ctx.client.clone())
        .patch_status(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(config),
        )
        .await?;
    Ok(Action::await_change())
}

/// The warnings of a policy's `spec` (upstream's `TypeChecker.Check`). A kind or paramKind
/// whose schema cannot be found or read is left out, as upstream leaves it: type checking
/// never fails a sync.
async fn type_check(client: &Client, spec: &Value) -> Vec<ExpressionWarning> {
    let mut mapper = Discovery::read(client, &typecheck::group_versions(spec)).await;
    let kinds = typecheck::types_to_check(spec, &mut mapper);
    let mut resolver = SchemaResolver {
        client,
        documents: HashMap::new(),
    };
    let mut typed = Vec::with_capacity(kinds.len());
    for gvk in kinds {
        if let Some(t) = resolver.resolve(&gvk).await {
            typed.push((gvk, t));
        }
    }
    let params = match typecheck::params_kind(spec) {
        Some(gvk) => resolver.resolve(&gvk).await,
        None => None,
    };
    typecheck::check(spec, &typed, params.as_ref())
}

/// A plain GET of `path`, decoded.
async fn get<T: serde::de::DeserializeOwned>(client: &Client, path: &str) -> Option<T> {
    // A collection GET without parameters is exactly a GET of the path.
    let request = RequestBuilder::new(path.to_owned())
        .list(&ListParams::default())
        .ok()?;
    match client.request(&request).await {
        Ok(answer) => Some(answer),
        Err(err) => {
            tracing::debug!(%path, error = %err, "type checking: cannot read");
            None
        }
    }
}

/// `/api/v1` or `/apis/{group}/{version}`, after the path's own prefix.
fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The resources of the group-versions a policy names, from discovery, as a [`RestMapper`]
/// (upstream's deferred discovery mapper, read afresh for every sync).
struct Discovery {
    /// (group, version, resource) to kind.
    kinds: BTreeMap<(String, String, String), String>,
}

impl Discovery {
    /// Reads the resource lists of `group_versions`; one that fails (not served) maps
    /// nothing.
    async fn read(client: &Client, group_versions: &[(String, String)]) -> Discovery {
        let mut kinds = BTreeMap::new();
        for (group, version) in group_versions {
            let resources = match crate::discovery::group_version_resources(client, group, version)
                .await
            {
                Ok(resources) => resources,
                Err(err) => {
                    tracing::debug!(%group, %version, error = %err, "type checking: no discovery");
                    continue;
                }
            };
            for served in resources {
                let resource = served.resource;
                kinds.insert(
                    (group.clone(), version.clone(), resource.plural),
                    resource.kind,
                );
            }
        }
        Discovery { kinds }
    }
}

impl RestMapper for Discovery {
    fn kinds_for(&mut self, gvr: &GroupVersionResource) -> Option<Vec<GroupVersionKind>> {
        let kind =
            self.kinds
                .get(&(gvr.group.clone(), gvr.version.clone(), gvr.resource.clone()))?;
        Some(vec![GroupVersionKind::new(&gvr.group, &gvr.version, kind)])
    }
}

/// Finds a kind's schema and types it: the compiled-in definitions, else the server's
/// OpenAPI v3 document of its group-version (upstream's combined resolver).
struct SchemaResolver<'a> {
    client: &'a Client,
    /// The documents read during this sync, by group-version path (`None`: not served).
    documents: HashMap<String, Option<Value>>,
}

impl SchemaResolver<'_> {
    /// The type of `gvk`'s objects, `None` when no schema is found.
    async fn resolve(&mut self, gvk: &GroupVersionKind) -> Option<Type> {
        if let Some(name) = SCHEMAS.kind(&gvk.group, &gvk.version, &gvk.kind) {
            let schema = populate_refs(name, &|n| SCHEMAS.component(n))?;
            return resolved_type(&schema, true, &gvk.kind);
        }
        let path = group_version_path(&gvk.group, &gvk.version);
        if !self.documents.contains_key(&path) {
            let document = get::<Value>(self.client, &format!("/openapi/v3/{path}")).await;
            self.documents.insert(path.clone(), document);
        }
        let components = self
            .documents
            .get(&path)?
            .as_ref()?
            .pointer("/components/schemas")?
            .as_object()?;
        let root = components.iter().find_map(|(name, schema)| {
            let kinds = schema.get("x-kubernetes-group-version-kind")?.as_array()?;
            kinds
                .iter()
                .any(|k| {
                    k["group"] == gvk.group.as_str()
                        && k["version"] == gvk.version.as_str()
                        && k["kind"] == gvk.kind.as_str()
                })
                .then_some(name)
        })?;
        let schema = populate_refs(root, &|n| components.get(n))?;
        resolved_type(&schema, true, &gvk.kind)
    }
}
