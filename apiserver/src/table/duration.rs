//! Ages as the real server renders them in Table cells: `HumanDuration` of
//! `k8s.io/apimachinery/pkg/util/duration` (about two significant figures: `5s`, `3m10s`, `70m`,
//! `2d1h`, `8y`) and the printers' `translateTimestampSince` (`<unknown>` for a missing
//! timestamp). kubectl prints these cells verbatim, so the boundaries must match upstream's.

use kubemock_apimachinery::time;

const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// `duration.HumanDuration` of a Go `time.Duration` (nanoseconds).
pub(crate) fn human_duration(nanos: i64) -> String {
    // Go: `int(d.Seconds())`, which truncates toward zero like integer division. Up to two
    // seconds in the future counts as now, to tolerate clock skew.
    let seconds = nanos / SECOND;
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / MINUTE;
    if minutes < 10 {
        let s = (nanos / SECOND) % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / HOUR;
    if hours < 8 {
        let m = (nanos / MINUTE) % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// The printers' `translateTimestampSince`: how long before `now` (Unix nanoseconds) the
/// RFC 3339 `timestamp` was, or `<unknown>` when there is none (Go's zero time included).
pub(crate) fn since(timestamp: Option<&str>, now: i128) -> String {
    match timestamp.and_then(time::parse_rfc3339) {
        Some(at) if at != zero_time() => human_duration(go_duration(now - at)),
        _ => "<unknown>".to_owned(),
    }
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z), which `IsZero` reports as unset.
pub(crate) fn zero_time() -> i128 {
    -62_135_596_800 * i128::from(SECOND)
}

/// A difference of instants as a Go `time.Duration`, which saturates at its bounds.
pub(crate) fn go_duration(nanos: i128) -> i64 {
    i64::try_from(nanos).unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MILLISECOND: i64 = 1_000_000;
    const DAY: i64 = 24 * HOUR;
    const YEAR: i64 = 365 * DAY;

    /// `TestHumanDuration` and `TestHumanDurationBoundaries` of apimachinery's
    /// `pkg/util/duration/duration_test.go`, case for case.
    #[test]
    fn human_duration_matches_apimachinery_examples_and_boundaries() {
        let cases: &[(i64, &str)] = &[
            (SECOND, "1s"),
            (70 * SECOND, "70s"),
            (190 * SECOND, "3m10s"),
            (70 * MINUTE, "70m"),
            (47 * HOUR, "47h"),
            (49 * HOUR, "2d1h"),
            ((8 * 24 + 2) * HOUR, "8d"),
            ((367 * 24) * HOUR, "367d"),
            ((365 * 2 * 24 + 25) * HOUR, "2y1d"),
            ((365 * 8 * 24 + 2) * HOUR, "8y"),
            // Boundaries.
            (-2 * SECOND, "<invalid>"),
            (-2 * SECOND + 1, "0s"),
            (0, "0s"),
            (SECOND - MILLISECOND, "0s"),
            (2 * MINUTE - MILLISECOND, "119s"),
            (2 * MINUTE, "2m"),
            (2 * MINUTE + SECOND, "2m1s"),
            (10 * MINUTE - MILLISECOND, "9m59s"),
            (10 * MINUTE, "10m"),
            (10 * MINUTE + SECOND, "10m"),
            (3 * HOUR - MILLISECOND, "179m"),
            (3 * HOUR, "3h"),
            (3 * HOUR + MINUTE, "3h1m"),
            (8 * HOUR - MILLISECOND, "7h59m"),
            (8 * HOUR, "8h"),
            (8 * HOUR + 59 * MINUTE, "8h"),
            (2 * DAY - MILLISECOND, "47h"),
            (2 * DAY, "2d"),
            (2 * DAY + HOUR, "2d1h"),
            (8 * DAY - MILLISECOND, "7d23h"),
            (8 * DAY, "8d"),
            (8 * DAY + 23 * HOUR, "8d"),
            (2 * YEAR - MILLISECOND, "729d"),
            (2 * YEAR, "2y"),
            (2 * YEAR + 23 * HOUR, "2y"),
            (2 * YEAR + 23 * HOUR + 59 * MINUTE, "2y"),
            (2 * YEAR + 24 * HOUR - MILLISECOND, "2y"),
            (2 * YEAR + 24 * HOUR, "2y1d"),
            (3 * YEAR, "3y"),
            (4 * YEAR, "4y"),
            (5 * YEAR, "5y"),
            (6 * YEAR, "6y"),
            (7 * YEAR, "7y"),
            (8 * YEAR - MILLISECOND, "7y364d"),
            (8 * YEAR, "8y"),
            (8 * YEAR + 364 * DAY, "8y"),
            (9 * YEAR, "9y"),
        ];
        for (nanos, want) in cases {
            assert_eq!(human_duration(*nanos), *want, "{nanos}ns");
        }
    }

    #[test]
    fn ages_are_measured_from_the_timestamp_and_unknown_without_one() {
        let created = time::parse_rfc3339("2024-05-01T12:00:00Z").unwrap();
        let now = created + i128::from(5 * MINUTE + 30 * SECOND);
        assert_eq!(since(Some("2024-05-01T12:00:00Z"), now), "5m30s");
        assert_eq!(since(Some("2024-05-01T12:00:00Z"), created), "0s");
        assert_eq!(since(Some("2024-05-02T12:00:00Z"), now), "<invalid>");
        assert_eq!(since(None, now), "<unknown>");
        assert_eq!(since(Some("not a time"), now), "<unknown>");
        assert_eq!(since(Some("0001-01-01T00:00:00Z"), now), "<unknown>");
        assert_eq!(since(Some("1970-01-01T00:00:00Z"), now), "54y");
    }
}
