//! Kubernetes' IP and CIDR libraries (`staging/src/k8s.io/apiserver/pkg/cel/library/ip.go`,
//! `cidr.go`). Addresses are read as Go's `net/netip` reads them, and a refused address gets
//! netip's own error text (`ParseAddr("1.2.3.4.5"): IPv4 address too long`), because upstream
//! passes that text through to the user.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{Library, err, no_such_overload};
use crate::error::EvalError;
use crate::types::Type;
use crate::value::{Cidr, Value};

/// The type name of addresses.
pub(crate) const IP: &str = "net.IP";
/// The type name of prefixes.
pub(crate) const CIDR: &str = "net.CIDR";

fn quote(s: &str) -> String {
    format!("{s:?}")
}

fn addr_error(input: &str, msg: &str, at: Option<&str>) -> String {
    match at {
        Some(at) => format!("ParseAddr({}): {msg} (at {})", quote(input), quote(at)),
        None => format!("ParseAddr({}): {msg}", quote(input)),
    }
}

/// netip's IPv4 reading: four decimal fields, no leading zeros.
fn parse_v4(input: &str, s: &str) -> Result<Ipv4Addr, String> {
    let b = s.as_bytes();
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0usize);
    for i in 0..b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            if digits == 1 && val == 0 {
                return Err(addr_error(
                    input,
                    "IPv4 field has octet with leading zero",
                    None,
                ));
            }
            val = val * 10 + u32::from(c - b'0');
            digits += 1;
            if val > 255 {
                return Err(addr_error(input, "IPv4 field has value >255", None));
            }
        } else if c == b'.' {
            if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                return Err(addr_error(
                    input,
                    "IPv4 field must have at least one digit",
                    Some(&s[i..]),
                ));
            }
            if pos == 3 {
                return Err(addr_error(input, "IPv4 address too long", None));
            }
            fields[pos] = val as u8;
            pos += 1;
            val = 0;
            digits = 0;
        } else {
            return Err(addr_error(input, "unexpected character", Some(&s[i..])));
        }
    }
    if pos < 3 {
        return Err(addr_error(input, "IPv4 address too short", None));
    }
    fields[3] = val as u8;
    Ok(Ipv4Addr::from(fields))
}

/// netip's IPv6 reading; returns the address and whether it had a zone.
fn parse_v6(input: &str) -> Result<(Ipv6Addr, bool), String> {
    let (mut s, zoned) = match input.split_once('%') {
        Some((_, "")) => {
            return Err(addr_error(input, "zone must be a non-empty string", None));
        }
        Some((a, _)) => (a, true),
        None => (input, false),
    };
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok((Ipv6Addr::UNSPECIFIED, zoned));
        }
    }
    let mut i = 0usize;
    while i < 16 {
        let b = s.as_bytes();
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < b.len() {
            let c = b[off];
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => break,
            };
            acc = (acc << 4) + u32::from(d);
            if off > 3 {
                return Err(addr_error(
                    input,
                    "each group must have 4 or less digits",
                    Some(s),
                ));
            }
            if acc > u32::from(u16::MAX) {
                return Err(addr_error(input, "IPv6 field has value >=2^16", Some(s)));
            }
            off += 1;
        }
        if off == 0 {
            return Err(addr_error(
                input,
                "each colon-separated field must have at least one digit",
                Some(s),
            ));
        }
        if off < b.len() && b[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return Err(addr_error(
                    input,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    Some(s),
                ));
            }
            if i + 4 > 16 {
                return Err(addr_error(
                    input,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    Some(s),
                ));
            }
            let v4 = parse_v4(input, s)?;
            ip[i..i + 4].copy_from_slice(&v4.octets());
            i += 4;
            s = "";
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(addr_error(
                input,
                "unexpected character, want colon",
                Some(s),
            ));
        } else if s.len() == 1 {
            return Err(addr_error(
                input,
                "colon must be followed by more characters",
                Some(s),
            ));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return Err(addr_error(input, "multiple :: in address", Some(s)));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(addr_error(input, "trailing garbage after address", Some(s)));
    }
    if i < 16 {
        let Some(e) = ellipsis else {
            return Err(addr_error(input, "address string too short", None));
        };
        let n = 16 - i;
        ip.copy_within(e..i, e + n);
        ip[e..e + n].fill(0);
    } else if ellipsis.is_some() {
        return Err(addr_error(
            input,
            "the :: must expand to at least one field of zeros",
            None,
        ));
    }
    Ok((Ipv6Addr::from(ip), zoned))
}

/// Go's `netip.ParseAddr`: the address, whether it carried a zone, or netip's error.
fn parse_addr(s: &str) -> Result<(IpAddr, bool), String> {
    for c in s.bytes() {
        match c {
            b'.' => return parse_v4(s, s).map(|a| (IpAddr::V4(a), false)),
            b':' => return parse_v6(s).map(|(a, z)| (IpAddr::V6(a), z)),
            b'%' => return Err(addr_error(s, "missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(addr_error(s, "unable to parse IP", None))
}

fn is_4in6(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// ip.go's `parseIPAddr`.
fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    let (addr, zoned) = parse_addr(raw).map_err(|e| {
        format!(
            "IP Address {} parse error during conversion from string: {e}",
            quote(raw)
        )
    })?;
    if zoned {
        return Err(format!(
            "IP address {} with zone value is not allowed",
            quote(raw)
        ));
    }
    if is_4in6(&addr) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            quote(raw)
        ));
    }
    Ok(addr)
}

/// Go's `netip.ParsePrefix`, with its errors.
fn parse_prefix(s: &str) -> Result<Cidr, String> {
    let prefix_error = |msg: &str| format!("netip.ParsePrefix({}): {msg}", quote(s));
    let Some(slash) = s.rfind('/') else {
        return Err(prefix_error("no '/'"));
    };
    let (addr, zoned) = parse_addr(&s[..slash]).map_err(|e| prefix_error(&e))?;
    if zoned {
        return Err(prefix_error("IPv6 zones cannot be present in a prefix"));
    }
    let bits = &s[slash + 1..];
    let bad = || prefix_error(&format!("bad bits after slash: {}", quote(bits)));
    if bits.len() > 1 && !(b'1'..=b'9').contains(&bits.as_bytes()[0]) {
        return Err(bad());
    }
    let n: i64 = bits.parse().map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if !(0..=max).contains(&n) {
        return Err(prefix_error("prefix length out of range"));
    }
    Ok(Cidr {
        addr,
        prefix: n as u8,
    })
}

/// cidr.go's `parseCIDR`.
fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let cidr = parse_prefix(raw)
        .map_err(|e| format!("network address parse error during conversion from string: {e}"))?;
    if is_4in6(&cidr.addr) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            quote(raw)
        ));
    }
    Ok(cidr)
}

fn ip_of(v: &Value) -> Result<IpAddr, EvalError> {
    match v {
        Value::Ip(ip) => Ok(*ip),
        _ => Err(no_such_overload()),
    }
}

fn cidr_of(v: &Value) -> Result<Cidr, EvalError> {
    match v {
        Value::Cidr(c) => Ok(*c),
        _ => Err(no_such_overload()),
    }
}

fn text(v: &Value) -> Result<&str, EvalError> {
    match v {
        Value::String(s) => Ok(s),
        _ => Err(no_such_overload()),
    }
}

fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let m = if prefix == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(prefix))
            };
            IpAddr::V4(Ipv4Addr::from(bits & m))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let m = if prefix == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(prefix))
            };
            IpAddr::V6(Ipv6Addr::from(bits & m))
        }
    }
}

fn contains(c: Cidr, ip: IpAddr) -> bool {
    c.addr.is_ipv4() == ip.is_ipv4() && mask(ip, c.prefix) == mask(c.addr, c.prefix)
}

fn is_link_local_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[0] == 169 && v4.octets()[1] == 254,
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_multicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn is_global_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !v4.is_unspecified()
                && !v4.is_broadcast()
                && !v4.is_loopback()
                && !v4.is_multicast()
                && !is_link_local_unicast(ip)
        }
        IpAddr::V6(v6) => {
            !v6.is_unspecified()
                && !v6.is_loopback()
                && !v6.is_multicast()
                && !is_link_local_unicast(ip)
        }
    }
}

pub(super) fn register(lib: &mut Library) {
    let ipt = || Type::Opaque(IP);
    let ct = || Type::Opaque(CIDR);
    lib.global("ip", vec![Type::String], ipt(), |a| {
        parse_ip(text(&a[0])?).map(Value::Ip).map_err(err)
    });
    lib.global("isIP", vec![Type::String], Type::Bool, |a| {
        Ok(Value::Bool(parse_ip(text(&a[0])?).is_ok()))
    });
    lib.global("ip.isCanonical", vec![Type::String], Type::Bool, |a| {
        let raw = text(&a[0])?;
        let ip = parse_ip(raw).map_err(err)?;
        Ok(Value::Bool(ip.to_string() == raw))
    });
    lib.global("string", vec![ipt()], Type::String, |a| {
        Ok(Value::string(ip_of(&a[0])?.to_string()))
    });
    lib.member("family", vec![ipt()], Type::Int, |a| {
        Ok(Value::Int(if ip_of(&a[0])?.is_ipv4() { 4 } else { 6 }))
    });
    lib.member("isUnspecified", vec![ipt()], Type::Bool, |a| {
        Ok(Value::Bool(ip_of(&a[0])?.is_unspecified()))
    });
    lib.member("isLoopback", vec![ipt()], Type::Bool, |a| {
        Ok(Value::Bool(ip_of(&a[0])?.is_loopback()))
    });
    lib.member("isLinkLocalMulticast", vec![ipt()], Type::Bool, |a| {
        Ok(Value::Bool(is_link_local_multicast(&ip_of(&a[0])?)))
    });
    lib.member("isLinkLocalUnicast", vec![ipt()], Type::Bool, |a| {
        Ok(Value::Bool(is_link_local_unicast(&ip_of(&a[0])?)))
    });
    lib.member("isGlobalUnicast", vec![ipt()], Type::Bool, |a| {
        Ok(Value::Bool(is_global_unicast(&ip_of(&a[0])?)))
    });

    lib.global("cidr", vec![Type::String], ct(), |a| {
        parse_cidr(text(&a[0])?).map(Value::Cidr).map_err(|e| {
            err(format!(
                "network address parse error during conversion from string: {e}"
            ))
        })
    });
    lib.global("isCIDR", vec![Type::String], Type::Bool, |a| {
        Ok(Value::Bool(parse_cidr(text(&a[0])?).is_ok()))
    });
    lib.global("string", vec![ct()], Type::String, |a| {
        let c = cidr_of(&a[0])?;
        Ok(Value::string(format!("{}/{}", c.addr, c.prefix)))
    });
    lib.member("containsIP", vec![ct(), ipt()], Type::Bool, |a| {
        Ok(Value::Bool(contains(cidr_of(&a[0])?, ip_of(&a[1])?)))
    });
    lib.member("containsIP", vec![ct(), Type::String], Type::Bool, |a| {
        let ip = parse_ip(text(&a[1])?).map_err(err)?;
        Ok(Value::Bool(contains(cidr_of(&a[0])?, ip)))
    });
    let contains_cidr = |c: Cidr, other: Cidr| other.prefix >= c.prefix && contains(c, other.addr);
    lib.member("containsCIDR", vec![ct(), ct()], Type::Bool, |a| {
        let (c, o) = (cidr_of(&a[0])?, cidr_of(&a[1])?);
        Ok(Value::Bool(o.prefix >= c.prefix && contains(c, o.addr)))
    });
    lib.member("containsCIDR", vec![ct(), Type::String], Type::Bool, |a| {
        let o = parse_cidr(text(&a[1])?).map_err(|e| {
            err(format!(
                "network address parse error during conversion from string: {e}"
            ))
        })?;
        let c = cidr_of(&a[0])?;
        Ok(Value::Bool(o.prefix >= c.prefix && contains(c, o.addr)))
    });
    let _ = contains_cidr;
    lib.member("ip", vec![ct()], ipt(), |a| {
        Ok(Value::Ip(cidr_of(&a[0])?.addr))
    });
    lib.member("masked", vec![ct()], ct(), |a| {
        let c = cidr_of(&a[0])?;
        Ok(Value::Cidr(Cidr {
            addr: mask(c.addr, c.prefix),
            prefix: c.prefix,
        }))
    });
    lib.member("prefixLength", vec![ct()], Type::Int, |a| {
        Ok(Value::Int(i64::from(cidr_of(&a[0])?.prefix)))
    });
}
