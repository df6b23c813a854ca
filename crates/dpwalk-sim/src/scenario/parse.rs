//! Reading a scenario: the file's text, then the `--set key=value` overrides on the parsed
//! table (module doc of [`super`]), with errors that name the file and line or the override.

use super::{LoadedScenario, Scenario, ScenarioError};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Reads `path`, applies `sets` (`key.path=value`, value in TOML syntax or a bare string), and
/// checks the result.
pub fn load(path: &Path, sets: &[String]) -> Result<LoadedScenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    from_text(&text, path, base_dir, stem, sets)
}

/// A scenario from its text (see [`load`]), e.g. a Python dict written as TOML: `origin` names
/// it in errors, relative data and topology paths are read from `base_dir`, and its name is the
/// text's `name`, else `default_name`, else `scenario`.
pub fn from_text(
    text: &str,
    origin: &Path,
    base_dir: PathBuf,
    default_name: Option<String>,
    sets: &[String],
) -> Result<LoadedScenario, ScenarioError> {
    let scenario = parse(text, origin, sets)?;
    let name = scenario
        .name
        .clone()
        .or(default_name)
        .unwrap_or_else(|| "scenario".into());
    LoadedScenario::new(scenario, base_dir, name)
}

/// Parses scenario text (see [`load`]); `path` only names the origin in errors.
pub fn parse(text: &str, path: &Path, sets: &[String]) -> Result<Scenario, ScenarioError> {
    let parse_err = |e: toml::de::Error| ScenarioError::Parse {
        path: path.to_path_buf(),
        message: describe(text, &e),
    };
    let scenario: Scenario = toml::from_str(text).map_err(|e| match other_kind(text) {
        Some(what) => ScenarioError::Parse {
            path: path.to_path_buf(),
            message: format!(
                "this is {what}, not a scenario: a scenario describes a whole simulated swarm (`users`, `steps`, `[data]`, `[problem]`; see sim/quickstart.toml)"
            ),
        },
        None => parse_err(e),
    })?;
    if sets.is_empty() {
        return Ok(scenario);
    }
    let mut table: toml::Table = toml::from_str(text).map_err(parse_err)?;
    for set in sets {
        apply_override(&mut table, set)?;
    }
    Scenario::deserialize(table).map_err(|e| ScenarioError::Override {
        set: sets.join(" --set "),
        message: e.to_string(),
    })
}

/// What a file that is not a scenario is, when it is one of dpwalk's other TOML files: a node's
/// configuration (`run`, `identity`, `state-dir`) or a run file (`run-id`, `[[members]]`).
fn other_kind(text: &str) -> Option<&'static str> {
    let table: toml::Table = toml::from_str(text).ok()?;
    let has = |key: &str| table.contains_key(key);
    if has("state-dir") || has("identity") && has("run") {
        Some("a node.toml (a member's configuration, for `dpwalk node --config`)")
    } else if has("run-id") && has("members") {
        Some(
            "a run file (run.toml, what every member of a real run agrees on: `dpwalk node`, `dpwalk runfile new`)",
        )
    } else {
        None
    }
}

/// `toml`'s message, made precise where it is not: inside sections that are tagged enums
/// (`[data]`, `[partition]`), `toml` can only point at the section header, so an unknown field is
/// located by finding its key among the section's lines.
fn describe(text: &str, e: &toml::de::Error) -> String {
    let message = e.message();
    let unknown = message
        .strip_prefix("unknown field `")
        .and_then(|r| r.split('`').next());
    if let (Some(span), Some(key)) = (e.span(), unknown) {
        let header_line = text[..span.start.min(text.len())].lines().count();
        for (i, line) in text.lines().enumerate().skip(header_line + 1) {
            let t = line.trim_start();
            if t.starts_with('[') {
                break;
            }
            let found = t
                .split_once('=')
                .is_some_and(|(k, _)| k.trim().trim_matches('"') == key);
            if found {
                return format!("line {}: {message}\n  {} | {line}", i + 1, i + 1);
            }
        }
    }
    e.to_string()
}

/// Applies one `a.b.c=value` override to a parsed table.
fn apply_override(table: &mut toml::Table, set: &str) -> Result<(), ScenarioError> {
    let bad = |message: &str| ScenarioError::Override {
        set: set.into(),
        message: message.into(),
    };
    let (key, raw) = set
        .split_once('=')
        .ok_or_else(|| bad("expected key=value"))?;
    let parts: Vec<&str> = key.trim().split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(bad("empty key segment"));
    }
    // A value in TOML syntax (number, bool, array, quoted string), else a bare string; a value
    // that opens as a string, array or table must be one (a typo is not a bare string).
    let raw = raw.trim();
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
    {
        Some(v) => v,
        None if raw.starts_with(['"', '\'', '[', '{']) => {
            return Err(bad(&format!(
                "`{raw}` opens as a TOML string, array or table but is not one"
            )));
        }
        None => toml::Value::String(raw.to_string()),
    };
    let (last, parents) = parts.split_last().ok_or_else(|| bad("empty key"))?;
    let mut cur = table;
    for p in parents {
        let entry = cur
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = entry
            .as_table_mut()
            .ok_or_else(|| bad(&format!("`{p}` is not a table")))?;
    }
    cur.insert(last.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_that_opens_as_a_toml_value_must_be_one() {
        let mut table = toml::Table::new();
        for typo in ["name=\"abc", "sweep.sigma=[1, 2", "data={a = 1", "name='x"] {
            let err = apply_override(&mut table, typo).unwrap_err();
            assert!(
                matches!(err, ScenarioError::Override { ref message, .. } if message.contains("opens as")),
                "{typo}: {err}"
            );
        }
        apply_override(&mut table, "name=\"run😀\"").unwrap();
        apply_override(&mut table, "algorithm.kind=admm").unwrap();
        apply_override(&mut table, "sweep.sigma=[0.5, 1]").unwrap();
        assert_eq!(table["name"].as_str(), Some("run😀"));
        assert_eq!(table["algorithm"]["kind"].as_str(), Some("admm"));
        assert_eq!(table["sweep"]["sigma"].as_array().map(Vec::len), Some(2));
    }
}
