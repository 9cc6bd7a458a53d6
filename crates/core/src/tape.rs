//! JSON text validated where it is: a flat tape over the text, as a `jsonschema` representation.
//!
//! Validating a `serde_json::Value` means building a tree first — an allocation for every object,
//! array and string, a B-tree per object — and in a browser that building, not the validation,
//! is most of the time (BENCHMARKS.md). [`Tape::parse`] reads the text once into one vector of
//! tokens that point back into the text: strings without escapes are borrowed, numbers keep their
//! text (so `2^64 + 1` is still exact), and each container knows where it ends, so skipping a member
//! is one step. [`TapeJson`] lets `jsonschema` validate those tokens directly.

use std::borrow::Cow;

use jsonschema::json::{Array, Json, JsonNumber, Node, NodeIdentity, Object};
use jsonschema::JsonType;
use serde_json::Value;

/// Why a text has no tape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TapeError {
    /// Not JSON (or nested deeper than allowed): where and why.
    Invalid(String),
    /// Valid JSON, but an object names a member twice (or with escapes, or has very many members,
    /// where repeats are not looked for): `JSON.parse` and serde_json keep the last one, so the text
    /// must be normalized first ([`crate::validate`] does) for the validator to see what they see.
    RepeatedNames,
}

impl TapeError {
    pub fn message(&self) -> String {
        match self {
            Self::Invalid(why) => why.clone(),
            Self::RepeatedNames => "an object names a member twice".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    True,
    False,
    Number,
    String,
    Array,
    Object,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    /// A string with `\` escapes, decoded when read.
    escaped: bool,
    /// Byte range in the text: a string's contents without its quotes, a number's digits, a
    /// container's brackets and everything between.
    start: u32,
    end: u32,
    /// The index of the token after this value (after everything inside a container).
    next: u32,
    /// Members of an object, elements of an array.
    count: u32,
}

/// Parsed JSON text: the text and its tokens. Nodes borrow it for the validation.
pub struct Tape<'t> {
    text: &'t str,
    tokens: Cow<'t, [Token]>,
}

/// The tokens of one value cut out of a larger tape, as if the value's own text had been read
/// (a call's arguments, read with their frame): [`Tape::with_tokens`] joins them to that text
/// again, so validating it later is not a second pass over it.
#[derive(Debug, Clone)]
pub struct DetachedTokens(Vec<Token>);

/// How deep containers may nest: serde_json's limit, so that every tape has a `Value`.
pub const MAX_DEPTH: usize = 127;

/// Members of one object checked against each other for repeats; an object with more is sent to be
/// normalized (a quadratic check must stay small whatever the input).
const REPEAT_CHECK_LIMIT: usize = 32;

impl<'t> Tape<'t> {
    /// Reads one JSON value (with surrounding whitespace); anything else is an error.
    pub fn parse(text: &'t str) -> Result<Self, TapeError> {
        Self::parse_within(text, MAX_DEPTH)
    }

    /// [`Self::parse`] with containers nested at most `max_depth` deep (a value inside a frame has
    /// less room than the frame).
    pub fn parse_within(text: &'t str, max_depth: usize) -> Result<Self, TapeError> {
        Self::read(text, max_depth, true)
    }

    /// [`Self::parse`] for text known to name no member twice (serialized from a `Value`).
    pub fn parse_normalized(text: &'t str) -> Result<Self, TapeError> {
        Self::read(text, MAX_DEPTH, false)
    }

    fn read(text: &'t str, max_depth: usize, check_names: bool) -> Result<Self, TapeError> {
        if text.len() >= u32::MAX as usize {
            return Err(TapeError::Invalid("the JSON text is too long".into()));
        }
        let mut parser = Parser {
            bytes: text.as_bytes(),
            at: 0,
            tokens: Vec::with_capacity(text.len() / 8 + 1),
            names: Vec::new(),
            repeated: false,
            check_names,
            max_depth,
        };
        parser.value(0)?;
        parser.skip_whitespace();
        if parser.at != parser.bytes.len() {
            return Err(parser.error("trailing characters"));
        }
        if parser.repeated {
            return Err(TapeError::RepeatedNames);
        }
        Ok(Self {
            text,
            tokens: Cow::Owned(parser.tokens),
        })
    }

    /// The tape of `text` from tokens [`TapeNode::detach`] cut out for it; `None` when they do
    /// not span exactly this text (then it must be parsed). Crate-internal: tokens joined to a
    /// text of the same length that they were not cut for would slice it anywhere.
    pub(crate) fn with_tokens(text: &'t str, tokens: &'t DetachedTokens) -> Option<Self> {
        let root = tokens.0.first()?;
        let quotes = usize::from(root.kind == Kind::String);
        let spans_text = root.start as usize == quotes && root.end as usize + quotes == text.len();
        spans_text.then(|| Self {
            text,
            tokens: Cow::Borrowed(&tokens.0),
        })
    }

    /// The root value.
    pub fn root(&self) -> TapeNode<'_> {
        TapeNode {
            tape: self,
            index: 0,
        }
    }

    #[inline]
    fn slice(&self, token: &Token) -> &str {
        &self.text[token.start as usize..token.end as usize]
    }
}

struct Parser<'b> {
    bytes: &'b [u8],
    at: usize,
    tokens: Vec<Token>,
    /// The member names of the objects being read, innermost last (byte ranges).
    names: Vec<(usize, usize)>,
    /// An object may name a member twice (see [`TapeError::RepeatedNames`]).
    repeated: bool,
    check_names: bool,
    max_depth: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> TapeError {
        TapeError::Invalid(format!("{what} at byte {}", self.at))
    }

    /// Records the member name just read (the last token) for the object whose names start at
    /// `first`, noting whether it may repeat one.
    fn note_name(&mut self, first: usize) {
        if !self.check_names {
            return;
        }
        let token = self.tokens[self.tokens.len() - 1];
        let (start, end) = (token.start as usize, token.end as usize);
        let name = &self.bytes[start..end];
        let earlier = &self.names[first..];
        if token.escaped
            || earlier.len() >= REPEAT_CHECK_LIMIT
            || earlier.iter().any(|&(s, e)| &self.bytes[s..e] == name)
        {
            self.repeated = true;
        }
        self.names.push((start, end));
    }

    #[inline]
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn push(&mut self, kind: Kind, start: usize, end: usize) -> usize {
        let index = self.tokens.len();
        self.tokens.push(Token {
            kind,
            escaped: false,
            start: start as u32,
            end: end as u32,
            next: index as u32 + 1,
            count: 0,
        });
        index
    }

    fn value(&mut self, depth: usize) -> Result<(), TapeError> {
        self.skip_whitespace();
        let start = self.at;
        match self.bytes.get(self.at) {
            None => Err(self.error("unexpected end")),
            Some(b'{') => self.container(Kind::Object, depth),
            Some(b'[') => self.container(Kind::Array, depth),
            Some(b'"') => self.string(),
            Some(b't') => self.literal(b"true", Kind::True, start),
            Some(b'f') => self.literal(b"false", Kind::False, start),
            Some(b'n') => self.literal(b"null", Kind::Null, start),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("unexpected character")),
        }
    }

    fn literal(&mut self, word: &[u8], kind: Kind, start: usize) -> Result<(), TapeError> {
        if !self.bytes[start..].starts_with(word) {
            return Err(self.error("unexpected character"));
        }
        self.at += word.len();
        self.push(kind, start, self.at);
        Ok(())
    }

    fn number(&mut self) -> Result<(), TapeError> {
        let start = self.at;
        let digits = |p: &mut Self| {
            let from = p.at;
            while let Some(b'0'..=b'9') = p.bytes.get(p.at) {
                p.at += 1;
            }
            p.at > from
        };
        if self.bytes[self.at] == b'-' {
            self.at += 1;
        }
        let leading_zero = self.bytes.get(self.at) == Some(&b'0');
        if !digits(self)
            || (leading_zero && self.at - start > 1 + usize::from(self.bytes[start] == b'-'))
        {
            return Err(self.error("invalid number"));
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if !digits(self) {
                return Err(self.error("invalid number"));
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            if !digits(self) {
                return Err(self.error("invalid number"));
            }
        }
        // serde_json refuses numbers beyond `f64`, and so does every reader of this tape.
        let text = std::str::from_utf8(&self.bytes[start..self.at]).unwrap_or("");
        let may_overflow = text.contains(['.', 'e', 'E']) || text.len() > 19;
        if may_overflow && !text.parse::<f64>().is_ok_and(f64::is_finite) {
            return Err(self.error("number out of range"));
        }
        self.push(Kind::Number, start, self.at);
        Ok(())
    }

    fn string(&mut self) -> Result<(), TapeError> {
        let start = self.at + 1;
        let bytes = self.bytes;
        // A local index, not `self.at`: the loop is most of a parse, and the wasm build (optimized
        // for size) would otherwise store it back on every byte.
        let mut at = start;
        let mut escaped = false;
        loop {
            match bytes.get(at) {
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    at += 2;
                }
                Some(0..=0x1f) => {
                    self.at = at;
                    return Err(self.error("control character in a string"));
                }
                Some(_) => at += 1,
                None => {
                    self.at = at.min(bytes.len());
                    return Err(self.error("unterminated string"));
                }
            }
        }
        self.at = at;
        // A malformed escape would otherwise be read as an empty string later.
        if escaped {
            let quoted = std::str::from_utf8(&self.bytes[start - 1..=self.at]).unwrap_or("");
            if serde_json::from_str::<String>(quoted).is_err() {
                return Err(self.error("invalid escape in a string"));
            }
        }
        let index = self.push(Kind::String, start, self.at);
        self.tokens[index].escaped = escaped;
        self.at += 1;
        Ok(())
    }

    fn container(&mut self, kind: Kind, depth: usize) -> Result<(), TapeError> {
        if depth >= self.max_depth {
            return Err(self.error("nested too deep"));
        }
        let first_name = self.names.len();
        let close = if kind == Kind::Object { b'}' } else { b']' };
        let start = self.at;
        self.at += 1;
        let index = self.push(kind, start, start);
        let mut count = 0;
        self.skip_whitespace();
        if self.bytes.get(self.at) == Some(&close) {
            self.at += 1;
        } else {
            loop {
                if kind == Kind::Object {
                    self.skip_whitespace();
                    if self.bytes.get(self.at) != Some(&b'"') {
                        return Err(self.error("expected a member name"));
                    }
                    self.string()?;
                    self.note_name(first_name);
                    self.skip_whitespace();
                    if self.bytes.get(self.at) != Some(&b':') {
                        return Err(self.error("expected `:`"));
                    }
                    self.at += 1;
                }
                self.value(depth + 1)?;
                count += 1;
                self.skip_whitespace();
                match self.bytes.get(self.at) {
                    Some(b',') => self.at += 1,
                    Some(b) if *b == close => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err(self.error("expected `,` or the end of the container")),
                }
            }
        }
        self.names.truncate(first_name);
        let next = self.tokens.len() as u32;
        let token = &mut self.tokens[index];
        token.end = self.at as u32;
        token.next = next;
        token.count = count;
        Ok(())
    }
}

/// The representation marker: instances are [`TapeNode`]s.
pub struct TapeJson;

impl Json for TapeJson {
    type Node<'a> = TapeNode<'a>;
    type PreparedKey = String;
    type StringBuffer = ();
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>((): &mut (), string: &str, f: impl FnOnce(TapeNode<'_>) -> T) -> T {
        // A member name as a string value (`propertyNames`): a one-token tape over it.
        let tape = Tape {
            text: string,
            tokens: Cow::Owned(vec![Token {
                kind: Kind::String,
                escaped: false,
                start: 0,
                end: string.len() as u32,
                next: 1,
                count: 0,
            }]),
        };
        f(tape.root())
    }
}

/// A value inside a [`Tape`].
#[derive(Clone, Copy)]
pub struct TapeNode<'a> {
    tape: &'a Tape<'a>,
    index: u32,
}

impl<'a> TapeNode<'a> {
    #[inline]
    fn token(&self) -> &'a Token {
        &self.tape.tokens[self.index as usize]
    }

    #[inline]
    fn text(&self) -> &'a str {
        self.tape.slice(self.token())
    }

    /// The value exactly as written in the text (a string with its quotes), for readers that
    /// want it as JSON (`serde_json::from_str`).
    pub fn json_text(&self) -> &'a str {
        &self.tape.text[self.json_span()]
    }

    /// Where [`Self::json_text`] is in the parsed text, as a byte range.
    pub fn json_span(&self) -> std::ops::Range<usize> {
        let token = self.token();
        let quotes = usize::from(token.kind == Kind::String);
        token.start as usize - quotes..token.end as usize + quotes
    }

    /// This value's tokens, re-based on [`Self::json_text`] as their own text.
    pub fn detach(&self) -> DetachedTokens {
        let base = self.json_span().start as u32;
        let first = self.index;
        let tokens = &self.tape.tokens[first as usize..self.token().next as usize];
        DetachedTokens(
            tokens
                .iter()
                .map(|token| Token {
                    start: token.start - base,
                    end: token.end - base,
                    next: token.next - first,
                    ..*token
                })
                .collect(),
        )
    }

    /// The member `name` of an object node (`None` for other nodes, or when absent).
    pub fn member(&self, name: &str) -> Option<TapeNode<'a>> {
        self.as_object()?.find(name)
    }

    /// A string node's value, decoded when it has escapes (`None` for other nodes).
    pub fn string(&self) -> Option<Cow<'a, str>> {
        (self.token().kind == Kind::String).then(|| self.string_value())
    }

    /// A number node written as an integer that fits an `i64` (`None` for any other node, and
    /// for `1.0`, `1e2` or `-0`, which serde_json reads as floats).
    pub fn integer(&self) -> Option<i64> {
        let text = self.text();
        let integer = self.token().kind == Kind::Number && TapeNumber(text).is_plain_integer();
        integer
            .then(|| text.parse().ok())
            .flatten()
            .filter(|&n| n != 0 || !text.starts_with('-'))
    }

    /// Whether this is `null`.
    pub fn is_json_null(&self) -> bool {
        self.token().kind == Kind::Null
    }

    /// A string token's value, decoded when it has escapes.
    fn string_value(&self) -> Cow<'a, str> {
        let token = self.token();
        let raw = self.tape.slice(token);
        if !token.escaped {
            return Cow::Borrowed(raw);
        }
        let quoted = &self.tape.text[token.start as usize - 1..token.end as usize + 1];
        Cow::Owned(serde_json::from_str::<String>(quoted).unwrap_or_default())
    }
}

/// A number as written: exact for any integer, `f64` otherwise.
pub struct TapeNumber<'a>(&'a str);

impl TapeNumber<'_> {
    fn is_plain_integer(&self) -> bool {
        !self.0.contains(['.', 'e', 'E'])
    }
}

impl JsonNumber for TapeNumber<'_> {
    fn as_u64(&self) -> Option<u64> {
        self.is_plain_integer()
            .then(|| self.0.parse().ok())
            .flatten()
    }

    fn as_i64(&self) -> Option<i64> {
        self.is_plain_integer()
            .then(|| self.0.parse().ok())
            .flatten()
    }

    fn as_f64(&self) -> Option<f64> {
        self.0.parse().ok()
    }

    fn as_str(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.0)
    }

    fn to_number(&self) -> Cow<'_, serde_json::Number> {
        Cow::Owned(serde_json::from_str(self.0).unwrap_or_else(|_| 0.into()))
    }

    fn is_integer(&self) -> bool {
        if self.is_plain_integer() {
            return true;
        }
        self.as_f64().is_some_and(|n| n.fract() == 0.0)
    }
}

impl<'a> Node<'a, TapeJson> for TapeNode<'a> {
    type Object = TapeObject<'a>;
    type Array = TapeArray<'a>;
    type Number = TapeNumber<'a>;

    fn as_object(&self) -> Option<TapeObject<'a>> {
        (self.token().kind == Kind::Object).then_some(TapeObject(*self))
    }

    fn as_array(&self) -> Option<TapeArray<'a>> {
        (self.token().kind == Kind::Array).then_some(TapeArray(*self))
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        self.string()
    }

    fn as_number(&self) -> Option<TapeNumber<'a>> {
        (self.token().kind == Kind::Number).then(|| TapeNumber(self.text()))
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.token().kind {
            Kind::True => Some(true),
            Kind::False => Some(false),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        self.is_json_null()
    }

    fn json_type(&self) -> JsonType {
        match self.token().kind {
            Kind::Null => JsonType::Null,
            Kind::True | Kind::False => JsonType::Boolean,
            Kind::Number => JsonType::Number,
            Kind::String => JsonType::String,
            Kind::Array => JsonType::Array,
            Kind::Object => JsonType::Object,
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        // `enum` and `const` of strings and literals (the usual case) without building a `Value`.
        match (self.token().kind, expected) {
            (Kind::Null, Value::Null) => true,
            (Kind::True, Value::Bool(b)) => *b,
            (Kind::False, Value::Bool(b)) => !*b,
            (Kind::String, Value::String(s)) => self.string_value() == s.as_str(),
            (Kind::Number | Kind::Array | Kind::Object, _) => {
                jsonschema::json::cmp::equal(&self.to_value(), expected)
            }
            _ => false,
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        let token = self.token();
        let text = match token.kind {
            Kind::String => {
                return Cow::Owned(Value::String(self.string_value().into_owned()));
            }
            _ => self.tape.slice(token),
        };
        Cow::Owned(serde_json::from_str(text).unwrap_or(Value::Null))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(self.index as usize))
    }
}

/// An object node.
pub struct TapeObject<'a>(TapeNode<'a>);

/// Each member as (name token, value token).
pub struct Members<'a> {
    tape: &'a Tape<'a>,
    at: u32,
    left: u32,
}

impl<'a> Iterator for Members<'a> {
    type Item = (Cow<'a, str>, TapeNode<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let name = TapeNode {
            tape: self.tape,
            index: self.at,
        };
        let value = TapeNode {
            tape: self.tape,
            index: self.at + 1,
        };
        self.at = value.token().next;
        Some((name.string_value(), value))
    }
}

impl<'a> TapeObject<'a> {
    /// The member named `key`. JSON objects have few members: a scan beats any index built per
    /// instance. Names compare as bytes, without decoding: every tape names each member once
    /// ([`Tape::parse`] sends repeated and escaped names to be normalized first, and
    /// [`Tape::parse_normalized`] is only given text serialized from a `Value`), so the first
    /// match is the only one; an escaped name (normalized text only) is decoded to compare.
    fn find(&self, key: &str) -> Option<TapeNode<'a>> {
        let tape = self.0.tape;
        let bytes = tape.text.as_bytes();
        let mut at = self.0.index as usize + 1;
        for _ in 0..self.0.token().count {
            let name = &tape.tokens[at];
            let matches = if name.escaped {
                TapeNode {
                    tape,
                    index: at as u32,
                }
                .string_value()
                    == key
            } else {
                bytes.get(name.start as usize..name.end as usize) == Some(key.as_bytes())
            };
            if matches {
                return Some(TapeNode {
                    tape,
                    index: at as u32 + 1,
                });
            }
            at = tape.tokens[at + 1].next as usize;
        }
        None
    }

    fn iter(&self) -> Members<'a> {
        Members {
            tape: self.0.tape,
            at: self.0.index + 1,
            left: self.0.token().count,
        }
    }
}

impl<'a> Object<'a, TapeJson> for TapeObject<'a> {
    type Node = TapeNode<'a>;
    type MemberName = Cow<'a, str>;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        self.0.token().count as usize
    }

    fn get(&self, key: &String) -> Option<TapeNode<'a>> {
        self.find(key)
    }

    fn members(&self) -> Members<'a> {
        self.iter()
    }
}

/// An array node.
pub struct TapeArray<'a>(TapeNode<'a>);

/// Each element in order.
pub struct Elements<'a> {
    tape: &'a Tape<'a>,
    at: u32,
    left: u32,
}

impl<'a> Iterator for Elements<'a> {
    type Item = TapeNode<'a>;

    fn next(&mut self) -> Option<TapeNode<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let node = TapeNode {
            tape: self.tape,
            index: self.at,
        };
        self.at = node.token().next;
        Some(node)
    }
}

impl<'a> Array<'a, TapeJson> for TapeArray<'a> {
    type Node = TapeNode<'a>;
    type ElementsIter = Elements<'a>;

    fn len(&self) -> usize {
        self.0.token().count as usize
    }

    fn elements(&self) -> Elements<'a> {
        Elements {
            tape: self.0.tape,
            at: self.0.index + 1,
            left: self.0.token().count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tape reads back what serde_json reads, value for value.
    fn round_trip(node: TapeNode<'_>) -> Value {
        match node.json_type() {
            JsonType::Object => Value::Object(
                node.as_object()
                    .unwrap()
                    .members()
                    .map(|(k, v)| (k.into_owned(), round_trip(v)))
                    .collect(),
            ),
            JsonType::Array => Value::Array(
                node.as_array()
                    .unwrap()
                    .elements()
                    .map(round_trip)
                    .collect(),
            ),
            _ => node.to_value().into_owned(),
        }
    }

    #[test]
    fn reads_what_serde_json_reads() {
        for text in [
            r#"{"a": [1, -2.5e3, "x\"y\u00e9", true, false, null, {}], "b": {"c": []}, "d": 18446744073709551617}"#,
            "  [ ]  ",
            // The largest `f64`, written with one digit too many: in range only when read
            // correctly rounded, as both readers do (`float_roundtrip`).
            "[1.7976931348623158e308, -1.7976931348623158e308, 4.9e-324]",
            r#""\ud83e\udd80""#,
            "0",
        ] {
            let tape = Tape::parse(text).unwrap();
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(round_trip(tape.root()), expected, "{text}");
        }
    }

    #[test]
    fn a_member_detached_from_its_tape_reads_as_its_own_text() {
        let frame = r#"{"x": 1, "v": {"a": [1, "b\"c", {"d": null}], "e": "f"}, "s": "g\nh", "n": -2.5e3, "z": []}"#;
        let tape = Tape::parse(frame).unwrap();
        for name in ["v", "s", "n", "z", "x"] {
            let node = tape.root().member(name).unwrap();
            let text = node.json_text();
            let tokens = node.detach();
            let joined = Tape::with_tokens(text, &tokens).expect(text);
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(round_trip(joined.root()), expected, "{text}");
            assert_eq!(round_trip(Tape::parse(text).unwrap().root()), expected);
            // Tokens are never joined to a text they were not cut for.
            assert!(Tape::with_tokens(&format!(" {text}"), &tokens).is_none());
            assert!(Tape::with_tokens(&text[..text.len() - 1], &tokens).is_none());
        }
    }

    #[test]
    fn refuses_what_is_not_json() {
        for text in [
            "",
            "{",
            "[1,]",
            "{\"a\" 1}",
            "01",
            "1.",
            "-",
            "tru",
            "\"a",
            "[1] 2",
            "{1: 2}",
            "\"\u{1}\"",
        ] {
            assert!(Tape::parse(text).is_err(), "{text:?}");
        }
        let deep = |n: usize| "[".repeat(n) + &"]".repeat(n);
        assert!(Tape::parse(&deep(MAX_DEPTH)).is_ok());
        assert!(Tape::parse(&deep(MAX_DEPTH + 1)).is_err());
        // serde_json agrees on both sides of the limit.
        assert!(serde_json::from_str::<Value>(&deep(MAX_DEPTH)).is_ok());
        assert!(serde_json::from_str::<Value>(&deep(MAX_DEPTH + 1)).is_err());
        for out_of_range in ["1e400", "-1e400", &format!("1{}", "0".repeat(400))] {
            assert!(Tape::parse(out_of_range).is_err(), "{out_of_range}");
            assert!(serde_json::from_str::<Value>(out_of_range).is_err());
        }
        assert!(Tape::parse(r#""\ud800""#).is_err(), "a lone surrogate");
    }

    #[test]
    fn repeated_member_names_are_sent_to_be_normalized() {
        for text in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": {"b": 1, "b": 1}}"#,
            r#"[{"x": 1, "\u0078": 2}]"#,
        ] {
            assert_eq!(
                Tape::parse(text).err(),
                Some(TapeError::RepeatedNames),
                "{text}"
            );
        }
        let many: Vec<String> = (0..40).map(|i| format!("\"k{i}\": {i}")).collect();
        let many = format!("{{{}}}", many.join(","));
        assert_eq!(Tape::parse(&many).err(), Some(TapeError::RepeatedNames));
        // The same names in different objects are not repeats.
        assert!(Tape::parse(r#"{"a": {"a": 1}, "b": {"a": 2}}"#).is_ok());
    }

    #[test]
    fn validates_like_serde_json() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "id": { "type": "string", "pattern": "^t[0-9]+$" },
                "n": { "type": "integer", "maximum": 10 },
                "tags": { "type": "array", "items": { "enum": ["a", "b"] }, "uniqueItems": true }
            },
            "required": ["id"],
            "additionalProperties": false
        });
        let tape_validator = jsonschema::options_for::<TapeJson>()
            .build(&schema)
            .unwrap();
        let serde_validator = jsonschema::validator_for(&schema).unwrap();
        for text in [
            r#"{"id": "t1", "n": 3, "tags": ["a"]}"#,
            r#"{"id": "t1", "n": 3.0}"#,
            r#"{"id": "x1"}"#,
            r#"{"id": "t1", "n": 11}"#,
            r#"{"id": "t1", "n": 2.5}"#,
            r#"{"id": "t1", "tags": ["a", "a"]}"#,
            r#"{"id": "t1", "tags": ["c"]}"#,
            r#"{"id": "t1", "extra": 1}"#,
            r#"{"n": 1}"#,
            r#"{"i\u0064": "t2"}"#,
            r#"[]"#,
        ] {
            let tape = Tape::parse_normalized(text).unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                tape_validator.is_valid(tape.root()),
                serde_validator.is_valid(&value),
                "{text}"
            );
            let paths = |errors: Vec<String>| errors;
            let tape_errors: Vec<String> = tape_validator
                .iter_errors(tape.root())
                .map(|e| format!("{}: {e}", e.instance_path().as_str()))
                .collect();
            let serde_errors: Vec<String> = serde_validator
                .iter_errors(&value)
                .map(|e| format!("{}: {e}", e.instance_path().as_str()))
                .collect();
            assert_eq!(paths(tape_errors), serde_errors, "{text}");
        }
    }
}
