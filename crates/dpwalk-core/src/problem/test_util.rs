//! Small seeded synthetic problems for tests: Gaussian features and labels that fit each loss.

use super::{Loss, Regularizer};
use crate::data::{Dataset, LabelKind, UserData};
use crate::rng::NodeRng;
use proptest::prelude::*;
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

/// `len` standard normal values.
pub(crate) fn normals(rng: &mut NodeRng, len: usize) -> Vec<f64> {
    (0..len).map(|_| StandardNormal.sample(rng)).collect()
}

/// User data with `records[i]` rows for user `i`, `p` features, labels drawn from a random
/// ground-truth model of `loss` with noise.
pub(crate) fn user_data(seed: u64, loss: Loss, records: &[usize], p: usize) -> UserData {
    let mut rng = NodeRng::seed_from_u64(seed);
    let classes = match loss {
        Loss::Multinomial { classes } => classes,
        _ => 1,
    };
    let truth = normals(&mut rng, classes * p);
    let rows: usize = records.iter().sum();
    let features = normals(&mut rng, rows * p);
    let labels = features
        .chunks_exact(p)
        .map(|a| {
            let logits: Vec<f64> = truth
                .chunks_exact(p)
                .map(|t| a.iter().zip(t).map(|(x, y)| x * y).sum::<f64>())
                .collect();
            let noise: f64 = StandardNormal.sample(&mut rng);
            match loss {
                Loss::Squared => logits[0] + 0.5 * noise,
                Loss::Logistic => {
                    if logits[0] + noise > 0.0 {
                        1.0
                    } else {
                        -1.0
                    }
                }
                Loss::Multinomial { .. } => {
                    let noisy: Vec<f64> = logits
                        .iter()
                        .map(|l| {
                            let e: f64 = StandardNormal.sample(&mut rng);
                            l + e
                        })
                        .collect();
                    let best = (0..classes).fold(0, |b, k| if noisy[k] > noisy[b] { k } else { b });
                    best as f64
                }
            }
        })
        .collect();
    let label_kind = match loss {
        Loss::Squared => LabelKind::Real,
        Loss::Logistic => LabelKind::Binary,
        Loss::Multinomial { classes } => LabelKind::Classes(classes),
    };
    let mut offsets = vec![0];
    for &m in records {
        offsets.push(offsets[offsets.len() - 1] + m);
    }
    UserData {
        data: Dataset {
            features,
            labels,
            n_features: p,
            label_kind,
        },
        offsets,
    }
}

/// Any regularizer, weights in `[0, 10)`.
pub(crate) fn any_regularizer() -> impl Strategy<Value = Regularizer> {
    prop_oneof![
        Just(Regularizer::None),
        (0.0f64..10.0).prop_map(|l2| Regularizer::L2 { l2 }),
        (0.0f64..10.0).prop_map(|l1| Regularizer::L1 { l1 }),
        (0.0f64..10.0, 0.0f64..10.0).prop_map(|(l1, l2)| Regularizer::ElasticNet { l1, l2 }),
    ]
}
