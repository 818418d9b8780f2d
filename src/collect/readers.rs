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

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use crate::collect::source::DeviceReader;
use crate::model::Device;

/// A reading of one device and when it arrived.
#[derive(Debug)]
pub struct Reading {
    pub slot: usize,
    pub device: Device,
    pub at: Instant,
}

struct Slot {
    reader: Mutex<Box<dyn DeviceReader>>,
    /// The ask a reading is wanted for, until a worker claims it by swapping in 0.
    wanted: AtomicU32,
    /// The last reading, until the sampler takes it.
    reading: Mutex<Option<(Device, Instant)>>,
}

struct Shared {
    slots: Vec<Slot>,
    /// The current ask in the high half, the readings still to come for it in the low half.
    ask: AtomicU64,
    /// Who waits for the current ask.
    waiter: Mutex<Option<Waiter>>,
    stop: AtomicBool,
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

    fn work(&self, busy: &AtomicBool) {
        loop {
            std::thread::park();
            if self.stop.load(SeqCst) {
                return;
            }
            for slot in &self.slots {
                // Busy before the claim, so that shutting down never joins a worker that is
                // about to call into the driver.
                busy.store(true, SeqCst);
                let ask = slot.wanted.swap(0, SeqCst);
                if ask != 0 {
                    let device = lock(&slot.reader).read();
                    *lock(&slot.reading) = Some((device, Instant::now()));
                    self.arrived(ask);
                }
                busy.store(false, SeqCst);
                if self.stop.load(SeqCst) {
                    return;
                }
            }
        }
    }
}

impl Readers {
    /// Takes the readers; the first worker starts now and waits until asked.
    pub fn start(readers: Vec<Box<dyn DeviceReader>>) -> Readers {
        let shared = Arc::new(Shared {
            slots: readers
                .into_iter()
                .map(|r| Slot {
                    reader: Mutex::new(r),
                    wanted: AtomicU32::new(0),
                    reading: Mutex::new(None),
                })
                .collect(),
            ask: AtomicU64::new(0),
            waiter: Mutex::new(None),
            stop: AtomicBool::new(false),
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
        let (s, b) = (Arc::clone(&self.shared), Arc::clone(&busy));
        let join = std::thread::Builder::new()
            .name(format!("gpumon-read{}", self.workers.len()))
            .spawn(move || s.work(&b))?;
        self.workers.push(Worker {
            thread: join.thread().clone(),
            busy,
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

    /// Why no device can be read at all (no worker thread could be started).
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Wakes one free worker, starting one if every worker is busy (blocked on a hung device)
    /// and there are fewer than devices. Whether one was woken.
    fn wake_one(&mut self) -> bool {
        if let Some(w) = self.workers.iter().find(|w| !w.busy.load(SeqCst)) {
            w.thread.unpark();
            return true;
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
                slot.wanted.store(self.ask, SeqCst);
            }
        }
        self.wake_one();
        true
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
        self.wake_one();
    }

    /// The round asked at `started` has completed (for the relay delay).
    pub fn completed(&mut self, started: Instant) {
        self.typical = started.elapsed();
    }

    /// [`Readers::ask`], then waits on this thread until all have arrived or `until`.
    pub fn read(&mut self, slots: &[usize], until: Instant) {
        let started = Instant::now();
        if !self.ask(slots, Waiter::Thread(std::thread::current())) {
            return;
        }
        let relay = self.relay_delay();
        let mut relay_at = started + relay;
        loop {
            if self.done() {
                self.completed(started);
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
