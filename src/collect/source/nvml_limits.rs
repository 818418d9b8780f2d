//! `nvmlDeviceGetMemoryLimits_v1` (NVML R615, CUDA 13.4): a cgroup's GPU memory limits, read
//! from the driver. nvml-wrapper does not wrap it, and older drivers lack it, so the symbol is
//! looked up at run time in the NVML library gpumon already loaded; where it is absent the
//! limit is "not available" (`None`), never 0, and nothing else changes.
//!
//! The structure is NVML's own, from `nvml.h` of CUDA 13.4 (`cuda-nvml-dev-13-4` 13.4.92;
//! NVIDIA's API reference, `nvmlGetMemoryLimits_v1_t`): a `const char *nameSpace` (in: the
//! cgroup directory's full path) and three `unsigned long long` out-fields, `softLimit`,
//! `hardLimit` and `currentUsed`, in bytes; 32 bytes on 64-bit Linux, with no version field.
//! A hard limit of `ULLONG_MAX` is no limit (clearing a limit sets soft 0 and hard
//! `ULLONG_MAX`). This layout is kept here alone, with [`GetMemoryLimitsV1`].
//!
//! Checked against NVIDIA's API reference
//! (<https://docs.nvidia.com/deploy/nvml-api/api/structnvmlGetMemoryLimits__v1__t.html>: the
//! same four members; "no limit is set when softLimit is 0 and hardLimit is
//! NVML_DEVICE_MEMORY_LIMIT_MAX") and NVIDIA's Python bindings
//! (`cuda.bindings.nvml.GetMemoryLimits_v1`). The MPS memory-partitioning guide's example
//! speaks of `bIsMax` flags; no such member is in the header or the reference, so none is
//! read. `NVML_DEVICE_MEMORY_LIMIT_MAX`'s value is in none of those sources: `ULLONG_MAX` is
//! taken as it (what clearing a limit writes).

use std::ffi::{c_char, c_void, CString};
use std::sync::OnceLock;

use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlReturn_t};

use crate::model::unified::{GpuLimit, LimitSource};

/// `nvmlGetMemoryLimits_v1_t` as `nvml.h` defines it.
#[repr(C)]
#[derive(Debug)]
pub struct GetMemoryLimitsV1 {
    pub name_space: *const c_char,
    pub soft_limit: u64,
    pub hard_limit: u64,
    pub current_used: u64,
}

const _: () = assert!(std::mem::size_of::<GetMemoryLimitsV1>() == 32);

type GetLimits = unsafe extern "C" fn(nvmlDevice_t, *mut GetMemoryLimitsV1) -> nvmlReturn_t;

/// The symbol, once looked up (`None`: this driver lacks it, or NVML is not loaded).
static SYMBOL: OnceLock<Option<usize>> = OnceLock::new();

/// Looks the symbol up in the library at `path`, already loaded by nvml-wrapper
/// (`RTLD_NOLOAD`: never loads a second copy). Called once, when NVML is opened.
pub fn load(path: &str) {
    SYMBOL.get_or_init(|| {
        let path = CString::new(path).ok()?;
        // SAFETY: a NUL-terminated path; RTLD_NOLOAD only finds a library already loaded.
        let lib = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if lib.is_null() {
            return None;
        }
        // SAFETY: a handle dlopen gave and a NUL-terminated name. The handle is kept open
        // (the library stays loaded for the process's life, as nvml-wrapper keeps it).
        let sym: *mut c_void =
            unsafe { libc::dlsym(lib, c"nvmlDeviceGetMemoryLimits_v1".as_ptr()) };
        (!sym.is_null()).then_some(sym as usize)
    });
}

/// Whether this driver has the call.
pub fn available() -> bool {
    SYMBOL.get().copied().flatten().is_some()
}

/// This container's limit on a GPU as NVML R615 reads it, for gpumon's own cgroup
/// ([`crate::collect::unified::own_cgroup`]), called by the NVML reader on its own thread;
/// `None` where the driver lacks the call or sets no limit. A `dmem` limit read by
/// [`crate::collect::unified::Watch`] replaces it.
pub fn own_limit(device: &nvml_wrapper::Device) -> Option<GpuLimit> {
    if !available() {
        return None;
    }
    let (path, dir) = crate::collect::unified::own_cgroup()?;
    read(device, dir, path)
}

/// The limit of the cgroup at `cgroup_dir` (a full path under `/sys/fs/cgroup`), named
/// `cgroup` in the result, on the GPU `device`. `None` where the driver lacks the call, sets
/// no limit for that cgroup (NOT_SUPPORTED, NOT_FOUND) or answers anything else.
pub fn read(device: &nvml_wrapper::Device, cgroup_dir: &str, cgroup: &str) -> Option<GpuLimit> {
    let sym = SYMBOL.get().copied().flatten()?;
    // SAFETY: `sym` is the address dlsym gave for this name, whose C type is `GetLimits`.
    let get: GetLimits = unsafe { std::mem::transmute::<usize, GetLimits>(sym) };
    let dir = CString::new(cgroup_dir).ok()?;
    let mut limits = GetMemoryLimitsV1 {
        name_space: dir.as_ptr(),
        soft_limit: 0,
        hard_limit: 0,
        current_used: 0,
    };
    // SAFETY: the handle of a live device of the loaded NVML, and a struct of the header's
    // layout whose `nameSpace` outlives the call.
    let rc = unsafe { get(device.handle(), &mut limits) };
    if rc != 0 {
        return None;
    }
    Some(from_struct(&limits, cgroup))
}

/// The limit the structure says: `ULLONG_MAX` hard is none, 0 soft is none.
pub fn from_struct(l: &GetMemoryLimitsV1, cgroup: &str) -> GpuLimit {
    GpuLimit {
        cgroup: cgroup.to_owned(),
        source: LimitSource::Nvml,
        hard_bytes: (l.hard_limit != u64::MAX).then_some(l.hard_limit),
        soft_bytes: (l.soft_limit != 0 && l.soft_limit != u64::MAX).then_some(l.soft_limit),
        used_bytes: Some(l.current_used),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limit_is_none_never_a_huge_number() {
        let l = GetMemoryLimitsV1 {
            name_space: std::ptr::null(),
            soft_limit: 0,
            hard_limit: u64::MAX,
            current_used: 4096,
        };
        let g = from_struct(&l, "/c");
        assert_eq!(
            (g.hard_bytes, g.soft_bytes, g.used_bytes),
            (None, None, Some(4096))
        );
        let l = GetMemoryLimitsV1 {
            soft_limit: 1 << 32,
            hard_limit: 1 << 33,
            ..l
        };
        let g = from_struct(&l, "/c");
        assert_eq!((g.hard_bytes, g.soft_bytes), (Some(1 << 33), Some(1 << 32)));
    }

    #[test]
    fn the_layout_is_the_headers() {
        assert_eq!(std::mem::offset_of!(GetMemoryLimitsV1, soft_limit), 8);
        assert_eq!(std::mem::offset_of!(GetMemoryLimitsV1, hard_limit), 16);
        assert_eq!(std::mem::offset_of!(GetMemoryLimitsV1, current_used), 24);
    }
}
