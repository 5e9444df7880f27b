//! The envtest drop-in (docs/clients.md#from-go). controller-runtime's envtest
//! (`sigs.k8s.io/controller-runtime/pkg/envtest`) starts the programs `etcd`, `kube-apiserver`
//! and `kubectl` of the directory `KUBEBUILDER_ASSETS` names, with their upstream flags, and
//! waits for their health endpoints. `kubemock envtest-assets DIR` fills such a directory
//! with links to this binary, which looks at the name it was started under
//! ([`Personality`]): as `kube-apiserver` it is `kubemock serve` in the secure mode without
//! controllers (unless [`CONTROLLERS_ENV`] names some); as `etcd` it is a stand-in that
//! answers envtest's health check and stores nothing, because kubemock's store is embedded.
//! Links, not scripts: they need no shell, and a rebuilt kubemock is picked up at once.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// The API server's program name in `KUBEBUILDER_ASSETS`.
pub(crate) const KUBE_APISERVER: &str = "kube-apiserver";
/// etcd's program name in `KUBEBUILDER_ASSETS`.
pub(crate) const ETCD: &str = "etcd";
/// kubectl's program name in `KUBEBUILDER_ASSETS`.
pub(crate) const KUBECTL: &str = "kubectl";
/// The controllers the drop-in API server runs, in `--controllers` syntax (`*`, `name`,
/// `-name`); unset or empty: none, as envtest users expect.
pub(crate) const CONTROLLERS_ENV: &str = "KUBEMOCK_CONTROLLERS";
/// The etcd version the stand-in reports on `/version` and `--version`: the etcd that
/// kube-apiserver 1.32 is tested with (`cluster/gce/manifests/etcd.manifest` of
/// kubernetes v1.32.0 pins 3.5.16).
const ETCD_VERSION: &str = "3.5.16";
/// The most bytes of a request the etcd stand-in reads before it answers: a request line and
/// the few headers of a health check fit many times over.
const ETCD_REQUEST_LIMIT: usize = 8 * 1024;

/// What this binary is, by the name it was started under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Personality {
    /// `kube-apiserver`: `kubemock serve` with envtest's defaults.
    KubeApiserver,
    /// `etcd`: the health-check stand-in.
    Etcd,
}

/// The personality of a process whose `argv[0]` is `argv0` (its file name counts, so a
/// path or a link both work); `None` is `kubemock` itself.
pub(crate) fn personality(argv0: Option<&OsStr>) -> Option<Personality> {
    let name = Path::new(argv0?).file_name()?;
    if name == KUBE_APISERVER {
        Some(Personality::KubeApiserver)
    } else if name == ETCD {
        Some(Personality::Etcd)
    } else {
        None
    }
}

/// The controllers the drop-in API server runs: `--no-controllers` runs none, a
/// `--controllers` given on the command line wins, then [`CONTROLLERS_ENV`] when it is set
/// and not blank; otherwise none (`None`).
pub(crate) fn drop_in_controllers(
    no_controllers: bool,
    flag: Option<&str>,
    env: Option<&str>,
) -> Option<String> {
    if no_controllers {
        return None;
    }
    flag.or(env)
        .map(str::trim)
        .filter(|list| !list.is_empty())
        .map(str::to_owned)
}

/// What `kubemock envtest-assets` wrote.
#[derive(Debug)]
pub(crate) struct Assets {
    /// The directory, absolute: the value for `KUBEBUILDER_ASSETS`.
    pub(crate) dir: PathBuf,
    /// Where `kubectl` points, when a kubectl was found.
    pub(crate) kubectl: Option<PathBuf>,
}

/// Fills `dir` (created if missing) with `kube-apiserver` and `etcd` linked to `kubemock`,
/// and `kubectl` linked to `kubectl` (the first on `PATH` when `None`); entries of those
/// names already there are replaced, nothing else is touched.
pub(crate) fn write_assets(
    dir: &Path,
    kubemock: &Path,
    kubectl: Option<PathBuf>,
) -> anyhow::Result<Assets> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = std::fs::canonicalize(dir).with_context(|| format!("resolving {}", dir.display()))?;
    for name in [KUBE_APISERVER, ETCD] {
        replace_link(kubemock, &dir.join(name))?;
    }
    let kubectl = kubectl.or_else(|| find_on_path(KUBECTL));
    match &kubectl {
        Some(path) => replace_link(path, &dir.join(KUBECTL))?,
        None => warn!(
            "no kubectl on PATH: the assets have none (envtest needs it only for tests that run kubectl)"
        ),
    }
    Ok(Assets { dir, kubectl })
}

/// Makes `link` a symbolic link to `target`, replacing a file or link of that name.
fn replace_link(target: &Path, link: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(link) {
        Ok(meta) if meta.is_dir() => {
            anyhow::bail!("{} is a directory", link.display());
        }
        Ok(_) => {
            std::fs::remove_file(link).with_context(|| format!("replacing {}", link.display()))?
        }
        Err(_) => {}
    }
    std::os::unix::fs::symlink(target, link)
        .with_context(|| format!("linking {} to {}", link.display(), target.display()))
}

/// The first executable file called `name` in the directories of `PATH`.
fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| {
            std::fs::metadata(path)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// etcd's flags as envtest passes them (`pkg/internal/testing/controlplane/etcd.go`:
/// `--listen-client-urls`, `--advertise-client-urls`, `--listen-peer-urls`, `--data-dir`,
/// `--unsafe-no-fsync`), in Go's flag syntax (`--name=value`, `--name value`, one or two
/// dashes).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct EtcdArgs {
    /// Where the health check is answered.
    pub(crate) listen_client_urls: Vec<String>,
    /// Flags that etcd has and the stand-in ignores (it stores nothing), for one warning.
    pub(crate) ignored: Vec<String>,
    /// `--help` or `-h`.
    pub(crate) help: bool,
    /// `--version`.
    pub(crate) version: bool,
}

/// The flags of etcd 3.5 the stand-in accepts and ignores (it serves no peers, keeps no
/// data and is never a member of a cluster).
const ETCD_IGNORED_FLAGS: &[&str] = &[
    "advertise-client-urls",
    "data-dir",
    "initial-advertise-peer-urls",
    "initial-cluster",
    "initial-cluster-state",
    "initial-cluster-token",
    "listen-metrics-urls",
    "listen-peer-urls",
    "log-level",
    "logger",
    "name",
    "quota-backend-bytes",
    "snapshot-count",
    "unsafe-no-fsync",
];

/// Boolean flags, which take no separate value (`--unsafe-no-fsync`, `--unsafe-no-fsync=true`).
const ETCD_BOOLEAN_FLAGS: &[&str] = &["unsafe-no-fsync"];

impl EtcdArgs {
    /// Reads etcd's command line (without the program name); an unknown flag is refused as
    /// etcd refuses it (`flag provided but not defined`).
    pub(crate) fn parse<I: IntoIterator<Item = String>>(args: I) -> anyhow::Result<EtcdArgs> {
        let mut parsed = EtcdArgs::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
                anyhow::bail!("'{arg}' is not a valid flag");
            };
            let (name, inline) = match flag.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None => (flag, None),
            };
            match name {
                "h" | "help" => parsed.help = true,
                "version" => parsed.version = true,
                _ if ETCD_BOOLEAN_FLAGS.contains(&name) => parsed.ignored.push(name.to_owned()),
                "listen-client-urls" => {
                    let value = match inline {
                        Some(value) => value,
                        None => args
                            .next()
                            .with_context(|| format!("flag needs an argument: -{name}"))?,
                    };
                    parsed.listen_client_urls.extend(
                        value
                            .split(',')
                            .map(str::trim)
                            .filter(|url| !url.is_empty())
                            .map(str::to_owned),
                    );
                }
                _ if ETCD_IGNORED_FLAGS.contains(&name) => {
                    if inline.is_none() {
                        args.next()
                            .with_context(|| format!("flag needs an argument: -{name}"))?;
                    }
                    parsed.ignored.push(name.to_owned());
                }
                _ => anyhow::bail!(
                    "flag provided but not defined: -{name} (kubemock's etcd stand-in knows {})",
                    ETCD_IGNORED_FLAGS.join(", ")
                ),
            }
        }
        Ok(parsed)
    }
}

/// The `--help` text: envtest reads it for `--unsafe-no-fsync` (`CheckFlag`), and passes the
/// flag when it is listed, as etcd 3.5 lists it.
pub(crate) fn etcd_help() -> String {
    let mut text = String::from(
        "Usage:\n\n  etcd [flags]\n    kubemock's stand-in for etcd: answers /health and /version on\n    --listen-client-urls and stores nothing (kubemock's store is embedded).\n\nFlags:\n",
    );
    text.push_str("  --listen-client-urls 'http://localhost:2379'\n      List of URLs to listen on for client traffic.\n");
    for flag in ETCD_IGNORED_FLAGS {
        text.push_str(&format!("  --{flag}\n      Accepted and ignored.\n"));
    }
    text
}

/// The `--version` text, in etcd's shape.
pub(crate) fn etcd_version() -> String {
    format!(
        "etcd Version: {ETCD_VERSION}\nkubemock stand-in: {}\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The socket address of an `http://host:port` client URL (etcd's only scheme the stand-in
/// serves: envtest's URLs are plain HTTP on loopback).
pub(crate) fn client_url_addr(url: &str) -> anyhow::Result<SocketAddr> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("{url}: kubemock's etcd stand-in serves http:// URLs only"))?;
    let host_port = rest.split('/').next().unwrap_or(rest);
    let (host, port) = host_port
        .rsplit_once(':')
        .with_context(|| format!("{url}: no port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip = if host == "localhost" {
        std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
    } else {
        host.parse()
            .with_context(|| format!("{url}: {host:?} is not an IP address"))?
    };
    let port: u16 = port
        .parse()
        .with_context(|| format!("{url}: {port:?} is not a port"))?;
    Ok(SocketAddr::new(ip, port))
}

/// Serves the health check on every client URL until `stop`.
pub(crate) async fn run_etcd(args: EtcdArgs, stop: CancellationToken) -> anyhow::Result<()> {
    if !args.ignored.is_empty() {
        info!(flags = %args.ignored.join(","), "etcd stand-in: flags accepted and ignored");
    }
    let urls = if args.listen_client_urls.is_empty() {
        vec!["http://localhost:2379".to_owned()]
    } else {
        args.listen_client_urls
    };
    let mut servers = tokio::task::JoinSet::new();
    for url in &urls {
        let addr = client_url_addr(url)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        servers.spawn(serve_etcd_health(listener, stop.clone()));
    }
    info!(urls = %urls.join(","), "etcd stand-in serving");
    while servers.join_next().await.is_some() {}
    Ok(())
}

/// One listener: each connection gets one answer, then is closed.
async fn serve_etcd_health(listener: tokio::net::TcpListener, stop: CancellationToken) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((mut stream, _)) = accepted else {
            continue;
        };
        connections.spawn(async move {
            let mut request = Vec::with_capacity(1024);
            let mut buffer = [0_u8; 1024];
            while request.len() < ETCD_REQUEST_LIMIT
                && !request.windows(4).any(|w| w == b"\r\n\r\n")
            {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buffer[..n]),
                }
            }
            let response = etcd_response(&request);
            let _ = stream.write_all(response.as_bytes()).await;
        });
        while connections.try_join_next().is_some() {}
    }
    connections.shutdown().await;
}

/// The answer to one request: etcd 3.5's `/health` (`{"health":"true","reason":""}`),
/// `/livez` and `/readyz` (`ok`), `/version`; 404 for anything else.
pub(crate) fn etcd_response(request: &[u8]) -> String {
    let line = request
        .split(|b| *b == b'\n')
        .next()
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or(target);
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/health") => (
            "200 OK",
            "application/json",
            r#"{"health":"true","reason":""}"#.to_owned(),
        ),
        ("GET" | "HEAD", "/livez" | "/readyz") => ("200 OK", "text/plain", "ok".to_owned()),
        ("GET" | "HEAD", "/version") => (
            "200 OK",
            "application/json",
            format!(r#"{{"etcdserver":"{ETCD_VERSION}","etcdcluster":"3.5.0"}}"#),
        ),
        _ => (
            "404 Not Found",
            "text/plain",
            "404 page not found\n".to_owned(),
        ),
    };
    let body = if method == "HEAD" { "" } else { body.as_str() };
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\n{STAND_IN_HEADER}: true\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The header the stand-in answers with, so that `kubemock serve --etcd-servers` pointed at it
/// (envtest starts both as the same binary) keeps the embedded store instead of failing to
/// speak gRPC to it (`is_stand_in`).
pub(crate) const STAND_IN_HEADER: &str = "x-kubemock-etcd-stand-in";
/// How long `serve` waits for an etcd URL's `/version` when checking for the stand-in.
const STAND_IN_PROBE: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether the `http://` etcd client URL is served by kubemock's etcd stand-in: its
/// `/version` carries [`STAND_IN_HEADER`]. A real etcd answers `/version` on its client port
/// too, without it; anything that does not answer is not the stand-in.
pub(crate) async fn is_stand_in(url: &str) -> bool {
    let Ok(addr) = client_url_addr(url) else {
        return false;
    };
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        stream
            .write_all(b"GET /version HTTP/1.1\r\nhost: etcd\r\nconnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut answer = Vec::new();
        stream
            .take(ETCD_REQUEST_LIMIT as u64)
            .read_to_end(&mut answer)
            .await
            .ok()?;
        let text = String::from_utf8_lossy(&answer).to_ascii_lowercase();
        let head = text.split("\r\n\r\n").next().unwrap_or("");
        Some(head.lines().any(|line| line.starts_with(STAND_IN_HEADER)))
    };
    matches!(
        tokio::time::timeout(STAND_IN_PROBE, probe).await,
        Ok(Some(true))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn personality_is_read_from_the_program_name() {
        let of = |s: &str| personality(Some(OsStr::new(s)));
        assert_eq!(
            of("/tmp/assets/kube-apiserver"),
            Some(Personality::KubeApiserver)
        );
        assert_eq!(of("kube-apiserver"), Some(Personality::KubeApiserver));
        assert_eq!(of("/tmp/assets/etcd"), Some(Personality::Etcd));
        assert_eq!(of("/usr/bin/kubemock"), None);
        assert_eq!(of("/tmp/etcd/kubemock"), None);
        assert_eq!(personality(None), None);
    }

    #[test]
    fn the_drop_in_runs_no_controllers_unless_asked() {
        assert_eq!(drop_in_controllers(false, None, None), None);
        assert_eq!(drop_in_controllers(false, None, Some("  ")), None);
        assert_eq!(
            drop_in_controllers(false, None, Some("garbagecollector,namespace")),
            Some("garbagecollector,namespace".to_owned())
        );
        assert_eq!(
            drop_in_controllers(false, Some("*"), Some("namespace")),
            Some("*".to_owned())
        );
        assert_eq!(drop_in_controllers(true, Some("*"), Some("*")), None);
    }

    /// envtest's etcd command line (`controlplane/etcd.go`, `defaultArgs`, rendered by
    /// `process.SliceToArguments` as `--name=value`).
    #[test]
    fn envtest_etcd_command_line_parses() {
        let args = EtcdArgs::parse(
            [
                "--advertise-client-urls=http://127.0.0.1:41001",
                "--data-dir=/tmp/k8s_test_framework_1",
                "--listen-client-urls=http://127.0.0.1:41001",
                "--listen-peer-urls=http://127.0.0.1:41002",
                "--unsafe-no-fsync=true",
            ]
            .map(str::to_owned),
        )
        .unwrap();
        assert_eq!(args.listen_client_urls, ["http://127.0.0.1:41001"]);
        assert!(!args.help);
        assert_eq!(args.ignored.len(), 4);
        let spaced = EtcdArgs::parse(
            [
                "-listen-client-urls",
                "http://localhost:2379,http://[::1]:2380",
                "--unsafe-no-fsync",
            ]
            .map(str::to_owned),
        )
        .unwrap();
        assert_eq!(spaced.listen_client_urls.len(), 2);
        assert!(EtcdArgs::parse(["--no-such-flag=1".to_owned()]).is_err());
        assert!(EtcdArgs::parse(["--data-dir".to_owned()]).is_err());
        assert!(EtcdArgs::parse(["--help".to_owned()]).unwrap().help);
    }

    /// envtest's `CheckFlag` matches `(?m)^\s*--unsafe-no-fsync\b` in the help text.
    #[test]
    fn help_lists_unsafe_no_fsync_at_a_line_start() {
        assert!(
            etcd_help()
                .lines()
                .any(|line| line.trim_start().starts_with("--unsafe-no-fsync"))
        );
    }

    #[test]
    fn client_urls_resolve_to_socket_addresses() {
        assert_eq!(
            client_url_addr("http://127.0.0.1:41001").unwrap(),
            "127.0.0.1:41001".parse().unwrap()
        );
        assert_eq!(
            client_url_addr("http://localhost:2379/").unwrap(),
            "127.0.0.1:2379".parse().unwrap()
        );
        assert_eq!(
            client_url_addr("http://[::1]:2379").unwrap(),
            "[::1]:2379".parse().unwrap()
        );
        assert!(client_url_addr("https://127.0.0.1:2379").is_err());
        assert!(client_url_addr("http://127.0.0.1").is_err());
        assert!(client_url_addr("http://etcd.example:2379").is_err());
    }

    /// etcd 3.5's `/health` answer (`server/etcdserver/api/etcdhttp/health.go`: `Health` is
    /// `{"health":"true","reason":""}` when healthy), which envtest's poll waits a 200 of.
    #[test]
    fn health_is_answered_as_etcd_answers_it() {
        let response = etcd_response(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(response.ends_with(r#"{"health":"true","reason":""}"#));
        let serializable = etcd_response(b"GET /health?serializable=true HTTP/1.1\r\n\r\n");
        assert!(serializable.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(etcd_response(b"GET /v3/kv/range HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(etcd_response(b"").starts_with("HTTP/1.1 404"));
        let head = etcd_response(b"HEAD /health HTTP/1.1\r\n\r\n");
        assert!(head.ends_with("\r\n\r\n"));
    }

    #[test]
    fn assets_link_to_kubemock_and_kubectl_and_are_replaced_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join("bin");
        let fake_kubectl = dir.path().join("kubectl-real");
        std::fs::write(&fake_kubectl, "").unwrap();
        let written = write_assets(
            &assets,
            Path::new("/opt/kubemock"),
            Some(fake_kubectl.clone()),
        )
        .unwrap();
        assert!(written.dir.is_absolute());
        for (name, target) in [
            (KUBE_APISERVER, PathBuf::from("/opt/kubemock")),
            (ETCD, PathBuf::from("/opt/kubemock")),
            (KUBECTL, fake_kubectl.clone()),
        ] {
            assert_eq!(std::fs::read_link(assets.join(name)).unwrap(), target);
        }
        write_assets(&assets, Path::new("/opt/kubemock2"), Some(fake_kubectl)).unwrap();
        assert_eq!(
            std::fs::read_link(assets.join(ETCD)).unwrap(),
            PathBuf::from("/opt/kubemock2")
        );
    }
}
