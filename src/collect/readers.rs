//! The per-device readers: blocking workers that read the GPUs, so that a driver call that
//! hangs on one GPU never holds up the others, and never has a second call piled on it.
//!
//! A device is read by whichever worker claims it, and it is claimable only while no call on
//! it is outstanding, so a hung call occupies one worker and never has a second call piled on
//! it. To keep a tick cheap, one free worker is woken and claims the wanted devices in order
//! (one wake-up, no threads contending for the driver). If the round has not finished after a
//! short relay delay, the worker may be blocked on a hung device: another free worker (started
//! then, if none is idle) is woken to claim what is left, and so on. So there are as many
//! threads as hung devices plus one, at most one per device, and a healthy machine runs one.
//!
//! Between readings, the same workers read each device's memory alone at the peak rate
//! (`--peak-rate`, [`Readers::set_peak_interval`]): an idle worker wakes for each round and
//! reads every device that has no call outstanding, so a hung device is skipped, never
//! waited for. Each reading then carries the highest used memory since the previous one
//! ([`MemoryPeak`]), which a reading once a second would miss.
//!
//! The sampler hands each device the cgroups of its processes ([`Readers::set_cgroups`]);
//! each reading then also asks the device for their GPU memory limits
//! ([`DeviceReader::read_limits`], `nvmlDeviceGetMemoryLimits_v1`), on the same worker and
//! within the same single outstanding call, so the driver is never called from the sampler's
//! thread and a hung device holds up only itself. [`Readers::read_limits`] asks for the
//! limits alone, for a view that samples once.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant, SystemTime};

use crate::collect::source::{CgroupLimits, DeviceReader, MemoryNow};
use crate::model::{Device, MemoryPeak};

/// A reading of one device and when it arrived.
#[derive(Debug)]
pub struct Reading {
    pub slot: usize,
    pub device: Device,
    pub at: Instant,
}

struct Slot {
    reader: Mutex<Box<dyn DeviceReader>>,
    /// True while a call on the device is outstanding (a reading or a memory-only read): the
    /// device is claimed by setting it, so no second call is ever made while one hangs.
    in_call: AtomicBool,
    /// The highest memory read since the last reading.
    hold: Mutex<Hold>,
    /// The ask a reading is wanted for, until a worker claims it by swapping in 0.
    wanted: AtomicU32,
    /// The last reading, until the sampler takes it.
    reading: Mutex<Option<(Device, Instant)>>,
    /// The cgroups of the device's processes, as the sampler last handed them: each reading
    /// asks the device for their GPU memory limits ([`DeviceReader::read_limits`]).
    cgroups: Mutex<Arc<[Arc<str>]>>,
    /// The wanted call is the limits alone ([`Readers::read_limits`]), not a reading.
    limits_only: AtomicBool,
    /// The limits last read, until the sampler takes them.
    limits: Mutex<Option<CgroupLimits>>,
}

struct Shared {
    slots: Vec<Slot>,
    /// The current ask in the high half, the readings still to come for it in the low half.
    ask: AtomicU64,
    /// Who waits for the current ask.
    waiter: Mutex<Option<Waiter>>,
    stop: AtomicBool,
    /// Microseconds between memory-only rounds; 0: the peak-hold is off.
    peak_every_us: AtomicU64,
    /// When the next memory-only round is due, in microseconds since `epoch`.
    next_round_us: AtomicU64,
    epoch: Instant,
}

/// The highest memory read in one window, from the previous reading to the next.
#[derive(Debug, Clone, Copy)]
struct Hold {
    since: Instant,
    best: Option<(u64, SystemTime)>,
    reads: u32,
}

impl Hold {
    fn new(since: Instant) -> Hold {
        Hold {
            since,
            best: None,
            reads: 0,
        }
    }

    /// Counts a read taken at `at`; an impossible one (used above total) or a failed one is
    /// no peak.
    fn fold(&mut self, m: Option<MemoryNow>, at: SystemTime) {
        let Some(m) = m.filter(|m| m.used <= m.total) else {
            return;
        };
        self.reads = self.reads.saturating_add(1);
        if self.best.is_none_or(|(b, _)| m.used > b) {
            self.best = Some((m.used, at));
        }
    }

    /// The window's peak (`None`: nothing was read in it), and a new window from `now`.
    fn take(&mut self, now: Instant) -> Option<MemoryPeak> {
        let window = now.saturating_duration_since(self.since);
        let peak = self.best.map(|(used_bytes, at)| MemoryPeak {
            used_bytes,
            at,
            window_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX),
            reads: self.reads,
        });
        *self = Hold::new(now);
        peak
    }
}

/// Two consecutive windows' peaks as one (a reading replaced before the sampler took it).
fn merge(earlier: Option<MemoryPeak>, later: Option<MemoryPeak>) -> Option<MemoryPeak> {
    match (earlier, later) {
        (Some(a), Some(b)) => {
            let best = if a.used_bytes > b.used_bytes { a } else { b };
            Some(MemoryPeak {
                window_ms: a.window_ms.saturating_add(b.window_ms),
                reads: a.reads.saturating_add(b.reads),
                ..best
            })
        }
        (a, b) => b.or(a),
    }
}

/// The memory a full reading holds, for the peak-hold (none from a failed device).
fn memory_now(d: &Device) -> Option<MemoryNow> {
    if d.error.is_some() {
        return None;
    }
    Some(MemoryNow {
        used: d.memory.used_bytes?,
        total: d.memory.total_bytes?,
    })
}

/// Who is told when the last reading of an ask arrives.
#[derive(Clone)]
pub enum Waiter {
    /// A thread parked in [`Readers::read`].
    Thread(Thread),
    /// An async task (the sampler's loop on tokio).
    Notify(Arc<tokio::sync::Notify>),
}

impl Waiter {
    fn wake(&self) {
        match self {
            Waiter::Thread(t) => t.unpark(),
            // A permit is kept if the task is not waiting yet: no wake-up is lost.
            Waiter::Notify(n) => n.notify_one(),
        }
    }
}

struct Worker {
    thread: Thread,
    /// True while it claims or reads a device: such a worker may be blocked in the driver.
    busy: Arc<AtomicBool>,
    /// True during a round of memory-only reads: asked for readings then, it serves them
    /// after the round, so no worker is started for them unless the round is slow (the relay).
    peaking: Arc<AtomicBool>,
    join: Option<JoinHandle<()>>,
}

pub struct Readers {
    shared: Arc<Shared>,
    workers: Vec<Worker>,
    ask: u32,
    /// Why no worker could be started.
    broken: Option<String>,
    /// How long the last complete round of reads took, for the relay delay.
    typical: Duration,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Shortest and longest relay delay: long enough for a healthy round of reads, short enough
/// that the devices after a hung one are read well within an interval.
const RELAY_MIN: Duration = Duration::from_millis(2);
const RELAY_MAX: Duration = Duration::from_millis(50);
/// The shortest wait of a periodic sample for its readings.
pub const GRACE_MIN: Duration = Duration::from_millis(100);

impl Shared {
    /// One reading for ask `ask` has arrived: the last one wakes the waiter.
    fn arrived(&self, ask: u32) {
        let mut cur = self.ask.load(SeqCst);
        loop {
            if (cur >> 32) as u32 != ask || cur as u32 == 0 {
                return;
            }
            match self.ask.compare_exchange_weak(cur, cur - 1, SeqCst, SeqCst) {
                Ok(_) => {
                    if cur as u32 == 1 {
                        if let Some(w) = lock(&self.waiter).as_ref() {
                            w.wake();
                        }
                    }
                    return;
                }
                Err(now) => cur = now,
            }
        }
    }

    /// The interval between memory-only rounds (`None`: the peak-hold is off).
    fn peak_every(&self) -> Option<Duration> {
        match self.peak_every_us.load(SeqCst) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    fn now_us(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// How long until the next memory-only round is due.
    fn until_round(&self) -> Duration {
        let next = self.next_round_us.load(SeqCst);
        Duration::from_micros(next.saturating_sub(self.now_us()))
    }

    /// Whether this worker takes the round that is due (one worker per round); the next is
    /// due one interval later, or one interval from now after a round was missed.
    fn claim_round(&self, every: Duration) -> bool {
        let now = self.now_us();
        let next = self.next_round_us.load(SeqCst);
        if now < next {
            return false;
        }
        let every = u64::try_from(every.as_micros()).unwrap_or(u64::MAX);
        let after = if now - next < every {
            next.saturating_add(every)
        } else {
            now.saturating_add(every)
        };
        self.next_round_us
            .compare_exchange(next, after, SeqCst, SeqCst)
            .is_ok()
    }

    fn work(&self, busy: &AtomicBool, peaking: &AtomicBool) {
        loop {
            match self.peak_every() {
                None => std::thread::park(),
                Some(_) => std::thread::park_timeout(self.until_round()),
            }
            if self.stop.load(SeqCst) {
                return;
            }
            for slot in &self.slots {
                // Busy before the claim, so that shutting down never joins a worker that is
                // about to call into the driver.
                busy.store(true, SeqCst);
                self.read_wanted(slot);
                busy.store(false, SeqCst);
                if self.stop.load(SeqCst) {
                    return;
                }
            }
            let Some(every) = self.peak_every() else {
                continue;
            };
            if !self.claim_round(every) {
                continue;
            }
            peaking.store(true, SeqCst);
            for slot in &self.slots {
                busy.store(true, SeqCst);
                self.read_peak(slot);
                busy.store(false, SeqCst);
                if self.stop.load(SeqCst) {
                    peaking.store(false, SeqCst);
                    return;
                }
            }
            peaking.store(false, SeqCst);
            // Readings asked for during the round, whose ask found this worker peaking.
            for slot in &self.slots {
                busy.store(true, SeqCst);
                self.read_wanted(slot);
                busy.store(false, SeqCst);
                if self.stop.load(SeqCst) {
                    return;
                }
            }
        }
    }

    /// Reads the device when a reading is wanted and no call on it is outstanding (a
    /// memory-only read that has not returned: its worker serves the reading after it).
    fn read_wanted(&self, slot: &Slot) {
        while slot.wanted.load(SeqCst) != 0 && claim(slot) {
            let ask = slot.wanted.swap(0, SeqCst);
            if ask == 0 {
                slot.in_call.store(false, SeqCst);
                continue;
            }
            let cgroups = Arc::clone(&*lock(&slot.cgroups));
            if slot.limits_only.swap(false, SeqCst) {
                let limits = lock(&slot.reader).read_limits(&cgroups);
                *lock(&slot.limits) = Some(limits);
                slot.in_call.store(false, SeqCst);
                self.arrived(ask);
                continue;
            }
            let mut device = {
                let mut reader = lock(&slot.reader);
                let device = reader.read();
                // The limits of the processes' cgroups, on this thread too: a hung device
                // holds up only itself. A failed device is not asked.
                if device.error.is_none() {
                    *lock(&slot.limits) = Some(reader.read_limits(&cgroups));
                }
                device
            };
            let now = Instant::now();
            if self.peak_every().is_some() {
                let mut hold = lock(&slot.hold);
                hold.fold(memory_now(&device), SystemTime::now());
                device.peak = hold.take(now);
            }
            {
                let mut reading = lock(&slot.reading);
                if let Some((untaken, _)) = reading.take() {
                    device.peak = merge(untaken.peak, device.peak);
                }
                *reading = Some((device, now));
            }
            slot.in_call.store(false, SeqCst);
            self.arrived(ask);
        }
    }

    /// One memory-only read of the device, unless a call on it is outstanding.
    fn read_peak(&self, slot: &Slot) {
        if !claim(slot) {
            return;
        }
        let m = lock(&slot.reader).read_memory();
        lock(&slot.hold).fold(m, SystemTime::now());
        slot.in_call.store(false, SeqCst);
        // A reading asked for while this read ran.
        self.read_wanted(slot);
    }
}

/// Claims the device for one call: false when a call on it is outstanding.
fn claim(slot: &Slot) -> bool {
    slot.in_call
        .compare_exchange(false, true, SeqCst, SeqCst)
        .is_ok()
}

impl Readers {
    /// Takes the readers; the first worker starts now and waits until asked.
    pub fn start(readers: Vec<Box<dyn DeviceReader>>) -> Readers {
        let shared = Arc::new(Shared {
            slots: readers
                .into_iter()
                .map(|r| Slot {
                    reader: Mutex::new(r),
                    in_call: AtomicBool::new(false),
                    hold: Mutex::new(Hold::new(Instant::now())),
                    wanted: AtomicU32::new(0),
                    reading: Mutex::new(None),
                    cgroups: Mutex::new(Arc::from(Vec::new())),
                    limits_only: AtomicBool::new(false),
                    limits: Mutex::new(None),
                })
                .collect(),
            ask: AtomicU64::new(0),
            waiter: Mutex::new(None),
            stop: AtomicBool::new(false),
            peak_every_us: AtomicU64::new(0),
            next_round_us: AtomicU64::new(0),
            epoch: Instant::now(),
        });
        let mut r = Readers {
            shared,
            workers: Vec::new(),
            ask: 0,
            broken: None,
            typical: RELAY_MIN,
        };
        if !r.is_empty() {
            if let Err(e) = r.spawn() {
                r.broken = Some(format!("cannot start a reader thread: {e}"));
            }
        }
        r
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        let busy = Arc::new(AtomicBool::new(false));
        let peaking = Arc::new(AtomicBool::new(false));
        let (s, b, p) = (
            Arc::clone(&self.shared),
            Arc::clone(&busy),
            Arc::clone(&peaking),
        );
        let join = std::thread::Builder::new()
            .name(format!("gpumon-read{}", self.workers.len()))
            .spawn(move || s.work(&b, &p))?;
        self.workers.push(Worker {
            thread: join.thread().clone(),
            busy,
            peaking,
            join: Some(join),
        });
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.shared.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.shared.slots.is_empty()
    }

    /// How many worker threads there are (one, plus one per device that hung).
    pub fn threads(&self) -> usize {
        self.workers.len()
    }

    /// Reads each device's memory alone every `every` between readings (`None`: never), and
    /// has each reading carry the highest memory since the previous one
    /// ([`Device::peak`]).
    pub fn set_peak_interval(&self, every: Option<Duration>) {
        let us = every.map_or(0, |d| {
            u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
        });
        let now = self.shared.now_us();
        for s in &self.shared.slots {
            *lock(&s.hold) = Hold::new(Instant::now());
        }
        self.shared.next_round_us.store(now, SeqCst);
        self.shared.peak_every_us.store(us, SeqCst);
        // An idle worker parked for good starts its rounds now.
        for w in &self.workers {
            w.thread.unpark();
        }
    }

    /// Why no device can be read at all (no worker thread could be started).
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Wakes one free worker, starting one if every worker is busy (blocked on a hung device)
    /// and there are fewer than devices. Whether one was woken. A worker in a round of
    /// memory-only reads counts as free at first (`relay`: not), since it serves the readings
    /// after its round: a healthy machine keeps one worker.
    fn wake_one(&mut self, relay: bool) -> bool {
        if let Some(w) = self.workers.iter().find(|w| !w.busy.load(SeqCst)) {
            w.thread.unpark();
            return true;
        }
        if !relay {
            if let Some(w) = self.workers.iter().find(|w| w.peaking.load(SeqCst)) {
                w.thread.unpark();
                return true;
            }
        }
        if self.workers.len() < self.len() && self.spawn().is_ok() {
            if let Some(w) = self.workers.last() {
                w.thread.unpark();
                return true;
            }
        }
        false
    }

    /// Asks for one reading of each of `slots` (none of which may have a read outstanding);
    /// `waiter` is told when the last one arrives. Returns at once: whether anything was asked.
    pub fn ask(&mut self, slots: &[usize], waiter: Waiter) -> bool {
        self.ask_for(slots, waiter, false)
    }

    /// [`Readers::ask`] for readings, or (`limits_only`) for the cgroups' limits alone. A
    /// reading asked of a device whose limits-only call has not begun replaces it (a reading
    /// reads the limits too).
    fn ask_for(&mut self, slots: &[usize], waiter: Waiter, limits_only: bool) -> bool {
        if slots.is_empty() || self.broken.is_some() {
            return false;
        }
        self.ask = self.ask.wrapping_add(1).max(1);
        *lock(&self.shared.waiter) = Some(waiter);
        self.shared
            .ask
            .store((u64::from(self.ask) << 32) | slots.len() as u64, SeqCst);
        for &i in slots {
            if let Some(slot) = self.shared.slots.get(i) {
                slot.limits_only.store(limits_only, SeqCst);
                slot.wanted.store(self.ask, SeqCst);
            }
        }
        self.wake_one(false);
        true
    }

    /// Hands device `slot`'s reader the cgroups of its processes, whose GPU memory limits its
    /// readings then carry ([`Readers::take_limits`]). Never waits on the device: the list is
    /// taken by the device's worker before its next call.
    pub fn set_cgroups(&self, slot: usize, cgroups: Arc<[Arc<str>]>) {
        if let Some(s) = self.shared.slots.get(slot) {
            *lock(&s.cgroups) = cgroups;
        }
    }

    /// Asks `slots` (none with a call outstanding) for the limits of their cgroups alone, not
    /// a reading, and waits on this thread until they have answered or `until`: for a view
    /// that samples once (`once`), whose processes' cgroups are known only after the reading.
    pub fn read_limits(&mut self, slots: &[usize], until: Instant) {
        self.wait(slots, until, true);
    }

    /// The limits read since the last call, per slot.
    pub fn take_limits(&self, mut f: impl FnMut(usize, CgroupLimits)) {
        for (slot, s) in self.shared.slots.iter().enumerate() {
            if let Some(limits) = lock(&s.limits).take() {
                f(slot, limits);
            }
        }
    }

    /// Whether every reading of the last ask has arrived.
    pub fn done(&self) -> bool {
        self.shared.ask.load(SeqCst) as u32 == 0
    }

    /// How long to let a round of reads run before [`Readers::relay`]: a few times what a
    /// healthy round takes.
    pub fn relay_delay(&self) -> Duration {
        (self.typical * 4).clamp(RELAY_MIN, RELAY_MAX)
    }

    /// How long a periodic sample waits for the devices' readings: ten healthy rounds, at
    /// least [`GRACE_MIN`]. A device slower than that is reported late in this sample.
    pub fn grace(&self) -> Duration {
        (self.typical * 10).max(GRACE_MIN)
    }

    /// The round is taking long: the worker may be blocked on a hung device, so let another
    /// claim what is left.
    pub fn relay(&mut self) {
        self.wake_one(true);
    }

    /// The round asked at `started` has completed (for the relay delay).
    pub fn completed(&mut self, started: Instant) {
        self.typical = started.elapsed();
    }

    /// [`Readers::ask`], then waits on this thread until all have arrived or `until`.
    pub fn read(&mut self, slots: &[usize], until: Instant) {
        self.wait(slots, until, false);
    }

    /// Asks and waits; a round of readings (not of `limits_only`) sets the relay delay.
    fn wait(&mut self, slots: &[usize], until: Instant, limits_only: bool) {
        let started = Instant::now();
        if !self.ask_for(slots, Waiter::Thread(std::thread::current()), limits_only) {
            return;
        }
        let relay = self.relay_delay();
        let mut relay_at = started + relay;
        loop {
            if self.done() {
                if !limits_only {
                    self.completed(started);
                }
                return;
            }
            let now = Instant::now();
            if now >= until {
                return;
            }
            if now >= relay_at {
                self.relay();
                relay_at = now + relay;
            }
            std::thread::park_timeout(relay_at.min(until).saturating_duration_since(now));
        }
    }

    /// Tells the workers to end, without waiting for them; nothing is read after this. For a
    /// process about to exit: its idle workers end while it writes its output, instead of
    /// being killed by the exit (a thread still alive then makes the exit 0.14 ms longer).
    pub fn dismiss(&mut self) {
        for s in &self.shared.slots {
            s.wanted.store(0, SeqCst);
        }
        self.shared.stop.store(true, SeqCst);
        for w in &self.workers {
            w.thread.unpark();
        }
        self.broken = Some("the device readers were stopped".into());
    }

    /// The readings that have arrived since the last call, from this ask or earlier ones.
    pub fn take(&self, mut f: impl FnMut(Reading)) {
        for (slot, s) in self.shared.slots.iter().enumerate() {
            if let Some((device, at)) = lock(&s.reading).take() {
                f(Reading { slot, device, at });
            }
        }
    }
}

impl Drop for Readers {
    /// Ends the idle workers and waits for them; a worker blocked in a driver call is left
    /// behind, never joined: the process may exit while it is blocked.
    fn drop(&mut self) {
        self.dismiss();
        for w in &mut self.workers {
            if !w.busy.load(SeqCst) {
                if let Some(j) = w.join.take() {
                    let _ = j.join();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    struct Quick(u32);
    impl DeviceReader for Quick {
        fn read(&mut self) -> Device {
            Device {
                index: self.0,
                ..Device::default()
            }
        }
    }

    /// Blocks until the test ends (its sender is dropped).
    struct Stuck(Mutex<mpsc::Receiver<()>>);
    impl DeviceReader for Stuck {
        fn read(&mut self) -> Device {
            let _ = lock(&self.0).recv();
            Device::failed(1, "released".into())
        }
    }

    const GIB: u64 = 1 << 30;

    /// A device at 20 GiB whose memory-only reads show 78 GiB once, on read `spike_at`: a
    /// spike between two readings. Counts its memory-only reads.
    struct Spiky {
        reads: Arc<AtomicU32>,
        spike_at: u32,
    }
    impl DeviceReader for Spiky {
        fn read(&mut self) -> Device {
            let mut d = Device::default();
            d.memory.total_bytes = Some(80 * GIB);
            d.memory.used_bytes = Some(20 * GIB);
            d
        }
        fn read_memory(&mut self) -> Option<MemoryNow> {
            let n = self.reads.fetch_add(1, SeqCst) + 1;
            let used = if n == self.spike_at { 78 } else { 20 };
            Some(MemoryNow {
                used: used * GIB,
                total: 80 * GIB,
            })
        }
    }

    /// Blocks in its memory-only reads until the test ends (saying when it has begun to);
    /// its readings answer at once.
    struct StuckMemory(Mutex<mpsc::Receiver<()>>, Arc<AtomicBool>);
    impl DeviceReader for StuckMemory {
        fn read(&mut self) -> Device {
            Device::default()
        }
        fn read_memory(&mut self) -> Option<MemoryNow> {
            self.1.store(true, SeqCst);
            let _ = lock(&self.0).recv();
            None
        }
    }

    /// Waits (bounded) until `f` holds.
    fn until(f: impl Fn() -> bool) {
        let give_up = Instant::now() + Duration::from_secs(20);
        while !f() && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn one_reading(r: &mut Readers, slots: &[usize]) -> Vec<Reading> {
        r.read(slots, Instant::now() + Duration::from_secs(10));
        let mut got = Vec::new();
        r.take(|reading| got.push(reading));
        got
    }

    #[test]
    fn a_spike_between_two_readings_is_the_next_readings_peak_and_only_its() {
        let reads = Arc::new(AtomicU32::new(0));
        let mut r = Readers::start(vec![Box::new(Spiky {
            reads: Arc::clone(&reads),
            spike_at: 3,
        })]);
        let first = one_reading(&mut r, &[0]);
        assert_eq!(first[0].device.peak, None, "the peak-hold is off");
        r.set_peak_interval(Some(Duration::from_millis(1)));
        until(|| reads.load(SeqCst) >= 5);
        let got = one_reading(&mut r, &[0]);
        let peak = got[0].device.peak.expect("a peak");
        assert_eq!(got[0].device.memory.used_bytes, Some(20 * GIB));
        assert_eq!(peak.used_bytes, 78 * GIB, "the spike the reading missed");
        assert!(
            peak.reads >= 5,
            "memory-only reads and the reading: {peak:?}"
        );
        // The next window starts after that reading: the spike is not reported twice.
        let n = reads.load(SeqCst);
        until(|| reads.load(SeqCst) >= n + 2);
        let next = one_reading(&mut r, &[0]);
        assert_eq!(next[0].device.peak.map(|p| p.used_bytes), Some(20 * GIB));
        r.set_peak_interval(None);
        let off = one_reading(&mut r, &[0]);
        assert_eq!(off[0].device.peak, None, "off again: not measured");
    }

    #[test]
    fn a_memory_read_that_hangs_holds_up_neither_the_other_devices_nor_their_readings() {
        let (_release, rx) = mpsc::channel();
        let reads = Arc::new(AtomicU32::new(0));
        let blocked = Arc::new(AtomicBool::new(false));
        let mut r = Readers::start(vec![
            Box::new(StuckMemory(Mutex::new(rx), Arc::clone(&blocked))),
            Box::new(Spiky {
                reads: Arc::clone(&reads),
                spike_at: u32::MAX,
            }),
        ]);
        r.set_peak_interval(Some(Duration::from_millis(1)));
        // The first round blocks the one worker on device 0 (device 1's memory is not read
        // until the next reading); the next reading starts another worker, which reads device
        // 1 and its memory from then on, and never calls device 0 while its read is out.
        until(|| blocked.load(SeqCst));
        let got = one_reading(&mut r, &[1]);
        assert_eq!(got.len(), 1);
        let n = reads.load(SeqCst);
        until(|| reads.load(SeqCst) >= n + 5);
        assert!(
            reads.load(SeqCst) >= n + 5,
            "device 1's memory is still read"
        );
        assert!(r.threads() <= 2, "at most one worker per device");
        let got = one_reading(&mut r, &[1]);
        assert!(got[0].device.peak.is_some());
    }

    #[test]
    fn the_peak_keeps_the_highest_possible_read_and_its_window() {
        let t0 = Instant::now();
        let at = |s| std::time::UNIX_EPOCH + Duration::from_secs(s);
        let mut h = Hold::new(t0);
        assert_eq!(h.take(t0), None, "nothing read: not measured");
        let m = |used, total| Some(MemoryNow { used, total });
        h.fold(m(10, 80), at(1));
        h.fold(m(u64::MAX, 80), at(2));
        h.fold(None, at(3));
        h.fold(m(30, 80), at(4));
        h.fold(m(30, 80), at(5));
        let p = h.take(t0 + Duration::from_millis(1500)).expect("a peak");
        assert_eq!(
            (p.used_bytes, p.at, p.reads, p.window_ms),
            (30, at(4), 3, 1500)
        );
        let later = MemoryPeak {
            used_bytes: 20,
            at: at(9),
            window_ms: 500,
            reads: 2,
        };
        let both = merge(Some(p), Some(later)).expect("merged");
        assert_eq!(
            (both.used_bytes, both.at, both.reads, both.window_ms),
            (30, at(4), 5, 2000)
        );
        assert_eq!(merge(None, Some(later)), Some(later));
    }

    #[test]
    fn the_devices_after_a_hung_one_are_read_by_another_worker() {
        let (_release, rx) = mpsc::channel();
        let mut r = Readers::start(vec![
            Box::new(Quick(0)),
            Box::new(Stuck(Mutex::new(rx))),
            Box::new(Quick(2)),
        ]);
        assert!(r.broken().is_none());
        assert_eq!(r.threads(), 1, "one worker while nothing hangs");
        let started = Instant::now();
        r.read(&[0, 1, 2], started + Duration::from_millis(500));
        let mut got = Vec::new();
        r.take(|reading| got.push(reading.slot));
        assert_eq!(got, vec![0, 2], "device 2 was read although device 1 hangs");
        // It waited for the hung device until its deadline, and no longer.
        assert!(started.elapsed() >= Duration::from_millis(500));
        assert!(started.elapsed() < Duration::from_secs(10));

        // The next round asks only the devices with no call outstanding: one free worker
        // is enough, and it returns as soon as they have answered.
        let started = Instant::now();
        r.read(&[0, 2], started + Duration::from_secs(5));
        let mut got = Vec::new();
        r.take(|reading| got.push(reading.slot));
        assert_eq!(got, vec![0, 2]);
        assert!(started.elapsed() < Duration::from_secs(4));
        assert_eq!(
            r.threads(),
            2,
            "one blocked on device 1, one for the others"
        );
    }

    /// Answers each cgroup's limit as its name's length, counting the calls.
    struct Limited(u32, Arc<AtomicU32>);
    impl DeviceReader for Limited {
        fn read(&mut self) -> Device {
            Device {
                index: self.0,
                ..Device::default()
            }
        }
        fn read_limits(&mut self, cgroups: &[Arc<str>]) -> CgroupLimits {
            self.1.fetch_add(1, SeqCst);
            cgroups
                .iter()
                .map(|c| {
                    let limit = crate::model::unified::GpuLimit {
                        cgroup: c.to_string(),
                        source: crate::model::unified::LimitSource::Nvml,
                        hard_bytes: Some(c.len() as u64),
                        soft_bytes: None,
                        used_bytes: None,
                    };
                    (Arc::clone(c), Some(Arc::new(limit)))
                })
                .collect()
        }
    }

    /// Each slot's limits as (cgroup, hard limit).
    type SlotLimits = Vec<(usize, Vec<(String, Option<u64>)>)>;

    fn limits_of(r: &Readers) -> SlotLimits {
        let mut got = Vec::new();
        r.take_limits(|slot, l| {
            let l = l
                .iter()
                .map(|(c, l)| (c.to_string(), l.as_ref().and_then(|l| l.hard_bytes)))
                .collect();
            got.push((slot, l));
        });
        got
    }

    /// The cgroups handed to a device are asked by its own reader with each reading, or
    /// alone; a device whose calls hang holds up neither the others' readings nor their
    /// limits.
    #[test]
    fn limits_ride_with_each_devices_reading_and_a_hung_device_holds_up_only_itself() {
        let (_release, rx) = mpsc::channel();
        let calls = Arc::new(AtomicU32::new(0));
        let mut r = Readers::start(vec![
            Box::new(Limited(0, Arc::clone(&calls))),
            Box::new(Stuck(Mutex::new(rx))),
            Box::new(Limited(2, Arc::clone(&calls))),
        ]);
        let cg =
            |names: &[&str]| -> Arc<[Arc<str>]> { names.iter().map(|n| Arc::from(*n)).collect() };
        r.set_cgroups(0, cg(&["/k/a", "/k/bb"]));
        r.set_cgroups(1, cg(&["/k/a"]));
        r.set_cgroups(2, cg(&["/k/ccc"]));
        r.read(&[0, 1, 2], Instant::now() + Duration::from_millis(500));
        let mut got = Vec::new();
        r.take(|reading| got.push(reading.slot));
        assert_eq!(got, [0, 2], "device 1 hangs");
        let want = vec![
            (
                0,
                vec![("/k/a".to_owned(), Some(4)), ("/k/bb".to_owned(), Some(5))],
            ),
            (2, vec![("/k/ccc".to_owned(), Some(6))]),
        ];
        assert_eq!(limits_of(&r), want);
        // The limits alone, of the devices that answer; no reading comes with them.
        let before = calls.load(SeqCst);
        r.read_limits(&[0, 2], Instant::now() + Duration::from_secs(10));
        assert_eq!(calls.load(SeqCst), before + 2);
        assert_eq!(limits_of(&r), want);
        let mut readings = 0;
        r.take(|_| readings += 1);
        assert_eq!(readings, 0, "a limits-only round is not a reading");
        // A reading asked next is a reading again.
        assert_eq!(one_reading(&mut r, &[0]).len(), 1);
    }

    #[test]
    fn dismissed_workers_end_without_being_joined_and_nothing_more_is_read() {
        let (_release, rx) = mpsc::channel();
        let mut r = Readers::start(vec![Box::new(Quick(0)), Box::new(Stuck(Mutex::new(rx)))]);
        // Device 1 blocks one worker; the relay starts another, which reads device 0 again.
        r.read(&[0, 1], Instant::now() + Duration::from_millis(100));
        r.read(&[0], Instant::now() + Duration::from_secs(5));
        r.take(|_| {});
        assert!(r.threads() >= 2);
        r.dismiss();
        let deadline = Instant::now() + Duration::from_secs(5);
        let finished = |r: &Readers| {
            r.workers
                .iter()
                .map(|w| w.join.as_ref().is_some_and(|j| j.is_finished()))
                .collect::<Vec<_>>()
        };
        while finished(&r).iter().filter(|f| !**f).count() > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let done = finished(&r);
        assert_eq!(
            done.iter().filter(|f| !**f).count(),
            1,
            "every idle worker ended on its own, the one blocked on device 1 did not: {done:?}"
        );
        assert!(!r.ask(&[0], Waiter::Thread(std::thread::current())));
        assert!(r.broken().is_some());
    }
}
