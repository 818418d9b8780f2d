//! The connections `serve` holds, so that a full server makes room for a newcomer by closing
//! the connection that has done least, never one that is being served.
//!
//! A slow client (one header byte a second: slowloris) or an idle one holds a slot as long as
//! its deadline allows. With a fixed cap and "new connections are closed when full", 300 such
//! clients left most of Prometheus's scrapes unanswered. Here, when every slot is taken:
//! - a connection that has not completed a request yet (still in its TLS handshake or its
//!   first request's headers) after its grace (a second: a real client sends its
//!   request within milliseconds) is closed first, the oldest first. A younger one is never
//!   closed: in a burst of complete requests above the cap, the newest connections may not
//!   have been read yet, and closing them reset clients whose requests were whole (387 of
//!   1,000). They are answered in turn, newcomers waiting in the backlog;
//! - then a kept-alive connection between requests, the longest idle first;
//! - a connection whose request is being answered is never closed; when all of them are, the
//!   newcomer waits in the kernel's listen backlog until one ends, instead of being accepted
//!   and closed with an empty reply.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

/// What a connection is doing.
const WAITING: u8 = 0;
const BUSY: u8 = 1;

/// One connection's state, shared between its task and the registry.
pub struct Conn {
    id: u64,
    opened: Instant,
    phase: AtomicU8,
    /// Requests answered.
    served: AtomicU64,
    /// Milliseconds after `opened` when it last became idle (or opened).
    idle_since_ms: AtomicU64,
    /// Told to close (it has been shed for a newcomer).
    close: Notify,
    registry: Arc<Registry>,
}

impl Conn {
    /// A request's headers are in: it is being answered.
    pub fn busy(&self) {
        self.phase.store(BUSY, Ordering::SeqCst);
    }

    /// Its response is out: it waits for the next request (keep-alive).
    pub fn answered(&self) {
        self.served.fetch_add(1, Ordering::SeqCst);
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.idle_since_ms.store(ms, Ordering::SeqCst);
        self.phase.store(WAITING, Ordering::SeqCst);
        // A waiting accept may now shed this one.
        self.registry.changed.notify_waiters();
    }

    /// Resolves when the connection has been shed for a newcomer.
    pub async fn closed(&self) {
        self.close.notified().await;
    }

    /// Whether it has answered a request.
    pub fn has_served(&self) -> bool {
        self.served.load(Ordering::SeqCst) > 0
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.registry.remove(self.id);
    }
}

/// The open connections, up to a cap.
pub struct Registry {
    cap: usize,
    /// How long a new connection has to complete its first request before it may be shed.
    grace: std::time::Duration,
    conns: Mutex<Vec<std::sync::Weak<Conn>>>,
    next_id: AtomicU64,
    /// A connection ended or went idle: an accept waiting for room looks again.
    changed: Notify,
}

impl Registry {
    pub fn new(cap: usize, grace: std::time::Duration) -> Arc<Registry> {
        Arc::new(Registry {
            cap: cap.max(1),
            grace,
            conns: Mutex::new(Vec::with_capacity(cap)),
            next_id: AtomicU64::new(1),
            changed: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<std::sync::Weak<Conn>>> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn remove(&self, id: u64) {
        self.lock()
            .retain(|w| w.upgrade().is_some_and(|c| c.id != id));
        self.changed.notify_waiters();
    }

    /// Connections open now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How full it is, 0.0 to 1.0 (for shorter deadlines under load).
    pub fn load(&self) -> f64 {
        self.len() as f64 / self.cap as f64
    }

    /// The connection to close for a newcomer: the oldest of those that have not completed a
    /// request within the grace, else the longest idle; never a busy one, never one still in
    /// its grace. With it, when there is none, the time the oldest in its grace leaves it.
    fn victim(&self, conns: &[std::sync::Weak<Conn>]) -> (Option<Arc<Conn>>, Option<Instant>) {
        let live: Vec<Arc<Conn>> = conns.iter().filter_map(std::sync::Weak::upgrade).collect();
        let waiting = live
            .iter()
            .filter(|c| c.phase.load(Ordering::SeqCst) == WAITING);
        let now = Instant::now();
        let unserved = waiting.clone().filter(|c| !c.has_served());
        let fresh = unserved
            .clone()
            .filter(|c| now.saturating_duration_since(c.opened) >= self.grace)
            .min_by_key(|c| c.opened);
        let next = unserved.map(|c| c.opened + self.grace).min();
        let idle = || {
            waiting.clone().filter(|c| c.has_served()).min_by_key(|c| {
                c.opened + std::time::Duration::from_millis(c.idle_since_ms.load(Ordering::SeqCst))
            })
        };
        (fresh.or_else(idle).cloned(), next)
    }

    /// Waits until a newcomer can be taken: a free slot, or a connection that can be shed.
    pub async fn room(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let next = {
                let conns = self.lock();
                if conns.len() < self.cap {
                    return;
                }
                match self.victim(&conns) {
                    (Some(_), _) => return,
                    (None, next) => next,
                }
            };
            // A connection leaving its grace without a request can be shed then.
            match next {
                Some(at) => {
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    /// Registers a newcomer, closing the connection that has done least when the registry is
    /// full. `None`: full of busy connections (the caller closes the newcomer; `room` made this
    /// rare).
    pub fn admit(self: &Arc<Self>) -> Option<Arc<Conn>> {
        let mut conns = self.lock();
        conns.retain(|w| w.strong_count() > 0);
        if conns.len() >= self.cap {
            let victim = self.victim(&conns).0?;
            // Told now, gone when its task drops it; until then it stays counted, so the cap
            // is exceeded by the connections being closed, never by live ones.
            victim.phase.store(BUSY, Ordering::SeqCst);
            victim.close.notify_one();
            conns.retain(|w| w.upgrade().is_some_and(|c| c.id != victim.id));
        }
        let conn = Arc::new(Conn {
            id: self.next_id.fetch_add(1, Ordering::SeqCst),
            opened: Instant::now(),
            phase: AtomicU8::new(WAITING),
            served: AtomicU64::new(0),
            idle_since_ms: AtomicU64::new(0),
            close: Notify::new(),
            registry: Arc::clone(self),
        });
        conns.push(Arc::downgrade(&conn));
        Some(conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Whether `c` has been told to close.
    fn told(c: &Conn) -> bool {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async { tokio::time::timeout(Duration::from_millis(20), c.closed()).await })
            .is_ok()
    }

    #[test]
    fn a_full_registry_sheds_the_connection_that_has_done_least_and_never_a_busy_one() {
        let r = Registry::new(3, Duration::ZERO);
        let slow = r.admit().expect("room");
        std::thread::sleep(Duration::from_millis(2));
        let keepalive = r.admit().expect("room");
        keepalive.busy();
        keepalive.answered();
        let busy = r.admit().expect("room");
        busy.busy();
        assert_eq!(r.len(), 3);
        // Full: the one that never completed a request goes first.
        let newcomer = r.admit().expect("shed one");
        assert!(told(&slow) && !told(&keepalive) && !told(&busy));
        drop(slow);
        assert_eq!(r.len(), 3);
        // The newcomer has not served either: it goes before the kept-alive one.
        let second = r.admit().expect("shed another");
        assert!(told(&newcomer) && !told(&keepalive));
        drop(newcomer);
        second.busy();
        // Now only the kept-alive idle one can make room.
        let third = r.admit().expect("shed the idle keep-alive");
        assert!(told(&keepalive) && !told(&busy) && !told(&second));
        drop(keepalive);
        third.busy();
        // Every connection busy: no room, the newcomer waits in the backlog.
        assert!(r.admit().is_none());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        assert!(rt
            .block_on(async { tokio::time::timeout(Duration::from_millis(20), r.room()).await })
            .is_err());
        // One answers: there is room again.
        third.answered();
        assert!(rt
            .block_on(async { tokio::time::timeout(Duration::from_millis(200), r.room()).await })
            .is_ok());
    }

    /// S11: in a burst above the cap, a connection that has not had its grace to send its
    /// request is never shed (its request may be whole, unread yet): the newcomer waits in
    /// the backlog; a kept-alive idle one is still shed.
    #[test]
    fn a_new_connection_is_not_shed_before_its_grace() {
        let r = Registry::new(2, Duration::from_secs(3600));
        let a = r.admit().expect("room");
        let b = r.admit().expect("room");
        assert!(r.admit().is_none(), "both in their grace: no room");
        assert!(!told(&a) && !told(&b));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        assert!(rt
            .block_on(async { tokio::time::timeout(Duration::from_millis(20), r.room()).await })
            .is_err());
        a.busy();
        a.answered();
        let c = r.admit().expect("the idle kept-alive one is shed");
        assert!(told(&a) && !told(&b));
        drop((a, c));
        // Out of its grace without a request: shed.
        let r = Registry::new(1, Duration::from_millis(30));
        let slow = r.admit().expect("room");
        assert!(rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(5), r.room()).await })
            .is_ok());
        let _newcomer = r.admit().expect("the slow one is shed");
        assert!(told(&slow));
    }
}
