//! The json-like text rt-app and its `workgen` accept, read into a tree that
//! keeps what serde_json cannot: every member of an object in file order,
//! duplicate keys included (`"run" : 10, "sleep" : 5, "run" : 10`), and the
//! line and column of every key and value.
//!
//! Beyond JSON it accepts `/* */` and `//` comments, trailing commas in
//! objects and arrays, and a member without a value (`"suspend",`, which
//! workgen fills in). Anything else is an error naming the line and column
//! and what was expected there. Nesting is limited (no stack overflow on
//! hostile input), and no input makes it panic.

use std::fmt;

/// How deep objects and arrays may nest; rt-app files use four or five levels.
const MAX_DEPTH: usize = 64;

/// A place in the text: 1-based line and column (in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A value and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub pos: Pos,
    pub kind: Kind,
}

/// What a value is.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Null,
    Bool(bool),
    /// An integer that fits in 64 bits.
    Int(i64),
    /// A number with a fraction or an exponent, or an integer too large for
    /// 64 bits, as written.
    Number(String),
    Str(String),
    Array(Vec<Value>),
    Object(Vec<Member>),
}

/// One `key : value` of an object; `value` is `None` for a bare key.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub key: String,
    pub key_pos: Pos,
    pub value: Option<Value>,
}

impl Kind {
    /// What the value is, for messages ("an object", "the string `x`").
    pub fn describe(&self) -> String {
        match self {
            Kind::Null => "null".into(),
            Kind::Bool(b) => format!("`{b}`"),
            Kind::Int(i) => format!("the integer {i}"),
            Kind::Number(n) => format!("the number {n}"),
            Kind::Str(s) => format!("the string \"{s}\""),
            Kind::Array(_) => "an array".into(),
            Kind::Object(_) => "an object".into(),
        }
    }
}

/// A syntax error: where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub pos: Pos,
    pub message: String,
}

/// Parses a whole document: one value, then only whitespace and comments.
pub fn parse(text: &str) -> Result<Value, SyntaxError> {
    let mut p = Parser {
        chars: text.chars().collect(),
        at: 0,
        line: 1,
        column: 1,
    };
    p.skip_blank()?;
    let value = p.value(0)?;
    p.skip_blank()?;
    if let Some(c) = p.peek() {
        return Err(p.error(format!(
            "expected the end of the file after the top-level value, found {}",
            show(c)
        )));
    }
    Ok(value)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    line: usize,
    column: usize,
}

fn show(c: char) -> String {
    match c {
        '\n' => "a line break".into(),
        c if c.is_control() => format!("the character U+{:04X}", c as u32),
        c => format!("`{c}`"),
    }
}

impl Parser {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.column,
        }
    }

    fn error(&self, message: String) -> SyntaxError {
        SyntaxError {
            pos: self.pos(),
            message,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(c) => show(c),
            None => "the end of the file".into(),
        }
    }

    /// Skips whitespace and comments.
    fn skip_blank(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() || c == '\u{feff}' => {
                    self.bump();
                }
                Some('/') => {
                    let start = self.pos();
                    match self.chars.get(self.at + 1) {
                        Some('/') => {
                            while !matches!(self.peek(), None | Some('\n')) {
                                self.bump();
                            }
                        }
                        Some('*') => {
                            self.bump();
                            self.bump();
                            loop {
                                match self.bump() {
                                    Some('*') if self.peek() == Some('/') => {
                                        self.bump();
                                        break;
                                    }
                                    Some(_) => {}
                                    None => {
                                        return Err(SyntaxError {
                                            pos: start,
                                            message: "comment `/*` is never closed: expected `*/`"
                                                .into(),
                                        })
                                    }
                                }
                            }
                        }
                        _ => return Err(self.error(
                            "expected a value, found `/` (comments are `/* ... */` or `// ...`)"
                                .into(),
                        )),
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        let pos = self.pos();
        let kind = match self.peek() {
            Some('{') => self.object(depth)?,
            Some('[') => self.array(depth)?,
            Some('"') => Kind::Str(self.string()?),
            Some(c) if c == '-' || c.is_ascii_digit() => self.number()?,
            Some(c) if c.is_ascii_alphabetic() => {
                let word = self.word();
                match word.as_str() {
                    "true" => Kind::Bool(true),
                    "false" => Kind::Bool(false),
                    "null" => Kind::Null,
                    _ => {
                        return Err(SyntaxError {
                            pos,
                            message: format!(
                                "expected a value (object, array, string, number, true, false or null), found `{word}` (strings need double quotes)"
                            ),
                        })
                    }
                }
            }
            _ => {
                return Err(self.error(format!(
                "expected a value (object, array, string, number, true, false or null), found {}",
                self.found()
            )))
            }
        };
        Ok(Value { pos, kind })
    }

    fn word(&mut self) -> String {
        let mut w = String::new();
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                w.push(c);
                self.bump();
            } else {
                break;
            }
        }
        w
    }

    fn enter(&self, depth: usize) -> Result<usize, SyntaxError> {
        if depth >= MAX_DEPTH {
            return Err(self.error(format!(
                "objects and arrays nest more than {MAX_DEPTH} deep"
            )));
        }
        Ok(depth + 1)
    }

    fn object(&mut self, depth: usize) -> Result<Kind, SyntaxError> {
        let depth = self.enter(depth)?;
        let open = self.pos();
        self.bump(); // `{`
        let mut members = Vec::new();
        loop {
            self.skip_blank()?;
            match self.peek() {
                Some('}') => {
                    self.bump();
                    return Ok(Kind::Object(members));
                }
                Some('"') => {}
                None => {
                    return Err(self.error(format!(
                    "expected `}}` to close the object opened at {open}, found the end of the file"
                )))
                }
                Some(_) => {
                    return Err(self.error(format!(
                        "expected a key in double quotes or `}}`, found {}",
                        self.found()
                    )))
                }
            }
            let key_pos = self.pos();
            let key = self.string()?;
            self.skip_blank()?;
            let value = match self.peek() {
                Some(':') => {
                    self.bump();
                    self.skip_blank()?;
                    Some(self.value(depth)?)
                }
                // A bare key: `"suspend",` (workgen's shorthand).
                Some(',') | Some('}') => None,
                _ => {
                    return Err(self.error(format!(
                        "expected `:` after the key \"{key}\", found {}",
                        self.found()
                    )))
                }
            };
            members.push(Member {
                key,
                key_pos,
                value,
            });
            self.skip_blank()?;
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some('}') => {}
                _ => {
                    return Err(self.error(format!(
                        "expected `,` or `}}` after the member \"{}\" of the object opened at {open}, found {}",
                        members.last().map(|m| m.key.as_str()).unwrap_or(""),
                        self.found()
                    )))
                }
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Kind, SyntaxError> {
        let depth = self.enter(depth)?;
        let open = self.pos();
        self.bump(); // `[`
        let mut items = Vec::new();
        loop {
            self.skip_blank()?;
            match self.peek() {
                Some(']') => {
                    self.bump();
                    return Ok(Kind::Array(items));
                }
                None => {
                    return Err(self.error(format!(
                    "expected `]` to close the array opened at {open}, found the end of the file"
                )))
                }
                _ => {}
            }
            items.push(self.value(depth)?);
            self.skip_blank()?;
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some(']') => {}
                _ => {
                    return Err(self.error(format!(
                        "expected `,` or `]` in the array opened at {open}, found {}",
                        self.found()
                    )))
                }
            }
        }
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        let open = self.pos();
        self.bump(); // `"`
        let mut s = String::new();
        loop {
            let here = self.pos();
            match self.bump() {
                Some('"') => return Ok(s),
                Some('\\') => {
                    let c = self.bump();
                    match c {
                        Some('"') => s.push('"'),
                        Some('\\') => s.push('\\'),
                        Some('/') => s.push('/'),
                        Some('b') => s.push('\u{8}'),
                        Some('f') => s.push('\u{c}'),
                        Some('n') => s.push('\n'),
                        Some('r') => s.push('\r'),
                        Some('t') => s.push('\t'),
                        Some('u') => s.push(self.unicode_escape(here)?),
                        _ => {
                            return Err(SyntaxError {
                                pos: here,
                                message: format!(
                                    "expected an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX) after `\\`, found {}",
                                    c.map(show).unwrap_or_else(|| "the end of the file".into())
                                ),
                            })
                        }
                    }
                }
                Some('\n') => {
                    return Err(SyntaxError {
                        pos: here,
                        message: format!(
                        "the string opened at {open} runs into the end of the line: expected `\"`"
                    ),
                    })
                }
                Some(c) => s.push(c),
                None => {
                    return Err(SyntaxError {
                        pos: open,
                        message: "this string is never closed: expected `\"`".into(),
                    })
                }
            }
        }
    }

    fn hex4(&mut self, at: Pos) -> Result<u32, SyntaxError> {
        let mut v = 0u32;
        for _ in 0..4 {
            match self.peek().and_then(|c| c.to_digit(16)) {
                Some(d) => {
                    v = v * 16 + d;
                    self.bump();
                }
                None => {
                    return Err(SyntaxError {
                        pos: at,
                        message: format!(
                            "expected four hex digits after `\\u`, found {}",
                            self.found()
                        ),
                    })
                }
            }
        }
        Ok(v)
    }

    fn unicode_escape(&mut self, at: Pos) -> Result<char, SyntaxError> {
        let hi = self.hex4(at)?;
        let code = if (0xD800..0xDC00).contains(&hi) {
            // A surrogate pair: `\uD83D\uDE00`.
            if self.peek() == Some('\\') && self.chars.get(self.at + 1) == Some(&'u') {
                self.bump();
                self.bump();
                let lo = self.hex4(at)?;
                if !(0xDC00..0xE000).contains(&lo) {
                    return Err(SyntaxError {
                        pos: at,
                        message: "expected a low surrogate `\\uDC00`..`\\uDFFF` after a high one"
                            .into(),
                    });
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            } else {
                return Err(SyntaxError {
                    pos: at,
                    message: "expected a low surrogate `\\uDC00`..`\\uDFFF` after a high one"
                        .into(),
                });
            }
        } else {
            hi
        };
        char::from_u32(code).ok_or_else(|| SyntaxError {
            pos: at,
            message: format!("`\\u{code:04X}` is not a character"),
        })
    }

    fn number(&mut self) -> Result<Kind, SyntaxError> {
        let start = self.pos();
        let mut text = String::new();
        if self.peek() == Some('-') {
            text.push('-');
            self.bump();
        }
        let digits = |p: &mut Parser, text: &mut String| {
            let mut n = 0;
            while let Some(c) = p.peek().filter(char::is_ascii_digit) {
                text.push(c);
                p.bump();
                n += 1;
            }
            n
        };
        if digits(self, &mut text) == 0 {
            return Err(self.error(format!(
                "expected a digit after `-`, found {}",
                self.found()
            )));
        }
        let mut fraction = false;
        if self.peek() == Some('.') {
            fraction = true;
            text.push('.');
            self.bump();
            if digits(self, &mut text) == 0 {
                return Err(self.error(format!(
                    "expected a digit after the decimal point, found {}",
                    self.found()
                )));
            }
        }
        if matches!(self.peek(), Some('e') | Some('E')) {
            fraction = true;
            text.push('e');
            self.bump();
            if let Some(sign @ ('+' | '-')) = self.peek() {
                text.push(sign);
                self.bump();
            }
            if digits(self, &mut text) == 0 {
                return Err(self.error(format!(
                    "expected a digit in the exponent, found {}",
                    self.found()
                )));
            }
        }
        if let Some(c) = self.peek().filter(|c| c.is_ascii_alphabetic() || *c == '_') {
            return Err(SyntaxError {
                pos: start,
                message: format!(
                    "expected a number, found `{text}{c}...` (rt-app durations are plain integers of microseconds)"
                ),
            });
        }
        if fraction {
            return Ok(Kind::Number(text));
        }
        Ok(match text.parse::<i64>() {
            Ok(i) => Kind::Int(i),
            Err(_) => Kind::Number(text),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &Value) -> Vec<&str> {
        match &v.kind {
            Kind::Object(m) => m.iter().map(|m| m.key.as_str()).collect(),
            _ => vec![],
        }
    }

    #[test]
    fn duplicate_keys_stay_in_order_with_positions() {
        let v = parse("{\n \"run\": 1,\n \"sleep\": 2,\n \"run\": 3 }").unwrap();
        assert_eq!(keys(&v), ["run", "sleep", "run"]);
        let Kind::Object(m) = &v.kind else { panic!() };
        assert_eq!(m[2].key_pos, Pos { line: 4, column: 2 });
        assert_eq!(m[2].value.as_ref().unwrap().kind, Kind::Int(3));
        assert_eq!(m[2].value.as_ref().unwrap().pos, Pos { line: 4, column: 9 });
    }

    #[test]
    fn comments_trailing_commas_and_bare_keys() {
        let v = parse("// head\n{ /* a */ \"a\" : [1, 2,], \"suspend\", \"b\": {\"c\": null,}, }")
            .unwrap();
        assert_eq!(keys(&v), ["a", "suspend", "b"]);
        let Kind::Object(m) = &v.kind else { panic!() };
        assert!(m[1].value.is_none());
    }

    #[test]
    fn numbers_and_strings() {
        let v = parse(r#"[-5, 1.5, 1e3, 99999999999999999999, "a\"\u00e9\ud83d\ude00"]"#).unwrap();
        let Kind::Array(items) = v.kind else { panic!() };
        assert_eq!(items[0].kind, Kind::Int(-5));
        assert_eq!(items[1].kind, Kind::Number("1.5".into()));
        assert_eq!(items[2].kind, Kind::Number("1e3".into()));
        assert_eq!(items[3].kind, Kind::Number("99999999999999999999".into()));
        assert_eq!(items[4].kind, Kind::Str("a\"é😀".into()));
    }

    fn err(text: &str) -> (usize, usize, String) {
        let e = parse(text).unwrap_err();
        (e.pos.line, e.pos.column, e.message)
    }

    #[test]
    fn errors_name_line_column_and_what_was_expected() {
        let (l, c, m) = err("{\n  \"a\" 1\n}");
        assert_eq!((l, c), (2, 7));
        assert!(m.contains("expected `:` after the key \"a\""), "{m}");

        let (l, c, m) = err("{ \"a\": 1\n  \"b\": 2 }");
        assert_eq!((l, c), (2, 3));
        assert!(m.contains("expected `,` or `}`"), "{m}");

        let (l, c, m) = err("{ \"a\": [1, 2 }");
        assert_eq!((l, c), (1, 14));
        assert!(m.contains("expected `,` or `]`"), "{m}");

        let (l, c, m) = err("{ a: 1 }");
        assert_eq!((l, c), (1, 3));
        assert!(m.contains("expected a key in double quotes"), "{m}");

        let (l, c, m) = err("{ \"a\": 10ms }");
        assert_eq!((l, c), (1, 8));
        assert!(m.contains("microseconds"), "{m}");

        let (l, c, m) = err("{ \"a\": 1 /* open");
        assert_eq!((l, c), (1, 10));
        assert!(m.contains("never closed"), "{m}");

        let (_, _, m) = err("{ \"a\": 1 ");
        assert!(
            m.contains("of the object opened at 1:1, found the end of the file"),
            "{m}"
        );
        let (_, _, m) = err("{ \"a\": 1, ");
        assert!(m.contains("to close the object opened at 1:1"), "{m}");

        let (l, c, m) = err("{} {}");
        assert_eq!((l, c), (1, 4));
        assert!(m.contains("expected the end of the file"), "{m}");

        let (_, _, m) = err(&"[".repeat(1000));
        assert!(m.contains("nest more than"), "{m}");

        let (_, _, m) = err("{ \"a\": tru }");
        assert!(m.contains("found `tru`"), "{m}");
    }
}
