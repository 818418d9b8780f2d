//! Per-device history for the charts: a ring buffer bounded by a time window and a count.
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
    /// Unix milliseconds (integers keep the per-frame bucketing cheap).
    pub ms: u64,
    pub used: Option<u64>,
    pub util: Option<u32>,
}

#[derive(Debug, Clone, Default)]
pub struct DeviceHistory {
    pub points: VecDeque<Point>,
    /// Candidates for the window's peak used memory, decreasing: the front is the peak. A
    /// monotonic queue, so the peak costs O(1) per sample instead of a scan per frame.
    peaks: VecDeque<(u64, u64)>,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The highest value in a window, and when it happened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peak {
    pub value: u64,
    pub at: SystemTime,
}

impl DeviceHistory {
    pub fn peak_used(&self) -> Option<Peak> {
        self.peaks.front().map(|&(ms, value)| Peak {
            value,
            at: SystemTime::UNIX_EPOCH + Duration::from_millis(ms),
        })
    }

    fn push(&mut self, p: Point) {
        if let Some(v) = p.used {
            // Earlier values no larger than this one can never be the peak again.
            while self.peaks.back().is_some_and(|&(_, b)| b <= v) {
                self.peaks.pop_back();
            }
            self.peaks.push_back((p.ms, v));
        }
        self.points.push_back(p);
    }

    fn pop_front(&mut self) {
        if let Some(old) = self.points.pop_front() {
            if self.peaks.front().is_some_and(|&(ms, _)| ms <= old.ms) {
                self.peaks.pop_front();
            }
        }
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
        let window_ms = (window.as_millis() as u64).max(1);
        let start = unix_ms(now).saturating_sub(window_ms);
        for p in &self.points {
            if p.ms < start {
                continue;
            }
            let col = ((p.ms - start) as u128 * width as u128 / window_ms as u128) as usize;
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
            let ms = unix_ms(sample.timestamp);
            let failed = d.error.is_some();
            if failed {
                // A lost or stalled device: a gap, never its last values drawn again.
                h.push(Point {
                    ms,
                    used: None,
                    util: None,
                });
            } else {
                // Each reading once, at the time it was taken: a device that answers late
                // is shown with its previous reading, which is already here.
                let taken = d.data_time(sample.timestamp).map_or(ms, unix_ms);
                if h.points.back().is_none_or(|p| p.ms < taken) {
                    h.push(Point {
                        ms: taken,
                        used: d.memory.used_bytes,
                        util: d.utilization.gpu_percent,
                    });
                }
            }
            let oldest = ms.saturating_sub(self.window.as_millis() as u64);
            while h.points.len() > MAX_POINTS || h.points.front().is_some_and(|p| p.ms < oldest) {
                h.pop_front();
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
        assert_eq!(d.points.front().map(|p| p.ms), Some(19_000));
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
    fn the_peak_follows_the_window() {
        let mut h = History::new(Duration::from_secs(5));
        let values = [1, 9, 3, 7, 2, 2, 2, 2, 2, 2, 1];
        for (t, v) in values.iter().enumerate() {
            h.record(&sample(t as u64, Some(*v), false));
            let d = h.device(0).expect("device");
            let window_max = values[t.saturating_sub(5)..=t].iter().max().copied();
            assert_eq!(d.peak_used().map(|p| p.value), window_max, "at t={t}");
        }
        let d = h.device(0).expect("device");
        assert_eq!(
            d.peak_used().map(|p| p.at),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(9)),
            "the latest of equal values is the one that stays longest"
        );
    }

    #[test]
    fn a_late_reading_is_recorded_once_at_the_time_it_was_taken() {
        let mut h = History::new(Duration::from_secs(60));
        let mut s = sample(10, Some(5), false);
        s.devices[0].data_age_ms = Some(0);
        h.record(&s);
        // The same reading shown again a second later (the device has not answered since).
        let mut late = sample(11, Some(5), false);
        late.devices[0].data_age_ms = Some(1000);
        h.record(&late);
        let d = h.device(0).expect("device");
        assert_eq!(d.points.len(), 1, "not recorded twice");
        // Stalled: a gap at the sample's time.
        let mut stalled = sample(12, Some(5), false);
        stalled.devices[0].stalled = true;
        stalled.devices[0].error = Some("not responding for 2 s".into());
        stalled.devices[0].data_age_ms = Some(2000);
        h.record(&stalled);
        let d = h.device(0).expect("device");
        assert_eq!(d.points.len(), 2);
        assert_eq!(
            d.points.back().map(|p| (p.ms, p.used)),
            Some((12_000, None))
        );
        assert_eq!(
            d.peak_used().map(|p| p.at),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(10))
        );
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
