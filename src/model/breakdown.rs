//! Where a GPU's memory went: the one place that splits a total into parts.
//!
//! The gauges, `once`, `log`, `explain` and the in-process probe all read a [`Breakdown`], so
//! the arithmetic (what is derived from what, what is unknown) lives here only. Invariant: the
//! known parts plus the `Unaccounted` remainder add up to `total` exactly. An unknown part is
//! `None`; its bytes are inside the remainder, never silently counted as 0.

use serde::Serialize;

use super::Memory;

/// What a part of the memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PartKind {
    /// One process, by pid (device view).
    Process {
        pid: u32,
    },
    /// Allocated by the framework (PyTorch "allocated").
    Allocated,
    /// Reserved by the framework's caching allocator but unallocated.
    Cached,
    /// Held by the framework's allocator, allocated and cached together, where a message gives
    /// only their sum (PyTorch MPS: "MPS allocated" counts every heap, free buffers included).
    Reserved,
    /// This process's memory outside the framework: CUDA context, cuBLAS/cuDNN, NCCL.
    NonFramework,
    /// This process as a whole, when the framework split is unknown (NVML's per-process total).
    ThisProcess,
    /// Other processes and apps together (process view).
    OtherApps,
    /// Used, but by no visible process: other containers, the driver's own use.
    Unattributed,
    /// Everything in use on the device, by whichever processes (a device seen as a whole).
    Used,
    /// NVML v2 `reserved`: driver and firmware memory.
    DriverReserved,
    Free,
    /// What the known parts do not explain, including every unknown part.
    Unaccounted,
}

impl PartKind {
    pub fn label(&self) -> String {
        match self {
            PartKind::Process { pid } => format!("pid {pid}"),
            PartKind::Allocated => "allocated".into(),
            PartKind::Cached => "cached (reserved, unallocated)".into(),
            PartKind::Reserved => "reserved (allocated + cached)".into(),
            PartKind::NonFramework => "outside framework (context, libraries)".into(),
            PartKind::ThisProcess => "this process".into(),
            PartKind::OtherApps => "other apps".into(),
            PartKind::Unattributed => "used, not attributed".into(),
            PartKind::Used => "in use (all processes)".into(),
            PartKind::DriverReserved => "driver reserved".into(),
            PartKind::Free => "free".into(),
            PartKind::Unaccounted => "unaccounted".into(),
        }
    }

    /// A short label for one-line views.
    pub fn short_label(&self) -> String {
        match self {
            PartKind::Process { pid } => format!("pid {pid}"),
            PartKind::Allocated => "alloc".into(),
            PartKind::Cached => "cached".into(),
            PartKind::Reserved => "reserved".into(),
            PartKind::NonFramework => "non-framework".into(),
            PartKind::ThisProcess => "this process".into(),
            PartKind::OtherApps => "other apps".into(),
            PartKind::Unattributed => "unattributed".into(),
            PartKind::Used => "in use".into(),
            PartKind::DriverReserved => "driver".into(),
            PartKind::Free => "free".into(),
            PartKind::Unaccounted => "unaccounted".into(),
        }
    }

    /// Which parts keep their bytes first when inconsistent inputs sum past the total: figures
    /// read directly (free, driver reserved, framework counters) beat per-process sums.
    fn priority(&self) -> u8 {
        match self {
            PartKind::Free => 0,
            PartKind::DriverReserved => 1,
            PartKind::Allocated => 2,
            PartKind::Cached | PartKind::Reserved => 3,
            PartKind::NonFramework | PartKind::ThisProcess => 4,
            PartKind::Process { .. } => 5,
            PartKind::OtherApps | PartKind::Unattributed | PartKind::Used => 6,
            PartKind::Unaccounted => 7,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Part {
    #[serde(flatten)]
    pub kind: PartKind,
    pub bytes: Option<u64>,
    /// Computed from other figures rather than read (or cut down to fit the total).
    pub derived: bool,
}

impl Part {
    pub fn read(kind: PartKind, bytes: Option<u64>) -> Part {
        Part {
            kind,
            bytes,
            derived: false,
        }
    }
    pub fn derived(kind: PartKind, bytes: Option<u64>) -> Part {
        Part {
            kind,
            bytes,
            derived: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Breakdown {
    pub total: u64,
    /// In display order; the last is always `Unaccounted`.
    pub parts: Vec<Part>,
}

/// A process's memory as far as it is known: NVML's total, and the framework's counters when
/// the in-process probe or an OOM message gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    pub total: Option<u64>,
    pub allocated: Option<u64>,
    /// Framework reserved = allocated + cached.
    pub reserved: Option<u64>,
}

impl Breakdown {
    /// Builds a breakdown from parts, enforcing the invariant: parts that would push the sum
    /// past `total` are cut (lowest priority first) and marked derived, and the remainder
    /// becomes `Unaccounted`.
    pub fn from_parts(total: u64, mut parts: Vec<Part>) -> Breakdown {
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_by_key(|&i| parts[i].kind.priority());
        let mut left = total;
        for i in order {
            if let Some(b) = parts[i].bytes {
                if b > left {
                    parts[i].bytes = Some(left);
                    parts[i].derived = true;
                }
                left -= parts[i].bytes.unwrap_or(0);
            }
        }
        parts.retain(|p| p.kind != PartKind::Unaccounted);
        parts.push(Part::derived(PartKind::Unaccounted, Some(left)));
        Breakdown { total, parts }
    }

    /// The device's point of view: each process, used-but-unattributed, driver reserved, free.
    /// `None` when the total is unknown.
    pub fn device(memory: &Memory, processes: &[(u32, Option<u64>)]) -> Option<Breakdown> {
        let total = memory.total_bytes?;
        let attributed: u64 = processes.iter().filter_map(|(_, b)| *b).sum();
        let mut parts: Vec<Part> = processes
            .iter()
            .map(|(pid, b)| Part::read(PartKind::Process { pid: *pid }, *b))
            .collect();
        parts.push(Part::derived(
            PartKind::Unattributed,
            memory.used_bytes.map(|u| u.saturating_sub(attributed)),
        ));
        parts.push(Part::read(PartKind::DriverReserved, memory.reserved_bytes));
        parts.push(Part::read(PartKind::Free, memory.free_bytes));
        Some(Breakdown::from_parts(total, parts))
    }

    /// One process's point of view: allocated, cached, outside the framework (or the process
    /// total when the framework split is unknown), other apps, driver reserved, free.
    pub fn process(memory: &Memory, this: ProcessMemory) -> Option<Breakdown> {
        let total = memory.total_bytes?;
        let mut parts = Vec::with_capacity(7);
        match this.reserved {
            Some(reserved) => {
                parts.push(Part::read(PartKind::Allocated, this.allocated));
                parts.push(Part::derived(
                    PartKind::Cached,
                    this.allocated.map(|a| reserved.saturating_sub(a)),
                ));
                parts.push(Part::derived(
                    PartKind::NonFramework,
                    this.total.map(|t| t.saturating_sub(reserved)),
                ));
            }
            None => parts.push(Part::read(PartKind::ThisProcess, this.total)),
        }
        let other = match (memory.used_bytes, this.total) {
            (Some(used), Some(mine)) => Some(used.saturating_sub(mine)),
            _ => None,
        };
        parts.push(Part::derived(PartKind::OtherApps, other));
        parts.push(Part::read(PartKind::DriverReserved, memory.reserved_bytes));
        parts.push(Part::read(PartKind::Free, memory.free_bytes));
        Some(Breakdown::from_parts(total, parts))
    }

    pub fn get(&self, kind: PartKind) -> Option<u64> {
        self.parts
            .iter()
            .find(|p| p.kind == kind)
            .and_then(|p| p.bytes)
    }

    pub fn unaccounted(&self) -> u64 {
        self.get(PartKind::Unaccounted).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(total: u64, used: u64, free: u64, reserved: u64) -> Memory {
        Memory {
            total_bytes: Some(total),
            used_bytes: Some(used),
            free_bytes: Some(free),
            reserved_bytes: Some(reserved),
        }
    }

    fn sum(b: &Breakdown) -> u64 {
        b.parts.iter().filter_map(|p| p.bytes).sum()
    }

    #[test]
    fn device_view_adds_up() {
        let m = mem(100, 60, 35, 5);
        let b = Breakdown::device(&m, &[(1, Some(30)), (2, Some(20))]).expect("total known");
        assert_eq!(b.get(PartKind::Unattributed), Some(10));
        assert_eq!(b.get(PartKind::Free), Some(35));
        assert_eq!(b.unaccounted(), 0);
        assert_eq!(sum(&b), 100);
    }

    #[test]
    fn unknown_process_memory_stays_unknown() {
        let m = mem(100, 60, 35, 5);
        let b = Breakdown::device(&m, &[(1, None), (2, Some(20))]).expect("total known");
        assert_eq!(b.get(PartKind::Process { pid: 1 }), None);
        // pid 1's bytes are inside "used, not attributed", not reported as 0.
        assert_eq!(b.get(PartKind::Unattributed), Some(40));
        assert_eq!(sum(&b), 100);
    }

    #[test]
    fn unknown_free_goes_to_unaccounted() {
        let m = Memory {
            total_bytes: Some(100),
            used_bytes: Some(60),
            ..Memory::default()
        };
        let b = Breakdown::device(&m, &[]).expect("total known");
        assert_eq!(b.get(PartKind::Free), None);
        assert_eq!(b.unaccounted(), 40);
        assert_eq!(sum(&b), 100);
        assert_eq!(Breakdown::device(&Memory::default(), &[]), None);
    }

    #[test]
    fn inconsistent_inputs_are_cut_to_fit() {
        // Per-process sums larger than the device: free and reserved keep their bytes.
        let m = mem(100, 60, 35, 5);
        let b = Breakdown::device(&m, &[(1, Some(90))]).expect("total known");
        assert_eq!(b.get(PartKind::Free), Some(35));
        assert_eq!(b.get(PartKind::Process { pid: 1 }), Some(60));
        assert!(b.parts[0].derived);
        assert_eq!(sum(&b), 100);
    }

    #[test]
    fn process_view_with_framework_split() {
        let m = mem(100, 70, 25, 5);
        let this = ProcessMemory {
            total: Some(50),
            allocated: Some(30),
            reserved: Some(40),
        };
        let b = Breakdown::process(&m, this).expect("total known");
        assert_eq!(b.get(PartKind::Allocated), Some(30));
        assert_eq!(b.get(PartKind::Cached), Some(10));
        assert_eq!(b.get(PartKind::NonFramework), Some(10));
        assert_eq!(b.get(PartKind::OtherApps), Some(20));
        assert_eq!(sum(&b), 100);
    }

    #[test]
    fn process_view_falls_back_to_nvml_total() {
        let m = mem(100, 70, 25, 5);
        let this = ProcessMemory {
            total: Some(50),
            ..ProcessMemory::default()
        };
        let b = Breakdown::process(&m, this).expect("total known");
        assert_eq!(b.get(PartKind::ThisProcess), Some(50));
        assert_eq!(b.get(PartKind::Allocated), None);
        assert_eq!(sum(&b), 100);
    }
}
