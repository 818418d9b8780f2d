//! The highest memory since each scraper's previous scrape: a spike between two scrapes (15 s
//! apart, typically) is exported once to every Prometheus that scrapes this node, and no
//! scraper's scrape resets another's.
//!
//! A scraper is named by the `scraper` query parameter (`/metrics?scraper=prom-a`, set in
//! Prometheus's `params`), or else by its address: two Prometheus servers on one host must
//! name themselves. The table is bounded ([`MAX_SCRAPERS`]): the scraper seen longest ago
//! goes first, and one not seen for [`FORGET_AFTER`] is forgotten.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::encoding::text::encode_registry;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::model::Sample;

/// The most scrapers kept at once.
pub const MAX_SCRAPERS: usize = 64;
/// A scraper not seen for this long is forgotten (its next scrape starts afresh).
pub const FORGET_AFTER: Duration = Duration::from_secs(3600);
/// The longest `scraper` name kept; a longer or odd one is not a name (the address is used).
const MAX_NAME: usize = 64;

/// One GPU's peak: its index, UUID and the highest used memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuPeak {
    pub gpu: u32,
    pub uuid: Option<String>,
    pub used_bytes: u64,
}

#[derive(Debug, Default)]
struct Scraper {
    /// The highest per GPU since its previous scrape (GPUs in sample order).
    held: Vec<GpuPeak>,
    seen: Option<Instant>,
}

/// Who is scraping: the `scraper` query parameter when it is a plain name, else the address.
pub fn scraper_key(query: Option<&str>, ip: std::net::IpAddr) -> String {
    let named = query.into_iter().flat_map(|q| q.split('&')).find_map(|kv| {
        let v = kv.strip_prefix("scraper=")?;
        let ok = !v.is_empty()
            && v.len() <= MAX_NAME
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
        ok.then(|| format!("name {v}"))
    });
    named.unwrap_or_else(|| format!("address {ip}"))
}

/// The per-scraper peaks.
#[derive(Debug, Default)]
pub struct Peaks {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    scrapers: HashMap<String, Scraper>,
    /// The latest sample's peaks: what a scraper's first scrape, or a second scrape within
    /// one sample, reports.
    latest: Vec<GpuPeak>,
}

fn fold(held: &mut Vec<GpuPeak>, p: &GpuPeak) {
    match held.iter_mut().find(|h| h.gpu == p.gpu) {
        Some(h) => {
            if p.used_bytes > h.used_bytes || h.uuid != p.uuid {
                *h = p.clone();
            }
        }
        None => held.push(p.clone()),
    }
}

impl Peaks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a sample's peaks (the devices that measured one) to every scraper's.
    pub fn publish(&self, sample: &Sample) {
        let latest: Vec<GpuPeak> = sample
            .devices
            .iter()
            .filter_map(|d| {
                Some(GpuPeak {
                    gpu: d.index,
                    uuid: d.uuid.clone(),
                    used_bytes: d.peak?.used_bytes,
                })
            })
            .collect();
        let mut inner = self.lock();
        for s in inner.scrapers.values_mut() {
            for p in &latest {
                fold(&mut s.held, p);
            }
        }
        inner.latest = latest;
    }

    /// The highest per GPU since `key`'s previous scrape (at least the latest sample's), and
    /// a new window for it from now.
    pub fn scrape(&self, key: &str, now: Instant) -> Vec<GpuPeak> {
        let mut inner = self.lock();
        inner.scrapers.retain(|_, s| {
            s.seen
                .is_none_or(|t| now.saturating_duration_since(t) < FORGET_AFTER)
        });
        if !inner.scrapers.contains_key(key) && inner.scrapers.len() >= MAX_SCRAPERS {
            let oldest = inner
                .scrapers
                .iter()
                .min_by_key(|(_, s)| s.seen)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                inner.scrapers.remove(&k);
            }
        }
        let mut out = inner.latest.clone();
        let s = inner.scrapers.entry(key.to_owned()).or_default();
        for p in std::mem::take(&mut s.held) {
            fold(&mut out, &p);
        }
        s.seen = Some(now);
        out.sort_by_key(|p| p.gpu);
        out
    }

    /// How many scrapers are tracked.
    #[cfg(test)]
    fn scrapers(&self) -> usize {
        self.lock().scrapers.len()
    }
}

/// `gpumon_memory_peak_used_bytes`, as OpenMetrics text (no `# EOF`).
pub fn encode(peaks: &[GpuPeak]) -> String {
    if peaks.is_empty() {
        return String::new();
    }
    let mut r = Registry::default();
    let f =
        Family::<Vec<(&'static str, String)>, Gauge<i64, std::sync::atomic::AtomicI64>>::default();
    r.register(
        "gpumon_memory_peak_used_bytes",
        "The highest GPU memory used since this scraper's previous scrape, from memory-only reads \
         between samples (--peak-rate); a scraper is named by ?scraper=NAME, else by its address",
        f.clone(),
    );
    for p in peaks {
        let labels = vec![
            ("gpu", p.gpu.to_string()),
            ("UUID", p.uuid.clone().unwrap_or_default()),
        ];
        f.get_or_create(&labels)
            .set(i64::try_from(p.used_bytes).unwrap_or(i64::MAX));
    }
    let mut out = String::new();
    let _ = encode_registry(&mut out, &r);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Device, MemoryPeak};
    use std::time::SystemTime;

    const GIB: u64 = 1 << 30;

    fn sample(peaks: &[Option<u64>]) -> Sample {
        Sample {
            timestamp: SystemTime::UNIX_EPOCH,
            hostname: None,
            source: "simulated",
            driver_version: None,
            cuda_version: None,
            devices: peaks
                .iter()
                .enumerate()
                .map(|(i, p)| Device {
                    index: i as u32,
                    uuid: Some(format!("GPU-{i}")),
                    peak: p.map(|gib| MemoryPeak {
                        used_bytes: gib * GIB,
                        at: SystemTime::UNIX_EPOCH,
                        window_ms: 1000,
                        reads: 50,
                    }),
                    ..Device::default()
                })
                .collect(),
            error: None,
            host: None,
        }
    }

    fn gib(peaks: &[GpuPeak]) -> Vec<(u32, u64)> {
        peaks.iter().map(|p| (p.gpu, p.used_bytes / GIB)).collect()
    }

    #[test]
    fn two_scrapers_each_see_the_spike_once_and_neither_steals_it() {
        let peaks = Peaks::default();
        let t = Instant::now();
        peaks.publish(&sample(&[Some(20), Some(5)]));
        assert_eq!(gib(&peaks.scrape("a", t)), vec![(0, 20), (1, 5)]);
        assert_eq!(gib(&peaks.scrape("b", t)), vec![(0, 20), (1, 5)]);
        // A 78 GiB spike on GPU 0, then quiet samples.
        peaks.publish(&sample(&[Some(78), Some(5)]));
        peaks.publish(&sample(&[Some(20), Some(5)]));
        assert_eq!(gib(&peaks.scrape("a", t)), vec![(0, 78), (1, 5)]);
        peaks.publish(&sample(&[Some(21), Some(5)]));
        // b scrapes later: its window holds the spike although a scraped since.
        assert_eq!(gib(&peaks.scrape("b", t)), vec![(0, 78), (1, 5)]);
        // And once seen, each one's next window is the samples since.
        assert_eq!(gib(&peaks.scrape("a", t)), vec![(0, 21), (1, 5)]);
        assert_eq!(gib(&peaks.scrape("b", t)), vec![(0, 21), (1, 5)]);
    }

    #[test]
    fn an_unmeasured_gpu_has_no_peak_series() {
        let peaks = Peaks::default();
        peaks.publish(&sample(&[None, Some(5)]));
        assert_eq!(gib(&peaks.scrape("a", Instant::now())), vec![(1, 5)]);
        assert_eq!(encode(&[]), "");
        let text = encode(&peaks.scrape("a", Instant::now()));
        assert!(text.contains(&format!(
            "gpumon_memory_peak_used_bytes{{gpu=\"1\",UUID=\"GPU-1\"}} {}",
            5 * GIB
        )));
    }

    #[test]
    fn the_table_of_scrapers_is_bounded() {
        let peaks = Peaks::default();
        let t = Instant::now();
        for i in 0..MAX_SCRAPERS + 10 {
            peaks.scrape(&format!("s{i}"), t + Duration::from_millis(i as u64));
        }
        assert_eq!(peaks.scrapers(), MAX_SCRAPERS);
        peaks.scrape("late", t + FORGET_AFTER + Duration::from_secs(60));
        assert_eq!(
            peaks.scrapers(),
            1,
            "those not seen for an hour are forgotten"
        );
    }

    #[test]
    fn a_scraper_is_its_name_or_else_its_address() {
        let ip: std::net::IpAddr = "10.0.0.7".parse().expect("ip");
        assert_eq!(scraper_key(Some("scraper=prom-a"), ip), "name prom-a");
        assert_eq!(scraper_key(Some("x=1&scraper=b.2"), ip), "name b.2");
        assert_eq!(scraper_key(None, ip), "address 10.0.0.7");
        assert_eq!(scraper_key(Some("scraper="), ip), "address 10.0.0.7");
        assert_eq!(scraper_key(Some("scraper=a%0Ab"), ip), "address 10.0.0.7");
        let long = format!("scraper={}", "a".repeat(65));
        assert_eq!(scraper_key(Some(&long), ip), "address 10.0.0.7");
    }
}
