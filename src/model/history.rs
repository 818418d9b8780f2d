//! Per-device history for sparklines: a ring buffer bounded by a time window and a count.
//!
//! A failed read is kept as a gap (`None`), so a chart shows where samples were missing
//! instead of drawing a line through them.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use super::Sample;

/// Hard cap per device, whatever the window and interval (10 ms × 8192 ≈ 82 s, 1 s ≈ 2.3 h).
pub const MAX_POINTS: usize = 8192;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub at: SystemTime,
    pub used: Option<u64>,
    pub util: Option<u32>,
}

#[derive(Debug, Clone, Default)]
pub struct DeviceHistory {
    pub points: VecDeque<Point>,
}

/// The highest value in a window, and when it happened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peak {
    pub value: u64,
    pub at: SystemTime,
}

impl DeviceHistory {
    pub fn peak_used(&self) -> Option<Peak> {
        self.points
            .iter()
            .filter_map(|p| p.used.map(|v| Peak { value: v, at: p.at }))
            .max_by_key(|p| p.value)
    }

    /// `width` columns over `[now - window, now]`, each the maximum of its samples. A column
    /// holding a failed read is a [`Column::Gap`]; columns before the first sample are
    /// [`Column::Empty`]; a column no sample fell into (the interval is longer than a column)
    /// continues the column before it (a value, or a gap).
    pub fn columns<T: Copy + Ord>(
        &self,
        now: SystemTime,
        window: Duration,
        width: usize,
        get: impl Fn(&Point) -> Option<T>,
    ) -> Vec<Column<T>> {
        let mut out = vec![Column::Empty; width];
        if width == 0 || window.is_zero() {
            return out;
        }
        let mut touched = vec![false; width];
        let start = now.checked_sub(window).unwrap_or(SystemTime::UNIX_EPOCH);
        for p in &self.points {
            let Ok(offset) = p.at.duration_since(start) else {
                continue;
            };
            let col = (offset.as_secs_f64() / window.as_secs_f64() * width as f64) as usize;
            let col = col.min(width - 1);
            touched[col] = true;
            out[col] = match (out[col], get(p)) {
                (Column::Gap, _) | (_, None) => Column::Gap,
                (Column::Value(o), Some(v)) => Column::Value(o.max(v)),
                (Column::Empty, Some(v)) => Column::Value(v),
            };
        }
        let mut last = Column::Empty;
        for (c, was_touched) in out.iter_mut().zip(touched) {
            if was_touched {
                last = *c;
            } else {
                // A quiet column continues whatever came before it: a value or a failure.
                *c = last;
            }
        }
        out
    }
}

/// One column of a history chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column<T> {
    /// Before the first sample.
    Empty,
    Value(T),
    /// A read failed here.
    Gap,
}

impl Column<u64> {
    /// For ratatui's `Sparkline`: no data yet is a blank bar, a failed read is absent.
    pub fn bar(self) -> Option<u64> {
        match self {
            Column::Empty => Some(0),
            Column::Value(v) => Some(v),
            Column::Gap => None,
        }
    }
}

/// History of every device, by index.
#[derive(Debug, Clone)]
pub struct History {
    pub window: Duration,
    pub devices: Vec<DeviceHistory>,
}

impl History {
    pub fn new(window: Duration) -> Self {
        History {
            window,
            devices: Vec::new(),
        }
    }

    pub fn record(&mut self, sample: &Sample) {
        for d in &sample.devices {
            let i = d.index as usize;
            if self.devices.len() <= i {
                self.devices.resize_with(i + 1, DeviceHistory::default);
            }
            let h = &mut self.devices[i];
            h.points.push_back(Point {
                at: sample.timestamp,
                used: if d.error.is_some() {
                    None
                } else {
                    d.memory.used_bytes
                },
                util: if d.error.is_some() {
                    None
                } else {
                    d.utilization.gpu_percent
                },
            });
            let oldest = sample.timestamp.checked_sub(self.window);
            while h.points.len() > MAX_POINTS
                || h.points
                    .front()
                    .is_some_and(|p| oldest.is_some_and(|o| p.at < o))
            {
                h.points.pop_front();
            }
        }
    }

    pub fn device(&self, index: u32) -> Option<&DeviceHistory> {
        self.devices.get(index as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Device, Memory};

    fn sample(t: u64, used: Option<u64>, lost: bool) -> Sample {
        Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(t),
            hostname: None,
            source: "simulated",
            driver_version: None,
            cuda_version: None,
            devices: vec![Device {
                memory: Memory {
                    used_bytes: used,
                    ..Memory::default()
                },
                error: lost.then(|| "GPU is lost".into()),
                ..Device::default()
            }],
            error: None,
        }
    }

    #[test]
    fn window_prunes_and_gaps_stay_gaps() {
        let mut h = History::new(Duration::from_secs(10));
        for t in 0..30 {
            h.record(&sample(t, Some(t * 10), t == 25));
        }
        let d = h.device(0).expect("device 0");
        assert_eq!(d.points.len(), 11, "only the last 10 s are kept");
        assert_eq!(
            d.points.front().map(|p| p.at),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(19))
        );
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(29);
        let cols = d.columns(now, Duration::from_secs(10), 10, |p| p.used);
        assert_eq!(cols[6], Column::Gap, "the lost sample at t=25 is a gap");
        assert_eq!(cols[9], Column::Value(290));
        // Before the first sample: empty, not a failure.
        let cols = d.columns(now, Duration::from_secs(40), 40, |p| p.used);
        assert_eq!(cols[0], Column::Empty);
        // Sparse samples hold their value across empty columns.
        let cols = d.columns(now, Duration::from_secs(10), 40, |p| p.used);
        assert_eq!(cols[38], cols[37]);
        assert_eq!(d.peak_used().map(|p| p.value), Some(290));
    }

    #[test]
    fn count_is_capped() {
        let mut h = History::new(Duration::from_secs(1_000_000));
        for t in 0..(MAX_POINTS as u64 + 100) {
            h.record(&sample(t, Some(1), false));
        }
        assert_eq!(h.device(0).map(|d| d.points.len()), Some(MAX_POINTS));
    }
}
