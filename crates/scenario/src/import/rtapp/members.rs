//! Reading the rt-app document's members with the place of each problem:
//! typed getters that fail with a line, column and key path ([`Fail`]), and
//! the warnings and deferred refusals collected on the way ([`Cx`]).

use super::json_like::{Kind, Member, Pos, Value};
use crate::import::{ImportError, Warning};

/// An error before it knows the file name.
pub(super) struct Fail {
    pub pos: Option<Pos>,
    pub path: String,
    pub message: String,
}

impl Fail {
    pub(super) fn at(pos: Pos, path: &str, message: impl Into<String>) -> Fail {
        Fail {
            pos: Some(pos),
            path: path.to_string(),
            message: message.into(),
        }
    }

    pub(super) fn into_error(self, file: &str) -> ImportError {
        let (line, column) = self.pos.map(|p| (p.line, p.column)).unwrap_or((0, 0));
        ImportError {
            file: file.to_string(),
            line,
            column,
            path: self.path,
            message: self.message,
        }
    }
}

/// Collects the warnings.
#[derive(Default)]
pub(super) struct Cx {
    pub warnings: Vec<Warning>,
    pub out_of_range: Option<Fail>,
}

impl Cx {
    /// Refuses the file (after the pass that found it) for a value hsched
    /// cannot represent; the first one found is reported.
    pub(super) fn out_of_range(&mut self, pos: Pos, path: &str, message: impl Into<String>) {
        self.out_of_range
            .get_or_insert_with(|| Fail::at(pos, path, message));
    }

    pub(super) fn warn(&mut self, pos: Pos, path: &str, message: impl Into<String>) {
        self.warnings.push(Warning {
            path: path.to_string(),
            line: pos.line,
            column: pos.column,
            message: message.into(),
        });
    }
}

pub(super) fn get<'a>(members: &'a [Member], key: &str) -> Option<&'a Member> {
    members.iter().rev().find(|m| m.key == key)
}

pub(super) fn object<'a>(v: &'a Value, path: &str, what: &str) -> Result<&'a [Member], Fail> {
    match &v.kind {
        Kind::Object(m) => Ok(m),
        k => Err(Fail::at(
            v.pos,
            path,
            format!("expected {what} (an object), found {}", k.describe()),
        )),
    }
}

pub(super) fn value<'a>(m: &'a Member, path: &str, what: &str) -> Result<&'a Value, Fail> {
    m.value
        .as_ref()
        .ok_or_else(|| Fail::at(m.key_pos, path, format!("expected `:` and {what}")))
}

pub(super) fn int(m: &Member, path: &str, what: &str) -> Result<(i64, Pos), Fail> {
    let v = value(m, path, what)?;
    match &v.kind {
        Kind::Int(i) => Ok((*i, v.pos)),
        k => Err(Fail::at(
            v.pos,
            path,
            format!("expected {what}, found {}", k.describe()),
        )),
    }
}

pub(super) fn string(m: &Member, path: &str, what: &str) -> Result<(String, Pos), Fail> {
    let v = value(m, path, what)?;
    match &v.kind {
        Kind::Str(s) => Ok((s.clone(), v.pos)),
        k => Err(Fail::at(
            v.pos,
            path,
            format!("expected {what}, found {}", k.describe()),
        )),
    }
}

/// Warns about a key given more than once where only the last counts.
pub(super) fn warn_duplicates(members: &[Member], path: &str, keys: &[&str], cx: &mut Cx) {
    for key in keys {
        let all: Vec<&Member> = members.iter().filter(|m| m.key == *key).collect();
        if all.len() > 1 {
            let first = all[0];
            cx.warn(
                first.key_pos,
                &format!("{path}.{key}"),
                format!(
                    "given {} times: the last one counts (as in rt-app)",
                    all.len()
                ),
            );
        }
    }
}
