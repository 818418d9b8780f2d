//! The GPU APIs' own out-of-memory statuses, by name and by number ([`STATUSES`]), as any
//! program relays them in its own words: a C++ exception's `what()`, a C# or Java exception, a
//! Rust `{:?}`, `error code -4`, an HRESULT in hex or decimal, Windows' localised text. The
//! table says which API each status belongs to and which memory it is about: the device's
//! (a device OOM), the host's (never a device OOM), or, for OpenCL's `CL_OUT_OF_RESOURCES`,
//! resources that are memory only where the failed call allocates. A status not in the table is
//! not memory and is not found here. Also the classic C++ programs that relay CUDA's "out of
//! memory" in their own words ([`cuda_programs`]): Caffe's glog checks, Darknet, OpenCV.

use super::lazy::LazyRegex;
use regex::Regex;

use super::known::{oom, SIZE};
use super::{Facts, Framework, MemoryKind, Oom};

/// A GPU API whose out-of-memory statuses programs relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Cuda,
    Hip,
    OpenCl,
    Vulkan,
    LevelZero,
    Metal,
    /// Windows' HRESULTs as Direct3D 12 and DirectML return them (and ONNX Runtime's DirectML
    /// execution provider relays them).
    Windows,
    /// NVIDIA's Performance Primitives (NPP), on CUDA.
    Npp,
    /// Intel Gaudi's SynapseAI runtime and graph compiler.
    Synapse,
    /// OpenGL (and OpenGL ES) and EGL, as games and Android's renderers report them.
    OpenGl,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::Cuda => "CUDA",
            Api::Hip => "HIP (ROCm)",
            Api::OpenCl => "OpenCL",
            Api::Vulkan => "Vulkan",
            Api::LevelZero => "Level Zero",
            Api::Metal => "Metal",
            Api::Windows => "Direct3D 12 / DirectML",
            Api::Npp => "NVIDIA NPP",
            Api::Synapse => "Intel Gaudi's SynapseAI",
            Api::OpenGl => "OpenGL",
        }
    }

    /// The framework an OOM of this API is said to come from when no program is named.
    pub fn framework(self) -> Framework {
        match self {
            Api::Cuda | Api::Npp => Framework::Cuda,
            Api::Hip => Framework::Rocm,
            Api::OpenCl => Framework::OpenCl,
            Api::Vulkan => Framework::Vulkan,
            Api::LevelZero => Framework::Unknown,
            Api::Metal => Framework::Metal,
            Api::Windows => Framework::DirectMl,
            Api::Synapse => Framework::Hpu,
            Api::OpenGl => Framework::OpenGl,
        }
    }
}

/// Which memory a status is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The device's memory: a device OOM.
    Device,
    /// The host's RAM: never a device OOM.
    Host,
    /// OpenCL's `CL_OUT_OF_RESOURCES`: "a failure to allocate resources required by the OpenCL
    /// implementation on the device" (the OpenCL 3.0 API spec, appendix "Error codes"). On
    /// NVIDIA's implementation it is what a device allocation that does not fit returns, but
    /// also what an out-of-bounds access in a kernel surfaces as at the next read
    /// (clEnqueueReadBuffer) — so it is read as memory only beside an allocating call.
    Resources,
}

/// One status of one API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub api: Api,
    /// The name in the API's header.
    pub name: &'static str,
    /// Its value in the header (HRESULTs as the signed 32-bit value their hex spells).
    pub number: i64,
    pub kind: Kind,
    /// How wrappers spell it besides the header's name (vulkan.hpp's `to_string`, ash's
    /// `Debug`, PyOpenCL without the `CL_` prefix, the API's error-string functions).
    pub spellings: &'static [&'static str],
    /// Whether a spelling (not the header's name) counts only beside the API's own words.
    pub needs_context: bool,
}

const fn st(
    api: Api,
    name: &'static str,
    number: i64,
    kind: Kind,
    spellings: &'static [&'static str],
) -> Status {
    Status {
        api,
        name,
        number,
        kind,
        spellings,
        needs_context: false,
    }
}

/// E_OUTOFMEMORY, 0x8007000E, as a signed 32-bit value.
const E_OUTOFMEMORY: i64 = 0x8007_000E_i64 - (1 << 32);
/// ERROR_NOT_ENOUGH_MEMORY as an HRESULT, 0x80070008.
const HRESULT_NOT_ENOUGH_MEMORY: i64 = 0x8007_0008_i64 - (1 << 32);
/// D3DERR_OUTOFVIDEOMEMORY, 0x8876017C (Direct3D 9's `d3d9.h`).
const D3DERR_OUTOFVIDEOMEMORY: i64 = 0x8876_017C_i64 - (1 << 32);

/// Every API's memory statuses. Sources (each header's values):
/// - CUDA: `cuda.h` `CUDA_ERROR_OUT_OF_MEMORY = 2`; `driver_types.h`
///   `cudaErrorMemoryAllocation = 2` (cudaGetErrorString: "out of memory").
///   .NET and Julia bindings spell CUDA_ERROR_OUT_OF_MEMORY their own way: ManagedCuda's
///   `CUResult.ErrorOutOfMemory` (`ManagedCUDA/CudaTypes.cs`; its `CudaException` message is
///   "ErrorOutOfMemory: " + the driver's description, `cuda.h` "The API call failed because it
///   was unable to allocate enough memory [or other resources] to perform the requested
///   operation."), cudafy's GASS.CUDA `CUResult.ErrorOutOfMemory`, CUDA.jl's
///   `OutOfGPUMemoryError` (`lib/cudadrv/memory.jl`); Alea, ILGPU and JCuda print the header's
///   names (`CUDA_ERROR_OUT_OF_MEMORY`, `cudaErrorMemoryAllocation`) as CuPy does. cudarc's
///   `Debug` (`src/driver/result.rs`, 0.9 to 0.16: `debug_tuple("DriverError").field(&self.0)
///   .field(&error_string)`) prints the driver's own text beside the name,
///   `DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")`, which is read without the name
///   (a wrapped or OCR'd paste may break it: `cudarc_re`).
/// - HIP: `hip/hip_runtime_api.h` `hipErrorOutOfMemory = 2`, and its deprecated alias
///   `hipErrorMemoryAllocation = 2` (ROCm 6.x). cupla's `cuplaErrorMemoryAllocation = 2` is
///   read as CUDA's, whose runtime's names it copies.
/// - OpenCL: `CL/cl.h` `CL_MEM_OBJECT_ALLOCATION_FAILURE -4`, `CL_OUT_OF_RESOURCES -5`,
///   `CL_OUT_OF_HOST_MEMORY -6`; Boost.Compute's `opencl_error::to_string` (what LightGBM's GPU
///   build prints) spells them "Memory Object Allocation Failure", "Out of Resources", "Out of
///   Host Memory"; PyOpenCL drops the `CL_` ("clCreateBuffer failed: MEM_OBJECT_ALLOCATION_FAILURE").
/// - Vulkan: `vulkan_core.h` `VK_ERROR_OUT_OF_HOST_MEMORY = -1`, `VK_ERROR_OUT_OF_DEVICE_MEMORY
///   = -2`; vulkan.hpp's `to_string` ("ErrorOutOfDeviceMemory") and exception classes
///   (`vk::OutOfDeviceMemoryError`), ash's `Debug` ("ERROR_OUT_OF_DEVICE_MEMORY"), vulkano's
///   `OomError(OutOfDeviceMemory)`.
/// - Level Zero: `ze_api.h` `ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY = 0x70000001`,
///   `ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY = 0x70000002`.
/// - Metal: `MTLCommandBuffer.h` `MTLCommandBufferErrorOutOfMemory = 8`, whose NSError reads
///   "Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)".
/// - Windows: `winerror.h` `E_OUTOFMEMORY` 0x8007000E ("Not enough memory resources are available
///   to complete this operation"), which Direct3D 12 returns when a resource's heap cannot be
///   made and DirectML passes on; `ERROR_NOT_ENOUGH_MEMORY` as an HRESULT, 0x80070008 ("…to
///   process this command"), the Win32 heap's; `d3d9.h` `D3DERR_OUTOFVIDEOMEMORY` 0x8876017C.
///   No `DXGI_ERROR_…` is about memory (`DXGI_ERROR_DEVICE_REMOVED`, 0x887A0005, is a lost
///   device), so none is listed.
/// - OpenGL: `GL/gl.h` `GL_OUT_OF_MEMORY 0x0505` ("There is not enough memory left to execute
///   the command", the specification's words; the state is undefined after it), which Android's
///   renderers and GL games print by name or as "GL error 0x505"; `EGL/egl.h` `EGL_BAD_ALLOC
///   0x3003`, EGL's failure to allocate a surface's resources.
/// - NPP: `nppdefs.h` `NPP_NO_MEMORY_ERROR = -4`, `NPP_MEMORY_ALLOCATION_ERR = -9` (CUDA 12).
/// - SynapseAI: `synapse_common_types.h` `synOutOfHostMemory = 3`, `synOutOfDeviceMemory = 4`;
///   `synFailedToAllocateDeviceMemory = 14`; the runtime's status strings (its `synSingleton`'s
///   SYN_STR table: "Out of HOST memory (OOM)", "Out of Device memory (OOM)", "Failed to
///   allocate Device memory", and `synFail` 26 "Generic failure", not memory), which the PyTorch
///   bridge prints as `synStatus=synStatus N [text]` (HabanaAI/vllm-fork#484).
pub const STATUSES: &[Status] = &[
    st(
        Api::Cuda,
        "CUDA_ERROR_OUT_OF_MEMORY",
        2,
        Kind::Device,
        &[
            "ErrorOutOfMemory",
            "OutOfGPUMemoryError",
            "The API call failed because it was unable to allocate enough memory",
        ],
    ),
    st(Api::Cuda, "cudaErrorMemoryAllocation", 2, Kind::Device, &[]),
    st(Api::Hip, "hipErrorOutOfMemory", 2, Kind::Device, &[]),
    st(Api::Hip, "hipErrorMemoryAllocation", 2, Kind::Device, &[]),
    // cupla (alpaka's CUDA-like interface, PIConGPU's) names its statuses after the runtime's:
    // `cuplaErrorMemoryAllocation = 2` (`include/cupla/types.hpp`), raised where a device
    // buffer could not be allocated on the back end's GPU.
    st(
        Api::Cuda,
        "cuplaErrorMemoryAllocation",
        2,
        Kind::Device,
        &[],
    ),
    st(Api::OpenGl, "GL_OUT_OF_MEMORY", 0x0505, Kind::Device, &[]),
    st(Api::OpenGl, "EGL_BAD_ALLOC", 0x3003, Kind::Device, &[]),
    st(
        Api::OpenCl,
        "CL_MEM_OBJECT_ALLOCATION_FAILURE",
        -4,
        Kind::Device,
        &[
            "MEM_OBJECT_ALLOCATION_FAILURE",
            "Memory Object Allocation Failure",
            // PyOpenCL 2012's words ("clEnqueueWriteBuffer failed: mem object allocation failure").
            "mem object allocation failure",
        ],
    ),
    Status {
        needs_context: true,
        ..st(
            Api::OpenCl,
            "CL_OUT_OF_RESOURCES",
            -5,
            Kind::Resources,
            &["OUT_OF_RESOURCES", "Out of Resources"],
        )
    },
    Status {
        needs_context: true,
        ..st(
            Api::OpenCl,
            "CL_OUT_OF_HOST_MEMORY",
            -6,
            Kind::Host,
            &["OUT_OF_HOST_MEMORY", "Out of Host Memory"],
        )
    },
    st(
        Api::Vulkan,
        "VK_ERROR_OUT_OF_HOST_MEMORY",
        -1,
        Kind::Host,
        &[
            "ErrorOutOfHostMemory",
            "OutOfHostMemoryError",
            "ERROR_OUT_OF_HOST_MEMORY",
            "OutOfHostMemory",
            "VkOutOfHostMemory",
            // vulkan-zig's `Result` as Zig prints it (`Result.error_out_of_host_memory`).
            "error_out_of_host_memory",
        ],
    ),
    st(
        Api::Vulkan,
        "VK_ERROR_OUT_OF_DEVICE_MEMORY",
        -2,
        Kind::Device,
        &[
            "ErrorOutOfDeviceMemory",
            "OutOfDeviceMemoryError",
            "ERROR_OUT_OF_DEVICE_MEMORY",
            "OutOfDeviceMemory",
            // A Java binding's exception class (Cinnabar's `graphics.cinnabar.api.exceptions`).
            "VkOutOfDeviceMemory",
            // vulkan-zig's `Result` (Mach's sysgpu: "api error `Result.error_out_of_device_memory`").
            "error_out_of_device_memory",
        ],
    ),
    st(
        Api::LevelZero,
        "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY",
        0x7000_0001,
        Kind::Host,
        &[],
    ),
    st(
        Api::LevelZero,
        "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
        0x7000_0002,
        Kind::Device,
        &[],
    ),
    st(
        Api::Metal,
        "MTLCommandBufferErrorOutOfMemory",
        8,
        Kind::Device,
        &["kIOGPUCommandBufferCallbackErrorOutOfMemory"],
    ),
    Status {
        needs_context: true,
        ..st(
            Api::Windows,
            "E_OUTOFMEMORY",
            E_OUTOFMEMORY,
            Kind::Device,
            &[
                "Not enough memory resources are available to complete this operation",
                "没有足够的内存资源",
            ],
        )
    },
    Status {
        needs_context: true,
        ..st(
            Api::Windows,
            "ERROR_NOT_ENOUGH_MEMORY",
            HRESULT_NOT_ENOUGH_MEMORY,
            Kind::Host,
            &["Not enough memory resources are available to process this command"],
        )
    },
    st(
        Api::Windows,
        "D3DERR_OUTOFVIDEOMEMORY",
        D3DERR_OUTOFVIDEOMEMORY,
        Kind::Device,
        // DirectDraw's name for the same HRESULT (`ddraw.h`, MAKE_DDHRESULT(380)), and SDL's
        // for it (`SDL_render_d3d.c`, `D3D_SetError`: "CreateTexture(D3DPOOL_DEFAULT):
        // OUTOFVIDEOMEMORY").
        &["DDERR_OUTOFVIDEOMEMORY", "OUTOFVIDEOMEMORY"],
    ),
    st(Api::Npp, "NPP_NO_MEMORY_ERROR", -4, Kind::Device, &[]),
    // ManagedCuda's NPP images throw `NPPException("Device allocation error")` where
    // `nppiMalloc_*` returned no memory (`NPP/NPPImage_*.cs`): NPP's device allocation, in
    // the binding's words, which are NPP's only beside NPP's names.
    Status {
        needs_context: true,
        ..st(
            Api::Npp,
            "NPP_MEMORY_ALLOCATION_ERR",
            -9,
            Kind::Device,
            &["Device allocation error"],
        )
    },
    st(
        Api::Synapse,
        "synOutOfHostMemory",
        3,
        Kind::Host,
        &["Out of HOST memory (OOM)"],
    ),
    st(
        Api::Synapse,
        "synOutOfDeviceMemory",
        4,
        Kind::Device,
        &["Out of Device memory (OOM)"],
    ),
    // Its text is a common phrase: it counts beside Gaudi's own words only.
    Status {
        needs_context: true,
        ..st(
            Api::Synapse,
            "synFailedToAllocateDeviceMemory",
            14,
            Kind::Device,
            &["Failed to allocate Device memory"],
        )
    },
];

/// The status `number` has in `api`, where the table lists it.
pub fn by_number(api: Api, number: i64) -> Option<&'static Status> {
    STATUSES.iter().find(|s| s.api == api && s.number == number)
}

/// Every name and spelling, longest first (so that a name wins over a spelling inside it), as
/// one alternation with word boundaries; the header names are matched with their case, the
/// wrappers' prose spellings without it.
fn names_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        let mut all: Vec<String> = STATUSES
            .iter()
            .flat_map(|s| std::iter::once(s.name).chain(s.spellings.iter().copied()))
            .map(|n| {
                let e = regex::escape(n);
                if n.contains(' ') {
                    format!("(?i:{e})")
                } else if n.is_ascii() {
                    format!(r"\b{e}\b")
                } else {
                    e
                }
            })
            .collect();
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Regex::new(&all.join("|")).expect("names_re")
    })
}

/// Whether `name` is CUDA's or HIP's out-of-memory status by its exact name
/// (`cudaErrorMemoryAllocation`, `CUDA_ERROR_OUT_OF_MEMORY`, `hipErrorOutOfMemory`,
/// `hipErrorMemoryAllocation`), from [`STATUSES`].
pub(crate) fn is_gpu_memory_status(name: &str) -> bool {
    STATUSES
        .iter()
        .any(|s| matches!(s.api, Api::Cuda | Api::Hip) && s.name == name)
}

/// The status a name or spelling stands for.
fn by_name(found: &str) -> Option<&'static Status> {
    STATUSES.iter().find(|s| {
        s.name == found
            || s.spellings
                .iter()
                .any(|sp| sp.eq_ignore_ascii_case(found) || *sp == found)
    })
}

// Each API's own words around a bare number or a context-bound spelling.
re!(npp_words_re, r"(?i)\bnpp");
re!(
    opencl_words_re,
    r"\bOpenCL\b|(?i:opencl)|\bcl[A-Z][A-Za-z]+\b|\bCL_[A-Z_]+\b|boost::compute|pyopencl|LightGBM|\[clblast\]|CLBlast"
);
re!(
    windows_gpu_words_re,
    r"(?i)directml|\bdml|d3d12|d3d11|direct3d|\bdxgi|directx|\bgpu\b|vram|video memory|onnxruntime_providers_dml|\bwinml\b|(?-i:\bCreate(?:Buffer|Texture[123]D|CommittedResource|PlacedResource|Heap)\b)"
);
re!(
    ze_words_re,
    r"\bze[A-Z][A-Za-z]+\b|(?i:level[ _-]?zero)|\bL0\b|\bZE_"
);
re!(
    synapse_words_re,
    r"\bsyn[A-Z][A-Za-z]+\b|(?i:synapse|habana|\bhpu\b|gaudi)"
);
// OpenCL's numbers: "clCreateBuffer failed with error -4", "OpenCL error code: -4",
// "CL error -5 (CL_OUT_OF_RESOURCES)", and cl.hpp's `cl::Error` as ethminer prints it, the call
// then the status (`what()` and `err()`: "OpenCL Error: clEnqueueNDRangeKernel -4"), and
// CLBlast's own check as llama.cpp's and koboldcpp's CLBlast back end print it ("CLBlast:
// OpenCL error: clEnqueueNDRangeKernel: -4"), and sgminer's and cgminer's status, then what
// they did, then the call (`driver-opencl.c`: "Error -4: Enqueueing kernel onto command queue.
// (clEnqueueNDRangeKernel)").
re!(
    opencl_number_re,
    r"\bOpenCL [Ee]rror: cl[A-Z][A-Za-z]{2,40}:? (-\d{1,3})\b|\bError (-\d{1,3}): [^\n]{1,80}?\(cl[A-Z][A-Za-z]{2,40}\)|(?:\bOpenCL\b|(?i:opencl)|\bcl[A-Z][A-Za-z]+\b|\bCL\b)[^\n]{0,80}?(?i:\b(?:error|err|code|status|returned|result|errcode)\b)\W{0,4}(?:(?i:code)\W{0,3})?(-\d{1,3})\b"
);
// Vulkan's (and the Vulkan Memory Allocator's, whose calls return VkResult: Godot's "vmaCreateImage
// failed with error -2."): "VkResult=-1", "vkAllocateMemory failed -2", "Failure in vkAllocateMemory at 191
// mvulkan.cpp  ErrCode=-2" (VulkanXMRMiner), "vulkan error: out of host memory (-1)", and
// vkd3d's (Wine's and vkd3d-proton's) "vkd3d_allocate_device_memory: Failed to allocate device
// memory, vr -2." (`vr`, its name for a VkResult).
re!(
    vulkan_number_re,
    r"\bVkResult\W{0,4}(-\d{1,10})\b|\b(?:vk|vma)[A-Z][A-Za-z]+\b[^\n]{0,80}?(?i:\b(?:error|result|returned|code|errcode|failed)\b)\W{0,4}(?:(?i:code)\W{0,3})?(-\d{1,10})\b|(?i:\bvulkan error\b)[^\n]{0,60}?\((-\d{1,10})\)|\bvkd3d_\w{1,60}: [^\n]{0,120}?\bvr (-\d{1,10})\b"
);
// Windows' HRESULTs: hex with or without 0x (ONNX Runtime's DirectML provider prints
// "Exception(3) tid(2a8c) 8007000E …"), the signed decimal .NET prints (-2147024882), the
// unsigned one. ERROR_NOT_ENOUGH_MEMORY and D3D9's out-of-video-memory likewise.
re!(
    hresult_re,
    r"(?i)\b(?:0x)?(8007000E|80070008|8876017C)\b|(-2147024882|-2147024888|-2005532292)\b|\b(2147942414|2147942408|2289435004)\b"
);
re!(
    moltenvk_lost_re,
    r"\b(?:Lost VkDevice after |VK_ERROR_OUT_OF_DEVICE_MEMORY: )MTLCommandBuffer [^\n]{0,200}?execution failed \(code (\d{1,3})\)"
);
re!(
    pyopengl_re,
    r"\bGLError\(\s{0,40}err\s?=\s?1285,\s{0,40}description\s?=\s?b?'out of memory'|\bOpenGL [Ee]rror: out of memory\b|\bThe NVIDIA OpenGL driver has encountered\s{1,4}an out of memory error\b|(?s)\bGL ERROR\b.{0,300}?\b1285: Out of memory\b|\bGL error: 1285\b|(?i:\bGL error: (?:GL_)?out[ _]?of[ _]?memory\b)|\bOpenGL Exception: \([^)\n]{1,40}, Out of memory\)"
);
// Arm's Mali GLES driver, as Android's logcat shows it (`D/MALI: gles_state_set_error_internal`):
// "[MALI] GLES ctx: 0x7f8fe0d008, error code:0x505" (GL_OUT_OF_MEMORY), then "[MALI] GLES error
// info: failed to allocate CPU memory": the driver's own words say which memory it could not
// get, the system's where it says CPU (`mali_cpu_memory_re`).
re!(
    mali_gles_re,
    r"\[MALI\] GLES ctx: 0x[0-9a-fA-F]{1,16}, error code: ?0x0?505\b"
);
re!(
    mali_cpu_memory_re,
    r"\[MALI\] GLES error info: failed to allocate CPU memory\b"
);
re!(
    d3d12_words_re,
    r"\bID3D12\w{1,40}::\w{1,60} failed: (?i:out of memory)|\bDML allocator out of memory\b|\bCould not allocate tensor with \d{1,20} bytes\. There is not enough GPU video memory available\b"
);
re!(
    defined_re,
    r"^\s{1,3}(?:is\s+(?:a|an|the)\s+(?:\w+\s+){0,3}(?:error|status|result|code|value)|means\b|indicates\b|typically\b|usually\b|signals\b|denotes\b)"
);
re!(
    vulkan_words_status_re,
    r"(?i)\bvulkan\b[^\n:]{1,60}:\s{0,3}out of device memory\b"
);
re!(
    gpu_allocator_re,
    r#"\bAllocation failed for "[^"\n]{1,120}": OutOfMemory\b|\bAllocationError::OutOfMemory\b"#
);
re!(d3d12_named_re, r"(?i)\bd3d12|\bdx12\b");
re!(
    vulkanmod_re,
    r"\bFailed to create (?:buffer|image):\s?(-\d{1,10})\b"
);
re!(vulkanmod_words_re, r"\bnet\.vulkanmod\b|(?i:vulkanmod)");
// MoltenVK answers a query pool larger than Metal allows with VK_ERROR_OUT_OF_DEVICE_MEMORY
// ("vkCreateQueryPool(): Each query pool can support a maximum of 8192 queries."): a limit on
// the count, no memory.
re!(
    moltenvk_query_limit_re,
    r"VK_ERROR_OUT_OF_DEVICE_MEMORY: vkCreateQueryPool\(\): Each query pool can support a maximum of \d{1,9} queries\.?"
);
// Level Zero's hex results outside their names: "ze_result_t = 0x70000002".
re!(ze_number_re, r"(?i)\b0x(7000000[12])\b|\b(187904819[34])\b");
// SynapseAI: "synStatus=synStatus 4 [Out of Device memory (OOM)]", "status: 4[synOutOfDeviceMemory]".
re!(
    synapse_number_re,
    r"\bsynStatus\W{0,3}(?:synStatus\s*)?(\d{1,3})\b|\bstatus:?\s*(\d{1,3})\s*\[syn[A-Za-z]+\]"
);
// NPP: "NppStatus -9", "NPP error -9", "NPP status: -9".
re!(
    npp_number_re,
    r"\bNppStatus\W{0,4}(-\d{1,5})\b|\bNPP\b[^\n]{0,40}?(?i:\b(?:error|status|code)\b)\W{0,4}(-\d{1,5})\b"
);
// Metal's NSError: "Error Domain=MTLCommandBufferErrorDomain Code=8".
re!(
    metal_number_re,
    r"MTLCommandBufferErrorDomain\W{0,4}Code\W{0,3}(\d{1,3})\b"
);
re!(cuda_named_re, r"(?i:cuda|\bgpu\b)|\bcu[A-Z]\w+");
// cudarc's `DriverError` Debug form with cuGetErrorString's text for CUDA_ERROR_OUT_OF_MEMORY
// ("out of memory"); the first field, the status's name, is not relied on (a terminal wrap or
// OCR may split it). An `Option`'s `Some("…")` from versions that kept the lookup's result.
re!(
    cudarc_re,
    r#"\bDriverError\([A-Za-z0-9_ ]{1,60}, ?(?:Some\()?"out of memory"\)?\)"#
);
// CL_OUT_OF_RESOURCES counts as memory only where the failed call allocates.
re!(
    allocating_re,
    r"clCreateBuffer|clCreateImage|clSVMAlloc|(?i:allocat|out of memory|\bmalloc)"
);

/// The first status the text names, by name or by number, with the API's context where its
/// spelling needs one.
fn find_status(t: &str) -> Option<&'static Status> {
    let named = names_re().find_iter(t).find_map(|m| {
        // A status named as the subject of a definition ("VK_ERROR_OUT_OF_DEVICE_MEMORY is a
        // VkResult error code … It indicates that …", a glossary's page): talk about it.
        if defined_re().is_match(&t[m.end()..]) {
            return None;
        }
        let s = by_name(m.as_str())?;
        // A C# enum's bare `ErrorOutOfMemory` is ManagedCuda's or cudafy's only beside CUDA's
        // words (other .NET libraries name their own host failures the same).
        if m.as_str() == "ErrorOutOfMemory" && !cuda_named_re().is_match(t) {
            return None;
        }
        let ok = !s.needs_context || has_context(s.api, t);
        ok.then_some(s)
    });
    if named.is_some() {
        return named;
    }
    if cudarc_re().is_match(t) {
        return STATUSES
            .iter()
            .find(|s| s.name == "CUDA_ERROR_OUT_OF_MEMORY");
    }
    let first = |c: regex::Captures<'_>| -> Option<String> {
        (1..c.len())
            .find_map(|i| c.get(i))
            .map(|m| m.as_str().to_owned())
    };
    let num = |s: &str| s.parse::<i64>().ok();
    // A Direct3D 12 call's E_OUTOFMEMORY in words, as a program's wrapper prints the HRESULT's
    // text ("ID3D12Device::CreateCommittedResource failed: Out of memory.", Ebitengine), and
    // torch-directml's heap allocator (`dml_heap_allocator.cc`: "DML allocator out of memory!")
    // and its tensor allocation ("Could not allocate tensor with N bytes. There is not enough
    // GPU video memory available!").
    // PyOpenGL's exception, the GL error by number with glGetError's words: "GLError(\n err =
    // 1285,\n description = b'out of memory',"; nimgl's "OpenGL error: out of memory [GLerror]";
    // RootEncoder's GlUtil.checkGlError ("drawScreen end. GL error: 1285", the number
    // glGetError returned: 0x0505, GL_OUT_OF_MEMORY); a check that prints glGetError's value by
    // its name (OpenTK's `ErrorCode` as C# formats it, "GL Error: OutOfMemory"; OpenRA's
    // `CheckGLError`, "GL Error: Out Of Memory");
    // Minecraft's check after each frame ("########## GL ERROR ##########", "@ Post render",
    // "1285: Out of memory": the number and GLU's words for it, ending its log line); NVIDIA's
    // GL driver's debug message ("The NVIDIA OpenGL driver has encountered an out of memory
    // error. This application might behave inconsistently and fail.", through
    // KHR_debug's callback).
    if pyopengl_re().is_match(t) || mali_gles_re().is_match(t) {
        return by_number(Api::OpenGl, 0x0505);
    }
    if d3d12_words_re().is_match(t) {
        return by_number(Api::Windows, E_OUTOFMEMORY);
    }
    // VkResult's own words after a Vulkan call named in the program's message, as engines'
    // checks print the status's string (GZDoom's `VkResultToString`: "Could not create vulkan
    // image: out of device memory").
    if vulkan_words_status_re().is_match(t) {
        return by_number(Api::Vulkan, -2);
    }
    // gpu-allocator, the Rust crate many Vulkan and D3D12 programs allocate through (kajiya,
    // wgpu's D3D12 back end): its `AllocationError::OutOfMemory` is what it returns where
    // vkAllocateMemory answered VK_ERROR_OUT_OF_DEVICE_MEMORY (`src/vulkan/mod.rs`) or D3D12's
    // heap creation E_OUTOFMEMORY, as Debug prints it after the program's words ("Allocation
    // failed for "vertex buffer": OutOfMemory").
    if let Some(m) = gpu_allocator_re().find(t) {
        // D3D12's where the words just before the failure name it (a log's "[dx12]" on its
        // line; a block's lines arrive joined), not any adapter listed elsewhere in the paste.
        let mut start = m.start().saturating_sub(40);
        while !t.is_char_boundary(start) {
            start -= 1;
        }
        let start = t[start..m.start()]
            .rfind('\n')
            .map_or(start, |i| start + i + 1);
        return if d3d12_named_re().is_match(&t[start..m.end()]) {
            by_number(Api::Windows, E_OUTOFMEMORY)
        } else {
            by_number(Api::Vulkan, -2)
        };
    }
    // VulkanMod (a Minecraft renderer on Vulkan, `MemoryManager.createBuffer`): "Failed to
    // create buffer:-2", VMA's VkResult after its words; Vulkan's only beside its frames.
    if let Some(c) = vulkanmod_re().captures(t) {
        if vulkanmod_words_re().is_match(t) {
            return by_number(Api::Vulkan, num(c.get(1)?.as_str())?);
        }
    }
    if let Some(c) = hresult_re().captures(t) {
        let n = match first(c)?.to_ascii_uppercase().as_str() {
            "8007000E" | "-2147024882" | "2147942414" => E_OUTOFMEMORY,
            "80070008" | "-2147024888" | "2147942408" => HRESULT_NOT_ENOUGH_MEMORY,
            _ => D3DERR_OUTOFVIDEOMEMORY,
        };
        let s = by_number(Api::Windows, n)?;
        return (!s.needs_context || has_context(Api::Windows, t)).then_some(s);
    }
    let numbered: [(Api, &LazyRegex); 5] = [
        (Api::OpenCl, opencl_number_re()),
        (Api::Vulkan, vulkan_number_re()),
        (Api::Synapse, synapse_number_re()),
        (Api::Npp, npp_number_re()),
        (Api::Metal, metal_number_re()),
    ];
    for (api, re) in numbered {
        for c in re.captures_iter(t) {
            if let Some(s) = first(c).and_then(|n| by_number(api, num(&n)?)) {
                return Some(s);
            }
        }
    }
    if has_context(Api::LevelZero, t) {
        if let Some(c) = ze_number_re().captures(t) {
            let n = first(c)?;
            let n = i64::from_str_radix(&n, 16)
                .ok()
                .filter(|_| n.starts_with('7') && n.len() == 8)
                .or_else(|| num(&n))?;
            return by_number(Api::LevelZero, n);
        }
    }
    None
}

fn has_context(api: Api, t: &str) -> bool {
    match api {
        Api::OpenCl => opencl_words_re().is_match(t),
        Api::Windows => windows_gpu_words_re().is_match(t),
        Api::LevelZero => ze_words_re().is_match(t),
        Api::Synapse => synapse_words_re().is_match(t),
        Api::Npp => npp_words_re().is_match(t),
        _ => true,
    }
}

// Programs that relay an API's status in their own words, named where the text names them.
re!(
    program_re,
    r"(?i)\b(lightgbm|darknet|caffe|opencv|directml|dmlexecutionprovider)\b|(?-i:\bcv::cuda)"
);

re!(
    directml_words_re,
    r"(?i)directml|\bdml\w{0,30}|onnxruntime|\bwinml\b|\bnot enough GPU video memory available\b"
);

fn program(t: &str) -> Option<Framework> {
    let c = program_re().captures(t)?;
    Some(
        match c.get(1).map(|m| m.as_str().to_ascii_lowercase()).as_deref() {
            Some("lightgbm") => Framework::Lightgbm,
            Some("darknet") => Framework::Darknet,
            Some("caffe") => Framework::Caffe,
            Some("directml" | "dmlexecutionprovider") => Framework::DirectMl,
            _ => Framework::OpenCv,
        },
    )
}

re!(
    request_re,
    format!(
        r"(?i)\b(?:allocat\w*|request\w*|size)\b\D{{0,24}}?{SIZE}|\b(\d{{4,}}) ?bytes\b|\bclCreateBuffer\(\s*[^,()]{{1,60}},\s*[^,()]{{1,80}},\s*(\d{{2,}})\s*,|\bbuffer size:? (\d{{4,}})(?:\s*$|\s*[^\sKMGTkmgtB\d])|\ballocate buffer of length (\d{{1,20}})\b"
    )
);
re!(
    device_re,
    r"(?i)\b(?:gpu|device)(?:[ _]?(?:id|index|ordinal))?\s*[#:=]?\s*(\d{1,2})(?:(\.\d)|\b)(:[0-9a-f]{2}\.\d)?"
);

/// The one value all of `re`'s matches agree on; `None` where there is none or they differ.
fn agreed(re: &LazyRegex, t: &str, read: impl Fn(&regex::Captures) -> Option<u64>) -> Option<u64> {
    let mut found = None;
    for c in re.captures_iter(t) {
        let v = read(&c)?;
        if found.is_some_and(|f| f != v) {
            return None;
        }
        found = Some(v);
    }
    found
}

/// The size and device a relay prints, where it prints exactly one of each.
fn figures(t: &str) -> (Facts, Option<u32>) {
    // clCreateBuffer's size argument as a program's check prints the call ("Failed to
    // clCreateBuffer(ctx, CL_MEM_READ_WRITE, 48771072, nullptr, ...)"); IREE's Vulkan
    // allocator's "failed to allocate buffer of length N" (bytes).
    let requested = agreed(request_re(), t, |c| {
        super::known::sz(c, 1).or_else(|| {
            c.get(2)
                .or_else(|| c.get(3))
                .or_else(|| c.get(4))
                .or_else(|| c.get(5))?
                .as_str()
                .parse()
                .ok()
        })
    });
    // "device 01:00.0" is a PCI bus address (ethminer's "on CUDA device 01:00.0"), not an index.
    // Nor is a time ("move model to device: 2.7s", a decimal).
    let device = agreed(device_re(), t, |c| {
        (c.get(2).is_none() && c.get(3).is_none())
            .then(|| c.get(1)?.as_str().parse().ok())
            .flatten()
    })
    .and_then(|d| u32::try_from(d).ok());
    let f = Facts {
        requested_bytes: requested,
        ..Facts::default()
    };
    (f, device)
}

/// The size and device a relay's failure line names, where the text's differ (a miner's device
/// list above "[CUDA] Error gpu 1: <…>:193 "out of memory""; libplacebo's heap sizes below
/// "Allocation of size 15M failed: VK_ERROR_OUT_OF_DEVICE_MEMORY!"): the failure's own words.
pub(super) fn figures_on_line(o: &mut Oom, line: &str) {
    if !(o.format == "cuda-relay" || o.format.starts_with("api-")) {
        return;
    }
    let (f, device) = figures(line);
    // ethminer's log channel on the failure's line ("cu 19:58:37 cuda-3   Unexpected error …
    // on CUDA device 05:00.0"): its CUDA index, where the line names the device by bus address.
    let device = device.or_else(|| {
        ethminer_channel_re()
            .captures(line)?
            .get(1)?
            .as_str()
            .parse()
            .ok()
    });
    o.device_index = o.device_index.or(device);
    o.facts.requested_bytes = o.facts.requested_bytes.or(f.requested_bytes);
}

re!(
    ethminer_channel_re,
    r"\bcu\s{1,4}\d{1,2}:\d{2}:\d{2}\s{1,4}cuda-(\d{1,2})\s"
);

// libplacebo's list of the device's memory heaps after a failed allocation
// (`src/vulkan/malloc.c`, `vk_malloc_print_stats`): "0: flags 0x1 size 8018M", the heap's
// VkMemoryHeapFlags (0x1, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) and its size in binary units. Any
// gap may be a line break: a paste re-wrapped narrower than libplacebo's prefix splits it.
re!(
    vk_heap_re,
    r"\b\d{1,2}:\s{1,8}flags\s{1,8}0x([0-9a-fA-F]{1,8})\s{1,8}size\s{0,8}(\d{1,7}(?:\.\d+)?)([KMGT])\b"
);

// The JSON statistics AMD's D3D12 Memory Allocator and Vulkan Memory Allocator write
// (`D3D12MA::Allocator::BuildStatsString`, `vmaBuildStatsString`), which games dump beside a
// failed allocation: the allocator's blocks ("BlockBytes": what it holds from the device) and
// live allocations ("AllocationBytes"), the budget and the process's usage of each memory
// segment ("BudgetBytes", "UsageBytes": DXGI's QueryVideoMemoryInfo, VK_EXT_memory_budget), and
// D3D12MA's adapter ("DedicatedVideoMemory", "UMA"). The first of each is the totals' (its
// "Total" section, then the first segment: the local one).
re!(
    allocator_stat_re,
    r#""(BlockBytes|AllocationBytes|BudgetBytes|UsageBytes|DedicatedVideoMemory|UMA)": ?(\d{1,20}|true|false)\b"#
);

/// Fills `f` from an allocator's JSON statistics in `t`, where it has them.
fn allocator_stats(t: &str, f: &mut Facts) {
    let mut uma = None;
    let mut dedicated = None;
    for c in allocator_stat_re().captures_iter(t) {
        let (Some(k), Some(v)) = (c.get(1), c.get(2)) else {
            continue;
        };
        let n = v.as_str().parse::<u64>().ok();
        let slot = match k.as_str() {
            "UMA" => {
                uma = uma.or(Some(v.as_str() == "true"));
                continue;
            }
            "DedicatedVideoMemory" => &mut dedicated,
            "BlockBytes" => &mut f.reserved_bytes,
            "AllocationBytes" => &mut f.allocated_bytes,
            "BudgetBytes" => &mut f.allowed_bytes,
            _ => &mut f.process_bytes,
        };
        if slot.is_none() {
            *slot = n;
        }
    }
    // On a UMA adapter (an integrated GPU) the dedicated memory is a small carve-out, not what
    // the GPU may use: no total is read there.
    if uma == Some(false) {
        f.total_bytes = f.total_bytes.or(dedicated);
    }
}

/// The largest device-local heap a Vulkan program's heap list gives: the card's memory.
fn vulkan_device_heap(t: &str) -> Option<u64> {
    vk_heap_re()
        .captures_iter(t)
        .filter(|c| {
            c.get(1)
                .and_then(|m| u32::from_str_radix(m.as_str(), 16).ok())
                .is_some_and(|flags| flags & 1 != 0)
        })
        .filter_map(|c| {
            crate::units::parse_size(&format!("{}{}", c.get(2)?.as_str(), c.get(3)?.as_str()))
        })
        .max()
}

/// The format name of a status's OOM: `api-<name>`, so that the diagnosis can find the status
/// again ([`status_of`]).
fn format_of(s: &Status) -> &'static str {
    // The table is static, so each name's format is made once.
    static FORMATS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    let all = FORMATS.get_or_init(|| {
        STATUSES
            .iter()
            .map(|s| &*Box::leak(format!("api-{}", s.name).into_boxed_str()))
            .collect()
    });
    STATUSES
        .iter()
        .position(|x| x == s)
        .and_then(|i| all.get(i).copied())
        .unwrap_or("api")
}

/// The status an OOM of [`gpu_api`] was read from.
pub fn status_of(o: &Oom) -> Option<&'static Status> {
    let name = o.format.strip_prefix("api-")?;
    STATUSES.iter().find(|s| s.name == name)
}

/// A GPU API's memory status relayed by any program: a device status is a device OOM (of the
/// program where the text names it, else of the API), a host status is the host's memory,
/// `CL_OUT_OF_RESOURCES` counts only beside an allocating call. Read after every framework's
/// own family, so a framework that relays a status keeps its meaning.
pub fn gpu_api(t: &str) -> Option<Oom> {
    let limits = moltenvk_query_limit_re().replace_all(t, "");
    let t = limits.as_ref();
    let s = find_status(t)?;
    if s.kind == Kind::Resources && !allocating_re().is_match(t) {
        return None;
    }
    // MoltenVK answers any failed Metal command buffer with a lost device it labels
    // VK_ERROR_OUT_OF_DEVICE_MEMORY ("Lost VkDevice after MTLCommandBuffer "…" execution failed
    // (code 3): Caused GPU Address Fault Error"): memory only where Metal's own code is 8,
    // MTLCommandBufferErrorOutOfMemory.
    if let Some(c) = moltenvk_lost_re().captures(t) {
        if c.get(1)?.as_str() != "8" {
            return None;
        }
    }
    let (mut f, device) = figures(t);
    if s.api == Api::Vulkan && s.kind == Kind::Device {
        f.total_bytes = vulkan_device_heap(t);
    }
    if matches!(s.api, Api::Vulkan | Api::Windows) && s.kind == Kind::Device {
        allocator_stats(t, &mut f);
    }
    let framework = program(t).unwrap_or(match s.api {
        // Windows' HRESULTs are DirectML's only where the text names it (or ONNX Runtime,
        // WinML, torch-directml); a game's or a graphics program's are Direct3D's.
        Api::Windows if !directml_words_re().is_match(t) => Framework::Direct3d,
        api => api.framework(),
    });
    let mut o = oom(framework, format_of(s), device, f);
    if s.kind == Kind::Host || (s.api == Api::OpenGl && mali_cpu_memory_re().is_match(t)) {
        o.memory = MemoryKind::Host;
        o.device_index = None;
    }
    Some(o)
}

// Caffe's CUDA_CHECK (`include/caffe/util/device_alternate.hpp`: `CHECK_EQ(error, cudaSuccess)
// << " " << cudaGetErrorString(error)`), and its CUBLAS_CHECK and CUDNN_CHECK, as glog prints a
// failed CHECK_EQ: "Check failed: error == cudaSuccess (2 vs. 0)  out of memory". Any program's
// glog check of the same statuses reads the same, and of the other CUDA libraries' (Caffe's
// CUFFT checks, a program's own): each status's allocation failure by its number, from the
// libraries' headers (`GLOG_ALLOC_CODES`).
/// A glog check's success constant, its library's allocation-failure status by number
/// (cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY 2, hipErrorOutOfMemory 2,
/// CUBLAS_STATUS_ALLOC_FAILED 3, CUDNN_STATUS_ALLOC_FAILED 2, CUFFT_ALLOC_FAILED 2,
/// CUSPARSE_STATUS_ALLOC_FAILED 2, CUSOLVER_STATUS_ALLOC_FAILED 2,
/// CURAND_STATUS_ALLOCATION_FAILED 102), and the framework it names.
const GLOG_ALLOC_CODES: &[(&str, &str, Framework)] = &[
    ("cudaSuccess", "2", Framework::Cuda),
    ("CUDA_SUCCESS", "2", Framework::Cuda),
    ("hipSuccess", "2", Framework::Rocm),
    ("CUBLAS_STATUS_SUCCESS", "3", Framework::Cuda),
    ("CUDNN_STATUS_SUCCESS", "2", Framework::Cuda),
    ("CUFFT_SUCCESS", "2", Framework::Cuda),
    ("CUSPARSE_STATUS_SUCCESS", "2", Framework::Cuda),
    ("CUSOLVER_STATUS_SUCCESS", "2", Framework::Cuda),
    ("CURAND_STATUS_SUCCESS", "102", Framework::Cuda),
];

re!(
    glog_check_re,
    r"Check failed: [^\n]{0,300}?== ?(cudaSuccess|CUDA_SUCCESS|hipSuccess|CUBLAS_STATUS_SUCCESS|CUDNN_STATUS_SUCCESS|CUFFT_SUCCESS|CUSPARSE_STATUS_SUCCESS|CUSOLVER_STATUS_SUCCESS|CURAND_STATUS_SUCCESS) \((\d{1,4}) vs\. 0\)"
);
// The same check where the program adds the status after a colon instead of glog's "(N vs. 0)":
// dmlc's CHECK with a message, as DGL's CUSPARSE_CALL and CUBLAS_CALL print it
// (`src/runtime/cuda/cuda_common.h`: "Check failed: e == CUSPARSE_STATUS_SUCCESS: CUSPARSE
// ERROR: 2").
re!(
    glog_colon_re,
    r"Check failed: [^\n]{0,300}?== ?(cudaSuccess|CUDA_SUCCESS|hipSuccess|CUBLAS_STATUS_SUCCESS|CUDNN_STATUS_SUCCESS|CUFFT_SUCCESS|CUSPARSE_STATUS_SUCCESS|CUSOLVER_STATUS_SUCCESS|CURAND_STATUS_SUCCESS)\)?(?: is false)?: ?(?i:cusparse|cublas|cusolver|cufft|curand|cudnn|cuda|hip) (?i:error):? ?(\d{1,4})\b"
);
// Darknet (pjreddie `src/cuda.c` and AlexeyAB `src/dark_cuda.c`, `check_error`): printf("CUDA
// Error: %s\n", cudaGetErrorString(status)) (AlexeyAB also "CUDA Error Prev: %s"), then
// `error()` (AlexeyAB: perror, so ": <errno text>" follows); `cuda_make_array` fails with
// "Cuda malloc failed" (AlexeyAB first prints " Try to set subdivisions=64 in your cfg-file.").
// No size and no device are printed.
re!(
    darknet_re,
    r"CUDA Error(?: Prev)?: out of memory|(?i:\bcuda malloc failed\b)|Try to set subdivisions=64 in your cfg-file"
);
re!(
    darknet_words_re,
    r"(?i)darknet|dark_cuda\.c|src/cuda\.c|check_error|subdivisions|\.cfg\b|yolo"
);
// OpenCV's CUDA modules: cv::Exception with code -217 (`cv::Error::GpuApiCallError`) around
// cudaGetErrorString: "(-217:Gpu API call) out of memory in function 'allocate'" (4.x), "Gpu
// API call (out of memory) in …" (2.x/3.x, `modules/core/src/cuda/gpu_mat.cu`).
// `modules/core/src/cuda_host_mem.cpp` (cv::cuda::HostMem, page-locked host memory through
// cudaHostAlloc) fails with the same words: pinned host memory, not the device's.
re!(
    opencv_re,
    r"(cuda_host_mem\.cpp:\d+: error: )?\(-217:Gpu API call\) out of memory|Gpu API call \(out of memory\)(?: in [\w:~<>]+, file \S*(cuda_host_mem\.cpp))?"
);
// The plain CUDA relays C++ programs print with cudaGetErrorString: the gpuErrchk idiom
// ("GPUassert: out of memory file.cu 42"), the CUDA samples' checks ("CUDA error in file 'x.cu'
// in line 123 : out of memory.", "CUDA error at x.cu:42 code=2(cudaErrorMemoryAllocation)"), a
// program's own exception class ("CUDA Error: out of memory"), xmrig-cuda's worker (`thread
// #0 failed with error <cryptonight_extra_cpu_init>:379 "out of memory"`: the CUDA error's
// string after the function and line that got it), the HANDLE_ERROR macro of "CUDA by Example"
// and the programs that copied it ("out of memory in kernel.cu at line 42"; RELION's adds
// "(error-code 2)"), dmlc's `CUDA_CALL` (TVM's
// `src/runtime/cuda/cuda_common.h`, MXNet, DGL, BytePS: `ICHECK(e == cudaSuccess || e ==
// cudaErrorCudartUnloading) << "CUDA: " << cudaGetErrorString(e)`, "… is false: CUDA: out of
// memory"), and a status in words before the call that returned it, as cuew's checks print it
// (`cuewErrorString`: "Out of memory in cuMemAlloc(&device_pointer, size)", Blender and other
// programs on cuew), and a glog or easylogging CHECK of the runtime's status with its string
// after it (ThunderGBM's and ThunderSVM's `syncmem.cpp`: `CHECK_EQ(error, cudaSuccess) <<
// cudaGetErrorString(error)`, "Check failed: [error == cudaSuccess]  out of memory"), and
// djeZo's Equihash worker's own words for a failed cudaMalloc (nheqminer, "CUDA: failed to
// alloc memory"). Whatever the prefix, it is CUDA's status 2 said in words.
re!(
    cuda_words_re,
    r#"(?i)\bGPUassert:\s*out of memory|\bout of memory in (?-i:cu(?:da)?[A-Z][A-Za-z0-9_]*)\(|\bcuda\w*\]?:?\s+(?:error|failure|exception|status)\b[^\n]{0,160}?[\s:(\-"'<]out of memory\b|(?-i:\bCUDA: out of memory\b)|(?-i:\b(?:thread #\d{1,3} failed with error|failed to initialize DAG:) <\w{1,80}>:\d{1,6} "out of memory")|(?-i:\bout of memory in \S{1,200}\.(?:cu|cuh|h|hpp|cpp|cc|c) at line \d{1,6}\b)|(?-i:\bCheck failed: \[?\s?\w{1,40} == cudaSuccess\s?\]?(?: \(2 vs\. 0\))?\s{1,4}out of memory\b)|(?-i:\bCUDA: failed to alloc memory\b)"#
);

re!(
    caffe2_enforce_re,
    r"\[enforce fail at [^\]\n]{1,120}\] error == cudaSuccess\. (\d{1,4}) vs 0\."
);

/// Caffe, Darknet, OpenCV and the plain C++ relays of CUDA's out-of-memory status (no figures:
/// none of them prints a size or a device). Read before the generic CUDA readers, so that the
/// program that printed it is named.
pub fn cuda_programs(t: &str) -> Option<Oom> {
    let found = |framework, format| Some(oom(framework, format, None, Facts::default()));
    // Caffe2's CUDA_ENFORCE (`caffe2/core/common_gpu.h`): "[enforce fail at event_gpu.cc:17]
    // error == cudaSuccess. 2 vs 0. Error at: …: out of memory", CUDA's status as a number.
    if let Some(c) = caffe2_enforce_re().captures(t) {
        return (c.get(1)?.as_str() == "2")
            .then(|| oom(Framework::Cuda, "cuda-code", None, Facts::default()));
    }
    if let Some(c) = glog_colon_re().captures(t) {
        let success = c.get(1)?.as_str();
        let (_, oom_code, framework) = GLOG_ALLOC_CODES
            .iter()
            .find(|(name, _, _)| *name == success)?;
        return (c.get(2)?.as_str() == *oom_code)
            .then(|| oom(*framework, "glog-check", None, Facts::default()));
    }
    if let Some(c) = glog_check_re().captures(t) {
        let success = c.get(1)?.as_str();
        let (_, oom_code, framework) = GLOG_ALLOC_CODES
            .iter()
            .find(|(name, _, _)| *name == success)?;
        if c.get(2)?.as_str() != *oom_code {
            return None;
        }
        let caffe = program(t) == Some(Framework::Caffe)
            || t.contains("syncedmem.cpp")
            || t.contains("math_functions.c");
        // cuBLAS's and cuDNN's checks outside Caffe are left to the readers that name them
        // (their status's name follows the numbers).
        return if caffe {
            found(Framework::Caffe, "caffe-check")
        } else if matches!(success, "CUBLAS_STATUS_SUCCESS" | "CUDNN_STATUS_SUCCESS") {
            None
        } else {
            found(*framework, "glog-check")
        };
    }
    if let Some(c) = opencv_re().captures(t) {
        let mut o = oom(Framework::OpenCv, "opencv-cuda", None, Facts::default());
        if c.get(1).or_else(|| c.get(2)).is_some() {
            o.memory = MemoryKind::PinnedHost;
        }
        return Some(o);
    }
    if darknet_re().is_match(t) && darknet_words_re().is_match(t) {
        return found(Framework::Darknet, "darknet-cuda");
    }
    None
}

re!(
    pinned_source_re,
    r"[/\\]\w{0,30}pinned_mem\w{0,30}\.(?:h|hpp|cc|cpp|cu|cuh)\b"
);

/// CUDA's "out of memory" in a C++ program's own words, with no program named: after every
/// framework's reader.
pub fn cuda_words(t: &str) -> Option<Oom> {
    let m = cuda_words_re().find(t)?;
    let (f, device) = figures(t);
    let mut o = oom(Framework::Cuda, "cuda-relay", device, f);
    // The call that failed allocates page-locked host memory (cuMemAllocHost, cudaHostAlloc),
    // named in the match or, by its name alone, on the line after it (Charm++'s "Fatal CUDA
    // Error out of memory at x.cu:790." then "Return value 2 from 'cudaMallocHost(…)'").
    let next = t[m.end()..]
        .split('\n')
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    // Or the source file that raised it, on the same line, is a pinned-memory store's (MXNet's
    // `src/storage/pinned_memory_storage.h`, whose `Alloc` is `cudaMallocHost`, and any file
    // named for pinned memory).
    let head = &t[t[..m.start()].rfind('\n').map_or(0, |i| i + 1)..m.start()];
    if super::clean::names_pinned_host(m.as_str())
        || super::clean::names_pinning_call(&next)
        || pinned_source_re().is_match(head)
    {
        o.memory = MemoryKind::PinnedHost;
    }
    Some(o)
}

// ---------------------------------------------------------------------------------------------
// Programs outside ML training (simulation, rendering, media, password cracking) that print a
// GPU API's out-of-memory failure in their own words. Each is one entry of [`PROGRAMS`]: how its
// message is recognised (its own format string, cited at the reader), the API it came from, what
// it means for that program, and the remedies its own source or documentation gives. A program
// is named by its format (`program-…`); the framework stays the API's, since the meaning of the
// status is the API's and only the words and remedies are the program's.

/// What a program's reader found: the API, the figures it prints, and which memory it is.
struct Found {
    api: Option<Api>,
    facts: Facts,
    device: Option<u32>,
    memory: MemoryKind,
}

impl Found {
    /// A device failure in a program's own words, no one API named: `facts` as it prints them.
    fn own(facts: Facts) -> Self {
        Found {
            api: None,
            facts,
            device: None,
            memory: MemoryKind::Device,
        }
    }

    fn device(api: Api) -> Self {
        Found {
            api: Some(api),
            facts: Facts::default(),
            device: None,
            memory: MemoryKind::Device,
        }
    }
}

/// A program that prints a GPU's out-of-memory failure in its own words.
pub struct Program {
    /// The program as users know it.
    pub name: &'static str,
    /// The format its OOMs are read as.
    pub format: &'static str,
    read: fn(&str) -> Option<Found>,
    /// The device it runs on, in words, and how to see what holds it.
    pub device: &'static DeviceWords,
    /// What the failure means for this program (after "what ran out"), from its source.
    pub meaning: &'static str,
    /// Its own remedies, each checked in its source or documentation (cited at the entry).
    pub remedies: &'static [&'static str],
}

/// A program's device in its users' words: what to call it, and how to see what holds it.
pub struct DeviceWords {
    pub name: &'static str,
    pub see: &'static str,
    /// Whether `gpumon log` sees it (NVML does), so that sampling it gets the numbers.
    pub sampled: bool,
}

/// A GPU that NVML (or the vendor's own tool) shows.
const GPU: DeviceWords = DeviceWords {
    name: "GPU",
    see: "See what holds the GPU now: `gpumon once` lists every process and its memory; close other programs using it.",
    sampled: true,
};

/// A phone's GPU, whose memory is the system's RAM.
const ANDROID: DeviceWords = DeviceWords {
    name: "GPU",
    see: "Close other apps and games running in the background: on a phone the GPU's memory is the system's RAM, which every app shares.",
    sampled: false,
};

/// A Tenstorrent card (Grayskull, Wormhole, Blackhole), which NVML does not see.
const TENSTORRENT: DeviceWords = DeviceWords {
    name: "Tenstorrent device",
    see: "See the card's state with `tt-smi`; another process holding the same chip must close first.",
    sampled: false,
};

/// A Huawei Ascend NPU, which `npu-smi` shows.
const NPU: DeviceWords = DeviceWords {
    name: "NPU",
    see: "See what holds the NPU now: `npu-smi info` lists each card's HBM use and the processes on it; another service or a leftover worker on the same card must close first.",
    sampled: false,
};

/// Qiskit Aer's check of a circuit against the memory installed.
const AER: DeviceWords = DeviceWords {
    name: "GPU",
    see: "Aer compares the state's size with the memory installed (the host's RAM and each GPU's total), not with what is free: closing other programs does not change its answer.",
    sampled: false,
};

/// A Rockchip NPU (RK3566/RK3568/RK3588), whose memory is the system's RAM.
const RKNPU: DeviceWords = DeviceWords {
    name: "Rockchip NPU",
    see: "The NPU allocates from the board's RAM, through its IOMMU or a reserved (CMA) region: close other programs using the NPU or the camera and video units, and read the kernel's log (`dmesg`) for the NPU driver's own failure.",
    sampled: false,
};

/// mallocMC's heap, which PIConGPU makes once at start on the GPU.
const MALLOCMC_HEAP: DeviceWords = DeviceWords {
    name: "mallocMC's heap on the GPU",
    see: "PIConGPU makes mallocMC's heap once at start from the GPU's free memory less reservedGpuMemorySize (memory.param), halved where host and GPU share memory: NVML counts it all as in use from the start, so its filling does not show there, and what other processes hold at start makes it smaller.",
    sampled: false,
};

/// CUDA's in-kernel malloc heap, which is not the memory NVML counts.
const DEVICE_HEAP: DeviceWords = DeviceWords {
    name: "GPU's malloc heap",
    see: "In-kernel allocations come from the device's malloc heap, a fixed size (8 MiB by default) set before the first kernel runs: what other processes hold does not change it.",
    sampled: false,
};

/// Every program, in the order they are tried.
pub const PROGRAMS: &[Program] = &[
    // Blender's Cycles, `intern/cycles/device/device.cpp` (`GPUDevice::generic_alloc`, 4.x, the
    // CUDA, OptiX, HIP and oneAPI back ends) and `device/metal/device_impl.mm`:
    // "System is out of GPU memory" (a device-only buffer did not fit), "System is out of GPU and
    // shared host memory" (nor did the mapped host memory it falls back to for textures);
    // `device/cuda/util.h`'s `cuda_device_assert`: "%s in %s (%s:%d)" with cuew's
    // `cuewErrorString` ("Out of memory in cuMemAlloc(…) (…/queue.cpp:21)"; before 3.0 "CUDA
    // error: Out of memory in cuMemAlloc(…), line 568"). Remedies: the Blender manual, Render ‣
    // Performance ‣ Memory ("Tile Size … When running out of memory, lowering to 1024 or 512
    // pixels helps"), Render ‣ Simplify ‣ Texture Limit, and rendering on the CPU.
    Program {
        name: "Blender Cycles",
        format: "program-blender",
        read: blender,
        device: &GPU,
        meaning: "Cycles keeps the whole scene on the GPU (geometry and its BVH, image textures, the render buffers); when a buffer does not fit, textures may move to mapped host memory, and the render stops only when neither has room.",
        remedies: &[
            "Render ‣ Simplify ‣ Texture Limit (Render) caps the size of image textures (2048 or 1024 pixels, for example), often the largest share of a scene.",
            "Render ‣ Performance ‣ Memory: lower Tile Size to 1024 or 512 (render passes and the texture cache then hold one tile at a time).",
            "Close other GPU programs before rendering, or render on the CPU (Device: CPU), which uses the host's RAM.",
        ],
    },
    // FFmpeg's NVENC encoders (`libavcodec/nvenc.c`, 4.x and later, `nvenc_print_error`):
    // "%s: %s (%d): %s" with `nvenc_errors`' "out of memory" for NV_ENC_ERR_OUT_OF_MEMORY (10):
    // "[h264_nvenc @ 0x…] OpenEncodeSessionEx failed: out of memory (10): (no details)". NVENC
    // answers this at OpenEncodeSessionEx also when a GeForce card's cap on concurrent encode
    // sessions is reached, with the memory free: rigaya/NVEnc's own message for the same status
    // ("This error might occur when shortage of memory, or when trying to encode more than 3
    // streams by NVEnc. In Geforce, simultaneous encoding is limited …", NVEncCore). The pool of
    // input and bitstream buffers is sized from `-rc-lookahead` and `-bf` (`nvenc_recalc_surfaces`).
    Program {
        name: "FFmpeg (NVENC)",
        format: "program-ffmpeg-nvenc",
        read: ffmpeg_nvenc,
        device: &GPU,
        meaning: "NVENC returned NV_ENC_ERR_OUT_OF_MEMORY (10). When it comes from OpenEncodeSessionEx, opening the encoder, it is most often not memory at all: on GeForce cards the driver refuses a session past its cap on concurrent encodes (a few sessions, the number depending on the driver's version), and answers this status.",
        remedies: &[
            "Count the encode sessions already open on the card: `nvidia-smi --query-gpu=encoder.stats.sessionCount --format=csv` (other ffmpeg processes, OBS, a media server's transcodes); run fewer at once.",
            "If the card is full instead (InitializeEncoder or a buffer failed), encode fewer streams or lower resolutions at once, or use a smaller `-rc-lookahead` and fewer B-frames (`-bf`), from which FFmpeg sizes its pool of surfaces.",
        ],
    },
    // FFmpeg's CUDA checks (`libavutil/cuda_check.h`, `ff_cuda_check`: "%s failed" then " ->
    // %s: %s" with cuGetErrorName and cuGetErrorString), used by hwcontext_cuda, nvdec, cuviddec
    // and the CUDA filters: "[AVHWFramesContext @ 0x…] cu->cuMemAlloc(&…) failed ->
    // CUDA_ERROR_OUT_OF_MEMORY: out of memory", "cuvidCreateDecoder(…) failed -> …".
    // Before 4.0 NVENC created its CUDA context with the status in hex alone
    // (`libavcodec/nvenc.c`, `nvenc_check_device`: "Failed creating CUDA context for NVENC:
    // 0x%x"): 0x2 is CUDA_ERROR_OUT_OF_MEMORY.
    Program {
        name: "FFmpeg (CUDA)",
        format: "program-ffmpeg-cuda",
        read: ffmpeg_cuda,
        device: &GPU,
        meaning: "A CUDA call of FFmpeg's hardware path (decoder surfaces, the CUDA frames pool, a CUDA filter, the encoder's own CUDA context) returned CUDA_ERROR_OUT_OF_MEMORY.",
        remedies: &[
            "Run fewer hardware decodes or transcodes on the card at once, or lower their resolution: each decoder and frames pool holds its surfaces on the GPU.",
        ],
    },
    // OpenMM's arrays (`platforms/cuda/src/CudaArray.cpp`, 7.x to 8.x, `CudaArray::initialize`:
    // "Error creating array "<<name<<": "<<getErrorString(result)<<" ("<<result<<")", where the
    // error string is the CUresult's name; `platforms/opencl/src/OpenCLArray.cpp`: the same with
    // `cl::Error::what()`, the failed call ("clCreateBuffer"), and its code). The array's name
    // says what did not fit ("interactingAtoms", the neighbour list; "pmeGrid…", PME's grid).
    // A large periodic box or a small Ewald tolerance makes PME's grid large (the maintainer in
    // openmm/openmm#3975); each Context holds its own arrays.
    Program {
        name: "OpenMM",
        format: "program-openmm",
        read: openmm,
        device: &GPU,
        meaning: "OpenMM could not create one of its arrays on the GPU (the array's name, in the message, says which: the neighbour list, PME's grid, a tabulated function …).",
        remedies: &[
            "Check the system's size against the card: a very large periodic box or a small ewaldErrorTolerance makes PME's charge grid large; positions far outside the box inflate the neighbour list.",
            "Run fewer Contexts on one GPU at once: each Simulation (each replica of a replica-exchange run, each cached Context of openmmtools' ContextCache) holds its own copy of every array.",
        ],
    },
    // GROMACS (`src/gromacs/gpu_utils/devicebuffer.cuh`, `devicebuffer_hip.h`, 2021 to 2025,
    // `allocateDeviceBuffer`: GMX_RELEASE_ASSERT(stat == cudaSuccess, "Allocation of the device
    // buffer failed. " + getDeviceErrorString(stat)), where `cudautils.cuh`'s getDeviceErrorString
    // is "CUDA error #%d (%s): %s." with the status's name and string, the HIP build's "HIP error
    // #%d …"). mdrun's `-nb`, `-pme`, `-bonded` and `-update` choose what runs on the GPU,
    // `-ntmpi` how many ranks share it.
    Program {
        name: "GROMACS",
        format: "program-gromacs",
        read: gromacs,
        device: &GPU,
        meaning: "mdrun could not allocate a device buffer for the work it offloads to the GPU (non-bonded pairs, PME, bonded interactions, the update).",
        remedies: &[
            "Fewer thread-MPI ranks per GPU (`-ntmpi`): each rank keeps its own buffers on the card.",
            "Offload less: `-pme cpu`, `-bonded cpu` or `-update cpu` keep that work and its buffers on the host.",
        ],
    },
    // Khronos' validation layer (`VUID-vkAllocateMemory-pAllocateInfo-01713`, VVL's
    // `ValidateAllocateMemory`): "vkAllocateMemory: attempting to allocate N bytes from heap H,
    // but size of that heap is only M bytes" — one allocation larger than the whole memory heap
    // its type belongs to; the driver then fails it. On a discrete GPU a small heap (about 256
    // MiB) is the device-local, host-visible window (the BAR), not the card's memory.
    Program {
        name: "Vulkan's validation layer",
        format: "program-vulkan-validation",
        read: vulkan_heap_size,
        device: &GPU,
        meaning: "One allocation was larger than the whole Vulkan memory heap it was asked from, so it cannot succeed however much memory is free; a heap of about 256 MiB on a discrete GPU is the host-visible window into its memory (the BAR without Resizable BAR), not the card's memory.",
        remedies: &[
            "In the program: allocate large buffers from the device-local heap (a memory type without HOST_VISIBLE) and copy through a staging buffer, or split the allocation under the heap's size.",
            "As a user: smaller textures or models; where the heap is the BAR, enabling Resizable BAR in the firmware makes it the card's whole memory.",
        ],
    },
    // PG-Strom 5.x's GPU service (`src/gpu_service.c`): its device-memory pool hands out chunks
    // and returns NULL when it cannot, "failed on gpuMemAlloc(%zu)" with the size; the managed
    // pool's "failed on gpuMemAllocManaged: %lu" the same; the host's "gpuMemAllocHost" is
    // pinned host memory. The pool may take `pg_strom.gpu_mempool_max_ratio` of the device's
    // memory (50% by default), the rest left as working memory; the PostgreSQL HINT names the
    // device ("device at GPU-0").
    Program {
        name: "PG-Strom",
        format: "program-pg-strom",
        read: pg_strom,
        device: &GPU,
        meaning: "PG-Strom's GPU service could not get a chunk of this size from its device-memory pool: the pool may take pg_strom.gpu_mempool_max_ratio of the GPU (50% by default), and every query running on the GPU draws on it.",
        remedies: &[
            "Where the GPU serves PG-Strom alone, raise pg_strom.gpu_mempool_max_ratio (the share of device memory its pool may take).",
            "Run fewer queries on the GPU at once (pg_strom.max_async_tasks, fewer parallel workers), or limit the GPUs a server uses with pg_strom.cuda_visible_devices so that other programs keep theirs.",
        ],
    },
    // HeavyDB / OmniSciDB (`DataMgr/BufferMgr/BufferMgr.cpp`): its buffer pool for a device,
    // carved into slabs at start-up, had no room for a chunk even after evicting: "ALLOCATION
    // failed to find NB throwing out of memory GPU_MGR:D" (`getStringMgrType()`, the device's
    // id; "CPU_MGR" for the host's pool), then the query's "Query couldn't keep the entire
    // working set of columns in GPU memory". Its INFO line "… free. Forcing Eviction." is not a
    // failure. `--gpu-buffer-mem-bytes` sizes the pool per GPU (0: all available), `--res-gpu-mem`
    // keeps memory outside it.
    Program {
        name: "HeavyDB",
        format: "program-heavydb",
        read: heavydb,
        device: &GPU,
        meaning: "HeavyDB's buffer pool on this GPU had no room for the chunk of columns the query needs, even after evicting what it could: the query's working set of columns is larger than the pool.",
        remedies: &[
            "Select fewer columns, or filter on fewer, so the query's working set fits; or run it on more GPUs.",
            "Give the pool more of the GPU: --gpu-buffer-mem-bytes (per GPU; 0 uses all available) and a smaller --res-gpu-mem, where no other program needs the memory.",
        ],
    },
    // FluidX3D (`src/opencl.hpp`, `Memory::allocate_device_buffer`): it adds each buffer's size
    // to its own tally of the device (`info.memory_used`, MiB: `capacity()/1048576`) and stops
    // before one would pass `info.memory` (CL_DEVICE_GLOBAL_MEM_SIZE in MiB): "Device \"NAME\"
    // does not have enough memory. Allocating another N MB would use a total of U MB / T MB."
    // (U counts the buffer asked for; forks print "Program" for "Device"). A buffer over the
    // device's largest allocation: "Memory size is too large at N MB. Device \"NAME\" accepts a
    // maximum buffer size of M MB." Its README: memory grows with the grid's cell count (the
    // `resolution(box, VRAM in MB)` helper sizes a grid to a card), FP16S/FP16C memory
    // compression halves the DDFs, and a domain may be split over several GPUs.
    Program {
        name: "FluidX3D",
        format: "program-fluidx3d",
        read: fluidx3d,
        device: &GPU,
        meaning: "FluidX3D counts the buffers it places on the device and stops before one would pass the device's memory (or its largest single buffer): the simulation's grid at this resolution needs more than this card has. Its count is its own buffers only; what other programs hold is not in it.",
        remedies: &[
            "Lower the grid's resolution: memory grows with the number of cells (the cube of the linear resolution). In the setup, `resolution(float3(…), VRAM in MB)` gives the largest grid that fits a given amount of memory.",
            "Turn on FP16S or FP16C memory compression in src/defines.hpp: it halves the memory of the density distribution functions, the bulk of each cell.",
            "Or split the domain over several GPUs (the LBM constructor's Dx, Dy, Dz), each holding its share of the cells.",
        ],
    },
    // profanity and its forks (`Dispatcher.cpp`, `OpenCLException`: the failed step, then " (res
    // = N)" with the OpenCL status): "kernel queueing failed (res = -4)". -4 is
    // CL_MEM_OBJECT_ALLOCATION_FAILURE: the buffers of the kernel's arguments could not be
    // allocated on the card. Its device list gives each card's CL_DEVICE_GLOBAL_MEM_SIZE ("GPU0:
    // NAME, N bytes available, …", read with the other start-up lines). Its work size
    // (`--work`, `--work-max`, and `--inverse-size` × `--inverse-multiple`, the batch of keys
    // per kernel) sets how much it allocates per card.
    Program {
        name: "profanity",
        format: "program-profanity",
        read: profanity,
        device: &GPU,
        meaning: "profanity's OpenCL call returned CL_MEM_OBJECT_ALLOCATION_FAILURE (-4): the buffers for its batch of keys did not fit on the card.",
        remedies: &[
            "Give it a smaller batch: lower `--inverse-multiple` (and `--work-max`), which set how many keys each card holds at once.",
        ],
    },
    // MegEngine's device allocator (MegEngine/MegEngine, `src/core/impl/comp_node/mem_alloc/
    // impl.cpp`, `DevMemAllocImpl`/`StreamMemAllocImpl::alloc`): with no free block large enough
    // and nothing more to take from the device, "out of memory while requesting N bytes; you can
    // try setting MGB_CUDA_RESERVE_MEMORY to reserve all memory. If there are dynamic variables,
    // you can also try enabling graph option `enable_grad_var_static_reshape` …". Its docs
    // (environment variables): MGB_CUDA_RESERVE_MEMORY=1 takes all CUDA memory at start (less
    // fragmentation), MEGENGINE_INPLACE_UPDATE=1 updates parameters in place; DTR
    // (`megengine.dtr`) trades recomputation for activation memory.
    Program {
        name: "MegEngine",
        format: "program-megengine",
        read: megengine,
        device: &GPU,
        meaning: "MegEngine's allocator found no free block of this size and could take no more from the device: its blocks, their fragments and the other programs on the GPU left too little.",
        remedies: &[
            "Lower the batch size, or let DTR recompute activations instead of keeping them (`megengine.dtr.enable()` with an eviction threshold).",
            "As the message says: MGB_CUDA_RESERVE_MEMORY=1 takes the whole device at start, which avoids fragments between MegEngine and other allocators; with dynamic shapes, the graph option `enable_grad_var_static_reshape` lets gradients be allocated statically.",
            "MEGENGINE_INPLACE_UPDATE=1 updates parameters in place, saving up to a copy of them.",
        ],
    },
    // Theano's gpuarray back end (`theano/gpuarray/__init__.py`, `init_dev`): with
    // `gpuarray.preallocate` set, it checks the size against the free memory before taking it:
    // "Trying to preallocate %d MB of GPU memory while only %d MB are available." (MB = 1024 *
    // 1024, each figure cut to a whole MB), and before cuDNN "Can not enable cuDNN as there is
    // only %d MB of free GPU memory." (below 75 MB). A fraction (≤ 1) preallocates that share of
    // the total, a larger number that many MB.
    Program {
        name: "Theano (gpuarray)",
        format: "program-theano-gpuarray",
        read: theano_gpuarray,
        device: &GPU,
        meaning: "Theano's gpuarray back end checks the memory it is told to preallocate (gpuarray.preallocate) against what is free when it starts, and stopped: less was free than asked for.",
        remedies: &[
            "Preallocate less: a smaller `gpuarray.preallocate` in THEANO_FLAGS (a fraction of the total up to 1, or a size in MB above it), or 0 to allocate as needed.",
        ],
    },
    // tinygrad's HCQ back ends (`tinygrad/runtime/ops_amd.py`, the KFD interface's `alloc`): an
    // ioctl that fails with ENOMEM becomes "MemoryError: Cannot allocate N bytes: no memory is
    // available." (older: "Cannot allocate memory: no memory is available"), after tinygrad's
    // LRU allocator has freed its cache and retried.
    Program {
        name: "tinygrad",
        format: "program-tinygrad",
        read: tinygrad,
        device: &GPU,
        meaning: "The GPU driver refused tinygrad's allocation (ENOMEM), after tinygrad had freed the buffers it caches and tried again.",
        remedies: &[
            "Lower the batch size (BS in tinygrad's examples), or shard the model over more GPUs.",
        ],
    },
    // Android's HWUI (`libs/hwui/utils/GLUtils.cpp`, `dumpGLErrors`): each pending GL error,
    // GL_OUT_OF_MEMORY as "GL error:  Out of memory!", then LOG_ALWAYS_FATAL("GL errors! %s:%d")
    // with the renderer's file and line: the app's UI renderer aborts.
    Program {
        name: "Android HWUI",
        format: "program-android-hwui",
        read: android_hwui,
        device: &ANDROID,
        meaning: "Android's UI renderer found GL_OUT_OF_MEMORY pending and aborted the app: the driver could not allocate a texture or buffer it needed.",
        remedies: &[
            "In the app: fewer or smaller bitmaps and layers on screen at once (hardware layers, large images decoded at full size).",
        ],
    },
    // The Linux kernel's amdgpu driver (`amdgpu_cs.c`, `amdgpu_cs_ioctl`): a command submission
    // whose buffers could not be made resident, "[drm] *ERROR* Not enough memory for command
    // submission!" (-ENOMEM); its display code (`amdgpu_dm_plane_helper_prepare_fb`) "Failed to
    // pin framebuffer with error -12" when a frame cannot be placed in VRAM to scan out. VRAM,
    // and the system memory the GPU maps through GTT, were full.
    Program {
        name: "amdgpu (Linux kernel driver)",
        format: "program-amdgpu-kernel",
        read: amdgpu_kernel,
        device: &GPU,
        meaning: "The kernel's amdgpu driver could not place the buffers a command submission or a frame needs: VRAM, and the system memory it maps through GTT, were full (-12 is ENOMEM). Every program on the GPU shares them.",
        remedies: &[
            "See what holds VRAM and GTT: `amdgpu_top`, or /sys/class/drm/card*/device/mem_info_vram_used and mem_info_gtt_used; close other GPU programs.",
            "Lower the game's texture quality and resolution.",
        ],
    },
    // Kinetica's resource manager (its log, `ResourceManagement/MemoryTierManager.cpp`): each
    // GPU's memory is a tier (VRAM) with a capacity its configuration sets (`tier.vram.*`
    // limits in gpudb.conf); "[VRAM] allocateInTier OOM: Exceeds Tier Capacity", then "[VRAM]
    // [Allocate] exceeds capacity, needed: N free: F" (bytes).
    Program {
        name: "Kinetica",
        format: "program-kinetica",
        read: kinetica,
        device: &GPU,
        meaning: "Kinetica's VRAM tier, the share of GPU memory its resource manager may use, had less free than the query's columns and results needed.",
        remedies: &[
            "Lower the query's working set: fewer columns, filters applied before joins, smaller result sets.",
            "Where the GPUs serve Kinetica alone, raise the VRAM tier's limit (tier.vram.default.limit, or per GPU, in gpudb.conf).",
        ],
    },
    // Citra's Vulkan renderer and its forks (Azahar, AzaharPlus; `video_core/renderer_vulkan/
    // vk_stream_buffer.cpp`): "Failed to allocate Stream buffer of preferred size N KiB (flags
    // { DeviceLocal | HostVisible | … })": the buffer it streams vertices and uniforms through,
    // in memory the GPU reads and the CPU writes, then an "Unreachable code!" assertion.
    Program {
        name: "Citra/Azahar (Vulkan)",
        format: "program-citra-vulkan",
        read: citra_vulkan,
        device: &GPU,
        meaning: "The emulator's Vulkan renderer could not allocate its stream buffer (vertices and uniforms for each frame) in memory with the flags it asks for, memory the CPU writes and the GPU reads.",
        remedies: &[
            "Close other programs using the GPU and update its driver; or switch the emulator's graphics API to OpenGL.",
        ],
    },
    // AliceVision (Meshroom's depth maps, `src/aliceVision/depthMap/cuda/…`): a pitched device
    // allocation that failed, "Could not allocate pitched device memory." then "Device D alloc N
    // bytes failed in FILE:LINE, TEXT" with cudaGetErrorString's text. Read only where the text
    // is "out of memory": other statuses are another failure.
    Program {
        name: "AliceVision (Meshroom)",
        format: "program-alicevision",
        read: alicevision,
        device: &GPU,
        meaning: "AliceVision's depth-map step could not allocate a pitched image buffer on the GPU (cudaMallocPitch: out of memory).",
        remedies: &[
            "Raise the DepthMap node's Downscale (each step halves the images' sides), so each image's buffers are a quarter the size.",
        ],
    },
    // Oxford Nanopore's Guppy basecaller (closed source; its log, 4.x to 6.x): its CUDA memory
    // manager sets a limit on each device at start-up ("CUDA device 0 (compute 7.5) initialised,
    // memory limit 11551440896B (11124080640B free)") and logs "CUDA device N reached memory
    // limit while trying to allocate X bytes, currently at A/L" when a request would pass it. A
    // request of 0 bytes cannot be what ran out: Guppy logs that line on other failures too
    // (megalodon#254, where CUDA_ERROR_INVALID_VALUE follows), so it is left to the error after
    // it. ONT's advice for GPUs with less memory: fewer chunks per runner and runners per device.
    Program {
        name: "Guppy",
        format: "program-guppy",
        read: guppy,
        device: &GPU,
        meaning: "Guppy's memory manager would have passed the limit it set on this GPU at start-up (from the GPU's memory, printed as \"memory limit …B\" when the device is initialised): what it already holds, the basecalling runners' buffers, plus this request.",
        remedies: &[
            "Fewer chunks per runner (--chunks_per_runner) and fewer runners per device (--gpu_runners_per_device): each runner holds its batch of chunks on the GPU.",
            "A smaller model (fast or hac instead of sup) needs less memory per chunk.",
        ],
    },
    // RPCS3's Vulkan renderer (`rpcs3/Emu/RSX/VK/VKGSRender.cpp`): when an allocation from its
    // heaps or the texture cache fails, `VKGSRender::on_vram_exhausted` evicts cached surfaces
    // and textures to make room; a fatal error inside it ("Thread terminated due to fatal error:
    // Verification failed … in function 'bool VKGSRender::on_vram_exhausted(…)'") is video
    // memory it could not free enough of. Its log names the device's heaps at start-up ("RSX:
    // Detected 8238 MB of device local memory", "… MB of BAR memory").
    Program {
        name: "RPCS3",
        format: "program-rpcs3",
        read: rpcs3,
        device: &GPU,
        meaning: "RPCS3's Vulkan renderer ran out of video memory for a heap or its texture cache, and its handler for exhausted VRAM (VKGSRender::on_vram_exhausted) could not free enough by evicting cached surfaces and textures.",
        remedies: &[
            "Lower the resolution scale (Settings ‣ GPU): render targets grow with its square; close other programs using the GPU.",
            "Where the log places a heap in BAR memory (\"will attempt to use Re-BAR memory\") and the BAR is small (\"Detected 214 MB of BAR memory\", without Resizable BAR), enabling Resizable BAR in the firmware makes the BAR the card's whole memory.",
        ],
    },
    // RELION's GPU code (`src/acc/cuda/custom_allocator.cuh`, 2.x to 5.x): each process takes one
    // block of device memory at start-up (`cudaMalloc` of what it may use, the GPU's free memory
    // shared among the ranks and threads on it, less `--free_gpu_memory`) and hands out pieces of
    // it; when none is large enough, even after waiting for running kernels, it prints "ERROR:
    // CudaCustomAllocator out of memory\n [requestedSpace: %lu B]\n [largestContinuousFreeSpace:
    // %lu B]\n [totalFreeSpace: %lu B]" and its pieces ("(N B)" in use, "[N B]" free, "= N B"
    // the block's size). RELION's documentation: too many MPI ranks or threads on one GPU.
    Program {
        name: "RELION",
        format: "program-relion",
        read: relion,
        device: &GPU,
        meaning: "RELION's own allocator could not find a piece of its pre-allocated block of GPU memory large enough for the request: the block is sized once, at start-up, from the memory free on the GPU and shared among the ranks and threads that use it; when the free space is in pieces (largestContinuousFreeSpace below the request), it is fragmented.",
        remedies: &[
            "Fewer MPI ranks per GPU, or more GPUs (`--gpu \"0:1\"`): ranks on one GPU divide its memory between their blocks.",
            "Fewer threads per rank (`--j`) and a smaller `--pool`: each thread's work is held in the block at once.",
            "Larger particle boxes need more: downscale the particles (a smaller box) for early classification and refinement.",
        ],
    },
    // Kokkos (`core/src/impl/Kokkos_SharedAlloc.cpp` / `Kokkos_MemorySpace.cpp`, 3.x to 4.x):
    // "Kokkos failed to allocate memory for label \"<label>\".  Allocation using MemorySpace named
    // \"<space>\" failed with the following error:  Allocation of size <n> <unit> failed, likely
    // due to insufficient memory.  (The allocation mechanism was cudaMalloc(). …)". The size is
    // `human_memory_size` (powers of 1024, 4 significant digits: a 5e9-byte view prints
    // "4.657 G"). The space names where the memory is: "Cuda", "HIP", "SYCLDeviceUSM" on the
    // device; "CudaUVM", "HIPManaged" managed; "CudaHostPinned", "HIPHostPinned" pinned host;
    // "Host" the host. LAMMPS' KOKKOS package and other Kokkos programs print it unchanged.
    Program {
        name: "Kokkos",
        format: "program-kokkos",
        read: kokkos,
        device: &GPU,
        meaning: "A Kokkos View (the label in the message names it) could not be allocated in its memory space.",
        remedies: &[
            "Run fewer MPI ranks per GPU (each rank allocates its own Views on the card), or spread the problem over more GPUs.",
        ],
    },
    // hashcat (`src/ext_cuda.c`, `src/ext_hip.c`, `src/ext_OpenCL.c`, 6.x: `hc_cuMemAlloc`
    // "cuMemAlloc(): %s" with cuGetErrorString, `hc_hipMemAlloc` likewise, `hc_clCreateBuffer`
    // "clCreateBuffer(): %s" with the status's name). hashcat sizes its buffers from the kernel
    // accel (`-n`; the workload profile `-w` only steers the autotuner's kernel time, not the
    // accel its buffers are sized for, so it is not given), and `-O` (optimized kernels) uses
    // shorter password buffers; its own out-of-memory advice is to append -O.
    Program {
        name: "hashcat",
        format: "program-hashcat",
        read: hashcat,
        device: &GPU,
        meaning: "hashcat could not allocate one of its buffers on the device; their sizes follow the kernel's accel and loops (the work per call), the attack's password buffers, and the hashes loaded.",
        remedies: &[
            "Append -O (optimized kernels: shorter password buffers, at the cost of a maximum password length).",
            "Fix a smaller kernel accel (`-n`/`--kernel-accel`): the buffers are sized for it.",
            "Load fewer hashes per run (split the hash list).",
        ],
    },
    // ncnn's Vulkan allocator (`src/allocator.cpp`, `VkAllocator::allocate_memory` and
    // `allocate_dedicated_memory`: NCNN_LOGE("vkAllocateMemory failed %d", ret)), as the
    // ncnn-vulkan builds of Real-ESRGAN, waifu2x, Real-CUGAN, RealSR and RIFE print it; -2 is
    // VK_ERROR_OUT_OF_DEVICE_MEMORY, -1 VK_ERROR_OUT_OF_HOST_MEMORY. Their `-t tile-size`
    // ("tile size (>=32/0=auto, default=0)") picks how much of the image goes to the GPU at once.
    Program {
        name: "ncnn (Vulkan)",
        format: "program-ncnn",
        read: ncnn,
        device: &GPU,
        meaning: "ncnn's Vulkan allocator could not allocate device memory for a blob or weight: the image (or the tile of it processed at once) and the model did not fit beside what the card holds.",
        remedies: &[
            "Give a smaller tile explicitly, `-t 256` or `-t 128` (the default 0 picks one from the card's total memory, not what is free), for realesrgan-, waifu2x-, realcugan- and realsr-ncnn-vulkan.",
            "Close other programs that hold the GPU (a game, a browser's hardware acceleration); on a laptop, pick the discrete GPU with `-g`.",
        ],
    },
    // tiny-cuda-nn's `GPUMemory<T>::resize` (`include/tiny-cuda-nn/gpu_memory.h`, 1.x):
    // "Could not allocate memory: " + the `CUDA_CHECK_THROW` text of its cudaMalloc ("…
    // cudaMalloc(&rawptr, n_bytes+DEBUG_GUARD_SIZE*2) failed with error out of memory"), as
    // instant-ngp and other tiny-cuda-nn programs print it. No size is printed.
    Program {
        name: "tiny-cuda-nn",
        format: "program-tiny-cuda-nn",
        read: tiny_cuda_nn,
        device: &GPU,
        meaning: "tiny-cuda-nn could not allocate one of its GPU buffers (the network's parameters and gradients, a training batch, or the program's own data on the GPU, such as instant-ngp's images and density grid).",
        remedies: &[],
    },
    // NVIDIA PhysX's GPU simulation (`PxgCudaDeviceMemoryAllocator::allocate`, PhysX 4 and 5,
    // as Isaac Gym, Isaac Sim and Omniverse print it): "PxgCudaDeviceMemoryAllocator fail to
    // allocate memory %d bytes!! Result = %d", the driver's CUresult (2, CUDA_ERROR_OUT_OF_MEMORY).
    // Its GPU buffers are sized by the scene's PhysX capacities, which Isaac's task configs set
    // (`sim.physx.gpu_max_rigid_contact_count`, `gpu_found_lost_pairs_capacity`,
    // `gpu_heap_capacity`, `gpu_temp_buffer_capacity`, …), and grow with the environments.
    Program {
        name: "PhysX (GPU)",
        format: "program-physx",
        read: physx,
        device: &GPU,
        meaning: "PhysX's GPU simulation could not allocate one of its device buffers (contacts and patches, broad-phase pairs, the heap it grows as the scene needs): the environments' bodies and contacts, beside what the renderer and the learning job hold, did not fit.",
        remedies: &[
            "Simulate fewer environments at once (num_envs), or simpler collision shapes.",
            "The PhysX GPU capacities in the task's sim config (gpu_max_rigid_contact_count, gpu_max_rigid_patch_count, gpu_found_lost_pairs_capacity, gpu_heap_capacity, gpu_temp_buffer_capacity) size what PhysX allocates on the GPU: set them near what the scene needs, not far above.",
            "Run headless (no viewport rendering) so that the renderer's memory is left to the simulation.",
        ],
    },
    // MATLAB's Parallel Computing Toolbox (its gpuArray allocation; the message's own text: "Out
    // of memory on device. To view more detail about available memory on the GPU, use
    // 'gpuDevice()'. If the problem persists, reset the GPU by calling 'gpuDevice(1)'.").
    Program {
        name: "MATLAB (gpuArray)",
        format: "program-matlab",
        read: matlab,
        device: &GPU,
        meaning: "A gpuArray (or a GPU function's workspace) did not fit in the GPU's free memory; gpuArrays stay on the device until they are cleared.",
        remedies: &[
            "See the device's AvailableMemory with `gpuDevice()`; clear gpuArray variables no longer needed (`clear X`), or `gather` results to the host.",
            "As the message says, if it persists reset the GPU with `gpuDevice(1)` (or `reset(gpuDevice)`), which frees every gpuArray on it.",
        ],
    },
    // Unreal Engine's renderer (its RHI's out-of-memory exit; the message's own text: "Out of
    // video memory trying to allocate a rendering resource. Make sure your video card has the
    // minimum required memory, try lowering the resolution and/or closing other applications
    // that are running. Exiting...", and for a texture "Out of video memory trying to allocate
    // a texture! Make sure …"); its Vulkan RHI's "Out of Device Memory, Requested=…Kb" (below).
    Program {
        name: "Unreal Engine",
        format: "program-unreal",
        read: unreal,
        device: &GPU,
        meaning: "The game's renderer could not allocate a texture or buffer in video memory and exited.",
        remedies: &[
            "As the message says: lower the resolution (and texture quality), and close other programs using the GPU.",
        ],
    },
    // Its Vulkan RHI's warning for an allocation allowed to fail (above `unreal_can_fail_re`).
    Program {
        name: "Unreal Engine (Vulkan RHI)",
        format: "program-unreal-can-fail",
        read: unreal_can_fail,
        device: &GPU,
        meaning: "Unreal's Vulkan RHI could not get a block of this memory type for an allocation it is allowed to fail (a new page of one of its heaps, a render target): it warns and the caller tries otherwise, so the game may go on, with less room or slower memory. A fatal \"Out of Device Memory\" follows only when an allocation that must not fail runs out too.",
        remedies: &[
            "Lower the resolution and texture quality (the render targets grow with the resolution), and close other programs using the GPU.",
        ],
    },
    // GrinGoldMiner's CUDA trimmer (above `grin_gold_re`).
    Program {
        name: "GrinGoldMiner (CUDA trimmer)",
        format: "program-grin-gold-miner",
        read: grin_gold_miner,
        device: &GPU,
        meaning: "GrinGoldMiner's CUDA trimmer allocates its large buffers at start, and cudaMalloc found no room for the one it names; the free and total figures are the device's just before. The size in its message (\"4GB\") is a label, not always what was asked.",
        remedies: &[
            "The trimmer needs its buffers whole beside everything else on the card: close other programs using the GPU (on Windows the desktop's own use counts), or mine on a card with more memory.",
        ],
    },
    // Vintage Story's GL check (above `vintagestory_re`).
    Program {
        name: "Vintage Story",
        format: "program-vintagestory",
        read: vintagestory,
        device: &GPU,
        meaning: "Vintage Story's renderer asked OpenGL for an error after a draw or an upload (CheckGlErrorAlways) and got GL_OUT_OF_MEMORY: the driver could not find memory for a texture, a chunk's mesh or a buffer. On Windows the driver may also place such memory in the system's RAM, which is why the game says the graphics card or the OS.",
        remedies: &[
            "As the message says: close other programs and reduce the view distance (the chunks kept in video memory grow with it).",
            "Mods that add large textures or many entities add to what the card must hold: try without them.",
        ],
    },
    // Qiskit Aer's check before a circuit (above `qiskit_aer_re`).
    Program {
        name: "Qiskit Aer",
        format: "program-qiskit-aer",
        read: qiskit_aer,
        device: &AER,
        meaning: "Qiskit Aer checks, before it runs a circuit, that the simulation's state fits in the memory installed, and refused: a statevector holds 2^n amplitudes of 16 bytes (8 in single precision), so each qubit more doubles it (36 qubits need 1 TiB). The maximum it prints is the host's RAM and the GPUs' totals together; nothing was allocated.",
        remedies: &[
            "precision='single' halves the statevector; fewer qubits halve it per qubit.",
            "Spread the state over several GPUs (or GPUs and the host) with blocking_enable=True and blocking_qubits, or run under MPI over several nodes.",
            "For circuits with little entanglement, method='matrix_product_state' needs far less memory than a statevector.",
        ],
    },
    // BzMiner's check before a DAG or a lookup table (above `bzminer_re`).
    Program {
        name: "BzMiner",
        format: "program-bzminer",
        read: bzminer,
        device: &GPU,
        meaning: "BzMiner checks the GPU's free memory before it builds an algorithm's DAG or lookup table, and found less free than it needs. In dual mining the first algorithm's table (NEXA's lookup table takes several GB) already holds most of the card.",
        remedies: &[
            "Dual-mine only on cards with room for both algorithms' tables, or mine the second algorithm alone on the smaller cards.",
            "Close other programs using the GPU; on Windows the desktop's own use counts.",
        ],
    },
    // ROCr's scratch for a dispatch, when even the fewest waves' does not fit (above
    // `rocm_scratch_re`).
    Program {
        name: "ROCm runtime (scratch)",
        format: "program-rocm-scratch",
        read: rocm_scratch,
        device: &GPU,
        meaning: "A kernel's dispatch needs scratch memory (each lane's private memory: register spills, stack, local arrays), which ROCr takes from the GPU's memory. It could not map what the dispatch asked for, retried with fewer waves per compute unit, and could not map even one wave's per compute unit: the queue was aborted with HSA_STATUS_ERROR_OUT_OF_RESOURCES.",
        remedies: &[
            "Free GPU memory before this kernel runs: what this job holds (its allocator's cache too) and other processes on the GPU (`rocm-smi --showpids`, `gpumon once`).",
            "A kernel that needs less private memory per lane (fewer register spills, smaller local arrays) needs less scratch: a smaller work-group or problem per launch, or a build with fewer spills.",
        ],
    },
    // PIConGPU's particle frames from mallocMC's heap (above `mallocmc_re`).
    Program {
        name: "PIConGPU (mallocMC)",
        format: "program-mallocmc",
        read: mallocmc,
        device: &MALLOCMC_HEAP,
        meaning: "PIConGPU keeps its particles in frames that its kernels take from mallocMC's heap on the GPU. The heap was made once at start and cannot grow, and it was full when a kernel asked for a frame: the kernel tries 13 times (\"try k of 13\"), and after the last it goes on without the frame.",
        remedies: &[
            "Fewer particles on each GPU: the same grid over more GPUs, or fewer macro-particles per cell.",
            "Particles that crowd into a few cells (a wakefield's bunch, a target's compressed layer) fill the heap of the GPU that holds them first: more GPUs along the direction they gather in spread them.",
            "The heap is what is free at start less reservedGpuMemorySize: nothing else should run on the GPU when the simulation starts; a smaller reservedGpuMemorySize gives the heap more, only if the fields and buffers outside it still fit.",
        ],
    },
    // Rockchip's NPU runtime (above `rknn_malloc_re`).
    Program {
        name: "RKNN runtime",
        format: "program-rknn",
        read: rknn_malloc,
        device: &RKNPU,
        meaning: "Rockchip's NPU runtime (librknnrt) could not get a buffer for the model's weights, inputs or intermediate tensors from the NPU driver, which allocates from the board's RAM: through the NPU's IOMMU, or, where the IOMMU is off, only from a reserved region that may be a few MiB. The runtime says the same where the driver refused the call for another reason (the errno on the line before).",
        remedies: &[
            "Where the line before says errno 14, 22 or 38 (not 12), the driver refused the call rather than ran out: check that the rknpu driver is as new as the runtime needs (`dmesg | grep -i rknpu` shows its version) and that no other process holds the NPU.",
            "Check the board's device tree: with the NPU's IOMMU off, the NPU can use only its reserved (CMA) region; turn the IOMMU on or enlarge the region.",
            "A smaller model or input size, or an int8 model (rknn-toolkit2's quantisation), needs smaller buffers.",
        ],
    },
    // MindIE's warm-up (above `mindie_warmup_re`).
    Program {
        name: "MindIE",
        format: "program-mindie",
        read: mindie_warmup,
        device: &NPU,
        meaning: "MindIE's warm-up at start could not fit what its settings ask for on the NPU: the largest prefill (maxPrefillTokens, inputs up to maxInputTokenLen) beside the weights and the KV cache (npuMemSize per NPU, or with -1 sized from the memory left free). For a multimodal model MindIE checks the NPU's free memory against a threshold set by maxInputTokenLen before the warm-up runs. The setting it names is the one its message suggests changing.",
        remedies: &[
            "Lower the setting the message names in mindie-service's config.json: maxPrefillTokens or maxInputTokenLen (the largest prefill the warm-up runs), or npuMemSize (the KV cache on each NPU, in GB) where it is not -1.",
            "Where npuMemSize is -1, the KV cache is sized from a fraction of the free memory (NPU_MEMORY_FRACTION): raise that fraction within what the card holds, or lower maxPrefillTokens.",
            "Spread the model over more NPUs (a larger worldSize, with npuDeviceIds to match), or use a quantised model: the weights on each card shrink.",
        ],
    },
    // TIGRE's check of each GPU's free memory (above `tigre_re`).
    Program {
        name: "TIGRE",
        format: "program-tigre",
        read: tigre,
        device: &GPU,
        meaning: "TIGRE asks each GPU for its free memory before it splits the reconstruction, and CUDA answered out of memory to that question: the GPU was too full for the CUDA runtime to work on it (no room for its context), or an allocation before it on that GPU had failed.",
        remedies: &[
            "Free the GPUs TIGRE uses: it expects at least half of each one free, and another program (often a graphical one) may hold the rest; or pick others with `gpuids` (GpuIds).",
            "Smaller projections or a smaller image (fewer voxels) need fewer and smaller pieces on each GPU.",
        ],
    },
    // MoltenVK's host-coherent memory (above `moltenvk_coherent_re`).
    Program {
        name: "MoltenVK",
        format: "program-moltenvk",
        read: moltenvk_coherent,
        device: &GPU,
        meaning: "MoltenVK backs host-coherent Vulkan memory with a single Metal buffer, and could not make it: either the allocation is longer than Metal allows one buffer (the maximum the message prints) or Metal had no memory for it.",
        remedies: &[
            "Where the size is over the maximum: allocate host-coherent memory in blocks below it (a sub-allocator such as VMA with a smaller block size), or keep the large resource in device-local memory and upload it through a smaller staging buffer.",
            "Otherwise the device's memory (the system's, on Apple silicon) was short: close other programs using it, or make what the app creates at once smaller.",
        ],
    },
    // ND4J's CUDA backend, under Deeplearning4j (deeplearning4j/deeplearning4j,
    // `nd4j/nd4j-backends/nd4j-backend-impls/nd4j-cuda/src/main/java/org/nd4j/jita/memory/
    // CudaMemoryManager.java`, `allocate`, 1.0.0-beta to M2): "Failed to allocate " + bytes +
    // " bytes from DEVICE [" + device + "] memory" when libnd4j's `mallocDevice` (cudaMalloc)
    // returned null, and "… bytes from HOST memory" when `mallocHost` (cudaHostAlloc in the
    // CUDA backend's `NativeOps.cu`: page-locked host memory) did. ND4J's CUDA configuration
    // (`org/nd4j/jita/conf/Configuration.java`) caps the freed device memory it caches per
    // device (`setMaximumDeviceCache`). JavaCPP's `org.bytedeco.javacpp.maxbytes` and
    // `maxphysicalbytes` limit off-heap host memory (JavaCPP's `Pointer`), not the GPU's.
    Program {
        name: "ND4J (Deeplearning4j)",
        format: "program-nd4j",
        read: nd4j,
        device: &GPU,
        meaning: "ND4J's CUDA backend could not allocate an array's buffer (cudaMalloc returned nothing); besides the arrays in use, ND4J keeps freed device memory in its own cache and workspaces keep theirs for the next iteration.",
        remedies: &[
            "Lower the minibatch size (activations and their gradients grow with it), or the model's size.",
            "Lower the device memory ND4J caches once freed: `CudaEnvironment.getInstance().getConfiguration().setMaximumDeviceCache(bytes)`, before the first array is made.",
            "JavaCPP's `-Dorg.bytedeco.javacpp.maxbytes` and `-Dorg.bytedeco.javacpp.maxphysicalbytes` limit off-heap host memory, not the GPU's: raising them does not help here.",
        ],
    },
    // LAMMPS's GPU package (lammps/lammps, `src/GPU/gpu_extra.h`, `check_flag`): the library's
    // device initialisation or a pair style's buffers report -3 and LAMMPS stops with "ERROR:
    // Insufficient memory on accelerator (src/GPU/gpu_extra.h:N)"; its manual's error list:
    // "There is insufficient memory on one of the devices specified for the gpu package". The
    // package runs on CUDA, HIP or OpenCL (Geryon), so no one API is named. Each GPU holds the
    // atoms of the MPI ranks it serves, their ghosts and neighbour lists; `package gpu … split
    // f` gives the GPU a fraction f of the atoms and the CPU the rest (the manual, `package`).
    Program {
        name: "LAMMPS (GPU package)",
        format: "program-lammps-gpu",
        read: lammps_gpu,
        device: &GPU,
        meaning: "A device of LAMMPS's GPU package could not hold its share: the atoms of the MPI ranks it serves, their ghost atoms and neighbour lists, and the pair style's buffers.",
        remedies: &[
            "Spread the system over more GPUs (more nodes, `-pk gpu N` with N the GPUs per node): each then holds fewer atoms and their neighbour lists.",
            "Give the CPU part of the atoms: `package gpu N split 0.75` computes a quarter of them on the host.",
            "A smaller neighbour skin (`neighbor 1.0 bin`) or cutoff shortens the neighbour lists, often the largest buffers; check with `nvidia-smi` that no other process holds the card.",
        ],
    },
    // Mesa's radeon and amdgpu winsys (`src/gallium/winsys/radeon/drm/radeon_drm_bo.c`,
    // `…/amdgpu/drm/amdgpu_bo.c`, `radeon_create_bo`/`amdgpu_create_bo`): when the kernel
    // refuses a buffer object, "radeon: Failed to allocate a buffer:" then its size in bytes,
    // alignment, domains and flags, one per line (amdgpu's the same with "amdgpu:"). The
    // domains are the kernel's GEM domains (`radeon_drm.h`, `amdgpu_drm.h`): 4 is VRAM, 2 GTT
    // (system memory the GPU maps), 1 the CPU's; any OpenCL (Clover, rusticl), OpenGL or Vulkan
    // (RADV) program on Mesa prints it.
    Program {
        name: "Mesa (radeon/amdgpu winsys)",
        format: "program-mesa-winsys",
        read: mesa_winsys,
        device: &GPU,
        meaning: "The kernel driver refused a buffer object Mesa asked for: in VRAM (domain 4), the card's memory was full or too fragmented for it; in GTT (domain 2), the system memory the GPU may map was.",
        remedies: &[
            "Make the program's buffers smaller (a smaller image, batch or working set): each failed buffer is one allocation of the size shown.",
            "See what holds the card's memory: `cat /sys/class/drm/card0/device/mem_info_vram_used` (amdgpu) or `radeontop`; close other GPU programs.",
        ],
    },
    // Theano's CUDA backend (Theano/Theano, `theano/sandbox/cuda/cuda_ndarray.cu`,
    // `device_malloc`): "Error allocating %llu bytes of device memory (%s). Driver report %llu
    // bytes free and %llu bytes total" (cudaMalloc's error string, then cudaMemGetInfo's free
    // and total). Theano frees intermediate results after each use only with `allow_gc=True`,
    // its default (its configuration's documentation), and CNMeM (`lib.cnmem`) is the pool the
    // old backend may preallocate.
    Program {
        name: "Theano (CUDA backend)",
        format: "program-theano",
        read: theano,
        device: &GPU,
        meaning: "Theano's CUDA backend could not allocate an array with cudaMalloc; the driver's free and total figures after it are from the moment it failed.",
        remedies: &[
            "Lower the batch size (or the model's size): Theano's arrays for each step grow with it.",
            "Keep `allow_gc=True` (the default) in THEANO_FLAGS: with it False, Theano keeps every intermediate result between calls.",
            "With CNMeM on (`lib.cnmem`), the fraction it preallocates is the most the program can use: raise it, or set it to 0 to allocate as needed.",
        ],
    },
    // COLMAP's SIFT matcher on the GPU (colmap/colmap, `src/colmap/feature/sift.cc`,
    // `SiftGPUFeatureMatcher`: when SiftGPU's matching returns a negative count, LOG(ERROR) <<
    // "Feature matching failed. This is probably caused by insufficient GPU memory. Consider
    // reducing the maximum number of features." (older releases: "… features and/or
    // matches."). SiftGPU sizes its buffers for the matcher's `max_num_matches` and the
    // features of both images; the options are `--SiftMatching.*` before 3.12 and
    // `--FeatureMatching.*` after (its `max_num_matches`, `use_gpu`).
    Program {
        name: "COLMAP (SIFT matching)",
        format: "program-colmap",
        read: colmap,
        device: &GPU,
        meaning: "COLMAP's GPU SIFT matcher (SiftGPU) could not match an image pair; COLMAP's own message says it is probably the GPU's memory: its buffers are sized for the maximum number of matches and the features of both images. The pair is left without matches and the run goes on.",
        remedies: &[
            "Lower the maximum number of matches, `--FeatureMatching.max_num_matches` (`--SiftMatching.max_num_matches` before COLMAP 3.12; default 32768).",
            "Extract fewer features per image, `--SiftExtraction.max_num_features`, or from smaller images, `--SiftExtraction.max_image_size`.",
            "Or match on the CPU: `--FeatureMatching.use_gpu 0` (`--SiftMatching.use_gpu 0` before 3.12), slower but bounded by the host's memory.",
        ],
    },
    // SiftGPU's CUDA check (pitzer/SiftGPU, `ProgramCU::CheckErrorCUDA`, the matcher COLMAP
    // bundles): after a step it prints the step's name, a tab and cudaGetErrorString of the last
    // error ("MultiplyDescriptor:\tout of memory"; some copies add the code, "(2)"). Read where
    // SiftGPU's or COLMAP's frames are in the paste; illegal accesses often follow, from the
    // buffer that was never allocated.
    Program {
        name: "SiftGPU (COLMAP's SIFT matcher)",
        format: "program-siftgpu",
        read: siftgpu,
        device: &GPU,
        meaning: "SiftGPU's CUDA check found CUDA's out-of-memory status after one of its steps: a buffer for the descriptors or the matches of an image pair did not fit. The illegal memory accesses that often follow come from that missing buffer, not from a second fault.",
        remedies: &[
            "From COLMAP: lower the maximum number of matches, `--FeatureMatching.max_num_matches` (`--SiftMatching.max_num_matches` before COLMAP 3.12), which sizes SiftGPU's match buffers.",
            "Extract fewer features per image, `--SiftExtraction.max_num_features`, or from smaller images, `--SiftExtraction.max_image_size`.",
            "Or match on the CPU: `--FeatureMatching.use_gpu 0` (`--SiftMatching.use_gpu 0` before 3.12).",
        ],
    },
    // darktable's OpenCL pipeline: a module's OpenCL path that fails prints its tag and the
    // OpenCL status as a number in older releases ("[local laplacian cl] failed: -4",
    // `src/iop/local_laplacian.c`; "[opencl_…] couldn't enqueue kernel! -4") and by name in
    // newer ones (read as OpenCL's status). -4 is CL_MEM_OBJECT_ALLOCATION_FAILURE. darktable
    // then redoes the module on the CPU. How much of the card it takes is its "headroom"
    // (`opencl_memory_headroom` in darktablerc, 3.x) or its "darktable resources"
    // preference (4.x).
    Program {
        name: "darktable (OpenCL)",
        format: "program-darktable",
        read: darktable,
        device: &GPU,
        meaning: "A darktable module's OpenCL buffers did not fit on the card (status -4, CL_MEM_OBJECT_ALLOCATION_FAILURE); darktable processes that module on the CPU instead, slowly.",
        remedies: &[
            "Leave the driver and other programs more of the card: raise `opencl_memory_headroom` in darktablerc (3.x), or pick a smaller \"darktable resources\" setting in the processing preferences (4.x).",
            "Export at a smaller size, or tile: heavy modules (local laplacian, diffuse or sharpen) need several copies of the image on the card.",
        ],
    },
    // Qualcomm's Adreno user-mode driver on Android (logcat's Adreno-GSL tag): its buffers come
    // from the kernel's GPU allocator, kgsl, which maps system RAM for the GPU ("<sharedmem_
    // gpumem_alloc_id:…>: sharedmem_gpumem_alloc: mmap failed errno 12 Out of memory", then
    // "<gsl_memory_alloc_pure:…>: GSL MEM ERROR: kgsl_sharedmem_alloc ioctl failed."). A phone's
    // GPU has no memory of its own: its memory is the system's, shared with every app.
    Program {
        name: "Adreno (Android GPU driver)",
        format: "program-adreno",
        read: adreno,
        device: &ANDROID,
        meaning: "The Adreno driver could not get memory for a GPU buffer (textures, vertex buffers, render targets) from the kernel's GPU allocator (kgsl). A phone's GPU memory is the system's RAM: the app's graphics, its other memory and other apps share it.",
        remedies: &[
            "Release what is no longer drawn (delete textures, framebuffers and buffers) and look for graphics created every frame and never freed: `adb shell dumpsys meminfo <package>` shows the app's Graphics and GL memory.",
            "Load textures and bitmaps at the size they are shown, in compressed GPU formats (ETC2, ASTC), rather than full-size RGBA.",
        ],
    },
    // Mali's allocation failure as MediaTek's drivers log it (above `mali_bad_alloc_re`).
    Program {
        name: "Arm Mali GLES driver",
        format: "program-mali",
        read: mali_bad_alloc,
        device: &ANDROID,
        meaning: "The Mali GLES driver logged a failed allocation in the function it names (for gles_texture_egl_image_…, while wrapping an EGLImage, a buffer shared with the camera, a video decoder or a WebView, as a texture). A phone's GPU memory is the system's RAM, shared with every app. The same line is also logged, many times a second, by apps that go on drawing correctly: only where images come out black or missing is it the failure to look at.",
        remedies: &[
            "Release bitmaps, video frames and WebViews that are no longer shown, and keep fewer images at full size: `adb shell dumpsys meminfo <package>` shows the app's Graphics and GL memory.",
        ],
    },
    // AMReX's GPU arena (AMReX-Codes/amrex, `Src/Base/AMReX_Arena.cpp`, `allocate_system`):
    // when the device allocation fails it aborts with "Out of gpu memory. Free: F Asked: A"
    // (bytes, from the runtime's free memory), on CUDA, HIP or SYCL. The_Arena takes a share of
    // the device at start (`amrex.the_arena_init_size`, three quarters by default) and grows;
    // `amrex.the_arena_is_managed=1` makes it managed memory, which may oversubscribe.
    Program {
        name: "AMReX (GPU arena)",
        format: "program-amrex",
        read: amrex,
        device: &GPU,
        meaning: "AMReX's arena could not get device memory for an allocation (a FAB, particles, a communication buffer); the free figure is the device's when it failed.",
        remedies: &[
            "Spread the problem over more GPUs (more MPI ranks) or make its pieces smaller (`amr.max_grid_size`): each rank's boxes, particles and their communication buffers must fit its GPU.",
            "Memory outside AMReX's arena (other libraries, another process) must fit beside it: `amrex.the_arena_init_size` sets how much the arena takes at start.",
            "`amrex.the_arena_is_managed=1` lets the arena use managed memory, which can exceed the GPU's at a cost in speed.",
        ],
    },
    // DyNet (clab/dynet, `dynet/cuda.h`, CUDA_CHECK): "CUDA failure in <call>" then CUDA's
    // string; for cudaErrorMemoryAllocation its pools' sizes (`devices.h`, `show_pool_mem_info`)
    // and "CUDA is unable to allocate enough GPU memory on GPU:D, at current stage only F MB out
    // of T MB is free" (cudaMemGetInfo, /1024/1024 truncated). Its pools are fixed at start by `--dynet-mem FOR,BACK,PARAM[,SCRATCH]`
    // and grow by another block when one is full (`mem.cc`, `dynet/aligned-mem-pool.cc`).
    Program {
        name: "DyNet",
        format: "program-dynet",
        read: dynet,
        device: &GPU,
        meaning: "DyNet could not get a block for one of its memory pools (forward, backward, parameters or scratch) on the GPU: the pools' first blocks at start (sized by `--dynet-mem`) or another block when one filled; its \"Memory pool info\" lines give each pool's size.",
        remedies: &[
            "Give DyNet's pools what the model needs from the start with `--dynet-mem FOR,BACK,PARAM` (MB each), within the GPU's free memory: a pool that grows later asks for a whole new block.",
            "Smaller minibatches (or autobatching off) shrink the forward and backward pools; other processes on the GPU (`--dynet-gpu-ids` picks another) take what DyNet cannot.",
        ],
    },
    // Jittor (Jittor/jittor, `src/mem/allocator/cuda_device_allocator.cc`): where cudaMalloc
    // fails it warns "Unable to alloc cuda device memory, use unify memory instead. This may
    // cause low performance.", prints `display_memory_info` (the device's total, each
    // allocator's used and unused, "cpu&gpu: … gpu: G cpu: C", "free: cpu(F) gpu(F)", sizes in
    // powers of 1024) and allocates the block with cudaMallocManaged instead: the job goes on in
    // unified memory. From May 2023 (Jittor/jittor b0ba0d68) it prints the report first and stops:
    // "Unable to alloc cuda device memory for size N" (below, `jittor_fatal`).
    Program {
        name: "Jittor (device allocator)",
        format: "program-jittor-fatal",
        read: jittor_fatal,
        device: &GPU,
        meaning: "Jittor's device allocator found no room on the GPU for the block (cudaMalloc failed) and stopped; its display_memory_info above the failure lists what its allocators held.",
        remedies: &[
            "Lower the batch size or the model's size; `jt.display_memory_info()` shows what Jittor's allocators hold, and `jt.gc()` frees the variables no longer referenced.",
        ],
    },
    Program {
        name: "Jittor",
        format: "program-jittor",
        read: jittor,
        device: &GPU,
        meaning: "Jittor's device allocator found no room on the GPU and fell back to unified memory (cudaMallocManaged): the job did not stop, but what does not fit now pages between the GPU and the host's memory over PCIe, which is far slower.",
        remedies: &[
            "Lower the batch size or the model's size until its working set fits the GPU: every access to a page left in host memory moves it over PCIe.",
            "`jt.display_memory_info()` shows what Jittor's allocators hold; `jt.gc()` frees the variables no longer referenced.",
        ],
    },
    // Bladebit's CUDA plotter (Chia-Network/bladebit, `cuda/CudaPlotter.cu`): at start it prints
    // the device's total and free memory, then what its buffers need, "Total Host RAM required
    // : N bytes" (page-locked through cudaMallocHost) and "GPU RAM required : N bytes", and
    // allocates them all; a failed one is "CUDA error: 2 (0x2 ) cudaErrorMemoryAllocation : out
    // of memory" from either. Where the GPU's need is below its free memory, the failure was
    // the page-locked host memory (about 240 GiB in RAM mode, 128 or 16 GiB with
    // --disk-128/--disk-16).
    Program {
        name: "Bladebit (Chia CUDA plotter)",
        format: "program-bladebit",
        read: bladebit,
        device: &GPU,
        meaning: "Bladebit allocates all its buffers at start: the GPU's (GPU RAM required) and page-locked host buffers (Total Host RAM required); CUDA's out-of-memory answer comes from either.",
        remedies: &[
            "Where the host's RAM is short of the Total Host RAM required, plot with `--disk-128` or `--disk-16` (with `-t1`/`-t2` temporary directories), which need about 128 or 16 GiB of RAM.",
            "Where the GPU's free memory is short of the GPU RAM required, close what else holds the GPU or pick another with `-d`.",
        ],
    },
    // Marian NMT (marian-nmt/marian-dev, `src/tensors/tensor_allocator.h`): its workspace grows
    // by whole chunks, logged first, "[memory] Extending reserved space to N MB (device gpuD)"
    // (N = chunks × 128 or 512 MiB), and `Device::reserve` (`src/tensors/gpu/device.cu`) frees
    // the old block and asks cudaMalloc for the whole new size; a failure is its CUDA_CHECK,
    // "CUDA error 2 'out of memory' - …/device.cu:L: cudaMalloc(&data_, size)".
    Program {
        name: "Marian NMT",
        format: "program-marian",
        read: marian,
        device: &GPU,
        meaning: "Marian's workspace (--workspace, in MB) or a tensor allocator that outgrew it needed a larger block on the GPU: it frees the old block and asks for the whole new size at once.",
        remedies: &[
            "A smaller `--workspace` (or `--mini-batch-fit` with a smaller workspace, which sizes batches to it) leaves room for the model and its optimizer state beside it.",
            "Smaller batches (`--mini-batch`, `--maxi-batch`) or shorter sentences (`--max-length`) need less of the workspace.",
        ],
    },
    // Legate's mapper (nv-legate/legate, its `BaseMapper`'s out-of-memory report): "Failed to
    // allocate N bytes on memory M (of kind GPU_FB_MEM) for … There is not enough space because
    // Legate is reserving R of the available A bytes for the following LogicalStores:". A is
    // Legate's own pool on that memory (`--fbmem` MiB per GPU for GPU_FB_MEM, `--sysmem` for
    // SYSTEM_MEM, `--zcmem` for Z_COPY_MEM), R what its live stores hold.
    Program {
        name: "Legate",
        format: "program-legate",
        read: legate,
        device: &GPU,
        meaning: "Legate's memory pool on this memory (the share it was given at start, not the whole GPU) could not hold the store being created beside the stores still alive, which it lists.",
        remedies: &[
            "Give Legate more of the GPU: a larger `--fbmem` (MiB per GPU) in LEGATE_CONFIG, up to what the GPU has free.",
            "Run on more GPUs (`--gpus`), so that each holds a smaller part of the arrays.",
            "Drop references to arrays no longer needed (`del`): the LogicalStores it lists hold memory while their Python objects live.",
        ],
    },
    // Roblox's client (and Sober, its Linux build) crashing when its graphics allocator fails:
    // "RBXCRASH: OutOfMemoryGraphics (Failed to allocate memory. size = N, alignment = A)",
    // the buffer's size in bytes (Sober's report puts the parenthesis's words on the next line).
    Program {
        name: "Roblox",
        format: "program-roblox",
        read: roblox,
        device: &GPU,
        meaning: "Roblox's renderer could not allocate a graphics buffer (a texture, mesh or render target) and the client crashed: the experience's graphics did not fit in the GPU's memory beside what else holds it.",
        remedies: &[
            "Lower the Graphics Quality in Roblox's settings (manual, a few notches down): textures and render targets shrink with it.",
            "Close other programs that hold the GPU (a browser with hardware acceleration, a game or a video in the background).",
        ],
    },
    // vkd3d-proton (Direct3D 12 on Vulkan, in Proton and Wine), `libs/vkd3d/memory.c`,
    // `vkd3d_allocate_device_memory`: when a device-local allocation fails it logs "Memory
    // allocation failed, falling back to system memory." and allocates in host memory instead:
    // a warning (the game goes on, slower), the card's memory full.
    Program {
        name: "vkd3d-proton",
        format: "program-vkd3d-proton",
        read: vkd3d_proton,
        device: &GPU,
        meaning: "vkd3d-proton could not allocate in the card's memory and put the resource in system memory instead: the game goes on, but reads it over PCIe, slower. The game asks for more video memory than is free.",
        remedies: &[
            "Lower the game's texture quality and resolution so that its resources fit in the card's memory.",
            "Close other programs that hold the GPU; on a card with little memory, this warning during loading is expected.",
        ],
    },
    // Ethash-family GPU miners, whose card must hold the epoch's DAG (a dataset of several GB
    // that grows every epoch): T-Rex's own check ("Device does not have enough free memory to
    // hold the DAG for epoch N. Required: X GB, free: Y GB."), lolMiner's ("GPU N: error when
    // allocating memory or building DAG. Disabling card."), Claymore's ("CUDA error - cannot
    // allocate big buffer for DAG."). On Windows, CUDA and OpenCL drivers commit host virtual
    // memory for device allocations, so a page file too small for the cards fails the same way.
    Program {
        name: "Ethash miner (DAG)",
        format: "program-dag-miner",
        read: dag_miner,
        device: &GPU,
        meaning: "The miner could not allocate the epoch's DAG on the card: the card's free memory was smaller than the DAG, which grows with every epoch, or, where the failure says CL_INVALID_BUFFER_SIZE (-61) or a single chunk, the driver refused one buffer that large (over CL_DEVICE_MAX_MEM_ALLOC_SIZE, the most one OpenCL buffer may be), whatever was free.",
        remedies: &[
            "Compare the DAG's size for the current epoch with the card's free memory: when it does not fit, mine an algorithm or coin whose dataset fits the card.",
            "Free the card: no display or other miner on it while the DAG is built.",
            "On Windows, make the page file at least as large as the cards' memory together: the drivers commit host memory for what they allocate on the device.",
            "Where the DAG is over the largest single buffer the driver allows (AMD's OpenCL caps it at a share of the card), set GPU_SINGLE_ALLOC_PERCENT=100 and GPU_MAX_ALLOC_PERCENT=100 before the miner starts, as nanominer suggests.",
        ],
    },
    // Tenstorrent's TT-Metalium (under TT-NN, tt-forge and tt-xla), tenstorrent/tt-metal,
    // `tt_metal/impl/allocator/bank_manager.cpp`: "Out of Memory: Not enough space to allocate
    // {size} B {DRAM|L1|L1_SMALL|TRACE} buffer across {n} banks, where each bank needs to store
    // {per} B, but bank size is {bank} B (allocated: {a} B, free: {f} B, largest free block:
    // {l} B)" (older releases stop at "bank size is only {bank} B"). A buffer is interleaved
    // over the banks in lockstep: every bank holds the same share at the same address, so each
    // bank's figures times the number of banks are the memory type's. `ttnn.deallocate` frees a
    // tensor's buffer; `ttnn.open_device(..., l1_small_size=N)` sizes the L1_SMALL region
    // (0 by default).
    Program {
        name: "Tenstorrent TT-Metalium",
        format: "program-tt-metal",
        read: tt_metal,
        device: &TENSTORRENT,
        meaning: "TT-Metalium's allocator could not place a buffer in the device's DRAM or in its cores' L1 SRAM: a buffer is spread over the banks in lockstep, so every bank needs a free block of its share at the same address. A largest free block smaller than that share, with more free in total, is fragmentation.",
        remedies: &[
            "Free tensors no longer needed (`ttnn.deallocate(t)`, or drop the last reference) before the next op, so that their buffers go back to the banks.",
            "For an L1 buffer: put large tensors in DRAM (`memory_config=ttnn.DRAM_MEMORY_CONFIG`) or shard them over more cores, and use smaller blocks; for L1_SMALL (convolutions' scratch), open the device with a larger `l1_small_size` (its default is 0).",
            "For DRAM: a smaller batch or sequence length, weights in a smaller data type (bfloat8_b), or the model spread over more chips of a mesh device.",
        ],
    },
    // Dr.Jit (Mitsuba 3, Sionna RT), mitsuba-renderer/drjit-core, `src/malloc.cpp`,
    // `jitc_malloc`: after a failed allocation it flushes its cache, retries, then raises
    // "jit_malloc(): out of memory! Could not allocate N bytes of T memory.", T one of its
    // `alloc_type_name`s ("host", "host-async", "host-pinned", "device"; older releases also
    // "managed", "managed-read-mostly"); enoki-jit's bare "jit_malloc(): out of memory!" is
    // its host path (`posix_memalign`). Enoki (Mitsuba 2), `src/cuda/common.cpp`:
    // "cuda_malloc(): out of memory!" after a trim and a retry of cudaMalloc. Mitsuba's own
    // troubleshooting page: an out-of-memory in differentiable rendering is the rendering or
    // autodiff graph exhausting the GPU; reduce the sample count or resolution, or split the
    // computation into several low sample count passes and average the gradients.
    Program {
        name: "Dr.Jit / Enoki (Mitsuba)",
        format: "program-drjit",
        read: drjit,
        device: &GPU,
        meaning: "Dr.Jit could not allocate a buffer for an array it evaluates (a rendered image, the wavefront of rays, an autodiff graph's intermediate values) after flushing its cache and retrying: what is alive at once did not fit.",
        remedies: &[
            "Lower the sample count per pass or the resolution; for a high sample count, render several passes with fewer samples (a different `seed` each) and average them, or their gradients.",
            "Release arrays and scene results no longer needed (`del` the last reference) before the next render: Dr.Jit frees an array's memory when its last reference goes.",
        ],
    },
    // CUDA.jl's in-kernel allocation (JuliaGPU/CUDA.jl, `src/device/runtime.jl`, `malloc`, and
    // CUDAnative before it): a kernel's dynamic allocation that the device's malloc heap could
    // not serve prints "ERROR: Out of dynamic GPU memory (trying to allocate N bytes)" and throws.
    // The heap is CUDA's `cudaLimitMallocHeapSize`, 8 MiB unless raised before the first kernel
    // runs (`CUDA.limit!(CUDA.LIMIT_MALLOC_HEAP_SIZE, bytes)`), whatever the GPU has free.
    Program {
        name: "CUDA.jl (in-kernel allocation)",
        format: "program-cudajl-device-malloc",
        read: cudajl_device_malloc,
        device: &DEVICE_HEAP,
        meaning: "A kernel allocated memory while it ran (an array, a boxed value or a string made inside it), and the device's malloc heap, a fixed-size area separate from the memory arrays are allocated in, had no room left.",
        remedies: &[
            "Raise the device's malloc heap before the first kernel runs: `CUDA.limit!(CUDA.LIMIT_MALLOC_HEAP_SIZE, 256 * 2^20)` (CUDA's cudaLimitMallocHeapSize).",
            "Better, keep the kernel from allocating: fixed-size values (StaticArrays' SVector/MVector, tuples) instead of Arrays inside it, and type-stable code (a value whose type the compiler cannot infer is boxed on the heap).",
        ],
    },
    // Mesa's zink, OpenGL on Vulkan (`src/gallium/drivers/zink/zink_bo.c`, `bo_create_internal`):
    // "zink: couldn't allocate memory: heap=H size=N" where vkAllocateMemory failed for a
    // buffer or texture, N bytes from Vulkan memory heap H, logged as "MESA: error: …".
    Program {
        name: "Mesa zink (OpenGL on Vulkan)",
        format: "program-zink",
        read: zink,
        device: &GPU,
        meaning: "zink could not get Vulkan memory for an OpenGL buffer, texture or the window's swapchain: the Vulkan driver under it refused the allocation.",
        remedies: &[
            "Lower what the program draws at once (resolution, texture quality), and close other programs that use the GPU.",
            "Where every allocation fails, even small ones, and from the start, the Vulkan driver or the window system's setup (DRI3, the Vulkan driver zink was given) is the likelier cause than memory: try the native OpenGL driver, or check which Vulkan driver zink loads (`MESA_VK_DEVICE_SELECT=list`).",
        ],
    },
    // sgminer and cgminer's scrypt kernels (`ocl.c`, `initCl`): before the scrypt pad buffer is
    // made they print "Maximum buffer memory device N supports says M" (CL_DEVICE_MAX_MEM_ALLOC_SIZE)
    // and "Your settings come to S" (bytes; cgminer: "Your scrypt settings come to S"), then
    // clCreateBuffer fails for it: "Error -61: clCreateBuffer (padbuffer8), decrease TC or
    // increase LG" (-61, CL_INVALID_BUFFER_SIZE, a buffer over that maximum; -4 where the memory
    // is not there). The thread concurrency (TC) and the lookup gap (LG) size the pad.
    Program {
        name: "sgminer (scrypt pad buffer)",
        format: "program-sgminer",
        read: sgminer,
        device: &GPU,
        meaning: "The miner's scrypt pad buffer, sized by its thread concurrency and lookup gap, is larger than the one buffer the OpenCL driver allows (or than the memory free): clCreateBuffer refused it.",
        remedies: &[
            "As the miner says: lower the thread concurrency (--thread-concurrency, TC) or raise the lookup gap (--lookup-gap, LG), so that the pad fits under the device's largest buffer.",
            "On AMD's OpenCL driver, GPU_MAX_ALLOC_PERCENT=100 and GPU_SINGLE_ALLOC_PERCENT=100 (set before the miner starts) raise the largest buffer it allows.",
        ],
    },
    // NVIDIA's OpenGL driver on Windows, its fatal dialog when an application's allocation does
    // not fit: "An application has requested more GPU memory than is available in the system.
    // The application will now be closed. Error code: 6" (Minecraft and other OpenGL games).
    Program {
        name: "NVIDIA OpenGL driver",
        format: "program-nvidia-opengl",
        read: nvidia_opengl,
        device: &GPU,
        meaning: "NVIDIA's OpenGL driver could not place what the program asked for (textures, buffers, render targets) in the GPU's memory, nor spill it, and closed the program.",
        remedies: &[
            "Lower the program's texture and render settings (resolution, render or view distance, shader packs and resource packs in Minecraft), and close other programs that use the GPU.",
        ],
    },
    // BitCrack (cuBitCrack, clBitCrack): its logger prints the CUDA or OpenCL error's text,
    // "[Info] Error: out of memory", when the device context cannot allocate the starting points
    // and their tables (`-b` blocks × `-t` threads × `-p` points per thread).
    Program {
        name: "BitCrack",
        format: "program-bitcrack",
        read: bitcrack,
        device: &GPU,
        meaning: "BitCrack could not allocate its starting points and their tables on the GPU: their size is blocks × threads × points per thread.",
        remedies: &[
            "Lower the points per thread (-p), or the blocks (-b) and threads (-t): the memory BitCrack needs grows with their product.",
        ],
    },
    // NVIDIA DALI (`dali/core/cuda_error.h`): `CUDABadAlloc`, thrown where a CUDA allocation
    // returns cudaErrorMemoryAllocation, says "CUDA allocation failed"; with the request known,
    // "Can't allocate N bytes on device D." (or "… on host." for pinned memory). The pipeline
    // relays it as "Critical error in pipeline: …". Read beside DALI's own words only: other
    // programs print "CUDA allocation failed" for any failed call.
    Program {
        name: "NVIDIA DALI",
        format: "program-dali",
        read: dali,
        device: &GPU,
        meaning: "DALI's pipeline could not allocate CUDA memory, most often a buffer on the GPU: its decoded and augmented batches, prefetched `prefetch_queue_depth` iterations ahead, and its memory pools are held for every pipeline in the process. Without a size DALI says the same words when pinned host memory (cudaMallocHost) fails; \"on host\" in the sized message says which.",
        remedies: &[
            "Lower the batch size or `prefetch_queue_depth` (default 2) of the pipeline: DALI keeps that many batches of every output on the GPU.",
            "With several pipelines (or one per GPU in one process), build them on different `device_id`s, or fewer at a time: each holds its own buffers and pools.",
            "Decode on the CPU or in mixed mode with a smaller `device_memory_padding` / `host_memory_padding` for nvJPEG, or free DALI's pools between phases with `nvidia.dali.backend.ReleaseUnusedMemory()`.",
        ],
    },
    // nnabla's caching allocator (sony/nnabla, `src/nbla/memory/allocator.cpp`,
    // `Allocator::alloc_retry`): a failed allocation prints "Failed to allocate. Freeing memory
    // cache and retrying.", frees the device's unused cached blocks and tries once more; a second
    // failure prints "Failed to allocate again." and rethrows. The same allocator serves the CPU
    // context, so the device is the GPU only where the text names nnabla's CUDA functions
    // (`…Cuda`, `…CudaCudnn`) or its CUDA extension.
    Program {
        name: "nnabla (CUDA extension)",
        format: "program-nnabla",
        read: nnabla,
        device: &GPU,
        meaning: "nnabla's caching allocator could not get a block from the GPU even after it freed every unused cached block and retried: what the graph's live arrays hold is more than the card has.",
        remedies: &[
            "Lower the batch size (or the input length): nnabla's arrays for a forward and backward pass grow with it.",
            "Clear buffers as the graph runs: `loss.forward(clear_no_need_grad=True)` and `loss.backward(clear_buffer=True)` free intermediate arrays a step does not need again.",
            "Train in half precision (`get_extension_context('cudnn', type_config='half')`) or with fewer parameters.",
        ],
    },
    // ViSUS and OpenVisus keep their own count of the textures they hold on the GPU against a
    // budget (OpenVisus `Libs/Gui/src/GLInfo.cpp`, `allocateMemory`: the card's total, from
    // GL_NVX_gpu_memory_info or `Configuration/GLMemory/total`, times
    // `Configuration/GLMemory/maximum_memory_allocation_factor`, 0.8 by default). Past it:
    // OpenVisus's "OpenGL out of memory  reqsize(X) os_free_memory(Y)", the 2013 viewer's
    // "LimitedResource(GPU) reached its limit  reqsize(X) used(Y) limit(Z)", then "Failed to
    // acquire gpu memory (X)" (OpenVisus: "Failed to allocate gpu memory (X)"). Sizes from
    // `StringUtils::getStringFromByteSize`: powers of 1024, "gb", "mb", "kb" (upper case from 2019)
// or bare bytes. The factor was read from visus.config in 2018's code, fixed at 0.8 after.
    Program {
        name: "ViSUS / OpenVisus viewer",
        format: "program-visus",
        read: visus,
        device: &GPU,
        meaning: "The viewer's own count of the textures it holds on the GPU reached its budget (the card's memory times a factor, 0.8 by default), so it refused the next texture before OpenGL was asked; the card itself may still have had room.",
        remedies: &[
            "Hide or remove render nodes you do not need (volume renderers each hold their own textures), or view a lower resolution.",
            "Where the card has room, raise the budget: builds of 2018 read `Configuration/GLMemory/maximum_memory_allocation_factor` (0.8 by default) and `Configuration/GLMemory/total` from visus.config; later OpenVisus fixes the factor at 0.8.",
        ],
    },
    // Mesa's drivers for SoC GPUs ask the kernel for each buffer object with their DRM ioctl
    // and print the failure with errno's words (`src/gallium/drivers/panfrost/pan_bo.c`,
    // `src/asahi/lib/agx_bo.c`: "DRM_IOCTL_PANFROST_CREATE_BO failed: %m"). ENOMEM ("Cannot
    // allocate memory") is the kernel refusing the buffer for want of memory; on these GPUs
    // (Mali's Panfrost, Apple's Asahi) that memory is the system's, shared with the CPU. Other
    // errno values are not memory.
    Program {
        name: "Mesa (kernel buffer objects)",
        format: "program-mesa-bo",
        read: mesa_bo,
        device: &GPU,
        meaning: "The kernel's GPU driver refused a buffer object Mesa asked for (ENOMEM): on a system-on-chip GPU the buffers come from the system's RAM (or a reserved CMA pool), so it ran out, or was too fragmented for the buffer.",
        remedies: &[
            "Close other programs, or give the GPU more room: a larger CMA pool (`cma=` on the kernel command line) where the driver allocates from it.",
            "Lower the program's resolution, texture sizes or number of buffers.",
        ],
    },
    // PCSX2's GS renderer (`pcsx2/GS/GSState.cpp`): a texture the renderer could not create is
    // thrown as `std::bad_alloc` ("Texture Out Of Memory"), caught after the draw, which purges
    // the texture pool and logs "GS: Memory allocation failure."; from 2023 the pool logs it
    // where it creates the texture (`GSDevice.cpp`, "GS: Memory allocation failure for WxH
    // texture. Purging pool and retrying.", a retry that may succeed, then "… after purging pool."
// where it did not: only that one and the older line are failures). The renderer's own
    // line before it ("Create texture failed: 0x…") carries the API's reason.
    Program {
        name: "PCSX2 (GS renderer)",
        format: "program-pcsx2",
        read: pcsx2,
        device: &GPU,
        meaning: "PCSX2's renderer could not create a texture (it takes any failed creation for memory, purges its texture pool and retries). Where the renderer's line before says `0x887A0005` (DXGI_ERROR_DEVICE_REMOVED) the GPU was lost, a driver reset, not memory; `0x8007000E` (E_OUTOFMEMORY) is the card's memory.",
        remedies: &[
            "Lower the internal resolution (upscaling multiplies every render target), and turn off texture replacement or the hash cache, which keep textures on the GPU.",
            "Try another renderer (Vulkan, Direct3D 11) and an up-to-date driver: a lost device under Direct3D 12 is often the driver's.",
        ],
    },
    // Source 2's Vulkan renderer (Dota 2, Counter-Strike 2; closed source, its log as printed):
    // "[RenderSystem] Failed to allocate GPU memory for object." then "Attempting fallback GPU
    // allocation in system memory.", and where that too fails "vkAllocateMemory failed to
    // allocate GPU memory. Fatal error" (the fallback's status, often VK_ERROR_OUT_OF_HOST_MEMORY,
    // on the line before). The device's memory ran out first; the status is the fallback's.
    Program {
        name: "Source 2 (Vulkan renderer)",
        format: "program-source2",
        read: source2,
        device: &GPU,
        meaning: "The game's renderer could not place a resource in the GPU's memory, then could not place it in system memory either (the fallback's status is the one printed). Where a VK_ERROR_DEVICE_LOST came just before, the GPU was lost (a driver reset) and the allocations after it fail for that reason, not for memory.",
        remedies: &[
            "Lower the texture quality and the render resolution, and close other programs that use the GPU.",
            "Where the log shows VK_ERROR_DEVICE_LOST first, update or roll back the graphics driver, and check the card's clocks and temperature: the lost device is the failure.",
        ],
    },
    // AMD Radeon ProRender (`RadeonProRender.h`, `RadeonImageFilters.h`): RPR_ERROR_OUT_OF_VIDEO_MEMORY
    // and RIF_ERROR_OUT_OF_VIDEO_MEMORY are -3, the *_OUT_OF_SYSTEM_MEMORY statuses -2. Its
    // Python binding (pyrpr, the Blender, Maya and Houdini plug-ins) raises "RPR call
    // ContextRender(…) returned error code <-3> with error message: …" (the status's name before
    // the number where it finds one: "<ERROR_OUT_OF_VIDEO_MEMORY<-3>>"); RIF logs
    // "[ERROR@RIF]: RIF_ERROR_OUT_OF_VIDEO_MEMORY at file …".
    Program {
        name: "Radeon ProRender",
        format: "program-prorender",
        read: prorender,
        device: &GPU,
        meaning: "Radeon ProRender (or its image filters, the denoiser and upscaler) could not allocate the scene's geometry, textures or render buffers in the GPU's memory: status -3, out of video memory.",
        remedies: &[
            "Lower what the scene holds on the GPU: the subdivision level (each level multiplies the polygons by four), texture sizes (the plug-in's texture compression and its limit on texture size), and the render resolution.",
            "Turn off the viewport denoiser or upscaler (Radeon Image Filters hold their own buffers), and render with the CPU added, or on a card with more memory.",
        ],
    },
    // The kernel's DRM drivers that take GPU buffers from the contiguous memory allocator (CMA,
    // a reserved pool of system RAM): the Raspberry Pi's vc4 ("[drm:vc4_bo_create [vc4]]
    // *ERROR* Failed to allocate from CMA:" then its buffer statistics; "vc4_v3d …: Failed to
    // allocate memory for tile binning: -12. You may need to enable CMA or give it more
    // memory."), and DRM's CMA helper for any such driver (`drm_gem_cma_create`, "vc4-drm
    // soc:gpu: failed to allocate buffer with size 16777216"). vc4's statistics before 4.17
    // (`vc4_bo.c`, `vc4_bo_stats_dump`): "size bos allocated: Nkb" (every buffer, its cache of
    // freed ones included) and "size bos used: Nkb" (those in use), KiB.
    Program {
        name: "Linux DRM driver (CMA)",
        format: "program-drm-cma",
        read: drm_cma,
        device: &GPU,
        meaning: "The kernel's GPU driver could not take a buffer from the contiguous memory pool (CMA) the GPU's buffers come from: the pool, set at boot, was full or too fragmented for the buffer.",
        remedies: &[
            "Give the pool more memory: on a Raspberry Pi, `dtoverlay=vc4-kms-v3d,cma-512` (or `cma-384`, `cma-256`) in config.txt; elsewhere `cma=512M` on the kernel command line.",
            "Close other graphical programs (each browser tab and window holds buffers), or lower the resolution.",
        ],
    },
    // gpu-burn (wilicc/gpu-burn): its own check before it allocates (below, `gpu_burn`).
    Program {
        name: "gpu-burn",
        format: "program-gpu-burn",
        read: gpu_burn,
        device: &GPU,
        meaning: "gpu-burn takes a share of the GPU's free memory (90% unless `-m` says otherwise) for its matrices, and that share could not hold two input matrices and a result (\"Results are N bytes each\" is one of them): it stopped before allocating anything.",
        remedies: &[
            "Free the GPU first (the free figure is what other processes left), or give gpu-burn a larger share with `-m N` (MB) or `-m N%`.",
        ],
    },
    // NVIDIA Warp (below, `warp`).
    Program {
        name: "NVIDIA Warp",
        format: "program-warp",
        read: warp,
        device: &GPU,
        meaning: "Warp's allocator got no memory for an array on the device it names (`wp.zeros`, `wp.empty`, `wp.array`); it says so for any failed allocation, so one of a few bytes points to a CUDA context that is not working rather than a full GPU.",
        remedies: &[
            "Free arrays no longer needed (Warp frees an array when its last Python reference goes), or allocate fewer, smaller ones per step.",
        ],
    },
    // Flutter's GPU API on Impeller (below, `flutter_gpu`).
    Program {
        name: "Flutter GPU (Impeller)",
        format: "program-flutter-gpu",
        read: flutter_gpu,
        device: &ANDROID,
        meaning: "Impeller's Vulkan allocator could not allocate a host-visible buffer (a HostBuffer's new block, or a DeviceBuffer the app made; the Dart exception gives its length): the GPU's memory, on a phone the system's RAM, had no room for it.",
        remedies: &[
            "Keep one HostBuffer and call `reset()` on it each frame, so its blocks are reused rather than new ones added, and emplace less into it per frame; create DeviceBuffers once, not each frame.",
        ],
    },
    // dlib's CUDA checks (`dlib/cuda/cuda_utils.h`, `cudnn_dlibapi.cpp`, `cublas_dlibapi.cpp`:
    // CHECK_CUDA, CHECK_CUDNN, CHECK_CUBLAS): "Error while calling cudaMalloc(&data,
    // new_size*sizeof(float)) in file …/dlib/cuda/gpu_data.cpp:195. code: 2, reason: out of
    // memory", the call as written, the status and its string. Memory where the string is
    // CUDA's "out of memory", cuDNN's CUDNN_STATUS_ALLOC_FAILED or cuBLAS's "CUDA Resources
    // could not be allocated" (some releases print `cudaGetLastError()` as the code, so the
    // string decides; the code only where a wrap cut the string). A page-locking call
    // (cudaMallocHost) is host memory. face_recognition's CNN detector runs on it.
    Program {
        name: "dlib (CUDA)",
        format: "program-dlib",
        read: dlib,
        device: &GPU,
        meaning: "dlib's deep-learning code (its CNN face detector, which face_recognition's `model=\"cnn\"` uses, and networks built on dlib::dnn) could not allocate a tensor on the GPU: the image pyramid of each picture and the network's outputs grow with the image's size.",
        remedies: &[
            "Give it smaller images, or upsample less: face_recognition's `number_of_times_to_upsample` (default 1) doubles each side of the image, four times the pixels, each time.",
            "Detect in smaller batches (`batch_face_locations(..., batch_size=…)`), or on the CPU with `model=\"hog\"`.",
        ],
    },    // XMRig's OpenCL back end (`src/backend/opencl/wrappers/OclLib.cpp`, `createBuffer`): "error
    // CL_INVALID_BUFFER_SIZE when calling clCreateBuffer with buffer size N". OpenCL answers
    // CL_INVALID_BUFFER_SIZE for a buffer larger than the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE
    // (its largest single buffer, often a quarter to a half of the card on AMD's drivers): the
    // cap on one buffer, not the memory free. RandomX's dataset is one buffer of 2080 MiB
    // (2181038080 bytes).
    Program {
        name: "XMRig (OpenCL)",
        format: "program-xmrig-opencl",
        read: xmrig_opencl,
        device: &GPU,
        meaning: "One buffer XMRig asked OpenCL for is larger than the largest single buffer the device's driver allows (CL_DEVICE_MAX_MEM_ALLOC_SIZE): the cap on one allocation, whatever the card has free. A buffer of 2181038080 bytes is RandomX's 2080 MiB dataset.",
        remedies: &[
            "For RandomX, keep the dataset in host memory: `\"dataset_host\": true` in the OpenCL thread's configuration.",
            "On AMD's OpenCL, raise the single-buffer cap before starting: `GPU_MAX_ALLOC_PERCENT=100` and `GPU_SINGLE_ALLOC_PERCENT=100`.",
            "Lower the thread's `intensity`: its scratchpads are the intensity times the algorithm's memory per hash.",
        ],
    },
    // rendy's memory allocator (gfx-rs, `rendy-memory/src/heaps/mod.rs`, used by WebRender's
    // Vulkan port and Amethyst): where no memory type whose heap has room can take the request,
    // "All suitable heaps are exhausted. Heaps { … }" (its Debug dump of every heap's
    // allocators) and the allocation fails with OutOfDeviceMemory.
    Program {
        name: "rendy (gfx-rs memory allocator)",
        format: "program-rendy",
        read: rendy,
        device: &GPU,
        meaning: "rendy's allocator found no memory type whose heap could still take the allocation: every heap it may use for the request (the card's memory first) was full.",
        remedies: &[
            "Lower what the program keeps on the GPU (resolution, texture and render-target sizes), and close other programs using the GPU.",
        ],
    },
];

// Its own sentence is a whole line: what follows it (the block's lines are joined with spaces)
// is the end, or the next line's capital, not a sentence that goes on ("… memory when I
// render", prose that only mentions it).
re!(
    blender_oom_re,
    r"System is out of GPU (and shared host )?memory(?:\.?\s*$|\.?\s+[A-Z(\[*<>]|[\x60'\x22]|\.\s)|\bOut of memory in (?:cu|hip)[A-Za-z0-9_]+\("
);
re!(
    blender_words_re,
    r"(?i)\bblender\b|\bcycles\b|intern[/\\]cycles|\bFra:\d+ Mem:|\bMem: ?\d+(?:\.\d+)?M, Peak: ?\d"
);
// Cycles' own status in Blender's header ("Mem:2960.07M, Peak:2960.07M | CUDA error: …",
// `blender/session.cpp`: its device memory in use and at its peak, in MiB). Blender's frame
// line ("Fra:1 Mem:12.34M (0.00M, Peak 56.78M)") is the host's and has no colon after "Peak".
re!(
    cycles_status_re,
    r"\bMem: ?(\d+(?:\.\d+)?)M, Peak: ?\d+(?:\.\d+)?M"
);
fn blender(t: &str) -> Option<Found> {
    let c = blender_oom_re().captures(t)?;
    let own = c.get(0)?.as_str().contains("System is out of GPU");
    if !own && !blender_words_re().is_match(t) {
        return None;
    }
    let mut f = Found::device(Api::Cuda);
    if !own && c.get(0)?.as_str().contains(" in hip") {
        f.api = Some(Api::Hip);
    }
    if own {
        // The GPU device's words are every back end's (CUDA, OptiX, HIP, oneAPI, Metal).
        f.api = None;
    }
    if let Some(c) = cycles_status_re().captures(t) {
        f.facts.allocated_bytes = c
            .get(1)
            .and_then(|m| m.as_str().parse::<f64>().ok())
            .filter(|v| *v < 1e9)
            .map(|v| (v * (1u64 << 20) as f64).round() as u64);
    }
    Some(f)
}

re!(
    nvenc_re,
    r"\b([A-Z][A-Za-z]{2,40}) failed: out of memory \(10\)"
);

fn ffmpeg_nvenc(t: &str) -> Option<Found> {
    // The Video Codec SDK's own status name, from any program on NVENC.
    if t.contains("NV_ENC_ERR_OUT_OF_MEMORY") {
        return Some(Found::device(Api::Cuda));
    }
    let c = nvenc_re().captures(t)?;
    let call = c.get(1)?.as_str();
    let nvenc = t.contains("nvenc")
        || matches!(
            call,
            "OpenEncodeSessionEx"
                | "InitializeEncoder"
                | "CreateBitstreamBuffer"
                | "CreateInputBuffer"
                | "RegisterResource"
        );
    let mut f = nvenc.then(|| Found::device(Api::Cuda))?;
    // Livepeer's transcoder names the card it used ("Unable to transcode using Nvidia gpu=0",
    // the CUDA index given to its -nvidia flag).
    f.device = livepeer_gpu_re()
        .captures(t)
        .and_then(|c| c.get(1)?.as_str().parse().ok());
    Some(f)
}

re!(livepeer_gpu_re, r"\busing Nvidia gpu=(\d{1,2})\b");

re!(
    ffmpeg_cuda_re,
    r"\b(?:\w+->)?(?:cu|cuvid)[A-Z]\w{1,40}\([^\n]{0,200}?\) failed -> CUDA_ERROR_OUT_OF_MEMORY\b|\bFailed creating CUDA context for NVENC: 0x2\b"
);
re!(
    ffmpeg_words_re,
    r"\[(?:AVHW\w+|h264_\w+|hevc_\w+|av1_\w+|\w+_cuvid|scale_cuda|\w+_nvenc) @ |(?i)\bffmpeg\b"
);

fn ffmpeg_cuda(t: &str) -> Option<Found> {
    (ffmpeg_cuda_re().is_match(t) && ffmpeg_words_re().is_match(t))
        .then(|| Found::device(Api::Cuda))
}

re!(
    openmm_re,
    r"Error creating array [^\s:]{1,80}: (?:(CUDA_(?:ERROR_)?OUT_OF_MEMORY)|(clCreateBuffer)) \((-?\d{1,3})\)|Error creating array [^\s:]{1,80}: (CUDA_(?:ERROR_)?OUT_OF_MEMORY)\b"
);

fn openmm(t: &str) -> Option<Found> {
    let c = openmm_re().captures(t)?;
    if c.get(1).or_else(|| c.get(4)).is_some() {
        return Some(Found::device(Api::Cuda));
    }
    // OpenCL: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4), or CL_OUT_OF_RESOURCES (-5) from the
    // allocating call itself.
    let code: i64 = c.get(3)?.as_str().parse().ok()?;
    matches!(code, -4 | -5).then(|| Found::device(Api::OpenCl))
}

re!(
    gromacs_re,
    r"Allocation of the device buffer failed\.[^\n]{0,120}?(?:cudaErrorMemoryAllocation|hipErrorOutOfMemory|CL_MEM_OBJECT_ALLOCATION_FAILURE|out of memory)"
);

fn gromacs(t: &str) -> Option<Found> {
    let m = gromacs_re().find(t)?.as_str();
    let api = if m.contains("hipError") {
        Api::Hip
    } else if m.contains("CL_MEM") {
        Api::OpenCl
    } else {
        Api::Cuda
    };
    Some(Found::device(api))
}

re!(
    relion_re,
    r"[Cc]udaCustomAllocator out of memory\s{0,3}\[requestedSpace: *(\d{1,20}) B\](?:\s{0,3}\[largestContinuousFreeSpace: *(\d{1,20}) B\]\s{0,3}\[totalFreeSpace: *(\d{1,20}) B\])?"
);
// The allocator's state after it: its pieces, then "= <block size>B".
re!(relion_block_re, r"\] = (\d{1,20})B\b");

// Newer layers: "vkAllocateMemory(): pAllocateInfo->allocationSize is N bytes from heap H, but
// size of that heap is only M bytes". The layer prints N as a plain integer; a writer may have
// grouped its digits ("2707,200,000"), read as the number it groups.
re!(
    vulkan_heap_size_re,
    r"vkAllocateMemory(?:\(\))?:\s{1,3}(?:attempting to allocate|pAllocateInfo->allocationSize is) (\d[\d,]{0,25}) bytes from heap (\d{1,2}),\s{0,3}but size of that heap is only (\d[\d,]{0,25}) bytes"
);

fn vulkan_heap_size(t: &str) -> Option<Found> {
    let c = vulkan_heap_size_re().captures_iter(t).last()?;
    let bytes = |i: usize| -> Option<u64> { c.get(i)?.as_str().replace(',', "").parse().ok() };
    let mut f = Found::device(Api::Vulkan);
    f.facts.requested_bytes = bytes(1);
    // The heap's size caps this allocation: the limit it failed against, not the card's.
    f.facts.max_alloc_bytes = bytes(3);
    Some(f)
}

re!(
    pg_strom_re,
    r"failed on gpuMemAlloc(Managed|Host)?(?:\((\d{1,20})\)|: (\d{1,20})\b)"
);
re!(pg_strom_device_re, r"device at GPU-(\d{1,3})\b");

fn pg_strom(t: &str) -> Option<Found> {
    let c = pg_strom_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::Cuda);
    f.facts.requested_bytes = c.get(2).or(c.get(3)).and_then(|m| m.as_str().parse().ok());
    if c.get(1).is_some_and(|m| m.as_str() == "Host") {
        f.memory = MemoryKind::PinnedHost;
    }
    f.device = pg_strom_device_re()
        .captures(&t[c.get(0)?.start()..])
        .and_then(|d| d.get(1)?.as_str().parse().ok());
    Some(f)
}

re!(
    heavydb_re,
    r"ALLOCATION failed to find (\d{1,20})B throwing out of memory (GPU|CPU)_MGR:(\d{1,3})"
);
// The executor's account of the same failure (`QueryEngine/Execute.cpp`,
// `getErrorMessageFromCode(ERR_OUT_OF_GPU_MEM)`), alone where the buffer manager's line is
// not in the paste.
re!(
    heavydb_query_re,
    r"\bQuery couldn't keep the entire working set of columns in GPU memory\b"
);

fn heavydb(t: &str) -> Option<Found> {
    let Some(c) = heavydb_re().captures_iter(t).last() else {
        return heavydb_query_re()
            .is_match(t)
            .then(|| Found::own(Facts::default()));
    };
    let mut f = Found::own(Facts {
        requested_bytes: c.get(1)?.as_str().parse().ok(),
        ..Facts::default()
    });
    if &c[2] == "CPU" {
        f.memory = MemoryKind::Host;
    } else {
        f.device = c.get(3)?.as_str().parse().ok();
    }
    Some(f)
}

re!(
    fluidx3d_re,
    r#"\b(?:Device|Program) "[^"\n]{1,200}" does not have enough memory\. Allocating another (\d{1,9}) MB would use a total of (\d{1,9}) MB / (\d{1,9}) MB\b"#
);
re!(
    fluidx3d_max_re,
    r#"\bMemory size is too large at (\d{1,9}) MB\. Device "[^"\n]{1,200}" accepts a maximum buffer size of (\d{1,9}) MB\b"#
);

fn fluidx3d(t: &str) -> Option<Found> {
    use super::banner::mib;
    if let Some(c) = fluidx3d_re().captures_iter(t).last() {
        let (ask, with) = (mib(&c, 1)?, mib(&c, 2)?);
        let mut f = Found::own(Facts {
            requested_bytes: Some(ask),
            total_bytes: mib(&c, 3),
            allocated_bytes: with.checked_sub(ask),
            ..Facts::default()
        });
        f.facts.derived.push("allocated_bytes");
        return Some(f);
    }
    let c = fluidx3d_max_re().captures_iter(t).last()?;
    Some(Found::own(Facts {
        requested_bytes: mib(&c, 1),
        max_alloc_bytes: mib(&c, 2),
        ..Facts::default()
    }))
}

re!(
    profanity_re,
    r"\b(?:kernel queueing failed(?: during initilization)?|failed to [a-z][a-z ]{2,60}) \(res = -4\)"
);

fn profanity(t: &str) -> Option<Found> {
    profanity_re()
        .is_match(t)
        .then(|| Found::device(Api::OpenCl))
}

re!(
    megengine_re,
    r"\bout of memory while requesting (\d{1,20}) bytes; you can try setting MGB_(?:CUDA|ROCM)_RESERVE_MEMORY\b"
);

fn megengine(t: &str) -> Option<Found> {
    let c = megengine_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::Cuda);
    f.facts.requested_bytes = c.get(1)?.as_str().parse().ok();
    Some(f)
}

re!(
    theano_gpuarray_re,
    r"\bTrying to preallocate (\d{1,9}) MB of GPU memory while only (\d{1,9}) MB are available\b|\bCan not enable cuDNN as there is only (\d{1,9}) MB of free GPU memory\b"
);

fn theano_gpuarray(t: &str) -> Option<Found> {
    let c = theano_gpuarray_re().captures_iter(t).last()?;
    let mib = |i: usize| super::banner::mib(&c, i);
    let mut f = Found::device(Api::Cuda);
    f.facts.requested_bytes = mib(1);
    f.facts.free_bytes = mib(2).or_else(|| mib(3));
    Some(f)
}

re!(
    tinygrad_re,
    r"\bCannot allocate (?:(\d{1,20}) bytes|memory): no memory is available\b"
);

fn tinygrad(t: &str) -> Option<Found> {
    let c = tinygrad_re().captures_iter(t).last()?;
    Some(Found::own(Facts {
        requested_bytes: c.get(1).and_then(|m| m.as_str().parse().ok()),
        ..Facts::default()
    }))
}

re!(android_hwui_re, r"\bGL error:\s{1,4}Out of memory!");

fn android_hwui(t: &str) -> Option<Found> {
    android_hwui_re()
        .is_match(t)
        .then(|| Found::device(Api::OpenGl))
}

re!(
    amdgpu_kernel_re,
    r"\bNot enough memory for command submission!|\bFailed to pin framebuffer with error -12\b"
);

fn amdgpu_kernel(t: &str) -> Option<Found> {
    amdgpu_kernel_re()
        .is_match(t)
        .then(|| Found::own(Facts::default()))
}

re!(
    kinetica_re,
    r"\[VRAM\] allocateInTier OOM: Exceeds Tier Capacity|\[VRAM\] \[Allocate\] exceeds capacity, needed: (\d{1,20}) free: (\d{1,20})"
);

fn kinetica(t: &str) -> Option<Found> {
    let mut facts = Facts::default();
    let mut any = false;
    for c in kinetica_re().captures_iter(t) {
        any = true;
        if let Some(n) = c.get(1) {
            facts.requested_bytes = n.as_str().parse().ok();
            facts.free_bytes = c.get(2).and_then(|m| m.as_str().parse().ok());
        }
    }
    any.then(|| Found::own(facts))
}

re!(
    citra_vulkan_re,
    r"\bFailed to allocate Stream buffer of preferred size (\d{1,9}) KiB\b"
);

fn citra_vulkan(t: &str) -> Option<Found> {
    let c = citra_vulkan_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::Vulkan);
    f.facts.requested_bytes = c.get(1)?.as_str().parse::<u64>().ok()?.checked_mul(1024);
    Some(f)
}

re!(
    alicevision_re,
    r"\bCould not allocate pitched device memory\.[^\n]{0,40}?(?:\n[^\n]{0,40}?)?Device (\d{1,2}) alloc (\d{1,20})[^\n]{0,40}? bytes failed in [^\n]{1,300}?, out of memory\b"
);

fn alicevision(t: &str) -> Option<Found> {
    let c = alicevision_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::Cuda);
    f.device = c.get(1)?.as_str().parse().ok();
    f.facts.requested_bytes = c.get(2)?.as_str().parse().ok();
    Some(f)
}

re!(
    guppy_re,
    r"CUDA device (\d{1,3}) reached memory limit while trying to allocate (\d{1,20}) bytes, currently at (\d{1,20}) ?/ ?(\d{1,20})"
);
re!(
    guppy_init_re,
    r"CUDA device (\d{1,3}) \(compute [\d.]{1,8}\) initialised, memory limit (\d{1,20}) ?B \((\d{1,20}) ?B free\)"
);

fn guppy(t: &str) -> Option<Found> {
    let c = guppy_re().captures_iter(t).last()?;
    let n = |c: &regex::Captures, i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    let requested = n(&c, 2).filter(|&r| r > 0)?;
    let device = n(&c, 1).and_then(|d| u32::try_from(d).ok());
    let mut f = Found::device(Api::Cuda);
    f.device = device;
    f.facts.requested_bytes = Some(requested);
    f.facts.allocated_bytes = n(&c, 3);
    f.facts.total_bytes = n(&c, 4);
    f.facts.total_is_limit = f.facts.total_bytes.is_some();
    // What was free when that device was initialised.
    f.facts.startup_free_bytes = guppy_init_re()
        .captures_iter(t)
        .filter(|i| n(i, 1).and_then(|d| u32::try_from(d).ok()) == device)
        .last()
        .and_then(|i| n(&i, 3));
    Some(f)
}

re!(
    rpcs3_re,
    r"(?s)(?:fatal error|Verification failed|Assertion Failed)[^\n]{0,300}\n?[^\n]{0,400}?in function '[^'\n]{0,40}VKGSRender::on_vram_exhausted\b"
);
re!(
    rpcs3_local_re,
    r"RSX: Detected (\d{1,9}) MB of device local memory"
);

fn rpcs3(t: &str) -> Option<Found> {
    rpcs3_re().find(t)?;
    let mut f = Found::device(Api::Vulkan);
    f.facts.total_bytes = rpcs3_local_re()
        .captures_iter(t)
        .last()
        .and_then(|c| c.get(1)?.as_str().parse::<u64>().ok())
        .map(|mb| mb << 20);
    Some(f)
}

// RELION's advice for that error (`src/error.h`, ERRCUDACAOOM), printed where the allocator's
// figures may be cut from the paste: "You ran out of memory on the GPU(s).\n\nEach MPI-rank
// running on a GPU increases the use of GPU-memory. …"
re!(
    relion_advice_re,
    r"You ran out of memory on the GPU\(s\)\.\s+Each MPI-rank running on a GPU increases the use of GPU-memory"
);

fn relion(t: &str) -> Option<Found> {
    let Some(c) = relion_re().captures(t) else {
        // The same advice in its HIP and SYCL builds: the API by the source path it names.
        let api = if t.contains("/acc/hip/") {
            Api::Hip
        } else if t.contains("/acc/sycl/") {
            Api::LevelZero
        } else {
            Api::Cuda
        };
        return relion_advice_re().is_match(t).then(|| Found::device(api));
    };
    let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    let mut f = Found::device(Api::Cuda);
    f.facts.requested_bytes = n(1);
    f.facts.free_bytes = n(3);
    // The block, RELION's own limit, printed just after (the next error's, if any, is further).
    let after = &t[c.get(0)?.end()..];
    let next = after.find("CudaCustomAllocator").unwrap_or(after.len());
    if let Some(b) = relion_block_re().captures(&after[..next]) {
        f.facts.total_bytes = b.get(1).and_then(|m| m.as_str().parse().ok());
        f.facts.total_is_limit = f.facts.total_bytes.is_some();
    }
    Some(f)
}

re!(
    kokkos_re,
    r#"Kokkos failed to allocate memory for label "[^"\n]{0,200}"\.\s{1,3}Allocation using MemorySpace named "(\w{1,40})"?\s{0,2}failed with the following error:\s{1,3}Allocation of size (\d+(?:\.\d+)?) ?([KMGT]?)B? failed"#
);

// The status the allocation returned, which Kokkos adds where it has one
// (`Kokkos_CudaSpace.cpp`: "(The allocation mechanism was cudaMalloc().  The Cuda allocation
// returned the error code "cudaErrorMemoryAllocation".)"), and its failure modes other than
// memory (`impl/Kokkos_Error.cpp`: "because of an unknown error", "improperly aligned", "invalid
// allocation size").
re!(kokkos_code_re, r#"returned the error code "(\w{1,60})""#);
re!(
    kokkos_not_memory_re,
    r"failed because of an unknown error|improperly aligned|invalid allocation size"
);

fn kokkos(t: &str) -> Option<Found> {
    let c = kokkos_re().captures(t)?;
    // Another status than running out (cudaErrorNotSupported on a MIG slice,
    // kokkos/kokkos#6865) is no OOM, whatever the words around it.
    let after = super::clean::head(&t[c.get(0)?.end()..], 400);
    match kokkos_code_re().captures(after) {
        Some(code) if !is_gpu_memory_status(code.get(1)?.as_str()) => return None,
        Some(_) => {}
        None if kokkos_not_memory_re().is_match(after) => return None,
        None => {}
    }
    let space = c.get(1)?.as_str();
    let (api, memory) = match space {
        "Cuda" | "CudaUVM" => (Some(Api::Cuda), MemoryKind::Device),
        "HIP" | "HIPManaged" => (Some(Api::Hip), MemoryKind::Device),
        "SYCLDeviceUSM" | "SYCLSharedUSM" => (None, MemoryKind::Device),
        "CudaHostPinned" | "HIPHostPinned" => (None, MemoryKind::PinnedHost),
        _ if space.starts_with("Host") || space == "SYCLHostUSM" => (None, MemoryKind::Host),
        _ => return None,
    };
    let v: f64 = c.get(2)?.as_str().parse().ok()?;
    let scale = match c.get(3).map(|m| m.as_str()) {
        Some("K") => 1u64 << 10,
        Some("M") => 1 << 20,
        Some("G") => 1 << 30,
        Some("T") => 1 << 40,
        _ => 1,
    };
    let b = v * scale as f64;
    let mut f = Found::device(Api::Cuda);
    f.api = api;
    f.memory = memory;
    f.facts.requested_bytes = (b.is_finite() && b < u64::MAX as f64).then(|| b.round() as u64);
    Some(f)
}

// hashcat's wrappers print "<call>(): <status>". An allocation's own call fails with any of its
// API's memory statuses; OpenCL implementations (NVIDIA's, AMD's) allocate a buffer lazily, at
// the first kernel that uses it, so CL_MEM_OBJECT_ALLOCATION_FAILURE from any call
// (clEnqueueNDRangeKernel) is a buffer that did not fit, while CL_OUT_OF_RESOURCES from a
// launch is not read as memory.
re!(
    hashcat_re,
    r"\b(cuMemAlloc|hipMemAlloc|hipMalloc|clCreateBuffer)\(\): (out of memory|CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory|CL_MEM_OBJECT_ALLOCATION_FAILURE|CL_OUT_OF_RESOURCES|CL_OUT_OF_HOST_MEMORY)\b|\b(cl[A-Z][A-Za-z]{2,40})\(\): CL_MEM_OBJECT_ALLOCATION_FAILURE\b"
);
// hashcat's own words near its failures (the banner may be far above): its start-up lines,
// its device list ("* Device #2: …"), its benchmark's "Hashmode:" and "Speed.#1".
re!(
    hashcat_words_re,
    r"(?i:hashcat)|Initializing backend runtime for device|Initializing device kernels and memory|\bHashmode: \d|\bSpeed\.#\d|\* Device #\d{1,3}: "
);

// hashcat's own check before it allocates (`src/backend.c`): the buffers an attack needs
// against what the device may allocate, "* Device #N: Not enough allocatable device memory for
// this attack." (6.x also "… or free host memory for mapping."); 3.x (`src/opencl.c`): "-
// Device #N: Device does not provide enough allocatable device-memory to handle this attack".
re!(
    hashcat_check_re,
    r"\bNot enough allocatable device memory (?:or free host memory for mapping )?for this attack\b|\bDevice does not provide enough allocatable device-memory to handle this attack\b"
);

fn hashcat(t: &str) -> Option<Found> {
    if hashcat_check_re().is_match(t) {
        return Some(Found::own(Facts::default()));
    }
    let c = hashcat_re().captures(t)?;
    if !hashcat_words_re().is_match(t) {
        return None;
    }
    if c.get(3).is_some() {
        return Some(Found::device(Api::OpenCl));
    }
    let api = match c.get(1)?.as_str() {
        "cuMemAlloc" => Api::Cuda,
        "clCreateBuffer" => Api::OpenCl,
        _ => Api::Hip,
    };
    let mut f = Found::device(api);
    if c.get(2)?.as_str() == "CL_OUT_OF_HOST_MEMORY" {
        f.memory = MemoryKind::Host;
    }
    Some(f)
}

re!(ncnn_re, r"\bvkAllocateMemory failed (-[12])\b");
re!(
    ncnn_words_re,
    r"(?i)ncnn|real-?esrgan|waifu2x|real-?cugan|realsr|\brife\b|\bsrmd\b"
);

fn ncnn(t: &str) -> Option<Found> {
    let c = ncnn_re().captures(t)?;
    if !ncnn_words_re().is_match(t) {
        return None;
    }
    let mut f = Found::device(Api::Vulkan);
    if c.get(1)?.as_str() == "-1" {
        f.memory = MemoryKind::Host;
    }
    Some(f)
}

re!(
    tcnn_re,
    r"Could not allocate memory: [^\n]{0,300}?cudaMalloc\(&rawptr, n_bytes ?\+ ?DEBUG_GUARD_SIZE ?\* ?2\) failed with error out of memory"
);

re!(
    physx_re,
    r"PxgCudaDeviceMemoryAllocator fail(?:ed)? to allocate memory (\d{1,20}) bytes!* ?Result ?= ?(\d{1,4})"
);

fn physx(t: &str) -> Option<Found> {
    let c = physx_re().captures(t)?;
    // Another CUresult than 2 is another error.
    (c.get(2)?.as_str() == "2").then_some(())?;
    let mut f = Found::device(Api::Cuda);
    f.facts.requested_bytes = c.get(1)?.as_str().parse().ok();
    Some(f)
}

fn tiny_cuda_nn(t: &str) -> Option<Found> {
    tcnn_re().is_match(t).then(|| Found::device(Api::Cuda))
}

re!(
    matlab_re,
    r"Out of memory on device\. To view more detail about available memory on the GPU, use ?'gpuDevice\(\)'"
);

re!(
    mesa_winsys_re,
    r"(?s)\b(?:radeon|amdgpu): +Failed to allocate a buffer:.{0,80}?size +: +(\d+) bytes.{0,160}?domains +: +(\d+)"
);

fn mesa_winsys(t: &str) -> Option<Found> {
    let c = mesa_winsys_re().captures(t)?;
    let domains: u32 = c.get(2)?.as_str().parse().ok()?;
    // VRAM in the domains is the device's memory; GTT alone is system memory the GPU maps
    // (pinned); the CPU's domain alone is the host's.
    let memory = if domains & 4 != 0 {
        MemoryKind::Device
    } else if domains & 2 != 0 {
        MemoryKind::PinnedHost
    } else {
        MemoryKind::Host
    };
    let facts = Facts {
        requested_bytes: c.get(1)?.as_str().parse().ok(),
        ..Facts::default()
    };
    Some(Found {
        api: None,
        facts,
        device: None,
        memory,
    })
}

// On one line in parentheses, or the size on the next line (Sober's crash report).
re!(
    roblox_re,
    r"\bRBXCRASH: OutOfMemoryGraphics\b|\bOutOfMemoryGraphics \(Failed to allocate memory\."
);
re!(
    roblox_size_re,
    r"\bOutOfMemoryGraphics\b[ (]{0,3}\s{0,4}Failed to allocate memory\. size = (\d{1,20})"
);

fn roblox(t: &str) -> Option<Found> {
    roblox_re().find(t)?;
    Some(Found::own(Facts {
        requested_bytes: roblox_size_re()
            .captures(t)
            .and_then(|c| c.get(1)?.as_str().parse().ok()),
        ..Facts::default()
    }))
}

re!(
    vkd3d_proton_re,
    r"\bvkd3d_allocate_device_memory: Memory allocation failed, falling back to system memory\b"
);

fn vkd3d_proton(t: &str) -> Option<Found> {
    vkd3d_proton_re()
        .is_match(t)
        .then(|| Found::device(Api::Vulkan))
}

re!(
    amrex_re,
    r"\bOut of gpu memory\. Free: (\d{1,20}) Asked: (\d{1,20})"
);

// From 2025 (`Arena::out_of_memory_abort`): "Arena out of memory!!!", "Bytes to allocate: N
// (M MiB)", "Memory type: T", "MPI rank: R", "Error: E". T is "GPU device memory", "GPU
// managed memory", "GPU memory" (`amrex.abort_on_out_of_gpu_memory`, E "Free memory: F"),
// "CPU pinned memory" or "CPU memory".
re!(
    amrex_arena_re,
    r"\bArena out of memory!!!\s{1,8}Bytes to allocate: (\d{1,20})(?: \(\d{1,20} MiB\))?\s{1,8}Memory type: (GPU device memory|GPU managed memory|GPU memory|CPU pinned memory|CPU memory)\b(?:\s{1,8}MPI rank: \d{1,9})?(?:\s{1,8}Error: Free memory: (\d{1,20}))?"
);

fn amrex(t: &str) -> Option<Found> {
    if let Some(c) = amrex_arena_re().captures_iter(t).last() {
        let mut f = Found::own(Facts {
            requested_bytes: c.get(1)?.as_str().parse().ok(),
            free_bytes: c.get(3).and_then(|m| m.as_str().parse().ok()),
            ..Facts::default()
        });
        f.memory = match c.get(2)?.as_str() {
            "CPU pinned memory" => MemoryKind::PinnedHost,
            "CPU memory" => MemoryKind::Host,
            _ => MemoryKind::Device,
        };
        return Some(f);
    }
    let c = amrex_re().captures(t)?;
    Some(Found::own(Facts {
        free_bytes: c.get(1)?.as_str().parse().ok(),
        requested_bytes: c.get(2)?.as_str().parse().ok(),
        ..Facts::default()
    }))
}

re!(
    dynet_free_re,
    r"\bCUDA is unable to allocate enough GPU memory on GPU:(\d{1,3}), at current stage only (\d{1,9}) MB out of (\d{1,9}) MB is free"
);
re!(
    dynet_failure_re,
    r"CUDA failure in cudaMalloc\(&ptr, n\)\s{1,4}out of memory\b"
);
re!(
    dynet_words_re,
    r"\[dynet\]|\bdynet\b|Memory pool info for each devices"
);

fn dynet(t: &str) -> Option<Found> {
    let free = dynet_free_re().captures_iter(t).last();
    if free.is_none() && !(dynet_failure_re().is_match(t) && dynet_words_re().is_match(t)) {
        return None;
    }
    let mut f = Found::device(Api::Cuda);
    if let Some(c) = &free {
        f.device = c.get(1).and_then(|m| m.as_str().parse().ok());
        f.facts.free_bytes = super::banner::mib(c, 2);
        f.facts.total_bytes = super::banner::mib(c, 3);
    }
    Some(f)
}

re!(
    jittor_re,
    r"\bUnable to alloc cuda device memory, use unify memory instead\b"
);
re!(
    jittor_total_re,
    r"\btotal_device_ram: {0,8}(\d{1,9}(?:\.\d{1,6})? ?[KMGT]?B)\b"
);
re!(
    jittor_used_re,
    r"\bname: \w{1,20} is_device: 1 used: {0,8}(\d{1,9}(?:\.\d{1,6})? ?[KMGT]?B)\("
);
re!(
    jittor_gpu_re,
    r"\bcpu&gpu: {0,8}\d{1,9}(?:\.\d{1,6})? ?[KMGT]?B gpu: {0,8}(\d{1,9}(?:\.\d{1,6})? ?[KMGT]?B)\b"
);
re!(
    jittor_free_re,
    r"\bfree: cpu\( {0,8}[^)\n]{1,20}\) gpu\( {0,8}(\d{1,9}(?:\.\d{1,6})? ?[KMGT]?B)\)"
);

re!(
    jittor_fatal_re,
    r"\bUnable to alloc cuda device memory for size (\d{1,20})\b"
);

fn jittor_fatal(t: &str) -> Option<Found> {
    let c = jittor_fatal_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::Cuda);
    f.facts.requested_bytes = c.get(1).and_then(|m| m.as_str().parse().ok());
    Some(f)
}

fn jittor(t: &str) -> Option<Found> {
    let at = jittor_re().find_iter(t).last()?.end();
    // Its report after the warning.
    let after = &t[at..];
    let size = |re: &super::lazy::LazyRegex| {
        re.captures(after)
            .and_then(|c| crate::units::parse_size(c.get(1)?.as_str()))
    };
    let mut f = Found::device(Api::Cuda);
    f.facts.total_bytes = size(jittor_total_re());
    f.facts.free_bytes = size(jittor_free_re());
    f.facts.reserved_bytes = size(jittor_gpu_re());
    // Its device allocators' used memory, added up (derived).
    let used: Option<u64> = jittor_used_re()
        .captures_iter(after)
        .map(|c| crate::units::parse_size(c.get(1)?.as_str()))
        .try_fold(0u64, |a, b| a.checked_add(b?));
    if let Some(used) = used.filter(|_| jittor_used_re().is_match(after)) {
        f.facts.allocated_bytes = Some(used);
        f.facts.derived.push("allocated_bytes");
    }
    Some(f)
}

re!(
    bladebit_re,
    r"\bCUDA error: 2 \(0x2 ?\) cudaErrorMemoryAllocation\b"
);
re!(
    bladebit_words_re,
    r"\[Bladebit CUDA Plotter\]|\bTotal Host RAM required\s{0,30}: \d"
);
re!(
    bladebit_gpu_re,
    r"\bGPU RAM required\s{0,30}: (\d{1,20})\s{1,30}bytes"
);
re!(
    bladebit_free_re,
    r"\bMemory:\s{1,30}Total\s{0,30}: \d{1,6}(?:\.\d{1,3})? GB\s{1,30}Free\s{0,30}: (\d{1,6}(?:\.\d{1,3})?) GB"
);
re!(bladebit_device_re, r"\bSelected cuda device (\d{1,3}) :");

fn bladebit(t: &str) -> Option<Found> {
    if !(bladebit_re().is_match(t) && bladebit_words_re().is_match(t)) {
        return None;
    }
    let mut f = Found::device(Api::Cuda);
    f.device = bladebit_device_re()
        .captures(t)
        .and_then(|c| c.get(1)?.as_str().parse().ok());
    let gpu: Option<u64> = bladebit_gpu_re()
        .captures_iter(t)
        .last()
        .and_then(|c| c.get(1)?.as_str().parse().ok());
    // Its "GB" are 2^30 (an RTX 3090's 24 GiB prints "Total : 24.00 GB"); rounded to two
    // decimals, so a need within 1% of the free figure is not decided.
    let free = bladebit_free_re()
        .captures_iter(t)
        .last()
        .and_then(|c| crate::units::parse_size(&format!("{} GiB", c.get(1)?.as_str())));
    if let (Some(gpu), Some(free)) = (gpu, free) {
        if gpu.saturating_mul(100) < free.saturating_mul(99) {
            f.memory = MemoryKind::PinnedHost;
        }
    }
    Some(f)
}

re!(
    marian_failure_re,
    r"\bCUDA error 2 '[^'\n]{0,60}' - [^\n]{0,300}?(?:tensors/gpu/device\.cu|marian)[^\n]{0,200}?cudaMalloc"
);
re!(
    marian_reserve_re,
    r"\[memory\] Extending reserved space to (\d{1,9}) MB \(device gpu(\d{1,3})\)|\[memory\] Reserving (?:\d{1,12}) (?:MB|B), device gpu(\d{1,3})"
);

fn marian(t: &str) -> Option<Found> {
    let at = marian_failure_re().find(t)?.start();
    let mut f = Found::device(Api::Cuda);
    // The last reserve logged before the failure: the size it asked for and the device.
    if let Some(c) = marian_reserve_re().captures_iter(&t[..at]).last() {
        f.facts.requested_bytes = super::banner::mib(&c, 1);
        f.device = c.get(2).or(c.get(3)).and_then(|m| m.as_str().parse().ok());
    }
    Some(f)
}

re!(
    tt_metal_re,
    r"\bNot enough space to allocate (\d{1,20}) B (\w{1,20}) buffer across (\d{1,6}) banks,?\s{1,8}where each bank needs to store (\d{1,20})(?: B)?(?:,?\s{1,8}but bank size is (?:only )?(\d{1,20}) B(?:\s{1,8}\(allocated: (\d{1,20}) B, free: (\d{1,20}) B, largest free block: (\d{1,20}) B\))?)?"
);

// Some tt-metal builds threw the message with its format unfilled and the values after it, one
// a line ("Not enough space to allocate {} B {} buffer across {} banks, where each bank needs
// to store {} B" then "148897792", "DRAM", "8", "18612224"): the request, the banks.
re!(
    tt_metal_unfilled_re,
    r"\bNot enough space to allocate \{\} B \{\} buffer across \{\} banks, where each bank needs to store \{\} B\s{1,16}(\d{1,20})\s{1,16}\w{1,20}\s{1,16}(\d{1,6})\s"
);

fn tt_metal(t: &str) -> Option<Found> {
    if let Some(c) = tt_metal_unfilled_re().captures(t) {
        c.get(2)?.as_str().parse::<u64>().ok().filter(|&b| b > 0)?;
        return Some(Found::own(Facts {
            requested_bytes: c.get(1)?.as_str().parse().ok(),
            ..Facts::default()
        }));
    }
    let c = tt_metal_re().captures(t)?;
    let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    let banks = n(3).filter(|&b| b > 0)?;
    // Each bank's figure over all banks (lockstep allocation): derived, exact.
    let all = |i: usize| n(i).and_then(|v| v.checked_mul(banks));
    let mut facts = Facts {
        requested_bytes: n(1),
        total_bytes: all(5),
        allocated_bytes: all(6),
        free_bytes: all(7),
        ..Facts::default()
    };
    for (field, v) in [
        ("total_bytes", facts.total_bytes),
        ("allocated_bytes", facts.allocated_bytes),
        ("free_bytes", facts.free_bytes),
    ] {
        if v.is_some() {
            facts.derived.push(field);
        }
    }
    Some(Found::own(facts))
}

re!(
    drjit_re,
    r"\b(?:jit_malloc\(\): out of memory! Could not allocate (\d{1,20}) bytes of ([\w-]{1,24}) memory|(jit_malloc)\(\): out of memory!|cuda_malloc\(\):\s?out of memory\b)"
);

fn drjit(t: &str) -> Option<Found> {
    let c = drjit_re().captures(t)?;
    // Its allocation types (`alloc_type_name`); enoki-jit's bare message is its host path.
    let memory = match c.get(2).map(|m| m.as_str()) {
        Some("host" | "host-async") => MemoryKind::Host,
        Some("host-pinned") => MemoryKind::PinnedHost,
        Some(_) => MemoryKind::Device,
        None if c.get(3).is_some() => MemoryKind::Host,
        None => MemoryKind::Device,
    };
    Some(Found {
        memory,
        ..Found::own(Facts {
            requested_bytes: c.get(1).and_then(|m| m.as_str().parse().ok()),
            ..Facts::default()
        })
    })
}

re!(
    cudajl_device_malloc_re,
    r"\bOut of dynamic GPU memory \(trying to allocate (\d{1,20}) bytes\)"
);

fn cudajl_device_malloc(t: &str) -> Option<Found> {
    let c = cudajl_device_malloc_re().captures(t)?;
    let mut f = Found::device(Api::Cuda);
    f.facts.requested_bytes = c.get(1)?.as_str().parse().ok();
    Some(f)
}

re!(
    zink_re,
    r"\bzink: couldn't allocate memory: heap=\d{1,2} size=(\d{1,20})"
);

fn zink(t: &str) -> Option<Found> {
    let c = zink_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::Vulkan);
    f.facts.requested_bytes = c.get(1)?.as_str().parse().ok();
    Some(f)
}

re!(
    sgminer_max_re,
    r"\bMaximum buffer memory device (\d{1,2}) supports says (\d{1,20})"
);
re!(
    sgminer_settings_re,
    r"\bYour (?:scrypt )?settings come to (\d{1,20})"
);
re!(
    sgminer_fail_re,
    r"\bError (-\d{1,3}): clCreateBuffer \(padbuffer8\)"
);

fn sgminer(t: &str) -> Option<Found> {
    let fail = sgminer_fail_re().captures(t)?;
    // Another status than the buffer's size or the memory is another error.
    matches!(fail.get(1)?.as_str(), "-61" | "-4").then_some(())?;
    let mut f = Found::device(Api::OpenCl);
    if let Some(c) = sgminer_max_re().captures_iter(t).last() {
        f.device = c.get(1).and_then(|m| m.as_str().parse().ok());
        f.facts.max_alloc_bytes = c.get(2).and_then(|m| m.as_str().parse().ok());
    }
    f.facts.requested_bytes = sgminer_settings_re()
        .captures_iter(t)
        .last()
        .and_then(|c| c.get(1)?.as_str().parse().ok());
    Some(f)
}

re!(
    nvidia_opengl_re,
    r"\bAn application has requested more GPU memory than is\s{1,8}available in the system\b"
);

fn nvidia_opengl(t: &str) -> Option<Found> {
    nvidia_opengl_re()
        .is_match(t)
        .then(|| Found::device(Api::OpenGl))
}

re!(bitcrack_re, r"\[Info\] Error: out of memory\b");
re!(
    bitcrack_words_re,
    r"(?i)\b(?:cu|cl)?BitCrack\b|\bstarting points\b"
);

fn bitcrack(t: &str) -> Option<Found> {
    (bitcrack_re().is_match(t) && bitcrack_words_re().is_match(t)).then_some(())?;
    Some(if t.contains("clBitCrack") {
        Found::device(Api::OpenCl)
    } else {
        Found::device(Api::Cuda)
    })
}

re!(
    legate_re,
    r"\bFailed to allocate (\d{1,20}) bytes on memory \w{1,40} \(of kind (\w{1,20})\)[^\n]{0,600}?\bLegate is reserving (\d{1,20}) of the available (\d{1,20}) bytes"
);

fn legate(t: &str) -> Option<Found> {
    let c = legate_re().captures(t)?;
    let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    let memory = match c.get(2)?.as_str() {
        "GPU_FB_MEM" | "GPU_MANAGED_MEM" | "GPU_DYNAMIC_MEM" => MemoryKind::Device,
        "Z_COPY_MEM" => MemoryKind::PinnedHost,
        _ => MemoryKind::Host,
    };
    Some(Found {
        api: None,
        facts: Facts {
            requested_bytes: n(1),
            allocated_bytes: n(3),
            // Legate's pool, not the device: a cap on what its stores may take. What is free in
            // it is not derived (the request failed with more than it unreserved).
            allowed_bytes: n(4),
            ..Facts::default()
        },
        device: None,
        memory,
    })
}

re!(
    colmap_re,
    r"Feature matching failed\. This is probably caused by insufficient GPU memory"
);

re!(
    siftgpu_re,
    r"\b[A-Z][A-Za-z_:]{2,60}:\s{1,8}out of memory(?:\(2\))?(?:\s|$)"
);
re!(
    siftgpu_frames_re,
    r"\bSift(?:MatchCU|MatchGPU|GPU|MatchCUDA)\b|\bProgramCU::|\bcolmap::\w*Sift"
);

fn siftgpu(t: &str) -> Option<Found> {
    (siftgpu_re().is_match(t) && siftgpu_frames_re().is_match(t)).then(|| Found::device(Api::Cuda))
}

fn colmap(t: &str) -> Option<Found> {
    colmap_re()
        .is_match(t)
        .then(|| Found::own(Facts::default()))
}

re!(
    darktable_re,
    r"\[(?:opencl_[a-z_]{1,40}|[a-z ]{1,40} cl)\] (?:failed:|couldn't enqueue kernel!) ?(-4)\b"
);

fn darktable(t: &str) -> Option<Found> {
    darktable_re()
        .is_match(t)
        .then(|| Found::device(Api::OpenCl))
}

re!(
    adreno_re,
    r"\bsharedmem_gpumem_alloc: mmap failed errno 12\b|\bGSL MEM ERROR: kgsl_sharedmem_alloc ioctl failed\b|\bioctl_kgsl_sharedmem_alloc: FATAL ERROR\b|\(IOCTL_KGSL_GPUOBJ_ALLOC\) failed: errno 12\b|\bkgsl_sharedmem_alloc\(\) failed!"
);
// Newer Adreno drivers (`gsl_memory_alloc_pure`): "ERROR: kgsl_sharedmem_alloc() failed!
// Allocation size: (9280 KB); Flags: (0x100600)", after the kernel's IOCTL_KGSL_GPUOBJ_ALLOC
// answered errno 12 (ENOMEM); the size in KiB.
re!(
    adreno_size_re,
    r"\bkgsl_sharedmem_alloc\(\) failed! Allocation size: \((\d{1,12}) KB\)"
);

fn adreno(t: &str) -> Option<Found> {
    if !adreno_re().is_match(t) {
        return None;
    }
    let mut f = Found::own(Facts::default());
    f.facts.requested_bytes = adreno_size_re()
        .captures_iter(t)
        .last()
        .and_then(|c| c.get(1)?.as_str().parse::<u64>().ok())
        .and_then(|k| k.checked_mul(1024));
    Some(f)
}

// Arm's Mali GLES driver as MediaTek's builds log it on Android ("E <app>: == MALI DEBUG ===BAD
// ALLOC from gles_texture_egl_image_get_2d_template err is 0"): the driver's allocation failed
// in the named function, here while it wrapped an EGLImage (a buffer shared with a camera, a
// video decoder or a WebView) as a texture. Closed source; read by its words alone.
re!(
    mali_bad_alloc_re,
    r"== ?MALI DEBUG ?=== ?BAD ALLOC from (gles_\w{1,80})"
);

fn mali_bad_alloc(t: &str) -> Option<Found> {
    mali_bad_alloc_re()
        .is_match(t)
        .then(|| Found::device(Api::OpenGl))
}

re!(
    dag_miner_re,
    format!(
        r"(?i)\bdoes not have enough free memory to hold the DAG(?: for epoch \d+)?\.?(?: Required: {SIZE}, free: {SIZE})?|\bGPU ?#?(\d{{1,2}}):? error when allocating memory (?:or building|for) (?:the )?DAG|\bcannot allocate big buffer for DAG\b|\bGPU ?#?(\d{{1,2}}):? insufficient memory for DAG\b|\bOnly {SIZE} available\.? Mining suspended on device|\bcould not allocate memory on GPU (\d{{1,2}}) to create DAG\. Current epoch requires {SIZE} memory for DAG but there is only {SIZE} allowed to allocate in single buffer|\bGPU (\d{{1,2}}) ERROR - insufficient useable buffer size \d{{1,20}} vs \d{{1,20}}|\bGPU\d{{1,2}} initMiner error: out of memory|\bGPU (\d{{1,2}}) ERROR - failed to allocate (?:\w{{1,12}} )?DAG buffer\b|\bGPU (\d{{1,2}}): Allocation of DAG failed with error\b|\bCreating DAG buffer failed: clCreateBuffer: CL_(?:INVALID_BUFFER_SIZE|MEM_OBJECT_ALLOCATION_FAILURE|OUT_OF_RESOURCES)\b|\bGPU can't allocate the DAG in a single chunk\b|\bGPU(\d{{1,2}}): Allocating buffers failed with: clCreateBuffer \(-(?:4|5|6|61)\)"
    )
);
// PhoenixMiner (closed source; its log as printed): "GPU1: Allocating DAG (3.33) GB; good for epoch
// up to #298", "CUDA error in CudaProgram.cu:373 : out of memory (2)", "GPU1: CUDA memory: 4.00
// GB total, 3.30 GB free", "GPU1 initMiner error: out of memory". Its GPUs are counted from 1,
// not CUDA's index: no device is read.
// On AMD's OpenCL: "GPU1: Free VRAM: 3.951 GB; used: 0.049 GB", "GPU1: Allocating DAG for epoch
// #394 (3.93) GB", "GPU1: Allocating buffers failed with: clCreateBuffer (-61)." (-61,
// CL_INVALID_BUFFER_SIZE: larger than one buffer may be).
re!(
    phoenix_dag_re,
    r"\bAllocating DAG \((\d{1,4}(?:\.\d{1,3})?)\) GB\b"
);
re!(
    phoenix_cl_dag_re,
    r"\bGPU(\d{1,2}): Allocating DAG for epoch #\d{1,7} \((\d{1,4}(?:\.\d{1,3})?)\) GB\b"
);
re!(
    phoenix_vram_re,
    r"\bGPU(\d{1,2}): Free VRAM: (\d{1,4}(?:\.\d{1,3})?) GB; used: \d{1,4}(?:\.\d{1,3})? GB\b"
);
// ethminer's OpenCL miner (`libethash-cl/CLMiner.cpp`): "Creating DAG buffer, size N" (bytes),
// then "Creating DAG buffer failed: clCreateBuffer: CL_INVALID_BUFFER_SIZE (-61)" where the
// driver refuses one buffer that large (CL_DEVICE_MAX_MEM_ALLOC_SIZE). lolMiner's "GPU N:
// Allocation of DAG failed with error: Memory object allocation failure" (its device index;
// the last of a rig is read); Alethone's "GPU can't allocate the DAG in a single chunk".
re!(cl_dag_size_re, r"\bCreating DAG buffer, size (\d{1,20})\b");
re!(
    phoenix_memory_re,
    format!(r"\bCUDA memory: {SIZE} total, {SIZE} free\b")
);
re!(dag_device_re, r"\bGPU ?#?(\d{1,2})\b|\bcuda-(\d{1,2})\b");
// nanominer's check on AMD's OpenCL ("could not allocate memory on GPU 0 to create DAG. Current
// epoch requires 3071 MB memory for DAG but there is only 2079 MB allowed to allocate in
// single buffer. Try setting GPU_SINGLE_ALLOC_PERCENT environment variable to 100."): the DAG
// against the largest single buffer the driver allows. TeamRedMiner's "GPU 3 ERROR -
// insufficient useable buffer size A vs B" (which is which is not said: no figure read), and its
// "GPU 1 ERROR - failed to allocate ethash DAG buffer" (one a GPU: the last is read).
// ethminer and its forks (kawpowminer, `libethash-cuda/CUDAMiner.cpp`, `initEpoch`): "Epoch N
// requires X GB memory." then, where the device has less, "Only Y GB available. Mining
// suspended on device …" (`dev::getFormattedMemory`, powers of 1024); its devices are
// "cuda-N", CUDA's index.
re!(
    dag_epoch_re,
    format!(r"\bEpoch \d{{1,7}} requires {SIZE} memory\b")
);
// lolMiner's light cache and DAG log (1.1x): "Done (2645 ms), size of new DAG: 4072 MByte"
// (MiB), the buffer the card must then hold.
re!(dag_size_re, r"\bsize of new DAG: (\d{1,7}) MByte\b");

// SRBMiner-Multi's check before it builds a DAG: "GPU [BUS:04] not enough free memory [need 1543
// MB : have 1212 MB]" (MiB; the card named by its bus, not an index). NBMiner's "Device 0: out
// of memory" after "Device 0: DAG - Building, EPOCH 385" (its device index, CUDA's or
// OpenCL's order): the DAG's buffer did not fit.
re!(
    srbminer_re,
    r"\bnot enough free memory \[need (\d{1,7}) MB : have (\d{1,7}) MB\]"
);
re!(nbminer_oom_re, r"\bDevice (\d{1,2}): out of memory\b");
re!(nbminer_dag_re, r"\bDevice (\d{1,2}): DAG - Building\b");

// T-Rex (closed source; its log as users paste it): "Can't find nonce with device [ID=0, GPU
// #0], Epoch 481 requires 4.76 GB of memory, but device has 3.81 GB..", the epoch's DAG against
// what the card offers (not said whether its total or its free memory: not read), and "not
// enough GPU memory to place DAG".
re!(
    trex_dag_re,
    format!(
        r"\bdevice \[ID=(\d{{1,2}}), GPU #\d{{1,2}}\], Epoch \d{{1,6}} requires {} of memory, but device has\b",
        super::known::SIZE
    )
);
re!(trex_place_re, r"(?i)\bnot enough GPU memory to place DAG\b");

fn dag_miner(t: &str) -> Option<Found> {
    if let Some(c) = trex_dag_re().captures_iter(t).last() {
        let mut f = Found::own(Facts {
            requested_bytes: super::known::sz(&c, 2),
            ..Facts::default()
        });
        f.device = c.get(1).and_then(|m| m.as_str().parse().ok());
        return Some(f);
    }
    if trex_place_re().is_match(t) {
        return Some(Found::own(Facts::default()));
    }
    if let Some(c) = srbminer_re().captures_iter(t).last() {
        return Some(Found::own(Facts {
            requested_bytes: super::banner::mib(&c, 1),
            free_bytes: super::banner::mib(&c, 2),
            ..Facts::default()
        }));
    }
    if let Some(c) = nbminer_oom_re().captures_iter(t).last() {
        let device = c.get(1)?.as_str();
        if nbminer_dag_re()
            .captures_iter(t)
            .any(|d| d.get(1).map(|m| m.as_str()) == Some(device))
        {
            let mut f = Found::own(Facts::default());
            f.device = device.parse().ok();
            return Some(f);
        }
    }
    // The last failure: a rig's GPUs fail one after another.
    let c = dag_miner_re().captures_iter(t).last()?;
    let mut f = Found::own(Facts {
        requested_bytes: super::known::sz(&c, 1),
        free_bytes: super::known::sz(&c, 2),
        ..Facts::default()
    });
    f.device = [3, 4, 6, 9, 10, 11]
        .into_iter()
        .find_map(|i| c.get(i))
        .and_then(|m| m.as_str().parse().ok());
    if let Some(need) = super::known::sz(&c, 7) {
        f.facts.requested_bytes = Some(need);
        f.facts.max_alloc_bytes = super::known::sz(&c, 8);
    }
    if let Some(free) = super::known::sz(&c, 5) {
        f.facts.free_bytes = Some(free);
        f.facts.requested_bytes = dag_epoch_re()
            .captures_iter(t)
            .last()
            .and_then(|c| super::known::sz(&c, 1));
    }
    if let Some(gpu) = c.get(12) {
        // PhoenixMiner on OpenCL: that GPU's DAG and free VRAM, as it logged them.
        let of_gpu = |re: &LazyRegex| {
            re.captures_iter(t)
                .filter(|d| d.get(1).map(|m| m.as_str()) == Some(gpu.as_str()))
                .last()
                .and_then(|d| crate::units::parse_size(&format!("{} GiB", d.get(2)?.as_str())))
        };
        f.facts.requested_bytes = of_gpu(phoenix_cl_dag_re());
        f.facts.free_bytes = of_gpu(phoenix_vram_re());
        f.api = Some(Api::OpenCl);
        return Some(f);
    }
    if c.get(0)?.as_str().starts_with("Creating DAG buffer failed") {
        f.facts.requested_bytes = cl_dag_size_re()
            .captures_iter(t)
            .last()
            .and_then(|c| c.get(1)?.as_str().parse().ok());
        f.api = Some(Api::OpenCl);
    }
    if c.get(0)?.as_str().contains("initMiner") {
        f.facts.requested_bytes = phoenix_dag_re()
            .captures_iter(t)
            .last()
            .and_then(|c| crate::units::parse_size(&format!("{} GiB", c.get(1)?.as_str())));
        if let Some(m) = phoenix_memory_re().captures_iter(t).last() {
            f.facts.total_bytes = super::known::sz(&m, 1);
            f.facts.free_bytes = super::known::sz(&m, 2);
        }
        f.api = Some(Api::Cuda);
        return Some(f);
    }
    if f.facts.requested_bytes.is_none() {
        f.facts.requested_bytes = dag_size_re()
            .captures_iter(t)
            .last()
            .and_then(|c| c.get(1)?.as_str().parse::<u64>().ok())
            .and_then(|m| m.checked_mul(1 << 20));
    }
    // The device the miner names beside the failure ("[ID=0, GPU #0]", "GPU 0 failed").
    if f.device.is_none() {
        let d = agreed(dag_device_re(), t, |c| {
            c.get(1).or_else(|| c.get(2))?.as_str().parse().ok()
        });
        f.device = d.and_then(|d| u32::try_from(d).ok());
    }
    if t.contains("CUDA error") {
        f.api = Some(Api::Cuda);
    }
    Some(f)
}

re!(lammps_gpu_re, r"Insufficient memory on accelerator\b");

fn lammps_gpu(t: &str) -> Option<Found> {
    lammps_gpu_re()
        .is_match(t)
        .then(|| Found::own(Facts::default()))
}

re!(
    theano_re,
    r"Error allocating (\d+) bytes of device memory \([^)\n]{0,80}\)\.?(?: Driver report (\d+) bytes free and (\d+) bytes total)?"
);

fn theano(t: &str) -> Option<Found> {
    let c = theano_re().captures(t)?;
    let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    let mut f = Found::device(Api::Cuda);
    f.facts.requested_bytes = n(1);
    f.facts.free_bytes = n(2);
    f.facts.total_bytes = n(3);
    Some(f)
}

fn matlab(t: &str) -> Option<Found> {
    matlab_re().is_match(t).then(|| Found::device(Api::Cuda))
}

// GrinGoldMiner's CUDA trimmer (mozkomor/GrinGoldMiner, `src/Cudacka/kernel.cu`): at start it
// prints cudaMemGetInfo's "Currently available amount of device memory: N bytes" and "Total
// amount of device memory: N bytes", then allocates its buffers; buffer A's failure prints
// "status: " + CUDA's string and "cudaMalloc failed buffer A 4GB!" just after those figures
// (buffer B's and the index arrays' come after other lines, with no figures beside them: not
// read). The size in those words is a label: one version allocates buffers A and B together
// under the "buffer A 4GB" message, so no request is read. Its C# host relays the lines,
// sometimes run together ("…bytesTotal amount…").
re!(
    grin_gold_re,
    r"Currently available amount of device memory: (\d{1,20}) bytes\s*Total amount of device memory: (\d{1,20}) bytes\s*status: out of memory\s*cudaMalloc failed buffer A\b"
);
re!(
    grin_gold_device_re,
    r"Starting CUDA solver process on device (\d{1,3})\b"
);

fn grin_gold_miner(t: &str) -> Option<Found> {
    let c = grin_gold_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::Cuda);
    f.facts.free_bytes = c.get(1)?.as_str().parse().ok();
    f.facts.total_bytes = c.get(2)?.as_str().parse().ok();
    let before = &t[..c.get(0)?.start()];
    f.device = grin_gold_device_re()
        .captures_iter(before)
        .last()
        .and_then(|d| d.get(1)?.as_str().parse().ok());
    Some(f)
}

// Vintage Story's client (closed source; its crash report as printed): after a draw or an upload
// it asks OpenGL for an error (`ClientPlatformWindows.CheckGlErrorAlways`) and turns
// GL_OUT_OF_MEMORY into "System.OutOfMemoryException: Your graphics card ran out of memory!"
// (1.21: "Either the graphics card or the OS ran out of memory!"), "Please close other programs
// and reduce your view distance…". Every space may be a wrap.
re!(
    vintagestory_re,
    r"System\.OutOfMemoryException:\s+(?:Your\s+graphics\s+card|Either\s+the\s+graphics\s+card\s+or\s+the\s+OS)\s+ran\s+out\s+of\s+memory!"
);

fn vintagestory(t: &str) -> Option<Found> {
    vintagestory_re()
        .is_match(t)
        .then(|| Found::device(Api::OpenGl))
}

// Qiskit Aer's check of a circuit's memory before it runs (its controller's validation of the
// method's memory requirements): "Insufficient memory to run circuit NAME using the METHOD
// simulator. Required memory: NM, max memory: HM (Host) + GM (GPU)", in MiB (its `_MB`
// figures, 2^20 bytes). What it requires is read as the request; its maximum, the host's and
// the GPUs' together, is no one device's and is not read.
re!(
    qiskit_aer_re,
    r"\bInsufficient memory to run circuit [^\n]{1,200}? simulator\. Required memory: (\d{1,12})M\b"
);

fn qiskit_aer(t: &str) -> Option<Found> {
    let c = qiskit_aer_re().captures_iter(t).last()?;
    let f = Facts {
        requested_bytes: super::banner::mib(&c, 1),
        ..Facts::default()
    };
    let mut found = Found::own(f);
    // The CPU simulators print the same sentence ("using the statevector simulator … max
    // memory: 4000M"): the host's memory, where neither the method nor the maximum names a GPU.
    let whole = c.get(0)?;
    let maximum = t[whole.end()..].split('\n').next().unwrap_or_default();
    if !(whole.as_str().contains("_gpu simulator") || maximum.contains("(GPU)")) {
        found.memory = MemoryKind::Host;
    }
    Some(found)
}

// BzMiner (closed source; its log as users paste it): "GPU 6:0: Not enough available memory
// (445.02mb/8.00gb). Requires 1.01gb.", the GPU's free over its total memory, then what the DAG
// or table needs, in lower-case binary units (an 8 GiB card prints 8.00gb). "GPU 6:0" is a PCI
// bus, not an index, and is not read.
re!(
    bzminer_re,
    r"(?i)\bNot enough available memory \((\d{1,9}(?:\.\d{1,3})?) ?([kmgt])i?b/(\d{1,9}(?:\.\d{1,3})?) ?([kmgt])i?b\)\.? Requires (\d{1,9}(?:\.\d{1,3})?) ?([kmgt])i?b\b"
);

fn bzminer(t: &str) -> Option<Found> {
    let c = bzminer_re().captures_iter(t).last()?;
    let size = |n: usize, u: usize| {
        let unit = c.get(u)?.as_str().to_ascii_uppercase();
        crate::units::parse_size(&format!("{} {unit}iB", c.get(n)?.as_str()))
    };
    let f = Facts {
        free_bytes: size(1, 2),
        total_bytes: size(3, 4),
        requested_bytes: size(5, 6),
        ..Facts::default()
    };
    Some(Found::own(f))
}

// ROCr (`amd_gpu_agent.cpp`, `AcquireQueueScratch`): after "Failed to map requested scratch (N) -
// reducing queue occupancy." it retries with fewer waves per compute unit; where none fits it
// prints "Could not allocate scratch for one wave per CU." and the queue's error handler fails
// the dispatch with HSA_STATUS_ERROR_OUT_OF_RESOURCES (HIP: "Callback: Queue 0x… aborting with
// error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: … code: 0x1008"), so that status after these words
// is scratch memory, not another resource.
re!(
    rocm_scratch_re,
    r"\bCould not allocate scratch for one wave per CU\b"
);

fn rocm_scratch(t: &str) -> Option<Found> {
    rocm_scratch_re()
        .is_match(t)
        .then(|| Found::device(Api::Hip))
}

// PIConGPU (`pmacc/particles/memory/boxes/ParticlesBox.hpp`, `getEmptyFrame`): a kernel takes
// a particle frame from mallocMC's heap and, where none is left, prints "WARNING: mallocMC out
// of memory (try k of 13)" and tries again, "ERROR" on the last try (older releases swapped the
// two words); after the last the frame is null. The heap is sized once (`initMallocMC`): the
// GPU's free memory less `reservedGpuMemorySize`, halved where the memory is shared. The level
// is a log prefix, and taken off before the families read the line.
re!(
    mallocmc_re,
    r"\bmallocMC out of memory \(try \d{1,4} of \d{1,4}\)"
);

fn mallocmc(t: &str) -> Option<Found> {
    mallocmc_re()
        .is_match(t)
        .then(|| Found::own(Facts::default()))
}

// Rockchip's NPU runtime (librknnrt, rknn-toolkit2's `rknn_init`): "failed to malloc npu
// memory!, size: N, flags: 0xa", the buffer's size in bytes, after the driver's ioctl failed
// ("failed to allocate handle, ret: -1").
re!(
    rknn_malloc_re,
    r"\bfailed to malloc npu memory!?,? size: (\d{1,20})\b"
);

fn rknn_malloc(t: &str) -> Option<Found> {
    let c = rknn_malloc_re().captures_iter(t).last()?;
    let f = Facts {
        requested_bytes: c.get(1)?.as_str().parse().ok(),
        ..Facts::default()
    };
    Some(Found::own(f))
}

// MindIE (Huawei's inference server for Ascend, `mindie_llm`'s warm-up): where the model's
// warm-up raised the NPU's out-of-memory error (`str(e).startswith(NPU_OUT_OF_MEMORY_TAG)`), it
// logs "Warmup failed, because of model inference out of memory when `npuMemSize` set to N.
// please try to decrease `npuMemSize`", the multimodal form "…because of multimodal model
// inference out of memory when `maxInputTokenLen` set to N…". N is a setting, not a figure
// measured, and is not read.
re!(
    mindie_warmup_re,
    r"\bWarmup failed, because of (?:multimodal )?model inference out of memory when `?\w{1,40}`? set to -?\d{1,9}"
);

fn mindie_warmup(t: &str) -> Option<Found> {
    mindie_warmup_re()
        .is_match(t)
        .then(|| Found::own(Facts::default()))
}

// TIGRE (CERN/TIGRE, `Common/CUDA/*.cu`, `checkFreeMemory`): before it splits a projection or a
// backprojection over its GPUs it asks each for its free memory (cudaMemGetInfo) and checks the
// call with `cudaCheckErrors("Check mem error")`, which reports the message and CUDA's string
// ("Check mem error" … "out of memory") through MATLAB's or Python's error.
re!(
    tigre_re,
    r"(?s)\bCheck mem error\b.{0,160}?\bout of memory\b"
);

fn tigre(t: &str) -> Option<Found> {
    tigre_re().is_match(t).then(|| Found::device(Api::Cuda))
}

// MoltenVK (KhronosGroup/MoltenVK, `MVKDeviceMemory.mm`): host-coherent memory is one Metal
// buffer; where `ensureMTLBuffer()` fails, "Could not allocate a host-coherent VkDeviceMemory of
// size %llu bytes. The maximum memory-aligned size of a host-coherent VkDeviceMemory is %llu
// bytes." (`_allocationSize`, `maxMTLBufferSize`; newer releases "host-coherent or exportable"),
// with VK_ERROR_OUT_OF_DEVICE_MEMORY. It fails for a length over that maximum, or where Metal
// could not make the buffer (`newBufferWithLength` returned nil): the maximum is the largest one
// allocation may be.
re!(
    moltenvk_coherent_re,
    r"Could not allocate a host-coherent (?:or exportable )?VkDeviceMemory of size (\S{1,40}) bytes\. The maximum memory-aligned size of a host-coherent (?:or exportable )?VkDeviceMemory is (\d{1,20}) bytes"
);

fn moltenvk_coherent(t: &str) -> Option<Found> {
    let c = moltenvk_coherent_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::Vulkan);
    f.facts.requested_bytes = c.get(1)?.as_str().parse().ok();
    f.facts.max_alloc_bytes = c.get(2)?.as_str().parse().ok();
    Some(f)
}

re!(
    unreal_re,
    r"(?i)(?-u:\b)Out of video memory trying to allocate a (?:rendering resource|texture)"
);

// Its Vulkan RHI's fatal allocation failure (`VulkanMemory.cpp`, `FDeviceMemoryManager::Alloc`):
// "Out of Device Memory, Requested=%.2fKb MemTypeIndex=%d" for VK_ERROR_OUT_OF_DEVICE_MEMORY,
// "Out of Host Memory, …" for VK_ERROR_OUT_OF_HOST_MEMORY; UE 4.25 and later "Out of %s Memory,
// Requested%.2fKB MemTypeIndex=%d" with "Local" or "Host". The size is `allocationSize / 1024`,
// KiB. An allocation allowed to fail (`bCanFail`) logs a warning instead, "Failed to allocate
// Device Memory, Requested=%.2fKb …", and the caller goes on (`unreal_can_fail`, below); 4.2x
// said "Host Memory" for VK_ERROR_OUT_OF_HOST_MEMORY, later releases "Device" for both.
re!(
    unreal_vulkan_re,
    r"\bOut of (Device|Local|Host) Memory, Requested=?(\d{1,15}(?:\.\d{1,6})?)K[Bb] MemTypeIndex=\d{1,3}\b"
);
re!(
    unreal_can_fail_re,
    r"\bFailed to allocate (Device|Host) Memory, Requested=(\d{1,15}(?:\.\d{1,6})?)Kb MemTypeIndex=\d{1,3}\b"
);

/// Unreal's Vulkan RHI's warning for an allocation allowed to fail: the last one's size, with
/// no fatal failure after it (that one is read by [`unreal`]).
fn unreal_can_fail(t: &str) -> Option<Found> {
    unreal_found(&unreal_can_fail_re().captures_iter(t).last()?)
}

/// Unreal's Vulkan RHI's size (KiB, group 2) and memory (group 1: "Host" is the host's).
fn unreal_found(c: &regex::Captures) -> Option<Found> {
    let mut f = Found::device(Api::Vulkan);
    f.facts.requested_bytes = crate::units::parse_size(&format!("{} KiB", c.get(2)?.as_str()));
    if &c[1] == "Host" {
        f.memory = MemoryKind::Host;
    }
    Some(f)
}

fn unreal(t: &str) -> Option<Found> {
    if let Some(c) = unreal_vulkan_re().captures_iter(t).last() {
        let mut f = unreal_found(&c)?;
        // One 4.26-era build passed the size in bytes, unconverted, to "%.2f" (it printed 0.00
        // or noise): a size of 0 is not read.
        f.facts.requested_bytes = f.facts.requested_bytes.filter(|b| *b > 0);
        return Some(f);
    }
    unreal_re()
        .is_match(t)
        .then(|| Found::own(Facts::default()))
}

re!(
    nd4j_re,
    r"Failed to allocate (\d{1,20}) bytes from (?:DEVICE \[(\d{1,3})\]|(HOST)) memory"
);
// The same class when libnd4j reports the CUDA call's error (1.0.0-beta7 and later):
// lastErrorMessage() + "; Bytes: [" + bytes + "]; Error code [" + ec + "]; DEVICE [" + device
// + "]" ("cudaMalloc failed; Bytes: [1077940224]; Error code [2]; DEVICE [0]"); ec is CUDA's
// status, 2 out of memory.
re!(
    nd4j_code_re,
    r"(\w+) failed; Bytes: \[(\d{1,20})\]; Error code \[(\d{1,5})\]; DEVICE \[(\d{1,3})\]"
);

fn nd4j(t: &str) -> Option<Found> {
    if let Some(c) = nd4j_code_re().captures(t) {
        if c.get(3)?.as_str() != "2" {
            return None;
        }
        let mut f = Found::device(Api::Cuda);
        f.facts.requested_bytes = c.get(2)?.as_str().parse().ok();
        f.device = c.get(4)?.as_str().parse().ok();
        if super::clean::names_pinned_host(c.get(1)?.as_str()) {
            f.memory = MemoryKind::PinnedHost;
        }
        return Some(f);
    }
    let c = nd4j_re().captures(t)?;
    let mut f = Found::device(Api::Cuda);
    f.facts.requested_bytes = c.get(1)?.as_str().parse().ok();
    f.device = c.get(2).and_then(|m| m.as_str().parse().ok());
    if c.get(3).is_some() {
        // `mallocHost`: cudaHostAlloc in the CUDA backend, where this class lives.
        f.memory = MemoryKind::PinnedHost;
    }
    Some(f)
}

// DALI's own words: its pipeline's relay, its module names, its allocator's sized message.
re!(
    dali_re,
    r"\bCritical error in pipeline: CUDA allocation failed\b|\bCan't allocate (\d{1,20}) bytes on (?:device (\d{1,3})|(host))\.|(?s:\b(?:nvidia\.dali|DALI)\b.{0,4000}?\bCUDA allocation failed\b)"
);

fn dali(t: &str) -> Option<Found> {
    let c = dali_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::Cuda);
    f.facts.requested_bytes = c.get(1).and_then(|m| m.as_str().parse().ok());
    f.device = c.get(2).and_then(|m| m.as_str().parse().ok());
    if c.get(3).is_some() {
        f.memory = MemoryKind::PinnedHost;
    }
    // "Can't allocate … bytes on device" alone is DALI's only beside DALI's words.
    if c.get(1).is_some() && !dali_words_re().is_match(t) {
        return None;
    }
    Some(f)
}

re!(
    dali_words_re,
    r"(?i)\bdali\b|nvidia\.dali|\bCritical error in pipeline\b"
);

re!(
    nnabla_re,
    r"Failed to allocate\. Freeing memory cache and retrying\.\s{1,8}(?:Failed to allocate\. Freeing memory cache and retrying\.\s{1,8})*Failed to allocate again\."
);
re!(
    nnabla_cuda_re,
    r"\b[A-Z][A-Za-z0-9]{1,60}Cuda(?:Cudnn)?\b|\bnnabla[-_]ext[-_]cuda\b|\bnnabla_ext\.cuda\b|\bget_extension_context\(\s*['\x22]cud(?:a|nn)"
);

fn nnabla(t: &str) -> Option<Found> {
    nnabla_re().find(t)?;
    nnabla_cuda_re()
        .is_match(t)
        .then(|| Found::device(Api::Cuda))
}

const VISUS_SIZE: &str = r"(\d{1,12}(?:\.\d{1,6})?)((?i:gb|mb|kb))?";
re!(
    visus_re,
    format!(
        r"\bLimitedResource\(GPU\) reached its limit\s+reqsize\({VISUS_SIZE}\)\s+used\({VISUS_SIZE}\)\s+limit\({VISUS_SIZE}\)|\bOpenGL out of memory\s+reqsize\({VISUS_SIZE}\)\s+os_free_memory\({VISUS_SIZE}\)|\bFailed to (?:acquire|allocate) gpu memory \({VISUS_SIZE}\), GLCreateTexture::setArray failed"
    )
);

/// A size as ViSUS prints it: a number, then "gb", "mb" or "kb" (powers of 1024), or bytes.
fn visus_size(c: &regex::Captures, i: usize) -> Option<u64> {
    let unit = c
        .get(i + 1)
        .map_or_else(|| "bytes".into(), |m| m.as_str().to_ascii_uppercase());
    crate::units::parse_size(&format!("{} {unit}", c.get(i)?.as_str()))
}

fn visus(t: &str) -> Option<Found> {
    // The budget's own line says the most; the texture's line after it only the request.
    let c = visus_re()
        .captures_iter(t)
        .filter(|c| c.get(1).is_some() || c.get(7).is_some())
        .last()
        .or_else(|| visus_re().captures_iter(t).last())?;
    let mut f = Found::device(Api::OpenGl);
    if c.get(1).is_some() {
        f.facts.requested_bytes = visus_size(&c, 1);
        f.facts.allocated_bytes = visus_size(&c, 3);
        f.facts.allowed_bytes = visus_size(&c, 5);
    } else if c.get(7).is_some() {
        f.facts.requested_bytes = visus_size(&c, 7);
        f.facts.free_bytes = visus_size(&c, 9);
    } else {
        f.facts.requested_bytes = visus_size(&c, 11);
    }
    Some(f)
}

re!(
    mesa_bo_re,
    r"\bDRM_IOCTL_[A-Z0-9]{2,20}_(?:CREATE_BO|GEM_CREATE|BO_CREATE|GEM_NEW)[A-Z0-9_]{0,20} failed: Cannot allocate memory\b"
);

fn mesa_bo(t: &str) -> Option<Found> {
    mesa_bo_re()
        .is_match(t)
        .then(|| Found::own(Facts::default()))
}

re!(
    pcsx2_re,
    r"\bGS: Memory allocation failure(?:\.| for \d{1,6}x\d{1,6} texture after purging pool\b)"
);

fn pcsx2(t: &str) -> Option<Found> {
    pcsx2_re().is_match(t).then(|| Found::own(Facts::default()))
}

re!(
    source2_re,
    r"\bFailed to allocate GPU memory for object\.|\bvkAllocateMemory failed to allocate GPU memory\. Fatal error\b"
);

fn source2(t: &str) -> Option<Found> {
    source2_re().is_match(t).then(|| Found::device(Api::Vulkan))
}

re!(
    prorender_re,
    r"\b(?:RPR|RIF)_ERROR_OUT_OF_(VIDEO|SYSTEM)_MEMORY\b|\b(?:RPR|RIF) call \w{1,60}\([^\n]{0,600}?\) returned error co(?:de|re) <(?:ERROR_\w{1,40}<)?(-\d{1,3})>"
);

fn prorender(t: &str) -> Option<Found> {
    let c = prorender_re().captures_iter(t).last()?;
    let memory = match (c.get(1).map(|m| m.as_str()), c.get(2).map(|m| m.as_str())) {
        (Some("VIDEO"), _) | (_, Some("-3")) => MemoryKind::Device,
        (Some("SYSTEM"), _) | (_, Some("-2")) => MemoryKind::Host,
        _ => return None,
    };
    let mut f = Found::own(Facts::default());
    f.memory = memory;
    Some(f)
}

re!(
    drm_cma_re,
    r"\*ERROR\* Failed to allocate from CMA:|\bFailed to allocate memory for tile binning: -12\b|\b[a-z0-9]{2,20}-drm \S{1,60}: failed to allocate buffer with size (\d{1,20})\b"
);

fn drm_cma(t: &str) -> Option<Found> {
    drm_cma_re().find(t)?;
    // The request, where DRM's helper printed it (the last one before the failure).
    let requested = drm_cma_re()
        .captures_iter(t)
        .filter_map(|c| c.get(1)?.as_str().parse().ok())
        .last();
    // The statistics printed after the last failure, its own.
    let after = &t[drm_cma_re().find_iter(t).last()?.end()..];
    let kib = |re: &super::lazy::LazyRegex| {
        re.captures_iter(after)
            .last()
            .and_then(|c| c.get(1)?.as_str().parse::<u64>().ok()?.checked_mul(1024))
    };
    Some(Found::own(Facts {
        requested_bytes: requested,
        reserved_bytes: kib(vc4_allocated_re()),
        allocated_bytes: kib(vc4_used_re()),
        ..Facts::default()
    }))
}

re!(vc4_allocated_re, r"\bsize bos allocated: (\d{1,12})kb\b");
re!(vc4_used_re, r"\bsize bos used: (\d{1,12})kb\b");

// gpu-burn (wilicc/gpu-burn, `gpu_burn-drv.cpp`): "Initialized device D with T MB of memory (F
// MB available, using U MB of it)" (MiB, truncated; U its share of the free memory, 90% by
// default or `-m`), "Results are N bytes each", and where U cannot hold its matrices (A, B
// and at least one result) "Couldn't init a GPU test: Low mem for result. aborting.".
re!(gpu_burn_re, r"\bLow mem for result\. aborting\b");
re!(
    gpu_burn_init_re,
    r"\bInitialized device (\d{1,3}) with (\d{1,9}) MB of memory \((\d{1,9}) MB available, using (\d{1,9}) MB of it\)"
);

fn gpu_burn(t: &str) -> Option<Found> {
    gpu_burn_re().find(t)?;
    let mut f = Found::device(Api::Cuda);
    if let Some(c) = gpu_burn_init_re().captures_iter(t).last() {
        let mib = |i: usize| super::banner::mib(&c, i);
        f.device = c.get(1).and_then(|m| m.as_str().parse().ok());
        f.facts.total_bytes = mib(2);
        f.facts.free_bytes = mib(3);
        f.facts.allowed_bytes = mib(4);
    }
    // "Results are N bytes each" is one matrix; its check needs room for three (two inputs
    // and a result, or in later versions two inputs of another size beside it), and some
    // versions throw before printing it: no request is read.
    Some(f)
}

// NVIDIA Warp (`warp/context.py`, `Device`/`zeros`): "Memory allocation failed on device: D for
// N bytes", D "cuda", "cuda:N" or "cpu".
// From mid-2023 it raises "Failed to allocate N bytes on device 'cuda:0'" instead. On "cpu" the
// array may be pinned (`pinned=True`), which the message does not say: host memory either way.
re!(
    warp_re,
    r"\bMemory allocation failed on device: (cuda(?::(\d{1,3}))?|cpu) for (\d{1,20}) bytes\b|\bFailed to allocate (\d{1,20}) bytes on device '(cuda(?::(\d{1,3}))?|cpu)'"
);

fn warp(t: &str) -> Option<Found> {
    let c = warp_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::Cuda);
    let device = c.get(1).or(c.get(5)).map_or("", |m| m.as_str());
    f.device = c.get(2).or(c.get(6)).and_then(|m| m.as_str().parse().ok());
    f.facts.requested_bytes = c.get(3).or(c.get(4)).and_then(|m| m.as_str().parse().ok());
    if device == "cpu" {
        f.memory = MemoryKind::Host;
    }
    Some(f)
}

// Flutter's GPU API on Impeller (`lib/gpu/device_buffer.cc`, `impeller/renderer/backend/
// vulkan/allocator_vk.cc`): "Unable to allocate a device buffer: ErrorOutOfDeviceMemory", then
// "Failed to create device buffer." and the Dart exception "Failed to allocate DeviceBuffer of
// length N", which `HostBuffer` throws for a new block (`lib/gpu/lib/src/buffer.dart`: a
// host-visible DeviceBuffer of `kDefaultBlockLengthInBytes`, 1024000, added when a frame's
// block overflows).
re!(
    flutter_gpu_re,
    r"\bUnable to allocate a device buffer: ErrorOutOfDeviceMemory\b"
);
re!(
    flutter_length_re,
    r"\bFailed to allocate DeviceBuffer of length (\d{1,20})\b"
);

fn flutter_gpu(t: &str) -> Option<Found> {
    flutter_gpu_re().find(t)?;
    let mut f = Found::device(Api::Vulkan);
    f.facts.requested_bytes = flutter_length_re()
        .captures_iter(t)
        .last()
        .and_then(|c| c.get(1)?.as_str().parse().ok());
    Some(f)
}

re!(
    dlib_re,
    r"\bError while calling (\w{2,60})\([^\n]{0,300}?\) in file [^\n]{1,300}?:\d{1,6}\. code: (\d{1,4}), reason:\s{0,4}([^\n]{0,80})"
);

fn dlib(t: &str) -> Option<Found> {
    let c = dlib_re().captures_iter(t).last()?;
    let call = c.get(1)?.as_str();
    let code = c.get(2)?.as_str();
    let reason = c.get(3).map_or("", |m| m.as_str().trim());
    // dlib's strings for the libraries' allocation status (`cudnn_get_error_string`,
    // `cublas_get_error_string`, `cusolver_get_error_string`: "CUDA Resources could not be
    // allocated."), CUDA's own ("out of memory"); the code only where a wrap cut the string.
    let memory = if reason.starts_with("CUDA Resources could not be allocated")
        || reason.contains("CUDNN_STATUS_ALLOC_FAILED")
    {
        true
    } else if !reason.is_empty() {
        call.starts_with("cuda") && reason.starts_with("out of memory")
    } else if call.starts_with("cublas") {
        code == "3"
    } else {
        ["cuda", "cudnn", "cusolver"]
            .iter()
            .any(|p| call.starts_with(p))
            && code == "2"
    };
    memory.then_some(())?;
    let mut f = Found::device(Api::Cuda);
    if super::clean::names_pinning_call(call) {
        f.memory = MemoryKind::PinnedHost;
    }
    Some(f)
}

re!(
    xmrig_opencl_re,
    r"\berror CL_INVALID_BUFFER_SIZE when calling clCreateBuffer with buffer size (\d{1,20})\b"
);

fn xmrig_opencl(t: &str) -> Option<Found> {
    let c = xmrig_opencl_re().captures_iter(t).last()?;
    let mut f = Found::device(Api::OpenCl);
    f.facts.requested_bytes = c.get(1)?.as_str().parse().ok();
    Some(f)
}

re!(
    rendy_re,
    r"\brendy_memory::heaps: All suitable heaps are exhausted\b|\bAll suitable heaps are exhausted\. Heaps \{"
);

fn rendy(t: &str) -> Option<Found> {
    rendy_re().is_match(t).then(|| Found::device(Api::Vulkan))
}

/// A program of [`PROGRAMS`] whose out-of-memory message the text holds: the API's framework
/// (none where the program's words name no one API), the program's format. Read before the
/// generic CUDA and API readers, so that the program keeps its name and remedies.
pub fn gpu_programs(t: &str) -> Option<Oom> {
    PROGRAMS.iter().find_map(|p| {
        let found = (p.read)(t)?;
        let framework = found.api.map_or(Framework::Unknown, Api::framework);
        let mut o = oom(framework, p.format, found.device, found.facts);
        o.memory = found.memory;
        Some(o)
    })
}

/// The program an OOM of [`gpu_programs`] was read from.
pub fn program_of(o: &Oom) -> Option<&'static Program> {
    PROGRAMS.iter().find(|p| p.format == o.format)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(t: &str) -> Option<Oom> {
        crate::oom::analyze(t).main().cloned()
    }

    #[test]
    fn every_name_and_spelling_finds_its_own_status() {
        for s in STATUSES {
            for n in std::iter::once(&s.name).chain(s.spellings) {
                let m = names_re().find(n).map(|m| m.as_str());
                assert_eq!(m, Some(*n), "{n}");
                assert_eq!(by_name(n), Some(s), "{n}");
            }
        }
    }

    #[test]
    fn dynet_gives_the_free_and_total_it_asked_the_gpu_for() {
        let o = read("CUDA failure in cudaMalloc(&ptr, n) \nout of memory\n\nMemory pool info for each devices: \nDevice GPU:0 - FOR Memory 560MB, BACK Memory 528MB, PARAM Memory 240MB, SCRATCH Memory 128MB. \nDevice CPU - FOR Memory 32MB, BACK Memory 32MB, PARAM Memory 32MB, SCRATCH Memory 32MB. \nCUDA is unable to allocate enough GPU memory on GPU:0, at current stage only 6 MB out of 2004 MB is free. Note due to hardware limitations not all free memories can be allocated.").expect("found");
        assert_eq!(o.format, "program-dynet");
        assert_eq!(o.device_index, Some(0));
        assert_eq!(o.facts.free_bytes, Some(6 << 20));
        assert_eq!(o.facts.total_bytes, Some(2004 << 20));
        // The same macro's words in another program are CUDA's, not DyNet's.
        assert_ne!(
            read("CUDA failure in cudaMalloc(&ptr, n)\nout of memory").map(|o| o.format),
            Some("program-dynet")
        );
    }

    #[test]
    fn jittor_falling_back_to_unified_memory_gives_its_report() {
        let o = read("[w 0429 09:00:15.731000 16 cuda_device_allocator.cc:30] Unable to alloc cuda device memory, use unify memory instead. This may cause low performance.\n[i 0429 09:00:15.732000 16 cuda_device_allocator.cc:32]\n=== display_memory_info ===\n total_cpu_ram:    15 B total_device_ram:     6GB\n hold_vars: 445 lived_vars: 554 lived_ops: 135\n name: sfrl is_device: 1 used: 5.369GB(100%) unused: 1.167MB(0.0212%) total:  5.37GB\n name: sfrl is_device: 1 used:     0 B(0%) unused:     1MB(100%) total:     1MB\n name: sfrl is_device: 0 used: 7.431GB(58.1%) unused: 5.369GB(41.9%) total:  12.8GB\n cpu&gpu: 18.17GB gpu: 5.371GB cpu:  12.8GB\n free: cpu(    0 B) gpu(    0 B)").expect("found");
        assert_eq!(o.format, "program-jittor");
        assert_eq!(o.facts.total_bytes, Some(6 << 30));
        assert_eq!(o.facts.free_bytes, Some(0));
        assert_eq!(o.facts.reserved_bytes, crate::units::parse_size("5.371GB"));
        // The device allocators' used, not the host's (is_device: 0).
        assert_eq!(o.facts.allocated_bytes, crate::units::parse_size("5.369GB"));
        assert!(o.facts.derived.contains(&"allocated_bytes"));
    }

    #[test]
    fn vc4s_buffer_statistics_are_its_reserve_and_use() {
        let o = read("[80715.107256] vc4-drm soc:gpu@7e4c0000: failed to allocate buffer with size 1056768\n[80715.107306] [drm:vc4_bo_create [vc4]] *ERROR* Failed to allocate from CMA:\n[80715.107322] [drm] num bos allocated: 707\n[80715.107335] [drm] size bos allocated: 239508kb\n[80715.107350] [drm] num bos used: 701\n[80715.107362] [drm] size bos used: 236148kb\n[80715.107374] [drm] num bos cached: 6\n[80715.107385] [drm] size bos cached: 3360kb").expect("found");
        assert_eq!(o.format, "program-drm-cma");
        assert_eq!(o.facts.requested_bytes, Some(1_056_768));
        assert_eq!(o.facts.reserved_bytes, Some(239_508 << 10));
        assert_eq!(o.facts.allocated_bytes, Some(236_148 << 10));
    }

    #[test]
    fn gpu_burns_share_of_the_free_memory_is_its_limit() {
        let o = read("Initialized device 0 with 3956 MB of memory (117 MB available, using 105 MB of it), using FLOATS\nResults are 268435456 bytes each, thus performing 68719476734 iterations\nCouldn't init a GPU test: Low mem for result. aborting.").expect("found");
        assert_eq!(o.device_index, Some(0));
        assert_eq!(o.facts.total_bytes, Some(3956 << 20));
        assert_eq!(o.facts.free_bytes, Some(117 << 20));
        assert_eq!(o.facts.allowed_bytes, Some(105 << 20));
        // One matrix's size is not what the check needed.
        assert_eq!(o.facts.requested_bytes, None);
    }

    #[test]
    fn a_rigs_last_gpu_to_fail_is_the_one_read() {
        let o = read("[2024-10-11 10:02:17] GPU 3 ERROR - failed to allocate ethash DAG buffer\n[2024-10-11 10:02:17] GPU 3 thread exiting with error.\n[2024-10-11 10:02:17] GPU 1 ERROR - failed to allocate ethash DAG buffer\n[2024-10-11 10:02:17] GPU 1 thread exiting with error.").expect("found");
        assert_eq!((o.format, o.device_index), ("program-dag-miner", Some(1)));
    }

    #[test]
    fn the_numbers_are_the_headers() {
        assert_eq!(E_OUTOFMEMORY, -2_147_024_882);
        assert_eq!(HRESULT_NOT_ENOUGH_MEMORY, -2_147_024_888);
        assert_eq!(D3DERR_OUTOFVIDEOMEMORY, -2_005_532_292);
        assert_eq!(
            by_number(Api::OpenCl, -4).map(|s| s.name),
            Some("CL_MEM_OBJECT_ALLOCATION_FAILURE")
        );
        assert_eq!(
            by_number(Api::Npp, -9).map(|s| s.name),
            Some("NPP_MEMORY_ALLOCATION_ERR")
        );
        assert_eq!(
            by_number(Api::LevelZero, 0x7000_0002).map(|s| s.kind),
            Some(Kind::Device)
        );
        assert!(by_number(Api::OpenCl, -11).is_none(), "a build failure");
    }

    /// Each API's device status, by name and by number, in the wrappings programs print.
    #[test]
    fn device_statuses_are_device_ooms() {
        let cases: &[(&str, Framework, &str)] = &[
            ("clCreateBuffer failed: CL_MEM_OBJECT_ALLOCATION_FAILURE", Framework::OpenCl, "api-CL_MEM_OBJECT_ALLOCATION_FAILURE"),
            // .NET and Julia bindings (ManagedCuda's CudaException: the enum's name and cuda.h's
            // description; CUDA.jl's exception), and cudarc's Debug form with its name broken.
            ("Unhandled Exception: ManagedCuda.CudaException: ErrorOutOfMemory: The API call failed because it was unable to allocate enough memory to perform the requested operation.\n   at ManagedCuda.CudaDeviceVariable`1..ctor(SizeT size)", Framework::Cuda, "api-CUDA_ERROR_OUT_OF_MEMORY"),
            ("Cudafy.Host.CudafyHostException: CUDA.NET exception: ErrorOutOfMemory.", Framework::Cuda, "api-CUDA_ERROR_OUT_OF_MEMORY"),
            ("ERROR: LoadError: CUDA.OutOfGPUMemoryError(1073741824, CUDA.MemoryInfo(...))", Framework::Cuda, "api-CUDA_ERROR_OUT_OF_MEMORY"),
            ("Error: DriverError(CUDA_ERROR_OUT_O F_MEMORY, \"out of memory\")", Framework::Cuda, "api-CUDA_ERROR_OUT_OF_MEMORY"),
            ("called `Result::unwrap()` on an `Err` value: DriverError(CUDA_ERROR_OUT_OF_\nMEMORY, \"out of memory\")", Framework::Cuda, "api-CUDA_ERROR_OUT_OF_MEMORY"),
            ("pyopencl._cl.MemoryError: clEnqueueNDRangeKernel failed: MEM_OBJECT_ALLOCATION_FAILURE", Framework::OpenCl, "api-CL_MEM_OBJECT_ALLOCATION_FAILURE"),
            ("terminate called after throwing an instance of 'boost::wrapexcept<boost::compute::opencl_error>'\n  what():  Memory Object Allocation Failure", Framework::OpenCl, "api-CL_MEM_OBJECT_ALLOCATION_FAILURE"),
            ("[LightGBM] [Fatal] Memory Object Allocation Failure", Framework::Lightgbm, "api-CL_MEM_OBJECT_ALLOCATION_FAILURE"),
            ("OpenCL error: clEnqueueWriteBuffer failed with error code -4", Framework::OpenCl, "api-CL_MEM_OBJECT_ALLOCATION_FAILURE"),
            ("clCreateBuffer returned CL_OUT_OF_RESOURCES (-5) allocating 2147483648 bytes", Framework::OpenCl, "api-CL_OUT_OF_RESOURCES"),
            ("vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY", Framework::Vulkan, "api-VK_ERROR_OUT_OF_DEVICE_MEMORY"),
            ("warn:vkd3d_allocate_device_memory: Failed to allocate device memory, vr -2.", Framework::Vulkan, "api-VK_ERROR_OUT_OF_DEVICE_MEMORY"),
            ("thread 'main' panicked at src/gpu.rs:88:10: called `Result::unwrap()` on an `Err` value: ERROR_OUT_OF_DEVICE_MEMORY", Framework::Vulkan, "api-VK_ERROR_OUT_OF_DEVICE_MEMORY"),
            ("vkAllocateMemory returned VkResult -2", Framework::Vulkan, "api-VK_ERROR_OUT_OF_DEVICE_MEMORY"),
            ("Failure in vkAllocateMemory at 191 mvulkan.cpp  ErrCode=-2", Framework::Vulkan, "api-VK_ERROR_OUT_OF_DEVICE_MEMORY"),
            ("thread '<main>' panicked at 'called `Result::unwrap()` on an `Err` value: OomError(OutOfDeviceMemory)', ../src/libcore\\result.rs:746", Framework::Vulkan, "api-VK_ERROR_OUT_OF_DEVICE_MEMORY"),
            ("Microsoft.ML.OnnxRuntime.OnnxRuntimeException: [ErrorCode:RuntimeException] D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\dml\\DmlExecutionProvider\\src\\MLOperatorAuthorImpl.cpp(2448)\\onnxruntime.DLL!00007FFA9B0E6B8A: (caller: 00007FFA9B0E6A33) Exception(3) tid(2a8c) 8007000E Not enough memory resources are available to complete this operation.", Framework::Onnxruntime, "onnxruntime-dml"),
            ("System.Runtime.InteropServices.COMException (0x8007000E): DirectML device creation failed", Framework::DirectMl, "api-E_OUTOFMEMORY"),
            ("D3D12 CreateCommittedResource failed: HRESULT -2147024882", Framework::Direct3d, "api-E_OUTOFMEMORY"),
            ("D3D11: Failed to create RenderTexture (3840 x 2160 fmt 27 aa 1), error 0x8007000e", Framework::Direct3d, "api-E_OUTOFMEMORY"),
            ("RuntimeError: Could not allocate tensor with 530841600 bytes. There is not enough GPU video memory available!", Framework::DirectMl, "api-E_OUTOFMEMORY"),
            ("`device->CreateBuffer(&desc , 0 , &m_ptr ) FAILED 0x8007000e`", Framework::Direct3d, "api-E_OUTOFMEMORY"),
            ("KawPow failed to initialize DAG: <kawpow_prepare>:62 \"out of memory\"", Framework::Cuda, "cuda-relay"),
            ("Error: unhandled exception: OpenGL error: out of memory [GLerror]", Framework::OpenGl, "api-GL_OUT_OF_MEMORY"),
            ("OpenGL Error: out of memory(1285)\nIn: /home/u/catkin_ws/src/SuMa/src/core/SurfelMap.cpp on Line: 298", Framework::OpenGl, "api-GL_OUT_OF_MEMORY"),
            ("System.Exception: Unknown internal debug message. The NVIDIA OpenGL driver has encountered\nan out of memory error. This application might\nbehave inconsistently and fail.", Framework::OpenGl, "api-GL_OUT_OF_MEMORY"),
            // MultiMC/Launcher#1589: Minecraft's check after a frame.
            ("[15:19:32] [Client thread/ERROR]: ########## GL ERROR ##########\n[15:19:32] [Client thread/ERROR]: @ Post render\n[15:19:32] [Client thread/ERROR]: 1285: Out of memory", Framework::OpenGl, "api-GL_OUT_OF_MEMORY"),
            ("OpenGL.error.GLError: GLError(\n\terr = 1285,\n\tdescription = b'out of memory',\n\tbaseOperation = glTexImage2D,", Framework::OpenGl, "api-GL_OUT_OF_MEMORY"),
            ("DmlExecutionProvider: 没有足够的内存资源，无法完成此操作。", Framework::DirectMl, "api-E_OUTOFMEMORY"),
            ("ManagedCuda.NPP.NPPException: NPP_MEMORY_ALLOCATION_ERR", Framework::Cuda, "api-NPP_MEMORY_ALLOCATION_ERR"),
            ("nppiResize_8u_C3R failed: NppStatus -9", Framework::Cuda, "api-NPP_MEMORY_ALLOCATION_ERR"),
            // ManagedCuda's NPP image, as Visual Studio shows the exception (kunzmi/managedCuda#8).
            ("ManagedCuda.NPP.NPPException was caught\n  HResult=-2146233088\n  Message=Device allocation error\n  Source=NPP", Framework::Cuda, "api-NPP_MEMORY_ALLOCATION_ERR"),
            ("RuntimeError: Graph compile failed. synStatus=synStatus 4 [Out of Device memory (OOM)]. compile", Framework::Hpu, "api-synOutOfDeviceMemory"),
            ("synDeviceMalloc failed: synOutOfDeviceMemory", Framework::Hpu, "api-synOutOfDeviceMemory"),
            ("[PT_BRIDGE] synDeviceMalloc failed. synStatus=synStatus 14 [Failed to allocate Device memory].", Framework::Hpu, "api-synFailedToAllocateDeviceMemory"),
            ("zeMemAllocDevice returned 0x70000002", Framework::Unknown, "api-ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"),
            ("Error Domain=MTLCommandBufferErrorDomain Code=8 \"Insufficient Memory\"", Framework::Metal, "api-MTLCommandBufferErrorOutOfMemory"),
            ("Error: hipMalloc(&ptr, bytes) failed: hipErrorOutOfMemory", Framework::Rocm, "api-hipErrorOutOfMemory"),
            // glGetError's value by name: OpenRA's words, OpenTK's enum (OpenRA/OpenRA#15487).
            ("GL Error: Out Of Memory\n   at OpenRA.Platforms.Default.OpenGL.CheckGLError()", Framework::OpenGl, "api-GL_OUT_OF_MEMORY"),
            ("GL error: OutOfMemory", Framework::OpenGl, "api-GL_OUT_OF_MEMORY"),
            // gpu-allocator's OutOfMemory by Debug (EmbarkStudios/kajiya#65), on D3D12 by name.
            ("Error: Allocation failed for \"vertex buffer\": OutOfMemory", Framework::Vulkan, "api-VK_ERROR_OUT_OF_DEVICE_MEMORY"),
            ("[dx12] gpu_allocator::AllocationError::OutOfMemory", Framework::Direct3d, "api-E_OUTOFMEMORY"),
            // A D3D12 adapter listed elsewhere does not make a Vulkan failure D3D12's.
            ("adapters: Vulkan (RADV), DX12 (WARP)\nloading the scene with its 262 meshes and 70 textures\nError: Allocation failed for \"vertex buffer\": OutOfMemory", Framework::Vulkan, "api-VK_ERROR_OUT_OF_DEVICE_MEMORY"),
        ];
        for (text, fw, format) in cases {
            let o = read(text).unwrap_or_else(|| panic!("not found: {text}"));
            assert_eq!(
                (o.framework, o.format, o.memory),
                (*fw, *format, MemoryKind::Device),
                "{text}"
            );
        }
    }

    #[test]
    fn host_statuses_are_host_memory() {
        for text in [
            "vkCreateBuffer failed: VK_ERROR_OUT_OF_HOST_MEMORY",
            "vk::Device::allocateMemory: ErrorOutOfHostMemory",
            "clCreateCommandQueue failed: CL_OUT_OF_HOST_MEMORY",
            "OpenCL error -6",
            "panic: vulkan error: vulkan error: out of host memory (-1)",
            "thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: OomError(OutOfHostMemory)', src/libcore/result.rs:997:5",
            "zeMemAllocHost: ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY",
            "synHostMalloc failed: synStatus 3 [Out of HOST memory (OOM)]",
            "DirectML: HRESULT 0x80070008",
        ] {
            let o = read(text).unwrap_or_else(|| panic!("not found: {text}"));
            assert_eq!(o.memory, MemoryKind::Host, "{text}");
        }
    }

    /// Statuses that are not memory, numbers of other APIs, and a generic code without a GPU
    /// API's words are not found.
    /// Arm's Mali GLES driver: GL_OUT_OF_MEMORY by its code, the memory its own words name
    /// (flutter/flutter#65540).
    #[test]
    fn mali_gles_says_which_memory() {
        let head = "D/MALI: gles_state_set_error_internal:75: [MALI] GLES ctx: 0x7f8fe0d008, error code:0x505\nD/MALI: gles_state_set_error_internal:76: [MALI] GLES error info: ";
        let o = read(&format!("{head}failed to allocate CPU memory")).expect("found");
        assert_eq!(
            (o.format, o.memory),
            ("api-GL_OUT_OF_MEMORY", MemoryKind::Host)
        );
        let o = read(&format!("{head}execution failed")).expect("found");
        assert_eq!(
            (o.format, o.memory),
            ("api-GL_OUT_OF_MEMORY", MemoryKind::Device)
        );
        // Another GL error from the same driver.
        let other = "[MALI] GLES ctx: 0x7f8fe0d008, error code:0x502\n[MALI] GLES error info: invalid operation";
        assert!(read(other).is_none_or(|o| o.memory != MemoryKind::Device));
    }

    #[test]
    fn other_statuses_are_not_found() {
        for text in [
            "clBuildProgram failed with error -11",
            "clEnqueueReadBuffer failed: CL_OUT_OF_RESOURCES",
            "OpenCL error -5",
            "vkQueueSubmit failed: VK_ERROR_DEVICE_LOST",
            "VkResult -4",
            "synStatus=synStatus 26 [Generic failure]",
            "Exception(1) tid(4790) 887A0005 The GPU device instance has been suspended.",
            "System.OutOfMemoryException: Exception of type 'System.OutOfMemoryException' was thrown. (0x8007000E)",
            "Not enough memory resources are available to process this command. (Exception from HRESULT: 0x80070008)",
            "NppStatus -6",
            "error code -4",
            "Error: DriverError(CUDA_ERROR_ILLEGAL_ADDRESS, \"an illegal memory access was encountered\")",
            // Another .NET library's own enum of the same name, host memory.
            "MelissaData.ProgramStatus: ErrorOutOfMemory",
            // The same words from a program that is not NPP's binding.
            "RuntimeError: Device allocation error",
            // The same number and words from anything but Minecraft's GL check.
            "gmem.c:1285: Out of memory",
            // Minecraft's check with another GL error.
            "[Client thread/ERROR]: ########## GL ERROR ##########\n[Client thread/ERROR]: @ Post render\n[Client thread/ERROR]: 1286: Invalid framebuffer operation",
        ] {
            let found = read(text).filter(|o| o.memory == MemoryKind::Device);
            assert!(found.is_none(), "{text}: {found:?}");
        }
    }

    /// A status named as the subject of a definition (a glossary page) is talk about it; the
    /// same name after a failed call is the failure.
    #[test]
    fn a_status_defined_in_prose_is_no_failure() {
        assert!(read("VK_ERROR_OUT_OF_DEVICE_MEMORY is a VkResult error code defined by the Vulkan API. It indicates that a Vulkan operation could not be completed.").is_none());
        assert!(read(
            "A VK_ERROR_OUT_OF_DEVICE_MEMORY typically requires the application to free resources."
        )
        .is_none());
        let o = read("vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY").expect("found");
        assert_eq!(o.format, "api-VK_ERROR_OUT_OF_DEVICE_MEMORY");
    }

    /// Gaudi's "Failed to allocate Device memory" is a common phrase: without Gaudi's words it
    /// is not Gaudi's (the honest fallback keeps it, framework unknown).
    #[test]
    fn a_common_phrase_is_not_claimed_for_gaudi() {
        let o = read("render.c:42: Failed to allocate Device memory").expect("the fallback");
        assert_eq!(o.framework, Framework::Unknown);
    }

    #[test]
    fn a_relay_s_size_and_device_are_read() {
        let o = read("OpenCL error: clCreateBuffer(size=2147483648 bytes) on device 1 failed: CL_MEM_OBJECT_ALLOCATION_FAILURE").expect("found");
        assert_eq!(o.facts.requested_bytes, Some(2_147_483_648));
        assert_eq!(o.device_index, Some(1));
        let o = read("vkAllocateMemory: failed to allocate 512.00 MiB on GPU 0: VK_ERROR_OUT_OF_DEVICE_MEMORY").expect("found");
        assert_eq!(o.facts.requested_bytes, Some(512 << 20));
        assert_eq!(o.device_index, Some(0));
    }

    /// Each program's own message, built from its format string (cited at [`PROGRAMS`]): the
    /// program's format, the API's framework, which memory, and the request where it prints one.
    #[test]
    fn programs_in_their_own_words() {
        let cases: &[(&str, &str, Framework, MemoryKind, Option<u64>)] = &[
            ("Error: System is out of GPU memory", "program-blender", Framework::Unknown, MemoryKind::Device, None),
            // Qiskit Aer's check before a circuit (Qiskit/qiskit-aer#1646).
            ("qiskit.exceptions.QiskitError: 'Circuit execution failed: ERROR:  [Experiment 0] Insufficient memory to run circuit circuit-115-714 using the statevector_gpu simulator. Required memory: 1048576M, max memory: 515313M (Host) + 81104M (GPU)'", "program-qiskit-aer", Framework::Unknown, MemoryKind::Device, Some(1 << 40)),
            ("Insufficient memory to run circuit circuit-1 using the statevector simulator. Required memory: 262144M, max memory: 4000M", "program-qiskit-aer", Framework::Unknown, MemoryKind::Host, Some(256 << 30)),
            // BzMiner's check before a DAG (bzminer/bzminer#283).
            ("<Error> [zil] GPU 6:0: Not enough available memory (445.02mb/8.00gb). Requires 1.01gb.", "program-bzminer", Framework::Unknown, MemoryKind::Device, Some(1_084_479_242)),
            // GZDoom's check with VkResult's words; Mach's sysgpu through vulkan-zig.
            ("Could not create vulkan image: out of device memory", "api-VK_ERROR_OUT_OF_DEVICE_MEMORY", Framework::Vulkan, MemoryKind::Device, None),
            ("thread 26160 panic: api error\nerror: Result.error_out_of_device_memory", "api-VK_ERROR_OUT_OF_DEVICE_MEMORY", Framework::Vulkan, MemoryKind::Device, None),
            // Minecraft's GL check in a crash report (Spoutcraft).
            ("Exception: RuntimeException\n    Message: OpenGL Exception: (Post render, Out of memory)", "api-GL_OUT_OF_MEMORY", Framework::OpenGl, MemoryKind::Device, None),
            // ROCr's scratch where not even one wave's fits: the queue aborted.
            ("Failed to map requested scratch (3520331776) - reducing queue occupancy.\nCould not allocate scratch for one wave per CU.\n:0:rocdevice.cpp :2881: 1234 us: Callback: Queue 0x7f00 aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events. code: 0x1008", "program-rocm-scratch", Framework::Rocm, MemoryKind::Device, None),
            // PIConGPU's frames from mallocMC's heap (ComputationalRadiationPhysics/picongpu).
            ("[1,11]<stdout>:WARNING: mallocMC out of memory (try 1 of 13)", "program-mallocmc", Framework::Unknown, MemoryKind::Device, None),
            ("ERROR: mallocMC out of memory (try 13 of 13)", "program-mallocmc", Framework::Unknown, MemoryKind::Device, None),
            // sgminer's launch (sgminer-dev/sgminer#246).
            ("[00:30:54] Error -4: Enqueueing kernel onto command queue. (clEnqueueNDRangeKernel)\n[00:30:54] GPU 0 failure, disabling!", "api-CL_MEM_OBJECT_ALLOCATION_FAILURE", Framework::OpenCl, MemoryKind::Device, None),
            // Rockchip's NPU runtime (rockchip-linux/rknn-toolkit2#44).
            ("E/RKNN: failed to allocate handle, ret: -1\nE/RKNN: failed to malloc npu memory!, size: 59187712, flags: 0x2\nE/RKNN: rknn_init, load model failed!", "program-rknn", Framework::Unknown, MemoryKind::Device, Some(59_187_712)),
            // MindIE's warm-up: its setting's value is not read (gpustack/gpustack#3541).
            ("[llm] [ERROR] [logging.py-348] : Warmup failed, because of multimodal model inference out of memory when `maxInputTokenLen` set to 8192. Please try to decrease `maxPrefillTokens` in config.json of mindie-service.", "program-mindie", Framework::Unknown, MemoryKind::Device, None),
            ("Warmup failed, because of model inference out of memory when `npuMemSize` set to 8. please try to decrease `npuMemSize`", "program-mindie", Framework::Unknown, MemoryKind::Device, None),
            ("Error: System is out of GPU and shared host memory", "program-blender", Framework::Unknown, MemoryKind::Device, None),
            ("Out of memory in cuMemAlloc(&device_pointer, size) (intern/cycles/device/cuda/device_impl.cpp:610)", "program-blender", Framework::Cuda, MemoryKind::Device, None),
            ("Blender 2.93\nCUDA error: Out of memory in cuMemAlloc(&device_pointer, size), line 568", "program-blender", Framework::Cuda, MemoryKind::Device, None),
            ("[h264_nvenc @ 0x55d0c] OpenEncodeSessionEx failed: out of memory (10): (no details)", "program-ffmpeg-nvenc", Framework::Cuda, MemoryKind::Device, None),
            ("[hevc_nvenc @ 0x6090380] InitializeEncoder failed: out of memory (10):", "program-ffmpeg-nvenc", Framework::Cuda, MemoryKind::Device, None),
            ("[AVHWFramesContext @ 0x56] cu->cuMemAlloc(&data->ptr, size) failed -> CUDA_ERROR_OUT_OF_MEMORY: out of memory", "program-ffmpeg-cuda", Framework::Cuda, MemoryKind::Device, None),
            ("[h264_cuvid @ 0x1] ctx->cvdl->cuvidCreateDecoder(&cudec, &cuinfo) failed -> CUDA_ERROR_OUT_OF_MEMORY: out of memory", "program-ffmpeg-cuda", Framework::Cuda, MemoryKind::Device, None),
            ("[h264_nvenc @ 0x7f616007d540] Failed creating CUDA context for NVENC: 0x2\n[h264_nvenc @ 0x7f616007d540] No NVENC capable devices found", "program-ffmpeg-cuda", Framework::Cuda, MemoryKind::Device, None),
            ("[cupla] Error: </src/pmacc/memory/buffers/DeviceBufferIntern.hpp>:272\nUnhandled exception of type 'St13runtime_error' with message '[cupla] Error: cuplaErrorMemoryAllocation', terminating", "api-cuplaErrorMemoryAllocation", Framework::Cuda, MemoryKind::Device, None),
            ("Error: Device \"NVIDIA GeForce GTX 1050 Ti\" does not have enough memory. Allocating another 8680 MB would use a total of 11573 MB / 4095 MB.", "program-fluidx3d", Framework::Unknown, MemoryKind::Device, Some(8680 << 20)),
            ("Error: Memory size is too large at 5000 MB. Device \"Intel(R) Arc(TM) A770 Graphics\" accepts a maximum buffer size of 4095 MB.", "program-fluidx3d", Framework::Unknown, MemoryKind::Device, Some(5000 << 20)),
            ("warning: local work size abandoned on GPU0\nstd::runtime_error - kernel queueing failed (res = -4)", "program-profanity", Framework::OpenCl, MemoryKind::Device, None),
            // colmap/colmap#103: SiftGPU's check, its frames below.
            ("MultiplyDescriptor:\tout of memory\nMultiplyDescriptor:\tan illegal memory access was encountered\nPC: @ 0xc2a87b SiftMatchCU::GetBestMatch()", "program-siftgpu", Framework::Cuda, MemoryKind::Device, None),
            ("RuntimeError: out of memory while requesting 68719476736 bytes; you can try setting MGB_CUDA_RESERVE_MEMORY to reserve all memory.", "program-megengine", Framework::Cuda, MemoryKind::Device, Some(1 << 36)),
            ("RuntimeError: Trying to preallocate 3832 MB of GPU memory while only 3527 MB are available.", "program-theano-gpuarray", Framework::Cuda, MemoryKind::Device, Some(3832 << 20)),
            ("MemoryError: Cannot allocate 122341986304 bytes: no memory is available.", "program-tinygrad", Framework::Unknown, MemoryKind::Device, Some(122_341_986_304)),
            ("GL error:  Out of memory!\nGL errors! frameworks/base/libs/hwui/renderthread/CanvasContext.cpp:544", "program-android-hwui", Framework::OpenGl, MemoryKind::Device, None),
            ("amdgpu 0000:03:00.0: [drm] *ERROR* Not enough memory for command submission!", "program-amdgpu-kernel", Framework::Unknown, MemoryKind::Device, None),
            ("MemoryTierManager.cpp:837 - JobId:4035484; [VRAM] [Allocate] exceeds capacity, needed: 4136250367 free: 359383650", "program-kinetica", Framework::Unknown, MemoryKind::Device, Some(4_136_250_367)),
            ("RBXCRASH: OutOfMemoryGraphics\nFailed to allocate memory. size = 5594112, alignment = 1024", "program-roblox", Framework::Unknown, MemoryKind::Device, Some(5_594_112)),
            ("Failed to allocate Stream buffer of preferred size 128 KiB (flags { DeviceLocal | HostVisible | HostCoherent })", "program-citra-vulkan", Framework::Vulkan, MemoryKind::Device, Some(128 << 10)),
            ("[fatal] Could not allocate pitched device memory.\nDevice 1 alloc 79847424 bytes failed in /src/depthMap/cuda/commonStructures.hpp:504, out of memory", "program-alicevision", Framework::Cuda, MemoryKind::Device, Some(79_847_424)),
            ("E0919 13:02:44.055814  8478 MapDHandler.cpp:2810] Exception: Failed to run the cardinality estimation query: Query couldn't keep the entire working set of columns in GPU memory", "program-heavydb", Framework::Unknown, MemoryKind::Device, None),
            ("openmm.OpenMMException: Error creating array interactingAtoms: CUDA_ERROR_OUT_OF_MEMORY (2)", "program-openmm", Framework::Cuda, MemoryKind::Device, None),
            ("Error creating array TabulatedFunction: CUDA_OUT_OF_MEMORY", "program-openmm", Framework::Cuda, MemoryKind::Device, None),
            ("OpenMMException: Error creating array posq: clCreateBuffer (-4)", "program-openmm", Framework::OpenCl, MemoryKind::Device, None),
            ("Assertion failed:\nCondition: stat == cudaSuccess\nAllocation of the device buffer failed. CUDA error #2 (cudaErrorMemoryAllocation): out of memory.", "program-gromacs", Framework::Cuda, MemoryKind::Device, None),
            ("Allocation of the device buffer failed. HIP error #2 (hipErrorOutOfMemory): out of memory.", "program-gromacs", Framework::Rocm, MemoryKind::Device, None),
            ("Kokkos failed to allocate memory for label \"A\".  Allocation using MemorySpace named \"Cuda\" failed with the following error:  Allocation of size 4 G failed, likely due to insufficient memory.  (The allocation mechanism was cudaMalloc().  The Cuda allocation returned the error code \"cudaErrorMemoryAllocation\".)", "program-kokkos", Framework::Cuda, MemoryKind::Device, Some(4 << 30)),
            ("Kokkos failed to allocate memory for label \"atom:x\".  Allocation using MemorySpace named \"HIP\" failed with the following error:  Allocation of size 512 M failed, likely due to insufficient memory.", "program-kokkos", Framework::Rocm, MemoryKind::Device, Some(512 << 20)),
            ("Kokkos failed to allocate memory for label \"v\".  Allocation using MemorySpace named \"Host\" failed with the following error:  Allocation of size 12 G failed, likely due to insufficient memory.", "program-kokkos", Framework::Unknown, MemoryKind::Host, Some(12 << 30)),
            ("Kokkos failed to allocate memory for label \"buf\".  Allocation using MemorySpace named \"CudaHostPinned\" failed with the following error:  Allocation of size 2 G failed, likely due to insufficient memory.", "program-kokkos", Framework::Unknown, MemoryKind::PinnedHost, Some(2 << 30)),
            ("hashcat (v6.2.6) starting\n\ncuMemAlloc(): out of memory", "program-hashcat", Framework::Cuda, MemoryKind::Device, None),
            ("hashcat (v6.2.6) starting\n\ncuMemAlloc(): CUDA_ERROR_OUT_OF_MEMORY", "program-hashcat", Framework::Cuda, MemoryKind::Device, None),
            ("hashcat (v6.2.6) starting\n\nclCreateBuffer(): CL_MEM_OBJECT_ALLOCATION_FAILURE", "program-hashcat", Framework::OpenCl, MemoryKind::Device, None),
            ("hashcat (v6.2.6) starting\n\nclCreateBuffer(): CL_OUT_OF_HOST_MEMORY", "program-hashcat", Framework::OpenCl, MemoryKind::Host, None),
            ("Initializing backend runtime for device #2. Please be patient...cuMemAlloc(): out of memory", "program-hashcat", Framework::Cuda, MemoryKind::Device, None),
            ("Hashmode: 500 - md5crypt\n\nclEnqueueNDRangeKernel(): CL_MEM_OBJECT_ALLOCATION_FAILURE", "program-hashcat", Framework::OpenCl, MemoryKind::Device, None),
            ("realesrgan-ncnn-vulkan.exe -i in.png -o out.png\nvkAllocateMemory failed -2", "program-ncnn", Framework::Vulkan, MemoryKind::Device, None),
            ("waifu2x-ncnn-vulkan -i a.png -o b.png\nvkAllocateMemory failed -1", "program-ncnn", Framework::Vulkan, MemoryKind::Host, None),
            ("Uncaught exception: Could not allocate memory: /home/u/instant-ngp/dependencies/tiny-cuda-nn/include/tiny-cuda-nn/gpu_memory.h:123 cudaMalloc(&rawptr, n_bytes+DEBUG_GUARD_SIZE*2) failed with error out of memory", "program-tiny-cuda-nn", Framework::Cuda, MemoryKind::Device, None),
            ("Out of memory on device. To view more detail about available memory on the GPU, use 'gpuDevice()'. If the problem persists, reset the GPU by calling 'gpuDevice(1)'.", "program-matlab", Framework::Cuda, MemoryKind::Device, None),
            ("radeon: Failed to allocate a buffer:\nradeon:    size      : 1073741824 bytes\nradeon:    alignment : 4096 bytes\nradeon:    domains   : 4\nradeon:    flags     : 4", "program-mesa-winsys", Framework::Unknown, MemoryKind::Device, Some(1 << 30)),
            ("amdgpu: Failed to allocate a buffer:\namdgpu:    size      : 65536 bytes\namdgpu:    alignment : 4096 bytes\namdgpu:    domains   : 2\namdgpu:    flags     : 0", "program-mesa-winsys", Framework::Unknown, MemoryKind::PinnedHost, Some(65536)),
            ("ERROR: Insufficient memory on accelerator (src/GPU/gpu_extra.h:38)", "program-lammps-gpu", Framework::Unknown, MemoryKind::Device, None),
            ("Error allocating 45158400 bytes of device memory (out of memory). Driver report 44666880 bytes free and 536543232 bytes total", "program-theano", Framework::Cuda, MemoryKind::Device, Some(45_158_400)),
            ("Out of video memory trying to allocate a rendering resource. Make sure your video card has the minimum required memory, try lowering the resolution and/or closing other applications that are running. Exiting...", "program-unreal", Framework::Unknown, MemoryKind::Device, None),
            // carla-simulator/carla#2826 (UE 4.24's Vulkan RHI).
            ("LowLevelFatalError [File:Unknown] [Line: 279] \nOut of Device Memory, Requested=24000.00Kb MemTypeIndex=7\nSignal 11 caught.", "program-unreal", Framework::Vulkan, MemoryKind::Device, Some(24_576_000)),
            ("LowLevelFatalError [File:Unknown] [Line: 290] \nOut of Host Memory, Requested=512.00Kb MemTypeIndex=2", "program-unreal", Framework::Vulkan, MemoryKind::Host, Some(524_288)),
            // UE 4.25 and later: "Local" for the device's, no "=", "KB".
            ("[2021.01.01-00.00.00:000][  0]LogVulkanRHI: Fatal error: [File:Runtime/VulkanRHI/Private/VulkanMemory.cpp] [Line: 1020] \nOut of Local Memory, Requested262144.00KB MemTypeIndex=7", "program-unreal", Framework::Vulkan, MemoryKind::Device, Some(268_435_456)),
            // microsoft/AirSim#2477: the warning of an allocation allowed to fail.
            ("[2020.03.31-09.19.35:504][  0]LogVulkanRHI: Warning: Failed to allocate Device Memory, Requested=262144.00Kb MemTypeIndex=7\n[2020.03.31-09.19.35:509][  0]LogVulkanRHI: Warning: Failed to allocate Device Memory, Requested=262144.00Kb MemTypeIndex=7", "program-unreal-can-fail", Framework::Vulkan, MemoryKind::Device, Some(268_435_456)),
            // mozkomor/GrinGoldMiner#26: the device's figures before the failed buffer.
            ("Starting CUDA solver process on device 0\nCurrently available amount of device memory: 7005339648 bytes\nTotal amount of device memory: 8589934592 bytes\nstatus: out of memory\ncudaMalloc failed buffer A 4GB!\nCUDA terminating...", "program-grin-gold-miner", Framework::Cuda, MemoryKind::Device, None),
            // Cap-go/capacitor-uploader#3: Mali's allocation failure in a MediaTek phone's logcat.
            ("2024-10-18 13:02:53.029  2284-2441  om.wizdiary.app         com.wizdiary.app                     E  == MALI DEBUG ===BAD ALLOC from gles_texture_egl_image_get_2d_template err is 0", "program-mali", Framework::OpenGl, MemoryKind::Device, None),
            // anegostudios/VintageStory-Issues#6990 (1.21's wording), re-wrapped at 40 columns.
            ("System.OutOfMemoryException: Either\nthe graphics card or the OS ran out of\nmemory! Please close other programs and\nreduce your view distance to prevent\nthe game from crashing.\n   at Vintagestory.Client.NoObf.ClientPlatformWindows.CheckGlErrorAlways(String errmsg)", "program-vintagestory", Framework::OpenGl, MemoryKind::Device, None),
            ("System.OutOfMemoryException: Your graphics card ran out of memory! Please close other programs and reduce your view distance to prevent the game from crashing.", "program-vintagestory", Framework::OpenGl, MemoryKind::Device, None),
            // ethereum-mining/ethminer#584: one buffer larger than the driver allows.
            (" cl  12:42:24|cl-0      Creating DAG buffer, size 2449472384\n  X  12:42:24|cl-0      Creating DAG buffer failed: clCreateBuffer: CL_INVALID_BUFFER_SIZE (-61)\n  X  12:42:24|cl-0      OpenCL Error: clEnqueueWriteBuffer: CL_INVALID_MEM_OBJECT (-38)", "program-dag-miner", Framework::OpenCl, MemoryKind::Device, Some(2_449_472_384)),
            // ethereum/webthree-umbrella#6 (Alethone).
            ("Allocating/mapping single buffer failed with: clCreateBuffer(-61). GPU can't allocate the DAG in a single chunk. Bailing.", "program-dag-miner", Framework::Unknown, MemoryKind::Device, None),
            // T-Rex's check against what the card offers (trexminer threads).
            ("TREX: Can't find nonce with device [ID=0, GPU #0], Epoch 481 requires 4.76 GB of memory, but device has 3.81 GB..", "program-dag-miner", Framework::Unknown, MemoryKind::Device, Some(5_111_011_082)),
            ("20210501 12:00:00 ERROR: GPU #1: not enough GPU memory to place DAG", "program-dag-miner", Framework::Unknown, MemoryKind::Device, None),
            // Claymore-Dual/Claymore-Dual-Miner#47 (PhoenixMiner's log on an R9 Fury).
            ("GPU1: Free VRAM: 3.951 GB; used: 0.049 GB\nGPU1: Disabling DAG pre-allocation (not enough VRAM)\nGPU1: Allocating DAG for epoch #394 (3.93) GB\nGPU1: Allocating buffers failed with: clCreateBuffer (-61).\nFatal error detected. Restarting.", "program-dag-miner", Framework::OpenCl, MemoryKind::Device, Some(4_219_805_368)),
            // CERN/TIGRE#660: its free-memory check, in MATLAB's words as the user translated them.
            ("Another device reported an error:\nCheck mem error\nIncorrect use of Atc_mex\nout of memory\n\nError Atb (line 61)", "program-tigre", Framework::Cuda, MemoryKind::Device, None),
            // pichillilorenzo/flutter_inappwebview#1226: the newer Adreno driver's words and size.
            ("[ +296 ms] W/Adreno-GSL( 7631): <gsl_ldd_control:565>: ioctl fd 88 code 0xc0300945 (IOCTL_KGSL_GPUOBJ_ALLOC) failed: errno 12 Out of memory\n[   +1 ms] E/Adreno-GSL( 7631): <gsl_memory_alloc_pure:2784>: ERROR: kgsl_sharedmem_alloc() failed! Allocation size: (9280 KB); Flags: (0x100600)", "program-adreno", Framework::Unknown, MemoryKind::Device, Some(9_502_720)),
            // pedroSG94/RootEncoder#1727: GL_OUT_OF_MEMORY by its number.
            ("RuntimeException\n\ncom.pedro.encoder.utils.gl.GlUtil in checkGlError\n\ndrawScreen end. GL error: 1285\n\ncom.pedro.encoder.utils.gl.GlUtil in checkGlError at line 132", "api-GL_OUT_OF_MEMORY", Framework::OpenGl, MemoryKind::Device, None),
            // 3dem/relion#1075: RELION's advice, the allocator's figures cut from the paste.
            ("in: /home/supervisor/relion/src/acc/cuda/custom_allocator.cuh, line 539\nERROR: \nERROR: \n\nYou ran out of memory on the GPU(s).\n\nEach MPI-rank running on a GPU increases the use of GPU-memory. Relion\ntries to distribute load over multiple GPUs", "program-relion", Framework::Cuda, MemoryKind::Device, None),
            // KhronosGroup/MoltenVK#1705 (the size redacted by its user).
            ("[mvk-error] VK_ERROR_OUT_OF_DEVICE_MEMORY: Could not allocate a host-coherent VkDeviceMemory of size 300000000 bytes. The maximum memory-aligned size of a host-coherent VkDeviceMemory is 268435456 bytes.", "program-moltenvk", Framework::Vulkan, MemoryKind::Device, Some(300_000_000)),
            // A warning, then the fatal failure: the fatal one is read.
            ("LogVulkanRHI: Warning: Failed to allocate Device Memory, Requested=1024.00Kb MemTypeIndex=7\nOut of Device Memory, Requested=24000.00Kb MemTypeIndex=7", "program-unreal", Framework::Vulkan, MemoryKind::Device, Some(24_576_000)),
            ("Exception in thread \"main\" java.lang.RuntimeException: Failed to allocate 4294967296 bytes from DEVICE [0] memory\n\tat org.nd4j.jita.memory.CudaMemoryManager.allocate(CudaMemoryManager.java:76)", "program-nd4j", Framework::Cuda, MemoryKind::Device, Some(4_294_967_296)),
            ("java.lang.RuntimeException: Failed to allocate 1048576 bytes from HOST memory\n\tat org.nd4j.jita.memory.CudaMemoryManager.allocate(CudaMemoryManager.java:61)", "program-nd4j", Framework::Cuda, MemoryKind::PinnedHost, Some(1_048_576)),
            ("java.lang.RuntimeException: cudaMalloc failed; Bytes: [1077940224]; Error code [2]; DEVICE [0]\n\tat org.nd4j.jita.memory.CudaMemoryManager.allocate(CudaMemoryManager.java:79)", "program-nd4j", Framework::Cuda, MemoryKind::Device, Some(1_077_940_224)),
            // isaac-sim/OmniIsaacGymEnvs#11.
            ("PxgCudaDeviceMemoryAllocator fail to allocate memory 71303168 bytes!! Result = 2", "program-physx", Framework::Cuda, MemoryKind::Device, Some(71_303_168)),
            ("hashcat (v4.2.1) starting...\n* Device #5: Not enough allocatable device memory for this attack.", "program-hashcat", Framework::Unknown, MemoryKind::Device, None),
            ("hashcat (v3.10) starting...\n- Device #1: Device does not provide enough allocatable device-memory to handle this attack", "program-hashcat", Framework::Unknown, MemoryKind::Device, None),
            ("ERROR: Feature matching failed. This is probably caused by insufficient GPU memory. Consider reducing the maximum number of features.", "program-colmap", Framework::Unknown, MemoryKind::Device, None),
            ("[local laplacian cl] failed: -4", "program-darktable", Framework::OpenCl, MemoryKind::Device, None),
            ("W/Adreno-GSL(11228): <sharedmem_gpumem_alloc_id:1498>: sharedmem_gpumem_alloc: mmap failed errno 12 Out of memory", "program-adreno", Framework::Unknown, MemoryKind::Device, None),
            ("TREX: Can't find nonce with device [ID=0, GPU #0], Device does not have enough free memory to hold the DAG for epoch 65. Required: 5.08 GB, free: 5.02 GB.", "program-dag-miner", Framework::Unknown, MemoryKind::Device, Some(5_454_608_466)),
            ("-------\n     Done (2645 ms), size of new DAG: 4072 MByte\n-------\nGPU 0: insufficient memory for DAG epoch 381.\nGPU 0: will be in Zombie mode with reduced hashrate.", "program-dag-miner", Framework::Unknown, MemoryKind::Device, Some(4072 << 20)),
            ("amrex::Abort::0::Out of gpu memory. Free: 4435902464 Asked: 8294402048 !!!", "program-amrex", Framework::Unknown, MemoryKind::Device, Some(8_294_402_048)),
            ("[f 0429 09:00:15.732000 16 cuda_device_allocator.cc:33] Unable to alloc cuda device memory for size 1073741824", "program-jittor-fatal", Framework::Cuda, MemoryKind::Device, Some(1 << 30)),
            // JittorLLMs on a 6 GB GPU.
            ("[w 0429 09:00:15.731000 16 cuda_device_allocator.cc:30] Unable to alloc cuda device memory, use unify memory instead. This may cause low performance.\n[i 0429 09:00:15.732000 16 cuda_device_allocator.cc:32]\n=== display_memory_info ===\n total_cpu_ram:    15 B total_device_ram:     6GB\n hold_vars: 445 lived_vars: 554 lived_ops: 135\n name: sfrl is_device: 1 used: 5.369GB(100%) unused: 1.167MB(0.0212%) total:  5.37GB\n name: sfrl is_device: 1 used:     0 B(0%) unused:     1MB(100%) total:     1MB\n name: sfrl is_device: 0 used: 7.431GB(58.1%) unused: 5.369GB(41.9%) total:  12.8GB\n cpu&gpu: 18.17GB gpu: 5.371GB cpu:  12.8GB\n free: cpu(    0 B) gpu(    0 B)", "program-jittor", Framework::Cuda, MemoryKind::Device, None),
            // Chia-Network/bladebit: the GPU needs 5.72 GiB of its 22.74 free; the host buffers failed.
            ("[Bladebit CUDA Plotter]\nSelected cuda device 1 : NVIDIA GeForce RTX 3090\n Memory:\n  Total                    : 24.00 GB\n  Free                     : 22.74 GB\n\nTotal Host RAM required   : 258683772928 bytes ( 246700.07 MiB or 240.92 GiB )\nGPU RAM required          : 6140243968   bytes ( 5855.79   MiB or 5.72   GiB )\nAllocating buffers\nCUDA error: 2 (0x2 ) cudaErrorMemoryAllocation : out of memory", "program-bladebit", Framework::Cuda, MemoryKind::PinnedHost, None),
            ("[Bladebit CUDA Plotter]\nSelected cuda device 0 : NVIDIA GeForce RTX 3060\n Memory:\n  Total                    : 12.00 GB\n  Free                     : 4.10 GB\n\nTotal Host RAM required   : 258683772928 bytes ( 246700.07 MiB or 240.92 GiB )\nGPU RAM required          : 6140243968   bytes ( 5855.79   MiB or 5.72   GiB )\nAllocating buffers\nCUDA error: 2 (0x2 ) cudaErrorMemoryAllocation : out of memory", "program-bladebit", Framework::Cuda, MemoryKind::Device, None),
            // wilicc/gpu-burn on a Jetson with 117 MB free.
            ("Initialized device 0 with 3956 MB of memory (117 MB available, using 105 MB of it), using FLOATS\nResults are 268435456 bytes each, thus performing 68719476734 iterations\nCouldn't init a GPU test: Low mem for result. aborting.", "program-gpu-burn", Framework::Cuda, MemoryKind::Device, None),
            ("RuntimeError: Memory allocation failed on device: cuda for 120 bytes", "program-warp", Framework::Cuda, MemoryKind::Device, Some(120)),
            ("RuntimeError: Memory allocation failed on device: cpu for 4096 bytes", "program-warp", Framework::Cuda, MemoryKind::Host, Some(4096)),
            ("RuntimeError: Failed to allocate 8589934592 bytes on device 'cuda:0'", "program-warp", Framework::Cuda, MemoryKind::Device, Some(8_589_934_592)),
            ("E/flutter (28140): [ERROR:flutter/impeller/renderer/backend/vulkan/allocator_vk.cc(528)] Impeller validation: Unable to allocate a device buffer: ErrorOutOfDeviceMemory\nE/flutter (28140): [ERROR:flutter/lib/gpu/device_buffer.cc(62)] Failed to create device buffer.\nI/flutter (28140): Exception: Failed to allocate DeviceBuffer of length 1024000", "program-flutter-gpu", Framework::Vulkan, MemoryKind::Device, Some(1_024_000)),
            // A Marian transliteration model's --workspace 9000.
            ("[2020-05-05 18:48:50] [memory] Extending reserved space to 9088 MB (device gpu0)\n[2020-05-05 18:48:50] Error: CUDA error 2 'out of memory' - /home/imo/tools/marian-dev/src/tensors/gpu/device.cu:38: cudaMalloc(&data_, size)\n[2020-05-05 18:48:50] Error: Aborted from virtual void marian::gpu::Device::reserve(size_t) in /home/imo/tools/marian-dev/src/tensors/gpu/device.cu:38", "program-marian", Framework::Cuda, MemoryKind::Device, Some(9088 << 20)),
            // clab/dynet's CUDA_CHECK (xnmt's CoNaLa baseline).
            ("CUDA failure in cudaMalloc(&ptr, n) \nout of memory\n\nMemory pool info for each devices: \nDevice GPU:0 - FOR Memory 560MB, BACK Memory 528MB, PARAM Memory 240MB, SCRATCH Memory 128MB. \nDevice CPU - FOR Memory 32MB, BACK Memory 32MB, PARAM Memory 32MB, SCRATCH Memory 32MB. \nCUDA is unable to allocate enough GPU memory on GPU:0, at current stage only 6 MB out of 2004 MB is free. Note due to hardware limitations not all free memories can be allocated.", "program-dynet", Framework::Cuda, MemoryKind::Device, None),
            ("[dynet] Device(s) selected: 0CUDA failure in cudaMalloc(&ptr, n)\nout of memory\nterminate called after throwing an instance of 'dynet::cuda_exception'", "program-dynet", Framework::Cuda, MemoryKind::Device, None),
            // AMReX-Codes/amrex#4831 (`Arena::out_of_memory_abort`, 2025).
            ("amrex::Abort::0::Arena out of memory!!!\nBytes to allocate: 1449379584 (1382 MiB)\nMemory type: GPU device memory\nMPI rank: 0\nError: cudaMalloc returned 2: out of memory", "program-amrex", Framework::Unknown, MemoryKind::Device, Some(1_449_379_584)),
            ("amrex::Abort::3::Arena out of memory!!!\nBytes to allocate: 1048576 (1 MiB)\nMemory type: CPU pinned memory\nMPI rank: 3\nError: cudaHostAlloc returned 2: out of memory", "program-amrex", Framework::Unknown, MemoryKind::PinnedHost, Some(1_048_576)),
            ("amrex::Abort::0::Arena out of memory!!!\nBytes to allocate: 1048576 (1 MiB)\nMemory type: CPU memory\nMPI rank: 0\nError: std::malloc returned nullptr", "program-amrex", Framework::Unknown, MemoryKind::Host, Some(1_048_576)),
            ("amrex::Abort::0::Arena out of memory!!!\nBytes to allocate: 8294402048 (7910 MiB)\nMemory type: GPU memory\nMPI rank: 0\nError: Free memory: 4435902464", "program-amrex", Framework::Unknown, MemoryKind::Device, Some(8_294_402_048)),
            ("{legate.mapper}: Failed to allocate 7793280000 bytes on memory 1e00010000000002 (of kind GPU_FB_MEM) for reduction {legate.mapper}: There is not enough space because Legate is reserving 5071753728 of the available 31457280000 bytes for the following LogicalStores:", "program-legate", Framework::Unknown, MemoryKind::Device, Some(7_793_280_000)),
            ("{legate.mapper}: Failed to allocate 1000000 bytes on memory 1e00000000000000 (of kind SYSTEM_MEM) for reduction {legate.mapper}: There is not enough space because Legate is reserving 5 of the available 60 bytes", "program-legate", Framework::Unknown, MemoryKind::Host, Some(1_000_000)),
            ("RuntimeError: TT_FATAL @ bank_manager.cpp:439: false\nOut of Memory: Not enough space to allocate 335544320 B DRAM buffer across 8 banks,\nwhere each bank needs to store 41943040 B, but bank size is 4273390016 B\n(allocated: 4196976832 B, free: 76413184 B, largest free block: 37030336 B)", "program-tt-metal", Framework::Unknown, MemoryKind::Device, Some(335_544_320)),
            ("Out of Memory: Not enough space to allocate 6400 B L1_SMALL buffer across 25 banks, where each bank needs to store 256 B", "program-tt-metal", Framework::Unknown, MemoryKind::Device, Some(6400)),
            ("RuntimeError: jit_malloc(): out of memory! Could not allocate 2147483648 bytes of device memory.", "program-drjit", Framework::Unknown, MemoryKind::Device, Some(2_147_483_648)),
            ("RuntimeError: jit_malloc(): out of memory! Could not allocate 4096 bytes of host-pinned memory.", "program-drjit", Framework::Unknown, MemoryKind::PinnedHost, Some(4096)),
            ("RuntimeError: jit_malloc(): out of memory!", "program-drjit", Framework::Unknown, MemoryKind::Host, None),
            ("RuntimeError: cuda_malloc(): out of memory!", "program-drjit", Framework::Unknown, MemoryKind::Device, None),
            ("when I scale the output to 512x512, it crashed with cuda_malloc():out of memory, but when I decrease it to 256x256, it works fine", "program-drjit", Framework::Unknown, MemoryKind::Device, None),
            ("ERROR: Out of dynamic GPU memory (trying to allocate 8 bytes)\nERROR: a exception was thrown during kernel execution.", "program-cudajl-device-malloc", Framework::Cuda, MemoryKind::Device, Some(8)),
            ("MESA: error: CreateSwapchainKHR failed with VK_ERROR_OUT_OF_DEVICE_MEMORY\nMESA: error: zink: couldn't allocate memory: heap=0 size=2035712", "program-zink", Framework::Vulkan, MemoryKind::Device, Some(2_035_712)),
            ("cu 19:17:24 cuda-0    Epoch 345 requires 3.75 GB memory.\n i 19:17:24 kawpowminer Authorized worker ---\ncu 19:17:24 cuda-0    Only 3.75 GB available. Mining suspended on device ...", "program-dag-miner", Framework::Unknown, MemoryKind::Device, Some(4_026_531_840)),
            ("2021-Sep-13 01:21:54: Error: could not allocate memory on GPU 0 to create DAG. Current epoch requires 3071 MB memory for DAG but there is only 2079 MB allowed to allocate in single buffer. Try setting GPU_SINGLE_ALLOC_PERCENT environment variable to 100.", "program-dag-miner", Framework::Unknown, MemoryKind::Device, Some(3071 << 20)),
            ("[2024-10-11 10:02:17] GPU 2 ERROR - failed to allocate ethash DAG buffer\n[2024-10-11 10:02:17] GPU 2 thread exiting with error.\n[2024-10-11 10:02:17] GPU 1 ERROR - failed to allocate ethash DAG buffer\n[2024-10-11 10:02:17] GPU 1 thread exiting with error.", "program-dag-miner", Framework::Unknown, MemoryKind::Device, None),
            ("[2022-05-22 23:24:29] GPU 3 ERROR - insufficient useable buffer size 5351931904 vs 5354026624\n[2022-05-22 23:24:29] GPU 3 ERROR - dag buffer mapping failed -1", "program-dag-miner", Framework::Unknown, MemoryKind::Device, None),
            ("CudaCustomAllocator out of memory\n [requestedSpace:             148560384 B] .........", "program-relion", Framework::Cuda, MemoryKind::Device, Some(148_560_384)),
            ("**GPU1: Allocating DAG (3.33) GB; good for epoch up to #298\nCUDA error in CudaProgram.cu:373 : out of memory (2)\nGPU1: CUDA memory: 4.00 GB total, 3.30 GB free\nGPU1 initMiner error: out of memory**", "program-dag-miner", Framework::Cuda, MemoryKind::Device, Some(3_575_560_274)),
            ("E/Adreno-GSL﹕ <ioctl_kgsl_sharedmem_alloc:1532>: ioctl_kgsl_sharedmem_alloc: FATAL ERROR : (null)", "program-adreno", Framework::Unknown, MemoryKind::Device, None),
            ("[09:41:23] Maximum buffer memory device 0 supports says 134217728\n[09:41:23] Your settings come to 536870912\n[09:41:23] Error -61: clCreateBuffer (padbuffer8), decrease TC or increase LG", "program-sgminer", Framework::OpenCl, MemoryKind::Device, Some(536_870_912)),
            ("An application has requested more GPU memory than is\navailable in the system.\nThe application will now be closed.\n\n\nError code: 6", "program-nvidia-opengl", Framework::OpenGl, MemoryKind::Device, None),
            ("[2023-04-27.23:02:15] [Info] Generating 48,640,000 starting points (1855.5MB)\n[2023-04-27.23:02:15] [Info] Error: out of memory", "program-bitcrack", Framework::Cuda, MemoryKind::Device, None),
            ("[guppy/info] CUDA device 0 (compute 8.6) initialised, memory limit 4100456448B (3938451456B free)\n[guppy/info] CUDA device 0 reached memory limit while trying to allocate 414853888 bytes, currently at 3317279728/4100456448", "program-guppy", Framework::Cuda, MemoryKind::Device, Some(414_853_888)),
            ("RSX: Detected 8238 MB of device local memory\n·F 0:01:11.574384 SIG: Thread terminated due to fatal error: Verification failed (object: 0x0)\n(in file D:\\a\\rpcs3\\rpcs3\\rpcs3\\Emu\\RSX\\VK\\VKGSRender.cpp:1006[:2], in function 'bool VKGSRender::on_vram_exhausted(rsx::problem_severity)')", "program-rpcs3", Framework::Vulkan, MemoryKind::Device, None),
            ("vkAllocateMemory(): \n> pAllocateInfo->allocationSize is 2707,200,000 bytes from heap 2,\n> but size of that heap is only 224395264 bytes. \n> [vulkan] Error: VkResult = -2", "program-vulkan-validation", Framework::Vulkan, MemoryKind::Device, Some(2_707_200_000)),
            ("Validation Error: [ VUID-vkAllocateMemory-pAllocateInfo-01713 ] Object 0: handle = 0x55d7e6658520, type = VK_OBJECT_TYPE_DEVICE; | MessageID = 0xe9a2b96f | vkAllocateMemory: attempting to allocate 268435456 bytes from heap 2,but size of that heap is only 257949696 bytes.", "program-vulkan-validation", Framework::Vulkan, MemoryKind::Device, Some(268_435_456)),
            ("psql:ssbm.sql:318: ERROR:  gpu_service.c:1727  failed on gpuMemAllocManaged: 165284232\nHINT:  device at GPU-0, function at gpuservHandleGpuTaskExec", "program-pg-strom", Framework::Cuda, MemoryKind::Device, Some(165_284_232)),
            ("ERROR:  gpu_service.c:3285  failed on gpuMemAlloc(536878168)", "program-pg-strom", Framework::Cuda, MemoryKind::Device, Some(536_878_168)),
            ("2021-03-22T19:54:57.705913 E 118135 615 BufferMgr.cpp:410 ALLOCATION failed to find 256000000B throwing out of memory GPU_MGR:1", "program-heavydb", Framework::Unknown, MemoryKind::Device, Some(256_000_000)),
            ("E 1 BufferMgr.cpp:410 ALLOCATION failed to find 256000000B throwing out of memory CPU_MGR:0", "program-heavydb", Framework::Unknown, MemoryKind::Host, Some(256_000_000)),
            ("dgl._ffi.base.DGLError: [09:57:10] /opt/dgl/src/array/cuda/csr_transpose.cc:83: Check failed: e == CUSPARSE_STATUS_SUCCESS: CUSPARSE ERROR: 2", "glog-check", Framework::Cuda, MemoryKind::Device, None),
            ("[17:45:39] g:\\mxnet\\src\\storage\\./pinned_memory_storage.h:54: Check failed: e == cudaSuccess || e == cudaErrorCudartUnloading CUDA: out of memory", "cuda-relay", Framework::Cuda, MemoryKind::PinnedHost, None),
            ("2020-04-09 18:12:35,082 FATAL [default] Check failed: [error == cudaSuccess]  out of memory", "cuda-relay", Framework::Cuda, MemoryKind::Device, None),
            ("RuntimeError: Critical error in pipeline: CUDA allocation failed\nCurrent pipeline object is no longer valid.", "program-dali", Framework::Cuda, MemoryKind::Device, None),
            ("File \"/x/nvidia/dali/pipeline.py\", line 529, in share_outputs\nRuntimeError: Can't allocate 1073741824 bytes on device 1.", "program-dali", Framework::Cuda, MemoryKind::Device, Some(1 << 30)),
            ("File \"/x/nvidia/dali/pipeline.py\", line 529, in share_outputs\nRuntimeError: Can't allocate 4096 bytes on host.", "program-dali", Framework::Cuda, MemoryKind::PinnedHost, Some(4096)),
            ("Failed to allocate. Freeing memory cache and retrying.\nFailed to allocate again.\nError during forward propagation:\n  ConvolutionCudaCudnn", "program-nnabla", Framework::Cuda, MemoryKind::Device, None),
            ("12:07:51.683 WARNING LIMITEDRESOURCE.32 LimitedResource(GPU) reached its limit  reqsize(157mb) used(432.731mb) limit(512mb)\n12:07:51.685 INFO GLTEXTURE.160 Failed to acquire gpu memory (157mb), GLCreateTexture::setArray failed", "program-visus", Framework::OpenGl, MemoryKind::Device, Some(157 << 20)),
            ("OpenGL out of memory  reqsize(1.5gb) os_free_memory(800.0mb)\nFailed to upload texture Failed to allocate gpu memory (1.5gb), GLCreateTexture::setArray failed", "program-visus", Framework::OpenGl, MemoryKind::Device, Some(3 << 29)),
            ("OpenGL out of memory  reqsize(1.5GB) os_free_memory(800.0MB)", "program-visus", Framework::OpenGl, MemoryKind::Device, Some(3 << 29)),
            ("DRM_IOCTL_PANFROST_CREATE_BO failed: Cannot allocate memory\nDRM_IOCTL_PANFROST_MMAP_BO failed: No such file or directory", "program-mesa-bo", Framework::Unknown, MemoryKind::Device, None),
            ("GS: Memory allocation failure.", "program-pcsx2", Framework::Unknown, MemoryKind::Device, None),
            ("[GS] GS: Memory allocation failure for 4096x4096 texture after purging pool.", "program-pcsx2", Framework::Unknown, MemoryKind::Device, None),
            ("[RenderSystem] Failed to allocate GPU memory for object.\n[RenderSystem] Attempting fallback GPU allocation in system memory.\n[RenderSystem] ERROR! VK call failed! result = VK_ERROR_OUT_OF_HOST_MEMORY (vkAllocateMemory)", "program-source2", Framework::Vulkan, MemoryKind::Device, None),
            ("[ERROR@RIF]: RIF_ERROR_OUT_OF_VIDEO_MEMORY at file AIFilters.cpp line 620", "program-prorender", Framework::Unknown, MemoryKind::Device, None),
            ("ERROR | RPR call ContextRender(<pyrpr.Context object at 0x12cb83990>) returned error code <-3> with error message: ''", "program-prorender", Framework::Unknown, MemoryKind::Device, None),
            ("RPR call ContextRender(<pyrpr.Context object at 0x1>) returned error code <ERROR_OUT_OF_SYSTEM_MEMORY<-2>> with error message: ''", "program-prorender", Framework::Unknown, MemoryKind::Host, None),
            ("kernel: vc4-drm soc:gpu: failed to allocate buffer with size 16777216\nkernel: [drm:vc4_bo_create [vc4]] *ERROR* Failed to allocate from CMA:", "program-drm-cma", Framework::Unknown, MemoryKind::Device, Some(16_777_216)),
            ("vc4_v3d 3fc00000.v3d: Failed to allocate memory for tile binning: -12. You may need to enable CMA or give it more memory.", "program-drm-cma", Framework::Unknown, MemoryKind::Device, None),
            ("RuntimeError: Error while calling cudaMalloc(&data, new_size*sizeof(float)) in file /tmp/dlib/dlib/cuda/gpu_data.cpp:195. code: 2, reason: out of memory", "program-dlib", Framework::Cuda, MemoryKind::Device, None),
            ("RuntimeError: Error while calling cudnnConvolutionForward(context(), &alpha, x, y) in file dlib/cuda/cudnn_dlibapi.cpp:1007. code: 2, reason: CUDA Resources could not be allocated.", "program-dlib", Framework::Cuda, MemoryKind::Device, None),
            ("Error while calling cusolverDnSgetrf_bufferSize(context(), m, n, a, lda, &work) in file dlib/cuda/cusolver_dlibapi.cpp:120. code: 2, reason: CUDA Resources could not be allocated.", "program-dlib", Framework::Cuda, MemoryKind::Device, None),
            ("[2022-04-16 00:24:26.907]  opencl   error CL_INVALID_BUFFER_SIZE when calling clCreateBuffer with buffer size 2181038080", "program-xmrig-opencl", Framework::OpenCl, MemoryKind::Device, Some(2_181_038_080)),
            ("ERROR 2019-07-04T08:04:30Z: rendy_memory::heaps: All suitable heaps are exhausted. Heaps {\n    types: [", "program-rendy", Framework::Vulkan, MemoryKind::Device, None),
            ("[22:11:06][0x0000700001afe000] CUDA: failed to alloc memory", "cuda-relay", Framework::Cuda, MemoryKind::Device, None),
            ("RuntimeError: TT_THROW @ tt_metal/impl/allocator/allocator.cpp:107: tt::exception\ninfo:\nOut of Memory: Not enough space to allocate {} B {} buffer across {} banks, where each bank needs to store {} B\n148897792\nDRAM\n8\n18612224\nbacktrace:", "program-tt-metal", Framework::Unknown, MemoryKind::Device, Some(148_897_792)),
        ];
        for (text, format, fw, memory, req) in cases {
            let o = read(text).unwrap_or_else(|| panic!("not found: {text}"));
            assert_eq!(
                (o.format, o.framework, o.memory, o.facts.requested_bytes),
                (*format, *fw, *memory, *req),
                "{text}"
            );
        }
    }

    /// GrinGoldMiner's free and total are the device's before the failed buffer (its label's
    /// "4GB" is not read); MoltenVK's maximum is a limit, not the request, which its user
    /// redacted here.
    #[test]
    fn grin_gold_miner_and_moltenvk_figures() {
        let o = read("Starting CUDA solver process on device 1\nCurrently available amount of device memory: 7005339648 bytes\nTotal amount of device memory: 8589934592 bytes\nstatus: out of memory\ncudaMalloc failed buffer A 4GB!\nUnexpected data from C++ (expected #r): Currently available amount of device memory: 7005339648 bytesTotal amount of device memory: 8589934592 bytesstatus: out of memorycudaMalloc failed buffer A 4GB!CUDA terminating...#x").expect("found");
        assert_eq!(o.format, "program-grin-gold-miner");
        assert_eq!(
            (
                o.device_index,
                o.facts.free_bytes,
                o.facts.total_bytes,
                o.facts.requested_bytes
            ),
            (Some(1), Some(7_005_339_648), Some(8_589_934_592), None)
        );
        let o = read("[mvk-error] VK_ERROR_OUT_OF_DEVICE_MEMORY: Could not allocate a host-coherent VkDeviceMemory of size [xxxxxxxxxx] bytes. The maximum memory-aligned size of a host-coherent VkDeviceMemory is 268435456 bytes.").expect("found");
        assert_eq!(o.format, "program-moltenvk");
        assert_eq!(
            (
                o.facts.requested_bytes,
                o.facts.max_alloc_bytes,
                o.facts.total_bytes
            ),
            (None, Some(268_435_456), None)
        );
    }

    /// lolMiner's rig: the last GPU to fail is read (Lolliedieb/lolMiner-releases#284).
    #[test]
    fn lolminers_last_dag_failure_gives_the_device() {
        let o = read("GPU 4: Allocation of DAG failed with error: Memory object allocation failure\nGPU 4: will be stopped.\nGPU 0: Allocation of DAG failed with error: Memory object allocation failure\nGPU 0: will be stopped.").expect("found");
        assert_eq!((o.format, o.device_index), ("program-dag-miner", Some(0)));
    }

    /// Guppy's figures are its memory manager's: what it holds and its limit on the device,
    /// with what was free when that device was initialised; a request of 0 bytes is not what
    /// ran out (nanoporetech/megalodon#254). RPCS3's device-local heap is the card's memory.
    #[test]
    fn guppy_and_rpcs3_figures() {
        let o = read("[guppy/info] CUDA device 1 (compute 7.5) initialised, memory limit 11551440896B (11124080640B free)\n[guppy/info] CUDA device 0 (compute 7.5) initialised, memory limit 4100456448B (3938451456B free)\n[guppy/info] CUDA device 0 reached memory limit while trying to allocate 414853888 bytes, currently at 3317279728/4100456448").expect("found");
        let f = &o.facts;
        assert_eq!(
            (
                o.device_index,
                f.allocated_bytes,
                f.total_bytes,
                f.total_is_limit,
                f.startup_free_bytes
            ),
            (
                Some(0),
                Some(3_317_279_728),
                Some(4_100_456_448),
                true,
                Some(3_938_451_456)
            )
        );
        assert!(read("[guppy/info] CUDA device 0 reached memory limit while trying to allocate 0 bytes, currently at 64/11551440896").is_none());
        let o = read("·! 0:01:11.550920 RSX: Detected 8238 MB of device local memory\n·F 0:01:11.574384 SIG: Thread terminated due to fatal error: Verification failed (object: 0x0)\n(in file VKGSRender.cpp:1006[:2], in function 'bool VKGSRender::on_vram_exhausted(rsx::problem_severity)')").expect("found");
        assert_eq!(o.facts.total_bytes, Some(8238 << 20));
        // The handler named without a failure is not one.
        assert!(
            read("in function 'bool VKGSRender::on_vram_exhausted(rsx::problem_severity)'")
                .is_none()
        );
    }

    /// TT-Metalium's banks hold a buffer in lockstep: each bank's figures times the banks are
    /// the memory type's, marked derived; the request is as printed. Its device is not a GPU
    /// NVML sees: the finding names it and its own tool.
    #[test]
    fn tt_metal_figures_over_its_banks() {
        let o = read("TT_FATAL: Out of Memory: Not enough space to allocate 3294625792 B DRAM buffer across 12 banks, where each bank needs to store 274686208 B, but bank size is 1071821792 B (allocated: 784847680 B, free: 286974112 B, largest free block: 216504544 B) (assert.hpp:104)").expect("found");
        let f = &o.facts;
        assert_eq!(
            (
                f.requested_bytes,
                f.total_bytes,
                f.allocated_bytes,
                f.free_bytes
            ),
            (
                Some(3_294_625_792),
                Some(1_071_821_792 * 12),
                Some(784_847_680 * 12),
                Some(286_974_112 * 12)
            )
        );
        assert_eq!(f.derived, ["total_bytes", "allocated_bytes", "free_bytes"]);
        let findings = super::super::diagnose::diagnose(&o);
        assert!(findings[0].title.contains("on the Tenstorrent device"));
        assert!(findings[0].remedies[0].text.contains("tt-smi"));
        // The older message ends at the bank's size.
        let old = read("Out of Memory: Not enough space to allocate 117440512 B DRAM buffer across 12 banks, where each bank needs to store 9787392 B, but bank size is only 1046181792 B (assert.hpp:103)").expect("found");
        assert_eq!(
            (old.facts.total_bytes, old.facts.free_bytes),
            (Some(1_046_181_792 * 12), None)
        );
    }

    /// A program's request over the largest single allocation is said to be one buffer too
    /// large (the program's finding stands alone, so it must say it itself).
    #[test]
    fn a_programs_buffer_over_the_single_allocation_cap() {
        let o = read("Error: could not allocate memory on GPU 0 to create DAG. Current epoch requires 3071 MB memory for DAG but there is only 2079 MB allowed to allocate in single buffer.").expect("found");
        let findings = super::super::diagnose::diagnose(&o);
        assert!(
            findings[0].detail.contains("in one allocation"),
            "{}",
            findings[0].detail
        );
    }

    /// OpenGL's and EGL's memory statuses by name; a GPU API's success printed as a failure's
    /// result is no failure.
    #[test]
    fn opengl_statuses_and_a_printed_success() {
        for t in [
            "Abort message: 'glTexImage2D error! GL_OUT_OF_MEMORY (0x505)'",
            "W/HardwareRenderer(17164): EGL error: EGL_BAD_ALLOC",
        ] {
            let o = read(t).unwrap_or_else(|| panic!("not found: {t}"));
            assert_eq!(
                (o.framework, o.memory),
                (Framework::OpenGl, MemoryKind::Device),
                "{t}"
            );
        }
        let t = "[opencl copy_host_to_device_constant] could not allocate oversize buffer on device 'NVIDIA RTX' id=0: CL_SUCCESS";
        assert!(read(t).is_none(), "{t}");
    }

    /// A relay's size and device from the failure's own line, where the text's others differ.
    #[test]
    fn the_failures_own_line_gives_its_size_and_device() {
        let t = " * GPU #0:       GeForce GTX 760\n * GPU #1:       GeForce GTX 560 Ti\n[CUDA] Error gpu 1: <cryptonight_extra_cpu_init>:193 \"out of memory\"\n  what():  [CUDA] Error: out of memory";
        assert_eq!(read(t).and_then(|o| o.device_index), Some(1));
        let t = "[libplacebo] Allocation of size   15M failed: VK_ERROR_OUT_OF_DEVICE_MEMORY!\n[libplacebo] Memory heaps supported by device:\n[libplacebo]     0: flags 0x1 size 8018M\n[libplacebo]     1: flags 0x0 size   15G\n[libplacebo]     2: flags 0x1 size  214M";
        let o = read(t).expect("found");
        assert_eq!(
            (o.facts.requested_bytes, o.facts.total_bytes),
            (Some(15 << 20), Some(8018 << 20))
        );
        let t = "Failed to clCreateBuffer(ctx, CL_MEM_READ_WRITE, 48771072, nullptr, ...)\nError: ocl_args_d_t::allocMem:284 returned CL_MEM_OBJECT_ALLOCATION_FAILURE.";
        assert_eq!(
            read(t).and_then(|o| o.facts.requested_bytes),
            Some(48_771_072)
        );
    }

    /// ND4J names the device it allocated on (`getDeviceForCurrentThread`).
    #[test]
    fn nd4j_names_its_device() {
        let o = read("java.lang.RuntimeException: Failed to allocate 2000000000 bytes from DEVICE [1] memory").expect("found");
        assert_eq!(
            (o.format, o.device_index, o.facts.requested_bytes),
            ("program-nd4j", Some(1), Some(2_000_000_000))
        );
        let o = read("java.lang.RuntimeException: cudaMalloc failed; Bytes: [4096]; Error code [2]; DEVICE [3]").expect("found");
        assert_eq!(
            (o.format, o.device_index, o.facts.requested_bytes),
            ("program-nd4j", Some(3), Some(4096))
        );
    }

    /// An API's status where a program prints it in its own order (ethminer's call then number,
    /// VulkanMod's words then VkResult, SDL's Direct3D name without its prefix), and a
    /// page-locking call named on the status's line.
    #[test]
    fn statuses_in_a_program_s_own_order() {
        for (text, format) in [
            ("  ✘  15:16:38|cl-0      Run: 0  ,OpenCL Error: clEnqueueNDRangeKernel -4", "api-CL_MEM_OBJECT_ALLOCATION_FAILURE"),
            ("java.lang.RuntimeException: Failed to create buffer:-2\n\tat net.vulkanmod.vulkan.memory.MemoryManager.createBuffer(MemoryManager.java:75)", "api-VK_ERROR_OUT_OF_DEVICE_MEMORY"),
            ("SDL : src/cata_tiles.cpp:393: failed to create texture: CreateTexture(D3DPOOL_DEFAULT): OUTOFVIDEOMEMORY", "api-D3DERR_OUTOFVIDEOMEMORY"),
        ] {
            let o = read(text).unwrap_or_else(|| panic!("not found: {text}"));
            assert_eq!((o.format, o.memory), (format, MemoryKind::Device), "{text}");
        }
        let o = read("Cuda error: 2[cudaMallocHost((void**)&h, n);]").expect("found");
        assert_eq!((o.format, o.memory), ("cuda-code", MemoryKind::PinnedHost));
        let o = read("Error while calling cudaMallocHost(&data, n) in file gpu_data.cpp:181. code: 2, reason: out of memory").expect("found");
        assert_eq!(
            (o.format, o.memory),
            ("program-dlib", MemoryKind::PinnedHost)
        );
    }

    /// The same words around another status, or without the program's words where they are
    /// every program's, are not the program's out-of-memory failure.
    #[test]
    fn programs_other_statuses_are_not_theirs() {
        for text in [
            "Error creating array posq: CUDA_ERROR_ILLEGAL_ADDRESS (700)",
            "java.lang.RuntimeException: cudaMalloc failed; Bytes: [4096]; Error code [700]; DEVICE [0]",
            "OpenMMException: Error creating array posq: clCreateBuffer (-30)",
            "[h264_nvenc @ 0x1] OpenEncodeSessionEx failed: unsupported device (2): (no details)",
            "[h264_nvenc @ 0x1] Failed creating CUDA context for NVENC: 0x3",
            "[h264_nvenc @ 0x1] Failed creating CUDA context for NVENC: 0x2a",
            "std::runtime_error - kernel queueing failed (res = -5)",
            // SiftGPU's check with another status.
            "MultiplyDescriptor:\tan illegal memory access was encountered\nPC: @ 0xc2a87b SiftMatchCU::GetBestMatch()",
            "std::runtime_error - kernel queueing failed (res = -54)",
            // RobertBeckebans/RBDOOM-3-BFG#970: MoltenVK's status for a Metal page fault.
            "[mvk-error] VK_ERROR_OUT_OF_DEVICE_MEMORY: MTLCommandBuffer \"vkQueueSubmit MTLCommandBuffer on Queue 0-0\" execution failed (code 3): Caused GPU Address Fault Error (0000000b:kIOGPUCommandBufferCallbackErrorPageFault)",
            "2020-08-14 host.domain cuda/DeviceMemoryPtr.cpp:133 - VRAM allocation using cudaHostAlloc, size: 2048000000, attempt: 1",
            "[AVHWFramesContext @ 0x1] cu->cuMemAlloc(&data->ptr, size) failed -> CUDA_ERROR_INVALID_VALUE: invalid argument",
            "Allocation of the device buffer failed. CUDA error #700 (cudaErrorIllegalAddress): an illegal memory access was encountered.",
            "hashcat (v6.2.6) starting\ncuMemAlloc(): an illegal memory access was encountered",
            "hashcat (v6.2.6) starting\nclEnqueueNDRangeKernel(): CL_OUT_OF_RESOURCES",
            "I keep getting System is out of GPU memory when rendering my scene, any idea?",
            "realesrgan-ncnn-vulkan\nvkAllocateMemory failed -4",
            "java.lang.RuntimeException: memset failed on device_0",
            "PxgCudaDeviceMemoryAllocator fail to allocate memory 4096 bytes!! Result = 700",
            "Check failed: e == CUSPARSE_STATUS_SUCCESS: CUSPARSE ERROR: 7",
            // kokkos/kokkos#6865: cudaMalloc on a MIG slice returned cudaErrorNotSupported.
            "what():  Kokkos failed to allocate memory for label \"Kokkos::InternalScratchSpace\".  Allocation using MemorySpace named \"Cuda\" failed with the following error:  Allocation of size 64.12 K failed because of an unknown error.  (The allocation mechanism was cudaMalloc().  The Cuda allocation returned the error code \"cudaErrorNotSupported\".)",
            // Another status in the same checks and retries; PCSX2's retry, which may succeed.
            "[GS] GS: Memory allocation failure for 4096x4096 texture. Purging pool and retrying.",
            "FATAL [default] Check failed: [error == cudaSuccess]  invalid argument",
            "RPR call ContextRender(<pyrpr.Context object at 0x1>) returned error code <-5> with error message: ''",
            "DRM_IOCTL_PANFROST_CREATE_BO failed: Invalid argument",
            // nnabla's CPU context: the same allocator, the host's memory.
            "Failed to allocate. Freeing memory cache and retrying.\nFailed to allocate again.\nError during forward propagation:\n  AffineCpu",
            // KhronosGroup/MoltenVK#580: a query pool past Metal's count, said as device memory.
            "[***MoltenVK ERROR***] VK_ERROR_OUT_OF_DEVICE_MEMORY: vkCreateQueryPool(): Each query pool can support a maximum of 8192 queries.",
            // astra-toolbox/astra-toolbox#316: a PTX toolchain error, then its failed buffer.
            "Error: CUDA error 222: the provided PTX was compiled with an unsupported toolchain..\nError: Failed to allocate 512x512 GPU buffer",
            // dlib's check with another status (CUDA's code is cudaGetLastError's in some
            // releases: the string decides).
            "Error while calling cudaMalloc(&data, n) in file gpu_data.cpp:195. code: 2, reason: an illegal memory access was encountered",
            // VulkanMod with another VkResult (-3, VK_ERROR_INITIALIZATION_FAILED).
            "java.lang.RuntimeException: Failed to create buffer:-3\n\tat net.vulkanmod.vulkan.memory.MemoryManager.createBuffer(MemoryManager.java:75)",
            // OpenVINO's force exit follows only CL_OUT_OF_RESOURCES: alone it is not read.
            "[GPU] force exit.",
            // davisking/dlib#391: pinned host memory, by its call.
            "Error while calling cudaMallocHost(&data, new_size*sizeof(float)) in file C:\\dlib\\dlib\\dnn\\gpu_data.cpp:181. code: 2, reason: out of memory",
        ] {
            let found = read(text).filter(|o| o.memory == MemoryKind::Device);
            assert!(found.is_none(), "{text}: {found:?}");
        }
        // Kokkos' status is looked for within 400 bytes, cut at a character's boundary: a
        // two-byte character across it does not panic.
        for pad in [0, 1] {
            let text = format!("Kokkos failed to allocate memory for label \"a\".  Allocation using MemorySpace named \"Cuda\" failed with the following error:  Allocation of size 4 G failed{}{}", " ".repeat(pad), "é".repeat(300));
            assert!(read(&text).is_some());
        }
        // Words every program prints are not one program's.
        for (text, format) in [
            (
                "vkAllocateMemory failed -2",
                "api-VK_ERROR_OUT_OF_DEVICE_MEMORY",
            ),
            ("cuMemAlloc(): CUDA_ERROR_OUT_OF_MEMORY", "cuda"),
        ] {
            let o = read(text).unwrap_or_else(|| panic!("not found: {text}"));
            assert_eq!(o.format, format, "{text}");
        }
        assert!(read("Out of memory in cuMemAlloc(&ptr, n)")
            .is_none_or(|o| !o.format.starts_with("program-")));
    }

    #[test]
    fn caffe_darknet_and_opencv() {
        let cases: &[(&str, Framework, &str)] = &[
            ("F0412 12:00:00.123456 12345 syncedmem.cpp:56] Check failed: error == cudaSuccess (2 vs. 0)  out of memory\n*** Check failure stack trace: ***\n    @     0x7f1d2a0b1daa  (unknown)\n    @     0x7f1d2a8a0b4e  caffe::SyncedMemory::to_gpu()", Framework::Caffe, "caffe-check"),
            // glog's prefix (which names the file) is taken off before reading: without Caffe's
            // frames the check is CUDA's.
            ("F0412 12:00:00.123456 12345 syncedmem.cpp:56] Check failed: error == cudaSuccess (2 vs. 0)  out of memory", Framework::Cuda, "glog-check"),
            ("F1203 08:11:21.612 1 math_functions.cu:79] Check failed: status == CUBLAS_STATUS_SUCCESS (3 vs. 0)  CUBLAS_STATUS_ALLOC_FAILED\n*** Check failure stack trace: ***\n    @     0x7f2b  caffe::caffe_gpu_gemm<>()", Framework::Caffe, "caffe-check"),
            ("F0101 00:00:00.000 1 fft.cpp:40] Check failed: cufftPlanMany(&plan, 2, n, NULL, 1, 0, NULL, 1, 0, CUFFT_R2C, batch) == CUFFT_SUCCESS (2 vs. 0)", Framework::Cuda, "glog-check"),
            ("F0101 00:00:00.000 1 gpu.cc:9] Check failed: e == hipSuccess (2 vs. 0)", Framework::Rocm, "glog-check"),
            ("F0101 00:00:00.000 1 gpu_ops.cc:9] Check failed: e == cudaSuccess (2 vs. 0)  out of memory", Framework::Cuda, "glog-check"),
            ("CUDA Error: out of memory\ndarknet: ./src/cuda.c:36: check_error: Assertion `0' failed.", Framework::Darknet, "darknet-cuda"),
            (" Try to set subdivisions=64 in your cfg-file. \n CUDA Error: out of memory\nDarknet error location: ./src/dark_cuda.c, check_error, line #70\nCUDA Error: out of memory: File exists", Framework::Darknet, "darknet-cuda"),
            ("OpenCV(4.5.1) /tmp/opencv/modules/core/src/cuda/gpu_mat.cu:116: error: (-217:Gpu API call) out of memory in function 'allocate'", Framework::OpenCv, "opencv-cuda"),
            ("GPUassert: out of memory kernel.cu 42", Framework::Cuda, "cuda-relay"),
            ("ERROR: out of memory in /home/u/relion2-beta/src/gpu_utils/cuda_mem_utils.h at line 572 (error-code 2)", Framework::Cuda, "cuda-relay"),
            ("CUDA error !!!!! <out of memory> !!!!! \nat CUDA call error code: # 2402", Framework::Cuda, "cuda-relay"),
            ("OpenCV Error: Gpu API call (out of memory) in CudaFuncTable::mallocPitch, file E:\\opencv\\sources\\modules\\dynamicuda\\include\\opencv2/dynamicuda/dynamicuda.hpp, line 1134", Framework::OpenCv, "opencv-cuda"),
            ("CUDA error in file 'main.cu' in line 123 : out of memory.", Framework::Cuda, "cuda-relay"),
            ("[CUDA] Error: out of memory", Framework::Cuda, "cuda-relay"),
            // ethminer: a PCI bus address is no device index.
            ("cu 16:40:30 cuda-0   Unexpected error CUDA error in func dev::eth::CUDAMiner::initEpoch_internal at line 123 out of memory on CUDA device 01:00.0", Framework::Cuda, "cuda-relay"),
            ("TVMError: Check failed: (e == cudaSuccess || e == cudaErrorCudartUnloading) is false: CUDA: out of memory", Framework::Cuda, "cuda-relay"),
            ("CUDA error in func ethash_generate_dag at line 173 calling cudaGetLastError() failed with error out of memory", Framework::Cuda, "cuda-relay"),
            // cuew's status in words before the call that returned it, with no program named.
            ("Failed to create CUDA context (Illegal address)\nOut of memory in cuMemAlloc(&device_pointer, size)", Framework::Cuda, "cuda-relay"),
        ];
        for (text, fw, format) in cases {
            let o = read(text).unwrap_or_else(|| panic!("not found: {text}"));
            assert_eq!((o.framework, o.format), (*fw, *format), "{text}");
        }
        let o = read("Unexpected error CUDA error in func dev::eth::CUDAMiner::initEpoch_internal at line 123 out of memory on CUDA device 01:00.0").expect("found");
        assert_eq!(o.device_index, None);
        // ethminer's log channel names the CUDA index where the device is a bus address.
        let a = crate::oom::analyze("cu 19:58:37 cuda-3   Unexpected error CUDA error in func dev::eth::CUDAMiner::initEpoch_internal at line 123 out of memory on CUDA device 05:00.0");
        assert_eq!(a.main().and_then(|o| o.device_index), Some(3));
        let o = read("CUDA error in file 'main.cu' in line 12 : out of memory on device 1")
            .expect("found");
        assert_eq!(o.device_index, Some(1));
        // Charm++'s GPU manager names the page-locking call on the next line
        // (charmplusplus/charm#1488).
        let o = read("Fatal CUDA Error out of memory at cuda-hybrid-api.cu:790.\nReturn value 2 from 'cudaMallocHost(&pinnedChunk, bufSize * numBuffers)'.").expect("found");
        assert_eq!(o.memory, MemoryKind::PinnedHost);
        // cv::cuda::HostMem's page-locked buffer (opencv/opencv#23392).
        let o = read("opencv/modules/core/src/cuda_host_mem.cpp:95: error: (-217:Gpu API call) out of memory in function 'allocate'").expect("found");
        assert_eq!(o.memory, MemoryKind::PinnedHost);
        // cuew's relay of a host allocation: pinned host memory.
        let o = read("Out of memory in cuMemAllocHost(&shared_pointer, size)").expect("found");
        assert_eq!(o.memory, MemoryKind::PinnedHost);
        for text in [
            "Out of memory in curl_easy_perform(handle)",
            "Illegal address in cuMemcpyDtoH(mem, ptr, size)",
            "F0101 00:00:00.000 1 fft.cpp:40] Check failed: status == CUFFT_SUCCESS (5 vs. 0)",
            "F0412 12:00:00.123456 12345 syncedmem.cpp:56] Check failed: error == cudaSuccess (77 vs. 0)  an illegal memory access was encountered",
            "F0412 12:00:00.1 1 cudnn_conv_layer.cpp:53] Check failed: status == CUDNN_STATUS_SUCCESS (4 vs. 0)  CUDNN_STATUS_INTERNAL_ERROR",
            "CUDA Error: an illegal memory access was encountered\ndarknet: ./src/cuda.c:36: check_error: Assertion `0' failed.",
            // MoltenVK's lost device labelled with the memory status, its Metal cause a fault.
            "[mvk-error] VK_ERROR_OUT_OF_DEVICE_MEMORY: Lost VkDevice after MTLCommandBuffer \"mainCmd0\" execution failed (code 3): Caused GPU Address Fault Error (0000000b:kIOGPUCommandBufferCallbackErrorPageFault)",
        ] {
            assert!(read(text).is_none(), "{text}");
        }
        // The same lost device whose Metal cause is memory (code 8) is an out-of-memory.
        assert!(read("[mvk-error] VK_ERROR_OUT_OF_DEVICE_MEMORY: Lost VkDevice after MTLCommandBuffer \"x\" execution failed (code 8): Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)").is_some());
    }

    /// Theano's driver figures and Cycles' status figures are read; Blender's frame line (the
    /// host's memory) is not Cycles' device memory.
    #[test]
    fn theano_and_cycles_figures() {
        let o = read("I'm getting an \"Error allocating 45158400 bytes of device memory (out of memory). Driver report 44666880 bytes free and 536543232 bytes total\" running the example").expect("quoted with figures");
        assert_eq!(
            (
                o.format,
                o.facts.requested_bytes,
                o.facts.free_bytes,
                o.facts.total_bytes
            ),
            (
                "program-theano",
                Some(45_158_400),
                Some(44_666_880),
                Some(536_543_232)
            )
        );
        let o = read("when I hit render i get following error. Mem: 2960.07M, Peak:2960.07M | CUDA error: Out of memory in cuMemAlloc(&device_pointer, size). I'm using a GTX 690").expect("Cycles");
        assert_eq!(
            (o.format, o.facts.allocated_bytes),
            (
                "program-blender",
                Some((2960.07 * (1u64 << 20) as f64).round() as u64)
            )
        );
        let o = read("Fra:1 Mem:812.50M (0.00M, Peak 1024.00M) | Blender 2.79\nCUDA error: Out of memory in cuMemAlloc(&device_pointer, size), line 568").expect("frame line");
        assert_eq!(
            (o.format, o.facts.allocated_bytes),
            ("program-blender", None)
        );
    }
}
