//! Test equipment: a fake `libnvidia-ml.so.1` that serves a gpumon scenario file.
//!
//! gpumon loads it through nvml-wrapper exactly as it loads the driver's library, so the tests
//! exercise the real NVML code path: symbol loading, struct versions, count-then-fill process
//! lists and error codes. Struct layouts come from nvml-wrapper-sys (bindgen output of
//! `nvml.h`), so they are ABI-correct by construction.
//!
//! Environment:
//! - `FAKE_NVML_SCENARIO`: path of the scenario JSON (required; without it init fails with
//!   DRIVER_NOT_LOADED, like a machine with no driver).
//! - `FAKE_NVML_TIME`: scenario time in seconds at init (default 0).
//! - `FAKE_NVML_SPEED`: scenario seconds per wall second (default 1; 0 freezes time).
//! - `FAKE_NVML_EPOCH`: the Unix time (seconds) at which scenario time was 0; it replaces
//!   `FAKE_NVML_TIME`, so that several processes share one scenario clock.
//! - `FAKE_NVML_CALL_LOG`: a file to which each process-list and per-process utilisation call
//!   appends a line, `NAME DEVICE count|fill` (a count call passes no array), so tests can
//!   check which queries gpumon makes and how often. With `FAKE_NVML_CALL_LOG_ALL=1`, every
//!   call on a device also appends `call FIELD DEVICE` (`handle` for a call that reads no
//!   field), to count the driver calls a view makes.
//!
//! Faults come from the scenario (see `assets/scenarios/README.md`); `hang` blocks the calling
//! thread for real, outside the library's lock, so only the calls on the hung device wait.
#![allow(non_snake_case, non_upper_case_globals, clippy::missing_safety_doc)]

mod limits;
#[allow(dead_code)]
#[path = "../../../src/collect/source/scenario.rs"]
mod scenario;

use nvml_wrapper_sys::bindings::*;
use scenario::{DeviceState, FaultKind, Field, MigState, ProcKind, Scenario};
use std::ffi::{c_char, c_int, c_uint, c_ulonglong};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

const VALUE_NOT_AVAILABLE: u64 = u64::MAX;

struct Fake {
    scenario: Scenario,
    start: Instant,
    t0: f64,
    speed: f64,
    /// Whether some process reads its pid from a file (`pid_file`).
    reads_files: bool,
    /// Each device's state, with the wall-clock millisecond and scenario time it is for.
    cached: Vec<Option<(i64, f64, DeviceState)>>,
    /// `FAKE_NVML_CALL_LOG`, opened for appending.
    call_log: Option<std::fs::File>,
    /// `FAKE_NVML_CALL_LOG_ALL=1`: every call on a device goes to the log too.
    log_all: bool,
    /// Event sets by handle − 1; `None` once freed.
    sets: Vec<Option<EventSet>>,
}

/// An event set: the devices registered on it, and the last delivery (scenario time, fault
/// position) so each scripted Xid is delivered once.
struct EventSet {
    devices: Vec<u32>,
    cursor: (f64, usize),
}

impl Fake {
    /// Scenario time now, not wrapped by `loop_s` (events are delivered in this time).
    fn unwrapped_now(&self) -> f64 {
        self.t0 + self.start.elapsed().as_secs_f64() * self.speed
    }
}

static FAKE: Mutex<Option<Fake>> = Mutex::new(None);
static FILL_CALLS: AtomicU64 = AtomicU64::new(0);

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `f` on the library's state; `None` when not initialised.
fn with_fake<R>(f: impl FnOnce(&Fake) -> R) -> Option<R> {
    let guard = FAKE.lock().unwrap_or_else(|e| e.into_inner());
    Some(f(guard.as_ref()?))
}

/// Runs `f` on the current state of one device (`None` past the last device); `None` when
/// not initialised. Only that device is evaluated: a call costs what one device costs, as a
/// driver call does.
fn with_state<R>(
    device: nvmlDevice_t,
    f: impl FnOnce(&Fake, Option<&DeviceState>) -> R,
) -> Option<R> {
    let mut guard = FAKE.lock().unwrap_or_else(|e| e.into_inner());
    let fake = guard.as_mut()?;
    let index = device_index(device);
    if index >= fake.scenario.devices.len() {
        return Some(f(fake, None));
    }
    let wall = fake.start.elapsed().as_secs_f64();
    let t = fake.scenario.time(fake.t0 + wall * fake.speed);
    // Re-evaluate at most once per wall-clock millisecond, when the scenario time moved or
    // (even with the clock frozen) when pids come from files that may appear later.
    let ms = (wall * 1000.0) as i64;
    fake.cached
        .resize_with(fake.scenario.devices.len(), || None);
    let fresh = matches!(&fake.cached[index],
        Some((at, at_t, _)) if *at == ms || (*at_t == t && !fake.reads_files));
    if !fresh {
        fake.cached[index] = Some((ms, t, fake.scenario.device_at(index as u32, t)));
    }
    let fake = &*fake;
    Some(f(fake, fake.cached[index].as_ref().map(|(_, _, d)| d)))
}

/// A parent GPU's handle is its index + 1; a MIG device's carries its slot + 1 above that.
fn device_index(device: nvmlDevice_t) -> usize {
    (device as usize & 0xffff).wrapping_sub(1)
}

/// The MIG slot a handle names, if it is a MIG device's.
fn mig_slot(device: nvmlDevice_t) -> Option<usize> {
    (device as usize >> 16).checked_sub(1)
}

fn mig_handle(parent: usize, slot: usize) -> nvmlDevice_t {
    (((slot + 1) << 16) | (parent + 1)) as nvmlDevice_t
}

/// A MIG GPU's own memory or process list asked by a caller a `mig_aggregates` fault says
/// is unprivileged.
fn aggregates_denied(device: nvmlDevice_t, d: &DeviceState) -> Option<nvmlReturn_t> {
    if mig_slot(device).is_some() || d.mig.is_none() {
        return None;
    }
    match d.fault(Field::MigAggregates)? {
        FaultKind::NoPermission => Some(nvmlReturn_enum_NVML_ERROR_NO_PERMISSION),
        _ => Some(nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED),
    }
}

/// The MIG device a handle names, on the parent's state: `Err` with NVML's answer when the
/// handle names a slot that has no device.
fn mig_of(device: nvmlDevice_t, d: &DeviceState) -> Result<Option<&MigState>, nvmlReturn_t> {
    let Some(slot) = mig_slot(device) else {
        return Ok(None);
    };
    d.mig
        .as_ref()
        .and_then(|m| m.get(slot))
        .map(Some)
        .ok_or(nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT)
}

/// Blocks the calling thread as a `hang` fault on the device says, without holding the lock:
/// a wedged GPU blocks the calls made on it, never those on the other GPUs.
fn hang(device: nvmlDevice_t, field: Option<Field>) {
    let block = with_state(device, |_, d| d?.hang(field)).flatten();
    if let Some(s) = block {
        std::thread::sleep(std::time::Duration::from_secs_f64(s));
    }
}

/// Runs `f` on one device, mapping the common failures to NVML codes.
fn with_device(
    device: nvmlDevice_t,
    field: Option<Field>,
    f: impl FnOnce(&Fake, &DeviceState) -> nvmlReturn_t,
) -> nvmlReturn_t {
    with_fake(|fake| {
        if let (true, Some(mut file)) = (fake.log_all, fake.call_log.as_ref()) {
            use std::io::Write;
            let what = field.map_or_else(|| "handle".to_owned(), |f| format!("{f:?}"));
            let line = format!("call {what} {}\n", device_index(device));
            let _ = file.write_all(line.as_bytes());
        }
    });
    hang(device, field);
    with_state(device, |fake, d| {
        let Some(d) = d else {
            return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
        };
        if d.lost {
            return nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST;
        }
        if let Err(rc) = mig_of(device, d) {
            return rc;
        }
        // A MIG device answers its name, UUID, memory and process lists (and the MIG
        // queries); the rest of what a GPU reports is the parent's (NOT_SUPPORTED here).
        let mig_answers = matches!(
            field,
            Some(
                Field::Name
                    | Field::Uuid
                    | Field::Memory
                    | Field::Processes
                    | Field::Mig
                    | Field::Utilization
                    | Field::ProcessUtilization
            ) | None
        );
        if mig_slot(device).is_some() && !mig_answers {
            return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        }
        match field.and_then(|field| d.fault(field)) {
            Some(FaultKind::NotSupported) => nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED,
            Some(FaultKind::NoPermission) => nvmlReturn_enum_NVML_ERROR_NO_PERMISSION,
            _ => f(fake, d),
        }
    })
    .unwrap_or(nvmlReturn_enum_NVML_ERROR_UNINITIALIZED)
}

unsafe fn write_str(s: &str, out: *mut c_char, len: c_uint) -> nvmlReturn_t {
    if out.is_null() {
        return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
    }
    let bytes = s.as_bytes();
    if bytes.len() + 1 > len as usize {
        return nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
    }
    // SAFETY: the caller gave `len` writable bytes and we checked the string fits.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), bytes.len());
        *out.add(bytes.len()) = 0;
    }
    nvmlReturn_enum_NVML_SUCCESS
}

macro_rules! out {
    ($ptr:expr, $value:expr) => {{
        if $ptr.is_null() {
            return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null out-pointer from the caller, per the NVML contract.
        unsafe { *$ptr = $value };
        nvmlReturn_enum_NVML_SUCCESS
    }};
}

// After `out!`, which it uses.
mod accounting;

#[no_mangle]
pub extern "C" fn nvmlInit_v2() -> nvmlReturn_t {
    let Ok(path) = std::env::var("FAKE_NVML_SCENARIO") else {
        return nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED;
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        return nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED;
    };
    let scenario = match Scenario::from_json(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake-nvml: {path}: {e}");
            return nvmlReturn_enum_NVML_ERROR_UNKNOWN;
        }
    };
    let speed = env_f64("FAKE_NVML_SPEED", 1.0);
    let t0 = match std::env::var("FAKE_NVML_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        Some(epoch) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            ((now - epoch) * speed).max(0.0)
        }
        None => env_f64("FAKE_NVML_TIME", 0.0),
    };
    if let Some(s) = scenario.init_hang(scenario.time(t0)) {
        std::thread::sleep(std::time::Duration::from_secs_f64(s));
    }
    let mut guard = FAKE.lock().unwrap_or_else(|e| e.into_inner());
    let reads_files = scenario
        .devices
        .iter()
        .any(|d| d.processes.iter().any(|p| p.pid_file.is_some()));
    *guard = Some(Fake {
        reads_files,
        scenario,
        start: Instant::now(),
        t0,
        speed,
        cached: Vec::new(),
        sets: Vec::new(),
        log_all: std::env::var_os("FAKE_NVML_CALL_LOG_ALL").is_some_and(|v| v == "1"),
        call_log: std::env::var_os("FAKE_NVML_CALL_LOG").and_then(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()
        }),
    });
    nvmlReturn_enum_NVML_SUCCESS
}

#[no_mangle]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> nvmlReturn_t {
    nvmlInit_v2()
}

#[no_mangle]
pub extern "C" fn nvmlShutdown() -> nvmlReturn_t {
    let mut guard = FAKE.lock().unwrap_or_else(|e| e.into_inner());
    match guard.take() {
        Some(_) => nvmlReturn_enum_NVML_SUCCESS,
        None => nvmlReturn_enum_NVML_ERROR_UNINITIALIZED,
    }
}

#[no_mangle]
pub extern "C" fn nvmlErrorString(result: nvmlReturn_t) -> *const c_char {
    let s: &'static [u8] = match result {
        nvmlReturn_enum_NVML_SUCCESS => b"Success\0",
        nvmlReturn_enum_NVML_ERROR_UNINITIALIZED => b"Uninitialized\0",
        nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT => b"Invalid Argument\0",
        nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED => b"Not Supported\0",
        nvmlReturn_enum_NVML_ERROR_NO_PERMISSION => b"Insufficient Permissions\0",
        nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE => b"Insufficient Size\0",
        nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST => b"GPU is lost\0",
        nvmlReturn_enum_NVML_ERROR_TIMEOUT => b"Timeout\0",
        nvmlReturn_enum_NVML_ERROR_NOT_FOUND => b"Not Found\0",
        _ => b"Unknown Error\0",
    };
    s.as_ptr().cast()
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(out: *mut c_char, len: c_uint) -> nvmlReturn_t {
    with_fake(|fake| unsafe { write_str(&fake.scenario.driver_version, out, len) })
        .unwrap_or(nvmlReturn_enum_NVML_ERROR_UNINITIALIZED)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(out: *mut c_char, len: c_uint) -> nvmlReturn_t {
    unsafe { write_str("12.550.54.15", out, len) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(out: *mut c_int) -> nvmlReturn_t {
    let Some(v) = with_fake(|fake| fake.scenario.cuda_driver_version) else {
        return nvmlReturn_enum_NVML_ERROR_UNINITIALIZED;
    };
    out!(out, v)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion(out: *mut c_int) -> nvmlReturn_t {
    unsafe { nvmlSystemGetCudaDriverVersion_v2(out) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(out: *mut c_uint) -> nvmlReturn_t {
    let Some(n) = with_fake(|fake| fake.scenario.devices.len() as c_uint) else {
        return nvmlReturn_enum_NVML_ERROR_UNINITIALIZED;
    };
    out!(out, n)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    out: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    let handle = (index as usize + 1) as nvmlDevice_t;
    with_device(handle, None, |_, _| out!(out, handle))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: nvmlDevice_t,
    out: *mut c_char,
    len: c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Name), |_, d| unsafe {
        match mig_of(device, d) {
            Ok(Some(m)) => write_str(&m.name, out, len),
            _ => write_str(&d.name, out, len),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMinorNumber(
    device: nvmlDevice_t,
    out: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, None, |_, d| out!(out, d.minor_number))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: nvmlDevice_t,
    out: *mut c_char,
    len: c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Uuid), |_, d| unsafe {
        match mig_of(device, d) {
            Ok(Some(m)) => write_str(&m.uuid, out, len),
            _ => write_str(&d.uuid, out, len),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(
    device: nvmlDevice_t,
    out: *mut nvmlPciInfo_t,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Pci), |_, d| {
        // SAFETY: all-zero is a valid nvmlPciInfo_t (integers and char arrays).
        let mut info: nvmlPciInfo_t = unsafe { std::mem::zeroed() };
        for (dst, src) in info.busId.iter_mut().zip(d.pci_bus_id.bytes().take(31)) {
            *dst = src as c_char;
        }
        for (dst, src) in info
            .busIdLegacy
            .iter_mut()
            .zip(d.pci_bus_id.bytes().skip(4).take(15))
        {
            *dst = src as c_char;
        }
        info.bus = d.index + 1;
        info.pciDeviceId = 0x2330_10de;
        info.pciSubSystemId = 0x16c1_10de;
        out!(out, info)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: nvmlDevice_t,
    out: *mut nvmlMemory_v2_t,
) -> nvmlReturn_t {
    const EXPECTED: c_uint = (std::mem::size_of::<nvmlMemory_v2_t>() as c_uint) | (2 << 24);
    if out.is_null() {
        return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null pointer to a caller-owned struct; we only read the version first.
    if unsafe { (*out).version } != EXPECTED {
        return nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    with_device(device, Some(Field::Memory), |_, d| {
        if d.memory_v2_missing {
            return nvmlReturn_enum_NVML_ERROR_FUNCTION_NOT_FOUND;
        }
        if let Some(rc) = aggregates_denied(device, d) {
            return rc;
        }
        if let Ok(Some(m)) = mig_of(device, d) {
            return out!(
                out,
                nvmlMemory_v2_t {
                    version: EXPECTED,
                    total: m.total,
                    reserved: 0,
                    free: m.free,
                    used: m.used,
                }
            );
        }
        out!(
            out,
            nvmlMemory_v2_t {
                version: EXPECTED,
                total: d.total,
                reserved: d.reserved,
                free: d.free,
                used: d.used,
            }
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(
    device: nvmlDevice_t,
    out: *mut nvmlMemory_t,
) -> nvmlReturn_t {
    // v1 semantics: `used` includes the driver reservation.
    with_device(device, Some(Field::Memory), |_, d| {
        if let Some(rc) = aggregates_denied(device, d) {
            return rc;
        }
        if let Ok(Some(m)) = mig_of(device, d) {
            return out!(
                out,
                nvmlMemory_t {
                    total: m.total,
                    free: m.free,
                    used: m.used,
                }
            );
        }
        out!(
            out,
            nvmlMemory_t {
                total: d.total,
                free: d.free,
                used: d.used + d.reserved,
            }
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    device: nvmlDevice_t,
    out: *mut nvmlUtilization_t,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Utilization), |_, d| {
        // With MIG on, real drivers answer NOT_SUPPORTED on the parent and on each MIG
        // device (a scenario may give an instance a figure, as a future driver might).
        let mig = mig_of(device, d).ok().flatten();
        if let Some(m) = mig {
            return match m.utilization_gpu {
                Some(gpu) => out!(out, nvmlUtilization_t { gpu, memory: 0 }),
                None => nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED,
            };
        }
        if d.mig.is_some() {
            return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        }
        out!(
            out,
            nvmlUtilization_t {
                gpu: d.utilization_gpu,
                memory: d.utilization_memory,
            }
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: nvmlDevice_t,
    _sensor: nvmlTemperatureSensors_t,
    out: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Temperature), |_, d| {
        out!(out, d.temperature_c)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(
    device: nvmlDevice_t,
    out: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Power), |_, d| {
        out!(out, d.power_draw_mw)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(
    device: nvmlDevice_t,
    out: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::PowerLimit), |_, d| {
        match d.power_limit_mw {
            Some(mw) => out!(out, mw),
            None => nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED,
        }
    })
}

/// The limit set by management software; the scenario's limit is the one enforced, as on a
/// GPU no other constraint holds below it (nvitop reads this one, gpumon the enforced one).
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerManagementLimit(
    device: nvmlDevice_t,
    out: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::PowerLimit), |_, d| {
        match d.power_limit_mw {
            Some(mw) => out!(out, mw),
            None => nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED,
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetFanSpeed_v2(
    device: nvmlDevice_t,
    _fan: c_uint,
    out: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Fan), |_, d| match d.fan_percent {
        Some(p) => out!(out, p),
        None => nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED,
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetFanSpeed(
    device: nvmlDevice_t,
    out: *mut c_uint,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetFanSpeed_v2(device, 0, out) }
}

/// Drivers 535.43–535.86 wrote 32-byte `_v3` entries into a 24-byte array (gpustat#161).
fn has_v3_stride_bug(driver: &str) -> bool {
    let mut parts = driver.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    major == 535 && (43..=86).contains(&minor)
}

#[derive(Clone, Copy, PartialEq)]
enum List {
    Compute,
    Graphics,
}

/// The entry layout a process-list call writes.
#[derive(Clone, Copy, PartialEq)]
enum Entry {
    /// The unversioned call: `nvmlProcessInfo_v1_t`, pid and memory in 16 bytes.
    V1,
    /// `_v2`: 24 bytes with the instance ids.
    V2,
    /// `_v3`: 24 bytes, or 32 on the drivers with the stride bug.
    V3,
}

/// Appends `NAME DEVICE count|fill` to the call log, when there is one. One `write` per
/// line, so lines from several reader threads never mix.
fn note_call(name: &str, device: nvmlDevice_t, fill: bool) {
    use std::io::Write;
    with_fake(|fake| {
        if let Some(mut file) = fake.call_log.as_ref() {
            let what = if fill { "fill" } else { "count" };
            let line = format!("{name} {} {what}\n", device_index(device));
            let _ = file.write_all(line.as_bytes());
        }
    });
}

unsafe fn process_list(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
    list: List,
    layout: Entry,
) -> nvmlReturn_t {
    let name = match (list, layout) {
        (List::Compute, Entry::V1) => "nvmlDeviceGetComputeRunningProcesses",
        (List::Compute, Entry::V2) => "nvmlDeviceGetComputeRunningProcesses_v2",
        (List::Compute, Entry::V3) => "nvmlDeviceGetComputeRunningProcesses_v3",
        (List::Graphics, Entry::V1) => "nvmlDeviceGetGraphicsRunningProcesses",
        (List::Graphics, Entry::V2) => "nvmlDeviceGetGraphicsRunningProcesses_v2",
        (List::Graphics, Entry::V3) => "nvmlDeviceGetGraphicsRunningProcesses_v3",
    };
    note_call(name, device, !infos.is_null());
    if count.is_null() {
        return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
    }
    with_device(device, Some(Field::Processes), |fake, d| {
        if let Some(rc) = aggregates_denied(device, d) {
            return rc;
        }
        let mig = mig_of(device, d).ok().flatten();
        let listed = mig.map_or(&d.processes, |m| &m.processes);
        let wanted: Vec<_> = listed
            .iter()
            .filter(|p| match list {
                List::Compute => matches!(p.kind, ProcKind::Compute | ProcKind::Both),
                List::Graphics => matches!(p.kind, ProcKind::Graphics | ProcKind::Both),
            })
            .collect();
        let n = wanted.len() as c_uint;
        // SAFETY: `count` is non-null (checked above) and points to the caller's capacity.
        let capacity = unsafe { *count };
        if n == 0 {
            unsafe { *count = 0 };
            return nvmlReturn_enum_NVML_SUCCESS;
        }
        // A process list that grows between the count and the fill: every other fill finds
        // more processes than the headroom the caller allowed.
        if d.list_garbage {
            unsafe { *count = c_uint::MAX };
            return nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
        }
        let raced = d.list_race
            && !infos.is_null()
            && FILL_CALLS.fetch_add(1, Ordering::Relaxed).is_multiple_of(2);
        if infos.is_null() || capacity < n || raced {
            unsafe { *count = if raced { capacity + 1 } else { n } };
            return nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
        }
        let buggy = layout == Entry::V3 && has_v3_stride_bug(&fake.scenario.driver_version);
        let size = match layout {
            Entry::V1 => std::mem::size_of::<nvmlProcessInfo_v1_t>(),
            Entry::V2 | Entry::V3 => std::mem::size_of::<nvmlProcessInfo_t>(),
        };
        let stride = if buggy { 32 } else { size };
        let room = capacity as usize * size;
        let base = infos.cast::<u8>();
        for (i, p) in wanted.iter().enumerate() {
            if (i + 1) * stride > room {
                break;
            }
            let entry = nvmlProcessInfo_t {
                pid: p.pid,
                usedGpuMemory: p.memory.unwrap_or(VALUE_NOT_AVAILABLE) as c_ulonglong,
                gpuInstanceId: p.instance.map_or(u32::MAX, |(gi, _)| gi),
                computeInstanceId: p.instance.map_or(u32::MAX, |(_, ci)| ci),
            };
            // SAFETY: `(i + 1) * stride <= room`, the caller's buffer size in bytes.
            if layout == Entry::V1 {
                let entry = nvmlProcessInfo_v1_t {
                    pid: entry.pid,
                    usedGpuMemory: entry.usedGpuMemory,
                };
                unsafe {
                    std::ptr::write_unaligned(base.add(i * stride).cast(), entry);
                }
                continue;
            }
            unsafe {
                std::ptr::write_unaligned(base.add(i * stride).cast::<nvmlProcessInfo_t>(), entry);
                if buggy {
                    // usedGpuCcProtectedMemory of the 32-byte layout.
                    std::ptr::write_unaligned(base.add(i * stride + 24).cast::<u64>(), 0);
                }
            }
        }
        unsafe { *count = n };
        nvmlReturn_enum_NVML_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe { process_list(device, count, infos, List::Compute, Entry::V3) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v2(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe { process_list(device, count, infos, List::Compute, Entry::V2) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v3(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe { process_list(device, count, infos, List::Graphics, Entry::V3) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v2(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe { process_list(device, count, infos, List::Graphics, Entry::V2) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe { process_list(device, count, infos, List::Compute, Entry::V1) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe { process_list(device, count, infos, List::Graphics, Entry::V1) }
}

/// Per-process utilisation samples, stamped now (CPU µs): NOT_FOUND when no process has
/// one newer than `last_seen`, as the driver answers.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetProcessUtilization(
    device: nvmlDevice_t,
    samples: *mut nvmlProcessUtilizationSample_t,
    count: *mut c_uint,
    last_seen: c_ulonglong,
) -> nvmlReturn_t {
    note_call(
        "nvmlDeviceGetProcessUtilization",
        device,
        !samples.is_null(),
    );
    if count.is_null() {
        return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
    }
    with_device(device, Some(Field::ProcessUtilization), |_, d| {
        // Not on MIG, as real drivers answer.
        if d.mig.is_some() {
            return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        }
        let now_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.as_micros() as u64);
        let wanted: Vec<nvmlProcessUtilizationSample_t> = d
            .processes
            .iter()
            .filter(|_| now_us > last_seen)
            .filter_map(|p| {
                Some(nvmlProcessUtilizationSample_t {
                    pid: p.pid,
                    timeStamp: now_us,
                    smUtil: p.sm_percent?,
                    memUtil: p.mem_bw_percent.unwrap_or(0),
                    encUtil: 0,
                    decUtil: 0,
                })
            })
            .collect();
        let n = wanted.len() as c_uint;
        // SAFETY: `count` is non-null (checked above).
        let capacity = unsafe { *count };
        if n == 0 {
            unsafe { *count = 0 };
            return nvmlReturn_enum_NVML_ERROR_NOT_FOUND;
        }
        if samples.is_null() || capacity < n {
            unsafe { *count = n };
            return nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
        }
        for (i, s) in wanted.into_iter().enumerate() {
            // SAFETY: i < n <= capacity, the caller's array length.
            unsafe { *samples.add(i) = s };
        }
        unsafe { *count = n };
        nvmlReturn_enum_NVML_SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    device: nvmlDevice_t,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Mig), |_, d| {
        if d.mig.is_none() || mig_slot(device).is_some() || pending.is_null() {
            return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        }
        // SAFETY: non-null out-pointer from the caller.
        unsafe { *pending = 1 };
        out!(current, 1)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(
    device: nvmlDevice_t,
    count: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Mig), |_, d| {
        if d.mig.is_none() || mig_slot(device).is_some() {
            return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        }
        out!(count, scenario::MAX_MIG)
    })
}

/// An empty slot answers NOT_FOUND, as the driver does.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(
    device: nvmlDevice_t,
    index: c_uint,
    out: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Mig), |_, d| {
        let Some(mig) = d.mig.as_ref().filter(|_| mig_slot(device).is_none()) else {
            return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        };
        if index >= scenario::MAX_MIG {
            return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
        }
        if index as usize >= mig.len() {
            return nvmlReturn_enum_NVML_ERROR_NOT_FOUND;
        }
        out!(out, mig_handle(device_index(device), index as usize))
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceIsMigDeviceHandle(
    device: nvmlDevice_t,
    out: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, None, |_, _| {
        out!(out, c_uint::from(mig_slot(device).is_some()))
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceId(
    device: nvmlDevice_t,
    out: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Mig), |_, d| match mig_of(device, d) {
        Ok(Some(m)) => out!(out, m.gpu_instance_id),
        _ => nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED,
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeInstanceId(
    device: nvmlDevice_t,
    out: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Mig), |_, d| match mig_of(device, d) {
        Ok(Some(m)) => out!(out, m.compute_instance_id),
        _ => nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED,
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
    device: nvmlDevice_t,
    out: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Mig), |_, _| {
        if mig_slot(device).is_none() {
            return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
        }
        out!(out, (device_index(device) + 1) as nvmlDevice_t)
    })
}

/// Volatile or aggregate, corrected or uncorrected; NOT_SUPPORTED without `ecc`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTotalEccErrors(
    device: nvmlDevice_t,
    kind: nvmlMemoryErrorType_t,
    counter: nvmlEccCounterType_t,
    out: *mut c_ulonglong,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Ecc), |_, d| {
        let Some(ecc) = d.ecc else {
            return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        };
        if kind > 1 || counter > 1 {
            return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
        }
        out!(out, ecc[(counter * 2 + kind) as usize])
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetRemappedRows(
    device: nvmlDevice_t,
    corrected: *mut c_uint,
    uncorrected: *mut c_uint,
    pending: *mut c_uint,
    failed: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::RemappedRows), |_, d| {
        let Some((c, u, p, f)) = d.remapped_rows else {
            return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        };
        if corrected.is_null() || uncorrected.is_null() || pending.is_null() {
            return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null out-pointers from the caller.
        unsafe {
            *corrected = c;
            *uncorrected = u;
            *pending = c_uint::from(p);
        }
        out!(failed, c_uint::from(f))
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksEventReasons(
    device: nvmlDevice_t,
    out: *mut c_ulonglong,
) -> nvmlReturn_t {
    with_device(device, Some(Field::ClockReasons), |_, d| {
        out!(out, d.clock_reasons)
    })
}

/// The older name of the same call (what nvtop and nvitop ask).
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    device: nvmlDevice_t,
    out: *mut c_ulonglong,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetCurrentClocksEventReasons(device, out) }
}

const SUPPORTED_EVENTS: c_ulonglong = (nvmlEventTypeSingleBitEccError
    | nvmlEventTypeDoubleBitEccError
    | nvmlEventTypePState
    | nvmlEventTypeXidCriticalError
    | nvmlEventTypeClock) as c_ulonglong;

/// NOT_SUPPORTED where a `not_supported` fault on `events` names no device (a consumer GPU
/// driver without the event API).
#[no_mangle]
pub unsafe extern "C" fn nvmlEventSetCreate(out: *mut nvmlEventSet_t) -> nvmlReturn_t {
    let mut guard = FAKE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(fake) = guard.as_mut() else {
        return nvmlReturn_enum_NVML_ERROR_UNINITIALIZED;
    };
    let now = fake.unwrapped_now();
    let unsupported = fake.scenario.faults.iter().any(|f| {
        f.kind == FaultKind::NotSupported && f.field == Some(Field::Events) && f.device.is_none()
    });
    if unsupported {
        return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
    }
    fake.sets.push(Some(EventSet {
        devices: Vec::new(),
        cursor: (now, usize::MAX),
    }));
    let handle = fake.sets.len() as nvmlEventSet_t;
    out!(out, handle)
}

fn set_index(set: nvmlEventSet_t) -> usize {
    (set as usize).wrapping_sub(1)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlEventSetFree(set: nvmlEventSet_t) -> nvmlReturn_t {
    let mut guard = FAKE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(fake) = guard.as_mut() else {
        return nvmlReturn_enum_NVML_ERROR_UNINITIALIZED;
    };
    match fake.sets.get_mut(set_index(set)) {
        Some(slot @ Some(_)) => {
            *slot = None;
            nvmlReturn_enum_NVML_SUCCESS
        }
        _ => nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT,
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetSupportedEventTypes(
    device: nvmlDevice_t,
    out: *mut c_ulonglong,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Events), |_, _| {
        out!(out, SUPPORTED_EVENTS)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceRegisterEvents(
    device: nvmlDevice_t,
    types: c_ulonglong,
    set: nvmlEventSet_t,
) -> nvmlReturn_t {
    let rc = with_device(device, Some(Field::Events), |_, _| {
        if types & !SUPPORTED_EVENTS != 0 {
            return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        }
        nvmlReturn_enum_NVML_SUCCESS
    });
    if rc != nvmlReturn_enum_NVML_SUCCESS {
        return rc;
    }
    let mut guard = FAKE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(fake) = guard.as_mut() else {
        return nvmlReturn_enum_NVML_ERROR_UNINITIALIZED;
    };
    match fake.sets.get_mut(set_index(set)) {
        Some(Some(s)) => {
            if types & nvmlEventTypeXidCriticalError as c_ulonglong != 0 {
                s.devices.push(device_index(device) as u32);
            }
            nvmlReturn_enum_NVML_SUCCESS
        }
        _ => nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT,
    }
}

/// Delivers the next scripted Xid of the set's devices, waiting for it up to `timeout_ms`
/// (TIMEOUT when none comes). A registered device that is lost answers GPU_IS_LOST at once,
/// every time, as the driver does; a `hang` on `events` blocks the wait first.
#[no_mangle]
pub unsafe extern "C" fn nvmlEventSetWait_v2(
    set: nvmlEventSet_t,
    data: *mut nvmlEventData_t,
    timeout_ms: c_uint,
) -> nvmlReturn_t {
    if data.is_null() {
        return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
    }
    let Some(Some(devices)) = with_fake(|fake| {
        fake.sets
            .get(set_index(set))
            .and_then(Option::as_ref)
            .map(|s| s.devices.clone())
    }) else {
        return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
    };
    for &d in &devices {
        let handle = (d as usize + 1) as nvmlDevice_t;
        hang(handle, Some(Field::Events));
        if with_state(handle, |_, s| s.is_some_and(|s| s.lost)) == Some(true) {
            return nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST;
        }
    }
    let deadline = Instant::now() + std::time::Duration::from_millis(timeout_ms.into());
    loop {
        let next = {
            let mut guard = FAKE.lock().unwrap_or_else(|e| e.into_inner());
            let Some(fake) = guard.as_mut() else {
                return nvmlReturn_enum_NVML_ERROR_UNINITIALIZED;
            };
            let now = fake.unwrapped_now();
            let speed = fake.speed;
            let Some(Some(s)) = fake.sets.get(set_index(set)) else {
                return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
            };
            let next = fake.scenario.next_xid(|d| s.devices.contains(&d), s.cursor);
            match next {
                Some(x) if x.at <= now => {
                    if let Some(Some(s)) = fake.sets.get_mut(set_index(set)) {
                        s.cursor = (x.at, x.seq);
                    }
                    // SAFETY: non-null (checked above), caller-owned.
                    unsafe {
                        *data = nvmlEventData_t {
                            device: (x.device as usize + 1) as nvmlDevice_t,
                            eventType: nvmlEventTypeXidCriticalError as c_ulonglong,
                            eventData: x.xid as c_ulonglong,
                            gpuInstanceId: x.gpu_instance_id.unwrap_or(u32::MAX),
                            computeInstanceId: x.gpu_instance_id.map_or(u32::MAX, |_| 0),
                        };
                    }
                    return nvmlReturn_enum_NVML_SUCCESS;
                }
                Some(x) if speed > 0.0 => Some((x.at - now) / speed),
                _ => None,
            }
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return nvmlReturn_enum_NVML_ERROR_TIMEOUT;
        }
        let wait = next.map_or(left, |s| {
            left.min(std::time::Duration::from_secs_f64(s.max(0.0) + 0.001))
        });
        std::thread::sleep(wait);
    }
}

/// Calls that other monitors make (nvtop resolves every one of its calls at start and gives up
/// when one is missing; nvitop prints a traceback for each one missing and goes on) but that no
/// scenario describes: they answer as a GPU without the counter does, NOT_SUPPORTED, after the
/// usual device checks. They let the benchmarks run the peers on the same fake GPUs as gpumon,
/// on their normal path.
macro_rules! not_supported {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(device: nvmlDevice_t, $($arg: $ty),*) -> nvmlReturn_t {
            $(let _ = $arg;)*
            with_device(device, None, |_, _| nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED)
        }
    )*};
}

not_supported! {
    nvmlDeviceGetMaxPcieLinkGeneration(out: *mut c_uint);
    nvmlDeviceGetMaxPcieLinkWidth(out: *mut c_uint);
    nvmlDeviceGetCurrPcieLinkGeneration(out: *mut c_uint);
    nvmlDeviceGetCurrPcieLinkWidth(out: *mut c_uint);
    nvmlDeviceGetPcieThroughput(counter: nvmlPcieUtilCounter_t, out: *mut c_uint);
    nvmlDeviceGetTemperatureThreshold(kind: nvmlTemperatureThresholds_t, out: *mut c_uint);
    nvmlDeviceGetClockInfo(kind: nvmlClockType_t, out: *mut c_uint);
    nvmlDeviceGetMaxClockInfo(kind: nvmlClockType_t, out: *mut c_uint);
    nvmlDeviceGetEncoderUtilization(out: *mut c_uint, period_us: *mut c_uint);
    nvmlDeviceGetDecoderUtilization(out: *mut c_uint, period_us: *mut c_uint);
    nvmlDeviceGetDisplayActive(out: *mut nvmlEnableState_t);
    nvmlDeviceGetDriverModel(current: *mut nvmlDriverModel_t, pending: *mut nvmlDriverModel_t);
    nvmlDeviceGetPersistenceMode(out: *mut nvmlEnableState_t);
    nvmlDeviceGetPerformanceState(out: *mut nvmlPstates_t);
    nvmlDeviceGetComputeMode(out: *mut nvmlComputeMode_t);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stride_bug_range() {
        assert!(has_v3_stride_bug("535.54.03"));
        assert!(has_v3_stride_bug("535.86.05"));
        assert!(!has_v3_stride_bug("535.104.05"));
        assert!(!has_v3_stride_bug("550.54.15"));
    }

    /// The one test that initialises the library (its state is global).
    #[test]
    fn unversioned_lists_and_unsupported_calls_answer_as_a_driver_does() {
        let path = std::env::temp_dir().join(format!("fake-nvml-{}.json", std::process::id()));
        std::fs::write(
            &path,
            r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1024,"power_limit_w":300,
               "processes":[{"pid":41,"memory_mib":2},{"pid":42,"memory_mib":3}]}]}"#,
        )
        .expect("write scenario");
        // SAFETY: no other test in this crate reads the environment.
        unsafe { std::env::set_var("FAKE_NVML_SCENARIO", &path) };
        assert_eq!(nvmlInit_v2(), nvmlReturn_enum_NVML_SUCCESS);
        let dev = 1 as nvmlDevice_t;
        // The unversioned call writes 16-byte v1 entries.
        let mut list = [nvmlProcessInfo_v1_t {
            pid: 0,
            usedGpuMemory: 0,
        }; 4];
        let mut n: c_uint = 4;
        let rc =
            unsafe { nvmlDeviceGetComputeRunningProcesses(dev, &mut n, list.as_mut_ptr().cast()) };
        assert_eq!((rc, n), (nvmlReturn_enum_NVML_SUCCESS, 2));
        assert_eq!((list[0].pid, list[0].usedGpuMemory), (41, 2 << 20));
        assert_eq!((list[1].pid, list[1].usedGpuMemory), (42, 3 << 20));
        assert_eq!(list[2].pid, 0, "wrote past the entries it reported");
        let mut out: c_uint = 0;
        let clock = unsafe { nvmlDeviceGetClockInfo(dev, 0, &mut out) };
        assert_eq!(clock, nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED);
        let mut ecc: c_ulonglong = 0;
        let ecc_rc = unsafe { nvmlDeviceGetTotalEccErrors(dev, 0, 0, &mut ecc) };
        assert_eq!(ecc_rc, nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED);
        // nvitop's limit is the scenario's, as the enforced one gpumon reads.
        let mut managed: c_uint = 0;
        let rc = unsafe { nvmlDeviceGetPowerManagementLimit(dev, &mut managed) };
        assert_eq!((rc, managed), (nvmlReturn_enum_NVML_SUCCESS, 300_000));
        let rc = unsafe { nvmlDeviceGetEnforcedPowerLimit(dev, &mut out) };
        assert_eq!((rc, out), (nvmlReturn_enum_NVML_SUCCESS, 300_000));
        let bad = unsafe { nvmlDeviceGetClockInfo(9 as nvmlDevice_t, 0, &mut out) };
        assert_eq!(bad, nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT);
        assert_eq!(nvmlShutdown(), nvmlReturn_enum_NVML_SUCCESS);
        let _ = std::fs::remove_file(path);
    }
}
