//! Where in a TOML text a key or a deserialization error is: the 1-based line and the dotted
//! key path, for the located errors of every TOML file of dpwalk (topology files, scenario
//! files, run files, node configs).

use toml::de::{DeTable, DeValue};

/// 1-based line of byte `offset` of `text`.
pub fn line_of_offset(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    1 + text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The 1-based line and, when it can be told, the dotted key of a TOML deserialization error.
/// A missing field is named by the message; otherwise the key is the entry whose key or value
/// contains the error's position (`topology.nodes` inside a `[topology]` table); a duplicate key,
/// which stops the parse before any entry exists, is the text under the error's span. Shared by
/// every TOML file of dpwalk.
pub fn toml_error_location(text: &str, error: &toml::de::Error) -> (usize, Option<String>) {
    let Some(span) = error.span() else {
        return (1, None);
    };
    let line = line_of_offset(text, span.start);
    let quoted = |prefix: &str| {
        let rest = error.message().strip_prefix(prefix)?;
        rest.split('`').next().map(str::to_string)
    };
    let key = quoted("missing field `")
        .or_else(|| {
            let table = DeTable::parse(text).ok()?;
            key_path_at(table.get_ref(), span.start).map(|path| path.join("."))
        })
        .or_else(|| quoted("unknown field `"))
        .or_else(|| {
            let under = text.get(span)?.trim();
            (error.message() == "duplicate key" && !under.is_empty()).then(|| under.to_string())
        });
    (line, key)
}

/// The keys leading to the innermost entry containing `offset`: an entry contains it when its
/// key or its value does; a `[table]`'s value span does not cover its body, so tables are
/// searched even when they do not contain `offset` themselves.
fn key_path_at(table: &DeTable<'_>, offset: usize) -> Option<Vec<String>> {
    for (key, value) in table.iter() {
        let inner = match value.get_ref() {
            DeValue::Table(inner) => key_path_at(inner, offset),
            _ => None,
        };
        let here = key.span().contains(&offset) || value.span().contains(&offset);
        if inner.is_some() || here {
            let mut path = vec![key.get_ref().to_string()];
            path.extend(inner.unwrap_or_default());
            return Some(path);
        }
    }
    None
}

/// The 1-based line where the key at `path` (e.g. `["topology", "degree"]`) is written, if the
/// text parses and has it.
pub fn key_line(text: &str, path: &[&str]) -> Option<usize> {
    let table = DeTable::parse(text).ok()?;
    let mut current = table.get_ref();
    let (last, parents) = path.split_last()?;
    for part in parents {
        match current.get(*part)?.get_ref() {
            DeValue::Table(inner) => current = inner,
            _ => return None,
        }
    }
    let (key, _) = current.get_key_value(*last)?;
    Some(line_of_offset(text, key.span().start))
}
