//! What the two-world audit tests share: the small walk and the configuration.

use dpwalk_sim::audit::canary::CanaryKind;
use dpwalk_sim::audit::driver::Config;
use dpwalk_sim::audit::statistic::View;

/// Eight users, two records each, p = 4 (+ the dedicated feature), a walk of 16 hops (2n).
/// μ = 4C/σ = 2 on the first token: far from nothing, far from the ceiling of the runs.
pub const SMALL: &str = r#"
seed = 5
users = 8
steps = 16
eval-every = 16

[data]
source = "synthetic-lasso"
rows = 16
dim = 4
sparsity = 2

[problem]
loss = "squared"
l1 = 0.01

[algorithm]
gamma = 2.0
lambda = 0.5
sigma = 1.0
clip = 0.5
lr = 0.1

[privacy]
delta = 1e-5
"#;

/// `runs` trials per world of `views`, white-box canary on user 2, defaults elsewhere.
pub fn config(runs: usize, views: Vec<View>) -> Config {
    Config {
        runs,
        user: 2,
        observer: None,
        views,
        canary: CanaryKind::WhiteBox,
        steps: None,
        contributions: 1,
        point: None,
        confidence: 0.95,
        quiet: true,
    }
}
