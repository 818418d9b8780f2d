//! `nvmlDeviceGetMemoryLimits_v1` (NVML R615): a cgroup's GPU memory limits, from the
//! scenario device's `memory_limit`. The structure is `nvmlGetMemoryLimits_v1_t` as CUDA
//! 13.4's `nvml.h` defines it (nvml-wrapper-sys predates it, so it is written out here): the
//! cgroup directory's path in, soft, hard (`ULLONG_MAX`: none) and current use out.

use super::*;

/// `nvmlGetMemoryLimits_v1_t`.
#[repr(C)]
pub struct nvmlGetMemoryLimits_v1_t {
    pub nameSpace: *const c_char,
    pub softLimit: c_ulonglong,
    pub hardLimit: c_ulonglong,
    pub currentUsed: c_ulonglong,
}

/// Answers for a `nameSpace` that ends with one of the scenario's cgroup paths
/// (`memory_limit`, `memory_limits`: the longest that matches); NOT_SUPPORTED for a device
/// without a limit or another cgroup (as a driver with no limit set answers);
/// INVALID_ARGUMENT for a null structure or name.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryLimits_v1(
    device: nvmlDevice_t,
    limits: *mut nvmlGetMemoryLimits_v1_t,
) -> nvmlReturn_t {
    if limits.is_null() {
        return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null pointer to the caller's structure; its `nameSpace` is read only.
    let name = unsafe { (*limits).nameSpace };
    if name.is_null() {
        return nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: the caller's NUL-terminated path, per the NVML contract.
    let name = unsafe { std::ffi::CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    with_device(device, Some(Field::MemoryLimits), |_, d| {
        let Some((_, soft, hard, used)) = d.limit_for(&name) else {
            return nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        };
        // SAFETY: non-null pointer checked above; only the out-fields are written.
        unsafe {
            (*limits).softLimit = *soft;
            (*limits).hardLimit = *hard;
            (*limits).currentUsed = *used;
        }
        nvmlReturn_enum_NVML_SUCCESS
    })
}
