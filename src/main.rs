//! `kubemock`: the composition root. Parses the command line, installs the tracing subscriber,
//! opens the store, serves the API, runs the controllers against it (a client of its own URL,
//! as any controller manager would be), and shuts down in order on SIGINT/SIGTERM: stop the
//! controllers, stop accepting, end watches, then flush and close the store. `kubemock
//! controller-manager` runs only the controllers, against any API server.

mod envtest;

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use kubemock_apiserver::pki::{KeyFiles, Pki};
use kubemock_apiserver::{
    AuthorizationMode, LocalApi, NodePortRange, Security, SecurityOptions, ServerConfig,
    ServiceCidr,
};
use kubemock_controllers::kubelet::KubeletConfig;
use kubemock_controllers::{LeaderElection, ManagerConfig};
use kubemock_storage::{Config, Retention, SledStore};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// A Kubernetes-compatible API server that starts in milliseconds.
#[derive(Debug, Parser)]
#[command(name = "kubemock", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the API server (and, unless `--no-controllers`, the controllers).
    Serve(Box<ServeArgs>),
    /// Run only the controllers, against the API server of a kubeconfig.
    ControllerManager(ControllerManagerArgs),
    /// Write into DIR what controller-runtime's envtest starts from `KUBEBUILDER_ASSETS`:
    /// `kube-apiserver` and `etcd` (links to this binary, which acts as each by the name it
    /// is started under) and `kubectl` (a link to the machine's); prints DIR, absolute.
    EnvtestAssets(EnvtestAssetsArgs),
    /// Save or inspect a running server's state (`testing.kubemock.dev/v1` `snapshots`).
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
}

#[derive(Debug, Subcommand)]
enum SnapshotCommand {
    /// Write the whole state of a running server to FILE (JSON), for `serve --restore FILE`.
    Save(SnapshotSaveArgs),
}

#[derive(Debug, Args)]
struct SnapshotSaveArgs {
    /// The file to write.
    file: PathBuf,
    /// The server's URL (open mode); without it, the server of `--kubeconfig`.
    #[arg(long)]
    server: Option<String>,
    /// The kubeconfig to connect with (default: `KUBECONFIG`, then `~/.kube/config`).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct EnvtestAssetsArgs {
    /// The directory (created if missing; existing entries of the three names replaced).
    dir: PathBuf,
    /// The kubectl to link (default: the first `kubectl` on `PATH`).
    #[arg(long)]
    kubectl: Option<PathBuf>,
}

/// kubemock started as `kube-apiserver` (by envtest, from `KUBEBUILDER_ASSETS`): `serve`'s
/// flags, which include kube-apiserver's that envtest passes.
#[derive(Debug, Parser)]
#[command(
    name = "kube-apiserver",
    version,
    about = "kubemock as kube-apiserver: always secure; runs no controllers unless --controllers or KUBEMOCK_CONTROLLERS names some"
)]
struct KubeApiserverCli {
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Args)]
struct ControllerManagerArgs {
    /// The kubeconfig of the API server (default: `KUBECONFIG`, else `~/.kube/config`).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The API server's URL, overriding the kubeconfig's (kube-controller-manager's flag);
    /// without a kubeconfig, no credentials.
    #[arg(long)]
    master: Option<String>,
    /// Port of the `/healthz` (the process is up) and `/readyz` (the API server answers)
    /// endpoints (kube-controller-manager's secure port number, served over plain HTTP
    /// here); 0 disables them.
    #[arg(long, default_value_t = 10257)]
    health_port: u16,
    /// Address of the `/healthz` endpoint.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    health_bind: IpAddr,
    /// Controllers to run: `*` for all, `name` to enable one, `-name` to disable one.
    #[arg(long, default_value = "*")]
    controllers: String,
    #[command(flatten)]
    election: LeaderElectArgs,
    /// Run each controller as its ServiceAccount in `kube-system` (created if missing) with a
    /// TokenRequest token renewed before it expires, instead of the kubeconfig's user
    /// (kube-controller-manager's flag and default: false).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true")]
    use_service_account_credentials: bool,
    /// The CA bundle the root CA publisher puts in every namespace's `kube-root-ca.crt`
    /// ConfigMap (kube-controller-manager's flag); default: the kubeconfig's CA.
    #[arg(long)]
    root_ca_file: Option<PathBuf>,
    #[command(flatten)]
    nodes: NodeArgs,
}

/// The simulated nodes (the `kubelet` controller).
#[derive(Debug, Args)]
struct NodeArgs {
    /// Simulated nodes to register (`kubemock-node-0` ...); 0 for none.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// How long a running pod takes to become Ready (`0s`: at once, `500ms`, `2s`).
    #[arg(long, default_value = "0s", value_parser = parse_delay)]
    pod_ready_delay: Duration,
    /// How long a run-to-completion container (restartPolicy Never/OnFailure) runs when
    /// neither `kubemock.dev/run-seconds` nor a `sleep N` in its command says (`0s`: exits at
    /// once).
    #[arg(long, default_value = "1s", value_parser = parse_delay)]
    pod_run_time: Duration,
}

impl NodeArgs {
    fn apply(&self, config: ManagerConfig) -> ManagerConfig {
        config.with_kubelet(KubeletConfig {
            nodes: self.nodes,
            ready_delay: self.pod_ready_delay,
            run_time: self.pod_run_time,
            ..KubeletConfig::default()
        })
    }
}

/// Where `--virtual-clock` starts: now, or a given time.
#[derive(Debug, Clone)]
enum VirtualClockStart {
    Now,
    At(kubemock_controllers::clock::Clock),
}

impl VirtualClockStart {
    /// The virtual clock, standing at its start.
    fn clock(&self) -> kubemock_controllers::clock::Clock {
        match self {
            VirtualClockStart::Now => kubemock_controllers::clock::Clock::virtual_at(
                kubemock_controllers::clock::Clock::system().now(),
            ),
            VirtualClockStart::At(clock) => clock.clone(),
        }
    }
}

/// `now` or an RFC 3339 time.
fn parse_clock_start(text: &str) -> Result<VirtualClockStart, String> {
    if text == "now" {
        return Ok(VirtualClockStart::Now);
    }
    let nanos = kubemock_apimachinery::time::parse_rfc3339(text)
        .ok_or_else(|| format!("{text:?} is not an RFC 3339 time (2030-01-01T00:00:00Z)"))?;
    let start =
        jiff::Timestamp::from_nanosecond(nanos).map_err(|_| format!("{text:?} is out of range"))?;
    Ok(VirtualClockStart::At(
        kubemock_controllers::clock::Clock::virtual_at(start),
    ))
}

/// Like [`parse_interval`], but zero is allowed.
fn parse_delay(text: &str) -> Result<Duration, String> {
    if text.trim().trim_end_matches(['m', 's']).trim() == "0" {
        return Ok(Duration::ZERO);
    }
    parse_interval(text)
}

/// kube-controller-manager's leader election flags, for `controller-manager` and for the
/// in-process controllers of `serve` (docs/etcd.md#leader-election).
#[derive(Debug, Args)]
struct LeaderElectArgs {
    /// Run the controllers only while holding the `kube-system/kube-controller-manager`
    /// Lease, so that of several candidates (managers, or servers over one etcd) exactly one
    /// runs them.
    #[arg(long)]
    leader_elect: bool,
    /// This candidate's identity in the Lease (default: host name and process id).
    #[arg(long)]
    leader_elect_identity: Option<String>,
    /// How long a Lease holds without renewal; another candidate takes over after it.
    #[arg(long, default_value = "15s", value_parser = parse_interval)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops its controllers.
    #[arg(long, default_value = "10s", value_parser = parse_interval)]
    leader_elect_renew_deadline: Duration,
    /// Pause between attempts to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = parse_interval)]
    leader_elect_retry_period: Duration,
}

impl LeaderElectArgs {
    /// The election to take part in, with `--leader-elect`.
    fn election(&self) -> anyhow::Result<Option<LeaderElection>> {
        if !self.leader_elect {
            return Ok(None);
        }
        if self.leader_elect_renew_deadline >= self.leader_elect_lease_duration {
            anyhow::bail!(
                "--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration"
            );
        }
        if self.leader_elect_retry_period >= self.leader_elect_renew_deadline {
            anyhow::bail!(
                "--leader-elect-retry-period must be shorter than --leader-elect-renew-deadline"
            );
        }
        let identity = self
            .leader_elect_identity
            .clone()
            .unwrap_or_else(default_identity);
        let mut election = LeaderElection::new(&identity);
        election.config = election.config.timings(
            self.leader_elect_lease_duration,
            self.leader_elect_renew_deadline,
            self.leader_elect_retry_period,
        );
        Ok(Some(election))
    }
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Address to listen on (kube-apiserver's `--bind-address` too).
    #[arg(long, alias = "bind-address", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 6443)]
    port: u16,
    #[command(flatten)]
    security: SecurityArgs,
    #[command(flatten)]
    audit: AuditArgs,
    /// Data directory for a durable store; without it the store is ephemeral.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Write a kubeconfig whose current context points at the server to this file. Without
    /// it, `kubemock serve` writes one to `$XDG_RUNTIME_DIR/kubemock/kubeconfig`, else
    /// `$XDG_CACHE_HOME/kubemock/kubeconfig`, else `~/.cache/kubemock/kubeconfig`, and says
    /// where on stderr.
    #[arg(long, conflicts_with = "no_kubeconfig")]
    kubeconfig_out: Option<PathBuf>,
    /// Write no kubeconfig at all (not even to the default path).
    #[arg(long)]
    no_kubeconfig: bool,
    /// Whether a start without `--kubeconfig-out` writes the default kubeconfig: true for
    /// `kubemock serve`, false for kubemock as `kube-apiserver` (envtest passes its own).
    #[arg(skip)]
    default_kubeconfig: bool,
    /// Do not run the in-process controllers: a deleted namespace then stays Terminating, a
    /// deleted owner's dependents stay (as with envtest).
    #[arg(long)]
    no_controllers: bool,
    #[command(flatten)]
    election: LeaderElectArgs,
    /// Controllers to run in-process: `*` for all, `name` to enable one, `-name` to disable.
    #[arg(long, default_value = "*")]
    controllers: String,
    /// In the secure mode, run each controller as its ServiceAccount in `kube-system`, bound
    /// by the bootstrap RBAC policy (kubeadm's setting of kube-controller-manager's flag);
    /// `false`: every controller as `system:kube-controller-manager`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true")]
    use_service_account_credentials: bool,
    /// The in-process controllers, scheduler and simulated kubelets send their requests over
    /// the server's socket, as a separate controller manager would, instead of calling the
    /// server's request pipeline in memory (the same pipeline, without HTTP's framing).
    #[arg(long)]
    loopback_socket: bool,
    #[command(flatten)]
    nodes: NodeArgs,
    /// Read-only requests in flight at most (watches not counted); more are answered 429.
    /// 0 is unlimited.
    #[arg(long, default_value_t = kubemock_apiserver::DEFAULT_MAX_REQUESTS_INFLIGHT)]
    max_requests_inflight: usize,
    /// Mutating requests in flight at most; more are answered 429. 0 is unlimited.
    #[arg(long, default_value_t = kubemock_apiserver::DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT)]
    max_mutating_requests_inflight: usize,
    /// Bytes of request bodies in flight at most (`128Mi`, `1Gi`, plain bytes); more are
    /// answered 429. A body counts by its Content-Length, or as 3 MiB when chunked. 0 is
    /// unlimited.
    #[arg(long, default_value = "128Mi", value_parser = parse_bytes)]
    max_request_body_bytes_inflight: usize,
    /// Interval between BOOKMARK events on watches that allow them (`60s`, `500ms`, or plain
    /// seconds); about a minute like the real server unless tests want them sooner.
    #[arg(long, default_value = "60s", value_parser = parse_interval)]
    bookmark_interval: Duration,
    /// Entries the request log (`testing.kubemock.dev/v1` `requests`) keeps, the oldest
    /// dropped first; 0 turns it off.
    #[arg(long, default_value_t = kubemock_apiserver::DEFAULT_REQUEST_LOG_SIZE)]
    request_log_size: usize,
    /// Keep request and response bodies in the request log (each up to 64 KiB, 256 MiB in
    /// all; off by default: it costs a copy of every body).
    #[arg(long)]
    request_log_bodies: bool,
    /// Create the objects of PATH at startup (a YAML or JSON file, multi-document, Lists
    /// included, or a folder of them, read recursively): CustomResourceDefinitions first,
    /// waited for until Established, then Namespaces, then the rest. Repeatable. The server
    /// does not start if one cannot be read or created.
    #[arg(long = "load", value_name = "PATH")]
    load: Vec<PathBuf>,
    /// Start from a snapshot written by `kubemock snapshot save` (the store must be empty):
    /// objects keep their uids and timestamps, not their resourceVersions.
    #[arg(long, value_name = "FILE")]
    restore: Option<PathBuf>,
    /// No effect, kept so that scripts that pass it still start: it used to store what
    /// kubemock did not enforce yet (webhook matchConditions, ValidatingAdmissionPolicies),
    /// which it now enforces.
    #[arg(long, hide = true)]
    accept_unenforced: bool,
    /// The IPv4 range Services get their cluster IPs from; the `kubernetes` Service has its
    /// first address.
    #[arg(long, default_value = kubemock_apiserver::DEFAULT_SERVICE_CLUSTER_IP_RANGE)]
    service_cluster_ip_range: ServiceCidr,
    /// The ports NodePort and LoadBalancer Services get their node ports from.
    #[arg(long, default_value = kubemock_apiserver::DEFAULT_SERVICE_NODE_PORT_RANGE)]
    service_node_port_range: NodePortRange,
    /// Run on a virtual clock that stands still until moved through
    /// `testing.kubemock.dev/v1` `clocks/cluster` (docs/test-powers.md#the-clock), starting at the given
    /// RFC 3339 time (`--virtual-clock=2030-01-01T00:00:00Z`) or now. It drives the
    /// server's timestamps and the in-process controllers.
    #[arg(long, value_name = "START", num_args = 0..=1, default_missing_value = "now",
          value_parser = parse_clock_start)]
    virtual_clock: Option<VirtualClockStart>,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    etcd: EtcdArgs,
}

/// kube-apiserver's etcd flags: the store in etcd instead of the embedded one (docs/etcd.md).
#[derive(Debug, Args)]
struct EtcdArgs {
    /// etcd client URLs (comma-separated, `http://` or `https://`): keep the objects in etcd,
    /// so that several `kubemock serve` over one etcd are one cluster. Not with `--data-dir`.
    /// Pointed at kubemock's own etcd stand-in (envtest), the embedded store is kept.
    #[arg(long, value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// Every key in etcd starts with this (kube-apiserver's default).
    #[arg(long, default_value = kubemock_storage_etcd::DEFAULT_PREFIX)]
    etcd_prefix: String,
    /// The CA of etcd's serving certificate, for `https://` URLs (PEM).
    #[arg(long)]
    etcd_cafile: Option<PathBuf>,
    /// A client certificate for etcd (PEM), with `--etcd-keyfile`.
    #[arg(long)]
    etcd_certfile: Option<PathBuf>,
    /// The client certificate's key (PEM), with `--etcd-certfile`.
    #[arg(long)]
    etcd_keyfile: Option<PathBuf>,
}

impl EtcdArgs {
    /// The etcd store's configuration, or `None` for the embedded store (no `--etcd-servers`,
    /// or only kubemock's etcd stand-in there).
    async fn config(
        &self,
        store: &StoreArgs,
        data_dir: Option<&PathBuf>,
    ) -> anyhow::Result<Option<kubemock_storage_etcd::EtcdConfig>> {
        let servers: Vec<String> = self
            .etcd_servers
            .iter()
            .map(|url| url.trim().to_owned())
            .filter(|url| !url.is_empty())
            .collect();
        if servers.is_empty() {
            if self.etcd_cafile.is_some()
                || self.etcd_certfile.is_some()
                || self.etcd_keyfile.is_some()
            {
                anyhow::bail!(
                    "--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers"
                );
            }
            return Ok(None);
        }
        if servers.len() == 1 && envtest::is_stand_in(&servers[0]).await {
            warn!(
                flag = "--etcd-servers",
                value = %servers[0],
                "kubemock's etcd stand-in: accepted for kube-apiserver's command line and ignored, the embedded store is used"
            );
            return Ok(None);
        }
        if data_dir.is_some() {
            anyhow::bail!("--data-dir and --etcd-servers both name a store: choose one");
        }
        let read = |flag: &str, path: &Option<PathBuf>| -> anyhow::Result<Option<Vec<u8>>> {
            path.as_ref()
                .map(|path| {
                    std::fs::read(path)
                        .with_context(|| format!("reading {flag} {}", path.display()))
                })
                .transpose()
        };
        let identity = match (
            read("--etcd-certfile", &self.etcd_certfile)?,
            read("--etcd-keyfile", &self.etcd_keyfile)?,
        ) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            _ => anyhow::bail!("--etcd-certfile and --etcd-keyfile go together"),
        };
        let tls = kubemock_storage_etcd::Tls {
            ca: read("--etcd-cafile", &self.etcd_cafile)?,
            identity,
        };
        if (tls.ca.is_some() || tls.identity.is_some())
            && !servers.iter().all(|url| url.starts_with("https://"))
        {
            anyhow::bail!(
                "--etcd-cafile, --etcd-certfile and --etcd-keyfile need https:// etcd URLs"
            );
        }
        Ok(Some(
            kubemock_storage_etcd::EtcdConfig::new(servers)
                .prefix(self.etcd_prefix.clone())
                .tls(tls)
                .retention(Retention {
                    min_revisions: store.history_min_revisions,
                    min_age: store.history_min_age,
                })
                .compaction_interval(Some(store.compaction_interval)),
        ))
    }
}

/// The store `serve` runs on.
enum Store {
    /// The embedded store (sled), durable with `--data-dir`.
    Sled(SledStore),
    /// etcd (`--etcd-servers`).
    Etcd(kubemock_storage_etcd::EtcdStore),
}

impl Store {
    fn shared(&self) -> Arc<dyn kubemock_storage::Kv> {
        match self {
            Store::Sled(store) => Arc::new(store.clone()),
            Store::Etcd(store) => Arc::new(store.clone()),
        }
    }

    /// What the `serving` line says of it.
    fn kind(&self) -> &'static str {
        match self {
            Store::Sled(store) if store.is_durable() => "durable",
            Store::Sled(_) => "ephemeral",
            Store::Etcd(_) => "etcd",
        }
    }

    fn close(&self) {
        // etcd holds everything; the connection ends with the process.
        if let Store::Sled(store) = self {
            store.close();
        }
    }
}

/// The secure mode and kube-apiserver's flags for it (docs/security.md).
#[derive(Debug, Args)]
struct SecurityArgs {
    /// Serve HTTPS with authentication: a cluster CA and a serving certificate (in memory, or
    /// in `--cert-dir`), client certificates, tokens, impersonation; `--kubeconfig-out` holds
    /// the CA and an admin client certificate.
    #[arg(long)]
    secure: bool,
    /// kube-apiserver's port flag: serve securely on this port (`--port` is then not given).
    #[arg(long, conflicts_with = "port")]
    secure_port: Option<u16>,
    /// Where the generated CA (`ca.crt`, `ca.key`), serving certificate (`apiserver.crt`,
    /// `apiserver.key`) and service-account key (`sa.key`, `sa.pub`) are written, and read
    /// again on the next start. Implies `--secure`.
    #[arg(long)]
    cert_dir: Option<PathBuf>,
    /// The serving certificate (PEM, its chain after it). Implies `--secure`.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// The serving certificate's key (PEM). Implies `--secure`.
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// Authorities whose client certificates authenticate as their CN in the groups of
    /// their O (the cluster CA does too). Implies `--secure`.
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// Static bearer tokens, kube-apiserver's CSV (`token,user,uid,"group1,group2"`).
    /// Implies `--secure`.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Whether a request without credentials is `system:anonymous` (else a 401).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true")]
    anonymous_auth: bool,
    /// The authorizers, in order, one comma-separated value (`AlwaysAllow`, `AlwaysDeny`,
    /// `RBAC`, `Node`: accepted and not enforced); default `RBAC` when secure, `AlwaysAllow`
    /// otherwise.
    #[arg(long, value_parser = AuthorizationMode::parse)]
    authorization_mode: Option<AuthorizationMode>,
    /// The issuer of service-account tokens (repeatable: the first signs; kubemock verifies
    /// only its own).
    #[arg(long)]
    service_account_issuer: Vec<String>,
    /// The audiences the server accepts tokens for (default: the issuer).
    #[arg(long, value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// More keys that verify service-account tokens (PEM; repeatable).
    #[arg(long)]
    service_account_key_file: Vec<PathBuf>,
    /// The key that signs service-account tokens (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC).
    #[arg(long)]
    service_account_signing_key_file: Option<PathBuf>,
    /// An address for the generated serving certificate (kube-apiserver also advertises it
    /// as the `kubernetes` Service's endpoint: kubemock does not).
    #[arg(long)]
    advertise_address: Option<IpAddr>,
    /// Accepted for kube-apiserver's command lines, and ignored (kubemock does not refuse
    /// privileged containers).
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    allow_privileged: Option<bool>,
    /// Accepted for kube-apiserver's command lines, and ignored (kubemock's admission is
    /// fixed).
    #[arg(long)]
    enable_admission_plugins: Option<String>,
    /// Admission plugins to turn off (comma-separated): `ServiceAccount` is honoured (pods
    /// then get no `default` account and no token volume, as envtest's kube-apiserver);
    /// others are accepted and ignored (kubemock's other admission is fixed).
    #[arg(long)]
    disable_admission_plugins: Option<String>,
}

/// kube-apiserver's audit log flags (docs/security.md#audit).
#[derive(Debug, Args)]
struct AuditArgs {
    /// Write audit events here, one JSON object a line (`-`: standard output). Nothing is
    /// written without `--audit-policy-file`, as kube-apiserver.
    #[arg(long)]
    audit_log_path: Option<String>,
    /// The audit policy: an `audit.k8s.io/v1` `Policy`, YAML or JSON. Nothing is written
    /// without `--audit-log-path`.
    #[arg(long)]
    audit_policy_file: Option<PathBuf>,
    /// The events' format: `json` (kube-apiserver's `legacy` text format is not served).
    #[arg(long, default_value = "json")]
    audit_log_format: String,
    /// Accepted and ignored: kubemock does not rotate the audit log.
    #[arg(long)]
    audit_log_maxage: Option<i64>,
    /// Accepted and ignored: kubemock does not rotate the audit log.
    #[arg(long)]
    audit_log_maxbackup: Option<i64>,
    /// Accepted and ignored: kubemock does not rotate the audit log.
    #[arg(long)]
    audit_log_maxsize: Option<i64>,
}

impl AuditArgs {
    /// The audit configuration, its policy read and its log opened; `None` unless both a
    /// path and a policy are given (kube-apiserver's `AuditOptions.ApplyTo` builds no log
    /// backend without a policy, and a policy without a backend records nothing).
    fn config(&self) -> anyhow::Result<Option<kubemock_apiserver::AuditConfig>> {
        if self.audit_log_format != "json" {
            anyhow::bail!(
                "invalid audit log format {:?}: kubemock writes only \"json\" (kube-apiserver's \"legacy\" text format is not served)",
                self.audit_log_format
            );
        }
        for (flag, value) in [
            ("--audit-log-maxage", self.audit_log_maxage),
            ("--audit-log-maxbackup", self.audit_log_maxbackup),
            ("--audit-log-maxsize", self.audit_log_maxsize),
        ] {
            if let Some(value) = value {
                if value < 0 {
                    anyhow::bail!("{flag} {value} can't be a negative number");
                }
                warn!(
                    flag,
                    value, "accepted and ignored: kubemock does not rotate the audit log"
                );
            }
        }
        let policy = match &self.audit_policy_file {
            None => None,
            Some(path) => {
                let bytes = std::fs::read(path)
                    .with_context(|| format!("reading the audit policy file {}", path.display()))?;
                let (policy, warnings) = kubemock_apiserver::AuditPolicy::parse(&bytes)
                    .with_context(|| format!("loading audit policy file {}", path.display()))?;
                for warning in warnings {
                    warn!(%warning, file = %path.display(), "audit policy: field ignored");
                }
                Some(policy)
            }
        };
        match (&self.audit_log_path, policy) {
            (Some(path), Some(policy)) => {
                let log = kubemock_apiserver::AuditLog::from_path(path);
                let config = kubemock_apiserver::AuditConfig::start(policy, &log)
                    .with_context(|| format!("opening the audit log {path}"))?;
                info!(path = %path, "audit log enabled");
                Ok(Some(config))
            }
            (Some(_), None) => {
                warn!(
                    "no audit policy file provided: no events will be recorded for the audit log"
                );
                Ok(None)
            }
            (None, Some(_)) => {
                warn!("an audit policy file without --audit-log-path: no events will be recorded");
                Ok(None)
            }
            (None, None) => Ok(None),
        }
    }
}

impl SecurityArgs {
    /// Whether the server serves TLS: `--secure`, or any flag that only makes sense with it.
    fn secure(&self) -> bool {
        self.secure
            || self.secure_port.is_some()
            || self.cert_dir.is_some()
            || self.tls_cert_file.is_some()
            || self.tls_private_key_file.is_some()
            || self.client_ca_file.is_some()
            || self.token_auth_file.is_some()
    }

    /// Logs, once, each flag given that kubemock accepts and ignores.
    fn log_ignored(&self) {
        let given = [
            (
                "--allow-privileged",
                self.allow_privileged.map(|b| b.to_string()),
            ),
            (
                "--enable-admission-plugins",
                self.enable_admission_plugins.clone(),
            ),
            (
                "--disable-admission-plugins",
                self.disable_admission_plugins.as_deref().and_then(|list| {
                    let rest: Vec<&str> = plugins(list)
                        .filter(|plugin| *plugin != SERVICE_ACCOUNT_PLUGIN)
                        .collect();
                    (!rest.is_empty()).then(|| rest.join(","))
                }),
            ),
            (
                "--anonymous-auth",
                (!self.secure() && !self.anonymous_auth).then(|| "false (open mode)".to_owned()),
            ),
            (
                "--service-account-issuer",
                (self.service_account_issuer.len() > 1)
                    .then(|| self.service_account_issuer[1..].join(",")),
            ),
        ];
        for (flag, value) in given {
            if let Some(value) = value {
                warn!(flag, %value, "accepted for kube-apiserver's command line and ignored");
            }
        }
    }

    /// Whether the ServiceAccount admission plugin acts: not when
    /// `--disable-admission-plugins` names it (envtest does, having no controller to create
    /// the `default` accounts).
    fn service_account_admission(&self) -> bool {
        !self
            .disable_admission_plugins
            .as_deref()
            .is_some_and(|list| plugins(list).any(|plugin| plugin == SERVICE_ACCOUNT_PLUGIN))
    }

    /// The cluster's keys: loaded (or generated into `--cert-dir`) now in the secure mode or
    /// when key files are given, else generated in memory on first use.
    fn pki(&self) -> anyhow::Result<Pki> {
        let files = KeyFiles {
            cert_dir: self.cert_dir.clone(),
            service_account_key_files: self.service_account_key_file.clone(),
            service_account_signing_key_file: self.service_account_signing_key_file.clone(),
        };
        if files == KeyFiles::default() && !self.secure() {
            return Ok(Pki::new());
        }
        if let Some(dir) = &self.cert_dir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the cert dir {}", dir.display()))?;
        }
        Pki::load(&files).context("loading the cluster's keys")
    }

    /// The secure mode's options, the serving certificate also for `hosts`.
    fn options(&self, hosts: Vec<String>) -> SecurityOptions {
        SecurityOptions {
            cert_dir: self.cert_dir.clone(),
            tls_cert_file: self.tls_cert_file.clone(),
            tls_private_key_file: self.tls_private_key_file.clone(),
            client_ca_file: self.client_ca_file.clone(),
            token_auth_file: self.token_auth_file.clone(),
            anonymous_auth: self.anonymous_auth,
            hosts,
        }
    }
}

/// The admission plugin kubemock can turn off (`--disable-admission-plugins`): the others it
/// runs are fixed.
const SERVICE_ACCOUNT_PLUGIN: &str = "ServiceAccount";

/// The plugin names of an `--enable-admission-plugins`/`--disable-admission-plugins` list.
fn plugins(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|p| !p.is_empty())
}

/// The store's memory budgets and history retention (docs/operations.md#memory-budgets).
#[derive(Debug, Args)]
struct StoreArgs {
    /// Bytes of history (superseded versions and deletions) kept for watches and old reads:
    /// in memory without `--data-dir`, on disk with it. Past it the oldest history is
    /// compacted whatever its age, and a watch from it gets 410 Gone (`256Mi`, `1Gi`, bytes).
    #[arg(long, default_value = "256Mi", value_parser = parse_bytes)]
    history_budget: usize,
    /// Revisions of history kept at least, unless the history budget needs them.
    #[arg(long, default_value_t = kubemock_storage::Retention::default().min_revisions)]
    history_min_revisions: u64,
    /// Age of history kept at least, unless the history budget needs it (`5m`, `30s`, `0s`).
    #[arg(long, default_value = "5m", value_parser = parse_delay)]
    history_min_age: Duration,
    /// How often history is compacted down to the retention (`30s`, `500ms`); the budget
    /// compacts at once.
    #[arg(long, default_value = "30s", value_parser = parse_interval)]
    compaction_interval: Duration,
    /// Bytes of events one watch may have waiting for its client before it is ended (the
    /// client resumes from its last resourceVersion).
    #[arg(long, default_value = "64Mi", value_parser = parse_bytes)]
    watch_buffer_bytes: usize,
    /// Bytes of the durable store's page cache (with `--data-dir`).
    #[arg(long, default_value = "64Mi", value_parser = parse_bytes)]
    store_cache_size: usize,
}

impl StoreArgs {
    fn apply(&self, config: Config) -> Config {
        config
            .history_budget(self.history_budget as u64)
            .retention(Retention {
                min_revisions: self.history_min_revisions,
                min_age: self.history_min_age,
            })
            .compaction_interval(Some(self.compaction_interval))
            .watch_buffer_bytes(self.watch_buffer_bytes as u64)
            .cache_capacity(self.store_cache_size as u64)
    }
}

/// A size in bytes: plain digits, or with a binary (`Ki`, `Mi`, `Gi`) or decimal (`k`, `M`,
/// `G`) suffix, as Kubernetes quantities write them.
fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let scale: usize = match suffix {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => return Err(format!("{text:?} is not a size like 128Mi, 1Gi or 4096")),
    };
    number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("{text:?} is not a size like 128Mi, 1Gi or 4096"))
}

/// `500ms`, `2s`, `1m`, or a number of seconds; never zero.
fn parse_interval(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale_ms) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1_000)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60_000)
    } else {
        (text, 1_000)
    };
    let value: u64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 500ms, 2s or 1m"))?;
    match value.checked_mul(scale_ms) {
        Some(0) => Err("the interval must be more than zero".to_owned()),
        Some(ms) => Ok(Duration::from_millis(ms)),
        None => Err(format!("{text:?} is too long")),
    }
}

/// The user the in-process controller manager authenticates as in the secure mode
/// (`user.KubeControllerManager`), without the administrators' group: the bootstrap
/// `system:kube-controller-manager` ClusterRoleBinding authorizes it.
const CONTROLLER_MANAGER_USER: &str = "system:kube-controller-manager";
/// The user the in-process scheduler authenticates as (`user.KubeScheduler`), authorized by
/// the bootstrap `system:kube-scheduler` ClusterRoleBinding.
const SCHEDULER_USER: &str = "system:kube-scheduler";
/// The user that creates the simulated kubelets' ClusterRoleBinding (as kubeadm applies its
/// objects with its administrator's kubeconfig); used for nothing else.
const BOOTSTRAP_USER: &str = "kubemock:bootstrap";
/// The group that every authorizer allows everything (`user.SystemPrivilegedGroup`).
const ADMIN_GROUP: &str = kubemock_apiserver::security::ADMIN_GROUP;
/// First wait before retrying the simulated kubelets' binding; doubled up to
/// [`BOOTSTRAP_RETRY_CAP`].
const BOOTSTRAP_RETRY_BASE: Duration = Duration::from_millis(100);
/// Longest wait between attempts at the simulated kubelets' binding.
const BOOTSTRAP_RETRY_CAP: Duration = Duration::from_secs(10);

/// What the in-process components connect with: the server's own address, asking for
/// [`kubemock_apiserver::LOOPBACK_SERVER_NAME`] and trusting the certificate served for it
/// (as kube-apiserver's loopback client), so that they reach the server whoever issued its
/// serving certificate (envtest's is issued by a CA kubemock never sees).
/// With `local`, they call the server's pipeline in memory instead (`kubemock::in_process`).
fn loopback_config(
    security: &Security,
    addr: SocketAddr,
    local: Option<&LocalApi>,
) -> anyhow::Result<kubemock_client::Config> {
    let name = kubemock_apiserver::LOOPBACK_SERVER_NAME;
    let mut config = kubemock_client::Config::new(&format!("https://{name}:{}", addr.port()));
    config.resolve = Some((name.to_owned(), addr));
    config.local = local.map(kubemock::in_process::InProcess::config);
    config.root_certificates = Some(
        security
            .loopback_ca_pem()
            .context("reading the cluster CA")?
            .into_bytes(),
    );
    Ok(config)
}

/// A loopback client ([`loopback_config`]) with a client certificate of `user` in `groups`.
/// In memory, it presents the certificate as over TLS.
fn certificate_client(
    security: &Security,
    addr: SocketAddr,
    local: Option<&LocalApi>,
    user: &str,
    groups: &[&str],
) -> anyhow::Result<kubemock_client::Client> {
    let identity = security
        .issue_client_identity(user, groups)
        .with_context(|| format!("issuing the client certificate of {user}"))?;
    let local = local
        .map(|api| api.presenting(identity.certificate_pem.as_bytes()))
        .transpose()
        .map_err(|err| anyhow::anyhow!("the client certificate of {user}: {err}"))?;
    let mut config = loopback_config(security, addr, local.as_ref())?;
    config.client_identity =
        Some(format!("{}{}", identity.certificate_pem, identity.key_pem).into_bytes());
    kubemock_client::Client::new(config).with_context(|| format!("creating the client of {user}"))
}

/// The in-process components' credentials in the secure mode (docs/security.md): the
/// controller manager as `system:kube-controller-manager`, each controller as its
/// ServiceAccount (`use_accounts`) or as the manager, the scheduler as
/// `system:kube-scheduler`, the simulated kubelets as `kubemock:node-simulator` (their
/// ClusterRoleBinding created first when they run, and the default StorageClass when the
/// provisioner does); `None` when `stop` came first.
/// All of them reach the server at `addr` as loopback clients.
async fn secure_credentials(
    security: &Security,
    addr: SocketAddr,
    local: Option<&LocalApi>,
    use_accounts: bool,
    config: &kubemock_controllers::ManagerConfig,
    stop: &CancellationToken,
) -> anyhow::Result<Option<kubemock_controllers::Credentials>> {
    let kubelets = config.is_enabled(kubemock_controllers::manager::KUBELET);
    let storage = config.is_enabled(kubemock_controllers::manager::STORAGE_PROVISIONER);
    use kubemock_controllers::kubelet::identity::{SIMULATOR_USER, ensure_simulator_binding};
    let root = certificate_client(security, addr, local, CONTROLLER_MANAGER_USER, &[])?;
    let mut credentials = kubemock_controllers::Credentials::shared(root)
        .with_scheduler(certificate_client(
            security,
            addr,
            local,
            SCHEDULER_USER,
            &[],
        )?)
        .with_kubelet(certificate_client(
            security,
            addr,
            local,
            SIMULATOR_USER,
            &[],
        )?);
    if use_accounts {
        credentials = credentials.with_service_accounts(loopback_config(security, addr, local)?);
    }
    if kubelets || storage {
        let admin = certificate_client(security, addr, local, BOOTSTRAP_USER, &[ADMIN_GROUP])?;
        let mut delay = BOOTSTRAP_RETRY_BASE;
        loop {
            // The add-ons' objects an administrator installs on a real cluster: the simulated
            // kubelets' binding, and the default StorageClass (the provisioner's account may
            // not create classes).
            let mut result = Ok(());
            if kubelets {
                result = ensure_simulator_binding(&admin).await;
            }
            if storage && result.is_ok() {
                result =
                    kubemock_controllers::volume::provisioner::ensure_default_class(&admin).await;
            }
            let Err(err) = result else { break };
            warn!(error = %err, ?delay, "cannot create the simulated kubelets' binding or the default StorageClass; retrying");
            tokio::select! {
                () = stop.cancelled() => return Ok(None),
                () = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(BOOTSTRAP_RETRY_CAP);
        }
    }
    Ok(Some(credentials))
}

/// mimalloc instead of glibc's malloc: a request allocates many small, short-lived values
/// (JSON trees, field sets, keys), and glibc's allocator took about a sixth of the server's
/// CPU per create (`_int_malloc`, `_int_free`, `malloc_consolidate`) in the load profile.
/// Built with `no_thp`: with transparent huge pages on `madvise`, mimalloc's huge-page advice
/// made the kernel zero 2 MiB pages at startup (spawn to first 200 on /readyz went from
/// 5 ms to 8.5 ms). The `system-allocator` feature leaves it out, for heap profilers that
/// trace the C allocator (heaptrack, valgrind; docs/benchmarks.md#controllers-at-scale-issue-23).
#[cfg(all(not(feature = "system-allocator"), not(feature = "heap-count")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The `heap-count` feature wraps the allocator in `cap::Cap` (no limit), which keeps the bytes
/// that allocations hold now: the live heap, apart from what the allocator keeps around it
/// (size-class rounding, partly used pages, freed memory not yet given back). `/metrics`
/// reports it as `kubemock_heap_in_use_bytes` ([`heap_in_use`]), and the controller scale
/// benchmark sets it beside the process's RSS.
#[cfg(all(not(feature = "system-allocator"), feature = "heap-count"))]
#[global_allocator]
static ALLOCATOR: cap::Cap<mimalloc::MiMalloc> = cap::Cap::new(mimalloc::MiMalloc, usize::MAX);

#[cfg(all(feature = "system-allocator", feature = "heap-count"))]
#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

/// What allocations hold now, when this build counts it (the `heap-count` feature).
fn heap_in_use() -> Option<fn() -> usize> {
    #[cfg(feature = "heap-count")]
    {
        Some(|| ALLOCATOR.allocated())
    }
    #[cfg(not(feature = "heap-count"))]
    {
        None
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let argv: Vec<OsString> = std::env::args_os().collect();
    let command = match envtest::personality(argv.first().map(OsString::as_os_str)) {
        Some(envtest::Personality::KubeApiserver) => {
            Personality::Serve(Box::new(kube_apiserver_args(argv)))
        }
        Some(envtest::Personality::Etcd) => {
            let args = argv
                .iter()
                .skip(1)
                .map(|arg| arg.to_string_lossy().into_owned());
            match envtest::EtcdArgs::parse(args) {
                Ok(args) if args.help => return print_text(&envtest::etcd_help()),
                Ok(args) if args.version => return print_text(&envtest::etcd_version()),
                Ok(args) => Personality::Etcd(args),
                Err(err) => {
                    eprintln!("etcd (kubemock stand-in): {err:#}");
                    return ExitCode::from(2);
                }
            }
        }
        None => match Cli::parse_from(argv).command {
            Command::Serve(mut args) => {
                args.default_kubeconfig = true;
                Personality::Serve(args)
            }
            Command::ControllerManager(args) => Personality::ControllerManager(args),
            Command::EnvtestAssets(args) => return envtest_assets(&args),
            Command::Snapshot(SnapshotCommand::Save(args)) => Personality::SnapshotSave(args),
        },
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("kubemock: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = match command {
        Personality::Serve(args) => runtime.block_on(serve(*args)),
        Personality::ControllerManager(args) => runtime.block_on(controller_manager(args)),
        Personality::Etcd(args) => runtime.block_on(etcd(args)),
        Personality::SnapshotSave(args) => runtime.block_on(snapshot_save(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kubemock: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// What this process runs.
enum Personality {
    /// `kubemock serve`, or kubemock as `kube-apiserver`.
    Serve(Box<ServeArgs>),
    /// `kubemock controller-manager`.
    ControllerManager(ControllerManagerArgs),
    /// kubemock as `etcd`: envtest's health check, nothing stored.
    Etcd(envtest::EtcdArgs),
    /// `kubemock snapshot save`.
    SnapshotSave(SnapshotSaveArgs),
}

/// `serve`'s arguments from kube-apiserver's command line, with the drop-in's defaults:
/// always secure (kube-apiserver serves only TLS since 1.20), and the controllers of
/// `--controllers` when given, else of `KUBEMOCK_CONTROLLERS`, else none (envtest runs no
/// controller manager). Exits with clap's message on a bad command line, and after
/// `--help`, whose text envtest reads for `--insecure-port` (which must not be there).
fn kube_apiserver_args(argv: Vec<OsString>) -> ServeArgs {
    let matches = KubeApiserverCli::command().get_matches_from(argv);
    let mut args = match KubeApiserverCli::from_arg_matches(&matches) {
        Ok(cli) => cli.serve,
        Err(err) => err.exit(),
    };
    let flag = (matches.value_source("controllers")
        == Some(clap::parser::ValueSource::CommandLine))
    .then(|| args.controllers.clone());
    let env = std::env::var(envtest::CONTROLLERS_ENV).ok();
    match envtest::drop_in_controllers(args.no_controllers, flag.as_deref(), env.as_deref()) {
        Some(list) => args.controllers = list,
        None => args.no_controllers = true,
    }
    args.security.secure = true;
    args
}

/// `kubemock envtest-assets DIR`.
fn envtest_assets(args: &EnvtestAssetsArgs) -> ExitCode {
    let written = std::env::current_exe()
        .context("finding this program")
        .and_then(|exe| envtest::write_assets(&args.dir, &exe, args.kubectl.clone()));
    match written {
        Ok(assets) => {
            info!(
                dir = %assets.dir.display(),
                kubectl = ?assets.kubectl,
                "envtest assets written"
            );
            print_text(&format!("{}\n", assets.dir.display()))
        }
        Err(err) => {
            eprintln!("kubemock: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// kubemock as `etcd`, until SIGINT or SIGTERM.
async fn etcd(args: envtest::EtcdArgs) -> anyhow::Result<()> {
    let stop = CancellationToken::new();
    let signalled = shutdown_signal()?;
    let mut server = tokio::spawn(envtest::run_etcd(args, stop.clone()));
    tokio::select! {
        () = signalled => {
            stop.cancel();
            server.await.context("the etcd stand-in failed")?
        }
        // Ends early only when it cannot listen.
        ended = &mut server => ended.context("the etcd stand-in failed")?,
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // One clock for the server and its in-process controllers.
    let clock = match &args.virtual_clock {
        Some(start) => start.clock(),
        None => kubemock_controllers::clock::Clock::system(),
    };
    let election = args.election.election()?;
    if election.is_some() && args.no_controllers {
        anyhow::bail!("--leader-elect elects who runs the controllers: not with --no-controllers");
    }
    let controllers = if args.no_controllers {
        None
    } else {
        Some(
            args.nodes
                .apply(ManagerConfig::from_list(&args.controllers)?)
                .with_clock(clock.clone()),
        )
    };
    let store = match args
        .etcd
        .config(&args.store, args.data_dir.as_ref())
        .await?
    {
        Some(config) => {
            let endpoints = config.endpoints.join(",");
            Store::Etcd(
                kubemock_storage_etcd::EtcdStore::connect(config)
                    .await
                    .with_context(|| format!("connecting to etcd at {endpoints}"))?,
            )
        }
        None => {
            let config = args.store.apply(match &args.data_dir {
                Some(dir) => Config::durable(dir),
                None => Config::ephemeral(),
            });
            Store::Sled(
                tokio::task::spawn_blocking(move || SledStore::open(config))
                    .await
                    .context("opening the store")?
                    .context("opening the store")?,
            )
        }
    };
    args.security.log_ignored();
    let audit = args.audit.config()?;
    let secure = args.security.secure();
    let setup_started = std::time::Instant::now();
    let pki = Arc::new(args.security.pki()?);
    let security = if secure {
        let mut hosts: Vec<String> = [Some(args.bind), args.security.advertise_address]
            .into_iter()
            .flatten()
            .filter(|ip| !ip.is_unspecified())
            .map(|ip| ip.to_string())
            .collect();
        hosts.push(args.service_cluster_ip_range.first().to_string());
        Some(
            Security::load(&args.security.options(hosts), Arc::clone(&pki))
                .context("setting up secure serving")?,
        )
    } else {
        None
    };
    let port = args.security.secure_port.unwrap_or(args.port);
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, port))
        .await
        .with_context(|| format!("binding {}:{port}", args.bind))?;
    let mut addr = listener.local_addr().context("reading the bound address")?;
    // Clients cannot connect to the unspecified address: advertise loopback instead.
    if addr.ip().is_unspecified() {
        addr.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let url = format!("{}://{addr}", if secure { "https" } else { "http" });
    let kubeconfig_path = match (&args.kubeconfig_out, args.no_kubeconfig) {
        (Some(path), _) => Some(path.clone()),
        (None, false) if args.default_kubeconfig => default_kubeconfig_path(),
        (None, _) => None,
    };
    if let Some(path) = &kubeconfig_path {
        let kubeconfig = match &security {
            Some(security) => security
                .admin_kubeconfig(&url)
                .context("issuing the admin's client certificate")?,
            None => kubemock_apiserver::kubeconfig(&url),
        };
        write_kubeconfig(path, &kubeconfig, args.kubeconfig_out.is_none())
            .with_context(|| format!("writing the kubeconfig to {}", path.display()))?;
    }
    // Keys, certificates and the kubeconfig: what the secure mode adds to a start.
    let security_setup_us = u64::try_from(setup_started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let authorization_mode = args.security.authorization_mode.clone().unwrap_or_else(|| {
        if secure {
            AuthorizationMode::rbac()
        } else {
            AuthorizationMode::always_allow()
        }
    });
    let issuer = args
        .security
        .service_account_issuer
        .first()
        .cloned()
        .unwrap_or_else(|| ServerConfig::default().service_account_issuer);

    if args.accept_unenforced {
        warn!("--accept-unenforced has no effect: everything it used to let through is enforced");
    }
    let fixtures =
        kubemock_apiserver::fixtures::read(&args.load).context("reading the fixtures")?;
    let restore = match &args.restore {
        Some(path) => {
            let text = std::fs::read(path)
                .with_context(|| format!("reading the snapshot {}", path.display()))?;
            let snapshot: serde_json::Value = serde_json::from_slice(&text)
                .with_context(|| format!("reading the snapshot {}", path.display()))?;
            Some(Arc::new(snapshot))
        }
        None => None,
    };
    let ready = Arc::new(tokio::sync::Notify::new());
    // Where the server puts its in-memory API for the in-process components.
    let local_slot = (!args.loopback_socket).then(kubemock_apiserver::LocalSlot::new);
    let shutdown = CancellationToken::new();
    // `componentstatuses`: the controller manager (and its scheduler) run in this process
    // when they are enabled.
    let components = kubemock_apiserver::ComponentHealth::default();
    if let Some(config) = &controllers {
        components.set("controller-manager", true);
        components.set(
            "scheduler",
            config.is_enabled(kubemock_controllers::manager::SCHEDULER),
        );
    }
    let server = tokio::spawn(kubemock_apiserver::serve(
        listener,
        store.shared(),
        ServerConfig {
            max_requests_inflight: args.max_requests_inflight,
            max_mutating_requests_inflight: args.max_mutating_requests_inflight,
            max_request_body_bytes_inflight: args.max_request_body_bytes_inflight,
            bookmark_interval: args.bookmark_interval,
            service_cluster_ip_range: args.service_cluster_ip_range,
            service_node_port_range: args.service_node_port_range,
            components,
            service_account_admission: args.security.service_account_admission(),
            security: security.clone(),
            authorization_mode,
            pki: Arc::clone(&pki),
            service_account_issuer: issuer,
            api_audiences: args.security.api_audiences.clone(),
            audit,
            request_log: kubemock_apiserver::RequestLogConfig {
                size: args.request_log_size,
                bodies: args.request_log_bodies,
            },
            fixtures,
            restore,
            ready: Some(Arc::clone(&ready)),
            local: local_slot.clone(),
            clock: clock.clone(),
            heap_in_use: heap_in_use(),
        },
        shutdown.clone(),
    ));
    // The server accepts connections once the bootstrap, the restore and the fixtures are
    // done; if one of them fails, it ends, and so does the start.
    let mut server = server;
    tokio::select! {
        () = ready.notified() => {}
        result = &mut server => {
            result.context("the server task failed")?.context("starting")?;
            anyhow::bail!("the server stopped while starting");
        }
    }
    let local = local_slot
        .as_ref()
        .and_then(kubemock_apiserver::LocalSlot::get);
    let stop_controllers = CancellationToken::new();
    let manager = match controllers {
        Some(config) => {
            let stop = stop_controllers.clone();
            let started = match &security {
                // Certificates, the simulated kubelets' binding and the controllers' tokens
                // come after the ready line: the secure mode's start does not wait for them.
                Some(security) => {
                    let security = security.clone();
                    let use_accounts = args.use_service_account_credentials;
                    tokio::spawn(async move {
                        let credentials = match secure_credentials(
                            &security,
                            addr,
                            local.as_ref(),
                            use_accounts,
                            &config,
                            &stop,
                        )
                        .await
                        {
                            Ok(Some(credentials)) => credentials,
                            Ok(None) => return,
                            Err(err) => {
                                error!(error = %format!("{err:#}"), "the controllers cannot start");
                                return;
                            }
                        };
                        let config = config.with_root_ca(security.server_ca_pem());
                        run_controllers(credentials, config, election, stop).await;
                    })
                }
                None => {
                    let mut client_config = kubemock_client::Config::new(&url);
                    client_config.local =
                        local.as_ref().map(kubemock::in_process::InProcess::config);
                    let client = kubemock_client::Client::new(client_config)
                        .context("creating the controllers' client")?;
                    let pki = Arc::clone(&pki);
                    tokio::spawn(async move {
                        // The CA the server would serve with (made on first use, so after
                        // the ready line): what pods' kube-root-ca.crt holds.
                        let config = match pki.ca_certificate_pem() {
                            Ok(pem) => config.with_root_ca(pem),
                            Err(err) => {
                                warn!(error = %err, "no cluster CA for kube-root-ca.crt");
                                config
                            }
                        };
                        let credentials = kubemock_controllers::Credentials::shared(client);
                        run_controllers(credentials, config, election, stop).await;
                    })
                }
            };
            Some(started)
        }
        None => None,
    };
    // Listen before announcing: a signal sent right after the ready line must shut down
    // cleanly, not kill the process with the default action.
    let signalled = shutdown_signal()?;
    announce(&url);
    if args.default_kubeconfig || args.kubeconfig_out.is_some() {
        kubectl_hint(&url, kubeconfig_path.as_deref());
    }
    info!(
        %url,
        store = store.kind(),
        controllers = manager.is_some(),
        security_setup_us,
        "serving"
    );

    signalled.await;
    info!("shutting down");
    stop_controllers.cancel();
    if let Some(manager) = manager {
        manager
            .await
            .context("the controller manager task failed")?;
    }
    shutdown.cancel();
    server
        .await
        .context("the server task failed")?
        .context("serving")?;
    store.close();
    info!("stopped");
    Ok(())
}

/// The in-process controllers of `serve` until `stop`: always, or (`--leader-elect`) only
/// while this server holds the Lease, campaigning again whenever it loses it (the server
/// keeps serving; kube-controller-manager would exit instead).
async fn run_controllers(
    credentials: kubemock_controllers::Credentials,
    config: ManagerConfig,
    election: Option<LeaderElection>,
    stop: CancellationToken,
) {
    match election {
        None => kubemock_controllers::run_as(credentials, config, stop).await,
        Some(election) => {
            info!(identity = %election.config.identity, "campaigning for leadership");
            kubemock_controllers::campaign(credentials, config, election, stop).await;
        }
    }
}

async fn controller_manager(args: ControllerManagerArgs) -> anyhow::Result<()> {
    let mut config = args
        .nodes
        .apply(ManagerConfig::from_list(&args.controllers)?);
    let mut client_config = match (&args.kubeconfig, &args.master) {
        (Some(path), _) => kubemock_client::Config::from_kubeconfig_file(path)
            .with_context(|| format!("reading the kubeconfig {}", path.display()))?,
        (None, Some(url)) => kubemock_client::Config::new(url),
        (None, None) => kubemock_client::Config::infer().context("finding a kubeconfig")?,
    };
    if let Some(url) = &args.master {
        client_config.cluster_url = url.trim_end_matches('/').to_owned();
    }
    // kube-controller-manager's `--root-ca-file`, else the CA its kubeconfig trusts.
    let root_ca = match &args.root_ca_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading --root-ca-file {}", path.display()))?,
        ),
        None => client_config
            .root_certificates
            .as_deref()
            .map(|pem| String::from_utf8_lossy(pem).into_owned()),
    };
    if let Some(root_ca) = root_ca {
        config = config.with_root_ca(root_ca);
    }
    let client =
        kubemock_client::Client::new(client_config.clone()).context("creating the client")?;
    // `/readyz` asks the API server with the manager's own credentials.
    let health_client = client.clone();
    let token = CancellationToken::new();
    // A kubemock server on a virtual clock: the controllers follow it.
    if let Some(clock) = follow_server_clock(&client, &token).await {
        config = config.with_clock(clock);
    }
    let mut credentials = kubemock_controllers::Credentials::shared(client);
    if args.use_service_account_credentials {
        credentials = credentials.with_service_accounts(client_config);
    }
    let signalled = shutdown_signal()?;
    let health = if args.health_port == 0 {
        None
    } else {
        let addr = SocketAddr::new(args.health_bind, args.health_port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding the health endpoint {addr}"))?;
        Some(tokio::spawn(serve_health(
            listener,
            health_client,
            token.clone(),
        )))
    };
    let mut manager = if let Some(election) = args.election.election()? {
        info!(identity = %election.config.identity, "campaigning for leadership");
        tokio::spawn(kubemock_controllers::run_with_leader_election(
            credentials,
            config,
            election,
            token.clone(),
        ))
    } else {
        tokio::spawn(kubemock_controllers::run_as(
            credentials,
            config,
            token.clone(),
        ))
    };
    tokio::select! {
        () = signalled => {
            info!("shutting down");
            token.cancel();
            manager.await.context("the controller manager task failed")?;
        }
        // With leader election the manager returns when leadership is lost: exit, as
        // kube-controller-manager does, and let a supervisor start a new candidate.
        result = &mut manager => {
            result.context("the controller manager task failed")?;
            info!("leadership lost");
        }
    }
    token.cancel();
    if let Some(health) = health {
        health.await.context("the health endpoint failed")?;
    }
    info!("stopped");
    Ok(())
}

/// How often an out-of-process controller manager reads a virtual server clock.
const CLOCK_FOLLOW_INTERVAL: Duration = Duration::from_millis(100);

/// The server's clock as a clock of this process, when the server is a kubemock on a
/// virtual clock (`testing.kubemock.dev/v1` `clocks/cluster` with `status.virtual`): a fake
/// clock set to the server's time every [`CLOCK_FOLLOW_INTERVAL`] until `token` is
/// cancelled. `None` (the system clock) for any other server.
async fn follow_server_clock(
    client: &kubemock_client::Client,
    token: &CancellationToken,
) -> Option<kubemock_controllers::clock::Clock> {
    let api: kubemock_client::Api<kubemock_client::DynamicObject> = kubemock_client::Api::all_with(
        client.clone(),
        &kubemock_client::ApiResource::new("testing.kubemock.dev", "v1", "Clock", "clocks", false),
    );
    let read = move || {
        let api = api.clone();
        async move {
            let clock = api.get("cluster").await.ok()?;
            let status = clock.data.get("status")?;
            if status.get("virtual")?.as_bool() != Some(true) {
                return None;
            }
            let now = status.get("now")?.as_str()?;
            match parse_clock_start(now).ok()? {
                VirtualClockStart::At(clock) => Some(clock.now()),
                VirtualClockStart::Now => None,
            }
        }
    };
    let clock = kubemock_controllers::clock::Clock::virtual_at(read().await?);
    info!(now = %clock.now(), "following the server's virtual clock");
    let (follower, token) = (clock.clone(), token.clone());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = token.cancelled() => return,
                () = tokio::time::sleep(CLOCK_FOLLOW_INTERVAL) => {}
            }
            if let Some(now) = read().await.filter(|now| *now != follower.now()) {
                // Only a virtual clock is followed, so the move cannot be refused.
                let _ = follower.set(now);
            }
        }
    });
    Some(clock)
}

/// How long the controller manager's `/readyz` waits for the API server's `/readyz`.
const HEALTH_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The controller manager's health endpoints, until `token` is cancelled: `/readyz` answers
/// `200 ok` only when the API server's `/readyz` answers within [`HEALTH_CHECK_TIMEOUT`]
/// (else 503 with the reason), so that a supervisor sees a manager that cannot reach its
/// server; every other path (`/healthz`, `/livez`) answers `200 ok` while the process and
/// its runtime are responsive.
async fn serve_health(
    listener: tokio::net::TcpListener,
    apiserver: kubemock_client::Client,
    token: CancellationToken,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = token.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((mut stream, _)) = accepted else {
            continue;
        };
        let apiserver = apiserver.clone();
        connections.spawn(async move {
            let mut request = [0_u8; 1024];
            let read = stream.read(&mut request).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&request[..read]);
            let path = head.split_whitespace().nth(1).unwrap_or("/");
            let (status, body) = if path.starts_with("/readyz") {
                apiserver_ready(&apiserver).await
            } else {
                ("200 OK", "ok".to_owned())
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        });
        while connections.try_join_next().is_some() {}
    }
    connections.shutdown().await;
}

/// The controller manager's readiness: the API server's `/readyz` answered in time.
async fn apiserver_ready(apiserver: &kubemock_client::Client) -> (&'static str, String) {
    let request =
        match kubemock_client::request::RequestBuilder::new(String::new()).get("readyz", None) {
            Ok(request) => request,
            Err(err) => return ("500 Internal Server Error", format!("{err}")),
        };
    match tokio::time::timeout(HEALTH_CHECK_TIMEOUT, apiserver.request_bytes(&request)).await {
        Ok(Ok(_)) => ("200 OK", "ok".to_owned()),
        Ok(Err(err)) => (
            "503 Service Unavailable",
            format!("the API server is not ready: {err}"),
        ),
        Err(_) => (
            "503 Service Unavailable",
            format!("the API server did not answer /readyz within {HEALTH_CHECK_TIMEOUT:?}"),
        ),
    }
}

/// A leader-election identity unique to this process: host name and process id.
fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "kubemock".to_owned());
    format!("{host}_{}", std::process::id())
}

/// Where `kubemock serve` writes its kubeconfig without `--kubeconfig-out`: under the user's
/// runtime directory (`$XDG_RUNTIME_DIR/kubemock/kubeconfig`), else the user's cache directory
/// (`$XDG_CACHE_HOME/kubemock/kubeconfig`, else `$HOME/.cache/kubemock/kubeconfig`); `None`
/// when none of these variables is set.
fn default_kubeconfig_path() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = var("XDG_RUNTIME_DIR")
        .or_else(|| var("XDG_CACHE_HOME"))
        .or_else(|| var("HOME").map(|home| home.join(".cache")))?;
    Some(dir.join("kubemock").join("kubeconfig"))
}

/// Writes `kubeconfig` to `path`, readable by its owner only (it may hold the administrator's
/// key). The default path's directory is created, and the file replaced by a rename so that
/// several servers starting at once leave a whole kubeconfig (the last one's).
fn write_kubeconfig(path: &Path, kubeconfig: &str, create_dir: bool) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    if create_dir && let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(kubeconfig.as_bytes())?;
    drop(file);
    std::fs::rename(&temporary, path)
}

/// Tells, on stderr, how to point kubectl at the server (stdout keeps its one line).
fn kubectl_hint(url: &str, kubeconfig: Option<&Path>) {
    use std::io::Write as _;
    let hint = match kubeconfig {
        Some(path) => format!(
            "kubemock: wrote a kubeconfig for {url} to {path}; point kubectl at it with\n  \
             export KUBECONFIG={path}\n  kubectl get namespaces\n",
            path = path.display()
        ),
        None if url.starts_with("https:") => format!(
            "kubemock: no kubeconfig written for {url}; --kubeconfig-out FILE writes the \
             administrator's\n"
        ),
        None => format!(
            "kubemock: no kubeconfig written; point kubectl at the server with\n  \
             kubectl --server {url} get namespaces\n"
        ),
    };
    let _ = std::io::stderr().lock().write_all(hint.as_bytes());
}

/// Prints the one line that scripts and tests wait for.
#[allow(
    clippy::print_stdout,
    reason = "the ready line is the binary's interface"
)]
fn announce(url: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "kubemock: serving on {url}");
    let _ = stdout.flush();
}

/// Prints `text` to stdout (help and version texts, the assets' directory): the interface.
#[allow(
    clippy::print_stdout,
    reason = "these texts are the binary's interface"
)]
fn print_text(text: &str) -> ExitCode {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// Installs the SIGINT and SIGTERM listeners now; the returned future completes on either.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).context("installing SIGINT handler")?;
    let mut terminate = signal(SignalKind::terminate()).context("installing SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// `kubemock snapshot save FILE`: the server's `POST .../snapshots`, written to FILE.
async fn snapshot_save(args: SnapshotSaveArgs) -> anyhow::Result<()> {
    let config = match (&args.server, &args.kubeconfig) {
        (Some(url), _) => kubemock_client::Config::new(url),
        (None, Some(path)) => kubemock_client::Config::from_kubeconfig_file(path)
            .with_context(|| format!("reading {}", path.display()))?,
        (None, None) => kubemock_client::Config::infer().context("reading the kubeconfig")?,
    };
    let client = kubemock_client::Client::new(config).context("creating the client")?;
    let request = kubemock_client::request::RequestBuilder::new(
        "/apis/testing.kubemock.dev/v1/snapshots".to_owned(),
    )
    .create(&Default::default(), b"{}".to_vec());
    let bytes = client
        .request_bytes(&request)
        .await
        .context("asking the server for a snapshot")?;
    std::fs::write(&args.file, &bytes)
        .with_context(|| format!("writing {}", args.file.display()))?;
    info!(file = %args.file.display(), bytes = bytes.len(), "snapshot saved");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_parse_with_units() {
        assert_eq!(parse_interval("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_interval("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_interval("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_interval("3"), Ok(Duration::from_secs(3)));
        assert!(parse_interval("0s").is_err());
        assert!(parse_interval("soon").is_err());
        assert_eq!(parse_delay("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_delay("0"), Ok(Duration::ZERO));
        assert_eq!(parse_delay("250ms"), Ok(Duration::from_millis(250)));
    }

    #[test]
    fn sizes_parse_with_quantity_suffixes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("128Mi"), Ok(128 << 20));
        assert_eq!(parse_bytes("1Gi"), Ok(1 << 30));
        assert_eq!(parse_bytes("2k"), Ok(2000));
        assert_eq!(parse_bytes("0"), Ok(0));
        assert!(parse_bytes("12MB").is_err());
        assert!(parse_bytes("Mi").is_err());
    }
}
