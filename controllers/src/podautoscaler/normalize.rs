//! From the metrics' recommendation to the replica count the HorizontalPodAutoscaler
//! controller sets, ported from upstream's `pkg/controller/podautoscaler/horizontal.go`
//! (k8s.io/kubernetes v1.32): the stabilization windows over past recommendations, the
//! `behavior` policies (`Pods` / `Percent` per period, `selectPolicy` Max, Min or Disabled)
//! over past scale events, `minReplicas` / `maxReplicas`, and, for an HPA without `behavior`,
//! the legacy rules (scale-down stabilized over the downscale window; scale-up at most to
//! `max(2 × current, 4)`). Each HPA's history lives in memory, as upstream's does: a restart
//! forgets it. Times are the controller's clock (virtual in tests).

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::autoscaling::v2::{HPAScalingRules, HorizontalPodAutoscalerBehavior};

/// `scaleUpLimitFactor`: without `behavior`, a scale-up at most doubles the replicas...
const SCALE_UP_LIMIT_FACTOR: f64 = 2.0;
/// `scaleUpLimitMinimum`: ...or goes to 4.
const SCALE_UP_LIMIT_MINIMUM: f64 = 4.0;
/// The default scale-up policies (`GenerateHPAScaleUpRules`): 4 pods or 100% per 15 s.
const DEFAULT_SCALE_UP_PODS: i32 = 4;
/// The period of every default policy.
const DEFAULT_POLICY_PERIOD_SECONDS: i32 = 15;
/// The default `Percent` of both directions.
const DEFAULT_PERCENT: i32 = 100;

/// How a direction picks among its policies (`selectPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    /// The policy allowing the largest change (the default).
    Max,
    /// The policy allowing the smallest change.
    Min,
    /// No scaling in this direction.
    Disabled,
}

/// One policy: at most `value` pods or percent per `period_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// `Pods` (true) or `Percent` (false).
    pub pods: bool,
    /// The amount.
    pub value: i32,
    /// The period it is counted over.
    pub period_seconds: i32,
}

/// One direction's rules, defaulted as the API server's `SetDefaults_HorizontalPodAutoscaler`
/// does (`GenerateHPAScaleUpRules`, `GenerateHPAScaleDownRules`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// The stabilization window.
    pub window_seconds: i32,
    /// How the policies combine.
    pub select: Select,
    /// The policies.
    pub policies: Vec<Policy>,
}

/// Both directions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behavior {
    /// Scaling up.
    pub up: Rules,
    /// Scaling down.
    pub down: Rules,
}

impl Behavior {
    /// The defaulted rules of a `behavior` (whatever it leaves out is upstream's default; the
    /// scale-down window defaults to `down_window`, the controller's downscale stabilization
    /// window, as `maybeInitScaleDownStabilizationWindow` does).
    pub fn from_spec(
        spec: &HorizontalPodAutoscalerBehavior,
        down_window: SignedDuration,
    ) -> Behavior {
        let default_up = vec![
            Policy {
                pods: true,
                value: DEFAULT_SCALE_UP_PODS,
                period_seconds: DEFAULT_POLICY_PERIOD_SECONDS,
            },
            Policy {
                pods: false,
                value: DEFAULT_PERCENT,
                period_seconds: DEFAULT_POLICY_PERIOD_SECONDS,
            },
        ];
        let default_down = vec![Policy {
            pods: false,
            value: DEFAULT_PERCENT,
            period_seconds: DEFAULT_POLICY_PERIOD_SECONDS,
        }];
        let down_seconds = i32::try_from(down_window.as_secs()).unwrap_or(i32::MAX);
        Behavior {
            up: rules(spec.scale_up.as_ref(), 0, default_up),
            down: rules(spec.scale_down.as_ref(), down_seconds, default_down),
        }
    }
}

fn rules(spec: Option<&HPAScalingRules>, window: i32, policies: Vec<Policy>) -> Rules {
    let Some(spec) = spec else {
        return Rules {
            window_seconds: window,
            select: Select::Max,
            policies,
        };
    };
    Rules {
        window_seconds: spec.stabilization_window_seconds.unwrap_or(window),
        select: match spec.select_policy.as_deref() {
            Some("Min") => Select::Min,
            Some("Disabled") => Select::Disabled,
            _ => Select::Max,
        },
        policies: match &spec.policies {
            Some(given) => given
                .iter()
                .map(|p| Policy {
                    pods: p.type_ == "Pods",
                    value: p.value,
                    period_seconds: p.period_seconds,
                })
                .collect(),
            None => policies,
        },
    }
}

/// A past recommendation (`timestampedRecommendation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Recommendation {
    replicas: i32,
    at: Timestamp,
}

/// A past scale change (`timestampedScaleEvent`); `outdated` ones are reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ScaleEvent {
    change: i32,
    at: Timestamp,
    outdated: bool,
}

/// What the controller remembers of one HPA.
#[derive(Debug, Clone, Default)]
pub struct History {
    recommendations: Vec<Recommendation>,
    up: Vec<ScaleEvent>,
    down: Vec<ScaleEvent>,
}

/// A normalized count, with the `AbleToScale` reason and message when a stabilization window
/// changed the recommendation, and the `ScalingLimited` reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// The count to set.
    pub replicas: i32,
    /// `Some((reason, message))` when stabilized (`ScaleUpStabilized`,
    /// `ScaleDownStabilized`), else `ReadyForNewScale`.
    pub stabilized: Option<(&'static str, &'static str)>,
    /// Whether the rules limited the stabilized recommendation.
    pub limited: bool,
    /// `ScalingLimited`'s reason.
    pub reason: &'static str,
    /// `ScalingLimited`'s message.
    pub message: &'static str,
}

impl History {
    /// `recordInitialRecommendation`: the first sync remembers the current count.
    pub fn record_initial(&mut self, current: i32, now: Timestamp) {
        if self.recommendations.is_empty() {
            self.recommendations.push(Recommendation {
                replicas: current,
                at: now,
            });
        }
    }

    /// `normalizeDesiredReplicas`: an HPA without `behavior`.
    pub fn normalize_legacy(
        &mut self,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
        down_window: SignedDuration,
        now: Timestamp,
    ) -> Normalized {
        let stabilized = self.stabilize_legacy(desired, down_window, now);
        let (replicas, reason, message) = convert_with_rules(current, stabilized, min, max);
        Normalized {
            replicas,
            stabilized: (stabilized != desired).then_some((
                "ScaleDownStabilized",
                "recent recommendations were higher than current one, applying the highest recent recommendation",
            )),
            limited: replicas != stabilized,
            reason,
            message,
        }
    }

    /// `stabilizeRecommendation`: the highest recommendation within the window.
    fn stabilize_legacy(&mut self, desired: i32, window: SignedDuration, now: Timestamp) -> i32 {
        let cutoff = now - window;
        let mut highest = desired;
        let mut old = None;
        for (i, rec) in self.recommendations.iter().enumerate() {
            if rec.at < cutoff {
                old = Some(i);
            } else if rec.replicas > highest {
                highest = rec.replicas;
            }
        }
        self.remember(old, desired, now);
        highest
    }

    fn remember(&mut self, old: Option<usize>, replicas: i32, now: Timestamp) {
        let rec = Recommendation { replicas, at: now };
        match old.and_then(|i| self.recommendations.get_mut(i)) {
            Some(slot) => *slot = rec,
            None => self.recommendations.push(rec),
        }
    }

    /// `normalizeDesiredReplicasWithBehaviors`.
    pub fn normalize(
        &mut self,
        behavior: &Behavior,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
        now: Timestamp,
    ) -> Normalized {
        let (stabilized, reason, message) = self.stabilize(behavior, current, desired, now);
        let (replicas, limit_reason, limit_message) =
            self.convert_with_behavior(behavior, current, stabilized, min, max, now);
        Normalized {
            replicas,
            stabilized: (stabilized != desired).then_some((reason, message)),
            limited: replicas != stabilized,
            reason: limit_reason,
            message: limit_message,
        }
    }

    /// `stabilizeRecommendationWithBehaviors`.
    fn stabilize(
        &mut self,
        behavior: &Behavior,
        current: i32,
        desired: i32,
        now: Timestamp,
    ) -> (i32, &'static str, &'static str) {
        let up_cutoff = now - SignedDuration::from_secs(i64::from(behavior.up.window_seconds));
        let down_cutoff = now - SignedDuration::from_secs(i64::from(behavior.down.window_seconds));
        let (mut up, mut down) = (desired, desired);
        let mut old = None;
        for (i, rec) in self.recommendations.iter().enumerate() {
            if rec.at > up_cutoff {
                up = up.min(rec.replicas);
            }
            if rec.at > down_cutoff {
                down = down.max(rec.replicas);
            }
            if rec.at < up_cutoff && rec.at < down_cutoff {
                old = Some(i);
            }
        }
        let recommendation = current.max(up).min(down);
        self.remember(old, desired, now);
        if desired >= current {
            (
                recommendation,
                "ScaleUpStabilized",
                "recent recommendations were lower than current one, applying the lowest recent recommendation",
            )
        } else {
            (
                recommendation,
                "ScaleDownStabilized",
                "recent recommendations were higher than current one, applying the highest recent recommendation",
            )
        }
    }

    /// `convertDesiredReplicasWithBehaviorRate`.
    fn convert_with_behavior(
        &self,
        behavior: &Behavior,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
        now: Timestamp,
    ) -> (i32, &'static str, &'static str) {
        if desired > current {
            let limit =
                scale_up_limit(current, &self.up, &self.down, &behavior.up, now).max(current);
            let (allowed, reason, message) = if max > limit {
                (
                    limit,
                    "ScaleUpLimit",
                    "the desired replica count is increasing faster than the maximum scale rate",
                )
            } else {
                (
                    max,
                    "TooManyReplicas",
                    "the desired replica count is more than the maximum replica count",
                )
            };
            if desired > allowed {
                return (allowed, reason, message);
            }
        } else if desired < current {
            let limit =
                scale_down_limit(current, &self.up, &self.down, &behavior.down, now).min(current);
            let (allowed, reason, message) = if min < limit {
                (
                    limit,
                    "ScaleDownLimit",
                    "the desired replica count is decreasing faster than the maximum scale rate",
                )
            } else {
                (
                    min,
                    "TooFewReplicas",
                    "the desired replica count is less than the minimum replica count",
                )
            };
            if desired < allowed {
                return (allowed, reason, message);
            }
        }
        (
            desired,
            "DesiredWithinRange",
            "the desired count is within the acceptable range",
        )
    }

    /// `storeScaleEvent`: remembers a change (only with `behavior`), reusing an outdated
    /// slot.
    pub fn store_scale_event(
        &mut self,
        behavior: &Behavior,
        previous: i32,
        new: i32,
        now: Timestamp,
    ) {
        let (events, rules, change) = if new > previous {
            (&mut self.up, &behavior.up, new - previous)
        } else {
            (&mut self.down, &behavior.down, previous - new)
        };
        let longest = rules
            .policies
            .iter()
            .map(|p| p.period_seconds)
            .max()
            .unwrap_or(0);
        let cutoff = now - SignedDuration::from_secs(i64::from(longest));
        let mut old = None;
        for (i, event) in events.iter_mut().enumerate() {
            if event.at < cutoff {
                event.outdated = true;
            }
            if event.outdated {
                old = Some(i);
            }
        }
        let event = ScaleEvent {
            change,
            at: now,
            outdated: false,
        };
        match old.and_then(|i| events.get_mut(i)) {
            Some(slot) => *slot = event,
            None => events.push(event),
        }
    }
}

/// `getReplicasChangePerPeriod`.
fn change_in_period(period_seconds: i32, events: &[ScaleEvent], now: Timestamp) -> i32 {
    let cutoff = now - SignedDuration::from_secs(i64::from(period_seconds));
    events
        .iter()
        .filter(|e| e.at > cutoff)
        .map(|e| e.change)
        .sum()
}

/// `calculateScaleUpLimitWithScalingRules`.
fn scale_up_limit(
    current: i32,
    up: &[ScaleEvent],
    down: &[ScaleEvent],
    rules: &Rules,
    now: Timestamp,
) -> i32 {
    let pick: fn(i32, i32) -> i32 = match rules.select {
        Select::Disabled => return current,
        Select::Min => i32::min,
        Select::Max => i32::max,
    };
    let mut result = if rules.select == Select::Min {
        i32::MAX
    } else {
        i32::MIN
    };
    for policy in &rules.policies {
        let start = current - change_in_period(policy.period_seconds, up, now)
            + change_in_period(policy.period_seconds, down, now);
        let proposed = if policy.pods {
            start.saturating_add(policy.value)
        } else {
            (f64::from(start) * (1.0 + f64::from(policy.value) / 100.0)).ceil() as i32
        };
        result = pick(result, proposed);
    }
    result
}

/// `calculateScaleDownLimitWithBehaviors`.
fn scale_down_limit(
    current: i32,
    up: &[ScaleEvent],
    down: &[ScaleEvent],
    rules: &Rules,
    now: Timestamp,
) -> i32 {
    let pick: fn(i32, i32) -> i32 = match rules.select {
        Select::Disabled => return current,
        Select::Min => i32::max,
        Select::Max => i32::min,
    };
    let mut result = if rules.select == Select::Min {
        i32::MIN
    } else {
        i32::MAX
    };
    for policy in &rules.policies {
        let start = current - change_in_period(policy.period_seconds, up, now)
            + change_in_period(policy.period_seconds, down, now);
        let proposed = if policy.pods {
            start.saturating_sub(policy.value)
        } else {
            (f64::from(start) * (1.0 - f64::from(policy.value) / 100.0)) as i32
        };
        result = pick(result, proposed);
    }
    result
}

/// `convertDesiredReplicasWithRules`: the legacy limits.
pub(super) fn convert_with_rules(
    current: i32,
    desired: i32,
    min: i32,
    max: i32,
) -> (i32, &'static str, &'static str) {
    let scale_up_limit =
        (SCALE_UP_LIMIT_FACTOR * f64::from(current)).max(SCALE_UP_LIMIT_MINIMUM) as i32;
    let (maximum, reason, message) = if max > scale_up_limit {
        (
            scale_up_limit,
            "ScaleUpLimit",
            "the desired replica count is increasing faster than the maximum scale rate",
        )
    } else {
        (
            max,
            "TooManyReplicas",
            "the desired replica count is more than the maximum replica count",
        )
    };
    if desired < min {
        return (
            min,
            "TooFewReplicas",
            "the desired replica count is less than the minimum replica count",
        );
    }
    if desired > maximum {
        return (maximum, reason, message);
    }
    (
        desired,
        "DesiredWithinRange",
        "the desired count is within the acceptable range",
    )
}

#[cfg(test)]
mod tests {
    //! Cases of upstream's `horizontal_test.go` (k8s.io/kubernetes v1.32).

    use super::*;

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).expect("valid")
    }

    /// `generateScalingRules(pods, podsPeriod, percent, percentPeriod, window)`.
    fn generated(pods: i32, pods_period: i32, percent: i32, percent_period: i32) -> Rules {
        let mut policies = Vec::new();
        if pods != 0 {
            policies.push(Policy {
                pods: true,
                value: pods,
                period_seconds: pods_period,
            });
        }
        if percent != 0 {
            policies.push(Policy {
                pods: false,
                value: percent,
                period_seconds: percent_period,
            });
        }
        Rules {
            window_seconds: 0,
            select: Select::Max,
            policies,
        }
    }

    fn defaults() -> Behavior {
        Behavior::from_spec(
            &HorizontalPodAutoscalerBehavior::default(),
            SignedDuration::from_secs(0),
        )
    }

    /// `TestConvertDesiredReplicasWithRules`.
    #[test]
    fn convert_desired_replicas_with_rules() {
        let cases = [
            (5, 7, 3, 8, 7, "DesiredWithinRange"),
            (3, 1, 2, 8, 2, "TooFewReplicas"),
            (1, 0, 0, 10, 0, "DesiredWithinRange"),
            (20, 1000, 1, 10, 10, "TooManyReplicas"),
            (3, 1000, 1, 2000, 6, "ScaleUpLimit"),
        ];
        for (current, desired, min, max, expected, reason) in cases {
            let (got, got_reason, _) = convert_with_rules(current, desired, min, max);
            assert_eq!(
                (got, got_reason),
                (expected, reason),
                "{current} -> {desired}"
            );
        }
    }

    /// `TestCalculateScaleUpLimitWithScalingRules` and
    /// `TestCalculateScaleDownLimitWithBehaviors`: `selectPolicy: Min` of 2 pods and 50%.
    #[test]
    fn min_select_policy_takes_the_smaller_change() {
        let mut rules = generated(2, 60, 50, 60);
        rules.select = Select::Min;
        assert_eq!(scale_up_limit(1, &[], &[], &rules, now()), 2);
        assert_eq!(scale_down_limit(5, &[], &[], &rules, now()), 3);
    }

    /// `TestScalingWithRules` (the cases without past events).
    #[test]
    fn scaling_with_rules() {
        let with = |up: Option<Rules>, down: Option<Rules>| {
            let mut behavior = defaults();
            if let Some(up) = up {
                behavior.up = up;
            }
            if let Some(down) = down {
                behavior.down = down;
            }
            behavior
        };
        // (behavior, min, max, current, desired, expected, reason)
        let cases = [
            (with(None, None), 3, 8, 5, 7, 7, "DesiredWithinRange"),
            (with(None, None), 2, 8, 3, 1, 2, "TooFewReplicas"),
            (with(None, None), 1, 10, 20, 1000, 10, "TooManyReplicas"),
            (
                with(None, None),
                100,
                150,
                100,
                1000,
                150,
                "TooManyReplicas",
            ),
            (
                with(Some(generated(0, 0, 1, 60)), None),
                1,
                2000,
                3,
                1000,
                4,
                "ScaleUpLimit",
            ),
            (
                with(None, Some(generated(20, 60, 0, 0))),
                3,
                2000,
                1000,
                3,
                980,
                "ScaleDownLimit",
            ),
            (with(None, None), 1, 1000, 10, 50, 20, "ScaleUpLimit"),
            (
                with(Some(generated(100, 60, 100, 60)), None),
                1,
                1000,
                10,
                500,
                110,
                "ScaleUpLimit",
            ),
            (
                with(Some(generated(2, 60, 100, 60)), None),
                1,
                1000,
                10,
                500,
                20,
                "ScaleUpLimit",
            ),
        ];
        for (behavior, min, max, current, desired, expected, reason) in cases {
            let mut history = History::default();
            let got = history.normalize(&behavior, current, desired, min, max, now());
            assert_eq!(
                (got.replicas, got.reason),
                (expected, reason),
                "{current} -> {desired} in [{min}, {max}]"
            );
        }
    }

    /// Scale events within a policy's period count against it: after +4 in the last 15 s,
    /// the default 4-pods-or-100% policy allows only up to max(4 + 4, 2 × 4) from the count
    /// the period started at (4): 8, where it is already.
    #[test]
    fn past_scale_events_limit_the_next_step() {
        let behavior = defaults();
        let mut history = History::default();
        history.store_scale_event(&behavior, 4, 8, now() - SignedDuration::from_secs(5));
        let got = history.normalize(&behavior, 8, 30, 1, 100, now());
        assert_eq!((got.replicas, got.reason), (8, "ScaleUpLimit"));
        // 20 s later the event is out of the 15 s period: 8 may double.
        let later = now() + SignedDuration::from_secs(20);
        let got = history.normalize(&behavior, 8, 30, 1, 100, later);
        assert_eq!((got.replicas, got.reason), (16, "ScaleUpLimit"));
    }

    /// The scale-down stabilization window (300 s by default): the highest recommendation of
    /// the window wins until it has passed.
    #[test]
    fn scale_down_waits_for_the_stabilization_window() {
        let behavior = Behavior::from_spec(
            &HorizontalPodAutoscalerBehavior::default(),
            SignedDuration::from_secs(300),
        );
        let mut history = History::default();
        history.record_initial(5, now());
        let got = history.normalize(
            &behavior,
            5,
            2,
            1,
            10,
            now() + SignedDuration::from_secs(60),
        );
        assert_eq!(got.replicas, 5);
        assert_eq!(got.stabilized.map(|s| s.0), Some("ScaleDownStabilized"));
        let got = history.normalize(
            &behavior,
            5,
            2,
            1,
            10,
            now() + SignedDuration::from_secs(400),
        );
        assert_eq!(got.replicas, 2);
        assert_eq!(got.stabilized, None);
    }
}
