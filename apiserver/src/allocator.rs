//! Service cluster IPs and node ports: who holds which, kept in the store so that every server
//! over one store (several `kubemock serve` over one etcd, `docs/etcd.md`) hands out each
//! address and port once. As upstream's allocators do
//! (`pkg/registry/core/service/allocator/storage/storage.go`, under `ipallocator` and
//! `portallocator`), each range is one stored record, changed only by a write guarded by the
//! record's revision: a server that lost the race reads the record again and retries. Keys:
//! `/registry/ranges/serviceips` and `/registry/ranges/servicenodeports`; the value is JSON,
//! `{"range": "10.96.0.0/12", "allocated": [1, 257, ...]}` (offsets from the network address
//! for IPs, port numbers for ports; a sorted list instead of upstream's bitmap, so that a
//! record's size follows the Services, not the range).
//!
//! Invariant: an address or port is in the record iff a stored Service holds it or a write
//! that took it is in flight (or its server died in between: such a leak stays until a repair
//! that may rebuild exactly, see [`ServiceAllocator::load`]). A create that fails gives back
//! what it took when its [`Reservation`] is dropped; a deleted Service gives back what it
//! held ([`ServiceAllocator::release`]).
//!
//! Repair (upstream's `ipallocator/controller/repair.go` and `portallocator/controller/
//! repair.go`), when a server first needs the allocator and whenever a record is missing:
//! what the stored Services hold is added to the record, so a store whose Services predate
//! the records (or whose records a reset removed) gets them rebuilt. On the embedded store
//! (one process: `Kv::sole_writer`) the record is rebuilt exactly from the Services, freeing
//! leaks; over etcd only additions are made, since another server's allocation in flight
//! looks like a leak.
//!
//! Within one process, writes to one record are serialised by an async mutex held across the
//! store write (as upstream's storage.go holds its lock across its etcd update): a Service
//! write is not a hot path, and it saves the process from conflicting with itself. The last
//! record read or written is cached, so the single-server path costs one guarded write per
//! change and no read.

use std::collections::BTreeSet;
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use kubemock_storage::{CreateOutcome, Guard, KeyValue, Kv, RangeRequest, Revision, UpdateOutcome};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::{debug, info, warn};

use crate::status::{ApiError, ApiResult};

/// Services read per page while repairing.
const LOAD_PAGE: usize = 500;

/// The storage key prefix of every Service (`keys::resource_prefix` of core/v1 services).
const SERVICES_PREFIX: &str = "/registry/core/services/";

/// The record of the cluster IP range.
const IPS_KEY: &str = "/registry/ranges/serviceips";
/// The record of the node port range.
const PORTS_KEY: &str = "/registry/ranges/servicenodeports";

/// Guarded writes of one change (or one repair) before it gives up with a 503: each failed
/// attempt means another server's write to the record succeeded.
const MAX_ATTEMPTS: usize = 64;

/// The default `--service-cluster-ip-range`, as kubeadm and kind configure it.
pub const DEFAULT_SERVICE_CLUSTER_IP_RANGE: &str = "10.96.0.0/12";
/// The default `--service-node-port-range`.
pub const DEFAULT_SERVICE_NODE_PORT_RANGE: &str = "30000-32767";

/// An IPv4 range of service cluster IPs (`--service-cluster-ip-range`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceCidr {
    /// The network address.
    network: u32,
    /// The prefix length.
    prefix: u8,
}

impl ServiceCidr {
    /// Addresses in the range, network and broadcast included.
    fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }

    /// The first address services can get: the `kubernetes` Service's.
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network.wrapping_add(1))
    }

    /// Offsets (from the network address) services can get: all but the network and the
    /// broadcast address.
    fn usable(&self) -> (u64, u64) {
        (1, self.size().saturating_sub(1).max(1))
    }

    /// The offset of `ip` in the range, if it is a usable address of it.
    fn offset(&self, ip: Ipv4Addr) -> Option<u64> {
        let offset = u64::from(u32::from(ip).wrapping_sub(self.network));
        let (low, high) = self.usable();
        (u32::from(ip) & self.mask() == self.network && offset >= low && offset < high)
            .then_some(offset)
    }

    fn mask(&self) -> u32 {
        if self.prefix == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(self.prefix))
        }
    }

    fn address(&self, offset: u64) -> Ipv4Addr {
        Ipv4Addr::from(self.network.wrapping_add(offset as u32))
    }
}

impl Default for ServiceCidr {
    fn default() -> Self {
        ServiceCidr {
            network: u32::from(Ipv4Addr::new(10, 96, 0, 0)),
            prefix: 12,
        }
    }
}

impl fmt::Display for ServiceCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }
}

impl FromStr for ServiceCidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (ip, prefix) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not a CIDR like 10.96.0.0/12"))?;
        let ip: Ipv4Addr = ip
            .parse()
            .map_err(|_| format!("{text:?}: only IPv4 service ranges are supported"))?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| (8..=30).contains(p))
            .ok_or_else(|| format!("{text:?}: the prefix length must be between 8 and 30"))?;
        let cidr = ServiceCidr { network: 0, prefix };
        Ok(ServiceCidr {
            network: u32::from(ip) & cidr.mask(),
            prefix,
        })
    }
}

/// The range of node ports (`--service-node-port-range`), both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodePortRange {
    /// The lowest port.
    pub first: u16,
    /// The highest port.
    pub last: u16,
}

impl Default for NodePortRange {
    fn default() -> Self {
        NodePortRange {
            first: 30000,
            last: 32767,
        }
    }
}

impl fmt::Display for NodePortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

impl FromStr for NodePortRange {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{text:?} is not a port range like 30000-32767");
        let (first, last) = text.split_once('-').ok_or_else(bad)?;
        let first: u16 = first.trim().parse().map_err(|_| bad())?;
        let last: u16 = last.trim().parse().map_err(|_| bad())?;
        if first == 0 || last < first {
            return Err(bad());
        }
        Ok(NodePortRange { first, last })
    }
}

/// Why an address or port could not be had, in the allocators' own words (the real
/// `ipallocator` and `portallocator` errors), or the store's failure.
#[derive(Debug)]
pub(crate) enum AllocError {
    /// Someone holds it.
    Allocated,
    /// Outside the range.
    NotInRange,
    /// Nothing left.
    Full,
    /// The record could not be read or written.
    Store(ApiError),
}

impl From<ApiError> for AllocError {
    fn from(error: ApiError) -> Self {
        AllocError::Store(error)
    }
}

/// The addresses and ports one write holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Held {
    /// Cluster IPs.
    pub(crate) ips: Vec<Ipv4Addr>,
    /// Node ports (health check node ports included).
    pub(crate) ports: Vec<u16>,
}

impl Held {
    /// What a stored Service holds.
    pub(crate) fn of_service(service: &Value) -> Held {
        let spec = service.get("spec");
        let text = |v: &Value| v.as_str().and_then(|s| s.parse::<Ipv4Addr>().ok());
        let mut ips: Vec<Ipv4Addr> = spec
            .and_then(|s| s.get("clusterIPs"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(text).collect())
            .unwrap_or_default();
        if ips.is_empty()
            && let Some(ip) = spec.and_then(|s| s.get("clusterIP")).and_then(text)
        {
            ips.push(ip);
        }
        let port = |v: Option<&Value>| {
            v.and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
        };
        let mut ports: Vec<u16> = spec
            .and_then(|s| s.get("ports"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|p| port(p.get("nodePort"))).collect())
            .unwrap_or_default();
        if let Some(p) = port(spec.and_then(|s| s.get("healthCheckNodePort"))) {
            ports.push(p);
        }
        ports.sort_unstable();
        ports.dedup();
        Held { ips, ports }
    }
}

/// Which range a record is of, and how a Service's holdings map to its items.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Cluster IPs; items are offsets from the network address.
    Ips(ServiceCidr),
    /// Node ports; items are the port numbers.
    Ports(NodePortRange),
}

impl Kind {
    /// The items of this range that `held` holds (outside it: allocated under another
    /// configuration, ignored).
    fn items(&self, held: &Held) -> Vec<u64> {
        match self {
            Kind::Ips(cidr) => held.ips.iter().filter_map(|ip| cidr.offset(*ip)).collect(),
            Kind::Ports(range) => held
                .ports
                .iter()
                .filter(|p| (range.first..=range.last).contains(*p))
                .map(|p| u64::from(*p))
                .collect(),
        }
    }

    fn text(&self) -> String {
        match self {
            Kind::Ips(cidr) => cidr.to_string(),
            Kind::Ports(range) => range.to_string(),
        }
    }
}

/// A record as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// The range it is of (`--service-cluster-ip-range`, `--service-node-port-range`).
    range: String,
    /// The taken items, ascending.
    allocated: Vec<u64>,
}

/// A record as this process last read or wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Snapshot {
    /// The record's mod revision; `None`: not known to exist (repaired before use).
    revision: Option<Revision>,
    /// The taken items.
    taken: BTreeSet<u64>,
}

/// One range's record and this process's view of it.
#[derive(Debug)]
struct Range {
    key: &'static str,
    kind: Kind,
    /// `kind`'s range as text, stored in the record: servers over one store must agree.
    text: String,
    /// The record as last read or written. Held across the store write: this process's
    /// changes to the record are serialised.
    last: tokio::sync::Mutex<Snapshot>,
    /// Items given back by dropped reservations (and releases the store refused), removed by
    /// the next write. A leaf lock, never held across an `.await`.
    to_free: parking_lot::Mutex<Vec<u64>>,
}

/// What a guarded write of a record came to.
enum Written {
    /// Stored at this revision.
    Stored(Revision),
    /// Someone else changed it first; its current state.
    Conflict(KeyValue),
    /// It does not exist (any more).
    Missing,
}

impl Range {
    fn new(key: &'static str, kind: Kind) -> Self {
        Range {
            key,
            kind,
            text: kind.text(),
            last: tokio::sync::Mutex::new(Snapshot::default()),
            to_free: parking_lot::Mutex::new(Vec::new()),
        }
    }

    fn encode(&self, taken: &BTreeSet<u64>) -> ApiResult<Bytes> {
        let record = Record {
            range: self.text.clone(),
            allocated: taken.iter().copied().collect(),
        };
        serde_json::to_vec(&record)
            .map(Bytes::from)
            .map_err(ApiError::internal)
    }

    /// The items of a stored record; an error when it is not readable or of another range.
    fn decode(&self, kv: &KeyValue) -> ApiResult<BTreeSet<u64>> {
        let record: Record = serde_json::from_slice(&kv.value).map_err(|err| {
            ApiError::internal(format!(
                "the allocation record {} is unreadable: {err}",
                self.key
            ))
        })?;
        if record.range != self.text {
            return Err(ApiError::internal(format!(
                "the allocation record {} is of the range {}, not this server's {}: servers \
                 over one store must be started with the same ranges",
                self.key, record.range, self.text
            )));
        }
        Ok(record.allocated.into_iter().collect())
    }

    /// Writes `taken` over the record at `revision` (`None`: creates it).
    async fn write(
        &self,
        store: &dyn Kv,
        revision: Option<Revision>,
        taken: &BTreeSet<u64>,
    ) -> ApiResult<Written> {
        let value = self.encode(taken)?;
        let key = Bytes::from_static(self.key.as_bytes());
        Ok(match revision {
            None => match store
                .create(key, value)
                .await
                .map_err(ApiError::from_storage)?
            {
                CreateOutcome::Created(kv) => Written::Stored(kv.mod_revision),
                CreateOutcome::AlreadyExists(kv) => Written::Conflict(kv),
            },
            Some(revision) => match store
                .update(key, value, Guard::ModRevision(revision))
                .await
                .map_err(ApiError::from_storage)?
            {
                UpdateOutcome::Updated { kv, .. } => Written::Stored(kv.mod_revision),
                UpdateOutcome::Conflict(kv) => Written::Conflict(kv),
                UpdateOutcome::NotFound => Written::Missing,
            },
        })
    }

    /// The record as stored now (`revision: None` when there is none).
    async fn read(&self, store: &dyn Kv) -> ApiResult<Snapshot> {
        let got = store
            .get(self.key.as_bytes(), None)
            .await
            .map_err(ApiError::from_storage)?;
        match got.kv {
            Some(kv) => Ok(Snapshot {
                revision: Some(kv.mod_revision),
                taken: self.decode(&kv)?,
            }),
            None => Ok(Snapshot::default()),
        }
    }

    /// Repair: the record with what the stored Services hold added (with `exact`, exactly
    /// that), created if missing. An unreadable record, or one of another range, is rebuilt
    /// from the Services (the range changed: upstream's repair does the same).
    async fn repair(&self, store: &dyn Kv, exact: bool) -> ApiResult<Snapshot> {
        for _ in 0..MAX_ATTEMPTS {
            // The record first, then the Services: a Service deleted in between gave back its
            // items in a later write of the record, which makes this one conflict.
            let current = store
                .get(self.key.as_bytes(), None)
                .await
                .map_err(ApiError::from_storage)?
                .kv;
            let mut from_services = BTreeSet::new();
            for held in services_hold(store).await? {
                from_services.extend(self.kind.items(&held));
            }
            let (revision, stored) = match &current {
                None => (None, None),
                Some(kv) => match self.decode(kv) {
                    Ok(taken) => (Some(kv.mod_revision), Some(taken)),
                    Err(err) => {
                        warn!(key = self.key, error = %err.message, "rebuilding the allocation record from the Services");
                        (Some(kv.mod_revision), None)
                    }
                },
            };
            let next = match &stored {
                Some(taken) if !exact => taken.union(&from_services).copied().collect(),
                _ => from_services,
            };
            if let (Some(revision), Some(taken)) = (revision, &stored)
                && *taken == next
            {
                return Ok(Snapshot {
                    revision: Some(revision),
                    taken: next,
                });
            }
            if let Written::Stored(revision) = self.write(store, revision, &next).await? {
                info!(
                    key = self.key,
                    taken = next.len(),
                    was = stored.as_ref().map(BTreeSet::len),
                    "repaired the allocation record from the stored Services"
                );
                return Ok(Snapshot {
                    revision: Some(revision),
                    taken: next,
                });
            }
        }
        Err(too_contended(self.key))
    }

    /// Applies `change` to the record (after removing the items given back meanwhile) and,
    /// with `write`, stores the result. On a conflicting write it starts again from the
    /// record as it is now; a refusal on a cached record is checked on the current one.
    async fn change<T>(
        &self,
        store: &dyn Kv,
        write: bool,
        mut change: impl FnMut(&mut BTreeSet<u64>) -> Result<T, AllocError>,
    ) -> Result<T, AllocError> {
        let mut last = self.last.lock().await;
        let freeing = if write {
            std::mem::take(&mut *self.to_free.lock())
        } else {
            Vec::new()
        };
        let result = self
            .change_locked(store, &mut last, write, &freeing, &mut change)
            .await;
        if matches!(result, Err(AllocError::Store(_))) && !freeing.is_empty() {
            // Not written: given back with the next write.
            self.to_free.lock().extend(freeing);
        }
        result
    }

    async fn change_locked<T>(
        &self,
        store: &dyn Kv,
        last: &mut Snapshot,
        write: bool,
        freeing: &[u64],
        change: &mut impl FnMut(&mut BTreeSet<u64>) -> Result<T, AllocError>,
    ) -> Result<T, AllocError> {
        let without_freed = |taken: &BTreeSet<u64>| {
            let mut next = taken.clone();
            for item in freeing {
                next.remove(item);
            }
            next
        };
        let mut fresh = false;
        for _ in 0..MAX_ATTEMPTS {
            if last.revision.is_none() {
                *last = self.repair(store, false).await?;
                fresh = true;
            }
            let mut next = without_freed(&last.taken);
            let outcome = change(&mut next);
            if outcome.is_err() {
                if !fresh {
                    // Cached: another server may have given it back since.
                    *last = self.read(store).await?;
                    fresh = true;
                    continue;
                }
                // Refused on the current record: still write what is given back.
                next = without_freed(&last.taken);
            }
            if !write || next == last.taken {
                return outcome;
            }
            match self.write(store, last.revision, &next).await? {
                Written::Stored(revision) => {
                    *last = Snapshot {
                        revision: Some(revision),
                        taken: next,
                    };
                    return outcome;
                }
                Written::Conflict(current) => {
                    debug!(
                        key = self.key,
                        "allocation record changed by another writer; retrying"
                    );
                    *last = Snapshot {
                        revision: Some(current.mod_revision),
                        taken: self.decode(&current)?,
                    };
                    fresh = true;
                }
                // Removed (a reset): repaired on the next round.
                Written::Missing => *last = Snapshot::default(),
            }
        }
        Err(AllocError::Store(too_contended(self.key)))
    }

    /// Writes what dropped reservations gave back, if anything.
    async fn flush(&self, store: &dyn Kv) {
        let pending = !self.to_free.lock().is_empty();
        if pending && let Err(err) = self.change(store, true, |_| Ok(())).await {
            warn!(key = self.key, error = ?err, "giving back addresses failed; retried with the next write");
        }
    }
}

/// 503 after [`MAX_ATTEMPTS`] conflicting writes in a row.
fn too_contended(key: &str) -> ApiError {
    ApiError::unavailable(format!(
        "the allocation record {key} kept changing under this write; try again"
    ))
}

/// What every stored Service holds, read at one revision.
async fn services_hold(store: &dyn Kv) -> ApiResult<Vec<Held>> {
    let mut held = Vec::new();
    let mut request = RangeRequest::prefix(SERVICES_PREFIX).limit(LOAD_PAGE);
    loop {
        let page = store
            .range(request.clone())
            .await
            .map_err(ApiError::from_storage)?;
        for kv in &page.items {
            // A stored object that is not JSON holds nothing we could know of.
            if let Ok(service) = serde_json::from_slice::<Value>(&kv.value) {
                held.push(Held::of_service(&service));
            }
        }
        let Some(last) = page.items.last().filter(|_| page.more()) else {
            return Ok(held);
        };
        request = request
            .start_after(last.key.clone())
            .at_revision(page.revision);
    }
}

/// The cluster IP and node port records, as one server uses them.
pub(crate) struct ServiceAllocator {
    cidr: ServiceCidr,
    node_ports: NodePortRange,
    store: Arc<dyn Kv>,
    ips: Range,
    ports: Range,
}

impl fmt::Debug for ServiceAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceAllocator")
            .field("cidr", &self.cidr)
            .field("node_ports", &self.node_ports)
            .finish_non_exhaustive()
    }
}

impl ServiceAllocator {
    fn new(store: Arc<dyn Kv>, cidr: ServiceCidr, node_ports: NodePortRange) -> Self {
        ServiceAllocator {
            cidr,
            node_ports,
            store,
            ips: Range::new(IPS_KEY, Kind::Ips(cidr)),
            ports: Range::new(PORTS_KEY, Kind::Ports(node_ports)),
        }
    }

    /// The allocator over `cidr` and `node_ports`, its records repaired from the stored
    /// Services: rebuilt exactly when this process is the store's only writer, else with
    /// what the Services hold added.
    pub(crate) async fn load(
        store: &Arc<dyn Kv>,
        cidr: ServiceCidr,
        node_ports: NodePortRange,
    ) -> ApiResult<ServiceAllocator> {
        let allocator = ServiceAllocator::new(Arc::clone(store), cidr, node_ports);
        let exact = store.sole_writer();
        for range in [&allocator.ips, &allocator.ports] {
            let repaired = range.repair(store.as_ref(), exact).await?;
            *range.last.lock().await = repaired;
        }
        Ok(allocator)
    }

    /// An allocator over an empty store of its own (unit tests).
    #[cfg(test)]
    pub(crate) fn for_tests(cidr: ServiceCidr, node_ports: NodePortRange) -> Self {
        let store = kubemock_storage::SledStore::open(kubemock_storage::Config::ephemeral())
            .expect("an in-memory store");
        ServiceAllocator::new(Arc::new(store), cidr, node_ports)
    }

    /// The cluster IP range.
    pub(crate) fn cidr(&self) -> ServiceCidr {
        self.cidr
    }

    /// The node port range.
    pub(crate) fn node_ports(&self) -> NodePortRange {
        self.node_ports
    }

    /// Gives back `held` (a deleted Service's, or what a stored update no longer holds). When
    /// the store refuses, it is given back with the next write.
    pub(crate) async fn release(&self, held: &Held) {
        for range in [&self.ips, &self.ports] {
            let items = range.kind.items(held);
            if items.is_empty() {
                continue;
            }
            range.to_free.lock().extend(items);
            range.flush(self.store.as_ref()).await;
        }
    }

    /// Gives back `held` without waiting: queued for the next write of this process, and
    /// written by a task of its own now (a dropped [`Reservation`]).
    fn release_later(self: Arc<Self>, held: &Held) {
        let mut queued = false;
        for range in [&self.ips, &self.ports] {
            let items = range.kind.items(held);
            queued |= !items.is_empty();
            range.to_free.lock().extend(items);
        }
        if !queued {
            return;
        }
        // Outside a runtime (never in the server), the next write takes them.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                for range in [&self.ips, &self.ports] {
                    range.flush(self.store.as_ref()).await;
                }
            });
        }
    }

    /// Takes `ip` (with `dry_run`, only checks that it could be taken).
    pub(crate) async fn allocate_ip(&self, ip: Ipv4Addr, dry_run: bool) -> Result<(), AllocError> {
        let offset = self.cidr.offset(ip).ok_or(AllocError::NotInRange)?;
        self.ips
            .change(self.store.as_ref(), !dry_run, |taken| {
                if taken.insert(offset) {
                    Ok(())
                } else {
                    Err(AllocError::Allocated)
                }
            })
            .await
    }

    /// Takes a free address: a random one above the static band that users pick their
    /// addresses from (as the real allocator does since ServiceIPStaticSubrange), else one in
    /// it.
    pub(crate) async fn allocate_next_ip(&self, dry_run: bool) -> Result<Ipv4Addr, AllocError> {
        let (low, high) = self.cidr.usable();
        // Upstream: min(max(16, size/16), 256) addresses at the start of the range.
        let band = (self.cidr.size() / 16).clamp(16, 256);
        let offset = self
            .ips
            .change(self.store.as_ref(), !dry_run, |taken| {
                let offset =
                    pick_free(low, high, band, |o| taken.contains(&o)).ok_or(AllocError::Full)?;
                taken.insert(offset);
                Ok(offset)
            })
            .await?;
        Ok(self.cidr.address(offset))
    }

    /// Takes `port` (with `dry_run`, only checks that it could be taken).
    pub(crate) async fn allocate_port(&self, port: u16, dry_run: bool) -> Result<(), AllocError> {
        if !(self.node_ports.first..=self.node_ports.last).contains(&port) {
            return Err(AllocError::NotInRange);
        }
        self.ports
            .change(self.store.as_ref(), !dry_run, |taken| {
                if taken.insert(u64::from(port)) {
                    Ok(())
                } else {
                    Err(AllocError::Allocated)
                }
            })
            .await
    }

    /// Takes a free node port, above the static band first (upstream: min(max(16,
    /// size/32), 128) ports).
    pub(crate) async fn allocate_next_port(&self, dry_run: bool) -> Result<u16, AllocError> {
        let first = u64::from(self.node_ports.first);
        let size = u64::from(self.node_ports.last) - first + 1;
        let band = (size / 32).clamp(16, 128);
        let port = self
            .ports
            .change(self.store.as_ref(), !dry_run, |taken| {
                let offset = pick_free(0, size, band, |o| taken.contains(&(first + o)))
                    .ok_or(AllocError::Full)?;
                taken.insert(first + offset);
                Ok(first + offset)
            })
            .await?;
        // In the range, which is of u16s.
        u16::try_from(port).map_err(|_| AllocError::NotInRange)
    }
}

/// A free offset in `low..high`: from a random start above `low + band` (wrapping within the
/// upper part), then in the band; `None` when all are taken.
fn pick_free(low: u64, high: u64, band: u64, taken: impl Fn(u64) -> bool) -> Option<u64> {
    if high <= low {
        return None;
    }
    let split = (low + band).min(high);
    let upper = high - split;
    if upper > 0 {
        let start = fastrand::u64(0..upper);
        if let Some(found) = (0..upper)
            .map(|i| split + (start + i) % upper)
            .find(|o| !taken(*o))
        {
            return Some(found);
        }
    }
    (low..split).find(|o| !taken(*o))
}

/// What one write took and, once it is stored, gives back. Dropping it uncommitted (the write
/// failed, or was a dry run) gives back what it took.
#[derive(Debug, Default)]
pub(crate) struct Reservation {
    allocator: Option<Arc<ServiceAllocator>>,
    /// Taken for the write; given back unless committed.
    taken: Held,
    /// Held by the object before the write and no longer after it; given back on commit.
    freed: Held,
}

impl Reservation {
    /// A reservation of `taken`, giving back `freed` when committed.
    pub(crate) fn new(allocator: Arc<ServiceAllocator>, taken: Held, freed: Held) -> Self {
        Reservation {
            allocator: Some(allocator),
            taken,
            freed,
        }
    }

    /// The write is stored: keep what was taken, give back what it freed.
    pub(crate) async fn commit(mut self) {
        if let Some(allocator) = self.allocator.take() {
            allocator.release(&self.freed).await;
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(allocator) = self.allocator.take() {
            allocator.release_later(&self.taken);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn allocator(cidr: &str, ports: &str) -> Arc<ServiceAllocator> {
        Arc::new(ServiceAllocator::for_tests(
            cidr.parse().expect("a valid range"),
            ports.parse().expect("a valid port range"),
        ))
    }

    fn held_ip(ip: Ipv4Addr) -> Held {
        Held {
            ips: vec![ip],
            ports: vec![],
        }
    }

    #[test]
    fn ranges_parse_and_print() {
        let cidr: ServiceCidr = "10.96.0.0/12".parse().expect("a valid range");
        assert_eq!(cidr, ServiceCidr::default());
        assert_eq!(cidr.first(), Ipv4Addr::new(10, 96, 0, 1));
        assert_eq!(cidr.to_string(), "10.96.0.0/12");
        let sloppy: ServiceCidr = "10.100.7.9/16".parse().expect("a valid range");
        assert_eq!(sloppy.to_string(), "10.100.0.0/16");
        assert!("fd00::/108".parse::<ServiceCidr>().is_err());
        assert!("10.0.0.0".parse::<ServiceCidr>().is_err());
        assert!("10.0.0.0/31".parse::<ServiceCidr>().is_err());
        let ports: NodePortRange = "30000-32767".parse().expect("a valid range");
        assert_eq!(ports, NodePortRange::default());
        assert!("32767-30000".parse::<NodePortRange>().is_err());
    }

    #[tokio::test]
    async fn addresses_are_in_the_range_and_never_handed_out_twice() {
        let a = allocator("10.0.0.0/28", "30000-30015");
        // 16 addresses, minus network and broadcast.
        let mut got = HashSet::new();
        for _ in 0..14 {
            let ip = a.allocate_next_ip(false).await.expect("a free address");
            assert!(a.cidr.offset(ip).is_some(), "{ip}");
            assert!(got.insert(ip), "{ip} twice");
        }
        assert!(matches!(
            a.allocate_next_ip(false).await,
            Err(AllocError::Full)
        ));
        assert!(!got.contains(&Ipv4Addr::new(10, 0, 0, 0)));
        assert!(!got.contains(&Ipv4Addr::new(10, 0, 0, 15)));
        a.release(&held_ip(Ipv4Addr::new(10, 0, 0, 7))).await;
        assert_eq!(
            a.allocate_next_ip(false).await.expect("the freed one"),
            Ipv4Addr::new(10, 0, 0, 7)
        );
    }

    #[tokio::test]
    async fn requested_addresses_are_checked_for_range_and_conflicts() {
        let a = allocator("10.96.0.0/12", "30000-32767");
        let ip = Ipv4Addr::new(10, 96, 0, 10);
        assert!(a.allocate_ip(ip, true).await.is_ok());
        assert!(a.allocate_ip(ip, false).await.is_ok());
        assert!(matches!(
            a.allocate_ip(ip, false).await,
            Err(AllocError::Allocated)
        ));
        assert!(matches!(
            a.allocate_ip(Ipv4Addr::new(10, 0, 0, 1), false).await,
            Err(AllocError::NotInRange)
        ));
        assert!(matches!(
            a.allocate_ip(Ipv4Addr::new(10, 96, 0, 0), false).await,
            Err(AllocError::NotInRange)
        ));
        // Dynamic addresses stay out of the static band (the first 256) while there is room.
        let next = a.allocate_next_ip(false).await.expect("a free address");
        assert!(
            a.cidr.offset(next).expect("inside the range") >= 257,
            "{next}"
        );
    }

    #[tokio::test]
    async fn node_ports_are_unique_and_in_range() {
        let a = allocator("10.96.0.0/12", "30000-30031");
        let mut got = HashSet::new();
        for _ in 0..32 {
            let port = a.allocate_next_port(false).await.expect("a free port");
            assert!((30000..=30031).contains(&port));
            assert!(got.insert(port));
        }
        assert!(matches!(
            a.allocate_next_port(false).await,
            Err(AllocError::Full)
        ));
        assert!(matches!(
            a.allocate_port(30005, false).await,
            Err(AllocError::Allocated)
        ));
        assert!(matches!(
            a.allocate_port(80, false).await,
            Err(AllocError::NotInRange)
        ));
    }

    #[tokio::test]
    async fn a_dropped_reservation_gives_back_what_it_took_and_a_committed_one_what_it_freed() {
        let a = allocator("10.96.0.0/12", "30000-32767");
        let ip = Ipv4Addr::new(10, 96, 0, 20);
        a.allocate_ip(ip, false).await.expect("free");
        drop(Reservation::new(a.clone(), held_ip(ip), Held::default()));
        assert!(a.allocate_ip(ip, false).await.is_ok());
        Reservation::new(a.clone(), Held::default(), held_ip(ip))
            .commit()
            .await;
        assert!(a.allocate_ip(ip, false).await.is_ok());
    }

    #[test]
    fn services_hold_their_cluster_ips_and_node_ports() {
        let service = serde_json::json!({"spec": {
            "clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"],
            "ports": [{"port": 80, "nodePort": 30080}, {"port": 81, "nodePort": 30080}],
            "healthCheckNodePort": 31000,
        }});
        let held = Held::of_service(&service);
        assert_eq!(held.ips, [Ipv4Addr::new(10, 96, 0, 5)]);
        assert_eq!(held.ports, [30080, 31000]);
        let headless = serde_json::json!({"spec": {"clusterIP": "None", "clusterIPs": ["None"]}});
        assert_eq!(Held::of_service(&headless), Held::default());
    }

    /// Two allocators over one store (two servers over one etcd) never hand out one address
    /// twice, whichever order their writes interleave in, and each sees what the other freed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn allocators_over_one_store_share_the_records() {
        let store: Arc<dyn Kv> = Arc::new(
            kubemock_storage::SledStore::open(kubemock_storage::Config::ephemeral())
                .expect("an in-memory store"),
        );
        let cidr: ServiceCidr = "10.0.0.0/26".parse().expect("a valid range");
        let ports: NodePortRange = "30000-30061".parse().expect("a valid range");
        let one = Arc::new(ServiceAllocator::new(Arc::clone(&store), cidr, ports));
        let two = Arc::new(ServiceAllocator::new(Arc::clone(&store), cidr, ports));
        let mut tasks = Vec::new();
        for allocator in [&one, &two] {
            for _ in 0..31 {
                let allocator = Arc::clone(allocator);
                tasks.push(tokio::spawn(async move {
                    let ip = allocator.allocate_next_ip(false).await.expect("an address");
                    let port = allocator.allocate_next_port(false).await.expect("a port");
                    (ip, port)
                }));
            }
        }
        let mut ips = HashSet::new();
        let mut node_ports = HashSet::new();
        for task in tasks {
            let (ip, port) = task.await.expect("the task");
            assert!(ips.insert(ip), "{ip} twice");
            assert!(node_ports.insert(port), "{port} twice");
        }
        // 62 usable addresses, all taken: both see the range full.
        assert!(matches!(
            one.allocate_next_ip(false).await,
            Err(AllocError::Full)
        ));
        assert!(matches!(
            two.allocate_next_ip(false).await,
            Err(AllocError::Full)
        ));
        // Freed by one, taken by the other (whose cache says it is taken: it reads again).
        let ip = Ipv4Addr::new(10, 0, 0, 9);
        one.release(&held_ip(ip)).await;
        assert!(two.allocate_ip(ip, false).await.is_ok());
        assert!(matches!(
            one.allocate_ip(ip, false).await,
            Err(AllocError::Allocated)
        ));
    }

    /// Services stored before the records: the repair at load marks what they hold; over a
    /// shared store it only adds, on the store's only writer it rebuilds exactly.
    #[tokio::test]
    async fn repair_marks_what_stored_services_hold() {
        let sled = kubemock_storage::SledStore::open(kubemock_storage::Config::ephemeral())
            .expect("an in-memory store");
        let store: Arc<dyn Kv> = Arc::new(sled);
        let service = serde_json::json!({"spec": {"type": "NodePort",
            "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
            "ports": [{"port": 80, "nodePort": 30003}]}});
        store
            .create(
                Bytes::from_static(b"/registry/core/services/default/old"),
                Bytes::from(serde_json::to_vec(&service).expect("JSON")),
            )
            .await
            .expect("stored");
        let cidr: ServiceCidr = "10.0.0.0/24".parse().expect("a valid range");
        let ports: NodePortRange = "30000-30009".parse().expect("a valid range");
        let a = ServiceAllocator::load(&store, cidr, ports)
            .await
            .expect("loaded");
        assert!(matches!(
            a.allocate_ip(Ipv4Addr::new(10, 0, 0, 5), false).await,
            Err(AllocError::Allocated)
        ));
        assert!(matches!(
            a.allocate_port(30003, false).await,
            Err(AllocError::Allocated)
        ));
        // A leak (taken, no Service holds it): a union repair keeps it, an exact one frees it.
        a.allocate_ip(Ipv4Addr::new(10, 0, 0, 6), false)
            .await
            .expect("free");
        let leak = Ipv4Addr::new(10, 0, 0, 6);
        let shared = ServiceAllocator::new(Arc::clone(&store), cidr, ports);
        *shared.ips.last.lock().await = shared
            .ips
            .repair(store.as_ref(), false)
            .await
            .expect("repaired");
        assert!(matches!(
            shared.allocate_ip(leak, true).await,
            Err(AllocError::Allocated)
        ));
        let exact = ServiceAllocator::load(&store, cidr, ports)
            .await
            .expect("loaded");
        assert!(store.sole_writer());
        assert!(exact.allocate_ip(leak, false).await.is_ok());
        assert!(matches!(
            exact.allocate_ip(Ipv4Addr::new(10, 0, 0, 5), false).await,
            Err(AllocError::Allocated)
        ));
    }
}
