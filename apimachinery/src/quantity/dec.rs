//! The arbitrary-precision form of a quantity: what upstream keeps in an `inf.Dec`
//! (`gopkg.in/inf.v0`) when a value leaves the int64 fast path (more than 18 digits, finer
//! than a nano, a fractional binary suffix, an overflowing sum).
//!
//! A [`Dec`] is `unscaled * 10^-scale` (inf's convention: the scale counts fractional digits)
//! over [`num_bigint::BigInt`]. Its operations keep upstream's representation (a parsed value
//! is rounded to scale 9, a sum takes the larger scale), because a few of upstream's results
//! depend on it: the float approximation, `Mul`'s exactness flag, the wrapped results of an
//! overflowing `ScaledValue`.
//!
//! Invariant: no operation materialises more than [`MAX_RESCALE_DIGITS`] new digits. Upstream
//! multiplies by `10^k` for any `k` (a 15-byte quantity such as `1234567890123456789e999999999`
//! asks for a billion-digit number); here a rescale beyond the bound keeps the value at its
//! coarser scale (same value, smaller mantissa), a sum whose operands sit further apart first
//! rounds the finer one away from zero that many digits below the coarser one, and
//! comparisons never align scales further than the mantissas' own length.

use std::cmp::Ordering;

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{One, Signed, ToPrimitive, Zero};

use crate::go::{go_f64_to_i64, go_pow10};

/// The most decimal digits one rescale may append to a mantissa. Values that need more are
/// beyond `10^991`, where upstream itself allocates without bound; 1000 digits keep every
/// operation in microseconds.
pub(super) const MAX_RESCALE_DIGITS: i64 = 1000;

/// The most significant digits (leading and trailing zeros aside) the numeric part of a parsed
/// quantity may have. Upstream has no bound, and converting a number of `n` digits costs
/// `O(n^2)` in Go's `math/big` as in `num-bigint`; ten thousand digits (a 10 kB quantity,
/// about 0.1 ms) is far beyond any real resource amount.
pub(super) const MAX_SIGNIFICANT_DIGITS: usize = 10_000;

/// The scale a parsed arbitrary-precision value is rounded up to: nanos, the smallest unit a
/// quantity represents (upstream's `Nano.infScale()`).
pub(super) const PARSE_ROUNDING_SCALE: i64 = 9;

/// Below this scale a non-zero value was never brought to [`PARSE_ROUNDING_SCALE`]: upstream's
/// mantissa for it is ours times `10^k` with `k > MAX_RESCALE_DIGITS`, so its low 64 bits,
/// which upstream's overflowing results are made of, are zero.
const UNMATERIALISED_BELOW: i64 = PARSE_ROUNDING_SCALE - MAX_RESCALE_DIGITS;

/// log10(2) nudged up and down: safe bounds on a mantissa's decimal length from its bit length.
const LOG10_2_UP: f64 = std::f64::consts::LOG10_2 + 1e-9;
const LOG10_2_DOWN: f64 = std::f64::consts::LOG10_2 - 1e-9;

/// A decimal number `unscaled * 10^-scale` (upstream's `inf.Dec`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Dec {
    pub(super) unscaled: BigInt,
    pub(super) scale: i64,
}

/// `10^k` as a big integer.
fn pow10(k: i64) -> BigInt {
    let k = u32::try_from(k)
        .expect("callers bound the exponent by MAX_RESCALE_DIGITS or a mantissa's length");
    BigInt::from(10u32).pow(k)
}

/// An exponent `e` with `|u| < 10^e` (0 for 0).
fn digits_upper(u: &BigInt) -> i64 {
    if u.is_zero() {
        return 0;
    }
    (u.bits() as f64 * LOG10_2_UP).floor() as i64 + 1
}

/// An exponent `e` with `|u| >= 10^e`, for `u != 0`.
fn digits_lower(u: &BigInt) -> i64 {
    ((u.bits().saturating_sub(1)) as f64 * LOG10_2_DOWN).floor() as i64
}

/// Go's `big.Int.Int64()` on any value: the low 64 bits of the magnitude, negated (wrapping)
/// for a negative number. Upstream's overflowing results come from this.
pub(super) fn go_int64(u: &BigInt) -> i64 {
    let low = u.magnitude().iter_u64_digits().next().unwrap_or(0) as i64;
    if u.sign() == Sign::Minus {
        low.wrapping_neg()
    } else {
        low
    }
}

/// `u` as the nearest `f64` (ties to even), as Go's `big.Float.SetInt(u).Float64()` rounds it.
pub(super) fn big_to_f64(u: &BigInt) -> f64 {
    let magnitude = u.magnitude();
    let bits = magnitude.bits();
    let value = if bits <= 64 {
        magnitude.to_u64().map_or(f64::INFINITY, |v| v as f64)
    } else {
        let shift = bits - 64;
        let top = (magnitude >> shift).to_u64().unwrap_or(u64::MAX);
        // A set low bit stands for every dropped bit, so the one rounding below is correct.
        let sticky = u64::from(magnitude.trailing_zeros().unwrap_or(0) < shift);
        let scale = i32::try_from(shift).map_or(f64::INFINITY, |s| 2f64.powi(s));
        (top | sticky) as f64 * scale
    };
    if u.sign() == Sign::Minus {
        -value
    } else {
        value
    }
}

impl Dec {
    pub(super) fn from_i64(unscaled: i64, scale: i64) -> Dec {
        Dec {
            unscaled: BigInt::from(unscaled),
            scale,
        }
    }

    /// The decimal `[+-]?digits[.digits]` (upstream's `inf.Dec.SetString` on the numeric part of
    /// a quantity): the mantissa with trailing zeros moved into the scale when it is not zero,
    /// the number of fractional digits as written (a Go `int32`), and how many zeros moved.
    /// `None` without a digit, or with more than [`MAX_SIGNIFICANT_DIGITS`] significant ones.
    pub(super) fn parse_decimal(text: &[u8]) -> Option<(BigInt, i32, i64)> {
        let (negative, body) = match text.split_first() {
            Some((b'-', rest)) => (true, rest),
            Some((b'+', rest)) => (false, rest),
            _ => (false, text),
        };
        let (int_part, frac_part) = match body.iter().position(|&c| c == b'.') {
            Some(dot) => (&body[..dot], &body[dot + 1..]),
            None => (body, &body[body.len()..]),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let frac_len = frac_part.len() as i32;
        let mut digits: Vec<u8> = Vec::with_capacity(int_part.len() + frac_part.len());
        digits.extend(int_part.iter().skip_while(|&&c| c == b'0'));
        if digits.is_empty() {
            digits.extend(frac_part.iter().skip_while(|&&c| c == b'0'));
        } else {
            digits.extend_from_slice(frac_part);
        }
        let significant_end = digits.iter().rposition(|&c| c != b'0').map_or(0, |i| i + 1);
        if significant_end == 0 {
            return Some((BigInt::zero(), frac_len, 0));
        }
        let stripped = (digits.len() - significant_end) as i64;
        digits.truncate(significant_end);
        if digits.len() > MAX_SIGNIFICANT_DIGITS {
            return None;
        }
        let magnitude = BigInt::parse_bytes(&digits, 10)?;
        Some((
            if negative { -magnitude } else { magnitude },
            frac_len,
            stripped,
        ))
    }

    pub(super) fn sign(&self) -> i32 {
        match self.unscaled.sign() {
            Sign::Minus => -1,
            Sign::NoSign => 0,
            Sign::Plus => 1,
        }
    }

    pub(super) fn is_zero(&self) -> bool {
        self.unscaled.is_zero()
    }

    pub(super) fn neg(&mut self) {
        self.unscaled = -std::mem::take(&mut self.unscaled);
    }

    pub(super) fn mul_i64(&mut self, y: i64) {
        self.unscaled *= y;
    }

    /// Whether the mantissa fits in an `i64` (upstream's `UnscaledBig().IsInt64()`).
    pub(super) fn unscaled_fits_i64(&self) -> bool {
        !self.unmaterialised() && self.unscaled.to_i64().is_some()
    }

    /// Whether upstream would hold this value with [`MAX_RESCALE_DIGITS`] more zeros than we do.
    fn unmaterialised(&self) -> bool {
        self.scale < UNMATERIALISED_BELOW && !self.unscaled.is_zero()
    }

    /// Compares by value, exactly, never aligning scales further apart than the longer
    /// mantissa (upstream's `inf.Dec.Cmp` aligns whatever the gap).
    pub(super) fn cmp_value(&self, other: &Dec) -> Ordering {
        let (a, b) = (self.sign(), other.sign());
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        if self.scale == other.scale {
            return self.unscaled.cmp(&other.unscaled);
        }
        // |x| lies in [10^(lo - scale), 10^(hi - scale)).
        let range = |d: &Dec| {
            (
                digits_lower(&d.unscaled) - d.scale,
                digits_upper(&d.unscaled) - d.scale,
            )
        };
        let ((x_lo, x_hi), (y_lo, y_hi)) = (range(self), range(other));
        let magnitude = if x_hi <= y_lo {
            Some(Ordering::Less)
        } else if y_hi <= x_lo {
            Some(Ordering::Greater)
        } else {
            None
        };
        if let Some(order) = magnitude {
            return if a > 0 { order } else { order.reverse() };
        }
        // The ranges overlap, so the scale gap is below the finer mantissa's length.
        let (x, y) = Self::aligned(self, other);
        x.cmp(&y)
    }

    /// Both mantissas at the larger scale.
    fn aligned(x: &Dec, y: &Dec) -> (BigInt, BigInt) {
        match x.scale.cmp(&y.scale) {
            Ordering::Equal => (x.unscaled.clone(), y.unscaled.clone()),
            Ordering::Greater => (x.unscaled.clone(), &y.unscaled * pow10(x.scale - y.scale)),
            Ordering::Less => (&x.unscaled * pow10(y.scale - x.scale), y.unscaled.clone()),
        }
    }

    /// `self + other` at the larger scale (upstream's `inf.Dec.Add`), within the rescale bound.
    pub(super) fn add(&self, other: &Dec) -> Dec {
        let (fine, coarse) = if self.scale >= other.scale {
            (self, other)
        } else {
            (other, self)
        };
        let bounded;
        let fine = if fine.scale - coarse.scale > MAX_RESCALE_DIGITS {
            bounded = fine.round_up(coarse.scale + MAX_RESCALE_DIGITS);
            &bounded
        } else {
            fine
        };
        let (x, y) = Self::aligned(fine, coarse);
        Dec {
            unscaled: x + y,
            scale: fine.scale,
        }
    }

    pub(super) fn sub(&self, other: &Dec) -> Dec {
        let mut negated = other.clone();
        negated.neg();
        self.add(&negated)
    }

    /// The value at `scale`, rounded away from zero (upstream's `Round(x, scale, RoundUp)`):
    /// a finer scale multiplies the mantissa, unless that needs more than
    /// [`MAX_RESCALE_DIGITS`] digits, and then the value is kept as it is (it is exact).
    pub(super) fn round_up(&self, scale: i64) -> Dec {
        if self.unscaled.is_zero() {
            return Dec {
                unscaled: BigInt::zero(),
                scale,
            };
        }
        let shift = scale - self.scale;
        if shift == 0 || shift > MAX_RESCALE_DIGITS {
            return self.clone();
        }
        if shift > 0 {
            return Dec {
                unscaled: &self.unscaled * pow10(shift),
                scale,
            };
        }
        let drop = -shift;
        let away = BigInt::from(self.sign());
        if drop >= digits_upper(&self.unscaled) {
            // |unscaled| < 10^drop: the quotient is 0 and the remainder is not.
            return Dec {
                unscaled: away,
                scale,
            };
        }
        let (mut quotient, remainder) = self.unscaled.div_rem(&pow10(drop));
        if !remainder.is_zero() {
            quotient += away;
        }
        Dec {
            unscaled: quotient,
            scale,
        }
    }

    /// The mantissa and base-10 exponent of the canonical form, the exponent a multiple of 3
    /// (upstream's `infDecAmount.AsCanonicalBytes`).
    pub(super) fn as_canonical(&self) -> (BigInt, i32) {
        let (mut amount, times) = remove_factors_of_ten(&self.unscaled);
        let mut exponent = (self.scale.wrapping_neg() as i32).wrapping_add(times);
        while exponent % 3 != 0 {
            amount *= 10;
            exponent = exponent.wrapping_sub(1);
        }
        (amount, exponent)
    }

    /// The mantissa and base-1024 exponent of the value rounded up to a whole number
    /// (upstream's `infDecAmount.AsCanonicalBase1024Bytes`); `None` when that whole number
    /// would need more than [`MAX_RESCALE_DIGITS`] new digits.
    pub(super) fn as_canonical_base1024(&self) -> Option<(BigInt, i32)> {
        let whole = self.round_up(0);
        if whole.scale != 0 {
            return None;
        }
        let Some(zeros) = whole.unscaled.trailing_zeros() else {
            return Some((whole.unscaled, 0));
        };
        let times = zeros / 10;
        let magnitude = whole.unscaled.magnitude() >> (times * 10);
        let amount = BigInt::from_biguint(whole.unscaled.sign(), magnitude);
        Some((amount, i32::try_from(times).unwrap_or(i32::MAX)))
    }

    /// `ceil(value / 10^scale)` as upstream's `scaledValue` computes it, overflow included:
    /// the low 64 bits of big results, and, on its fast path for a negative value, the
    /// truncated quotient plus one. For a value beyond 10^991 this is 0, as upstream's, for
    /// any scale below 10^900.
    pub(super) fn scaled_value(&self, scale: i32) -> i64 {
        if self.unscaled.is_zero() || self.unmaterialised() {
            return 0;
        }
        let dif = self.scale - i64::from(scale.wrapping_neg());
        match dif.cmp(&0) {
            Ordering::Equal => go_int64(&self.unscaled),
            Ordering::Less => {
                let factor = go_f64_to_i64(go_pow10(dif.saturating_neg()));
                go_int64(&self.unscaled).wrapping_mul(factor)
            }
            Ordering::Greater => {
                /// Upstream's fast path applies below 10^19, the first power of ten past i64.
                const LOG10_MAX_INT64: i64 = 19;
                if self.unscaled < BigInt::from(i64::MAX) && dif < LOG10_MAX_INT64 {
                    let divide = 10i64.pow(dif as u32);
                    let value = go_int64(&self.unscaled);
                    let result = value / divide;
                    return if value % divide != 0 {
                        result + 1
                    } else {
                        result
                    };
                }
                // Euclidean division by a positive divisor: the quotient is the floor.
                let (quotient, remainder) = if dif >= digits_upper(&self.unscaled) {
                    let floor = if self.unscaled.is_negative() {
                        -BigInt::one()
                    } else {
                        BigInt::zero()
                    };
                    (floor, self.unscaled.clone())
                } else {
                    self.unscaled.div_mod_floor(&pow10(dif))
                };
                let result = go_int64(&quotient);
                if remainder.is_zero() {
                    result
                } else {
                    result.wrapping_add(1)
                }
            }
        }
    }

    /// The value as an `f64` the way upstream's `AsApproximateFloat64` computes it: the
    /// mantissa rounded to a float, times Go's `math.Pow10` of the exponent.
    pub(super) fn approximate_f64(&self) -> f64 {
        let base = big_to_f64(&self.unscaled);
        let exponent = self.scale.saturating_neg();
        if exponent == 0 {
            return base;
        }
        base * go_pow10(exponent)
    }
}

/// `u` with every factor of ten moved out: `u == result * 10^times` (upstream's
/// `removeBigIntFactors(u, 10)`), nineteen at a time while the binary trailing zeros allow.
fn remove_factors_of_ten(u: &BigInt) -> (BigInt, i32) {
    const TEN_POW_19: u64 = 10_000_000_000_000_000_000;
    let mut amount = u.clone();
    let mut times = 0i32;
    if amount.is_zero() {
        return (amount, 0);
    }
    let chunk = BigInt::from(TEN_POW_19);
    while amount.trailing_zeros().unwrap_or(0) >= 19 {
        let (quotient, remainder) = amount.div_rem(&chunk);
        if !remainder.is_zero() {
            break;
        }
        amount = quotient;
        times = times.wrapping_add(19);
    }
    let ten = BigInt::from(10u32);
    loop {
        let (quotient, remainder) = amount.div_rem(&ten);
        if !remainder.is_zero() {
            break;
        }
        amount = quotient;
        times = times.wrapping_add(1);
    }
    (amount, times)
}
