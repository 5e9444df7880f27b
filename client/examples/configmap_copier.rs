//! A complete controller: keeps the ConfigMap `SOURCE_NS/SOURCE_NAME` copied into every
//! namespace labelled `copy-config=true`, and removes the copy when the label goes.
//!
//! ```sh
//! cargo run --release -- serve --port 0 --kubeconfig-out /tmp/kubemock.kubeconfig &
//! KUBECONFIG=/tmp/kubemock.kubeconfig cargo run -p kubemock-client --example configmap_copier -- default shared
//! ```

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubemock_client::controller::default_error_policy;
use kubemock_client::{
    Action, Api, Client, Controller, DeleteParams, InformerFactory, ObjectKey, PostParams,
    Resource, Store,
};
use tokio_util::sync::CancellationToken;

/// Namespaces with this label get a copy.
const LABEL: &str = "copy-config";
/// Copies carry this label, naming their source.
const COPIED_FROM: &str = "copied-from";

fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

struct Ctx {
    client: Client,
    namespaces: Store<Namespace>,
    configmaps: Store<ConfigMap>,
    source: ObjectKey,
}

/// Brings the copy in one namespace (the key) in line with the source.
async fn reconcile(ns: ObjectKey, ctx: Arc<Ctx>) -> kubemock_client::Result<Action> {
    let name = &ctx.source.name;
    if ctx.source.namespace.as_deref() == Some(ns.name.as_str()) {
        return Ok(Action::await_change()); // never overwrite the source itself
    }
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns.name);
    let wanted = ctx.namespaces.get_by(None, &ns.name).filter(|n| {
        n.metadata.deletion_timestamp.is_none() && label(&n.metadata, LABEL) == Some("true")
    });
    let source = ctx.configmaps.get(&ctx.source);
    let current = ctx.configmaps.get_by(Some(&ns.name), name);
    let (Some(_), Some(source)) = (wanted, source) else {
        // Not wanted (or no source): remove our copy, if there is one.
        if current.is_some_and(|c| label(&c.metadata, COPIED_FROM).is_some()) {
            match api.delete(name, &DeleteParams::default()).await {
                Err(err) if !err.is_not_found() => return Err(err),
                _ => eprintln!("removed {}/{name}", ns.name),
            }
        }
        return Ok(Action::await_change());
    };
    let mut copy = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ns.name.clone()),
            labels: Some([(COPIED_FROM.into(), ctx.source.to_string().replace('/', "."))].into()),
            ..ObjectMeta::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        ..ConfigMap::default()
    };
    match current {
        Some(c) if c.data == copy.data && c.binary_data == copy.binary_data => {}
        Some(c) => {
            copy.metadata.resource_version = c.metadata.resource_version.clone(); // conflict = requeue
            api.replace(name, &PostParams::default(), &copy).await?;
            eprintln!("updated {}/{name}", ns.name);
        }
        None => match api.create(&PostParams::default(), &copy).await {
            Err(err) if !err.is_already_exists() => return Err(err),
            _ => eprintln!("copied into {}/{name}", ns.name),
        },
    }
    Ok(Action::await_change())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(source_ns), Some(source_name)) = (args.next(), args.next()) else {
        return Err("usage: configmap_copier SOURCE_NAMESPACE SOURCE_NAME".into());
    };
    let client = Client::try_default()?;
    let factory = InformerFactory::new(client.clone());
    let namespaces = factory.informer::<Namespace>();
    let configmaps = factory.informer::<ConfigMap>();
    let token = CancellationToken::new();
    factory.start(&token);

    let source = ObjectKey::new(Some(&source_ns), &source_name);
    let ctx = Arc::new(Ctx {
        client,
        namespaces: namespaces.store(),
        configmaps: configmaps.store(),
        source: source.clone(),
    });
    let all_namespaces = namespaces.store();
    let controller = Controller::new("configmap-copier", namespaces)
        // A change of the source concerns every namespace; a change of a copy, its own.
        .watches(&configmaps, move |cm: &ConfigMap| match cm.key() {
            key if key == source => all_namespaces.list().iter().map(|n| n.key()).collect(),
            key if key.name == source.name => {
                vec![ObjectKey::new(None, &key.namespace.unwrap_or_default())]
            }
            _ => Vec::new(),
        })
        .workers(2);
    let reconcile = move |key| reconcile(key, ctx.clone());
    controller.run(reconcile, default_error_policy, token).await;
    factory.shutdown().await;
    Ok(())
}
