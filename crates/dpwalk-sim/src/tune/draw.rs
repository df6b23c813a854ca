//! The draw of configurations: for every kind, `configs` distinct points of its grid (the
//! cartesian product of its keys' values and the horizons), uniformly without replacement,
//! from the tuning seed. Every kind gets the same number, or the draw is refused: equal effort
//! is the point of the section.

use super::TuneError;
use crate::algorithm::AlgorithmName;
use crate::scenario::{Scenario, TuneSpec};
use dpwalk_core::rng::{Purpose, derive_seed, node_rng};
use std::collections::BTreeMap;

/// One configuration of one kind: a horizon and a value for each of its grid's keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The algorithm.
    pub kind: AlgorithmName,
    /// Updates per user H.
    pub horizon: u64,
    /// `[algorithm]` keys set over the scenario's `[by-kind.<kind>]` table.
    pub keys: BTreeMap<String, toml::Value>,
}

impl Config {
    /// The keys as `key=value` pairs, `;`-separated (the CSV's and the log's form).
    pub fn describe(&self) -> String {
        self.keys
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// The configurations of every kind of `scenario`, `spec.configs` per kind, in the kinds'
/// order and, within a kind, in the grid's order. Without `[tune] horizon`, a kind's horizon
/// is the scenario's for that kind.
pub fn configs(scenario: &Scenario, spec: &TuneSpec) -> Result<Vec<Config>, TuneError> {
    let mut out = Vec::new();
    for kind in scenario.kinds() {
        let horizons = if spec.horizon.is_empty() {
            vec![scenario.rounds(scenario.steps_for(kind)?)]
        } else {
            spec.horizon.clone()
        };
        let empty = BTreeMap::new();
        let grid = spec.grid.get(&kind).unwrap_or(&empty);
        let keys: Vec<(&String, &Vec<toml::Value>)> = grid.iter().collect();
        let size = keys
            .iter()
            .map(|(_, values)| values.len())
            .try_fold(horizons.len(), usize::checked_mul)
            .ok_or(TuneError::GridTooLarge { kind })?;
        if size < spec.configs {
            return Err(TuneError::GridTooSmall {
                kind,
                size,
                configs: spec.configs,
            });
        }
        let mut rng = node_rng(derive_seed(spec.seed, Purpose::Tuning, 1 + kind as u64), 0);
        let mut drawn = rand::seq::index::sample(&mut rng, size, spec.configs).into_vec();
        drawn.sort_unstable();
        for index in drawn {
            // Mixed radix: the horizon is the slowest digit, the last key the fastest.
            let mut rest = index;
            let mut chosen = BTreeMap::new();
            for (key, values) in keys.iter().rev() {
                chosen.insert((*key).clone(), values[rest % values.len()].clone());
                rest /= values.len();
            }
            out.push(Config {
                kind,
                horizon: horizons[rest],
                keys: chosen,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    fn scenario(tune: &str) -> Scenario {
        let text = format!(
            r#"
users = 10
steps = 100
[data]
source = "synthetic-lasso"
rows = 20
dim = 3
[problem]
loss = "squared"
[algorithm]
clip = 1.0
[sweep]
kind = ["admm", "dp-sgd"]
{tune}
"#
        );
        crate::scenario::parse(&text, "t.toml".as_ref(), &[]).unwrap()
    }

    fn draw(tune: &str) -> Result<Vec<Config>, TuneError> {
        let s = scenario(tune);
        configs(&s, s.tune.as_ref().unwrap())
    }

    const GRID: &str = r#"
[tune]
configs = 5
horizon = [10, 30]
[tune.grid.admm]
gamma = [1.0, 2.0, 4.0]
clip = [0.1, 1.0]
[tune.grid.dp-sgd]
lr = [0.01, 0.1, 1.0]
"#;

    #[test]
    fn every_kind_gets_the_same_number_of_distinct_configurations_of_its_grid() {
        let all = draw(GRID).unwrap();
        for (kind, grid_keys) in [
            (AlgorithmName::Admm, vec!["clip", "gamma"]),
            (AlgorithmName::DpSgd, vec!["lr"]),
        ] {
            let mine: Vec<&Config> = all.iter().filter(|c| c.kind == kind).collect();
            assert_eq!(mine.len(), 5, "{kind:?}");
            for (i, c) in mine.iter().enumerate() {
                assert!([10, 30].contains(&c.horizon));
                assert_eq!(c.keys.keys().collect::<Vec<_>>(), grid_keys);
                assert!(
                    mine[..i].iter().all(|d| d != c),
                    "a configuration drawn twice"
                );
            }
        }
    }

    #[test]
    fn the_draw_is_a_function_of_the_tuning_seed() {
        let a = draw(GRID).unwrap();
        assert_eq!(a, draw(GRID).unwrap());
        let seeds: Vec<Vec<Config>> = (1..6)
            .map(|seed| {
                draw(&GRID.replace("configs = 5", &format!("configs = 5\nseed = {seed}"))).unwrap()
            })
            .collect();
        assert!(
            seeds.iter().any(|b| *b != a),
            "five other seeds drew the same configurations"
        );
    }

    #[test]
    fn a_grid_smaller_than_the_effort_is_refused_with_its_kind() {
        let small = GRID.replace("lr = [0.01, 0.1, 1.0]", "lr = [0.01, 0.1]");
        match draw(&small) {
            Err(TuneError::GridTooSmall {
                kind,
                size,
                configs,
            }) => {
                assert_eq!((kind, size, configs), (AlgorithmName::DpSgd, 4, 5));
            }
            other => panic!("expected GridTooSmall, got {other:?}"),
        }
    }
}
