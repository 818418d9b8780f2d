//! The structural reader under the message families: an allocation failure is read by its
//! clauses (each size with its unit and the role words around it, the device word and index),
//! not by one framework's exact sentence. A family then says what the roles *mean* for its
//! allocator; a fork that prints `NPU` for `CUDA`, or a clause more (torch_npu's "current
//! active"), reads the same.

use std::sync::OnceLock;

use regex::Regex;

/// What a size stands for in its clause, from the words beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The allocation that failed ("Tried to allocate X", "Attempting to reserve X").
    Request,
    /// The device's capacity ("X total capacity", "total capacity of X").
    Total,
    Free,
    /// Live allocations ("X already allocated", "X is allocated by PyTorch").
    Allocated,
    /// torch_npu's "current active": blocks in use, allocated or not yet freed by their stream.
    Active,
    /// Reserved by the allocator ("X reserved in total by PyTorch", XLA's "X reserved").
    Reserved,
    /// Reserved but unallocated ("X cached", "X is reserved by PyTorch but unallocated").
    Cached,
    /// "X allocated in private pools".
    PrivatePool,
    /// "X memory in use" with no owner named.
    InUse,
    /// "this process has X memory in use".
    ThisProcess,
    /// "Process N has X memory in use".
    OtherProcess(u32),
    /// A cap set on the allocator ("X allowed").
    Allowed,
    /// A per-allocation or allocator limit ("maximum allowed buffer size of X", "limit: X").
    Limit,
    /// XLA's "X reservable": the most a reservation at the bottom of HBM could have had.
    Reservable,
    /// XLA's "Used X of Y hbm".
    Used,
    /// XLA's "Exceeded hbm capacity by X".
    Exceeded,
}

/// One size in the text, in bytes, with its role where the words beside it give one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figure {
    pub bytes: u64,
    pub role: Option<Role>,
}

/// The device a message names: its word as printed, upper-cased (`CUDA`, `GPU`, `NPU`, `TPU`,
/// `HBM`…), and its index where one is given (`NPU 3`, `cuda:1`, `TPU_0`, `GPU_1_bfc`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub word: String,
    pub index: Option<u32>,
}

/// Everything the reader found in one message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reading {
    pub figures: Vec<Figure>,
    pub device: Option<Device>,
}

impl Reading {
    /// The value of `role` when the message gives it, the first where it gives several.
    pub fn first(&self, role: Role) -> Option<u64> {
        self.figures
            .iter()
            .find(|f| f.role == Some(role))
            .map(|f| f.bytes)
    }

    /// Every `Process N has X` clause, in order.
    pub fn others(&self) -> Vec<(u32, u64)> {
        self.figures
            .iter()
            .filter_map(|f| match f.role {
                Some(Role::OtherProcess(pid)) => Some((pid, f.bytes)),
                _ => None,
            })
            .collect()
    }

    /// Whether the message states an allocation that failed.
    pub fn has_request(&self) -> bool {
        self.first(Role::Request).is_some()
    }

    /// How many of `roles` the message gives a figure for.
    pub fn roles_given(&self, roles: &[Role]) -> usize {
        roles.iter().filter(|r| self.first(**r).is_some()).count()
    }
}

/// A size as frameworks print it: every unit spelling (bytes, B, KiB/KB/K, MiB/MB/M,
/// GiB/GB/G, TiB/TB/T), thousands separators, and the exact count in parentheses that some
/// add ("2.99GiB (3206250496B)", "1.5 GiB (1610612736 bytes)", the TPU runtime's "3.95G (
/// 4,237,689,856 bytes)"): the exact count wins over the rounded figure. A unit run into the next
/// word "is" is still a unit: Cambricon's torch_mlu (`caching_allocator.cpp`, r1.22_pt2.1.0
/// and master) prints `format_size(device_free), "is free. "`, so "1.19 GiBis free".
fn size_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            concat!(
                // ASCII word boundaries: a CJK translation runs its words into the figure
                // ("试图分配20.00 MiB", "6.03GiB가").
                r"(?-u:\b)(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s?(?:(bytes|Bytes|byte|B|KiBs|KiB|KB|kB|K|MiBs|MiB|MB|M|GiBs|GiB|GB|G|TiB|TB|T)(?:is)?(?-u:\b)",
                // A translated page's byte words (see `translated_unit`): a CJK word runs
                // into the next one with no boundary between them.
                r"|(字节|位元組|バイト|바이트)|(байт(?:а|ов)?|ГиБ|МиБ|КиБ|ТиБ))",
                r"(?:\s*[(（]\s?(\d{1,3}(?:,\d{3})+|\d+)\s?(?:bytes|B|字节)[)）])?",
            ),
        )
        .expect("size regex")
    })
}

fn device_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            // ASCII word boundaries, the same on ASCII text: a translated page's text around
            // the device word ("在GPU 0上") leaves the faster engines usable.
            r"(?-u:\b)(CUDA|GPU|NPU|XPU|MLU|MUSA|GCU|HPU|TPU|HIP|Device|device)(?: |_|#)?(\d{1,3})(?:(?-u:\b)|_)",
            r"|(?-u:\b)((?i:cuda|npu|xpu|mlu|musa|gcu|hpu|hip|tpu|gpu|dml)):(\d{1,3})(?-u:\b)",
            // TensorFlow's full device names (`device_name_utils.cc`): any type, a
            // PluggableDevice's own (`/device:APU:0`) or tensorflow-directml's `DML`.
            r"|/device:([A-Za-z][A-Za-z0-9_]{0,15}):(\d{1,3})\b",
            r"|(?-u:\b)(hbm)(?-u:\b)",
        ))
        .expect("device regex")
    })
}

fn other_process_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"process (\d+) has$").expect("process regex"))
}

/// Role words that follow a size, most specific first.
const AFTER: &[(&str, Role)] = &[
    ("total capacity", Role::Total),
    ("total memory", Role::Total),
    ("already allocated", Role::Allocated),
    ("allocated in private pools", Role::PrivatePool),
    ("is allocated by", Role::Allocated),
    ("allocated by", Role::Allocated),
    ("current active", Role::Active),
    ("is free", Role::Free),
    ("free", Role::Free),
    ("is available", Role::Free),
    ("available", Role::Free),
    ("allowed", Role::Allowed),
    ("reserved in total", Role::Reserved),
    ("is reserved by pytorch but unallocated", Role::Cached),
    ("reserved but unallocated", Role::Cached),
    ("reservable", Role::Reservable),
    ("reserved", Role::Reserved),
    ("cached", Role::Cached),
    ("memory in use", Role::InUse),
    ("in use", Role::InUse),
    ("total", Role::Total),
    ("allocated", Role::Allocated),
    ("requested", Role::Request),
];

/// Role words that come before a size, matched at the end of the words before it.
const BEFORE: &[(&str, Role)] = &[
    ("tried to allocate", Role::Request),
    ("attempting to allocate", Role::Request),
    // PyTorch's sentence machine-translated back into English from a translated page
    // (corpus `translated-en-iopenv`): "Attempt to allocate 200.00 MiBs", "PyTorch retains a
    // total of 6.18 GiB".
    ("attempt to allocate", Role::Request),
    ("retains a total of", Role::Reserved),
    ("attempting to reserve", Role::Request),
    ("failed to allocate", Role::Request),
    ("trying to allocate", Role::Request),
    ("can't allocate", Role::Request),
    ("cannot allocate", Role::Request),
    ("unable to allocate", Role::Request),
    ("could not allocate", Role::Request),
    ("allocating", Role::Request),
    ("allocate", Role::Request),
    ("request for", Role::Request),
    ("requested", Role::Request),
    ("requested:", Role::Request),
    // torch_npu's fraction check (`NPUCachingAllocator.cpp`, master): "…would exceed
    // per_process_memory_fraction limit. Requested size: 2.00 GiB".
    ("requested size:", Role::Request),
    ("requires", Role::Request),
    // The TPU runtime's table under its reserve failure ("HBM capacity 8.00G:", "Program
    // requirement: 3.95G ( 4,237,689,856 bytes)"); libtpu is closed, the wording is from
    // pastes of it (see `families::xla_tpu_reserve`).
    ("program requirement:", Role::Request),
    ("hbm capacity", Role::Total),
    ("total capacity of", Role::Total),
    ("total capacty of", Role::Total),
    // The 1.x parenthesis with each role word before its size, as a re-worded or
    // back-translated fork's sentence prints it ("(NPU 1; total capacity 29.49 GiB; allocated
    // 28.90 GiB; currently active 28.90 GiB; free 171.96 MiB; PyTorch has reserved a total of
    // 28.95 GiB)"). A role word after a size still wins.
    ("total capacity", Role::Total),
    ("total memory", Role::Total),
    ("total:", Role::Total),
    ("reserved a total of", Role::Reserved),
    ("total of", Role::Total),
    ("currently active", Role::Active),
    ("current active", Role::Active),
    ("maximum allowed buffer size of", Role::Limit),
    ("limit of", Role::Limit),
    ("limit:", Role::Limit),
    ("exceeded hbm capacity by", Role::Exceeded),
    ("used", Role::Used),
    ("of which", Role::Free),
    ("free:", Role::Free),
    ("free memory:", Role::Free),
    ("available:", Role::Free),
    ("in use:", Role::InUse),
    ("allocated:", Role::Allocated),
    ("already allocated", Role::Allocated),
    ("allocated", Role::Allocated),
    ("free", Role::Free),
    // PyTorch 2.x's "Of the allocated memory X is allocated by PyTorch", cut after X.
    ("of the allocated memory", Role::Allocated),
    ("reserved:", Role::Reserved),
];

/// Where a translated role word stands against its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Before,
    After,
}

/// The role words of an allocator's sentence as a translation prints them: a page the browser
/// translated (CSDN, Zhihu, Qiita, Habr read in another language) or a user who translated
/// the message by hand. Language × role, lower-case, written without the spaces a CJK
/// translation puts or leaves out (both are matched), most specific first in each language.
/// The words are a translation's, the figures and their meaning stay the framework's: "已分配"
/// is PyTorch's "already allocated", "PyTorch 总共保留" its "reserved in total by PyTorch".
/// 尝试分配, 总容量 and 已分配 are from a real paste (corpus `translated-zh-errorcanon`,
/// errorcanon.top's zh page); the other Chinese words are the same machine translation's
/// obvious variants (空闲/可用/免费 for "free", 保留/预留 for "reserved", 缓存 for 1.0's
/// "cached"), as issue 42 lists them. The
/// Japanese, Korean and Russian words are the plain translations of the roles of PyTorch's
/// 1.x and 2.x sentences (`c10/cuda/CUDACachingAllocator.cpp`, v1.8.0 and v2.5.0) that issue
/// 42 lists; no paste of them was found, so unit tests alone hold them.
const TRANSLATED: &[(&str, Place, &str, Role)] = &[
    // Chinese.
    ("zh", Place::Before, "尝试分配", Role::Request),
    ("zh", Place::Before, "试图分配", Role::Request),
    ("zh", Place::Before, "总容量为", Role::Total),
    ("zh", Place::Before, "总容量", Role::Total),
    ("zh", Place::Before, "总计", Role::Total),
    ("zh", Place::Before, "容量", Role::Total),
    ("zh", Place::Before, "已经分配", Role::Allocated),
    ("zh", Place::Before, "已分配", Role::Allocated),
    ("zh", Place::Before, "空闲", Role::Free),
    ("zh", Place::Before, "可用", Role::Free),
    ("zh", Place::Before, "免费", Role::Free),
    ("zh", Place::Before, "其中", Role::Free),
    ("zh", Place::Before, "总共保留", Role::Reserved),
    ("zh", Place::Before, "保留", Role::Reserved),
    ("zh", Place::Before, "预留", Role::Reserved),
    ("zh", Place::Before, "缓存", Role::Cached),
    ("zh", Place::Before, "此进程有", Role::ThisProcess),
    ("zh", Place::Before, "该进程有", Role::ThisProcess),
    ("zh", Place::After, "总容量", Role::Total),
    ("zh", Place::After, "已经分配", Role::Allocated),
    ("zh", Place::After, "已分配", Role::Allocated),
    ("zh", Place::After, "由pytorch保留但未分配", Role::Cached),
    ("zh", Place::After, "已保留但未分配", Role::Cached),
    ("zh", Place::After, "由pytorch分配", Role::Allocated),
    ("zh", Place::After, "是空闲的", Role::Free),
    ("zh", Place::After, "空闲", Role::Free),
    ("zh", Place::After, "可用", Role::Free),
    ("zh", Place::After, "免费", Role::Free),
    ("zh", Place::After, "由pytorch总共保留", Role::Reserved),
    ("zh", Place::After, "总共保留", Role::Reserved),
    ("zh", Place::After, "保留", Role::Reserved),
    ("zh", Place::After, "预留", Role::Reserved),
    ("zh", Place::After, "已缓存", Role::Cached),
    ("zh", Place::After, "缓存", Role::Cached),
    // Japanese.
    ("ja", Place::Before, "総容量", Role::Total),
    ("ja", Place::Before, "合計容量", Role::Total),
    ("ja", Place::Before, "空き", Role::Free),
    ("ja", Place::After, "割り当てようとしました", Role::Request),
    ("ja", Place::After, "の割り当てを試みました", Role::Request),
    ("ja", Place::After, "総容量", Role::Total),
    ("ja", Place::After, "割り当て済み", Role::Allocated),
    ("ja", Place::After, "すでに割り当て", Role::Allocated),
    ("ja", Place::After, "空き", Role::Free),
    ("ja", Place::After, "予約済み", Role::Reserved),
    ("ja", Place::After, "予約", Role::Reserved),
    ("ja", Place::After, "キャッシュ", Role::Cached),
    // Korean.
    ("ko", Place::Before, "총 용량", Role::Total),
    ("ko", Place::After, "할당하려고", Role::Request),
    ("ko", Place::After, "할당을 시도", Role::Request),
    ("ko", Place::After, "총 용량", Role::Total),
    ("ko", Place::After, "이미 할당됨", Role::Allocated),
    ("ko", Place::After, "할당됨", Role::Allocated),
    ("ko", Place::After, "여유", Role::Free),
    ("ko", Place::After, "사용 가능", Role::Free),
    ("ko", Place::After, "예약됨", Role::Reserved),
    ("ko", Place::After, "캐시됨", Role::Cached),
    // Russian.
    ("ru", Place::Before, "пытался выделить", Role::Request),
    ("ru", Place::Before, "попытался выделить", Role::Request),
    ("ru", Place::Before, "попытка выделить", Role::Request),
    ("ru", Place::Before, "общая емкость", Role::Total),
    ("ru", Place::After, "общей емкости", Role::Total),
    ("ru", Place::After, "общей ёмкости", Role::Total),
    ("ru", Place::After, "общая емкость", Role::Total),
    ("ru", Place::After, "уже выделено", Role::Allocated),
    ("ru", Place::After, "выделено", Role::Allocated),
    ("ru", Place::After, "свободно", Role::Free),
    ("ru", Place::After, "зарезервировано", Role::Reserved),
    ("ru", Place::After, "кэшировано", Role::Cached),
];

/// Particles a Japanese or Korean translation puts between a size and its role word ("6.03
/// GiB が予約されています", "6.03GiB가 이미 할당됨").
const PARTICLES: &[&str] = &[
    "を", "が", "は", "の", "가 ", "이 ", "은 ", "는 ", "를 ", "을 ",
];

/// A translated role word is a word of its own: a Latin or Cyrillic letter must not run into
/// it; CJK text has no spaces, so there any neighbour will do.
fn spaced_letter(c: char) -> bool {
    c.is_alphanumeric() && (c as u32) < 0x2e80
}

/// The role a translation's words give a size ([`TRANSLATED`]).
fn translated_role(before: &str, after: &str) -> Option<Role> {
    if before.is_ascii() && after.is_ascii() {
        return None;
    }
    let squeeze = |s: &str| s.replace(' ', "");
    let mut after = after;
    if let Some(p) = PARTICLES.iter().find(|p| after.starts_with(*p)) {
        after = after[p.len()..].trim_start();
    }
    let (before_squeezed, after_squeezed) = (squeeze(before), squeeze(after));
    TRANSLATED
        .iter()
        .find(|(_, place, w, _)| match place {
            Place::Before => [before, before_squeezed.as_str()].iter().any(|b| {
                b.ends_with(w)
                    && !b[..b.len() - w.len()]
                        .chars()
                        .next_back()
                        .is_some_and(|c| spaced_letter(c) && w.starts_with(spaced_letter))
            }),
            Place::After => [after, after_squeezed.as_str()].iter().any(|a| {
                a.starts_with(w)
                    && !a[w.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| spaced_letter(c) && w.ends_with(spaced_letter))
            }),
        })
        .map(|(_, _, _, r)| *r)
}

/// Whether a translation's allocation phrase ([`TRANSLATED`]'s requests) stands next to a
/// figure: "尝试分配 20.00 MiB", "20.00 MiB を割り当てようとしました". A cheap test before
/// the reader, so that prose holding the phrase alone costs one search.
pub(crate) fn translated_request_near_size(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let alternatives: Vec<String> = TRANSLATED
            .iter()
            .filter(|(_, _, _, role)| *role == Role::Request)
            .map(|(_, place, word, _)| {
                let word = regex::escape(word);
                match place {
                    Place::Before => format!(r"{word}\s?\d"),
                    // A particle may stand between ("130.00 MiB を割り当てようとしました").
                    Place::After => format!(r"\d\s?\S{{1,8}}\s?\S?\s?{word}"),
                }
            })
            .collect();
        Regex::new(&format!("(?i){}", alternatives.join("|"))).expect("translated request regex")
    })
    .is_match(text)
}

/// The byte words of a translated page ("0 字节", "512 байт", "6.23 ГиБ") as the units the
/// reader knows.
fn translated_unit(word: &str) -> &'static str {
    match word {
        "ГиБ" => "GiB",
        "МиБ" => "MiB",
        "КиБ" => "KiB",
        "ТиБ" => "TiB",
        _ => "bytes",
    }
}

/// Where a clause ends: the role words of one size never reach past these.
/// A translated page prints the full-width forms (`（GPU 0；总容量 7.79 GiB；…）`), and its
/// sentences end with `。` and no space.
fn clause_end(c: char) -> bool {
    matches!(
        c,
        ';' | ','
            | '('
            | ')'
            | ':'
            | '['
            | ']'
            | '\n'
            | '；'
            | '，'
            | '（'
            | '）'
            | '：'
            | '、'
            | '。'
    )
}

/// The words after a size, up to the end of its clause (lower-case, at most 48 bytes).
fn after_words(text: &str) -> String {
    let mut end = text.len().min(48);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut s = &text[..end];
    if let Some(i) = s.find(clause_end) {
        s = &s[..i];
    }
    if let Some(i) = s.find(". ") {
        s = &s[..i];
    }
    s.trim().trim_end_matches('.').to_lowercase()
}

/// The words before a size, back to the end of the previous clause or size.
fn before_words(text: &str) -> String {
    let mut start = text.len().saturating_sub(48);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let mut s = &text[start..];
    if let Some(i) = s.rfind([
        ';', ',', '(', ')', '[', ']', '\n', '；', '，', '（', '）', '、', '。',
    ]) {
        s = &s[i + s[i..].chars().next().map_or(1, char::len_utf8)..];
    }
    if let Some(i) = s.rfind(". ") {
        s = &s[i + 2..];
    }
    s.trim().to_lowercase()
}

fn role_of(before: &str, after: &str) -> Option<Role> {
    if before.ends_with("this process has") {
        return Some(Role::ThisProcess);
    }
    if let Some(c) = other_process_re().captures(before) {
        if let Some(pid) = c.get(1).and_then(|m| m.as_str().parse().ok()) {
            return Some(Role::OtherProcess(pid));
        }
    }
    let by_before = BEFORE
        .iter()
        .find(|(w, _)| {
            before.ends_with(w)
                && before[..before.len() - w.len()]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !c.is_alphanumeric())
        })
        .map(|(_, r)| *r);
    // A request's own words come first ("Tried to allocate 2 GiB free…" never happens; "Tried
    // to allocate 20 MiB (GPU 0…" has nothing after).
    if by_before == Some(Role::Request) {
        return by_before;
    }
    let by_after = AFTER
        .iter()
        .find(|(w, _)| {
            after.starts_with(w)
                && after[w.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric())
        })
        .map(|(_, r)| *r);
    by_after
        .or(by_before)
        .or_else(|| translated_role(before, after))
}

fn parse_count(s: &str) -> Option<u64> {
    s.chars()
        .filter(|c| *c != ',')
        .collect::<String>()
        .parse()
        .ok()
}

/// Reads one message (a block's lines joined with spaces).
pub fn read(text: &str) -> Reading {
    let mut figures = Vec::new();
    let mut prev_end = 0;
    for c in size_re().captures_iter(text) {
        let Some(whole) = c.get(0) else { continue };
        let Some(num) = c.get(1) else { continue };
        let Some(unit) = c.get(2).map(|m| m.as_str()).or_else(|| {
            c.get(3)
                .or_else(|| c.get(4))
                .map(|m| translated_unit(m.as_str()))
        }) else {
            continue;
        };
        let bytes = match c.get(5).and_then(|m| parse_count(m.as_str())) {
            Some(exact) => Some(exact),
            None if num.as_str().contains(',') => {
                let n = parse_count(num.as_str());
                let unit = crate::units::parse_size(&format!("1 {unit}"));
                n.zip(unit).and_then(|(n, u)| n.checked_mul(u))
            }
            None => crate::units::parse_size(&format!("{} {unit}", num.as_str())).or_else(|| {
                let u = match unit {
                    "Bytes" | "byte" => "bytes",
                    // A machine translation's plural ("200.00 MiBs").
                    "KiBs" | "MiBs" | "GiBs" => unit.trim_end_matches('s'),
                    "kB" => "KB",
                    other => other,
                };
                crate::units::parse_size(&format!("{} {u}", num.as_str()))
            }),
        };
        let Some(bytes) = bytes else { continue };
        let before = before_words(&text[prev_end..whole.start()]);
        let after = after_words(&text[whole.end()..]);
        figures.push(Figure {
            bytes,
            role: role_of(&before, &after),
        });
        prev_end = whole.end();
    }
    // A CPU device (`/device:CPU:0`) is the host's memory, never the device a message names.
    let device = device_re()
        .captures_iter(text)
        .map(|c| {
            let word = c
                .get(1)
                .or_else(|| c.get(3))
                .or_else(|| c.get(5))
                .or_else(|| c.get(7))
                .map_or("", |m| m.as_str())
                .to_ascii_uppercase();
            let index = c
                .get(2)
                .or_else(|| c.get(4))
                .or_else(|| c.get(6))
                .and_then(|m| m.as_str().parse().ok());
            Device { word, index }
        })
        .find(|d| !d.word.ends_with("CPU"));
    Reading { figures, device }
}

/// The device a message names with one of `words` (upper-case), and its index.
pub fn device_named(text: &str, words: &[&str]) -> Option<Device> {
    device_re()
        .captures_iter(text)
        .filter_map(|c| {
            let word = c
                .get(1)
                .or_else(|| c.get(3))
                .or_else(|| c.get(5))?
                .as_str()
                .to_ascii_uppercase();
            let index: u32 = c
                .get(2)
                .or_else(|| c.get(4))
                .or_else(|| c.get(6))?
                .as_str()
                .parse()
                .ok()?;
            words.contains(&word.as_str()).then_some(Device {
                word,
                index: Some(index),
            })
        })
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: f64 = (1u64 << 30) as f64;
    fn gib(x: f64) -> u64 {
        (x * GIB).round() as u64
    }

    #[test]
    fn torch_npu_1x_reads_each_clause_by_its_words() {
        let r = read("RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity; 49.47 GiB already allocated; 49.47 GiB current active; 1.32 GiB free; 57.55 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.");
        assert_eq!(r.first(Role::Request), Some(gib(5.03)));
        assert_eq!(r.first(Role::Total), Some(gib(60.96)));
        assert_eq!(r.first(Role::Allocated), Some(gib(49.47)));
        assert_eq!(r.first(Role::Active), Some(gib(49.47)));
        assert_eq!(r.first(Role::Free), Some(gib(1.32)));
        assert_eq!(r.first(Role::Reserved), Some(gib(57.55)));
        let d = r.device.expect("a device");
        assert_eq!((d.word.as_str(), d.index), ("NPU", Some(3)));
    }

    /// A rounded size with its exact count after it, however spaced and separated: the count
    /// wins ("2.99GiB (3206250496B)", the TPU runtime's "6.08G ( 6,532,939,776 bytes)").
    /// Device names as TensorFlow and the others print them; a CPU device is never the one.
    #[test]
    fn device_names_of_every_spelling() {
        for (text, word, index) in [
            (
                "on /job:localhost/replica:0/task:0/device:DML:1 by allocator",
                "DML",
                1,
            ),
            ("on /job:localhost/replica:0/task:0/device:APU:2", "APU", 2),
            ("/device:CPU:0 then /device:XPU:3", "XPU", 3),
            ("Exception in device=TPU:4", "TPU", 4),
            ("TPU_0(process=0,(0,0,0,0))", "TPU", 0),
            ("on hpu:0", "HPU", 0),
            ("npu:3 out of memory", "NPU", 3),
            ("mlu:0", "MLU", 0),
        ] {
            let d = read(text).device.expect(text);
            assert_eq!((d.word.as_str(), d.index), (word, Some(index)), "{text}");
        }
        assert_eq!(
            read("on /job:localhost/replica:0/task:0/device:CPU:0").device,
            None
        );
        let d = device_named("/device:CPU:0 /device:DML:2", &["DML"]).expect("DML");
        assert_eq!(d.index, Some(2));
    }

    #[test]
    fn exact_bytes_in_parentheses_beat_the_rounded_figure() {
        let r = read("Currently allocated: 6.08G ( 6,532,939,776 bytes)");
        assert_eq!(r.first(Role::Allocated), Some(6_532_939_776));
        let r = read("Tried to allocate 2.99GiB (3206250496B)");
        assert_eq!(r.first(Role::Request), Some(3_206_250_496));
        let r = read("Program requirement: 3.95G (4,237,689,856 bytes)");
        assert_eq!(r.first(Role::Request), Some(4_237_689_856));
    }

    #[test]
    fn the_2x_sentence_form_reads_the_same_roles() {
        let r = read("MLU out of memory. Tried to allocate 2.00 GiB. MLU 1 has a total capacity of 79.10 GiB of which 1.19 GiB is free. Process 4242 has 3.00 GiB memory in use. Including non-PyTorch memory, this process has 74.90 GiB memory in use. 70.00 GiB allowed; Of the allocated memory 70.00 GiB is allocated by PyTorch, with 113.88 MiB allocated in private pools (e.g., CUDA Graphs), and 3.50 GiB is reserved by PyTorch but unallocated.");
        assert_eq!(r.first(Role::Request), Some(2 << 30));
        assert_eq!(r.first(Role::Total), Some(gib(79.10)));
        assert_eq!(r.first(Role::Free), Some(gib(1.19)));
        assert_eq!(r.others(), vec![(4242, 3 << 30)]);
        assert_eq!(r.first(Role::ThisProcess), Some(gib(74.90)));
        assert_eq!(r.first(Role::Allowed), Some(70 << 30));
        assert_eq!(r.first(Role::Allocated), Some(70 << 30));
        assert_eq!(
            r.first(Role::PrivatePool),
            Some((113.88 * (1u64 << 20) as f64).round() as u64)
        );
        assert_eq!(r.first(Role::Cached), Some(gib(3.5)));
        assert_eq!(r.device.and_then(|d| d.index), Some(1));
    }

    /// Role words and spellings of the forks' sentences: torch_mlu's "GiBis free", torch_npu's
    /// "Requested size:", a 2.x sentence cut inside its allocated clause.
    #[test]
    fn a_unit_run_into_is_a_requested_size_and_a_cut_allocated_clause() {
        let r = read("MLU 1 has a total capacity of 79.10 GiB of which 1.19 GiBis free. ");
        assert_eq!(r.first(Role::Free), Some(gib(1.19)));
        assert_eq!(r.first(Role::Total), Some(gib(79.10)));
        let r = read("would exceed per_process_memory_fraction limit. Requested size: 2.00 GiB");
        assert_eq!(r.first(Role::Request), Some(2 << 30));
        let r = read("Of the allocated memory 74.39 GiB is allocated by");
        assert_eq!(r.first(Role::Allocated), Some(gib(74.39)));
        // "is" must be a word of its own after the unit: "5 Bison" is no size.
        assert!(read("5 Bison").figures.is_empty());
    }

    #[test]
    fn xla_units_without_b_and_the_reserve_clauses() {
        let r = read("RESOURCE_EXHAUSTED: Error loading program 'jit_train_step': Attempting to reserve 26.25G at the bottom of memory. That was not possible. There are 25.52G free, 0B reserved, and 25.52G reservable.");
        assert_eq!(r.first(Role::Request), Some(gib(26.25)));
        assert_eq!(r.first(Role::Free), Some(gib(25.52)));
        assert_eq!(r.first(Role::Reserved), Some(0));
        assert_eq!(r.first(Role::Reservable), Some(gib(25.52)));
        let r = read("Ran out of memory in memory space hbm. Used 31.40G of 7.48G hbm. Exceeded hbm capacity by 23.92G.");
        assert_eq!(r.first(Role::Used), Some(gib(31.40)));
        assert_eq!(r.first(Role::Exceeded), Some(gib(23.92)));
        assert_eq!(r.device.map(|d| d.word), Some("HBM".to_owned()));
    }

    #[test]
    fn exact_bytes_in_parentheses_win_and_separators_are_read() {
        let r = read("Failed to allocate request for 2.99GiB (3206250496B) on device ordinal 0");
        assert_eq!(r.first(Role::Request), Some(3_206_250_496));
        let r = read(
            "Out of memory allocating 25,600,000 bytes (allocated so far: 3,635,267,072 bytes).",
        );
        assert_eq!(r.figures[0].bytes, 25_600_000);
        assert_eq!(r.figures[1].bytes, 3_635_267_072);
        let r = read("[metal::malloc] Attempting to allocate 134767706112 bytes which is greater than the maximum allowed buffer size of 86586540032 bytes.");
        assert_eq!(r.first(Role::Request), Some(134_767_706_112));
        assert_eq!(r.first(Role::Limit), Some(86_586_540_032));
        let r = read("ggml_backend_sycl_buffer_type_alloc_buffer: can't allocate 3503030272 Bytes of memory on device");
        assert_eq!(r.first(Role::Request), Some(3_503_030_272));
    }

    #[test]
    fn devices_in_every_spelling() {
        for (text, word, index) in [
            ("on cuda:1 now", "CUDA", Some(1)),
            ("TPU_0(process=0)", "TPU", Some(0)),
            ("allocator GPU_1_bfc", "GPU", Some(1)),
            ("(GCU 2; 32.00 GiB total capacity", "GCU", Some(2)),
            ("HPU 0 has a total capacity", "HPU", Some(0)),
        ] {
            let d = read(text).device.expect(text);
            assert_eq!((d.word.as_str(), d.index), (word, index), "{text}");
        }
        assert_eq!(
            device_named("GPU 0 and NPU 5", &["NPU"]).and_then(|d| d.index),
            Some(5)
        );
    }

    #[test]
    fn words_that_are_not_sizes_are_not_read() {
        let r = read("12 GPUs, 3 Models, step 1200 at 12:00:01, v4-32, 2 Mixed");
        assert!(r.figures.is_empty(), "{:?}", r.figures);
    }

    /// PyTorch's 1.x sentence as translations print it: the role words before the size
    /// (zh) or after it with a particle (ja, ko), full-width punctuation, a byte word.
    #[test]
    fn translated_role_words_read_the_same_roles() {
        let mib = |x: f64| (x * (1u64 << 20) as f64).round() as u64;
        for text in [
            "RuntimeError: CUDA 内存不足。尝试分配 20.00 MiB（GPU 0；总容量 7.79 GiB；已分配 6.03 GiB；空闲 3.56 MiB；PyTorch 总共保留 6.23 GiB）",
            "RuntimeError: CUDA内存不足。试图分配20.00 MiB（GPU 0；7.79 GiB 总容量；6.03 GiB 已经分配；3.56 MiB 免费；6.23 GiB 由PyTorch总共保留）",
            "RuntimeError: CUDA のメモリが不足しています。20.00 MiB を割り当てようとしました (GPU 0; 7.79 GiB 総容量; 6.03 GiB はすでに割り当てられています; 3.56 MiB 空き; PyTorch によって合計 6.23 GiB が予約されています)",
            "RuntimeError: CUDA 메모리 부족. 20.00 MiB를 할당하려고 했습니다 (GPU 0; 7.79 GiB 총 용량; 6.03 GiB 이미 할당됨; 3.56 MiB 여유; PyTorch에서 총 6.23 GiB 예약됨)",
            "RuntimeError: CUDA недостаточно памяти. Пытался выделить 20.00 MiB (GPU 0; 7.79 GiB общей емкости; 6.03 GiB уже выделено; 3.56 MiB свободно; 6.23 GiB зарезервировано в общей сложности PyTorch)",
        ] {
            let r = read(text);
            assert_eq!(r.first(Role::Request), Some(20 << 20), "{text}");
            assert_eq!(r.first(Role::Total), Some(gib(7.79)), "{text}");
            assert_eq!(r.first(Role::Allocated), Some(gib(6.03)), "{text}");
            assert_eq!(r.first(Role::Free), Some(mib(3.56)), "{text}");
            assert_eq!(r.first(Role::Reserved), Some(gib(6.23)), "{text}");
            assert_eq!(r.device.and_then(|d| d.index), Some(0), "{text}");
        }
        // 1.0's "cached", a byte word, the 2.x clauses.
        let r = read("（GPU 1；总容量 11.17 GiB；已分配 10.90 GiB；空闲 0 字节；30.96 MiB 缓存）");
        assert_eq!(r.first(Role::Free), Some(0));
        assert_eq!(r.first(Role::Cached), Some(mib(30.96)));
        let r = read("GPU 0 的总容量为 4.00 GiB，其中 41.56 MiB 空闲。包括非 PyTorch 内存，此进程有 3.44 GiB 内存在使用。在分配的内存中，2.58 GiB 由 PyTorch 分配，1.90 MiB 由 PyTorch 保留但未分配。");
        assert_eq!(r.first(Role::Total), Some(4 << 30));
        assert_eq!(r.first(Role::Free), Some(mib(41.56)));
        assert_eq!(r.first(Role::ThisProcess), Some(gib(3.44)));
        assert_eq!(r.first(Role::Allocated), Some(gib(2.58)));
        assert_eq!(r.first(Role::Cached), Some(mib(1.90)));
        let r = read("6.23 ГиБ зарезервировано; 512 байт свободно");
        assert_eq!(r.first(Role::Reserved), Some(gib(6.23)));
        assert_eq!(r.first(Role::Free), Some(512));
        // A machine translation back into English.
        let r =
            read("Attempt to allocate 200.00 MiBs (GPU 0; PyTorch retains a total of 6.18 GiB)");
        assert_eq!(r.first(Role::Request), Some(200 << 20));
        assert_eq!(r.first(Role::Reserved), Some(gib(6.18)));
    }

    /// A translated word never reads inside another word of a spaced script, and a text
    /// without translated words reads as before.
    #[test]
    fn translated_words_stand_alone_in_spaced_scripts() {
        let r = read("6.03 GiB невыделено");
        assert_eq!(r.figures[0].role, None);
        let r = read("7.79 GiB 总容量之外");
        assert_eq!(r.first(Role::Total), Some(gib(7.79)));
        assert_eq!(translated_role("tried to", "free"), None);
    }
}
