//! What the two-world audit tests share: their configuration.

use dpwalk_sim::audit::canary::CanaryKind;
use dpwalk_sim::audit::driver::Config;
use dpwalk_sim::audit::statistic::View;

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
