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
//! - `FAKE_NVML_CALL_LOG`: a file to which each process-list and per-process utilisation call
//!   appends a line, `NAME DEVICE count|fill` (a count call passes no array), so tests can
//!   check which queries gpumon makes and how often.
//!
//! Faults come from the scenario (see `assets/scenarios/README.md`); `hang` blocks the calling
//! thread for real, outside the library's lock, so only the calls on the hung device wait.
#![allow(non_snake_case, non_upper_case_globals, clippy::missing_safety_doc)]

#[allow(dead_code)]
#[path = "../../../src/collect/source/scenario.rs"]
mod scenario;

use nvml_wrapper_sys::bindings::*;
use scenario::{DeviceState, FaultKind, Field, ProcKind, Scenario};
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

fn device_index(device: nvmlDevice_t) -> usize {
    (device as usize).wrapping_sub(1)
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
    hang(device, field);
    with_state(device, |fake, d| {
        let Some(d) = d else {
            return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
        };
        if d.lost {
            return nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST;
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
    let t0 = env_f64("FAKE_NVML_TIME", 0.0);
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
        speed: env_f64("FAKE_NVML_SPEED", 1.0),
        cached: Vec::new(),
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
        write_str(&d.name, out, len)
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
        write_str(&d.uuid, out, len)
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
        let wanted: Vec<_> = d
            .processes
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
                gpuInstanceId: u32::MAX,
                computeInstanceId: u32::MAX,
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
    nvmlDeviceGetTotalEccErrors(
        kind: nvmlMemoryErrorType_t,
        counter: nvmlEccCounterType_t,
        out: *mut c_ulonglong
    );
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
