//! A reader for the plain-data subset of Python's pickle format (protocols 0–5 as the pickle
//! module writes them for dicts, lists, tuples, sets, ints, floats, strings, bytes, booleans
//! and None). Nothing is imported or called: a pickle that names a class or a function is
//! refused.
//!
//! Why not serde-pickle: it copies a shared object at each reference and counts references per
//! occurrence in the stream, so an object shared inside another shared object (PyTorch's
//! snapshots share each stack frame's dict between all the stacks that pass through it, and
//! each string between frames) fails as "recursive structure found". Here a shared object is
//! one `Rc`, as in Python.
//!
//! Bounded for files from strangers: the work is one step per opcode (no recursion, so no
//! nesting depth can overflow the stack, and a value is dropped without recursion either),
//! and what is built is charged against a budget proportional to the input ([`budget`]), so a
//! file of one-byte opcodes that each make an object cannot grow memory a hundredfold.

use std::cell::RefCell;
use std::rc::Rc;

/// Bytes of decoded values allowed per byte of input. A 17 MB pickle laid out as
/// `_dump_snapshot` writes it (frame dicts shared between stacks as PyTorch's `py_symbolize`
/// shares them, blocks and trace entries as dicts with memoised keys, 100,000 trace entries)
/// was charged 7 bytes a byte (its decoded values took 9 times its size in memory, all
/// told); one-byte opcodes that each make an object (`]`, `}`, `N`, DUP)
/// are charged 24–72, and those files are what this stops.
const BYTES_PER_INPUT_BYTE: u64 = 16;
/// What any input may use, however small (a small snapshot is never refused).
const BUDGET_FLOOR: u64 = 64 << 20;
/// What no input may use.
pub const BUDGET_CEILING: u64 = 4 << 30;

/// Values the parser's stack may hold at once. Python's pickler writes a list or a dict's
/// items in batches of 1,000 (`_BATCHSIZE`), so its stack holds about a thousand a level;
/// PyTorch's C++ pickler writes a list's items in one batch (a trace of a million entries is
/// a million). A file of one-byte values that are never gathered into a container is stopped
/// here, at a few tens of MiB, long before its budget.
pub const MAX_STACK: usize = 4 << 20;

/// The decoded-value budget for an input of `len` bytes.
pub fn budget(len: usize) -> u64 {
    (len as u64)
        .saturating_mul(BYTES_PER_INPUT_BYTE)
        .saturating_add(BUDGET_FLOOR)
        .min(BUDGET_CEILING)
}

/// A decoded value. Containers are shared, as the pickle's memo shares them.
#[derive(Debug, Clone)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer beyond 64 bits: only its sign is kept.
    BigInt(bool),
    Float(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    List(Rc<RefCell<Vec<Value>>>),
    Tuple(Rc<[Value]>),
    Dict(Rc<RefCell<Vec<(Value, Value)>>>),
}

impl Value {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        self.as_int().and_then(|i| u64::try_from(i).ok())
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// A dict's value under a string key.
    pub fn get(&self, key: &str) -> Option<Value> {
        match self {
            Value::Dict(d) => d
                .borrow()
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v.clone()),
            _ => None,
        }
    }

    /// A list's or tuple's items (empty for anything else).
    pub fn items(&self) -> Vec<Value> {
        match self {
            Value::List(l) => l.borrow().clone(),
            Value::Tuple(t) => t.to_vec(),
            _ => Vec::new(),
        }
    }

    pub fn is_dict(&self) -> bool {
        matches!(self, Value::Dict(_))
    }
}

/// Dropped without recursion: a value nested 200,000 deep (a few hundred KB of TUPLE1 or
/// APPEND opcodes) would otherwise drop one level per stack frame and overflow the stack. The
/// children of a container this value owns alone are moved to a list on the heap first, so
/// each value dropped is already empty. Shared containers are left to their other owners.
impl Drop for Value {
    fn drop(&mut self) {
        let mut pending = Vec::new();
        take_children(self, &mut pending);
        while let Some(mut v) = pending.pop() {
            take_children(&mut v, &mut pending);
        }
    }
}

/// Moves the children of `v` into `out` when `v` is their only owner.
fn take_children(v: &mut Value, out: &mut Vec<Value>) {
    match v {
        Value::List(l) => {
            if let Some(cell) = Rc::get_mut(l) {
                out.append(cell.get_mut());
            }
        }
        Value::Dict(d) => {
            if let Some(cell) = Rc::get_mut(d) {
                for (k, v) in cell.get_mut().drain(..) {
                    out.push(k);
                    out.push(v);
                }
            }
        }
        Value::Tuple(t) => {
            if let Some(items) = Rc::get_mut(t) {
                out.extend(items.iter_mut().map(|i| std::mem::replace(i, Value::None)));
            }
        }
        _ => {}
    }
}

/// Why a pickle could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("the pickle ends early (at byte {0})")]
    Truncated(usize),
    #[error(
        "opcode 0x{0:02x} at byte {1} is not plain data (a class, a function or an extension)"
    )]
    Unsupported(u8, usize),
    #[error("malformed pickle at byte {0}: {1}")]
    Malformed(usize, &'static str),
    #[error(
        "decoding it would take more than {} of memory ({} a byte of the file at most): not \
         what a memory snapshot holds",
        crate::units::fmt_bytes(*.0),
        BYTES_PER_INPUT_BYTE
    )]
    TooBig(u64),
    #[error(
        "more than {MAX_STACK} values wait on its stack at byte {0} (a real pickle gathers them \
         into lists and dicts as it goes)"
    )]
    StackTooDeep(usize),
}

enum Item {
    Mark,
    Value(Value),
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or(Error::Truncated(self.bytes.len()))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn byte(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }

    fn le(&mut self, n: usize) -> Result<u64, Error> {
        let b = self.take(n)?;
        Ok(b.iter()
            .rev()
            .fold(0u64, |acc, x| (acc << 8) | u64::from(*x)))
    }

    fn len(&mut self, n: usize) -> Result<usize, Error> {
        let l = self.le(n)?;
        usize::try_from(l).map_err(|_| Error::Truncated(self.bytes.len()))
    }

    fn line(&mut self) -> Result<&'a [u8], Error> {
        let rest = &self.bytes[self.pos..];
        let end = rest
            .iter()
            .position(|b| *b == b'\n')
            .ok_or(Error::Truncated(self.bytes.len()))?;
        self.pos += end + 1;
        Ok(&rest[..end])
    }
}

/// What the values built so far take, against [`budget`].
struct Budget {
    used: u64,
    limit: u64,
}

/// A value's slot on the stack or in a container.
const SLOT: u64 = std::mem::size_of::<Item>() as u64;
/// A container's own allocation (the counts, the borrow flag, the vector).
const CONTAINER: u64 = 48;

impl Budget {
    fn charge(&mut self, bytes: u64) -> Result<(), Error> {
        self.used = self.used.saturating_add(bytes);
        if self.used > self.limit {
            return Err(Error::TooBig(self.limit));
        }
        Ok(())
    }
}

/// Decodes one pickle (the first STOP ends it).
pub fn parse(bytes: &[u8]) -> Result<Value, Error> {
    parse_within(bytes, budget(bytes.len()))
}

/// [`parse`] with the decoded values limited to `limit` bytes.
pub fn parse_within(bytes: &[u8], limit: u64) -> Result<Value, Error> {
    let mut r = Reader { bytes, pos: 0 };
    let mut stack: Vec<Item> = Vec::new();
    let mut memo: std::collections::HashMap<u64, Value> = std::collections::HashMap::new();
    let mut budget = Budget { used: 0, limit };
    loop {
        let at = r.pos;
        if stack.len() >= MAX_STACK {
            return Err(Error::StackTooDeep(at));
        }
        let op = r.byte()?;
        let bad = |what| Error::Malformed(at, what);
        // A value pushed takes one slot (moving it into a container later reuses that
        // space), plus what the arms below add for strings and containers. These opcodes
        // push none.
        if !matches!(
            op,
            0x80 | 0x95
                | b'.'
                | b'0'
                | b'1'
                | b'a'
                | b'e'
                | 0x90
                | b's'
                | b'u'
                | 0x94
                | b'q'
                | b'r'
                | b'p'
        ) {
            budget.charge(SLOT)?;
        }
        match op {
            0x80 => {
                r.byte()?; // PROTO
            }
            0x95 => {
                r.take(8)?; // FRAME: its length; the opcodes follow
            }
            b'.' => {
                return match stack.pop() {
                    Some(Item::Value(v)) => Ok(v),
                    _ => Err(bad("STOP without a value")),
                };
            }
            b'(' => stack.push(Item::Mark),
            b'0' => {
                stack.pop().ok_or(bad("POP on an empty stack"))?;
            }
            b'1' => {
                pop_mark(&mut stack).ok_or(bad("POP_MARK without a mark"))?;
            }
            b'2' => {
                let top = match stack.last() {
                    Some(Item::Value(v)) => v.clone(),
                    _ => return Err(bad("DUP without a value")),
                };
                stack.push(Item::Value(top));
            }
            b'N' => stack.push(Item::Value(Value::None)),
            0x88 => stack.push(Item::Value(Value::Bool(true))),
            0x89 => stack.push(Item::Value(Value::Bool(false))),
            b'J' => {
                let v = r.le(4)? as u32 as i32;
                stack.push(Item::Value(Value::Int(i64::from(v))));
            }
            b'K' => stack.push(Item::Value(Value::Int(i64::from(r.byte()?)))),
            b'M' => stack.push(Item::Value(Value::Int(r.le(2)? as i64))),
            0x8a | 0x8b => {
                let n = if op == 0x8a {
                    usize::from(r.byte()?)
                } else {
                    r.len(4)?
                };
                let b = r.take(n)?;
                stack.push(Item::Value(long(b)));
            }
            b'I' | b'L' => {
                // Protocol 0 integers (and I01/I00 booleans).
                let line = r.line()?;
                let text = std::str::from_utf8(line).map_err(|_| bad("INT text"))?;
                let text = text.trim_end_matches('L');
                let v = match text {
                    "01" => Value::Bool(true),
                    "00" => Value::Bool(false),
                    t => t
                        .parse::<i64>()
                        .map(Value::Int)
                        .unwrap_or(Value::BigInt(t.starts_with('-'))),
                };
                stack.push(Item::Value(v));
            }
            b'V' => {
                // Protocol 0 strings: raw-unicode-escape.
                let s = raw_unicode_escape(r.line()?).ok_or(bad("UNICODE escape"))?;
                budget.charge(16 + s.len() as u64)?;
                stack.push(Item::Value(Value::Str(Rc::from(s))));
            }
            b'G' => {
                let b: [u8; 8] = r.take(8)?.try_into().map_err(|_| bad("BINFLOAT"))?;
                stack.push(Item::Value(Value::Float(f64::from_be_bytes(b))));
            }
            b'F' => {
                let line = r.line()?;
                let v = std::str::from_utf8(line)
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .ok_or(bad("FLOAT text"))?;
                stack.push(Item::Value(Value::Float(v)));
            }
            0x8c | b'X' | 0x8d => {
                let n = match op {
                    0x8c => usize::from(r.byte()?),
                    b'X' => r.len(4)?,
                    _ => r.len(8)?,
                };
                let s = std::str::from_utf8(r.take(n)?).map_err(|_| bad("string not UTF-8"))?;
                budget.charge(16 + n as u64)?;
                stack.push(Item::Value(Value::Str(Rc::from(s))));
            }
            b'C' | b'B' | 0x8e | 0x96 => {
                let n = match op {
                    b'C' => usize::from(r.byte()?),
                    b'B' => r.len(4)?,
                    _ => r.len(8)?,
                };
                budget.charge(16 + n as u64)?;
                stack.push(Item::Value(Value::Bytes(Rc::from(r.take(n)?))));
            }
            b']' | b'}' | 0x8f => {
                budget.charge(CONTAINER)?;
                stack.push(Item::Value(if op == b'}' {
                    Value::Dict(Rc::default())
                } else {
                    Value::List(Rc::default()) // a set (EMPTY_SET) is read as a list
                }));
            }
            b')' => stack.push(Item::Value(Value::Tuple(Rc::from(Vec::new())))),
            b'l' | 0x91 => {
                let items = pop_mark(&mut stack).ok_or(bad("LIST without a mark"))?;
                budget.charge(CONTAINER)?;
                stack.push(Item::Value(Value::List(Rc::new(RefCell::new(items)))));
            }
            b't' => {
                let items = pop_mark(&mut stack).ok_or(bad("TUPLE without a mark"))?;
                budget.charge(CONTAINER)?;
                stack.push(Item::Value(Value::Tuple(Rc::from(items))));
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                budget.charge(CONTAINER)?;
                if stack.len() < n {
                    return Err(bad("TUPLE on a short stack"));
                }
                let items = stack
                    .split_off(stack.len() - n)
                    .into_iter()
                    .map(|i| match i {
                        Item::Value(v) => Ok(v),
                        Item::Mark => Err(bad("a mark in a tuple")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                stack.push(Item::Value(Value::Tuple(Rc::from(items))));
            }
            b'd' => {
                let items = pop_mark(&mut stack).ok_or(bad("DICT without a mark"))?;
                budget.charge(CONTAINER)?;
                let pairs = pairs(items).ok_or(bad("DICT with an odd count"))?;
                stack.push(Item::Value(Value::Dict(Rc::new(RefCell::new(pairs)))));
            }
            b'a' => {
                let v = pop_value(&mut stack).ok_or(bad("APPEND without a value"))?;
                match stack.last() {
                    Some(Item::Value(Value::List(l))) => l.borrow_mut().push(v),
                    _ => return Err(bad("APPEND to a non-list")),
                }
            }
            b'e' | 0x90 => {
                let items = pop_mark(&mut stack).ok_or(bad("APPENDS without a mark"))?;
                match stack.last() {
                    Some(Item::Value(Value::List(l))) => l.borrow_mut().extend(items),
                    _ => return Err(bad("APPENDS to a non-list")),
                }
            }
            b's' => {
                let v = pop_value(&mut stack).ok_or(bad("SETITEM without a value"))?;
                let k = pop_value(&mut stack).ok_or(bad("SETITEM without a key"))?;
                match stack.last() {
                    Some(Item::Value(Value::Dict(d))) => d.borrow_mut().push((k, v)),
                    _ => return Err(bad("SETITEM on a non-dict")),
                }
            }
            b'u' => {
                let items = pop_mark(&mut stack).ok_or(bad("SETITEMS without a mark"))?;
                let pairs = pairs(items).ok_or(bad("SETITEMS with an odd count"))?;
                match stack.last() {
                    Some(Item::Value(Value::Dict(d))) => d.borrow_mut().extend(pairs),
                    _ => return Err(bad("SETITEMS on a non-dict")),
                }
            }
            0x94 | b'q' | b'r' | b'p' => {
                let id = match op {
                    0x94 => memo.len() as u64,
                    b'q' => u64::from(r.byte()?),
                    b'r' => r.le(4)?,
                    _ => std::str::from_utf8(r.line()?)
                        .ok()
                        .and_then(|t| t.parse().ok())
                        .ok_or(bad("PUT index"))?,
                };
                let top = match stack.last() {
                    Some(Item::Value(v)) => v.clone(),
                    _ => return Err(bad("MEMOIZE without a value")),
                };
                budget.charge(CONTAINER)?;
                memo.insert(id, top);
            }
            b'h' | b'j' | b'g' => {
                let id = match op {
                    b'h' => u64::from(r.byte()?),
                    b'j' => r.le(4)?,
                    _ => std::str::from_utf8(r.line()?)
                        .ok()
                        .and_then(|t| t.parse().ok())
                        .ok_or(bad("GET index"))?,
                };
                let v = memo.get(&id).cloned().ok_or(bad("GET of a missing memo"))?;
                stack.push(Item::Value(v));
            }
            other => return Err(Error::Unsupported(other, at)),
        }
    }
}

fn pop_value(stack: &mut Vec<Item>) -> Option<Value> {
    match stack.pop()? {
        Item::Value(v) => Some(v),
        Item::Mark => None,
    }
}

fn pop_mark(stack: &mut Vec<Item>) -> Option<Vec<Value>> {
    let mark = stack.iter().rposition(|i| matches!(i, Item::Mark))?;
    let items = stack.split_off(mark + 1);
    stack.pop();
    Some(
        items
            .into_iter()
            .filter_map(|i| match i {
                Item::Value(v) => Some(v),
                Item::Mark => None,
            })
            .collect(),
    )
}

fn pairs(items: Vec<Value>) -> Option<Vec<(Value, Value)>> {
    if !items.len().is_multiple_of(2) {
        return None;
    }
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    Some(out)
}

/// Latin-1 bytes with `\uXXXX` and `\UXXXXXXXX` escapes (what Python's protocol 0 writes).
fn raw_unicode_escape(b: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let n = match (b[i], b.get(i + 1)) {
            (b'\\', Some(b'u')) => 4,
            (b'\\', Some(b'U')) => 8,
            _ => 0,
        };
        if n == 0 {
            out.push(char::from(b[i]));
            i += 1;
            continue;
        }
        let hex = std::str::from_utf8(b.get(i + 2..i + 2 + n)?).ok()?;
        out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
        i += 2 + n;
    }
    Some(out)
}

/// LONG1/LONG4: little-endian two's complement.
fn long(b: &[u8]) -> Value {
    if b.is_empty() {
        return Value::Int(0);
    }
    let negative = b[b.len() - 1] & 0x80 != 0;
    if b.len() > 8 {
        // Fits when the extra bytes only extend the sign.
        let fill = if negative { 0xff } else { 0 };
        if b[8..].iter().any(|x| *x != fill) || ((b[7] & 0x80 != 0) != negative) {
            return Value::BigInt(negative);
        }
    }
    let mut buf = [if negative { 0xff } else { 0 }; 8];
    let n = b.len().min(8);
    buf[..n].copy_from_slice(&b[..n]);
    Value::Int(i64::from_le_bytes(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protocol_4_pickle_with_shared_objects() {
        // pickle.dumps(
        //   (lambda f: {"a": [f, f], "b": [f], "n": -5, "big": 1 << 40, "t": (1, 2.5, None)})
        //   ({"x": "s"}), protocol=4)
        let bytes = b"\x80\x04\x95L\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(}\x94\
\x8c\x01x\x94\x8c\x01s\x94sh\x03e\x8c\x01b\x94]\x94h\x03a\x8c\x01n\x94J\xfb\xff\xff\xff\x8c\x03big\
\x94\x8a\x06\x00\x00\x00\x00\x00\x01\x8c\x01t\x94K\x01G@\x04\x00\x00\x00\x00\x00\x00N\x87\x94u.";
        let v = parse(bytes).expect("parse");
        let a = v.get("a").expect("a").items();
        assert_eq!(a.len(), 2);
        assert_eq!(
            a[1].get("x").and_then(|s| s.as_str().map(str::to_owned)),
            Some("s".into())
        );
        assert_eq!(v.get("b").expect("b").items().len(), 1);
        assert_eq!(v.get("n").and_then(|n| n.as_int()), Some(-5));
        assert_eq!(v.get("big").and_then(|n| n.as_int()), Some(1 << 40));
        let t = v.get("t").expect("t").items();
        assert!(matches!(t[1], Value::Float(f) if f == 2.5));
        assert!(matches!(t[2], Value::None));
    }

    #[test]
    fn protocol_0_strings() {
        let v = parse(b"(lp0\nVa\\u00e9\\u000ab\np1\naI01\naL123456789012345678901234567890L\na.")
            .expect("parse");
        let items = v.items();
        assert_eq!(items[0].as_str(), Some("a\u{e9}\nb"));
        assert_eq!(items[1].as_bool(), Some(true));
        assert!(matches!(items[2], Value::BigInt(false)));
    }

    #[test]
    fn longs() {
        assert!(matches!(long(&[0xff]), Value::Int(-1)));
        assert!(matches!(long(&[0x00, 0x80]), Value::Int(-32768)));
        assert!(matches!(long(&[0; 12]), Value::Int(0)));
        assert!(matches!(
            long(&[1, 0, 0, 0, 0, 0, 0, 0, 1]),
            Value::BigInt(false)
        ));
        assert!(matches!(
            long(&[0, 0, 0, 0, 0, 0, 0, 0x80]),
            Value::Int(i64::MIN)
        ));
    }

    #[test]
    fn hostile_or_broken_input_is_an_error() {
        for (bytes, what) in [
            (&b""[..], "empty"),
            (b"\x80\x04", "no STOP"),
            (b"\x80\x02cos\nsystem\n.", "a global"),
            (
                b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x93.",
                "STACK_GLOBAL",
            ),
            (b"a.", "APPEND on nothing"),
            (b"u.", "SETITEMS without a mark"),
            (b"h\x05.", "a missing memo"),
            (b"X\xff\xff\xff\xff.", "a huge length"),
            (
                b"\x8d\xff\xff\xff\xff\xff\xff\xff\xff",
                "a huge 8-byte length",
            ),
            (b"(K\x01u.", "an odd SETITEMS"),
            (b".", "STOP on nothing"),
            (b"\x8c\x02\xff\xfe.", "bad UTF-8"),
        ] {
            assert!(parse(bytes).is_err(), "{what}");
        }
        // A list that contains itself parses (Python writes those) without looping.
        let v = parse(b"]\x94h\x00a.").expect("self-referencing list");
        assert_eq!(v.items().len(), 1);
    }
    #[test]
    fn deep_nesting_parses_and_drops_without_recursion() {
        // 200,000 nested TUPLE1: the drop of the result overflowed the stack (P1).
        let mut deep = b"\x80\x04N".to_vec();
        deep.extend(std::iter::repeat_n(0x85u8, 200_000));
        deep.push(b'.');
        let v = parse(&deep).expect("nested tuples");
        assert_eq!(v.items().len(), 1);
        drop(v);
        // Lists nested through APPEND and the memo: [[[...]]] 200,000 deep.
        let mut lists = b"\x80\x04]\x94".to_vec();
        for i in 1..200_000u32 {
            lists.extend_from_slice(b"]\x94a");
            lists.push(b'j');
            lists.extend_from_slice(&i.to_le_bytes());
        }
        lists.extend_from_slice(b"0j\x00\x00\x00\x00.");
        let v = parse(&lists).expect("nested lists");
        assert_eq!(v.items().len(), 1);
        drop(v);
    }

    #[test]
    fn objects_past_the_budget_are_refused() {
        // 2 MiB of EMPTY_LIST: a list a byte, 72 bytes of memory each (U2).
        let mut lists = b"\x80\x04".to_vec();
        lists.extend(std::iter::repeat_n(b']', 2 << 20));
        lists.push(b'.');
        assert!(matches!(parse(&lists), Err(Error::TooBig(_))));
        // Never gathered into a container: stopped by the stack's bound first.
        let mut nones = b"\x80\x04".to_vec();
        nones.extend(std::iter::repeat_n(b'N', MAX_STACK + 10));
        nones.push(b'.');
        assert!(matches!(parse(&nones), Err(Error::StackTooDeep(_))));
        let e = parse_within(&lists, 1 << 20).expect_err("over 1 MiB");
        assert!(e.to_string().contains("more than 1.0 MiB"), "{e}");
        // The same count of small integers in one list is what a real pickle holds: read.
        let mut ints = b"\x80\x04](".to_vec();
        for _ in 0..(1 << 19) {
            ints.extend_from_slice(b"K\x01");
        }
        ints.extend_from_slice(b"e.");
        assert_eq!(parse(&ints).expect("ints").items().len(), 1 << 19);
        assert_eq!(budget(0), BUDGET_FLOOR);
        assert_eq!(budget(usize::MAX), BUDGET_CEILING);
    }
}
