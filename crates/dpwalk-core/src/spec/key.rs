//! [`SpecError`]: a key path and a reason, and the line of the key in a TOML text.

use crate::toml_location::{key_line, line_of_offset};
use thiserror::Error;
use toml::de::{DeTable, DeValue};

/// A value of a spec refused: the key path (`["members", "2", "peer-id"]`; numeric parts index
/// arrays of tables) and what is wrong. Shown as `` `members[2].peer-id`: reason ``.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("`{}`: {message}", self.key())]
pub struct SpecError {
    path: Vec<String>,
    message: String,
}

impl SpecError {
    /// The error at `path` (one part per key; array indices as numbers).
    pub fn new(path: &[&str], message: impl std::fmt::Display) -> Self {
        Self {
            path: path.iter().map(|s| s.to_string()).collect(),
            message: message.to_string(),
        }
    }

    /// The same error under `prefix` (a section checked on its own, placed in its file).
    pub fn under(mut self, prefix: &[&str]) -> Self {
        let mut path: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
        path.append(&mut self.path);
        self.path = path;
        self
    }

    /// The key parts.
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// The dotted key as a user writes it: `members[2].peer-id`, `algorithm.lambda`.
    pub fn key(&self) -> String {
        let mut out = String::new();
        for part in &self.path {
            if part.parse::<usize>().is_ok() {
                out.push_str(&format!("[{part}]"));
            } else {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(part);
            }
        }
        out
    }

    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The 1-based line of the key in `text`, or of its deepest ancestor written there; `None`
    /// when the text does not parse or has none of them (a default, an override).
    pub fn line_in(&self, text: &str) -> Option<usize> {
        locate(text, &self.path)
    }
}

/// The 1-based line of the key at `path` (numeric parts index arrays), or of its deepest
/// existing ancestor.
fn locate(text: &str, path: &[String]) -> Option<usize> {
    if !path.iter().any(|p| p.parse::<usize>().is_ok()) {
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        return (1..=parts.len())
            .rev()
            .find_map(|len| key_line(text, &parts[..len]));
    }
    let table = DeTable::parse(text).ok()?;
    let mut current = table.get_ref();
    let mut line = None;
    let mut parts = path.iter().peekable();
    while let Some(part) = parts.next() {
        let (key, value) = current.get_key_value(part.as_str())?;
        line = Some(line_of_offset(text, key.span().start));
        match value.get_ref() {
            DeValue::Table(inner) => current = inner,
            DeValue::Array(items) => {
                let Some(i) = parts.next().and_then(|p| p.parse::<usize>().ok()) else {
                    return line;
                };
                let item = items.get(i)?;
                line = Some(line_of_offset(text, item.span().start));
                match item.get_ref() {
                    DeValue::Table(inner) => current = inner,
                    _ => return line,
                }
            }
            _ => return line,
        }
    }
    line
}
