//! Service cluster IPs and node ports: who holds which. The real API server keeps a bitmap per
//! range in etcd; kubemock keeps the sets in memory and rebuilds them from the stored Services
//! the first time they are needed (so a durable store keeps its allocations across restarts,
//! and the sets never disagree with the Services for long: a create that fails after taking an
//! address gives it back when its [`Reservation`] is dropped).
//!
//! Invariant: an address or port is in the set iff a stored Service holds it or a write that
//! holds a [`Reservation`] for it is in flight. Writers serialise on one short `Mutex` (never
//! held across an `.await`), so concurrent creates never get the same address.

use std::collections::HashSet;
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;
use std::sync::Arc;

use kubemock_storage::{Kv, RangeRequest};
use parking_lot::Mutex;
use serde_json::Value;

use crate::status::{ApiError, ApiResult};

/// Services read per page while rebuilding the sets.
const LOAD_PAGE: usize = 500;

/// The storage key prefix of every Service (`keys::resource_prefix` of core/v1 services).
const SERVICES_PREFIX: &str = "/registry/core/services/";

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
/// `ipallocator` and `portallocator` errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AllocError {
    /// Someone holds it.
    Allocated,
    /// Outside the range.
    NotInRange,
    /// Nothing left.
    Full,
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

/// What is taken. Guarded by [`ServiceAllocator::used`].
#[derive(Debug, Default)]
struct Used {
    ips: HashSet<u64>,
    ports: HashSet<u16>,
}

/// The cluster IP and node port sets of one server.
#[derive(Debug)]
pub(crate) struct ServiceAllocator {
    cidr: ServiceCidr,
    node_ports: NodePortRange,
    /// Taken offsets and ports; written by reservations, their commits and drops, and deletes.
    /// Innermost lock: nothing else is locked while it is held.
    used: Mutex<Used>,
}

impl ServiceAllocator {
    /// The allocator over `cidr` and `node_ports`, with what the stored Services hold.
    pub(crate) async fn load(
        store: &Arc<dyn Kv>,
        cidr: ServiceCidr,
        node_ports: NodePortRange,
    ) -> ApiResult<ServiceAllocator> {
        let allocator = ServiceAllocator {
            cidr,
            node_ports,
            used: Mutex::new(Used::default()),
        };
        let mut request = RangeRequest::prefix(SERVICES_PREFIX).limit(LOAD_PAGE);
        loop {
            let page = store
                .range(request.clone())
                .await
                .map_err(ApiError::from_storage)?;
            for kv in &page.items {
                // A stored object that is not JSON holds nothing we could know of.
                if let Ok(service) = serde_json::from_slice::<Value>(&kv.value) {
                    allocator.mark(&Held::of_service(&service));
                }
            }
            let Some(last) = page.items.last().filter(|_| page.more()) else {
                break;
            };
            // No Service write runs while this loads (they all wait for the allocator), so
            // each page may read the latest revision.
            request = request.start_after(last.key.clone());
        }
        Ok(allocator)
    }

    /// An empty allocator (unit tests).
    #[cfg(test)]
    pub(crate) fn for_tests(cidr: ServiceCidr, node_ports: NodePortRange) -> Self {
        ServiceAllocator {
            cidr,
            node_ports,
            used: Mutex::new(Used::default()),
        }
    }

    /// The cluster IP range.
    pub(crate) fn cidr(&self) -> ServiceCidr {
        self.cidr
    }

    /// The node port range.
    pub(crate) fn node_ports(&self) -> NodePortRange {
        self.node_ports
    }

    /// Marks what a stored Service holds (addresses outside the ranges are ignored: they were
    /// allocated under another configuration).
    fn mark(&self, held: &Held) {
        let mut used = self.used.lock();
        for ip in &held.ips {
            if let Some(offset) = self.cidr.offset(*ip) {
                used.ips.insert(offset);
            }
        }
        for port in &held.ports {
            if self.port_in_range(*port) {
                used.ports.insert(*port);
            }
        }
    }

    /// Gives back `held`.
    pub(crate) fn release(&self, held: &Held) {
        let mut used = self.used.lock();
        for ip in &held.ips {
            if let Some(offset) = self.cidr.offset(*ip) {
                used.ips.remove(&offset);
            }
        }
        for port in &held.ports {
            used.ports.remove(port);
        }
    }

    fn port_in_range(&self, port: u16) -> bool {
        (self.node_ports.first..=self.node_ports.last).contains(&port)
    }

    /// Takes `ip` (with `dry_run`, only checks that it could be taken).
    pub(crate) fn allocate_ip(&self, ip: Ipv4Addr, dry_run: bool) -> Result<(), AllocError> {
        let offset = self.cidr.offset(ip).ok_or(AllocError::NotInRange)?;
        let mut used = self.used.lock();
        if used.ips.contains(&offset) {
            return Err(AllocError::Allocated);
        }
        if !dry_run {
            used.ips.insert(offset);
        }
        Ok(())
    }

    /// Takes a free address: a random one above the static band that users pick their
    /// addresses from (as the real allocator does since ServiceIPStaticSubrange), else one in
    /// it.
    pub(crate) fn allocate_next_ip(&self, dry_run: bool) -> Result<Ipv4Addr, AllocError> {
        let (low, high) = self.cidr.usable();
        // Upstream: min(max(16, size/16), 256) addresses at the start of the range.
        let band = (self.cidr.size() / 16).clamp(16, 256);
        let mut used = self.used.lock();
        let offset =
            pick_free(low, high, band, |o| used.ips.contains(&o)).ok_or(AllocError::Full)?;
        if !dry_run {
            used.ips.insert(offset);
        }
        Ok(self.cidr.address(offset))
    }

    /// Takes `port` (with `dry_run`, only checks that it could be taken).
    pub(crate) fn allocate_port(&self, port: u16, dry_run: bool) -> Result<(), AllocError> {
        if !self.port_in_range(port) {
            return Err(AllocError::NotInRange);
        }
        let mut used = self.used.lock();
        if used.ports.contains(&port) {
            return Err(AllocError::Allocated);
        }
        if !dry_run {
            used.ports.insert(port);
        }
        Ok(())
    }

    /// Takes a free node port, above the static band first (upstream: min(max(16,
    /// size/32), 128) ports).
    pub(crate) fn allocate_next_port(&self, dry_run: bool) -> Result<u16, AllocError> {
        let first = u64::from(self.node_ports.first);
        let size = u64::from(self.node_ports.last) - first + 1;
        let band = (size / 32).clamp(16, 128);
        let mut used = self.used.lock();
        let offset = pick_free(0, size, band, |o| {
            used.ports.contains(&((first + o) as u16))
        })
        .ok_or(AllocError::Full)?;
        let port = (first + offset) as u16;
        if !dry_run {
            used.ports.insert(port);
        }
        Ok(port)
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
    pub(crate) fn commit(mut self) {
        if let Some(allocator) = self.allocator.take() {
            allocator.release(&self.freed);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(allocator) = self.allocator.take() {
            allocator.release(&self.taken);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allocator(cidr: &str, ports: &str) -> ServiceAllocator {
        ServiceAllocator {
            cidr: cidr.parse().expect("a valid range"),
            node_ports: ports.parse().expect("a valid port range"),
            used: Mutex::new(Used::default()),
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

    #[test]
    fn addresses_are_in_the_range_and_never_handed_out_twice() {
        let a = allocator("10.0.0.0/28", "30000-30015");
        // 16 addresses, minus network and broadcast.
        let mut got = HashSet::new();
        for _ in 0..14 {
            let ip = a.allocate_next_ip(false).expect("a free address");
            assert!(a.cidr.offset(ip).is_some(), "{ip}");
            assert!(got.insert(ip), "{ip} twice");
        }
        assert_eq!(a.allocate_next_ip(false), Err(AllocError::Full));
        assert!(!got.contains(&Ipv4Addr::new(10, 0, 0, 0)));
        assert!(!got.contains(&Ipv4Addr::new(10, 0, 0, 15)));
        a.release(&Held {
            ips: vec![Ipv4Addr::new(10, 0, 0, 7)],
            ports: vec![],
        });
        assert_eq!(a.allocate_next_ip(false), Ok(Ipv4Addr::new(10, 0, 0, 7)));
    }

    #[test]
    fn requested_addresses_are_checked_for_range_and_conflicts() {
        let a = allocator("10.96.0.0/12", "30000-32767");
        let ip = Ipv4Addr::new(10, 96, 0, 10);
        assert_eq!(a.allocate_ip(ip, true), Ok(()));
        assert_eq!(a.allocate_ip(ip, false), Ok(()));
        assert_eq!(a.allocate_ip(ip, false), Err(AllocError::Allocated));
        assert_eq!(
            a.allocate_ip(Ipv4Addr::new(10, 0, 0, 1), false),
            Err(AllocError::NotInRange)
        );
        assert_eq!(
            a.allocate_ip(Ipv4Addr::new(10, 96, 0, 0), false),
            Err(AllocError::NotInRange)
        );
        // Dynamic addresses stay out of the static band (the first 256) while there is room.
        let next = a.allocate_next_ip(false).expect("a free address");
        assert!(
            a.cidr.offset(next).expect("inside the range") >= 257,
            "{next}"
        );
    }

    #[test]
    fn node_ports_are_unique_and_in_range() {
        let a = allocator("10.96.0.0/12", "30000-30031");
        let mut got = HashSet::new();
        for _ in 0..32 {
            let port = a.allocate_next_port(false).unwrap();
            assert!((30000..=30031).contains(&port));
            assert!(got.insert(port));
        }
        assert_eq!(a.allocate_next_port(false), Err(AllocError::Full));
        assert_eq!(a.allocate_port(30005, false), Err(AllocError::Allocated));
        assert_eq!(a.allocate_port(80, false), Err(AllocError::NotInRange));
    }

    #[test]
    fn a_dropped_reservation_gives_back_what_it_took_and_a_committed_one_what_it_freed() {
        let a = Arc::new(allocator("10.96.0.0/12", "30000-32767"));
        let ip = Ipv4Addr::new(10, 96, 0, 20);
        a.allocate_ip(ip, false).unwrap();
        drop(Reservation::new(
            a.clone(),
            Held {
                ips: vec![ip],
                ports: vec![],
            },
            Held::default(),
        ));
        assert_eq!(a.allocate_ip(ip, false), Ok(()));
        let freed = Held {
            ips: vec![ip],
            ports: vec![],
        };
        Reservation::new(a.clone(), Held::default(), freed).commit();
        assert_eq!(a.allocate_ip(ip, false), Ok(()));
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
}
