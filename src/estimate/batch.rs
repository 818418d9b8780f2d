//! The largest batch that fits, measured (`gpumon run --batch N`).
//!
//! The probe measures, over the job's first steps at its batch size N, what the allocator
//! holds between steps (R: weights, optimizer states, anything that lives across steps) and
//! the peak of a step (P). Their difference is what the step adds; divided by N, it is the
//! cost of a sample. The room on the GPU is what PyTorch could reserve there: the GPU's memory
//! less the driver's reservation, the other processes, and the job's own memory outside the
//! allocator (CUDA context, cuBLAS and NCCL workspaces), from NVML and the allocator's figures
//! of the same sample. The allocator reserves more than it hands out (its cache, and blocks
//! split or rounded up); the ratio of its peak reserved to its peak allocated over the same
//! steps measures that, and a margin of at least 5% stays free. Then the largest batch is
//! `(room / (1 + margin) − R) / ((P − R) / N)`.
//!
//! It is an extrapolation, linear in the batch, from one batch size: memory a step allocates
//! whatever the batch (gradients freed between steps with `zero_grad(set_to_none=True)`,
//! workspaces) is counted per sample, so the figure errs low, never high.

use serde::Serialize;

use crate::model::StepMeasure;

/// The least margin left for fragmentation, whatever was measured.
pub const MIN_MARGIN: f64 = 0.05;
/// The most: a measure above it says more about the job's cache than about what a batch needs.
pub const MAX_MARGIN: f64 = 0.5;

/// The GPU's memory as it bears on the job, from one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Room {
    pub total_bytes: u64,
    /// The driver's reservation (NVML v2 `reserved`), outside `used`.
    pub driver_reserved_bytes: u64,
    /// What every other process and unattributed use holds.
    pub others_bytes: u64,
    /// The job's memory outside its allocator: NVML's figure less its reserved.
    pub job_outside_bytes: u64,
}

impl Room {
    /// What the job's allocator could reserve on this GPU.
    pub fn for_allocator(&self) -> u64 {
        self.total_bytes
            .saturating_sub(self.driver_reserved_bytes)
            .saturating_sub(self.others_bytes)
            .saturating_sub(self.job_outside_bytes)
    }
}

/// The measured fit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BatchFit {
    pub measure: StepMeasure,
    pub room: Room,
    /// (P − R) / N.
    pub per_sample_bytes: u64,
    /// Reserved over allocated at the peak, less one, within [`MIN_MARGIN`, `MAX_MARGIN`].
    pub margin: f64,
    /// Whether the margin was measured (the peak reserved was known).
    pub margin_measured: bool,
    /// The largest batch that fits; `None` when a step's peak did not grow over what is held
    /// (nothing to extrapolate from).
    pub largest: Option<u64>,
}

/// The largest batch that fits `room`, from `m`.
pub fn largest_batch(m: &StepMeasure, room: Room) -> BatchFit {
    let batch = u64::from(m.batch.max(1));
    let step = m.peak_bytes.saturating_sub(m.held_bytes);
    let per_sample = step / batch;
    let (margin, margin_measured) = match m.reserved_peak_bytes {
        Some(r) if m.peak_bytes > 0 => (
            (r as f64 / m.peak_bytes as f64 - 1.0).clamp(MIN_MARGIN, MAX_MARGIN),
            true,
        ),
        _ => (MIN_MARGIN * 2.0, false),
    };
    let largest = (per_sample > 0).then(|| {
        let usable = room.for_allocator() as f64 / (1.0 + margin);
        let left = usable - m.held_bytes as f64;
        if left <= 0.0 {
            0
        } else {
            // The step's cost per sample, exactly: (P − R) / N, not its rounding.
            (left * batch as f64 / step as f64).floor() as u64
        }
    });
    BatchFit {
        measure: *m,
        room,
        per_sample_bytes: per_sample,
        margin,
        margin_measured,
        largest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn measure(batch: u32, held: u64, peak: u64, reserved_peak: Option<u64>) -> StepMeasure {
        StepMeasure {
            batch,
            steps: 3,
            held_bytes: held,
            peak_bytes: peak,
            reserved_peak_bytes: reserved_peak,
            training: true,
        }
    }

    #[test]
    fn the_room_per_sample_and_the_measured_margin() {
        // 16 GiB GPU, 256 MiB reserved by the driver, 512 MiB of another process, the job's
        // context 2458 MiB; 6 GiB held, 10 GiB peak at batch 8, 11 GiB reserved at the peak.
        let room = Room {
            total_bytes: 16384 * MIB,
            driver_reserved_bytes: 256 * MIB,
            others_bytes: 512 * MIB,
            job_outside_bytes: 2458 * MIB,
        };
        assert_eq!(room.for_allocator(), 13158 * MIB);
        let fit = largest_batch(&measure(8, 6 * GIB, 10 * GIB, Some(11 * GIB)), room);
        assert_eq!(fit.per_sample_bytes, 512 * MIB);
        assert!((fit.margin - 0.1).abs() < 1e-9 && fit.margin_measured);
        // (13158 / 1.1 − 6144) / 512 = 11.36.
        assert_eq!(fit.largest, Some(11));
    }

    #[test]
    fn margins_are_bounded_and_nothing_to_extrapolate_is_said() {
        let room = Room {
            total_bytes: 80 * GIB,
            driver_reserved_bytes: 0,
            others_bytes: 0,
            job_outside_bytes: 0,
        };
        // A cache that matches the peak: still 5% kept.
        let fit = largest_batch(&measure(4, 10 * GIB, 14 * GIB, Some(14 * GIB)), room);
        assert!((fit.margin - MIN_MARGIN).abs() < 1e-9);
        assert_eq!(fit.largest, Some(((80.0 / 1.05 - 10.0) * 4.0 / 4.0) as u64));
        // Unknown reserved: 10%, not measured.
        let fit = largest_batch(&measure(4, 10 * GIB, 14 * GIB, None), room);
        assert!(!fit.margin_measured && (fit.margin - 0.1).abs() < 1e-9);
        // A step that allocates nothing: no figure.
        assert_eq!(
            largest_batch(&measure(4, 10 * GIB, 10 * GIB, None), room).largest,
            None
        );
        // Held more than the room: 0.
        assert_eq!(
            largest_batch(&measure(4, 79 * GIB, 80 * GIB, None), room).largest,
            Some(0)
        );
    }
}
