//! The names of the metrics `gpumon serve` exports and the fleet reads back from a Prometheus:
//! written once here, so the exporter (`view::metrics`) and the reader (`feed::prometheus`)
//! cannot drift apart. Counters are named as registered; the exposition adds `_total`.

/// dcgm-exporter's names, in its units (MiB, %, °C, W), so its dashboards and alerts work on gpumon.
pub mod dcgm {
    pub const FB_USED: &str = "DCGM_FI_DEV_FB_USED";
    pub const FB_FREE: &str = "DCGM_FI_DEV_FB_FREE";
    pub const FB_RESERVED: &str = "DCGM_FI_DEV_FB_RESERVED";
    pub const GPU_UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
    pub const MEM_COPY_UTIL: &str = "DCGM_FI_DEV_MEM_COPY_UTIL";
    pub const GPU_TEMP: &str = "DCGM_FI_DEV_GPU_TEMP";
    pub const POWER_USAGE: &str = "DCGM_FI_DEV_POWER_USAGE";
    pub const XID_ERRORS: &str = "DCGM_FI_DEV_XID_ERRORS";
    pub const ECC_SBE_VOL_TOTAL: &str = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL";
    pub const ECC_DBE_VOL_TOTAL: &str = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL";
    pub const ECC_SBE_AGG_TOTAL: &str = "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL";
    pub const ECC_DBE_AGG_TOTAL: &str = "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL";
    pub const CORRECTABLE_REMAPPED_ROWS: &str = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS";
    pub const UNCORRECTABLE_REMAPPED_ROWS: &str = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS";
    pub const ROW_REMAP_PENDING: &str = "DCGM_FI_DEV_ROW_REMAP_PENDING";
    pub const ROW_REMAP_FAILURE: &str = "DCGM_FI_DEV_ROW_REMAP_FAILURE";
    pub const CLOCK_THROTTLE_REASONS: &str = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS";
}

/// gpumon's own names, in base units (bytes, ratios, seconds).
pub mod ours {
    pub const BUILD_INFO: &str = "gpumon_build_info";
    pub const GPU_INFO: &str = "gpumon_gpu_info";
    pub const GPU_UP: &str = "gpumon_gpu_up";
    pub const GPU_STALLED: &str = "gpumon_gpu_stalled";
    pub const GPU_DATA_AGE_SECONDS: &str = "gpumon_gpu_data_age_seconds";
    pub const MEMORY_TOTAL_BYTES: &str = "gpumon_memory_total_bytes";
    pub const MEMORY_USED_BYTES: &str = "gpumon_memory_used_bytes";
    pub const MEMORY_FREE_BYTES: &str = "gpumon_memory_free_bytes";
    pub const MEMORY_RESERVED_BYTES: &str = "gpumon_memory_reserved_bytes";
    pub const MEMORY_UNATTRIBUTED_BYTES: &str = "gpumon_memory_unattributed_bytes";
    pub const IDLE_HELD_BYTES: &str = "gpumon_idle_held_bytes";
    pub const GPU_UTILIZATION_RATIO: &str = "gpumon_gpu_utilization_ratio";
    pub const MEMORY_COPY_UTILIZATION_RATIO: &str = "gpumon_memory_copy_utilization_ratio";
    pub const TEMPERATURE_CELSIUS: &str = "gpumon_temperature_celsius";
    pub const POWER_WATTS: &str = "gpumon_power_watts";
    pub const POWER_LIMIT_WATTS: &str = "gpumon_power_limit_watts";
    pub const FAN_RATIO: &str = "gpumon_fan_ratio";
    pub const PROCESSES: &str = "gpumon_processes";
    pub const PROCESS_MEMORY_BYTES: &str = "gpumon_process_memory_bytes";
    pub const USER_MEMORY_BYTES: &str = "gpumon_user_memory_bytes";
    pub const ALLOCATOR_ALLOCATED_BYTES: &str = "gpumon_allocator_allocated_bytes";
    pub const ALLOCATOR_RESERVED_BYTES: &str = "gpumon_allocator_reserved_bytes";
    pub const ALLOCATOR_CACHED_BYTES: &str = "gpumon_allocator_cached_bytes";
    pub const ALLOCATOR_NON_FRAMEWORK_BYTES: &str = "gpumon_allocator_non_framework_bytes";
    pub const ALLOCATOR_ALLOCATED_PEAK_BYTES: &str = "gpumon_allocator_allocated_peak_bytes";
    pub const ALLOCATOR_RESERVED_PEAK_BYTES: &str = "gpumon_allocator_reserved_peak_bytes";
    pub const RUN_STEP_GROWTH_BYTES: &str = "gpumon_run_step_growth_bytes";
    pub const XID_ERRORS: &str = "gpumon_xid_errors";
    pub const XID_WATCHED: &str = "gpumon_xid_watched";
    pub const ECC_ERRORS: &str = "gpumon_ecc_errors";
    pub const REMAPPED_ROWS: &str = "gpumon_remapped_rows";
    pub const REMAPPED_ROWS_PENDING: &str = "gpumon_remapped_rows_pending";
    pub const REMAPPED_ROWS_FAILED: &str = "gpumon_remapped_rows_failed";
    pub const CLOCK_EVENT_REASON: &str = "gpumon_clock_event_reason";
    pub const SAMPLE_ERROR: &str = "gpumon_sample_error";
    pub const SAMPLE_DURATION_SECONDS: &str = "gpumon_sample_duration_seconds";
    pub const SAMPLE_TIMESTAMP_SECONDS: &str = "gpumon_sample_timestamp_seconds";
    pub const SCRAPE_DURATION_SECONDS: &str = "gpumon_scrape_duration_seconds";
}

/// Prometheus's own series: whether its last scrape of a target worked.
pub const UP: &str = "up";
