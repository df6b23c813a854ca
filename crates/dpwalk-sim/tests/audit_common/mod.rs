//! What the two-world audit tests share: the small walk and the configuration.

use dpwalk_privacy::Noise;
use dpwalk_sim::audit::bound::bound;
use dpwalk_sim::audit::canary::CanaryKind;
use dpwalk_sim::audit::driver::{Config, PointAudit, audit};
use dpwalk_sim::audit::one_run;
use dpwalk_sim::audit::statistic::View;
use dpwalk_sim::scenario::LoadedScenario;
use dpwalk_sim::simulate::Prepared;

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

/// Every statistic of every view of `p` at or below its bound (printed with `label`); returns
/// the local first token's (message's) ε̂.
pub fn assert_below(label: &str, p: &PointAudit) -> f64 {
    for v in &p.views {
        let bound = v.bound.epsilon_or_inf();
        for s in &v.statistics {
            let e = &s.estimate;
            eprintln!(
                "{label} {:?} {:?}: eps_hat {:.3} (GDP {:?}) <= bound {bound:.3}",
                v.view,
                s.statistic,
                e.epsilon,
                s.gdp_epsilon()
            );
            assert!(
                e.epsilon <= bound && !s.exceeds_bound,
                "{label} {:?} {:?}: eps_hat {} > bound {bound}",
                v.view,
                s.statistic,
                e.epsilon
            );
        }
    }
    p.views[0].statistics[0].estimate.epsilon
}

/// The local first token's ε̂ of `p` within its bound and above `broken`, a broken
/// accountant's ε for the same pair: the broken accounting is caught.
pub fn assert_caught(label: &str, p: &PointAudit, broken: f64) {
    let est = &p.views[0].statistics[0].estimate;
    let real = p.views[0].bound.epsilon_or_inf();
    eprintln!(
        "{label}: eps_hat {:.3} (GDP {:.3}); bound {real:.3}; broken bound {broken:.3}",
        est.epsilon, est.gdp_epsilon
    );
    assert!(est.epsilon <= real, "{label}: {} > {real}", est.epsilon);
    assert!(
        est.epsilon > broken,
        "{label}: the broken accounting was not caught: eps_hat {} <= {broken}",
        est.epsilon
    );
}

/// The local-view ε of one contribution with `noise` in a `steps`-hop walk, by `prepared`'s
/// accountant: what a (broken) accounting with that noise would print.
pub fn local_epsilon(prepared: &Prepared, noise: Noise, steps: u64) -> f64 {
    bound(&prepared.privacy.setup(noise), None, 2, steps, View::Local)
        .expect("the accountant takes the noise")
        .epsilon_or_inf()
}

/// A one-run audit of the local view, defaults elsewhere.
pub fn one_run_local() -> one_run::Config {
    one_run::Config {
        canaries: None,
        observer: None,
        views: vec![View::Local],
        canary: CanaryKind::WhiteBox,
        steps: None,
        point: None,
        confidence: 0.95,
    }
}

/// The audit of `cfg` on a loaded and prepared scenario, with both.
pub fn audited(
    (loaded, prepared): (LoadedScenario, Prepared),
    cfg: &Config,
) -> (Vec<PointAudit>, LoadedScenario, Prepared) {
    let points = audit(&loaded, &prepared, cfg).expect("audit");
    (points, loaded, prepared)
}
