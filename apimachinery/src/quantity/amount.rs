//! The int64 fast path of a quantity: a value and a base-10 scale, with upstream's overflow
//! rules (`staging/src/k8s.io/apimachinery/pkg/api/resource/amount.go` and `math.go`).
//!
//! Almost every quantity in a cluster (`100m`, `1Gi`, `2`) is held here, so parsing and
//! formatting one allocates nothing. Each operation reports when it would overflow, and the
//! caller then redoes it in arbitrary precision ([`super::dec::Dec`]), as upstream falls back
//! to `inf.Dec`. Scales are Go `int32`s and their differences wrap as Go's do: a quantity
//! whose exponent is near `±2^31` behaves as upstream's does, however odd that is.

use std::cmp::Ordering;

use super::dec::Dec;

/// The most decimal digits an `i64` holds whole (upstream's `maxInt64Factors`): a number with
/// at most this many digits always fits.
pub(super) const MAX_INT64_FACTORS: i64 = 18;

/// A value `value * 10^scale` held in 64 bits (upstream's `int64Amount`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Int64Amount {
    pub(super) value: i64,
    pub(super) scale: i32,
}

/// `a + b`, or `None` on overflow (upstream's `int64Add`).
pub(super) fn int64_add(a: i64, b: i64) -> Option<i64> {
    a.checked_add(b)
}

/// `a * b` and whether it did not overflow; on overflow the product is Go's wrapped one, or 0
/// when a factor is `i64::MIN` (upstream's `int64Multiply`, whose callers ignore the value then).
pub(super) fn int64_multiply(a: i64, b: i64) -> (i64, bool) {
    if a == 0 || b == 0 || a == 1 || b == 1 {
        return (a.wrapping_mul(b), true);
    }
    if a == i64::MIN || b == i64::MIN {
        return (0, false);
    }
    let c = a.wrapping_mul(b);
    (c, c.wrapping_div(b) == a)
}

/// `a * b` for a factor `b > 1` (upstream's `int64MultiplyScale`, and its `...Scale10`,
/// `...Scale100`, `...Scale1000` specialisations, which behave the same).
pub(super) fn int64_multiply_scale(a: i64, b: i64) -> (i64, bool) {
    if a == 0 || a == 1 {
        return (a.wrapping_mul(b), true);
    }
    if a == i64::MIN && b != 1 {
        return (0, false);
    }
    let c = a.wrapping_mul(b);
    (c, c.wrapping_div(b) == a)
}

/// `base * 10^scale` and whether it did not overflow (upstream's `positiveScaleInt64`). On
/// overflow the scales upstream special-cases (1, 2, 3, 6, 9) give Go's wrapped product and the
/// others 0; `ScaledValue` returns that value as it is. A negative scale leaves `base` as it is,
/// as upstream's loop does.
pub(super) fn positive_scale_int64(base: i64, scale: i32) -> (i64, bool) {
    match scale {
        0 => (base, true),
        1 => int64_multiply_scale(base, 10),
        2 => int64_multiply_scale(base, 100),
        3 => int64_multiply_scale(base, 1000),
        6 => int64_multiply_scale(base, 1_000_000),
        9 => int64_multiply_scale(base, 1_000_000_000),
        _ => {
            let mut value = base;
            for _ in 0..scale.max(0) {
                // Zero stays zero however long the loop: stop early rather than spin 2^31 times.
                if value == 0 {
                    return (0, true);
                }
                match int64_multiply_scale(value, 10) {
                    (v, true) => value = v,
                    (_, false) => return (0, false),
                }
            }
            (value, true)
        }
    }
}

/// [`positive_scale_int64`] when only success matters.
fn checked_positive_scale(base: i64, scale: i32) -> Option<i64> {
    match positive_scale_int64(base, scale) {
        (v, true) => Some(v),
        (_, false) => None,
    }
}

/// `base / 10^scale` rounded away from zero, and whether that was exact (upstream's
/// `negativeScaleInt64`; a negative scale leaves `base` as it is).
pub(super) fn negative_scale_int64(base: i64, scale: i32) -> (i64, bool) {
    if scale == 0 {
        return (base, true);
    }
    let mut value = base;
    let mut fraction = false;
    for _ in 0..scale.max(0) {
        if !fraction && value % 10 != 0 {
            fraction = true;
        }
        value /= 10;
        if value == 0 {
            if fraction {
                return (if base > 0 { 1 } else { -1 }, false);
            }
            return (0, true);
        }
    }
    if fraction {
        if base > 0 {
            value += 1;
        } else {
            value -= 1;
        }
    }
    (value, !fraction)
}

/// `value` with every factor `base` moved out: `value == result * base^times`, the sign kept
/// (upstream's `removeInt64Factors`).
pub(super) fn remove_int64_factors(value: i64, base: i64) -> (i64, i32) {
    let mut times = 0i32;
    let negative = value < 0;
    let mut result = if negative {
        value.wrapping_neg()
    } else {
        value
    };
    while result >= base && result % base == 0 {
        times += 1;
        result /= base;
    }
    if negative {
        result = result.wrapping_neg();
    }
    (result, times)
}

impl Int64Amount {
    pub(super) fn sign(self) -> i32 {
        self.value.signum() as i32
    }

    /// The value as an `i64` at scale 0, when that is exact and fits (upstream's `AsInt64`:
    /// a negative scale is refused outright, even for `1000m`).
    pub(super) fn as_int64(self) -> Option<i64> {
        match self.scale.cmp(&0) {
            Ordering::Equal => Some(self.value),
            Ordering::Less => None,
            Ordering::Greater => checked_positive_scale(self.value, self.scale),
        }
    }

    /// The value at `scale`, rounded away from zero, and whether it fitted (upstream's
    /// `AsScaledInt64`; on overflow the value is what [`positive_scale_int64`] leaves).
    pub(super) fn as_scaled_int64(self, scale: i32) -> (i64, bool) {
        if self.scale < scale {
            let (result, _) = negative_scale_int64(self.value, scale.wrapping_sub(self.scale));
            return (result, true);
        }
        positive_scale_int64(self.value, self.scale.wrapping_sub(scale))
    }

    pub(super) fn as_dec(self) -> Dec {
        Dec::from_i64(self.value, i64::from(self.scale.wrapping_neg()))
    }

    /// Compares by value. Upstream's version divides by a power of ten and falls back to
    /// `inf.Dec`; it divides by zero (a Go panic) when the scales are more than 2^31 apart.
    /// This one is exact for every pair.
    pub(super) fn cmp_value(self, other: Int64Amount) -> Ordering {
        if self.scale == other.scale {
            return self.value.cmp(&other.value);
        }
        let gap = i64::from(self.scale) - i64::from(other.scale);
        if gap.unsigned_abs() <= MAX_INT64_FACTORS as u64 {
            // |value| < 2^63 and 10^18 < 2^60: both sides fit in an i128.
            let factor = 10i128.pow(gap.unsigned_abs() as u32);
            let (a, b) = if gap > 0 {
                (i128::from(self.value) * factor, i128::from(other.value))
            } else {
                (i128::from(self.value), i128::from(other.value) * factor)
            };
            return a.cmp(&b);
        }
        self.as_dec().cmp_value(&other.as_dec())
    }

    /// Adds `b` in place; `false` (and `self` unchanged) on overflow (upstream's `Add`).
    pub(super) fn add(&mut self, b: Int64Amount) -> bool {
        if b.value == 0 {
            return true;
        }
        if self.value == 0 {
            *self = b;
            return true;
        }
        match self.scale.cmp(&b.scale) {
            Ordering::Equal => match int64_add(self.value, b.value) {
                Some(c) => self.value = c,
                None => return false,
            },
            Ordering::Greater => {
                let Some(c) = checked_positive_scale(self.value, self.scale.wrapping_sub(b.scale))
                    .and_then(|c| int64_add(c, b.value))
                else {
                    return false;
                };
                self.scale = b.scale;
                self.value = c;
            }
            Ordering::Less => {
                let Some(c) = checked_positive_scale(b.value, b.scale.wrapping_sub(self.scale))
                    .and_then(|c| int64_add(self.value, c))
                else {
                    return false;
                };
                self.value = c;
            }
        }
        true
    }

    /// Subtracts `b` in place (upstream's `Sub`: it adds `-b.value`, which wraps for
    /// `i64::MIN` as Go's negation does).
    pub(super) fn sub(&mut self, b: Int64Amount) -> bool {
        self.add(Int64Amount {
            value: b.value.wrapping_neg(),
            scale: b.scale,
        })
    }

    /// Multiplies by `b` in place; `false` (and `self` unchanged) when the product overflows
    /// or, at a negative scale, is not a whole number of that scale (upstream's `Mul`).
    pub(super) fn mul(&mut self, b: i64) -> bool {
        if self.value == 0 {
            return true;
        }
        if b == 0 {
            *self = Int64Amount::default();
            return true;
        }
        let (c, ok) = int64_multiply(self.value, b);
        if !ok {
            return false;
        }
        match self.scale.cmp(&0) {
            Ordering::Equal => {}
            Ordering::Greater => {
                if !positive_scale_int64(c, self.scale).1 {
                    return false;
                }
            }
            Ordering::Less => {
                if !negative_scale_int64(c, self.scale.wrapping_neg()).1 {
                    return false;
                }
            }
        }
        self.value = c;
        true
    }

    /// The value at a scale of at least `scale`, rounded away from zero, and whether nothing
    /// was lost (upstream's `AsScale`).
    pub(super) fn as_scale(self, scale: i32) -> (Int64Amount, bool) {
        if self.scale >= scale {
            return (self, true);
        }
        let (value, exact) = negative_scale_int64(self.value, scale.wrapping_sub(self.scale));
        (Int64Amount { value, scale }, exact)
    }

    /// The mantissa and base-10 exponent of the canonical form, the exponent a multiple of 3
    /// (upstream's `AsCanonicalBytes`); `None` when the mantissa no longer fits, and the caller
    /// uses the arbitrary-precision form.
    pub(super) fn as_canonical(self) -> Option<(i64, i32)> {
        let (amount, times) = remove_int64_factors(self.value, 10);
        let exponent = self.scale.wrapping_add(times);
        let (factor, down) = match exponent % 3 {
            1 | -2 => (10, 1),
            2 | -1 => (100, 2),
            _ => return Some((amount, exponent)),
        };
        match int64_multiply_scale(amount, factor) {
            (v, true) => Some((v, exponent.wrapping_sub(down))),
            (_, false) => None,
        }
    }

    /// The mantissa and base-1024 exponent of the value rounded up to a whole number
    /// (upstream's `AsCanonicalBase1024Bytes`); `None` when that does not fit in an `i64`.
    pub(super) fn as_canonical_base1024(self) -> Option<(i64, i32)> {
        match self.as_scaled_int64(0) {
            (value, true) => Some(remove_int64_factors(value, 1024)),
            (_, false) => None,
        }
    }
}
