//! Per-device history for the charts: a ring buffer bounded by a time window and a count.
//!
//! A failed read is kept as a gap (`None`), so a chart shows where samples were missing
//! instead of drawing a line through them.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, SystemTime};

use super::Sample;

/// Hard cap per device, whatever the window and interval (10 ms × 8192 ≈ 82 s, 1 s ≈ 2.3 h).
pub const MAX_POINTS: usize = 8192;

/// A byte count that may be unknown, in 8 bytes instead of `Option<u64>`'s 16: a dashboard
/// left running keeps hundreds of points per series, and the saving is its largest heap item.
/// `u64::MAX` (16 EiB, no GPU's size) stands for unknown.
#[derive(Clone, Copy, PartialEq, Eq)]
struct MaybeBytes(u64);

impl MaybeBytes {
    fn new(v: Option<u64>) -> Self {
        MaybeBytes(v.map_or(u64::MAX, |v| v.min(u64::MAX - 1)))
    }

    fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }
}

impl std::fmt::Debug for MaybeBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// One device reading: 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Unix milliseconds (integers keep the per-frame bucketing cheap).
    pub ms: u64,
    used: MaybeBytes,
    /// The highest used memory since the previous reading (the peak-hold), where measured.
    peak: MaybeBytes,
    /// Percent; NVML's 0–100 fits in a byte (anything larger is kept as 255).
    util: Option<u8>,
    /// On shared memory, what the system could still give ([`crate::model::unified`]'s
    /// headroom), in MiB: a chart's line needs no finer, and it fits in the padding, so the
    /// point stays 32 bytes. `u32::MAX` is unknown (and a discrete GPU's).
    headroom_mib: u32,
}

impl Point {
    pub fn new(ms: u64, used: Option<u64>, util: Option<u32>) -> Self {
        Point {
            ms,
            used: MaybeBytes::new(used),
            peak: MaybeBytes::new(None),
            util: util.map(|u| u8::try_from(u).unwrap_or(u8::MAX)),
            headroom_mib: u32::MAX,
        }
    }

    /// With the shared memory's headroom (bytes, kept in whole MiB).
    pub fn with_headroom(mut self, headroom: Option<u64>) -> Self {
        self.headroom_mib = headroom.map_or(u32::MAX, |h| {
            u32::try_from(h >> 20)
                .unwrap_or(u32::MAX - 1)
                .min(u32::MAX - 1)
        });
        self
    }

    /// The headroom in bytes (to the MiB); `None` where unknown.
    pub fn headroom(&self) -> Option<u64> {
        (self.headroom_mib != u32::MAX).then(|| u64::from(self.headroom_mib) << 20)
    }

    /// With the highest used memory since the previous reading ([`crate::model::MemoryPeak`]).
    pub fn with_peak(mut self, peak: Option<u64>) -> Self {
        self.peak = MaybeBytes::new(peak);
        self
    }

    pub fn used(&self) -> Option<u64> {
        self.used.get()
    }

    /// The highest used memory this point stands for: the peak between readings where it was
    /// measured, else the reading (unknown where the reading is).
    pub fn top(&self) -> Option<u64> {
        let used = self.used()?;
        Some(self.peak.get().map_or(used, |p| p.max(used)))
    }

    pub fn util(&self) -> Option<u32> {
        self.util.map(u32::from)
    }
}

/// Appends to a series, growing it by a quarter rather than doubling: a series fills to its
/// window and stays there, so doubling would leave up to half its capacity unused for good.
fn push_series<T>(q: &mut VecDeque<T>, v: T) {
    if q.len() == q.capacity() {
        q.reserve_exact((q.len() / 4).max(16));
    }
    q.push_back(v);
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
        if let Some(v) = p.top() {
            // Earlier values no larger than this one can never be the peak again.
            while self.peaks.back().is_some_and(|&(_, b)| b <= v) {
                self.peaks.pop_back();
            }
            self.peaks.push_back((p.ms, v));
        }
        push_series(&mut self.points, p);
    }

    fn pop_front(&mut self) {
        if let Some(old) = self.points.pop_front() {
            if self.peaks.front().is_some_and(|&(ms, _)| ms <= old.ms) {
                self.peaks.pop_front();
            }
        }
    }

    /// `width` columns over `[now - window, now]`: see [`columns`].
    pub fn columns<T: Copy + Ord>(
        &self,
        now: SystemTime,
        window: Duration,
        width: usize,
        get: impl Fn(&Point) -> Option<T>,
    ) -> Vec<Column<T>> {
        columns(
            self.points.iter().map(|p| (p.ms, p)),
            now,
            window,
            width,
            get,
        )
    }
}

/// `width` columns over `[now - window, now]`, each the maximum of its samples. A column
/// holding a failed read is a [`Column::Gap`]; columns before the first sample are
/// [`Column::Empty`]; a column no sample fell into (the interval is longer than a column)
/// continues the column before it (a value, or a gap).
pub fn columns<'a, P: 'a, T: Copy + Ord>(
    points: impl Iterator<Item = (u64, &'a P)>,
    now: SystemTime,
    window: Duration,
    width: usize,
    get: impl Fn(&P) -> Option<T>,
) -> Vec<Column<T>> {
    let mut out = vec![Column::Empty; width];
    if width == 0 || window.is_zero() {
        return out;
    }
    let mut touched = vec![false; width];
    let window_ms = (window.as_millis() as u64).max(1);
    let start = unix_ms(now).saturating_sub(window_ms);
    for (ms, p) in points {
        if ms < start {
            continue;
        }
        let col = ((ms - start) as u128 * width as u128 / window_ms as u128) as usize;
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

/// Cap per tracked process (a 10 ms interval fills it in 20 s; 1 s in 34 min).
pub const MAX_PROCESS_POINTS: usize = 2048;

/// One reading of a tracked process: 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessPoint {
    pub ms: u64,
    gpu: MaybeBytes,
    allocated: MaybeBytes,
    reserved: MaybeBytes,
}

impl ProcessPoint {
    pub fn new(ms: u64, gpu: Option<u64>, allocated: Option<u64>, reserved: Option<u64>) -> Self {
        ProcessPoint {
            ms,
            gpu: MaybeBytes::new(gpu),
            allocated: MaybeBytes::new(allocated),
            reserved: MaybeBytes::new(reserved),
        }
    }

    /// NVML's per-process total; `None` where the GPU failed or NVML could not tell.
    pub fn gpu(&self) -> Option<u64> {
        self.gpu.get()
    }

    /// The allocator's figures, when the probe reports them.
    pub fn allocated(&self) -> Option<u64> {
        self.allocated.get()
    }

    pub fn reserved(&self) -> Option<u64> {
        self.reserved.get()
    }
}

/// The memory of one process on one GPU over time, kept only while the dashboard tracks it
/// (the largest processes and the selected one), so that a node with hundreds of processes
/// does not pay for hundreds of series.
#[derive(Debug, Clone, Default)]
pub struct ProcessHistory {
    pub points: VecDeque<ProcessPoint>,
}

impl ProcessHistory {
    pub fn columns<T: Copy + Ord>(
        &self,
        now: SystemTime,
        window: Duration,
        width: usize,
        get: impl Fn(&ProcessPoint) -> Option<T>,
    ) -> Vec<Column<T>> {
        columns(
            self.points.iter().map(|p| (p.ms, p)),
            now,
            window,
            width,
            get,
        )
    }

    /// The highest of `get` over the points kept.
    pub fn max(&self, get: impl Fn(&ProcessPoint) -> Option<u64>) -> Option<u64> {
        self.points.iter().filter_map(get).max()
    }

    /// When tracking started (the first point kept).
    pub fn since(&self) -> Option<SystemTime> {
        self.points
            .front()
            .map(|p| SystemTime::UNIX_EPOCH + Duration::from_millis(p.ms))
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

/// History of every device, by index. A map, not a vector indexed by it: an index is a
/// number from wherever the sample came (a remote node, a recording, a Prometheus label), and
/// 4294967295 must cost one entry, not 256 GiB.
#[derive(Debug, Clone)]
pub struct History {
    pub window: Duration,
    pub devices: BTreeMap<u32, DeviceHistory>,
    /// Tracked processes by (GPU index, pid): see [`History::track`].
    pub processes: HashMap<(u32, u32), ProcessHistory>,
}

impl History {
    pub fn new(window: Duration) -> Self {
        History {
            window,
            devices: BTreeMap::new(),
            processes: HashMap::new(),
        }
    }

    pub fn record(&mut self, sample: &Sample) {
        for d in &sample.devices {
            let h = self.devices.entry(d.index).or_default();
            let ms = unix_ms(sample.timestamp);
            let failed = d.error.is_some();
            if d.late {
                // No reading this tick: the one in flight is recorded, at the time it was
                // taken, when it comes.
            } else if failed {
                // A lost or stalled device: a gap, never its last values drawn again.
                h.push(Point::new(ms, None, None));
            } else {
                // Each reading once, at the time it was taken: a device that answers late
                // is shown with its previous reading, which is already here.
                let taken = d.data_time(sample.timestamp).map_or(ms, unix_ms);
                if h.points.back().is_none_or(|p| p.ms < taken) {
                    h.push(
                        // The GPU-held figure: NVML's used, or on a part that reports
                        // none, its processes' sum (derived); never the host's use.
                        Point::new(
                            taken,
                            super::unified::gpu_held_of(d),
                            d.utilization.gpu_percent,
                        )
                        .with_peak(d.peak.map(|p| p.used_bytes))
                        .with_headroom(d.shared_memory.as_ref().and_then(|s| s.headroom_bytes)),
                    );
                }
            }
            let oldest = ms.saturating_sub(self.window.as_millis() as u64);
            while h.points.len() > MAX_POINTS || h.points.front().is_some_and(|p| p.ms < oldest) {
                h.pop_front();
            }
        }
    }

    pub fn device(&self, index: u32) -> Option<&DeviceHistory> {
        self.devices.get(&index)
    }

    /// Records the processes in `wanted` (GPU index, pid) from `sample` and forgets every other
    /// series. A process that has exited keeps its series while it is wanted; a GPU that
    /// failed records a gap.
    pub fn track(&mut self, sample: &Sample, wanted: &[(u32, u32)]) {
        self.processes.retain(|k, _| wanted.contains(k));
        let now = unix_ms(sample.timestamp);
        let oldest = now.saturating_sub(self.window.as_millis() as u64);
        for &(gpu, pid) in wanted {
            let Some(d) = sample.devices.iter().find(|d| d.index == gpu) else {
                continue;
            };
            let h = self.processes.entry((gpu, pid)).or_default();
            let point = if d.error.is_some() {
                ProcessPoint::new(now, None, None, None)
            } else {
                let taken = d.data_time(sample.timestamp).map_or(now, unix_ms);
                if h.points.back().is_some_and(|p| p.ms >= taken) {
                    continue;
                }
                match d.processes.iter().find(|p| p.pid == pid) {
                    Some(p) => ProcessPoint::new(
                        taken,
                        p.gpu_memory_bytes,
                        p.allocator.as_ref().and_then(|a| a.allocated_bytes),
                        p.allocator.as_ref().and_then(|a| a.reserved_bytes),
                    ),
                    // Gone from the GPU: it holds nothing there any more.
                    None => ProcessPoint::new(taken, Some(0), None, None),
                }
            };
            push_series(&mut h.points, point);
            while h.points.len() > MAX_PROCESS_POINTS
                || h.points.front().is_some_and(|p| p.ms < oldest)
            {
                h.points.pop_front();
            }
        }
    }

    pub fn process(&self, gpu: u32, pid: u32) -> Option<&ProcessHistory> {
        self.processes.get(&(gpu, pid))
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
            host: None,
        }
    }

    #[test]
    fn points_are_compact_and_keep_unknown_apart_from_zero() {
        assert_eq!(std::mem::size_of::<Point>(), 32);
        assert_eq!(std::mem::size_of::<ProcessPoint>(), 32);
        let p = Point::new(5, Some(0), None);
        assert_eq!((p.used(), p.util()), (Some(0), None));
        let p = Point::new(5, None, Some(0));
        assert_eq!((p.used(), p.util()), (None, Some(0)));
        let p = Point::new(5, Some(u64::MAX), Some(100_000));
        assert_eq!((p.used(), p.util()), (Some(u64::MAX - 1), Some(255)));
        let q = ProcessPoint::new(1, Some(80 << 30), None, Some(3));
        assert_eq!(
            (q.gpu(), q.allocated(), q.reserved()),
            (Some(80 << 30), None, Some(3))
        );
    }

    #[test]
    fn a_full_window_holds_little_more_than_its_points() {
        let mut h = History::new(Duration::from_secs(600));
        for t in 0..2000 {
            h.record(&sample(t, Some(t), false));
        }
        let d = h.device(0).expect("recorded");
        assert_eq!(d.points.len(), 601);
        // Doubling would have left 1,024 slots.
        assert!(
            d.points.capacity() <= 601 * 5 / 4 + 16,
            "{}",
            d.points.capacity()
        );
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
        let cols = d.columns(now, Duration::from_secs(10), 10, |p| p.used());
        assert_eq!(cols[6], Column::Gap, "the lost sample at t=25 is a gap");
        assert_eq!(cols[9], Column::Value(290));
        // Before the first sample: empty, not a failure.
        let cols = d.columns(now, Duration::from_secs(40), 40, |p| p.used());
        assert_eq!(cols[0], Column::Empty);
        // Sparse samples hold their value across empty columns.
        let cols = d.columns(now, Duration::from_secs(10), 40, |p| p.used());
        assert_eq!(cols[38], cols[37]);
        assert_eq!(d.peak_used().map(|p| p.value), Some(290));
    }

    #[test]
    fn a_spike_between_readings_is_its_columns_value_and_the_windows_peak() {
        let mut h = History::new(Duration::from_secs(10));
        for t in 0..10 {
            let mut s = sample(t, Some(20), false);
            // Between the readings at 4 and 5 s, 78 for a moment; unmeasured at 7 s.
            s.devices[0].peak = (t != 7).then_some(crate::model::MemoryPeak {
                used_bytes: if t == 5 { 78 } else { 20 },
                at: s.timestamp,
                window_ms: 1000,
                reads: 50,
            });
            h.record(&s);
        }
        let d = h.device(0).expect("device 0");
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(9);
        let cols = d.columns(now, Duration::from_secs(10), 10, |p| p.top());
        assert_eq!(cols[5], Column::Value(78), "the column of the 5 s reading");
        assert_eq!(
            cols[7],
            Column::Value(20),
            "an unmeasured peak is the reading"
        );
        let used = d.columns(now, Duration::from_secs(10), 10, |p| p.used());
        assert_eq!(used[5], Column::Value(20), "what the readings alone show");
        assert_eq!(d.peak_used().map(|p| p.value), Some(78));
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
            d.points.back().map(|p| (p.ms, p.used())),
            Some((12_000, None))
        );
        assert_eq!(
            d.peak_used().map(|p| p.at),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(10))
        );
    }

    #[test]
    fn only_tracked_processes_have_series_and_an_exit_reads_zero() {
        use crate::model::{Process, ProcessKind};
        let mut h = History::new(Duration::from_secs(60));
        let mut s = sample(1, Some(5), false);
        s.devices[0].processes = vec![
            Process::from_nvml(7, ProcessKind::Compute, Some(100)),
            Process::from_nvml(8, ProcessKind::Compute, Some(200)),
        ];
        h.track(&s, &[(0, 7)]);
        assert!(h.process(0, 8).is_none(), "untracked");
        let mut s2 = sample(2, Some(5), false);
        s2.devices[0].processes = vec![Process::from_nvml(8, ProcessKind::Compute, Some(200))];
        h.track(&s2, &[(0, 7), (0, 8)]);
        let p7 = h.process(0, 7).expect("tracked");
        assert_eq!(
            p7.points.iter().map(|p| p.gpu()).collect::<Vec<_>>(),
            vec![Some(100), Some(0)]
        );
        assert_eq!(p7.max(|p| p.gpu()), Some(100));
        h.track(&s2, &[(0, 8)]);
        assert!(h.process(0, 7).is_none(), "forgotten when no longer wanted");
    }

    #[test]
    fn a_part_that_reports_no_memory_records_its_gpu_held_figure() {
        use crate::model::unified::{MemoryMethod, SharedMemory};
        let mut h = History::new(Duration::from_secs(60));
        let mut s = sample(1, None, false);
        s.devices[0].shared_memory = Some(SharedMemory {
            method: MemoryMethod::ProcessSum,
            gpu_held_bytes: Some(63 << 30),
            system_total_bytes: Some(120 << 30),
            system_available_bytes: Some(43 << 30),
            headroom_bytes: Some(43 << 30),
            pressure: None,
            coherent_mode: None,
            hbm_node: None,
        });
        h.record(&s);
        // Not a gap, and not the system's 77 GiB in use: the processes' 63 GiB; beside it
        // what the system can still give.
        let p = h.device(0).and_then(|d| d.points.back()).copied();
        assert_eq!(
            p.map(|p| (p.used(), p.headroom())),
            Some((Some(63 << 30), Some(43 << 30)))
        );
        assert_eq!(Point::new(0, Some(1), None).headroom(), None);
        assert_eq!(
            Point::new(0, None, None)
                .with_headroom(Some((1 << 20) + 5))
                .headroom(),
            Some(1 << 20)
        );
        assert_eq!(
            Point::new(0, None, None)
                .with_headroom(Some(u64::MAX))
                .headroom(),
            Some(u64::from(u32::MAX - 1) << 20)
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

    /// P2: an index from elsewhere (a node, a recording, a Prometheus label) of 2^32 - 1 is
    /// one entry; a vector indexed by it asked for 256 GiB and aborted the dashboard.
    #[test]
    fn a_huge_device_index_costs_one_entry() {
        let mut h = History::new(Duration::from_secs(60));
        let mut s = sample(1, Some(5), false);
        s.devices[0].index = u32::MAX;
        h.record(&s);
        assert_eq!(h.devices.len(), 1);
        assert_eq!(h.device(u32::MAX).map(|d| d.points.len()), Some(1));
        assert!(h.device(0).is_none());
    }
}
