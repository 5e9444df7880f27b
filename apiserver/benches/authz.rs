//! What authorization costs a request: GET and create of ConfigMaps over HTTP against an
//! in-process server, by a user who is not `system:masters` (impersonated by the open mode's
//! superuser: `Impersonate-User`, `Impersonate-Group`), with
//! - `AlwaysAllow`: no authorization step (the plain figure);
//! - `RBAC`: the user bound to a Role through a RoleBinding;
//! - `RBAC, 5000 bindings`: the same, with 4000 RoleBindings in the namespace and 1000
//!   ClusterRoleBindings naming other users and groups: a request looks at the bindings of its
//!   own user and groups only, so the figure should not move.
//!
//! Target (issue 17): RBAC at least 70 % of the plain figure. Run with
//! `cargo bench -p kubemock-apiserver --bench authz` (`-- --seconds N --clients N --rounds
//! N`); it prints the median requests per second of each row over the rounds (the rows
//! interleaved), and the ratios. The clients share the process and the machine with the
//! server: the ratios mean more than the absolute figures, and a busy machine moves them.
//! The authorization step alone (no HTTP) is timed by the ignored test
//! `authz::request::tests::authorization_step_cost`.

#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kubemock_apiserver::{AuthorizationMode, ServerConfig, TestServer};
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Seconds each row is measured, unless `--seconds` says otherwise.
const DEFAULT_SECONDS: u64 = 5;
/// Concurrent clients, unless `--clients` says otherwise.
const DEFAULT_CLIENTS: usize = 16;
/// Warm-up before each row is measured.
const WARM_UP: Duration = Duration::from_secs(1);
/// RoleBindings of other users in the benchmark's namespace (the "5000 bindings" rows).
const OTHER_ROLE_BINDINGS: usize = 4000;
/// ClusterRoleBindings of other users and groups (the "5000 bindings" rows).
const OTHER_CLUSTER_ROLE_BINDINGS: usize = 1000;
/// Namespace of the ConfigMaps.
const NAMESPACE: &str = "bench";
/// How many rounds of every row (interleaved, so that a slow moment of the machine is
/// spread over all rows), unless `--rounds` says otherwise.
const DEFAULT_ROUNDS: u64 = 5;

/// Names of created ConfigMaps, unique across clients, runs and rounds.
static SERIAL: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy, PartialEq)]
enum Setup {
    AlwaysAllow,
    Rbac,
    RbacCrowded,
}

impl Setup {
    fn name(self) -> &'static str {
        match self {
            Setup::AlwaysAllow => "AlwaysAllow",
            Setup::Rbac => "RBAC",
            Setup::RbacCrowded => "RBAC, 5000 bindings",
        }
    }
}

#[derive(Clone, Copy)]
enum Op {
    Get,
    Create,
}

async fn post(client: &reqwest::Client, url: &str, body: &Value) {
    let response = client
        .post(url)
        .json(body)
        .send()
        .await
        .expect("the server answers");
    assert!(
        response.status().is_success(),
        "POST {url}: {}",
        response.status()
    );
}

async fn start(setup: Setup) -> TestServer {
    let mode = match setup {
        Setup::AlwaysAllow => AuthorizationMode::always_allow(),
        Setup::Rbac | Setup::RbacCrowded => AuthorizationMode::rbac(),
    };
    let server = TestServer::start_with(
        ServerConfig {
            authorization_mode: mode,
            ..ServerConfig::default()
        },
        kubemock_storage::Config::ephemeral(),
    )
    .await
    .expect("a server");
    let admin = reqwest::Client::new();
    let url = server.url().to_owned();
    let rbac = format!("{url}/apis/rbac.authorization.k8s.io/v1");
    post(
        &admin,
        &format!("{url}/api/v1/namespaces"),
        &json!({"metadata": {"name": NAMESPACE}}),
    )
    .await;
    post(
        &admin,
        &format!("{url}/api/v1/namespaces/{NAMESPACE}/configmaps"),
        &json!({"metadata": {"name": "c0"}, "data": {"k": "v"}}),
    )
    .await;
    post(
        &admin,
        &format!("{rbac}/namespaces/{NAMESPACE}/roles"),
        &json!({"metadata": {"name": "cm"}, "rules": [
            {"verbs": ["get", "create"], "apiGroups": [""], "resources": ["configmaps"]}]}),
    )
    .await;
    let binding = |name: String, kind: &str, subject: &str| {
        json!({"metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": "cm"},
               "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io",
                             "name": subject}]})
    };
    post(
        &admin,
        &format!("{rbac}/namespaces/{NAMESPACE}/rolebindings"),
        &binding("alice".to_owned(), "Role", "alice"),
    )
    .await;
    if setup == Setup::RbacCrowded {
        for i in 0..OTHER_ROLE_BINDINGS {
            post(
                &admin,
                &format!("{rbac}/namespaces/{NAMESPACE}/rolebindings"),
                &binding(format!("user-{i}"), "Role", &format!("user-{i}")),
            )
            .await;
        }
        for i in 0..OTHER_CLUSTER_ROLE_BINDINGS {
            let mut crb = binding(format!("crb-{i}"), "ClusterRole", &format!("other-{i}"));
            crb["subjects"].as_array_mut().expect("subjects").push(
                json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                             "name": format!("group-{i}")}),
            );
            post(&admin, &format!("{rbac}/clusterrolebindings"), &crb).await;
        }
    }
    server
}

/// Requests per second of `op` by alice with `clients` concurrent clients for `seconds`.
async fn measure(url: &str, op: Op, clients: usize, seconds: u64) -> f64 {
    let run = |duration: Duration| {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..clients {
            let url = url.to_owned();
            tasks.spawn(async move {
                let http = reqwest::Client::new();
                let deadline = Instant::now() + duration;
                let mut done = 0u64;
                while Instant::now() < deadline {
                    let request = match op {
                        Op::Get => {
                            http.get(format!("{url}/api/v1/namespaces/{NAMESPACE}/configmaps/c0"))
                        }
                        Op::Create => {
                            let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
                            http.post(format!("{url}/api/v1/namespaces/{NAMESPACE}/configmaps"))
                                .json(&json!({"metadata": {"name": format!("b{serial}")},
                                              "data": {"k": "v"}}))
                        }
                    };
                    let response = request
                        .header("Impersonate-User", "alice")
                        .header("Impersonate-Group", "developers")
                        .send()
                        .await
                        .expect("the server answers");
                    assert!(response.status().is_success(), "{}", response.status());
                    let _ = response.bytes().await;
                    done += 1;
                }
                done
            });
        }
        async move {
            let mut total = 0;
            while let Some(done) = tasks.join_next().await {
                total += done.expect("a client");
            }
            total
        }
    };
    run(WARM_UP).await;
    let started = Instant::now();
    let total = run(Duration::from_secs(seconds)).await;
    total as f64 / started.elapsed().as_secs_f64()
}

fn argument(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let seconds = argument("--seconds", DEFAULT_SECONDS);
    let clients = argument("--clients", DEFAULT_CLIENTS as u64) as usize;
    let rounds = argument("--rounds", DEFAULT_ROUNDS) as usize;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let setups = [Setup::AlwaysAllow, Setup::Rbac, Setup::RbacCrowded];
        let mut servers = Vec::new();
        for setup in setups {
            servers.push((setup, start(setup).await));
        }
        let mut rates = vec![[Vec::new(), Vec::new()]; setups.len()];
        for round in 0..rounds {
            for (i, (setup, server)) in servers.iter().enumerate() {
                for (j, op) in [Op::Get, Op::Create].into_iter().enumerate() {
                    let rate = measure(server.url(), op, clients, seconds).await;
                    let name = ["GET", "create"][j];
                    eprintln!("round {round}: {} {name}: {rate:.0}/s", setup.name());
                    rates[i][j].push(rate);
                }
            }
        }
        let median = |rates: &mut Vec<f64>| {
            rates.sort_by(f64::total_cmp);
            rates.get(rates.len() / 2).copied().unwrap_or(0.0)
        };
        let figures: Vec<[f64; 2]> = rates
            .iter_mut()
            .map(|[get, create]| [median(get), median(create)])
            .collect();
        println!("{clients} clients, {seconds} s per row, {rounds} rounds (median):");
        println!(
            "{:<22} {:>12} {:>12} {:>8} {:>8}",
            "setup", "GET/s", "create/s", "GET %", "create %"
        );
        for (i, (setup, _)) in servers.iter().enumerate() {
            println!(
                "{:<22} {:>12.0} {:>12.0} {:>7.1}% {:>7.1}%",
                setup.name(),
                figures[i][0],
                figures[i][1],
                100.0 * figures[i][0] / figures[0][0],
                100.0 * figures[i][1] / figures[0][1],
            );
        }
        for (_, server) in servers {
            server.stop().await.expect("the server stops");
        }
    });
}
