//! Quantities for display: bytes in binary units (GiB = 2^30, kept as `u64` bytes everywhere
//! else) and ages.

use bytesize::ByteSize;

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

/// "1.6 GiB", "512.0 MiB", "0 B": binary units, as PyTorch and nvidia-smi use them.
pub fn fmt_bytes(bytes: u64) -> String {
    let s = ByteSize::b(bytes).display().iec().to_string();
    // Just under a unit boundary rounds up to "1024.0 MiB": say "1.0 GiB".
    if s.starts_with("1024.0 ") {
        let unit = [1u64 << 10, 1 << 20, 1 << 30, 1 << 40, 1 << 50]
            .into_iter()
            .find(|u| bytes < *u)
            .unwrap_or(1 << 60);
        return ByteSize::b(unit).display().iec().to_string();
    }
    s
}

/// [`fmt_bytes`] for a value that may be unknown.
pub fn fmt_opt_bytes(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "N/A".to_owned(), fmt_bytes)
}

/// "3d04h", "2h05m", "4m07s", "12s".
pub fn fmt_age(s: u64) -> String {
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86400, (s % 86400) / 3600),
    }
}

/// A wait: tenths of a second under 10 s, then as ages are written (1m05s).
pub fn fmt_wait(d: std::time::Duration) -> String {
    if d < std::time::Duration::from_secs(10) {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        fmt_age(d.as_secs())
    }
}

/// An integer as frameworks print it, with or without thousands separators: "25,600,000" →
/// 25600000.
pub fn parse_int(s: &str) -> Option<u64> {
    s.chars()
        .filter(|c| *c != ',')
        .collect::<String>()
        .parse()
        .ok()
}

/// Parses one printed size into bytes (binary units), exactly: the decimal as printed times
/// the unit, rounded half up ("67109892.01 GiB" is 72058697855260426 bytes, which an `f64`
/// product misses by 6).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(split);
    let value: f64 = num.parse().ok()?;
    let mult: u64 = match unit.trim() {
        "bytes" | "Bytes" | "B" => 1,
        "KiB" | "KB" | "kB" | "K" => 1 << 10,
        "MiB" | "MB" | "M" => 1 << 20,
        "GiB" | "GB" | "G" => 1 << 30,
        "TiB" | "TB" | "T" => 1 << 40,
        // PaddlePaddle's human-readable sizes go on to PB and EB (a garbage request prints so).
        "PiB" | "PB" => 1 << 50,
        "EiB" | "EB" => 1 << 60,
        _ => return None,
    };
    if let Some(exact) = exact_bytes(num, mult) {
        return u64::try_from(exact).ok().filter(|b| *b < u64::MAX);
    }
    let bytes = value * mult as f64;
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then(|| bytes.round() as u64)
}

/// `num` (digits, at most one point) times `mult`, rounded half up, in integers; `None` where it
/// has more digits than 128 bits hold exactly (then the `f64` product stands).
fn exact_bytes(num: &str, mult: u64) -> Option<u128> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.len() + frac.len() > 24 || frac.contains('.') {
        return None;
    }
    let digits: u128 = format!("{int}{frac}").parse().ok()?;
    let scale = 10u128.checked_pow(u32::try_from(frac.len()).ok()?)?;
    let product = digits.checked_mul(u128::from(mult))?;
    Some(product.checked_add(scale / 2)? / scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_units() {
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(GIB), "1.0 GiB");
        assert_eq!(fmt_bytes(3 * GIB / 2), "1.5 GiB");
        assert_eq!(fmt_bytes(512 * MIB), "512.0 MiB");
        assert_eq!(fmt_opt_bytes(None), "N/A");
        // Sizes at or just under a boundary read in the larger unit, never "1024.0 MiB".
        assert_eq!(fmt_bytes(GIB - 1), "1.0 GiB");
        assert_eq!(fmt_bytes(1024 * MIB), "1.0 GiB");
        assert_eq!(fmt_bytes(1023 * MIB), "1023.0 MiB");
        assert_eq!(fmt_bytes(1023), "1023 B");
    }

    /// A printed size is read exactly, past what an `f64` holds (2^53), and rounded half up.
    #[test]
    fn sizes_are_read_exactly() {
        assert_eq!(parse_size("67109892.01 GiB"), Some(72_058_697_855_260_426));
        assert_eq!(parse_size("1.5 KiB"), Some(1536));
        assert_eq!(parse_size("0.5 B"), Some(1));
        assert_eq!(parse_size("20.00 MiB"), Some(20 << 20));
        assert_eq!(parse_size(".5 GiB"), Some(GIB / 2));
        assert_eq!(parse_size("16 EiB"), None);
        assert_eq!(parse_size("1.2.3 GiB"), None);
        // Near 2^128 before the rounding: no overflow, and too large for bytes.
        assert_eq!(parse_size("29.5147905179352825855 EiB"), None);
    }
}
