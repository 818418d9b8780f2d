//! Memory that grows step after step (`total_loss += loss`, outputs kept in a list): a robust
//! fit of a job's per-step baseline, which the probe records at the same point of every
//! training step, with the tests that tell a steady leak from noise, a warm-up and one-off
//! growth.
//!
//! The slope is Theil–Sen's (the median of the slopes between every pair of points), which a
//! minority of outliers cannot move. A rise counts only when it is steady (each quarter of the
//! window sits higher than the one before, so that one jump, or a warm-up that levels off, is
//! not a leak), larger than the noise around the fit (4 times its robust spread) and at least
//! [`MIN_RISE`] in all.

/// Steps at the start of a job that are never judged: the optimizer creates its states at the
/// first step, and the caching allocator and cuDNN/cuBLAS grow their workspaces over the
/// first few.
pub const WARMUP_STEPS: u64 = 10;
/// The fewest points after the warm-up a fit is made on.
pub const MIN_POINTS: usize = 20;
/// The least total rise over the points that counts as growth (smaller ones are not worth a
/// warning, and are within what a step's allocations leave cached in the allocator).
pub const MIN_RISE: f64 = (1u64 << 20) as f64;
/// How many times the noise's robust spread the rise must exceed.
pub const NOISE_FACTOR: f64 = 4.0;

/// A steady rise, fitted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    /// Bytes a step (Theil–Sen).
    pub bytes_per_step: f64,
    /// The first and last step the fit covers.
    pub from_step: u64,
    pub to_step: u64,
    /// The fit's value at `to_step`.
    pub last_bytes: f64,
}

/// Theil–Sen's slope of `points` (x, y): the median of the slopes between pairs with distinct
/// x. `None` with fewer than two such pairs' worth of points or any value not finite.
pub fn theil_sen(points: &[(f64, f64)]) -> Option<f64> {
    if points.iter().any(|(x, y)| !x.is_finite() || !y.is_finite()) {
        return None;
    }
    let mut slopes = Vec::with_capacity(points.len() * points.len().saturating_sub(1) / 2);
    for (i, (x1, y1)) in points.iter().enumerate() {
        for (x2, y2) in &points[i + 1..] {
            let dx = x2 - x1;
            if dx != 0.0 {
                let s = (y2 - y1) / dx;
                if s.is_finite() {
                    slopes.push(s);
                }
            }
        }
    }
    median(&mut slopes)
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
fn median(values: &mut [f64]) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let (_, upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        return Some(upper);
    }
    let lower = values[..n / 2]
        .iter()
        .copied()
        .max_by(f64::total_cmp)
        .unwrap_or(upper);
    Some(lower / 2.0 + upper / 2.0)
}

/// Whether `points` (step, bytes; any order) rise steadily, and how fast. `None` for a flat,
/// noisy, falling or one-off series, or one too short to judge.
pub fn steady_rise(points: &[(u64, u64)]) -> Option<Trend> {
    let mut pts: Vec<(f64, f64)> = points.iter().map(|&(s, b)| (s as f64, b as f64)).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts.dedup_by(|a, b| a.0 == b.0);
    if pts.len() < MIN_POINTS {
        return None;
    }
    let slope = theil_sen(&pts)?;
    if slope <= 0.0 {
        return None;
    }
    let (first, last) = (pts[0].0, pts[pts.len() - 1].0);
    let span = last - first;
    let rise = slope * span;
    if !rise.is_finite() || rise < MIN_RISE {
        return None;
    }
    // The noise: the robust spread (1.4826 × the median absolute deviation) of the residuals
    // around the fit.
    let mut residuals: Vec<f64> = pts.iter().map(|(x, y)| y - slope * x).collect();
    let intercept = median(&mut residuals.clone())?;
    for r in &mut residuals {
        *r = (*r - intercept).abs();
    }
    let spread = 1.4826 * median(&mut residuals)?;
    if rise < NOISE_FACTOR * spread {
        return None;
    }
    // Steady: split the steps into quarters; each quarter's median must stand above the one
    // before by at least a quarter of what the slope says it should.
    let quarter = span / 4.0;
    let mut medians = Vec::with_capacity(4);
    for q in 0..4 {
        let (lo, hi) = (first + quarter * q as f64, first + quarter * (q + 1) as f64);
        let mut ys: Vec<f64> = pts
            .iter()
            .filter(|(x, _)| *x >= lo && (*x < hi || (q == 3 && *x <= hi)))
            .map(|(_, y)| *y)
            .collect();
        if ys.len() < 2 {
            return None;
        }
        medians.push(median(&mut ys)?);
    }
    let expected = slope * quarter;
    if medians.windows(2).any(|w| w[1] - w[0] < expected / 4.0) {
        return None;
    }
    Some(Trend {
        bytes_per_step: slope,
        from_step: first as u64,
        to_step: last as u64,
        last_bytes: intercept + slope * last,
    })
}

/// A job's growth from its recent per-step points (every step of the last few dozen) and its
/// sparse history (every k-th step since the start): the rate is the recent window's when it
/// rises steadily, and the growth dates from the start of the history when the whole history
/// rises at a like rate. A slow leak that the recent window's noise hides is found over the
/// longer history once that is long enough. Steps within the warm-up are left out.
pub fn growth(recent: &[(u64, u64)], sparse: &[(u64, u64)]) -> Option<Trend> {
    let after = |pts: &[(u64, u64)]| -> Vec<(u64, u64)> {
        pts.iter()
            .copied()
            .filter(|(s, _)| *s > WARMUP_STEPS)
            .collect()
    };
    let recent = after(recent);
    let mut all = after(sparse);
    all.extend_from_slice(&recent);
    let long = steady_rise(&all);
    match (steady_rise(&recent), long) {
        (Some(r), Some(l)) => {
            let like = l.bytes_per_step >= r.bytes_per_step / 2.0
                && l.bytes_per_step <= r.bytes_per_step * 2.0;
            Some(Trend {
                from_step: if like { l.from_step } else { r.from_step },
                ..r
            })
        }
        (Some(r), None) => Some(r),
        (None, Some(l)) => {
            // The recent window too noisy or short to judge alone, but still rising.
            let pts: Vec<(f64, f64)> = recent.iter().map(|&(s, b)| (s as f64, b as f64)).collect();
            let still = recent.len() < MIN_POINTS
                || theil_sen(&pts).is_some_and(|s| s >= l.bytes_per_step / 2.0);
            still.then_some(l)
        }
        (None, None) => None,
    }
}

/// What to do about memory held across steps from one site, by what the site is: the first
/// rule that matches. A site is the innermost frame outside PyTorch of the blocks' allocation
/// stacks.
/// Whether a remedy applies to a site.
type Applies = fn(&super::HeldSite) -> bool;

const REMEDIES: &[(Applies, &str)] = &[
    (in_forward, "allocated in a module's forward and kept past its step: a step's output or loss is kept, with its autograd graph (`outputs.append(out)`, `total_loss += loss`). Keep `loss.item()`, or `out.detach().cpu()`; evaluate under `torch.no_grad()`"),
    (anywhere, "a tensor made at this line is kept across steps: a loss or metric summed as a tensor keeps every step's autograd history (`total_loss += loss`: sum `loss.item()` instead, as PyTorch's FAQ says); a tensor kept for later stays on the GPU (keep `t.detach().cpu()`)"),
];

fn in_forward(s: &super::HeldSite) -> bool {
    s.function == "forward"
}

fn anywhere(_: &super::HeldSite) -> bool {
    true
}

/// The advice for a site of memory held across steps.
pub fn remedy(site: &super::HeldSite) -> &'static str {
    REMEDIES
        .iter()
        .find(|(applies, _)| applies(site))
        .map_or("", |(_, text)| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_said_with_its_rate_and_how_soon_the_gpu_is_full() {
        let mut g = super::super::StepGrowth {
            measure: "allocated".into(),
            bytes_per_step: 25 << 19,
            since_step: 20,
            last_step: 2920,
            micros_per_step: Some(5_032_258),
            steps_to_full: Some(310),
        };
        assert_eq!(
            g.describe(),
            "allocated grows 12.5 MiB a step since step 20; at this rate the GPU is full in ~310 \
             steps (~26m00s)"
        );
        g.micros_per_step = None;
        assert!(g.describe().ends_with("full in ~310 steps"));
        g.steps_to_full = None;
        assert_eq!(
            g.describe(),
            "allocated grows 12.5 MiB a step since step 20"
        );
    }

    #[test]
    fn a_site_in_a_forward_is_an_output_kept() {
        let site = |function: &str| super::super::HeldSite {
            file: "/home/a/model.py".into(),
            line: 88,
            function: function.into(),
            blocks: 1,
            bytes: 1,
        };
        assert!(remedy(&site("forward")).contains("out.detach().cpu()"));
        assert!(remedy(&site("train_loop")).contains("sum `loss.item()` instead"));
    }

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn line(from: u64, to: u64, base: u64, per_step: u64) -> Vec<(u64, u64)> {
        (from..=to).map(|s| (s, base + per_step * s)).collect()
    }

    /// A deterministic pseudo-random sequence in `[-1, 1]` (no RNG crate needed for a test).
    fn noise(i: u64) -> f64 {
        let x = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            >> 33;
        (x % 2001) as f64 / 1000.0 - 1.0
    }

    #[test]
    fn a_steady_leak_is_found_at_its_rate() {
        let t = steady_rise(&line(11, 60, 4 * GIB, 12 * MIB + MIB / 2)).expect("a leak");
        assert_eq!(t.bytes_per_step, (12 * MIB + MIB / 2) as f64);
        assert_eq!((t.from_step, t.to_step), (11, 60));
    }

    #[test]
    fn flat_and_falling_series_say_nothing() {
        assert_eq!(steady_rise(&line(11, 200, 4 * GIB, 0)), None);
        let falling: Vec<(u64, u64)> = (11..=60).map(|s| (s, 8 * GIB - s * MIB)).collect();
        assert_eq!(steady_rise(&falling), None);
    }

    #[test]
    fn noise_around_a_flat_baseline_is_no_leak() {
        // ±256 MiB of noise on 6 GiB, over several seeds and lengths.
        for seed in 0..50u64 {
            for n in [20u64, 50, 64, 200] {
                let pts: Vec<(u64, u64)> = (0..n)
                    .map(|i| {
                        let y = 6.0 * GIB as f64 + noise(seed * 1000 + i) * 256.0 * MIB as f64;
                        (11 + i, y as u64)
                    })
                    .collect();
                assert_eq!(steady_rise(&pts), None, "seed {seed}, {n} points");
            }
        }
    }

    #[test]
    fn a_leak_under_noise_is_found_near_its_rate() {
        // 8 MiB a step under ±32 MiB of noise, 50 steps.
        let pts: Vec<(u64, u64)> = (11..=60u64)
            .map(|s| {
                let y = 4.0 * GIB as f64 + (s * 8 * MIB) as f64 + noise(s) * 32.0 * MIB as f64;
                (s, y as u64)
            })
            .collect();
        let t = steady_rise(&pts).expect("a leak");
        let rate = t.bytes_per_step / MIB as f64;
        assert!((6.0..10.0).contains(&rate), "{rate} MiB a step");
    }

    #[test]
    fn one_jump_is_no_leak() {
        // A step function anywhere in the window: flat, one rise, flat.
        for at in [15u64, 25, 35, 45, 55] {
            let pts: Vec<(u64, u64)> = (11..=60)
                .map(|s| (s, if s < at { 4 * GIB } else { 5 * GIB }))
                .collect();
            assert_eq!(steady_rise(&pts), None, "jump at {at}");
        }
    }

    #[test]
    fn a_warmup_that_levels_off_is_no_leak() {
        // Rises 64 MiB a step to step 25, then flat.
        let pts: Vec<(u64, u64)> = (11..=60)
            .map(|s| (s, 4 * GIB + s.min(25) * 64 * MIB))
            .collect();
        assert_eq!(steady_rise(&pts), None);
    }

    #[test]
    fn too_few_points_or_too_small_a_rise_say_nothing() {
        assert_eq!(steady_rise(&line(11, 29, 0, 64 * MIB)), None, "19 points");
        assert_eq!(steady_rise(&[]), None);
        // 16 KiB a step over 50 steps: 800 KiB, under MIN_RISE.
        assert_eq!(steady_rise(&line(11, 60, GIB, 16 << 10)), None);
        // Repeated steps count once.
        let dup: Vec<(u64, u64)> = (0..40).map(|i| (11 + i % 10, GIB + i * MIB)).collect();
        assert_eq!(steady_rise(&dup), None);
    }

    #[test]
    fn the_smallest_leak_found_in_50_steps() {
        // 40 steps after the warm-up (11..=50): MIN_RISE over 39 steps.
        let smallest = (MIN_RISE / 39.0).ceil() as u64;
        assert!(steady_rise(&line(11, 50, GIB, smallest)).is_some());
        assert!(steady_rise(&line(11, 50, GIB, smallest - 1024)).is_none());
    }

    #[test]
    fn huge_values_and_non_finite_input_do_not_break_it() {
        let huge: Vec<(u64, u64)> = (0..50)
            .map(|i| (u64::MAX - 100 + i, u64::MAX - i))
            .collect();
        assert_eq!(steady_rise(&huge), None);
        let big: Vec<(u64, u64)> = (0..50).map(|i| (i * (u64::MAX / 64), i << 50)).collect();
        let _ = steady_rise(&big); // no panic; whatever it finds is finite
        assert_eq!(theil_sen(&[(0.0, f64::NAN), (1.0, 1.0), (2.0, 2.0)]), None);
        assert_eq!(theil_sen(&[(0.0, 1.0), (f64::INFINITY, 1.0)]), None);
        assert_eq!(theil_sen(&[(1.0, 1.0), (1.0, 5.0)]), None, "no distinct x");
        assert_eq!(theil_sen(&[(0.0, 0.0), (1.0, 2.0), (2.0, 4.0)]), Some(2.0));
    }

    #[test]
    fn theil_sen_ignores_a_minority_of_outliers() {
        let mut pts: Vec<(f64, f64)> = (0..30).map(|i| (i as f64, 3.0 * i as f64)).collect();
        for i in [3, 9, 17, 25] {
            pts[i].1 = 1e12;
        }
        assert_eq!(theil_sen(&pts), Some(3.0));
    }

    #[test]
    fn the_growth_dates_from_the_start_of_a_like_history() {
        // A leak from the start: sparse history every 8 steps, recent window the last 64.
        let sparse: Vec<(u64, u64)> = (0..=2900).step_by(8).map(|s| (s, GIB + s * MIB)).collect();
        let recent = line(2837, 2900, GIB, MIB);
        let t = growth(&recent, &sparse).expect("a leak");
        assert_eq!(t.bytes_per_step, MIB as f64);
        assert_eq!(t.from_step, 16, "the first sparse step after the warm-up");
        assert_eq!(t.to_step, 2900);
    }

    #[test]
    fn a_leak_that_started_late_dates_from_the_recent_window() {
        // Flat to step 500, then 4 MiB a step.
        let y = |s: u64| GIB + s.saturating_sub(500) * 4 * MIB;
        let sparse: Vec<(u64, u64)> = (0..=1000).step_by(16).map(|s| (s, y(s))).collect();
        let recent: Vec<(u64, u64)> = (937..=1000).map(|s| (s, y(s))).collect();
        let t = growth(&recent, &sparse).expect("a leak");
        assert_eq!(t.bytes_per_step, (4 * MIB) as f64);
        assert_eq!(t.from_step, 937);
    }

    #[test]
    fn a_warmup_within_the_first_steps_is_left_out() {
        // 2 GiB of optimizer states at step 1 and a cache that fills to step 10, then flat.
        let y = |s: u64| GIB + if s >= 1 { 2 * GIB } else { 0 } + s.min(10) * 100 * MIB;
        let pts: Vec<(u64, u64)> = (0..=60).map(|s| (s, y(s))).collect();
        assert_eq!(growth(&pts, &pts), None);
    }
}
