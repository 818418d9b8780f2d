//! A property test across every view: random hostile samples (escape sequences, C1 controls
//! and bidirectional overrides in every string field, extreme numbers in every figure, device
//! indices up to 2^32 - 1) go through `once` (text and JSON), `log` (csv, table, jsonl), the
//! dashboard (drawn on a TestBackend), `once --by`, serve's endpoints (`/metrics` with and
//! without process labels, `/api/v1/sample`, `/api/v1/summary`) and the fleet's rows, text
//! and dashboard. None may panic, and no control or bidirectional character may reach an output.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use proptest::prelude::*;

use crate::model::admit::full_sample;
use crate::model::fleet::NodeSummary;
use crate::model::Sample;
use crate::text::{is_unsafe, Paint};

/// Characters an attacker would use, and some that are harmless, to mix.
const PIECES: &[char] = &[
    '\u{1b}', '\u{9b}', '\u{7}', '\u{0}', '\u{7f}', '\u{85}', '\u{202e}', '\u{202a}', '\u{2066}',
    '\u{2069}', '\u{200f}', '\u{2028}', '\u{61c}', '\n', '\r', '\t', ']', '[', '2', 'J', ';', '"',
    '\\', ',', '|', 'a', 'é', '漢', '🙂', ' ',
];

fn hostile_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![3 => proptest::sample::select(PIECES), 1 => any::<char>()],
        0..24,
    )
    .prop_map(|c| c.into_iter().collect())
}

fn extreme_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(1 << 44),
        Just(1 << 63),
        Just(80 << 30),
        any::<u64>(),
    ]
}

fn extreme_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(100),
        Just(101),
        Just(u32::MAX),
        Just(63),
        Just(64),
        any::<u32>(),
    ]
}

fn extreme_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-1.0),
        Just(1e300),
        Just(0.0),
        Just(350.5),
        any::<f64>(),
    ]
}

/// The numbers a hostile sample carries, in the order [`hostile`] uses them.
#[derive(Debug, Clone)]
struct Numbers {
    u64s: Vec<u64>,
    u32s: Vec<u32>,
    f64s: Vec<f64>,
    devices: usize,
}

fn numbers() -> impl Strategy<Value = Numbers> {
    (
        proptest::collection::vec(extreme_u64(), 24),
        proptest::collection::vec(extreme_u32(), 24),
        proptest::collection::vec(extreme_f64(), 8),
        1usize..4,
    )
        .prop_map(|(u64s, u32s, f64s, devices)| Numbers {
            u64s,
            u32s,
            f64s,
            devices,
        })
}

/// A fully filled sample whose every text is taken from `texts` and every figure from `n`.
fn hostile(texts: &[String], n: &Numbers) -> Sample {
    let next = std::cell::Cell::new(0usize);
    let text = |_: &str| {
        let i = next.get();
        next.set(i + 1);
        texts[i % texts.len()].clone()
    };
    let mut s = full_sample(&text);
    let (mut a, mut b, mut c) = (
        n.u64s.iter().cycle(),
        n.u32s.iter().cycle(),
        n.f64s.iter().cycle(),
    );
    let mut u64v = || *a.next().unwrap_or(&0);
    let mut u32v = || *b.next().unwrap_or(&0);
    let mut f64v = || *c.next().unwrap_or(&0.0);
    let template = s.devices[0].clone();
    s.devices = (0..n.devices)
        .map(|_| {
            let mut d = template.clone();
            d.index = u32v();
            d.memory.total_bytes = Some(u64v());
            d.memory.used_bytes = Some(u64v());
            d.memory.free_bytes = Some(u64v());
            d.memory.reserved_bytes = Some(u64v());
            d.utilization.gpu_percent = Some(u32v());
            d.temperature_c = Some(u32v());
            d.power_draw_w = Some(f64v());
            d.fan_percent = Some(u32v());
            d.data_age_ms = Some(u64v());
            d.stalled = u32v() % 3 == 0;
            for p in &mut d.processes {
                p.pid = u32v();
                p.gpu_memory_bytes = Some(u64v());
                p.cpu_percent = Some(f64v() as f32);
                p.host_memory_bytes = Some(u64v());
                p.start_time = Some(u64v());
                p.sm_percent = Some(u32v());
                p.gpu_instance_id = Some(u32v());
            }
            for h in &mut d.holders {
                h.bytes = Some(u64v());
                h.age_s = Some(u64v());
                h.count = u32v();
            }
            for m in &mut d.mig {
                m.index = u32v();
                m.memory.total_bytes = Some(u64v());
                m.memory.used_bytes = Some(u64v());
                m.utilization.gpu_percent = Some(u32v());
                m.gpu_instance_id = Some(u32v());
            }
            for x in &mut d.health.xids {
                x.xid = u32v();
                x.count = u64v();
            }
            d
        })
        .collect();
    if let Some(h) = s.host.as_mut() {
        h.cpu_percent = Some(f64v() as f32);
        h.memory_total_bytes = Some(u64v());
        h.memory_used_bytes = Some(u64v());
        h.load_average = Some([f64v(), f64v(), f64v()]);
        h.uptime_s = Some(u64v());
    }
    s
}

/// What in `out` is unsafe (line breaks, which every text view writes, aside).
fn unsafe_in(out: &str) -> Vec<char> {
    out.chars()
        .filter(|c| *c != '\n' && is_unsafe(*c))
        .collect()
}

fn screen_text(t: &ratatui::Terminal<ratatui::backend::TestBackend>) -> String {
    let buf = t.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// Every view of `sample` (as read locally) and of it as a remote node's or a recording's
/// sample is (after the boundary), each output with its name.
fn every_view(sample: &Sample) -> Vec<(&'static str, String)> {
    use crate::view::log::{Columns, Format, LogWriter};
    let mut out = Vec::new();
    let admitted = sample.clone().admit();
    for (how, s) in [("local", sample), ("admitted", &admitted)] {
        let _ = how;
        out.push((
            "once",
            crate::view::once::render_width(s, Paint(false), 120),
        ));
        let mut json = Vec::new();
        crate::text::write_json_pretty(&mut json, &crate::view::once::to_json(s)).expect("json");
        out.push(("once --json", String::from_utf8_lossy(&json).into_owned()));
        for format in [Format::Csv, Format::Table, Format::Jsonl] {
            let columns = Columns::parse(None, true).expect("columns");
            let mut w = LogWriter::new(Vec::new(), format, columns, true);
            w.write(s).expect("log");
            out.push(("log", String::from_utf8_lossy(w.get_ref()).into_owned()));
        }
        for by in [
            crate::model::rollup::GroupBy::User,
            crate::model::rollup::GroupBy::Owner,
        ] {
            // As `once --by` reads it: escaped first.
            let s = s.escaped();
            let mut usage = crate::model::rollup::Usage::new(
                Duration::from_secs(600),
                Duration::from_secs(600),
            );
            usage.record(&s);
            let rows = usage.rollup(&s, by);
            out.push((
                "once --by",
                crate::view::by::render(&rows, by, Duration::from_secs(600), Paint(false), 120),
            ));
        }
        let mut app = crate::tui::app::App::new(&crate::tui::test_settings(
            Duration::from_secs(1),
            Duration::from_secs(600),
        ));
        app.on_sample(Arc::new(s.clone()));
        for (w, h) in [(100, 30), (200, 50)] {
            let mut t =
                ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).expect("terminal");
            t.draw(|f| crate::tui::ui::draw(f, &mut app)).expect("draw");
            out.push(("dashboard", screen_text(&t)));
        }
        use crate::view::metrics;
        let all = metrics::ProcessLabels::parse("user,command,pod,job").expect("labels");
        for labels in [metrics::ProcessLabels::default(), all] {
            let opts = metrics::Options {
                dcgm: true,
                process_labels: labels,
            };
            out.push(("/metrics", metrics::encode(s, Duration::ZERO, &opts)));
            let redacted = metrics::redact(s, labels);
            let json =
                crate::text::to_json_vec(&crate::view::once::to_json(&redacted)).expect("json");
            out.push((
                "/api/v1/sample",
                String::from_utf8_lossy(&json).into_owned(),
            ));
            let summary = crate::text::to_json_vec(&NodeSummary::of(&redacted)).expect("json");
            out.push((
                "/api/v1/summary",
                String::from_utf8_lossy(&summary).into_owned(),
            ));
        }
    }
    // The fleet: a node's sample and summary come through the boundary.
    let endpoint = crate::feed::remote::Endpoint::parse("n1:9400").expect("endpoint");
    let node = crate::model::fleet::NodeReading {
        name: endpoint.name.clone(),
        address: format!("{}:{}", endpoint.host, endpoint.port),
        sample: Some(admitted.clone()),
        error: sample
            .error
            .clone()
            .map(|e| crate::text::escape(&e).into_owned()),
        took: Duration::ZERO,
    };
    out.push((
        "fleet",
        crate::view::fleet::render(&[node], Paint(false), 120),
    ));
    let summary = NodeSummary::of(sample).admit();
    let prom = (
        crate::text::escape(sample.hostname.as_deref().unwrap_or("")).into_owned(),
        sample.hostname.clone().unwrap_or_default(),
        None,
        summary.clone(),
    );
    out.push((
        "fleet (Prometheus)",
        crate::view::fleet::render_summaries(&[prom], Paint(false)),
    ));
    let mut view = crate::tui::fleet::View::new(&[endpoint]);
    view.update(vec![(0, Ok(summary), Duration::ZERO)]);
    let mut t =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 8)).expect("terminal");
    t.draw(|f| {
        let area = f.area();
        crate::tui::fleet::draw(f.buffer_mut(), area, &mut view, Duration::from_secs(2));
    })
    .expect("draw");
    out.push(("fleet dashboard", screen_text(&t)));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn hostile_samples_reach_no_view_raw(
        texts in proptest::collection::vec(hostile_text(), 1..32),
        n in numbers(),
        at in prop_oneof![Just(0u64), Just(1_800_000_000), Just(253_402_300_799)],
    ) {
        let mut sample = hostile(&texts, &n);
        sample.timestamp = SystemTime::UNIX_EPOCH + Duration::from_secs(at);
        for (view, out) in every_view(&sample) {
            let bad = unsafe_in(&out);
            prop_assert!(bad.is_empty(), "{view}: {bad:?} in\n{out}");
        }
    }
}
