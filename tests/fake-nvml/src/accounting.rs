//! NVML accounting mode on the fake library: the mode, the buffer's size, the accounting pid
//! list (running and exited processes, the oldest overwritten) and each pid's stats, from the
//! scenario's `accounting` (see `scenario_accounting.rs`). A device without it answers
//! NOT_SUPPORTED, and one with it off answers NOT_SUPPORTED to everything but the mode, as the
//! driver does.

use super::{device_index, with_device};
use crate::scenario::accounting::AccountingState;
use crate::scenario::Field;
use nvml_wrapper_sys::bindings::*;
use std::ffi::c_uint;
use std::sync::Mutex;

/// Each device's accounting state, with the wall-clock millisecond it is for: a driver answers
/// a stats call from its buffer, and evaluating the scenario (every process's curve up to now)
/// for each call would make the fake, not gpumon, the cost being measured.
type Cached = (i64, f64, Option<AccountingState>);
static CACHE: Mutex<Vec<Option<Cached>>> = Mutex::new(Vec::new());

/// The device's accounting now; `Err` with NVML's answer where it has none or it is off.
fn state(
    fake: &super::Fake,
    device: nvmlDevice_t,
    need_on: bool,
) -> Result<(AccountingState, f64), nvmlReturn_t> {
    let index = device_index(device);
    let ms = (fake.start.elapsed().as_secs_f64() * 1000.0) as i64;
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() <= index {
        cache.resize_with(index + 1, || None);
    }
    if !matches!(&cache[index], Some((at, _, _)) if *at == ms) {
        let t = fake.scenario.time(fake.unwrapped_now());
        cache[index] = Some((ms, t, fake.scenario.accounting_at(index as u32, t)));
    }
    let Some((_, t, Some(state))) = cache[index].clone() else {
        return Err(nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED);
    };
    if need_on && !state.enabled {
        return Err(nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED);
    }
    Ok((state, t))
}

/// The Unix time, in microseconds, of scenario time `s`, with `now` the scenario time now.
fn unix_us(fake: &super::Fake, now: f64, s: f64) -> u64 {
    let speed = if fake.speed > 0.0 { fake.speed } else { 1.0 };
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    ((wall - (now - s) / speed).max(0.0) * 1e6) as u64
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetAccountingMode(
    device: nvmlDevice_t,
    mode: *mut nvmlEnableState_t,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Accounting), |fake, _| {
        match state(fake, device, false) {
            Ok((s, _)) => out!(
                mode,
                if s.enabled {
                    nvmlEnableState_enum_NVML_FEATURE_ENABLED
                } else {
                    nvmlEnableState_enum_NVML_FEATURE_DISABLED
                }
            ),
            Err(rc) => rc,
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetAccountingBufferSize(
    device: nvmlDevice_t,
    size: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Accounting), |fake, _| {
        match state(fake, device, true) {
            Ok((s, _)) => out!(size, s.buffer),
            Err(rc) => rc,
        }
    })
}

/// Count with a null array (or a count of 0): INSUFFICIENT_SIZE with the count, or SUCCESS
/// when there is none; then the pids, oldest first.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetAccountingPids(
    device: nvmlDevice_t,
    count: *mut c_uint,
    pids: *mut c_uint,
) -> nvmlReturn_t {
    if count.is_null() {
        return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
    }
    with_device(device, Some(Field::Accounting), |fake, _| {
        let (s, _) = match state(fake, device, true) {
            Ok(s) => s,
            Err(rc) => return rc,
        };
        let n = s.entries.len() as c_uint;
        // SAFETY: `count` is non-null (checked above).
        let capacity = unsafe { *count };
        if pids.is_null() || capacity < n {
            unsafe { *count = n };
            return if n == 0 {
                nvmlReturn_enum_NVML_SUCCESS
            } else {
                nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE
            };
        }
        for (i, e) in s.entries.iter().enumerate() {
            // SAFETY: `i < n <= capacity`, the caller's array length.
            unsafe { *pids.add(i) = e.pid };
        }
        unsafe { *count = n };
        nvmlReturn_enum_NVML_SUCCESS
    })
}

/// One pid's stats: NOT_FOUND for a pid the buffer does not hold.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetAccountingStats(
    device: nvmlDevice_t,
    pid: c_uint,
    stats: *mut nvmlAccountingStats_t,
) -> nvmlReturn_t {
    with_device(device, Some(Field::Accounting), |fake, _| {
        let (s, now) = match state(fake, device, true) {
            Ok(s) => s,
            Err(rc) => return rc,
        };
        let Some(e) = s.entries.iter().find(|e| e.pid == pid) else {
            return nvmlReturn_enum_NVML_ERROR_NOT_FOUND;
        };
        let speed = if fake.speed > 0.0 { fake.speed } else { 1.0 };
        out!(
            stats,
            nvmlAccountingStats_t {
                gpuUtilization: u32::MAX,
                memoryUtilization: u32::MAX,
                maxMemoryUsage: e.max_memory.unwrap_or(super::VALUE_NOT_AVAILABLE),
                // Milliseconds its context was active: 0 while it runs, as the driver says.
                time: e
                    .end_s
                    .map_or(0, |end| ((end - e.start_s) / speed * 1000.0) as u64),
                startTime: unix_us(fake, now, e.start_s),
                isRunning: u32::from(e.end_s.is_none()),
                reserved: [0; 5],
            }
        )
    })
}
