//! Naming the differences between two runs: the keys whose values differ, for the refusal
//! message when two members' runs disagree (module doc of [`super`], "Identity of a run").

use std::collections::BTreeMap;

use super::Run;

impl Run {
    /// The dotted keys whose values differ between `self` and `other` (`algorithm.gamma`,
    /// `members[1].peer-id`, `topology.edges[3]`), sorted; empty when the runs are the same.
    pub fn diff(&self, other: &Run) -> Vec<String> {
        let a = toml::Value::try_from(&self.file).ok();
        let b = toml::Value::try_from(&other.file).ok();
        let mut out = Vec::new();
        diff_values("", a.as_ref(), b.as_ref(), &mut out);
        out.sort();
        out
    }

    /// The differences between this run and another member's, given as the text of its canonical
    /// form (what [`crate::codec::Hello`] carries): each key with both values. The text need not
    /// be a valid run (a member with another version, or a broken file): any TOML is compared
    /// key by key. When it is not TOML at all, or no key differs although the hashes do, the one
    /// [`Difference`] says so with this run's values unknown to the other side.
    pub fn diff_text(&self, theirs: &str) -> Vec<Difference> {
        let ours = toml::Value::try_from(&self.file).ok();
        let parsed: Result<toml::Value, _> = toml::from_str(theirs);
        let theirs = match parsed {
            Ok(v) => v,
            Err(e) => {
                return vec![Difference {
                    key: "(the whole file)".into(),
                    ours: Some(format!("run hash {}", self.hash())),
                    theirs: Some(format!("not TOML ({})", e.message())),
                }];
            }
        };
        let mut keys = Vec::new();
        diff_values("", ours.as_ref(), Some(&theirs), &mut keys);
        keys.sort();
        if keys.is_empty() {
            return vec![Difference {
                key: "(the canonical form)".into(),
                ours: Some(format!("run hash {}", self.hash())),
                theirs: Some("another hash for the same values (another dpwalk version?)".into()),
            }];
        }
        keys.into_iter()
            .map(|key| Difference {
                ours: ours.as_ref().and_then(|v| lookup(v, &key)).map(short),
                theirs: lookup(&theirs, &key).map(short),
                key,
            })
            .collect()
    }
}

/// One key on which two members' run files differ, with both values (`None`: absent there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The dotted key (`algorithm.sigma`, `members[2].peer-id`).
    pub key: String,
    /// This node's value.
    pub ours: Option<String>,
    /// The other member's value.
    pub theirs: Option<String>,
}

impl Difference {
    /// `key: <ours> here, <theirs> in <whose>'s` (`<absent>` for a missing key).
    pub fn describe(&self, whose: &str) -> String {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "absent".into());
        format!(
            "{}: {} here, {} in {whose}",
            self.key,
            show(&self.ours),
            show(&self.theirs)
        )
    }

    /// The same difference seen from the other member.
    pub fn swapped(&self) -> Difference {
        Difference {
            key: self.key.clone(),
            ours: self.theirs.clone(),
            theirs: self.ours.clone(),
        }
    }
}

/// The value at a dotted key as [`diff_values`] names them (`a.b`, `members[2].peer-id`).
fn lookup<'v>(root: &'v toml::Value, key: &str) -> Option<&'v toml::Value> {
    let mut v = root;
    for part in key.split('.') {
        let (name, indices) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            v = v.get(name)?;
        }
        for index in indices.split(['[', ']']).filter(|s| !s.is_empty()) {
            v = v.get(index.parse::<usize>().ok()?)?;
        }
    }
    Some(v)
}

/// A value as a user reads it, cut to 80 characters.
fn short(v: &toml::Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(79).collect::<String>())
    } else {
        text
    }
}

/// Appends to `out` the paths under `prefix` where `a` and `b` differ.
fn diff_values(
    prefix: &str,
    a: Option<&toml::Value>,
    b: Option<&toml::Value>,
    out: &mut Vec<String>,
) {
    let join = |key: &str| {
        if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        }
    };
    match (a, b) {
        (Some(toml::Value::Table(x)), Some(toml::Value::Table(y))) => {
            let keys: BTreeMap<&String, ()> = x.keys().chain(y.keys()).map(|k| (k, ())).collect();
            for key in keys.keys() {
                diff_values(&join(key), x.get(*key), y.get(*key), out);
            }
        }
        (Some(toml::Value::Array(x)), Some(toml::Value::Array(y))) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                diff_values(&format!("{prefix}[{i}]"), Some(u), Some(v), out);
            }
        }
        (Some(x), Some(y)) if x == y => {}
        (None, None) => {}
        _ => out.push(prefix.to_string()),
    }
}
