//! CPU time of a process, so each run can show who used the machine: on a small machine the load
//! generator and the server compete for the same cores, and a figure means little unless one
//! can see whether the generator or the server was the one saturating them.

use std::time::Duration;

/// Linux reports process times in clock ticks of `USER_HZ`, which is 100 on every mainstream
/// architecture and kernel configuration (it is fixed by the ABI, not by `CONFIG_HZ`).
const USER_HZ: u64 = 100;

/// User plus system CPU time consumed so far by process `pid` (all its threads), or by this
/// process for `None`; `None` when unavailable (not Linux, process gone). Resolution 10 ms.
pub(crate) fn process_cpu(pid: Option<u32>) -> Option<Duration> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    parse_stat(&stat)
}

/// Seconds of CPU between two readings of [`process_cpu`], `None` if either is missing.
pub(crate) fn cpu_between(before: Option<Duration>, after: Option<Duration>) -> Option<f64> {
    Some(after?.saturating_sub(before?).as_secs_f64())
}

/// utime + stime from the contents of `/proc/PID/stat` (fields 14 and 15; the command name,
/// field 2, is parenthesised and may contain spaces, so fields are counted after its `)`).
fn parse_stat(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 1000 / USER_HZ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let stat = "1234 (tokio (rt) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 70 0 0 20 0 3 0";
        assert_eq!(parse_stat(stat), Some(Duration::from_millis(3200)));
    }

    #[test]
    fn this_process_has_a_cpu_time() {
        assert!(process_cpu(None).is_some());
    }
}
