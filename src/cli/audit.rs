//! `dpwalk audit`: measured leakage (an empirical lower bound ε̂) beside the accountant's bound.

use super::overrides::Overrides;
use super::rundir;
use anyhow::Context;
use clap::{Args, ValueEnum};
use dpwalk_sim::audit::canary::CanaryKind;
use dpwalk_sim::audit::driver::{self, Config, PointAudit};
use dpwalk_sim::audit::record::RecordCanary;
use dpwalk_sim::audit::statistic::View;
use dpwalk_sim::audit::{one_run, output};
use dpwalk_sim::{scenario, simulate};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ViewArg {
    Local,
    Network,
    Central,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CanaryArg {
    WhiteBox,
    BlackBox,
}

/// Many short walks in two worlds that differ in one user's data, or in one of its records at
/// record level (a canary on a feature no other user's data touch); reports, for each view, ε̂ (a lower bound for one attack, at a stated
/// confidence) beside the accountant's upper bound ε for the same user and view.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Scenario file (TOML), the same format as `dpwalk sim`.
    scenario: PathBuf,
    #[command(flatten)]
    output: rundir::OutArgs,
    /// Trials per world (half choose the test's threshold, half evaluate it).
    #[arg(long, default_value_t = 20_000)]
    runs: usize,
    /// The canary user i.
    #[arg(long, default_value_t = 0)]
    user: usize,
    /// The network observer j [default: the neighbour i forwards to most often].
    #[arg(long)]
    observer: Option<usize>,
    /// Which attacker.
    #[arg(long, value_enum, default_value = "all")]
    view: ViewArg,
    /// White box: user i's data are a record that makes its contribution exactly ±C·d; black
    /// box: a record planted among user i's data. At record level (privacy.unit = "record")
    /// the worlds differ in one record within the data's norm bound R: white box, user i holds
    /// that record and zero records, the trials starting where its loss is almost linear (the
    /// messages then differ by 0.9999 of the proof's sensitivity, measured and printed); black
    /// box, a record of norm min(1, R) planted among user i's data.
    #[arg(long, value_enum, default_value = "white-box")]
    canary: CanaryArg,
    /// Hops of each trial [default: min(point steps, 2 × users × contributions)]; rounds of
    /// each trial of a baseline (fed-sgd, dp-iadmm, ipadmm, pp-admm) [default: min(point
    /// rounds, 4)]; a point's steps are the scenario's, or its kind's [by-kind.KIND] steps.
    #[arg(long)]
    steps: Option<u64>,
    /// Composition: the canary user contributes at its first K visits (not only at hop 0); the
    /// bound is the accountant's for K contributions, and a `composed` statistic sums the first
    /// value each attacker sees after each contribution. The walk only (a baseline's users
    /// contribute every round).
    #[arg(long, default_value_t = 1, conflicts_with = "one_run")]
    contributions: u64,
    /// Every trial follows these holders (comma-separated user indices, the canary user --user
    /// first, each move an edge of the topology; --steps defaults to their number) instead of
    /// drawing its own walk. A DP-SGD walk's network view is then compared with the ex-post
    /// certificate of this walk (network given the walk), which holds against an observer who
    /// knows it; without --walk, with the path-hidden figure.
    #[arg(long, value_delimiter = ',', conflicts_with = "one_run")]
    walk: Option<Vec<usize>>,
    /// Audit only this sweep point (0-based) [default: every point].
    #[arg(long)]
    point: Option<usize>,
    /// Confidence of ε̂.
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// One-run audit (Steinke, Nasr & Jagielski 2023): many canary users in ONE walk, each
    /// canary's sign drawn at random, ε̂ from the number of signs guessed right (far cheaper than
    /// the two worlds, and weaker; user level only). Ignores --runs and --user; --observer must not be a canary
    /// [default: the last user]; --steps defaults to min(point steps, 4 × users).
    #[arg(long)]
    one_run: bool,
    /// One-run audit: the number of canary users (users 0, 1, … other than the observer)
    /// [default: every user but the observer].
    #[arg(long, requires = "one_run")]
    canaries: Option<usize>,
    #[command(flatten)]
    overrides: Overrides,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

fn views(v: ViewArg) -> Vec<View> {
    match v {
        ViewArg::Local => vec![View::Local],
        ViewArg::Network => vec![View::Network],
        ViewArg::Central => vec![View::Central],
        ViewArg::All => vec![View::Local, View::Network, View::Central],
    }
}

fn canary_kind(c: CanaryArg) -> CanaryKind {
    match c {
        CanaryArg::WhiteBox => CanaryKind::WhiteBox,
        CanaryArg::BlackBox => CanaryKind::BlackBox,
    }
}

/// The one-run mode: one walk, many canaries.
fn run_one(
    args: &AuditArgs,
    loaded: &scenario::LoadedScenario,
    prepared: &simulate::Prepared,
    out: &std::path::Path,
) -> anyhow::Result<()> {
    let config = one_run::Config {
        canaries: args.canaries,
        observer: args.observer,
        views: views(args.view),
        canary: canary_kind(args.canary),
        steps: args.steps,
        point: args.point,
        confidence: args.confidence,
    };
    let points = one_run::audit(loaded, prepared, &config)
        .with_context(|| format!("auditing scenario {} in one run", args.scenario.display()))?;
    one_run::output::write_all(out, loaded.name(), &points)
        .with_context(|| format!("writing the audit to {}", out.display()))?;
    println!(
        "one-run eps_hat: empirical lower bound for one attack at {:.0}% confidence (Steinke, Nasr & \
         Jagielski 2023, delta term included; never a guarantee); bound: the accountant's local figure",
        100.0 * args.confidence
    );
    println!(
        "{:>5} {:<7} {:>9} {:<8} {:>9} {:>8} {:>9}  bound is",
        "point", "alg", "sigma", "view", "eps_hat", "correct", "bound"
    );
    let mut exceeded = false;
    for p in &points {
        for v in &p.views {
            exceeded |= v.exceeds_bound;
            println!(
                "{:>5} {:<7} {:>9.4} {:<8} {:>9.4} {:>8} {:>9}  {}{}",
                p.setting.point,
                p.setting.algorithm,
                p.setting.sigma,
                v.view.as_str(),
                v.estimate.epsilon,
                format!("{}/{}", v.estimate.best.correct, v.estimate.best.guesses),
                v.bound.epsilon.map_or("none".into(), |e| format!("{e:.4}")),
                v.bound.figure,
                if v.exceeds_bound {
                    "  EXCEEDED: a finding"
                } else {
                    ""
                }
            );
        }
        println!(
            "      {} canaries ({}), {} reached by the walk ({} clipped), observer {}, {} hops, one walk in {:.2} s",
            p.canary_users.len(),
            p.canary.kind.as_str(),
            p.contributed,
            p.clipped,
            p.setting.observer,
            p.setting.steps,
            p.seconds
        );
    }
    if exceeded {
        println!(
            "A measured eps_hat exceeds its bound: the bound (or one of its assumptions) is wrong for this attack."
        );
    }
    println!("Results in {}", out.display());
    Ok(())
}

pub fn run(args: AuditArgs) -> anyhow::Result<()> {
    if args.runs < 4 {
        anyhow::bail!(
            "--runs {} is too few: an audit needs at least 4 trials per world",
            args.runs
        );
    }
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        anyhow::bail!("--confidence must be in (0, 1), got {}", args.confidence);
    }
    let sets = args.overrides.with([])?;
    let loaded = scenario::load(&args.scenario, &sets)?;
    let out = args.output.create(&loaded, "-audit")?;
    tracing::info!(scenario = %args.scenario.display(), out = %out.display(), "preparing data and problem");
    let prepared = simulate::prepare(&loaded)
        .with_context(|| format!("preparing scenario {}", args.scenario.display()))?;
    if args.one_run {
        return run_one(&args, &loaded, &prepared, &out);
    }
    let config = Config {
        runs: args.runs,
        user: args.user,
        observer: args.observer,
        views: views(args.view),
        canary: canary_kind(args.canary),
        steps: args.steps,
        contributions: args.contributions,
        point: args.point,
        confidence: args.confidence,
        quiet: args.quiet,
    };
    let points = match &args.walk {
        Some(walk) => driver::audit_on_walk(&loaded, &prepared, &config, walk),
        None => driver::audit(&loaded, &prepared, &config),
    }
    .with_context(|| format!("auditing scenario {}", args.scenario.display()))?;
    output::write_all(&out, loaded.name(), &points)
        .with_context(|| format!("writing the audit to {}", out.display()))?;
    print_table(&points, &out);
    Ok(())
}

/// The record-level canary: what the pair is, and how close its messages come to the proof's
/// sensitivity.
fn print_record_level(r: &RecordCanary) {
    println!(
        "      record level: the canary user holds {} records; canary record norm {:.4} (data bound R = {:.4})",
        r.records, r.record_norm, r.feature_norm
    );
    if let (Some(m), Some(g), Some(c)) = (r.fewest_records, r.grad_bound, r.accounted_clip) {
        println!(
            "      accounted: m = {m} (fewest records), G2 = {g:.4}, record-level clip {c:.4e} (ADMM min(C, gamma*G2/m), DP-SGD min(C, G2/m))"
        );
    }
    if let (Some(d), Some(s)) = (r.realized_difference, r.sensitivity) {
        println!(
            "      first message, two worlds, no noise: |m1 - m0| = {d:.6e} of the sensitivity {s:.6e} ({:.5})",
            d / s
        );
    }
}

fn print_table(points: &[PointAudit], out: &std::path::Path) {
    let confidence = points
        .first()
        .and_then(|p| p.views.first())
        .and_then(|v| v.statistics.first())
        .map_or(0.95, |s| s.estimate.confidence);
    println!(
        "eps_hat: empirical lower bound for one attack at {:.0}% confidence (never a guarantee); \
         GDP: assumes a Gaussian trade-off curve; bound: the accountant's upper bound",
        100.0 * confidence
    );
    println!(
        "{:>5} {:<8} {:>9} {:<8} {:<14} {:>9} {:>9} {:>9}  bound is",
        "point", "alg", "noise", "view", "statistic", "eps_hat", "GDP", "bound"
    );
    let mut exceeded = false;
    for p in points {
        for v in &p.views {
            for s in &v.statistics {
                exceeded |= s.exceeds_bound;
                println!(
                    "{:>5} {:<8} {:>9.4} {:<8} {:<14} {:>9.4} {:>9} {:>9}  {}{}",
                    p.setting.point,
                    p.setting.algorithm,
                    p.setting.sigma,
                    v.view.as_str(),
                    s.statistic.as_str(),
                    s.estimate.epsilon,
                    s.gdp_epsilon().map_or("-".into(), |g| format!("{g:.4}")),
                    v.bound.epsilon.map_or("none".into(), |e| format!("{e:.4}")),
                    v.bound.figure,
                    if s.exceeds_bound {
                        "  EXCEEDED: a finding"
                    } else {
                        ""
                    }
                );
            }
        }
        if let Some(r) = &p.canary.record_level {
            print_record_level(r);
        }
        if p.contributions.mean_clipped.is_none() {
            println!(
                "      noise: {}; user {} ({} canary, every message read), {} rounds, {} trials/world, {:.0} trials/s",
                p.setting.knob,
                p.canary.user,
                p.canary.kind.as_str(),
                p.setting.steps,
                p.runs,
                p.trials_per_second
            );
            continue;
        }
        println!(
            "      user {} ({} canary), observer {}, {} hops, {} trials/world, token reached the observer in {:.1}% of trials, {:.0} trials/s",
            p.canary.user,
            p.canary.kind.as_str(),
            p.setting.observer,
            p.setting.steps,
            p.runs,
            100.0 * p.arrival_rate,
            p.trials_per_second
        );
        if p.contributions.bound_for > 1 {
            println!(
                "      composition: at most {} contributions of the canary, {:.2} made per trial on average ({:.2} clipped)",
                p.contributions.bound_for,
                p.contributions.mean,
                p.contributions.mean_clipped.unwrap_or(f64::NAN)
            );
        }
        if let Some(g) = &p.given_walks {
            let eps = |e: Option<f64>| e.map_or("none".into(), |e| format!("{e:.4}"));
            if g.fixed {
                println!(
                    "      every trial followed the given walk: charge {:.4} of the canary against the observer ({})",
                    g.psi_max, g.figure
                );
            } else {
                println!(
                    "      {} of the trials' own walks (reported, not compared: each bounds an observer who knows its walk): charge mean {:.4}, max {:.4}; eps {} at the mean, {} at the max",
                    g.figure,
                    g.psi_mean,
                    g.psi_max,
                    eps(g.epsilon_mean),
                    eps(g.epsilon_max)
                );
            }
        }
    }
    if exceeded {
        println!(
            "A measured eps_hat exceeds its bound: the bound (or one of its assumptions) is wrong for this attack."
        );
    }
    println!("Results in {}", out.display());
}
