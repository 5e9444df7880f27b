//! Schedule arithmetic of the CronJob controller, without I/O: which cron schedules are
//! accepted (what upstream's `robfig/cron` `ParseStandard` accepts: five fields or a
//! descriptor, an optional `TZ=`/`CRON_TZ=` prefix), when a schedule fires next in its time
//! zone, which scheduled time is the most recent unmet one (upstream `utils.go`
//! `mostRecentScheduleTime`, with its approximate count of missed times), and how long to
//! wait before looking again. The controller must agree with upstream on these times, since
//! they name the Jobs it creates.
//!
//! Parsing is ours (so that exactly `robfig/cron`'s grammar is accepted and its error words
//! are kept); the calendar search, time zones and daylight-saving transitions are `croner`'s
//! and `chrono-tz`'s. Those compute in `chrono`, which stays inside this module: its functions
//! take and return `jiff::Timestamp`, as k8s-openapi's `Time` holds times.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;
use jiff::{SignedDuration, Timestamp};
use kubemock_apimachinery::time;

/// Upstream's `nextScheduleDelta`: a requeue lands this long after the scheduled time, so
/// that the sync sees the time as passed.
pub(crate) const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

/// More missed start times than this is "too many" (upstream: "somewhat arbitrarily picked
/// 100, as more than 80, but less than lots"): the controller warns, then schedules only the
/// most recent one.
pub(crate) const TOO_MANY_MISSED: i64 = 100;

/// A parsed schedule: when it fires, in which time zone.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    kind: Kind,
    zone: Tz,
}

#[derive(Debug, Clone)]
enum Kind {
    /// Five cron fields (descriptors other than `@every` are written as five fields).
    Cron(Box<Cron>),
    /// `@every <duration>`: a constant delay, whole seconds, at least one.
    Every(SignedDuration),
}

/// One cron field: its bounds and its names.
struct Field {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Field = Field {
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Field = Field {
    min: 0,
    max: 23,
    names: &[],
};
const DAY_OF_MONTH: Field = Field {
    min: 1,
    max: 31,
    names: &[],
};
/// Months by name, `jan` = 1.
const MONTH: Field = Field {
    min: 1,
    max: 12,
    names: &[
        "", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
/// Days of the week by name, `sun` = 0 (7 is not Sunday in `robfig/cron`).
const DAY_OF_WEEK: Field = Field {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// Loads an IANA time zone as Go's `time.LoadLocation` does (`""` and `UTC` are UTC); the
/// error in Go's words.
pub(crate) fn load_location(name: &str) -> Result<Tz, String> {
    if name.is_empty() {
        return Ok(Tz::UTC);
    }
    Tz::from_str(name).map_err(|_| format!("unknown time zone {name}"))
}

/// Upstream's `formatSchedule` (without its event): the schedule with `spec.timeZone` as a
/// `TZ=` prefix, unless the schedule names a zone itself or the zone is unknown.
pub(crate) fn with_time_zone(schedule: &str, time_zone: Option<&str>) -> String {
    match time_zone {
        Some(zone) if !schedule.contains("TZ") && load_location(zone).is_ok() => {
            format!("TZ={zone} {schedule}")
        }
        _ => schedule.to_owned(),
    }
}

impl Schedule {
    /// Parses `spec` as `robfig/cron`'s `ParseStandard` does; the error in its words.
    pub(crate) fn parse(spec: &str) -> Result<Self, String> {
        if spec.is_empty() {
            return Err("empty spec string".to_owned());
        }
        let mut spec = spec;
        let mut zone = Tz::UTC;
        if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
            let Some((prefix, rest)) = spec.split_once(' ') else {
                return Err(format!(
                    "provided bad location {spec}: no schedule after it"
                ));
            };
            let name = prefix.split_once('=').map_or("", |(_, name)| name);
            zone = load_location(name)
                .map_err(|err| format!("provided bad location {name}: {err}"))?;
            spec = rest.trim();
        }
        if let Some(descriptor) = spec.strip_prefix('@') {
            let kind = match descriptor {
                "yearly" | "annually" => cron("0 0 1 1 *")?,
                "monthly" => cron("0 0 1 * *")?,
                "weekly" => cron("0 0 * * 0")?,
                "daily" | "midnight" => cron("0 0 * * *")?,
                "hourly" => cron("0 * * * *")?,
                _ => match descriptor.strip_prefix("every ") {
                    Some(duration) => Kind::Every(every(duration)?),
                    None => return Err(format!("unrecognized descriptor: {spec}")),
                },
            };
            return Ok(Schedule { kind, zone });
        }
        let fields: Vec<&str> = spec.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            ));
        }
        let normalized = [MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK]
            .iter()
            .zip(&fields)
            .map(|(field, text)| normalize_field(text, field))
            .collect::<Result<Vec<String>, String>>()?;
        Ok(Schedule {
            kind: cron(&normalized.join(" "))?,
            zone,
        })
    }

    /// The first time the schedule fires strictly after `after` (at whole seconds, as
    /// `robfig/cron`'s `Next`); `None` if it never fires again (`59 23 31 2 *`).
    pub(crate) fn next(&self, after: Timestamp) -> Option<Timestamp> {
        let after = time::whole_seconds(after);
        match &self.kind {
            Kind::Every(delay) => after.checked_add(*delay).ok(),
            Kind::Cron(cron) => cron
                .find_next_occurrence(&to_chrono(after)?.with_timezone(&self.zone), false)
                .ok()
                .and_then(|next| from_chrono(next.with_timezone(&Utc))),
        }
    }
}

/// A whole-second time as chrono's (croner's and chrono-tz's type).
fn to_chrono(at: Timestamp) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(at.as_second(), 0)
}

/// chrono's time as jiff's; `None` outside jiff's range (the years -9999 to 9999).
fn from_chrono(at: DateTime<Utc>) -> Option<Timestamp> {
    let nanos = i32::try_from(at.timestamp_subsec_nanos()).ok()?;
    Timestamp::new(at.timestamp(), nanos).ok()
}

/// `at` in `zone` as RFC 3339 with seconds (`2024-03-01T11:30:00+01:00`; `Z` for UTC), as
/// upstream writes the `batch.kubernetes.io/cronjob-scheduled-timestamp` annotation.
pub(crate) fn rfc3339_in(at: Timestamp, zone: Tz) -> String {
    match to_chrono(time::whole_seconds(at)) {
        Some(at) => at
            .with_timezone(&zone)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        None => time::rfc3339_of(at),
    }
}

fn cron(pattern: &str) -> Result<Kind, String> {
    Cron::from_str(pattern)
        .map(|cron| Kind::Cron(Box::new(cron)))
        .map_err(|err| err.to_string())
}

/// `@every`'s Go duration (`1h30m`, `90s`, `1.5h`): rounded down to whole seconds, at least
/// one second.
fn every(text: &str) -> Result<SignedDuration, String> {
    let invalid =
        || format!("failed to parse duration @every {text}: time: invalid duration \"{text}\"");
    let mut rest = text.trim();
    if rest == "0" {
        return Ok(SignedDuration::from_secs(1));
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let (number, tail) = rest.split_at(number_len);
        let value: f64 = number.parse().map_err(|_| invalid())?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(invalid()),
        };
        nanos += value * scale;
        rest = tail;
    }
    // Whole seconds, at least one (robfig's `Every`): truncating the float is the point.
    let seconds = (nanos / 1e9).floor() as i64;
    Ok(SignedDuration::from_secs(seconds.max(1)))
}

/// One field checked against `robfig/cron`'s grammar (`*`, `?`, `a`, `a-b`, each with an
/// optional `/step`, comma-separated; names for months and weekdays), rewritten with
/// numbers only for `croner`. A field with a `*` or `?` term is `*` (all values, and a
/// "star" day field, as `robfig/cron` marks it for the day-of-month/day-of-week rule).
fn normalize_field(text: &str, field: &Field) -> Result<String, String> {
    let mut terms = Vec::new();
    for term in text.split(',') {
        let (range, step) = match term.split_once('/') {
            Some((range, step)) => {
                if step.contains('/') {
                    return Err(format!("too many slashes: {term}"));
                }
                let step: u32 = step
                    .parse()
                    .map_err(|_| format!("failed to parse int from {step}"))?;
                if step == 0 {
                    return Err(format!("step of range should be a positive number: {term}"));
                }
                (range, Some(step))
            }
            None => (term, None),
        };
        let (start, end, star) = if range == "*" || range == "?" {
            (field.min, field.max, step.unwrap_or(1) == 1)
        } else {
            let (low, high) = match range.split_once('-') {
                Some((low, high)) => {
                    if high.contains('-') {
                        return Err(format!("too many hyphens: {term}"));
                    }
                    (low, Some(high))
                }
                None => (range, None),
            };
            let start = value(low, field)?;
            let end = match high {
                Some(high) => value(high, field)?,
                // "N/step" means "N-max/step".
                None if step.is_some() => field.max,
                None => start,
            };
            (start, end, false)
        };
        if start < field.min {
            return Err(format!(
                "beginning of range ({start}) below minimum ({}): {term}",
                field.min
            ));
        }
        if end > field.max {
            return Err(format!(
                "end of range ({end}) above maximum ({}): {term}",
                field.max
            ));
        }
        if start > end {
            return Err(format!(
                "beginning of range ({start}) beyond end of range ({end}): {term}"
            ));
        }
        if star {
            return Ok("*".to_owned());
        }
        terms.push(match step {
            Some(step) => format!("{start}-{end}/{step}"),
            None if start == end => start.to_string(),
            None => format!("{start}-{end}"),
        });
    }
    Ok(terms.join(","))
}

/// A number, or a name of `field` (any case).
fn value(text: &str, field: &Field) -> Result<u32, String> {
    if let Some(index) = field
        .names
        .iter()
        .position(|name| !name.is_empty() && name.eq_ignore_ascii_case(text))
    {
        return u32::try_from(index).map_err(|_| format!("failed to parse int from {text}"));
    }
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("failed to parse int from {text}"));
    }
    text.parse()
        .map_err(|_| format!("failed to parse int from {text}"))
}

/// How many start times were missed since the earliest time that counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missed {
    /// None: the schedule has not fired since.
    None,
    /// One to [`TOO_MANY_MISSED`].
    Few,
    /// More than [`TOO_MANY_MISSED`] (an estimate, as upstream's).
    Many,
}

/// What `most_recent` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recent {
    /// The time the search started from: the last schedule time, else the creation time
    /// (or the starting deadline, when later and asked for).
    pub(crate) earliest: Timestamp,
    /// The most recent time the schedule fired at or before now, after `earliest`.
    pub(crate) most_recent: Option<Timestamp>,
    /// How many times it fired since `earliest`.
    pub(crate) missed: Missed,
}

/// The CronJob facts the arithmetic needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Times {
    /// `metadata.creationTimestamp`.
    pub(crate) created: Timestamp,
    /// `status.lastScheduleTime`.
    pub(crate) last_schedule: Option<Timestamp>,
    /// `spec.startingDeadlineSeconds`.
    pub(crate) starting_deadline: Option<i64>,
}

/// Upstream's `mostRecentScheduleTime`: the most recent time `schedule` fired in
/// (`earliest`, `now`], found by estimating the number of missed times from the first
/// interval and searching only from one interval before the estimate (so a CronJob idle for
/// years costs two hundred steps, not millions). Errs when two consecutive times are less
/// than a second apart (a schedule that never fires).
pub(crate) fn most_recent(
    schedule: &Schedule,
    times: &Times,
    now: Timestamp,
    with_deadline: bool,
) -> Result<Recent, String> {
    let mut earliest = times.last_schedule.unwrap_or(times.created);
    if with_deadline {
        if let Some(seconds) = times.starting_deadline {
            let deadline = time::shift_seconds(now, seconds.saturating_neg());
            earliest = earliest.max(deadline);
        }
    }
    let never = || "time difference between two schedules is less than 1 second".to_owned();
    let none = Recent {
        earliest,
        most_recent: None,
        missed: Missed::None,
    };
    let t1 = schedule.next(earliest).ok_or_else(never)?;
    if now < t1 {
        return Ok(none);
    }
    let t2 = schedule.next(t1).ok_or_else(never)?;
    if now < t2 {
        return Ok(Recent {
            most_recent: Some(t1),
            ..none
        });
    }
    // Go's `Duration.Round(time.Second)`: halves away from zero.
    let interval = (t2.duration_since(t1).as_millis() + 500).div_euclid(1000);
    let interval = i64::try_from(interval).unwrap_or(i64::MAX);
    if interval < 1 {
        return Err(never());
    }
    let elapsed = now.duration_since(t1).as_secs();
    let missed = elapsed / interval + 1;
    // One interval before the estimate, so that irregular schedules (`30 6-16/4 * * 1-5`)
    // are searched from early enough.
    let from = time::shift_seconds(t1, (missed - 2).saturating_mul(interval));
    let mut most_recent = None;
    let mut next = schedule.next(from);
    while let Some(t) = next.filter(|t| *t <= now) {
        most_recent = Some(t);
        next = schedule.next(t);
    }
    Ok(Recent {
        earliest,
        most_recent,
        missed: if missed > TOO_MANY_MISSED {
            Missed::Many
        } else {
            Missed::Few
        },
    })
}

/// Upstream's `nextScheduleTime`: the scheduled time to act on now (within the starting
/// deadline), if any, and how many were missed.
pub(crate) fn next_schedule_time(
    schedule: &Schedule,
    times: &Times,
    now: Timestamp,
) -> Result<(Option<Timestamp>, Missed), String> {
    let recent = most_recent(schedule, times, now, true)?;
    Ok((recent.most_recent.filter(|t| *t <= now), recent.missed))
}

/// Upstream's `nextScheduleTimeDuration`: how long until the sync after the next scheduled
/// time (plus [`NEXT_SCHEDULE_DELTA`]); `None` if the schedule never fires again.
pub(crate) fn requeue_after(
    schedule: &Schedule,
    times: &Times,
    now: Timestamp,
) -> Option<Duration> {
    let from = match most_recent(schedule, times, now, false) {
        Err(_) => now,
        Ok(Recent {
            most_recent: Some(t),
            ..
        }) => t,
        Ok(Recent {
            earliest,
            missed: Missed::None,
            ..
        }) => earliest,
        Ok(_) => now,
    };
    let next = schedule.next(from)?;
    Some(time::until(now, time::shift_std(next, NEXT_SCHEDULE_DELTA)))
}

/// Whether `scheduled` is past `spec.startingDeadlineSeconds` at `now`.
pub(crate) fn too_late(
    scheduled: Timestamp,
    starting_deadline: Option<i64>,
    now: Timestamp,
) -> bool {
    starting_deadline.is_some_and(|seconds| time::shift_seconds(scheduled, seconds) < now)
}

/// The name of the Job for `scheduled` (upstream `getJobName`): the CronJob's name and the
/// scheduled time in minutes since the epoch (a CronJob fires at most once a minute, so the
/// name is a lock against creating one run twice).
pub(crate) fn job_name(cron_job: &str, scheduled: Timestamp) -> String {
    format!("{cron_job}-{}", scheduled.as_second().div_euclid(60))
}

#[cfg(test)]
mod tests {

    use super::*;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Timestamp {
        use chrono::TimeZone;
        from_chrono(Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()).expect("in range")
    }

    fn parse(spec: &str) -> Schedule {
        Schedule::parse(spec).unwrap_or_else(|err| panic!("{spec}: {err}"))
    }

    fn times(created: Timestamp) -> Times {
        Times {
            created,
            last_schedule: None,
            starting_deadline: None,
        }
    }

    #[test]
    fn the_next_time_is_strictly_after_and_on_whole_seconds() {
        let every_five = parse("*/5 * * * *");
        assert_eq!(
            every_five.next(at(2024, 3, 1, 10, 2, 30)),
            Some(at(2024, 3, 1, 10, 5, 0))
        );
        assert_eq!(
            every_five.next(at(2024, 3, 1, 10, 5, 0)),
            Some(at(2024, 3, 1, 10, 10, 0)),
            "strictly after"
        );
        let half_past = at(2024, 3, 1, 10, 4, 59) + SignedDuration::from_millis(500);
        assert_eq!(every_five.next(half_past), Some(at(2024, 3, 1, 10, 5, 0)));
        assert_eq!(
            parse("30 6-16/4 * * 1-5").next(at(2024, 3, 1, 15, 0, 0)),
            Some(at(2024, 3, 4, 6, 30, 0)),
            "Friday 14:30 was the last; Monday 06:30 is next"
        );
    }

    #[test]
    fn descriptors_and_names_are_those_of_robfig_cron() {
        let from = at(2024, 3, 13, 10, 0, 0); // a Wednesday
        for (spec, next) in [
            ("@yearly", at(2025, 1, 1, 0, 0, 0)),
            ("@annually", at(2025, 1, 1, 0, 0, 0)),
            ("@monthly", at(2024, 4, 1, 0, 0, 0)),
            ("@weekly", at(2024, 3, 17, 0, 0, 0)),
            ("@daily", at(2024, 3, 14, 0, 0, 0)),
            ("@midnight", at(2024, 3, 14, 0, 0, 0)),
            ("@hourly", at(2024, 3, 13, 11, 0, 0)),
            ("@every 90m", at(2024, 3, 13, 11, 30, 0)),
            ("@every 1h30m", at(2024, 3, 13, 11, 30, 0)),
            ("0 0 1 JAN *", at(2025, 1, 1, 0, 0, 0)),
            ("0 12 * * mon-fri", at(2024, 3, 13, 12, 0, 0)),
            ("0 12 * * SAT", at(2024, 3, 16, 12, 0, 0)),
            ("5/20 * * * *", at(2024, 3, 13, 10, 5, 0)),
            ("0 0 ? * 0", at(2024, 3, 17, 0, 0, 0)),
        ] {
            assert_eq!(parse(spec).next(from), Some(next), "{spec}");
        }
    }

    #[test]
    fn day_of_month_and_day_of_week_match_either_unless_one_is_a_star() {
        // The 1st or any Sunday (robfig/cron and Vixie cron).
        let either = parse("0 0 1 * 0");
        assert_eq!(
            either.next(at(2024, 3, 13, 0, 0, 0)),
            Some(at(2024, 3, 17, 0, 0, 0))
        );
        assert_eq!(
            either.next(at(2024, 3, 31, 0, 0, 0)),
            Some(at(2024, 4, 1, 0, 0, 0))
        );
        // `?` is a star: only the 15th.
        assert_eq!(
            parse("0 0 15 * ?").next(at(2024, 3, 13, 0, 0, 0)),
            Some(at(2024, 3, 15, 0, 0, 0))
        );
    }

    #[test]
    fn what_robfig_cron_rejects_is_rejected_in_its_words() {
        for (spec, error) in [
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("0 * * * * *", "expected exactly 5 fields, found 6"),
            ("@fortnightly", "unrecognized descriptor: @fortnightly"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            ("* * * * 7", "end of range (7) above maximum (6): 7"),
            ("* * L * *", "failed to parse int from L"),
            ("* * * * 5#2", "failed to parse int from 5#2"),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            (
                "5-2 * * * *",
                "beginning of range (5) beyond end of range (2): 5-2",
            ),
            (
                "TZ=Mars/Olympus * * * * *",
                "provided bad location Mars/Olympus",
            ),
            ("", "empty spec string"),
        ] {
            let err = Schedule::parse(spec).expect_err(spec);
            assert!(err.contains(error), "{spec}: {err}");
        }
    }

    #[test]
    fn a_time_zone_shifts_the_schedule_and_follows_daylight_saving() {
        // 09:00 in Tokyo (UTC+9, no daylight saving) is midnight UTC.
        let tokyo = parse(&with_time_zone("0 9 * * *", Some("Asia/Tokyo")));
        assert_eq!(
            tokyo.next(at(2024, 3, 13, 10, 0, 0)),
            Some(at(2024, 3, 14, 0, 0, 0))
        );
        // Hourly in Kolkata (UTC+5:30) is at half past, UTC.
        let kolkata = parse("CRON_TZ=Asia/Kolkata 0 * * * *");
        assert_eq!(
            kolkata.next(at(2024, 3, 13, 10, 0, 0)),
            Some(at(2024, 3, 13, 10, 30, 0))
        );
        // 08:00 in New York: 13:00 UTC in winter, 12:00 UTC after 10 March 2024.
        let new_york = parse(&with_time_zone("0 8 * * *", Some("America/New_York")));
        assert_eq!(
            new_york.next(at(2024, 3, 8, 14, 0, 0)),
            Some(at(2024, 3, 9, 13, 0, 0))
        );
        assert_eq!(
            new_york.next(at(2024, 3, 9, 14, 0, 0)),
            Some(at(2024, 3, 10, 12, 0, 0))
        );
        // A zone in the schedule wins; an unknown `spec.timeZone` is left out.
        assert_eq!(
            with_time_zone("TZ=UTC 0 8 * * *", Some("Asia/Tokyo")),
            "TZ=UTC 0 8 * * *"
        );
        assert_eq!(
            with_time_zone("0 8 * * *", Some("Nowhere/Else")),
            "0 8 * * *"
        );
        assert_eq!(
            load_location("Nowhere/Else"),
            Err("unknown time zone Nowhere/Else".to_owned())
        );
    }

    #[test]
    fn nothing_is_due_before_the_first_time_after_creation() {
        let schedule = parse("*/5 * * * *");
        let created = at(2024, 3, 1, 10, 2, 0);
        let (due, missed) =
            next_schedule_time(&schedule, &times(created), at(2024, 3, 1, 10, 4, 59))
                .expect("valid");
        assert_eq!((due, missed), (None, Missed::None));
        let (due, _) = next_schedule_time(&schedule, &times(created), at(2024, 3, 1, 10, 5, 0))
            .expect("valid");
        assert_eq!(due, Some(at(2024, 3, 1, 10, 5, 0)), "due exactly on time");
    }

    #[test]
    fn the_most_recent_missed_time_is_due_and_the_misses_are_counted() {
        let schedule = parse("*/5 * * * *");
        let created = at(2024, 3, 1, 10, 2, 0);
        let now = at(2024, 3, 1, 10, 27, 0);
        let recent = most_recent(&schedule, &times(created), now, true).expect("valid");
        assert_eq!(recent.most_recent, Some(at(2024, 3, 1, 10, 25, 0)));
        assert_eq!(recent.missed, Missed::Few, "10:05 .. 10:25: five");
        // After the last schedule time, only later times count.
        let after_last = Times {
            last_schedule: Some(at(2024, 3, 1, 10, 25, 0)),
            ..times(created)
        };
        assert_eq!(
            next_schedule_time(&schedule, &after_last, now).expect("valid"),
            (None, Missed::None)
        );
    }

    #[test]
    fn more_than_a_hundred_missed_times_are_too_many_but_the_latest_is_still_due() {
        let schedule = parse("* * * * *");
        let created = at(2024, 3, 1, 10, 0, 30);
        let hundred = at(2024, 3, 1, 11, 41, 0); // 10:01 .. 11:41: 101 times
        let (due, missed) = next_schedule_time(&schedule, &times(created), hundred).expect("valid");
        assert_eq!((due, missed), (Some(hundred), Missed::Many));
        let (due, missed) =
            next_schedule_time(&schedule, &times(created), at(2024, 3, 1, 11, 40, 59))
                .expect("valid");
        assert_eq!(
            (due, missed),
            (Some(at(2024, 3, 1, 11, 40, 0)), Missed::Few),
            "100 missed are not too many"
        );
        // Years of misses cost an estimate, not a walk.
        let (due, missed) =
            next_schedule_time(&schedule, &times(created), at(2034, 3, 1, 10, 0, 10))
                .expect("valid");
        assert_eq!(
            (due, missed),
            (Some(at(2034, 3, 1, 10, 0, 0)), Missed::Many)
        );
    }

    #[test]
    fn the_starting_deadline_drops_older_times() {
        let schedule = parse("*/5 * * * *");
        let with_deadline = Times {
            starting_deadline: Some(60),
            ..times(at(2024, 3, 1, 10, 2, 0))
        };
        // 10:05 is more than 60 s ago at 10:06:30: not due any more.
        assert_eq!(
            next_schedule_time(&schedule, &with_deadline, at(2024, 3, 1, 10, 6, 30))
                .expect("valid")
                .0,
            None
        );
        // Within the deadline it is.
        assert_eq!(
            next_schedule_time(&schedule, &with_deadline, at(2024, 3, 1, 10, 5, 50))
                .expect("valid")
                .0,
            Some(at(2024, 3, 1, 10, 5, 0))
        );
        assert!(too_late(
            at(2024, 3, 1, 10, 5, 0),
            Some(60),
            at(2024, 3, 1, 10, 6, 1)
        ));
        assert!(!too_late(
            at(2024, 3, 1, 10, 5, 0),
            Some(60),
            at(2024, 3, 1, 10, 6, 0)
        ));
        assert!(!too_late(
            at(2024, 3, 1, 10, 5, 0),
            None,
            at(2034, 1, 1, 0, 0, 0)
        ));
    }

    #[test]
    fn a_schedule_that_never_fires_is_invalid() {
        let never = parse("59 23 31 2 *");
        assert_eq!(
            most_recent(
                &never,
                &times(at(2024, 3, 1, 0, 0, 0)),
                at(2024, 3, 2, 0, 0, 0),
                true
            ),
            Err("time difference between two schedules is less than 1 second".to_owned())
        );
        assert_eq!(
            requeue_after(
                &never,
                &times(at(2024, 3, 1, 0, 0, 0)),
                at(2024, 3, 2, 0, 0, 0)
            ),
            None
        );
    }

    #[test]
    fn the_requeue_lands_just_after_the_next_time() {
        let schedule = parse("*/5 * * * *");
        let created = at(2024, 3, 1, 10, 2, 0);
        let delta = NEXT_SCHEDULE_DELTA;
        // Before the first time: from creation.
        assert_eq!(
            requeue_after(&schedule, &times(created), at(2024, 3, 1, 10, 3, 0)),
            Some(Duration::from_secs(120) + delta)
        );
        // After a scheduled time: the one after it.
        let scheduled = Times {
            last_schedule: Some(at(2024, 3, 1, 10, 5, 0)),
            ..times(created)
        };
        assert_eq!(
            requeue_after(&schedule, &scheduled, at(2024, 3, 1, 10, 5, 1)),
            Some(Duration::from_secs(299) + delta)
        );
        // Missed times (say, suspended): the next one from now.
        assert_eq!(
            requeue_after(&schedule, &times(created), at(2024, 3, 1, 10, 31, 0)),
            Some(Duration::from_secs(240) + delta)
        );
    }

    #[test]
    fn jobs_are_named_for_the_scheduled_minute() {
        assert_eq!(
            job_name("backup", at(2024, 3, 1, 10, 5, 0)),
            format!("backup-{}", at(2024, 3, 1, 10, 5, 0).as_second() / 60)
        );
        assert_eq!(job_name("b", at(1970, 1, 1, 0, 5, 0)), "b-5");
    }
}
