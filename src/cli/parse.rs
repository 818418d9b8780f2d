//! The command line's value parsers: each flag's text checked and turned into its value, with
//! a message that says what was expected.

use std::time::Duration;

use crate::collect::sampler::MIN_INTERVAL;
use crate::estimate::memory::Choice;

use super::Wait;

/// `auto`, `off` or `MODULE:QUALNAME`, each part a dotted Python identifier.
pub(super) fn parse_step_marker(s: &str) -> Result<String, String> {
    if s == "auto" || s == "off" {
        return Ok(s.to_owned());
    }
    let dotted = |p: &str| {
        !p.is_empty()
            && p.split('.').all(|w| {
                w.chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
                    && w.chars().all(|c| c.is_alphanumeric() || c == '_')
            })
    };
    match s.split_once(':') {
        Some((m, f)) if dotted(m) && dotted(f) => Ok(s.to_owned()),
        _ => Err(format!(
            "'{}': expected auto, off or MODULE:FUNCTION (train:train_step, __main__:Trainer.step)",
            crate::text::escape(s)
        )),
    }
}

/// Parses `run --gpus`: `auto` (one GPU) or `auto:N`.
pub fn parse_auto_gpus(s: &str) -> Result<u16, String> {
    let s = s.trim();
    let n = match s.strip_prefix("auto") {
        Some("") => return Ok(1),
        Some(rest) => rest.strip_prefix(':').and_then(|n| n.parse::<u16>().ok()),
        None => None,
    };
    match n {
        Some(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{s}' is not auto or auto:N (N a number of GPUs, at least 1)"
        )),
    }
}

/// Parses `run --wait`'s timeout: a duration, or `forever`.
pub fn parse_wait(s: &str) -> Result<Wait, String> {
    let s = s.trim();
    if s == "forever" {
        return Ok(Wait::Forever);
    }
    humantime::parse_duration(s)
        .map(Wait::AtMost)
        .map_err(|e| format!("'{s}' is not a timeout like 30m or 2h: {e}"))
}

/// Parses `run --grace`: a duration up to a day.
pub fn parse_grace(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim()).map_err(|e| format!("'{s}': {e}"))?;
    if d > Duration::from_secs(86400) {
        return Err("at most a day (24h)".into());
    }
    Ok(d)
}

/// Parses `pick --need`: a size like 20GiB (at least 1 MiB).
pub fn parse_need(s: &str) -> Result<u64, String> {
    crate::oom::parse::parse_size(s)
        .filter(|b| *b >= 1 << 20)
        .ok_or_else(|| format!("'{s}' is not a size like 20GiB or 512MiB (at least 1MiB)"))
}

/// A parser for a [`Choice`]: its names are the possible values `--help` lists.
pub(super) fn choice<T: Choice + Clone>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(T::ALL.iter().map(|(name, _)| *name))
        .try_map(|s| T::parse(&s).ok_or_else(|| format!("'{s}' is not one of the choices")))
}

/// A `--gpu` selector: an index or a UUID (or its start); empty names no GPU.
pub(super) fn parse_gpu(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("an empty GPU selector names no GPU: give an index or a UUID".into());
    }
    Ok(s.to_owned())
}

/// Parses `record --max-size`: 1GiB, 200MiB, 5G… (at least 1 MiB).
pub fn parse_max_size(s: &str) -> Result<u64, String> {
    let bytes = crate::oom::parse::parse_size(s)
        .ok_or_else(|| format!("'{s}' is not a size like 1GiB or 200MiB"))?;
    if bytes < 1 << 20 {
        return Err(format!("'{s}' is less than the 1MiB minimum"));
    }
    Ok(bytes)
}

/// Parses `record --keep`: from a minute to a year.
pub fn parse_keep(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("'{s}' is not a duration like 7d or 24h: {e}"))?;
    if d < Duration::from_secs(60) || d > Duration::from_secs(366 * 86400) {
        return Err(format!("'{s}' must be between 1m and 1y"));
    }
    Ok(d)
}

/// Parses `--idle-after`: a duration from 10 s to a week.
pub fn parse_idle_after(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("'{s}' is not a duration like 10m or 1h: {e}"))?;
    if d < Duration::from_secs(10) || d > Duration::from_secs(7 * 86400) {
        return Err(format!("'{s}' must be between 10s and 7d"));
    }
    Ok(d)
}

pub fn parse_history(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("'{s}' is not a duration like 10m or 1h: {e}"))?;
    if d < Duration::from_secs(10) || d > Duration::from_secs(86400) {
        return Err(format!("'{s}' must be between 10s and 24h"));
    }
    Ok(d)
}

/// Parses `--demo-machine`: one of the built-in machines, by name.
pub fn parse_demo_machine(
    s: &str,
) -> Result<crate::collect::source::simulated::DemoMachine, String> {
    use crate::collect::source::simulated::DemoMachine;
    DemoMachine::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = DemoMachine::ALL.iter().map(|(n, _)| *n).collect();
        format!("'{s}' is not a demo machine: {}", names.join(", "))
    })
}

/// Parses `--peak-rate`: reads per second, 0 (off) to the most gpumon allows.
pub fn parse_peak_rate(s: &str) -> Result<f64, String> {
    let max = crate::collect::sampler::MAX_PEAK_RATE;
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && (0.0..=max).contains(&r) => Ok(r),
        _ => Err(format!(
            "'{s}' is not a rate from 0 (off) to {max} reads per second"
        )),
    }
}

/// Parses a deadline: like an interval, at least 10 ms, at most an hour.
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let d = parse_interval(s)?;
    if d > Duration::from_secs(3600) {
        return Err(format!("'{s}' is longer than the 1h maximum"));
    }
    Ok(d)
}

/// Parses "1s", "250ms", "2m" or plain seconds ("0.5").
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = match s.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Duration::from_secs_f64(secs),
        Ok(_) => return Err(format!("'{s}' is not a valid interval")),
        Err(_) => humantime::parse_duration(s.trim())
            .map_err(|e| format!("'{s}' is not a duration like 1s or 500ms: {e}"))?,
    };
    if d < MIN_INTERVAL {
        return Err(format!("'{s}' is shorter than the 10ms minimum"));
    }
    Ok(d)
}

/// Parses `--listen`: `ADDR:PORT`, `[::]:PORT`, or `:PORT` for every IPv4 address.
pub fn parse_listen(s: &str) -> Result<std::net::SocketAddr, String> {
    let s = s.trim();
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_owned()
    };
    full.parse()
        .map_err(|_| format!("'{s}' is not an address like 0.0.0.0:9400, [::]:9400 or :9400"))
}
