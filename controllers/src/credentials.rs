//! Who each controller is when it talks to the API server. Upstream's kube-controller-manager
//! with `--use-service-account-credentials` (kubeadm's default) runs every controller as a
//! ServiceAccount of its own in `kube-system`, bound by the bootstrap RBAC policy to the
//! `system:controller:<account>` ClusterRole, so that RBAC constrains each controller to what
//! it needs; the manager's own identity (`system:kube-controller-manager`) keeps the shared
//! informers, the leader-election Lease, and creating those accounts and their tokens
//! (`staging/src/k8s.io/controller-manager/pkg/clientbuilder/client_builder_dynamic.go`,
//! `DynamicControllerClientBuilder`: a TokenRequest per account, renewed before it expires).
//! Without it every controller uses the manager's own identity. The scheduler and the
//! simulated kubelets are other components, with credentials of their own.

use std::time::Duration;

use k8s_openapi::api::core::v1::ServiceAccount;
use kubemock_client::config::{Auth, SharedToken};
use kubemock_client::request::RequestBuilder;
use kubemock_client::{Api, Client, Config, PostParams};
use serde_json::json;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::manager::{
    CLUSTERROLE_AGGREGATION, CRONJOB, DAEMONSET, DEPLOYMENT, DISRUPTION, ENDPOINTS, ENDPOINTSLICE,
    GARBAGE_COLLECTOR, HORIZONTAL_POD_AUTOSCALER, JOB, NAMESPACE, NODE_LIFECYCLE,
    PERSISTENTVOLUME_BINDER, PV_PROTECTION, PVC_PROTECTION, REPLICASET, RESOURCEQUOTA,
    ROOT_CA_PUBLISHER, STATEFULSET, TAINT_EVICTION, VALIDATING_ADMISSION_POLICY_STATUS,
};

/// Where the controllers' ServiceAccounts live (`metav1.NamespaceSystem`).
pub const SERVICE_ACCOUNT_NAMESPACE: &str = "kube-system";

/// The ServiceAccount of each controller, as upstream's kube-controller-manager names it
/// (`cmd/kube-controller-manager/app/*.go`, `ClientOrDie("...")`; the roles and bindings in
/// `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go`).
pub const SERVICE_ACCOUNTS: &[(&str, &str)] = &[
    (
        CLUSTERROLE_AGGREGATION,
        "clusterrole-aggregation-controller",
    ),
    (CRONJOB, "cronjob-controller"),
    (DAEMONSET, "daemon-set-controller"),
    (DEPLOYMENT, "deployment-controller"),
    (DISRUPTION, "disruption-controller"),
    (ENDPOINTS, "endpoint-controller"),
    (ENDPOINTSLICE, "endpointslice-controller"),
    (GARBAGE_COLLECTOR, "generic-garbage-collector"),
    (HORIZONTAL_POD_AUTOSCALER, "horizontal-pod-autoscaler"),
    (JOB, "job-controller"),
    (NAMESPACE, "namespace-controller"),
    // Both run as `node-controller` upstream (`cmd/kube-controller-manager/app/core.go`).
    (NODE_LIFECYCLE, "node-controller"),
    (PERSISTENTVOLUME_BINDER, "persistent-volume-binder"),
    (PV_PROTECTION, "pv-protection-controller"),
    (PVC_PROTECTION, "pvc-protection-controller"),
    (REPLICASET, "replicaset-controller"),
    (RESOURCEQUOTA, "resourcequota-controller"),
    (ROOT_CA_PUBLISHER, "root-ca-cert-publisher"),
    (STATEFULSET, "statefulset-controller"),
    (TAINT_EVICTION, "node-controller"),
    (
        VALIDATING_ADMISSION_POLICY_STATUS,
        "validatingadmissionpolicy-status-controller",
    ),
];

/// The account of the TTL-after-finished controller, whose work the Job controller does here
/// (deleting finished Jobs past `ttlSecondsAfterFinished`: the Job controller's role may not).
pub const TTL_AFTER_FINISHED_ACCOUNT: &str = "ttl-after-finished-controller";

/// Lifetime asked for each token: upstream's `defaultExpirationSeconds` (one hour).
pub const TOKEN_EXPIRATION_SECONDS: i64 = 3600;

/// Share of a token's lifetime left when it is renewed: upstream's `defaultLeewayPercent`.
pub const TOKEN_LEEWAY_PERCENT: u32 = 20;

/// First wait after a failed account or token request; doubled up to [`RETRY_CAP`].
pub const RETRY_BASE: Duration = Duration::from_millis(200);

/// Longest wait between retries of a failed account or token request.
pub const RETRY_CAP: Duration = Duration::from_secs(30);

/// The command of the controller manager, the scheduler and the kubelet upstream: their user
/// agents start with it (client-go's `DefaultKubernetesUserAgent` from `os.Args[0]`), and the
/// server names their writes' field manager by it.
pub const CONTROLLER_MANAGER_COMMAND: &str = "kube-controller-manager";
/// See [`CONTROLLER_MANAGER_COMMAND`].
pub const SCHEDULER_COMMAND: &str = "kube-scheduler";
/// See [`CONTROLLER_MANAGER_COMMAND`].
pub const KUBELET_COMMAND: &str = "kubelet";

/// The part kube-controller-manager adds to its user agent for its shared informers
/// (`rootClientBuilder.ClientOrDie("shared-informers")`).
pub const SHARED_INFORMERS_AGENT: &str = "shared-informers";

/// The part kube-controller-manager adds to its user agent for leader election
/// (`rootClientBuilder.ClientOrDie("leader-election")`).
pub const LEADER_ELECTION_AGENT: &str = "leader-election";

/// The part kube-scheduler adds to its user agent (`restclient.AddUserAgent(kubeConfig,
/// "scheduler")`, `cmd/kube-scheduler/app/options/options.go`).
pub const SCHEDULER_AGENT: &str = "scheduler";

/// `client` with the user agent of the component `command`, followed by `/part` when given
/// (client-go's `rest.AddUserAgent`); `client` unchanged, with a warning, if that agent is not
/// a valid header value (our constants and account names always are).
pub fn as_component(client: &Client, command: &str, part: Option<&str>) -> Client {
    let base = kubemock_client::config::default_user_agent(command);
    let agent = match part {
        Some(part) => format!("{base}/{part}"),
        None => base,
    };
    client.with_user_agent(&agent).unwrap_or_else(|err| {
        tracing::warn!(%agent, error = %err, "keeping the client's user agent");
        client.clone()
    })
}

/// The ServiceAccount upstream gives the controller `name` (a canonical name of
/// [`crate::manager::CONTROLLERS`]); `None` for components that are not controllers of
/// kube-controller-manager (the scheduler, the simulated kubelets).
pub fn service_account_of(controller: &str) -> Option<&'static str> {
    SERVICE_ACCOUNTS
        .iter()
        .find(|(name, _)| *name == controller)
        .map(|(_, account)| *account)
}

/// The credentials the manager's components run with.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The controller manager's own client (`system:kube-controller-manager` upstream): the
    /// shared informers, the leader-election Lease, the controllers' ServiceAccounts and
    /// tokens; and every controller's client without [`Credentials::service_accounts`].
    pub root: Client,
    /// With `--use-service-account-credentials`: the server and its CA, without credentials,
    /// from which each controller's client is made with its ServiceAccount's token.
    pub service_accounts: Option<Config>,
    /// The scheduler's client (`system:kube-scheduler`), with informers of its own; else the
    /// root client and the shared informers.
    pub scheduler: Option<Client>,
    /// The simulated kubelets' client, with informers of their own; else the root client and
    /// the shared informers.
    pub kubelet: Option<Client>,
}

impl Credentials {
    /// Every component as `client`, on one set of shared informers.
    pub fn shared(client: Client) -> Self {
        Credentials {
            root: client,
            service_accounts: None,
            scheduler: None,
            kubelet: None,
        }
    }

    /// Each controller as its ServiceAccount, its clients made from `server` (the server's
    /// URL and CA; its credentials are dropped).
    #[must_use]
    pub fn with_service_accounts(mut self, mut server: Config) -> Self {
        server.auth = Auth::None;
        server.client_identity = None;
        self.service_accounts = Some(server);
        self
    }

    /// The scheduler as `client`.
    #[must_use]
    pub fn with_scheduler(mut self, client: Client) -> Self {
        self.scheduler = Some(client);
        self
    }

    /// The simulated kubelets as `client`.
    #[must_use]
    pub fn with_kubelet(mut self, client: Client) -> Self {
        self.kubelet = Some(client);
        self
    }
}

/// Makes the controllers' clients: the root client, or a client per ServiceAccount whose
/// token is renewed in the background until [`ControllerClients::shutdown`].
pub(crate) struct ControllerClients {
    /// The manager's own client.
    root: Client,
    /// The server without credentials, with ServiceAccount credentials on.
    server: Option<Config>,
    /// One renewal loop per account handed out.
    renewals: JoinSet<()>,
    /// Ends the renewal loops (and a first token request still retrying).
    token: CancellationToken,
}

impl ControllerClients {
    /// Clients from `credentials`, until `token` is cancelled.
    pub(crate) fn new(credentials: &Credentials, token: CancellationToken) -> Self {
        ControllerClients {
            root: credentials.root.clone(),
            server: credentials.service_accounts.clone(),
            renewals: JoinSet::new(),
            token,
        }
    }

    /// The client of the controller `name`: the root client, or (with ServiceAccount
    /// credentials) a client of its account, once the account exists and holds a first
    /// token. Retries until the token is cancelled; `None` then.
    pub(crate) async fn client(&mut self, controller: &str) -> Option<Client> {
        match service_account_of(controller) {
            Some(account) => self.account_client(account).await,
            None => Some(self.root.clone()),
        }
    }

    /// A client authenticating as `kube-system/account` (the root client without
    /// ServiceAccount credentials).
    pub(crate) async fn account_client(&mut self, account: &str) -> Option<Client> {
        let Some(server) = &self.server else {
            // `SimpleControllerClientBuilder.ClientOrDie(account)`: the manager's identity,
            // the account's name in the user agent.
            return Some(as_component(
                &self.root,
                CONTROLLER_MANAGER_COMMAND,
                Some(account),
            ));
        };
        let mut delay = RETRY_BASE;
        let (token, lifetime) = loop {
            match first_token(&self.root, account).await {
                Ok(issued) => break issued,
                Err(err) => {
                    tracing::warn!(%account, error = %err, ?delay, "cannot get the controller's ServiceAccount token; retrying");
                    tokio::select! {
                        () = self.token.cancelled() => return None,
                        () = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(RETRY_CAP);
                }
            }
        };
        let shared = SharedToken::new(token);
        let mut config = server.clone();
        config.auth = Auth::Shared(shared.clone());
        // `DynamicControllerClientBuilder.Config`: the account's user name in the user agent.
        config.user_agent = format!(
            "{}/system:serviceaccount:{SERVICE_ACCOUNT_NAMESPACE}:{account}",
            kubemock_client::config::default_user_agent(CONTROLLER_MANAGER_COMMAND)
        );
        let client = match Client::new(config) {
            Ok(client) => client,
            Err(err) => {
                tracing::error!(%account, error = %err, "cannot make the controller's client");
                return None;
            }
        };
        tracing::info!(%account, namespace = SERVICE_ACCOUNT_NAMESPACE, "using the controller's ServiceAccount credentials");
        self.renewals.spawn(renew(
            self.root.clone(),
            account.to_owned(),
            shared,
            lifetime,
            self.token.clone(),
        ));
        Some(client)
    }

    /// Stops renewing tokens.
    pub(crate) async fn shutdown(mut self) {
        self.token.cancel();
        while self.renewals.join_next().await.is_some() {}
    }
}

/// Ensures `kube-system/account` exists (upstream's `getOrCreateServiceAccount`), then asks
/// for its first token.
async fn first_token(root: &Client, account: &str) -> kubemock_client::Result<(String, Duration)> {
    let accounts: Api<ServiceAccount> = Api::namespaced(root.clone(), SERVICE_ACCOUNT_NAMESPACE);
    if accounts.get_opt(account).await?.is_none() {
        let object: ServiceAccount = serde_json::from_value(json!({
            "metadata": {"name": account, "namespace": SERVICE_ACCOUNT_NAMESPACE}
        }))
        .map_err(kubemock_client::Error::Decode)?;
        match accounts.create(&PostParams::default(), &object).await {
            Ok(_) => {}
            Err(err) if err.is_already_exists() => {}
            Err(err) => return Err(err),
        }
    }
    request_token(root, account).await
}

/// A TokenRequest for `kube-system/account`: the token and how long it is valid.
async fn request_token(
    root: &Client,
    account: &str,
) -> kubemock_client::Result<(String, Duration)> {
    let request = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS},
    });
    let body = serde_json::to_vec(&request).map_err(kubemock_client::Error::Encode)?;
    let path =
        format!("/api/v1/namespaces/{SERVICE_ACCOUNT_NAMESPACE}/serviceaccounts/{account}/token");
    let answer: TokenRequestAnswer = root
        .request(&RequestBuilder::new(path).create(&PostParams::default(), body))
        .await?;
    let lifetime = kubemock_apimachinery::time::until(
        kubemock_client::resource::now(),
        answer.status.expiration_timestamp.0,
    );
    Ok((answer.status.token, lifetime))
}

/// What kubemock reads of a TokenRequest's answer (a missing field is a decode error).
#[derive(serde::Deserialize)]
struct TokenRequestAnswer {
    status: TokenRequestStatus,
}

/// `authentication.k8s.io/v1` `TokenRequestStatus`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenRequestStatus {
    token: String,
    expiration_timestamp: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
}

/// When a token valid for `lifetime` is renewed: with [`TOKEN_LEEWAY_PERCENT`] of it left.
pub fn renew_after(lifetime: Duration) -> Duration {
    lifetime * (100 - TOKEN_LEEWAY_PERCENT) / 100
}

/// Renews `kube-system/account`'s token into `shared` before each expires, until `token` is
/// cancelled. A failed renewal keeps the current token and is retried with backoff.
async fn renew(
    root: Client,
    account: String,
    shared: SharedToken,
    mut lifetime: Duration,
    token: CancellationToken,
) {
    let mut wait = renew_after(lifetime);
    let mut delay = RETRY_BASE;
    loop {
        tokio::select! {
            () = token.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        match request_token(&root, &account).await {
            Ok((renewed, valid)) => {
                shared.set(renewed);
                lifetime = valid;
                wait = renew_after(lifetime);
                delay = RETRY_BASE;
                tracing::debug!(%account, ?lifetime, "renewed the controller's token");
            }
            Err(err) => {
                tracing::warn!(%account, error = %err, ?delay, "renewing the controller's token failed; retrying");
                wait = delay;
                delay = (delay * 2).min(RETRY_CAP);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_renewed_with_a_fifth_of_their_lifetime_left() {
        assert_eq!(
            renew_after(Duration::from_secs(3600)),
            Duration::from_secs(2880)
        );
        assert_eq!(renew_after(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn controllers_of_kube_controller_manager_have_upstreams_accounts() {
        assert_eq!(
            service_account_of(GARBAGE_COLLECTOR),
            Some("generic-garbage-collector")
        );
        assert_eq!(service_account_of(DAEMONSET), Some("daemon-set-controller"));
        assert_eq!(service_account_of(ENDPOINTS), Some("endpoint-controller"));
        assert_eq!(service_account_of(crate::manager::SCHEDULER), None);
        assert_eq!(service_account_of(crate::manager::KUBELET), None);
        // Every controller of the manager but the other components (and kubemock's storage
        // add-on, which borrows the binder's account) has one.
        for (name, _) in crate::manager::CONTROLLERS {
            let other = [
                crate::manager::SCHEDULER,
                crate::manager::KUBELET,
                crate::manager::STORAGE_PROVISIONER,
            ]
            .contains(name);
            assert_eq!(service_account_of(name).is_none(), other, "{name}");
        }
    }
}
