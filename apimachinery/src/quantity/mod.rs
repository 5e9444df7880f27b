//! `resource.Quantity`: the fixed-point numbers of resource requests, limits, capacities and
//! quotas (`cpu: 100m`, `memory: 1.5Gi`), as `staging/src/k8s.io/apimachinery/pkg/api/resource`
//! (`quantity.go`, `amount.go`, `math.go`, `suffix.go`, `scale_int.go`) defines them.
//!
//! Why a port and not a simpler parser: the API server stores a quantity in its canonical form
//! (`1.5Gi` is written back as `1536Mi`, `0.1` as `100m`), and clients, controllers and `kubectl`
//! compare what they sent with what they read back; a scheduler compares requests with
//! capacities. Every accepted spelling, every rejected one (with upstream's error text), every
//! canonical string and every comparison must therefore be upstream's.
//!
//! Invariants:
//! - A quantity is never a float. Values that fit are an `i64` and a base-10 scale (no
//!   allocation when parsing or printing them: this runs on every pod write); others are an
//!   arbitrary-precision decimal (`dec.rs`, over `num-bigint`), as upstream switches to `inf.Dec`.
//! - Parsing keeps the input when upstream keeps it (input already canonical, or one of its
//!   near-canonical spellings such as `+1Ki` or `1.k`): `to_string()` then returns it verbatim.
//! - Equality and ordering are by value: `1Gi == 1024Mi`, `1 == 1000m`.
//! - No input costs unbounded time or memory. Where upstream would build numbers of unbounded
//!   size, this crate differs (the only places it does): a numeric part with more than ten
//!   thousand significant digits is refused as `unable to parse numeric part of quantity`;
//!   values beyond 10^991 keep a shorter mantissa than upstream's (same value, comparisons,
//!   floats and decimal strings; `mul`'s exactness flag may differ, and one in BinarySI, which
//!   only arithmetic makes, prints in DecimalSI), and a sum of two values more
//!   than 1000 decimal places apart is rounded away from zero at 1000 places below the coarser
//!   one (upstream's is exact). See `dec.rs`.

mod amount;
mod dec;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use num_bigint::BigInt;

use self::amount::{Int64Amount, MAX_INT64_FACTORS, int64_multiply};
use self::dec::{Dec, PARSE_ROUNDING_SCALE};
use crate::go::go_pow10;

/// The errors of [`Quantity::parse`], worded as upstream's `ErrFormatWrong`, `ErrNumeric` and
/// `ErrSuffix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not a number followed by a suffix.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    FormatWrong,
    /// The number has no digit where it needs one (`.e-10`), or more than ten thousand
    /// significant digits (a bound of ours: upstream has none).
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// An unknown suffix (`1i`, `1ki`, `1e`).
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// How a quantity prints (upstream's `Format`): the suffix family it was written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `12e6`: a power-of-ten exponent.
    DecimalExponent,
    /// `12Mi`: powers of 1024 (`Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`).
    BinarySI,
    /// `12M`: powers of 1000 (`n`, `u`, `m`, `k`, `M`, `G`, `T`, `P`, `E`).
    DecimalSI,
}

impl Format {
    /// Upstream's name of the format (`"DecimalSI"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::DecimalExponent => "DecimalExponent",
            Format::BinarySI => "BinarySI",
            Format::DecimalSI => "DecimalSI",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A power of ten that [`Quantity::scaled_value`] and [`Quantity::round_up`] work at
/// (upstream's `Scale`): `Scale::MILLI` is 10^-3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scale(pub i32);

impl Scale {
    /// 10^-9.
    pub const NANO: Scale = Scale(-9);
    /// 10^-6.
    pub const MICRO: Scale = Scale(-6);
    /// 10^-3.
    pub const MILLI: Scale = Scale(-3);
    /// 10^0.
    pub const ONE: Scale = Scale(0);
    /// 10^3.
    pub const KILO: Scale = Scale(3);
    /// 10^6.
    pub const MEGA: Scale = Scale(6);
    /// 10^9.
    pub const GIGA: Scale = Scale(9);
    /// 10^12.
    pub const TERA: Scale = Scale(12);
    /// 10^15.
    pub const PETA: Scale = Scale(15);
    /// 10^18.
    pub const EXA: Scale = Scale(18);
}

/// Where a quantity's value lives (upstream's `i int64Amount` / `d infDecAmount` pair).
#[derive(Clone, Debug)]
enum Amount {
    Int(Int64Amount),
    Dec(Box<Dec>),
}

/// A canonical mantissa: small ones never allocate.
enum Mantissa {
    Small(i64),
    Big(BigInt),
}

impl fmt::Display for Mantissa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mantissa::Small(v) => write!(f, "{v}"),
            Mantissa::Big(v) => write!(f, "{v}"),
        }
    }
}

impl Amount {
    fn as_dec(&self) -> Dec {
        match self {
            Amount::Int(i) => i.as_dec(),
            Amount::Dec(d) => (**d).clone(),
        }
    }

    fn is_zero(&self) -> bool {
        match self {
            Amount::Int(i) => i.value == 0,
            Amount::Dec(d) => d.is_zero(),
        }
    }

    fn cmp_value(&self, other: &Amount) -> Ordering {
        match (self, other) {
            (Amount::Int(a), Amount::Int(b)) => a.cmp_value(*b),
            (Amount::Dec(a), Amount::Dec(b)) => a.cmp_value(b),
            _ => self.as_dec().cmp_value(&other.as_dec()),
        }
    }

    /// Upstream's `AsScale`: at least `scale`, rounded away from zero, and whether exact.
    fn as_scale(&self, scale: i32) -> (Amount, bool) {
        match self {
            Amount::Int(i) => {
                let (rounded, exact) = i.as_scale(scale);
                (Amount::Int(rounded), exact)
            }
            Amount::Dec(d) => {
                let rounded = d.round_up(i64::from(scale.wrapping_neg()));
                let exact = rounded.cmp_value(d) == Ordering::Equal;
                (Amount::Dec(Box::new(rounded)), exact)
            }
        }
    }

    /// Mantissa and base-10 exponent (a multiple of 3) of the canonical form.
    fn canonical(&self) -> (Mantissa, i32) {
        let dec = match self {
            Amount::Int(i) => match i.as_canonical() {
                Some((m, e)) => return (Mantissa::Small(m), e),
                None => i.as_dec(),
            },
            Amount::Dec(d) => (**d).clone(),
        };
        let (m, e) = dec.as_canonical();
        (Mantissa::Big(m), e)
    }

    /// Mantissa and base-1024 exponent of the value rounded up to a whole number.
    fn canonical_base1024(&self) -> Option<(Mantissa, i32)> {
        let dec = match self {
            Amount::Int(i) => match i.as_canonical_base1024() {
                Some((m, e)) => return Some((Mantissa::Small(m), e)),
                None => i.as_dec(),
            },
            Amount::Dec(d) => (**d).clone(),
        };
        dec.as_canonical_base1024()
            .map(|(m, e)| (Mantissa::Big(m), e))
    }
}

/// Bytes of a kept input string stored inline: every canonical quantity a cluster sees
/// (`100m`, `1536Mi`, `9223372036854775807`) is shorter, so keeping one allocates nothing.
const INLINE_CAPACITY: usize = 22;

/// The input string, kept when upstream keeps it (its `s` field).
#[derive(Clone, Debug, Default)]
enum Kept {
    #[default]
    None,
    Inline {
        len: u8,
        bytes: [u8; INLINE_CAPACITY],
    },
    Heap(Box<str>),
}

impl Kept {
    fn new(s: &str) -> Kept {
        if s.len() <= INLINE_CAPACITY {
            let mut bytes = [0u8; INLINE_CAPACITY];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            Kept::Inline {
                len: s.len() as u8,
                bytes,
            }
        } else {
            Kept::Heap(s.into())
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Kept::None => None,
            // Inline bytes are a copy of a whole `&str`, so they are valid UTF-8.
            Kept::Inline { len, bytes } => std::str::from_utf8(&bytes[..usize::from(*len)]).ok(),
            Kept::Heap(s) => Some(s),
        }
    }
}

/// A fixed-point number with a suffix format, as `k8s.io/apimachinery/pkg/api/resource.Quantity`.
///
/// ```
/// use kubemock_apimachinery::quantity::{Format, Quantity};
///
/// let q: Quantity = "1.5Gi".parse()?;
/// assert_eq!(q.to_string(), "1536Mi");
/// assert_eq!(q.format(), Format::BinarySI);
/// assert_eq!(q.value(), 1_610_612_736);
/// assert_eq!(Quantity::parse("0.1")?.to_string(), "100m");
/// assert_eq!(Quantity::parse("1e3")?.to_string(), "1e3");
/// assert_eq!(Quantity::parse("1Gi")?, Quantity::parse("1024Mi")?);
/// assert_eq!(
///     Quantity::parse("1.1.M").unwrap_err().to_string(),
///     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
/// );
/// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
/// ```
#[derive(Clone)]
pub struct Quantity {
    amount: Amount,
    format: Format,
    /// The parsed input when upstream reuses it as the string form; cleared by every change.
    kept: Kept,
}

impl Default for Quantity {
    /// Zero, `DecimalSI` (what `Quantity::parse("0")` gives; upstream's zero value has an empty
    /// format, which prints the same and which an addition replaces).
    fn default() -> Self {
        Quantity::new(0, Format::DecimalSI)
    }
}

impl fmt::Debug for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Quantity")
            .field(&self.to_string())
            .field(&self.format)
            .finish()
    }
}

/// Upstream's `parseQuantityString` split of a quantity: sign, the numeric text as given
/// (`value`), its integer digits without leading zeros (`num`, "0" when none), its fractional
/// digits (`denom`) and the suffix.
struct Parts<'a> {
    positive: bool,
    value: &'a [u8],
    num: &'a [u8],
    denom: &'a [u8],
    suffix: &'a [u8],
}

fn is_suffix_letter(c: u8) -> bool {
    matches!(
        c,
        b'e' | b'E' | b'i' | b'n' | b'u' | b'm' | b'k' | b'K' | b'M' | b'G' | b'T' | b'P'
    )
}

fn split_quantity(s: &[u8]) -> Result<Parts<'_>, QuantityError> {
    let end = s.len();
    let mut positive = true;
    let mut pos = 0;
    match s.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && s[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parts {
            positive,
            value: b"0",
            num: b"0",
            denom: b"",
            suffix: b"",
        });
    }
    let digits_end =
        |from: usize| from + s[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = digits_end(pos);
    if i >= end {
        return Ok(Parts {
            positive,
            value: s,
            num: &s[pos..],
            denom: b"",
            suffix: b"",
        });
    }
    let num: &[u8] = if i == pos { b"0" } else { &s[pos..i] };
    pos = i;
    let mut denom: &[u8] = b"";
    if s[pos] == b'.' {
        pos += 1;
        i = digits_end(pos);
        if i >= end {
            return Ok(Parts {
                positive,
                value: s,
                num,
                denom: &s[pos..],
                suffix: b"",
            });
        }
        denom = &s[pos..i];
        pos = i;
    }
    let value = &s[..pos];
    let suffix_start = pos;
    pos += s[pos..]
        .iter()
        .take_while(|&&c| is_suffix_letter(c))
        .count();
    if pos < end && matches!(s[pos], b'-' | b'+') {
        pos += 1;
    }
    if digits_end(pos) >= end {
        return Ok(Parts {
            positive,
            value,
            num,
            denom,
            suffix: &s[suffix_start..],
        });
    }
    Err(QuantityError::FormatWrong)
}

/// The base (10 or 2), exponent and format a suffix stands for (upstream's
/// `quantitySuffixer.interpret`). A decimal exponent is read as Go's `ParseInt(s, 10, 64)`
/// and then truncated to an `int32`, as upstream does.
fn interpret_suffix(suffix: &[u8]) -> Option<(u32, i32, Format)> {
    let decimal = |e| Some((10, e, Format::DecimalSI));
    let binary = |e| Some((2, e, Format::BinarySI));
    match suffix {
        b"" => decimal(0),
        b"n" => decimal(-9),
        b"u" => decimal(-6),
        b"m" => decimal(-3),
        b"k" => decimal(3),
        b"M" => decimal(6),
        b"G" => decimal(9),
        b"T" => decimal(12),
        b"P" => decimal(15),
        b"E" => decimal(18),
        b"Ki" => binary(10),
        b"Mi" => binary(20),
        b"Gi" => binary(30),
        b"Ti" => binary(40),
        b"Pi" => binary(50),
        b"Ei" => binary(60),
        [b'e' | b'E', rest @ ..] if !rest.is_empty() => {
            let parsed: i64 = std::str::from_utf8(rest).ok()?.parse().ok()?;
            Some((10, parsed as i32, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// The DecimalSI suffix of a base-10 exponent; none (the number alone, as upstream prints it)
/// outside `n`..`E`.
fn decimal_si_suffix(exponent: i32) -> &'static str {
    match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

/// The BinarySI suffix of a base-2 exponent; none outside `Ki`..`Ei`.
fn binary_si_suffix(exponent: i32) -> &'static str {
    match exponent {
        10 => "Ki",
        20 => "Mi",
        30 => "Gi",
        40 => "Ti",
        50 => "Pi",
        60 => "Ei",
        _ => "",
    }
}

impl Quantity {
    /// Parses a quantity as upstream's `ParseQuantity` does (no surrounding whitespace).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::{Quantity, QuantityError};
    ///
    /// assert_eq!(Quantity::parse("100m")?.milli_value(), 100);
    /// assert_eq!(Quantity::parse("1ki"), Err(QuantityError::Suffix));
    /// assert_eq!(Quantity::parse(" 1"), Err(QuantityError::FormatWrong));
    /// # Ok::<(), QuantityError>(())
    /// ```
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::FormatWrong);
        }
        if s == "0" {
            return Ok(Quantity {
                kept: Kept::new(s),
                ..Quantity::default()
            });
        }
        let parts = split_quantity(s.as_bytes())?;
        let (base, exponent, mut format) =
            interpret_suffix(parts.suffix).ok_or(QuantityError::Suffix)?;
        let digits = (parts.num.len() + parts.denom.len()) as i64;

        // The int64 fast path, when the digits surely fit.
        let (precision, mut scale, mantissa) = match format {
            Format::DecimalExponent | Format::DecimalSI => {
                (MAX_INT64_FACTORS - digits, exponent, 1i64)
            }
            Format::BinarySI if exponent >= 0 && parts.denom.is_empty() => {
                // 1Mi (2^20) has about 6 decimal digits: exponent * 3/10 digits of precision go.
                let used = parts.num.len() as i64 + i64::from(exponent) * 3 / 10 + 1;
                (15 - used, 0, 1i64 << exponent)
            }
            Format::BinarySI => (-1, 0, 1),
        };
        if precision >= 0 {
            scale = scale.wrapping_sub(parts.denom.len() as i32);
            if scale >= Scale::NANO.0 {
                let shifted = || parts.num.iter().chain(parts.denom);
                let value = shifted().fold(0i64, |acc, c| acc * 10 + i64::from(c - b'0'));
                if let (product, true) = int64_multiply(value, mantissa) {
                    let result = if parts.positive { product } else { -product };
                    let canonical_input = match format {
                        Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
                        _ => {
                            let ends_000 =
                                digits >= 3 && shifted().rev().take(3).all(|&c| c == b'0');
                            scale % 3 == 0 && !ends_000 && parts.num[0] != b'0'
                        }
                    };
                    return Ok(Quantity {
                        amount: Amount::Int(Int64Amount {
                            value: result,
                            scale,
                        }),
                        format,
                        kept: if canonical_input {
                            Kept::new(s)
                        } else {
                            Kept::None
                        },
                    });
                }
            }
        }

        // The arbitrary-precision path.
        let (unscaled, frac_len, stripped) =
            Dec::parse_decimal(parts.value).ok_or(QuantityError::Numeric)?;
        let mut amount = if base == 10 {
            Dec {
                unscaled,
                scale: i64::from(frac_len.wrapping_add(exponent.wrapping_neg())) - stripped,
            }
        } else {
            Dec {
                unscaled: unscaled << exponent.unsigned_abs(),
                scale: i64::from(frac_len) - stripped,
            }
        };
        let sign = amount.sign();
        if sign < 0 {
            amount.neg();
        }
        // Non-zero values are rounded up to the smallest representable value: a request for
        // some resource gets some, however little it asked for.
        if !amount.is_zero() {
            amount = amount.round_up(PARSE_ROUNDING_SCALE);
        }
        if format == Format::BinarySI {
            let max_allowed = Dec::from_i64(i64::MAX, 0);
            if amount.cmp_value(&max_allowed) == Ordering::Greater {
                amount = max_allowed;
            }
            if amount.sign() > 0 && amount.cmp_value(&Dec::from_i64(1, 0)) == Ordering::Less {
                format = Format::DecimalSI;
            }
        }
        if sign < 0 {
            amount.neg();
        }
        Ok(Quantity {
            amount: Amount::Dec(Box::new(amount)),
            format,
            kept: Kept::None,
        })
    }

    /// `value` in `format` (upstream's `NewQuantity`).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::{Format, Quantity};
    /// assert_eq!(Quantity::new(1024, Format::BinarySI).to_string(), "1Ki");
    /// ```
    pub fn new(value: i64, format: Format) -> Quantity {
        Quantity {
            amount: Amount::Int(Int64Amount { value, scale: 0 }),
            format,
            kept: Kept::None,
        }
    }

    /// `value / 1000` in `format` (upstream's `NewMilliQuantity`).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::{Format, Quantity};
    /// assert_eq!(Quantity::new_milli(1500, Format::DecimalSI).to_string(), "1500m");
    /// ```
    pub fn new_milli(value: i64, format: Format) -> Quantity {
        Quantity::new_scaled(value, Scale::MILLI).with_format(format)
    }

    /// `value * 10^scale`, `DecimalSI` (upstream's `NewScaledQuantity`).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::{Quantity, Scale};
    /// assert_eq!(Quantity::new_scaled(1000, Scale::NANO).to_string(), "1u");
    /// ```
    pub fn new_scaled(value: i64, scale: Scale) -> Quantity {
        Quantity {
            amount: Amount::Int(Int64Amount {
                value,
                scale: scale.0,
            }),
            format: Format::DecimalSI,
            kept: Kept::None,
        }
    }

    fn with_format(mut self, format: Format) -> Quantity {
        self.format = format;
        self
    }

    /// The format the quantity prints in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Sets the value to `value * 10^scale`, keeping the format (upstream's `SetScaled`).
    pub fn set_scaled(&mut self, value: i64, scale: Scale) {
        self.kept = Kept::None;
        self.amount = Amount::Int(Int64Amount {
            value,
            scale: scale.0,
        });
    }

    /// Sets the value to `value` (upstream's `Set`).
    pub fn set(&mut self, value: i64) {
        self.set_scaled(value, Scale::ONE);
    }

    /// Sets the value to `value / 1000` (upstream's `SetMilli`).
    pub fn set_milli(&mut self, value: i64) {
        self.set_scaled(value, Scale::MILLI);
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.amount.is_zero()
    }

    /// -1, 0 or 1 as the value is negative, zero or positive.
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::Quantity;
    /// assert_eq!(Quantity::parse("-1m")?.sign(), -1);
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn sign(&self) -> i32 {
        match &self.amount {
            Amount::Int(i) => i.sign(),
            Amount::Dec(d) => d.sign(),
        }
    }

    /// Compares the value with an integer (upstream's `CmpInt64`).
    ///
    /// ```
    /// use std::cmp::Ordering;
    /// use kubemock_apimachinery::quantity::Quantity;
    /// assert_eq!(Quantity::parse("1Ki")?.cmp_i64(1024), Ordering::Equal);
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn cmp_i64(&self, y: i64) -> Ordering {
        self.amount
            .cmp_value(&Amount::Int(Int64Amount { value: y, scale: 0 }))
    }

    /// Adds `y`; a zero quantity takes `y`'s format (upstream's `Add`).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::Quantity;
    /// let mut q = Quantity::parse("1Gi")?;
    /// q.add(&Quantity::parse("512Mi")?);
    /// assert_eq!(q.to_string(), "1536Mi");
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn add(&mut self, y: &Quantity) {
        self.kept = Kept::None;
        match (&mut self.amount, &y.amount) {
            (Amount::Int(a), Amount::Int(b)) => {
                if a.value == 0 {
                    self.format = y.format;
                }
                if a.add(*b) {
                    return;
                }
            }
            _ => {
                if self.is_zero() {
                    self.format = y.format;
                }
            }
        }
        let sum = self.amount.as_dec().add(&y.amount.as_dec());
        self.amount = Amount::Dec(Box::new(sum));
    }

    /// Subtracts `y`; a zero quantity takes `y`'s format (upstream's `Sub`).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::Quantity;
    /// let mut q = Quantity::parse("1")?;
    /// q.sub(&Quantity::parse("250m")?);
    /// assert_eq!(q.to_string(), "750m");
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn sub(&mut self, y: &Quantity) {
        self.kept = Kept::None;
        if self.is_zero() {
            self.format = y.format;
        }
        if let (Amount::Int(a), Amount::Int(b)) = (&mut self.amount, &y.amount) {
            if a.sub(*b) {
                return;
            }
        }
        let difference = self.amount.as_dec().sub(&y.amount.as_dec());
        self.amount = Amount::Dec(Box::new(difference));
    }

    /// Multiplies by `y`; returns whether the result's mantissa still fits in 64 bits
    /// (upstream's `Mul`).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::Quantity;
    /// let mut q = Quantity::parse("100m")?;
    /// assert!(q.mul(3));
    /// assert_eq!(q.to_string(), "300m");
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn mul(&mut self, y: i64) -> bool {
        self.kept = Kept::None;
        if let Amount::Int(a) = &mut self.amount {
            if a.mul(y) {
                return true;
            }
        }
        let mut product = self.amount.as_dec();
        product.mul_i64(y);
        let fits = product.unscaled_fits_i64();
        self.amount = Amount::Dec(Box::new(product));
        fits
    }

    /// Negates the value (upstream's `Neg`).
    pub fn neg(&mut self) {
        self.kept = Kept::None;
        match &mut self.amount {
            Amount::Int(i) => i.value = i.value.wrapping_neg(),
            Amount::Dec(d) => d.neg(),
        }
    }

    /// Rounds the value up (away from zero) to a multiple of `10^scale`; returns whether nothing
    /// was lost (upstream's `RoundUp`).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::{Quantity, Scale};
    /// let mut q = Quantity::parse("9.01")?;
    /// assert!(!q.round_up(Scale::ONE));
    /// assert_eq!(q.to_string(), "10");
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn round_up(&mut self, scale: Scale) -> bool {
        if let Amount::Int(i) = &self.amount {
            if i.scale >= scale.0 {
                return true;
            }
        }
        self.kept = Kept::None;
        let (rounded, exact) = self.amount.as_scale(scale.0);
        self.amount = rounded;
        exact
    }

    /// The value rounded up (away from zero) to an integer (upstream's `Value`). Past
    /// `i64` the result overflows exactly as upstream's does (`9Ei` in millis is -1000).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::Quantity;
    /// assert_eq!(Quantity::parse("1.5Gi")?.value(), 1_610_612_736);
    /// assert_eq!(Quantity::parse("100m")?.value(), 1);
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn value(&self) -> i64 {
        self.scaled_value(Scale::ONE)
    }

    /// `ceil(value * 1000)` (upstream's `MilliValue`).
    pub fn milli_value(&self) -> i64 {
        self.scaled_value(Scale::MILLI)
    }

    /// `ceil(value / 10^scale)` (upstream's `ScaledValue`).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::{Quantity, Scale};
    /// assert_eq!(Quantity::parse("1")?.scaled_value(Scale::NANO), 1_000_000_000);
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn scaled_value(&self, scale: Scale) -> i64 {
        match &self.amount {
            Amount::Int(i) => i.as_scaled_int64(scale.0).0,
            Amount::Dec(d) => d.scaled_value(scale.0),
        }
    }

    /// The value as an `i64` when upstream's `AsInt64` gives one: held in the int64 form,
    /// whole, and at a scale of at least 0 (so `1000m` and an arbitrary-precision `1.5Gi` give
    /// `None`; use [`Quantity::value`] for those).
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::Quantity;
    /// assert_eq!(Quantity::parse("1Ki")?.as_i64(), Some(1024));
    /// assert_eq!(Quantity::parse("1000m")?.as_i64(), None);
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn as_i64(&self) -> Option<i64> {
        match &self.amount {
            Amount::Int(i) => i.as_int64(),
            Amount::Dec(_) => None,
        }
    }

    /// A float near the value, computed as upstream's `AsApproximateFloat64` does (so equal to
    /// it bit for bit); ±infinity past `f64`.
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::Quantity;
    /// assert_eq!(Quantity::parse("1.1Ki")?.as_approximate_f64(), 1126.4);
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn as_approximate_f64(&self) -> f64 {
        match &self.amount {
            Amount::Int(i) => {
                let base = i.value as f64;
                if i.scale == 0 {
                    return base;
                }
                base * go_pow10(i64::from(i.scale))
            }
            Amount::Dec(d) => d.approximate_f64(),
        }
    }

    /// The canonical number and suffix, ignoring a kept input string (upstream's
    /// `CanonicalizeBytes`). `to_string()` is their concatenation unless the input was kept.
    ///
    /// ```
    /// use kubemock_apimachinery::quantity::Quantity;
    /// let q = Quantity::parse("+1Ki")?;
    /// assert_eq!(q.to_string(), "+1Ki"); // kept, as upstream keeps it
    /// assert_eq!(q.canonicalize(), ("1".to_string(), "Ki".to_string()));
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    pub fn canonicalize(&self) -> (String, String) {
        let (mantissa, suffix) = self.canonical_parts();
        (mantissa.to_string(), suffix.to_string())
    }

    /// The canonical mantissa and suffix (the format switch of upstream's `CanonicalizeBytes`).
    fn canonical_parts(&self) -> (Mantissa, Suffix) {
        if self.is_zero() {
            return (Mantissa::Small(0), Suffix::Static(""));
        }
        let format = match self.format {
            Format::BinarySI
                if self.cmp_i64(-1024) == Ordering::Greater
                    && self.cmp_i64(1024) == Ordering::Less =>
            {
                Format::DecimalSI
            }
            Format::BinarySI => match self.amount.as_scale(0) {
                (rounded, true) => match rounded.canonical_base1024() {
                    Some((mantissa, exponent)) => {
                        return (
                            mantissa,
                            Suffix::Static(binary_si_suffix(exponent.wrapping_mul(10))),
                        );
                    }
                    // A whole number too long to build (beyond 10^991): decimal instead.
                    None => Format::DecimalSI,
                },
                // Rounding would lose precision: show it in DecimalSI.
                (_, false) => Format::DecimalSI,
            },
            format => format,
        };
        let (mantissa, exponent) = self.amount.canonical();
        let suffix = match format {
            Format::DecimalExponent if exponent == 0 => Suffix::Static(""),
            Format::DecimalExponent => Suffix::Exponent(exponent),
            _ => Suffix::Static(decimal_si_suffix(exponent)),
        };
        (mantissa, suffix)
    }

    /// Moves the value to the arbitrary-precision form (upstream's `ToDec`), for tests that
    /// check both forms agree.
    #[cfg(test)]
    fn make_dec(&mut self) {
        if let Amount::Int(i) = self.amount {
            self.amount = Amount::Dec(Box::new(i.as_dec()));
        }
    }
}

/// A canonical suffix: a fixed one, or a decimal exponent (`e6`).
enum Suffix {
    Static(&'static str),
    Exponent(i32),
}

impl fmt::Display for Suffix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Suffix::Static(s) => f.write_str(s),
            Suffix::Exponent(e) => write!(f, "e{e}"),
        }
    }
}

impl fmt::Display for Quantity {
    /// Upstream's `String()`: the kept input, else the canonical form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(kept) = self.kept.as_str() {
            return f.write_str(kept);
        }
        let (mantissa, suffix) = self.canonical_parts();
        write!(f, "{mantissa}{suffix}")
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl PartialEq for Quantity {
    /// Equal values (upstream's `Equal`/`Cmp(...) == 0`), whatever the format.
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    /// By value (upstream's `Cmp`), exactly.
    fn cmp(&self, other: &Self) -> Ordering {
        self.amount.cmp_value(&other.amount)
    }
}

impl std::ops::AddAssign<&Quantity> for Quantity {
    fn add_assign(&mut self, rhs: &Quantity) {
        self.add(rhs);
    }
}

impl std::ops::SubAssign<&Quantity> for Quantity {
    fn sub_assign(&mut self, rhs: &Quantity) {
        self.sub(rhs);
    }
}

impl std::ops::Neg for Quantity {
    type Output = Quantity;

    fn neg(mut self) -> Quantity {
        Quantity::neg(&mut self);
        self
    }
}

impl serde::Serialize for Quantity {
    /// A JSON string, as upstream's `MarshalJSON`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Quantity {
    /// As upstream's `UnmarshalJSON`: a string (surrounding whitespace trimmed), a JSON number
    /// (read as the quantity it spells), or null (zero).
    ///
    /// A number arrives here already converted by the deserializer: integers keep every digit,
    /// but a non-integer is an `f64`, written back in its shortest form, so `1.5e3` becomes
    /// `1500` (DecimalSI where upstream keeps DecimalExponent), and one with more than 17
    /// significant digits is rounded.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(QuantityVisitor)
    }
}

struct QuantityVisitor;

impl QuantityVisitor {
    fn parse<E: serde::de::Error>(text: &str) -> Result<Quantity, E> {
        Quantity::parse(text.trim()).map_err(E::custom)
    }
}

impl<'de> serde::de::Visitor<'de> for QuantityVisitor {
    type Value = Quantity;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a quantity: a string or a number")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
        Self::parse(v)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Quantity, E> {
        Self::parse(&v.to_string())
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
        Self::parse(&v.to_string())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Quantity, E> {
        Self::parse(&v.to_string())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Quantity, E> {
        Ok(Quantity::default())
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Quantity, E> {
        Ok(Quantity::default())
    }

    fn visit_some<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Quantity, D::Error> {
        serde::Deserialize::deserialize(deserializer)
    }
}

// k8s-openapi's quantity: a string newtype that does not parse.
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as OpenApiQuantity;

impl From<&Quantity> for OpenApiQuantity {
    /// The string form, as upstream serializes it.
    fn from(q: &Quantity) -> Self {
        OpenApiQuantity(q.to_string())
    }
}

impl From<Quantity> for OpenApiQuantity {
    fn from(q: Quantity) -> Self {
        OpenApiQuantity::from(&q)
    }
}

impl TryFrom<&OpenApiQuantity> for Quantity {
    type Error = QuantityError;

    /// Parses the string as upstream decodes a JSON string (surrounding whitespace trimmed).
    ///
    /// ```
    /// use k8s_openapi::apimachinery::pkg::api::resource::Quantity as OpenApiQuantity;
    /// use kubemock_apimachinery::quantity::Quantity;
    /// let q = Quantity::try_from(&OpenApiQuantity("1.5Gi".into()))?;
    /// assert_eq!(OpenApiQuantity::from(&q).0, "1536Mi");
    /// # Ok::<(), kubemock_apimachinery::quantity::QuantityError>(())
    /// ```
    fn try_from(q: &OpenApiQuantity) -> Result<Self, Self::Error> {
        Quantity::parse(q.0.trim())
    }
}

impl TryFrom<OpenApiQuantity> for Quantity {
    type Error = QuantityError;

    fn try_from(q: OpenApiQuantity) -> Result<Self, Self::Error> {
        Quantity::try_from(&q)
    }
}
