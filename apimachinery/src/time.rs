//! Timestamps as `metav1.Time` and `metav1.MicroTime` write and read them (RFC 3339 in UTC,
//! seconds or microseconds), over a proleptic Gregorian calendar of any year. The server
//! stamps objects with them, and the protobuf codec turns `Timestamp` messages into them and
//! back, so the two must agree to the digit: one implementation, here
//! (`staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/time.go`, `micro_time.go`).

/// Unix seconds (before 1970 too) as `YYYY-MM-DDTHH:MM:SSZ` (`metav1.Time`).
pub fn rfc3339(unix_seconds: i64) -> String {
    rfc3339_fraction(unix_seconds, None)
}

/// Unix seconds and nanoseconds as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (`metav1.MicroTime`).
pub fn rfc3339_micro(unix_seconds: i64, nanos: u32) -> String {
    rfc3339_fraction(unix_seconds, Some(nanos / 1000))
}

fn rfc3339_fraction(unix_seconds: i64, micros: Option<u32>) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let rem = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        let fraction = micros.map(|m| format!(".{m:06}")).unwrap_or_default();
        // Go pads the digits, not the sign: year -1 is "-0001".
        let sign = if year < 0 { "-" } else { "" };
        let year = year.unsigned_abs();
        return format!(
            "{sign}{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{fraction}Z",
            rem / 3600,
            (rem % 3600) / 60,
            rem % 60
        );
    }
    // Digit by digit: timestamps are formatted for every object the protobuf codec decodes.
    let mut out = String::with_capacity(27);
    let rem = rem.unsigned_abs();
    push_digits(&mut out, year.unsigned_abs(), 4);
    out.push('-');
    push_digits(&mut out, u64::from(month), 2);
    out.push('-');
    push_digits(&mut out, u64::from(day), 2);
    out.push('T');
    push_digits(&mut out, rem / 3600, 2);
    out.push(':');
    push_digits(&mut out, (rem % 3600) / 60, 2);
    out.push(':');
    push_digits(&mut out, rem % 60, 2);
    if let Some(micros) = micros {
        out.push('.');
        push_digits(&mut out, u64::from(micros), 6);
    }
    out.push('Z');
    out
}

/// Appends `value` as exactly `width` decimal digits (zero-padded; higher digits dropped).
fn push_digits(out: &mut String, value: u64, width: u32) {
    for power in (0..width).rev() {
        let digit = (value / 10u64.pow(power)) % 10;
        out.push(char::from(b'0' + digit as u8));
    }
}

/// Nanoseconds per second.
pub const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// `at` moved by `by`, clamped to the range of `jiff::Timestamp` (the years -9999 to 9999,
/// what k8s-openapi's `Time` holds) where `+` would panic: the durations added to times come
/// from objects (`ttlSecondsAfterFinished`, `startingDeadlineSeconds`, ...), so any value must
/// do.
pub fn shift(at: jiff::Timestamp, by: jiff::SignedDuration) -> jiff::Timestamp {
    at.checked_add(by).unwrap_or(if by.is_negative() {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    })
}

/// `at` moved by `seconds` ([`shift`]).
pub fn shift_seconds(at: jiff::Timestamp, seconds: i64) -> jiff::Timestamp {
    shift(at, jiff::SignedDuration::from_secs(seconds))
}

/// `at` moved forward by a `std` duration ([`shift`]; one too long for a `SignedDuration`
/// ends at the end of the range).
pub fn shift_std(at: jiff::Timestamp, by: std::time::Duration) -> jiff::Timestamp {
    shift(
        at,
        jiff::SignedDuration::try_from(by).unwrap_or(jiff::SignedDuration::MAX),
    )
}

/// How long from `from` until `to`, zero when `to` is not after `from`.
pub fn until(from: jiff::Timestamp, to: jiff::Timestamp) -> std::time::Duration {
    std::time::Duration::try_from(to.duration_since(from)).unwrap_or_default()
}

/// `at` with its fraction of a second dropped (towards the past, as `time.Truncate`).
pub fn whole_seconds(at: jiff::Timestamp) -> jiff::Timestamp {
    let seconds = at.as_second() - i64::from(at.subsec_nanosecond() < 0);
    jiff::Timestamp::from_second(seconds).unwrap_or(at)
}

/// `at` as `metav1.MicroTime` writes it ([`rfc3339_micro`]).
pub fn rfc3339_micro_of(at: jiff::Timestamp) -> String {
    let nanos = at.as_nanosecond();
    let seconds = i64::try_from(nanos.div_euclid(NANOS_PER_SECOND)).unwrap_or_default();
    let subsec = u32::try_from(nanos.rem_euclid(NANOS_PER_SECOND)).unwrap_or_default();
    rfc3339_micro(seconds, subsec)
}

/// `at` as `metav1.Time` writes it ([`rfc3339`]).
pub fn rfc3339_of(at: jiff::Timestamp) -> String {
    rfc3339(whole_seconds(at).as_second())
}

/// Parses an RFC 3339 timestamp as `metav1.Time` and `metav1.MicroTime` serialise it
/// (`2024-05-01T12:00:00Z`, with optional fractional seconds and a numeric offset) into
/// nanoseconds since the Unix epoch; `None` when it is not one.
pub fn parse_rfc3339(text: &str) -> Option<i128> {
    let bytes = text.as_bytes();
    let number = |from: usize, to: usize| decimal(bytes.get(from..to)?);
    let separators_ok = bytes.get(4) == Some(&b'-')
        && bytes.get(7) == Some(&b'-')
        && matches!(bytes.get(10), Some(b'T' | b't'))
        && bytes.get(13) == Some(&b':')
        && bytes.get(16) == Some(&b':');
    if !separators_ok {
        return None;
    }
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    let in_range = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour <= 23
        && minute <= 59
        && second <= 60;
    if !in_range {
        return None;
    }
    let mut rest = bytes.get(19..)?;
    let mut nanos: i64 = 0;
    if let Some((b'.', fraction)) = rest.split_first() {
        let digits = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        nanos = decimal(&fraction[..digits])? * 10_i64.pow(9 - digits as u32);
        rest = &fraction[digits..];
    }
    let offset_seconds = match rest {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let offset = decimal(&[*h1, *h2])? * 3600 + decimal(&[*m1, *m2])? * 60;
            if *sign == b'+' { offset } else { -offset }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    Some(i128::from(seconds) * NANOS_PER_SECOND + i128::from(nanos))
}

/// Days in 400 Gregorian years: the calendar repeats with this period.
const DAYS_PER_400_YEARS: i128 = 146_097;

/// [`parse_rfc3339`], and also the years outside 0000–9999 that [`rfc3339`] writes for a
/// protobuf time beyond them (more digits, or a minus sign, as Go's `Time.Format` writes
/// them). For the protobuf encoder, which must write back every time the decoder reads; JSON
/// bodies keep the strict form (upstream's `time.Parse` refuses these).
pub fn parse_rfc3339_any_year(text: &str) -> Option<i128> {
    if let Some(nanos) = parse_rfc3339(text) {
        return Some(nanos);
    }
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
    let year = decimal(unsigned.as_bytes().get(..digits)?)?;
    let year = if negative { -year } else { year };
    // The same moment of year 2000 + (year mod 400), moved by whole 400-year cycles.
    let cycles = i128::from(year.div_euclid(400)) - 5;
    let within = format!(
        "{:04}{}",
        2000 + year.rem_euclid(400),
        unsigned.get(digits..)?
    );
    Some(parse_rfc3339(&within)? + cycles * DAYS_PER_400_YEARS * 86_400 * NANOS_PER_SECOND)
}

/// ASCII decimal digits (and nothing else) as a number.
fn decimal(digits: &[u8]) -> Option<i64> {
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        digits
            .iter()
            .fold(0, |n, digit| n * 10 + i64::from(digit - b'0')),
    )
}

/// A proleptic Gregorian date to days since 1970-01-01 (Howard Hinnant's algorithm).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm), as
/// (year, month, day).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_and_dates_convert_both_ways() {
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        for days in [-719_468, -1, 0, 11_016, 2_932_896] {
            let (year, month, day) = civil_from_days(days);
            assert_eq!(
                days_from_civil(year, i64::from(month), i64::from(day)),
                days
            );
        }
    }

    #[test]
    fn times_beyond_years_0000_to_9999_read_back_for_the_protobuf_encoder() {
        // Found by the `protobuf` fuzz target: a protobuf time of year 117367 decoded to
        // "117367-07-16T08:05:33Z", which the encoder then refused.
        for seconds in [
            3_641_186_733_333,
            253_402_300_800,
            -62_167_219_201,
            -62_198_755_200,
            i64::MAX,
            i64::MIN,
            0,
            1_714_564_800,
        ] {
            let text = rfc3339(seconds);
            assert_eq!(
                parse_rfc3339_any_year(&text),
                Some(i128::from(seconds) * NANOS_PER_SECOND),
                "{text}"
            );
            let micro = rfc3339_micro(seconds, 123_456_000);
            assert_eq!(
                parse_rfc3339_any_year(&micro),
                Some(i128::from(seconds) * NANOS_PER_SECOND + 123_456_000),
                "{micro}"
            );
        }
        assert_eq!(rfc3339(3_641_186_733_333), "117354-08-12T23:15:33Z");
        assert_eq!(
            rfc3339(-62_198_755_200),
            "-0001-01-01T00:00:00Z",
            "as Go pads it"
        );
        assert_eq!(
            parse_rfc3339("117354-08-12T23:15:33Z"),
            None,
            "JSON stays strict"
        );
        assert_eq!(parse_rfc3339_any_year("-x-01-01T00:00:00Z"), None);
    }

    #[test]
    fn timestamps_are_rfc3339_seconds_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_714_564_800), "2024-05-01T12:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(-62_135_596_800), "0001-01-01T00:00:00Z");
    }

    #[test]
    fn rfc3339_timestamps_parse_to_unix_nanoseconds() {
        let second = 1_000_000_000;
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339("2024-05-01T12:00:00Z"),
            Some(1_714_564_800 * second)
        );
        assert_eq!(
            parse_rfc3339("2000-02-29T00:00:00Z"),
            Some(951_782_400 * second)
        );
        assert_eq!(
            parse_rfc3339("2024-05-01T12:00:00.123456Z"),
            Some(1_714_564_800 * second + 123_456_000)
        );
        assert_eq!(
            parse_rfc3339("2024-05-01T14:30:00+02:30"),
            Some(1_714_564_800 * second)
        );
        assert_eq!(
            parse_rfc3339("0001-01-01T00:00:00Z"),
            Some(-62_135_596_800 * second)
        );
        for bad in [
            "",
            "yesterday",
            "2024-05-01",
            "2024-13-01T00:00:00Z",
            "2024-05-01T00:00:00",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        for now in [0_i64, 86_399, 1_714_564_800, 4_102_444_800, -86_401] {
            let text = rfc3339(now);
            assert_eq!(
                parse_rfc3339(&text),
                Some(i128::from(now) * second),
                "{text}"
            );
        }
    }
}
