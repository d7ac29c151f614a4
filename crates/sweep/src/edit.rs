//! How a point's parameter values get into its scenario: `${name}`
//! placeholders substituted in the base scenario's text, then values
//! written by key path (`thread[0].program[0].periodic.run`) into the
//! parsed document with toml_edit, so that how the base file is laid out
//! (inline tables, `[[thread.program]]`, comments) does not matter.

use crate::value::Value;
use std::fmt;
use toml_edit::{DocumentMut, Item, TableLike};

/// One step of a key path: a key, then any number of `[index]`es.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub key: String,
    pub indexes: Vec<usize>,
}

/// A key path as docs/scenario.md writes them: `scheduler[1].at.prio`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPath {
    pub steps: Vec<Step>,
}

impl KeyPath {
    pub fn parse(text: &str) -> Result<KeyPath, String> {
        let bad = |why: &str| {
            format!("key path `{text}`: {why} (e.g. thread[0].program[0].periodic.run)")
        };
        if text.trim().is_empty() {
            return Err(bad("empty"));
        }
        let mut steps = Vec::new();
        for part in text.split('.') {
            let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
            let key = key.trim();
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
            {
                return Err(bad(&format!("`{part}` is not a key")));
            }
            let mut indexes = Vec::new();
            while !rest.is_empty() {
                let close = rest
                    .find(']')
                    .filter(|_| rest.starts_with('['))
                    .ok_or_else(|| bad(&format!("`{part}`: expected `[index]`")))?;
                let index = rest[1..close]
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| bad(&format!("`{}` is not an index", &rest[1..close])))?;
                indexes.push(index);
                rest = &rest[close + 1..];
            }
            steps.push(Step {
                key: key.to_string(),
                indexes,
            });
        }
        Ok(KeyPath { steps })
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.steps.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            f.write_str(&s.key)?;
            for ix in &s.indexes {
                write!(f, "[{ix}]")?;
            }
        }
        Ok(())
    }
}

/// Where the walk down a document is.
enum Place<'a> {
    Item(&'a mut Item),
    Value(&'a mut toml_edit::Value),
    /// A table of an array of tables (`[[thread]]`).
    Table(&'a mut toml_edit::Table),
}

impl<'a> Place<'a> {
    fn into_table(self) -> Option<&'a mut dyn TableLike> {
        match self {
            Place::Item(i) => i.as_table_like_mut(),
            Place::Value(v) => v.as_inline_table_mut().map(|t| t as &mut dyn TableLike),
            Place::Table(t) => Some(t),
        }
    }
}

/// Writes `value` at `path` in `doc`. Every step but the last must exist;
/// the last key is created if its table lacks it (e.g. a `deadline` the
/// base scenario left to its default).
pub fn set(doc: &mut DocumentMut, path: &KeyPath, value: &Value) -> Result<(), String> {
    let mut place = Place::Item(doc.as_item_mut());
    let mut walked = String::new();
    let last = path.steps.len() - 1;
    for (n, step) in path.steps.iter().enumerate() {
        let here = if walked.is_empty() {
            "the top level".to_string()
        } else {
            format!("`{walked}`")
        };
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(&step.key);
        let Some(table) = place.into_table() else {
            return Err(format!("key path `{path}`: {here} is not a table"));
        };
        if n == last && step.indexes.is_empty() {
            return match table.get_mut(&step.key) {
                Some(existing) if existing.is_value() || existing.is_none() => {
                    *existing = Item::Value(value.to_toml());
                    Ok(())
                }
                Some(_) => Err(format!(
                    "key path `{path}`: `{walked}` is a table, not a value"
                )),
                None => {
                    table.insert(&step.key, Item::Value(value.to_toml()));
                    Ok(())
                }
            };
        }
        let Some(child) = table.get_mut(&step.key) else {
            return Err(format!("key path `{path}`: no key `{walked}`"));
        };
        place = Place::Item(child);
        for (k, &ix) in step.indexes.iter().enumerate() {
            let is_last = n == last && k == step.indexes.len() - 1;
            let missing =
                |len: usize| format!("key path `{path}`: `{walked}` has {len} entries, no [{ix}]");
            place = match place {
                Place::Item(Item::ArrayOfTables(a)) => {
                    let len = a.len();
                    let t = a.get_mut(ix).ok_or_else(|| missing(len))?;
                    if is_last {
                        return Err(format!(
                            "key path `{path}`: `{walked}[{ix}]` is a table; name a key in it"
                        ));
                    }
                    Place::Table(t)
                }
                Place::Item(Item::Value(v)) | Place::Value(v) => {
                    let Some(arr) = v.as_array_mut() else {
                        return Err(format!("key path `{path}`: `{walked}` is not an array"));
                    };
                    let len = arr.len();
                    if ix >= len {
                        return Err(missing(len));
                    }
                    if is_last {
                        arr.replace(ix, value.to_toml());
                        return Ok(());
                    }
                    Place::Value(arr.get_mut(ix).expect("checked"))
                }
                _ => return Err(format!("key path `{path}`: `{walked}` is not an array")),
            };
            walked.push_str(&format!("[{ix}]"));
        }
    }
    Ok(())
}

/// Every `${name}` in `text`: (byte offset, name).
pub fn placeholders(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(start) = text[from..].find("${").map(|i| from + i) {
        match text[start + 2..].find('}') {
            Some(end) => {
                out.push((start, text[start + 2..start + 2 + end].trim().to_string()));
                from = start + 3 + end;
            }
            None => {
                out.push((start, text[start + 2..].trim().to_string()));
                break;
            }
        }
    }
    out
}

/// `text` with every `${name}` replaced by the value of parameter `name`
/// as written in the CSV (`names[i]` takes `values[i]`).
pub fn substitute(text: &str, names: &[&str], values: &[Value]) -> Result<String, String> {
    if !text.contains("${") {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| "a `${` without its closing `}`".to_string())?;
        let name = after[..end].trim();
        let i = names
            .iter()
            .position(|&p| p == name)
            .ok_or_else(|| format!("`${{{name}}}` names no parameter"))?;
        out.push_str(&values[i].to_string());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
