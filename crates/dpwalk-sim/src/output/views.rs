//! The views panel (seed-baselines spec §6.4, plot 6): the privacy–utility plot of dpwalk's own
//! algorithms (the walk's ADMM and DP-SGD, dpwalk's federated and centralized ADMM, federated
//! DP-SGD) with one curve per view in which the point has a proved figure
//! (`privacy_views.png`, its data in `privacy_views.csv`): x is the point's ε in that view, as
//! `summary.json` reports it, y its final relative gap.
//!
//! The local view (an eavesdropper on every message) is the comparison's headline; the central
//! view (the released models only: the federated and centralized modes' final model, federated
//! DP-SGD's server models) and the network view (another
//! user on the walk) are weaker adversaries, and are drawn only where `summary.json` has a figure
//! for them: no network figure exists for the ADMM walk (withdrawn, see the README's "Measuring
//! privacy"); a DP-SGD walk's is the path-hidden figure (N1 on the complete graph, N3 on other
//! graphs up to 200 users, not offered beyond them or past its cost limit). The caption says
//! which of these the panel lacks.

use super::{PointSummary, Summary};
use crate::compare::{skip_empty, zero_gap_line};
use crate::plot::{LinePlot, PlotError, Series, write_line_plot_with_data};
use std::path::Path;

/// dpwalk's own kinds (fed-sgd among them: the walk's DP-SGD message, averaged by a server).
const OWN_KINDS: [&str; 3] = ["admm", "dp-sgd", "fed-sgd"];

/// A point of a curve: ε, the mean final gap and its standard deviation.
type Row = (f64, f64, f64);

/// A view and how it reads a point's ε from `summary.json`.
struct View {
    name: &'static str,
    epsilon: fn(&PointSummary) -> Option<f64>,
}

const VIEWS: [View; 3] = [
    View {
        name: "local",
        epsilon: |p| p.privacy.accounting.local.as_ref()?.figure.epsilon,
    },
    View {
        name: "central (released models only)",
        epsilon: |p| p.privacy.accounting.central?.epsilon,
    },
    View {
        name: "network (another user)",
        epsilon: |p| p.privacy.accounting.network.as_ref()?.figure.epsilon,
    },
];

/// Writes the views panel into `dir` when `summary` sweeps dpwalk's own kinds over more than one
/// point and at least one of them has a local figure.
pub fn write_privacy_views(dir: &Path, summary: &Summary) -> Result<(), PlotError> {
    let own: Vec<&PointSummary> = summary
        .points
        .iter()
        .filter(|p| OWN_KINDS.contains(&p.algorithm))
        .collect();
    if own.len() < 2 || own.iter().all(|p| (VIEWS[0].epsilon)(p).is_none()) {
        return Ok(());
    }
    let mut series: Vec<Series> = Vec::new();
    for view in &VIEWS {
        let mut groups: Vec<(String, Vec<Row>)> = Vec::new();
        for p in &own {
            let Some(epsilon) = (view.epsilon)(p) else {
                continue;
            };
            // A server kind's mode and topology both say "server": name it once.
            let place = match p.mode {
                "server" => "server".to_string(),
                mode => format!("{mode} {}", p.topology),
            };
            let key = format!(
                "{} {place} ({}) — {} view",
                p.algorithm, p.parameters, view.name
            );
            let point = (epsilon, p.final_mean.relative_gap, p.final_std.relative_gap);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, points)) => points.push(point),
                None => groups.push((key, vec![point])),
            }
        }
        for (label, mut points) in groups {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            series.push(Series {
                label,
                points: points.iter().map(|&(x, y, _)| (x, y)).collect(),
                spread: Some(points.iter().map(|p| p.2).collect()),
            });
        }
    }
    series.extend(zero_gap_line(&series, summary.zero_model.relative_gap));
    let delta = own.first().map_or(0.0, |p| p.privacy.accounting.delta);
    let unit = own
        .first()
        .map_or("", |p| p.privacy.accounting.unit.prefix());
    let plot = LinePlot {
        title: format!(
            "{}: dpwalk's algorithms, final relative gap vs ε in each proved view",
            summary.scenario
        ),
        x_label: format!("{unit}ε of the view (δ = {delta:e})"),
        y_label: "relative gap (F(z) − F*) / |F*|".into(),
        log_x: true,
        log_y: true,
        series,
    };
    let caption = caption(&own);
    skip_empty(write_line_plot_with_data(
        &plot,
        Some(&caption),
        &dir.join("privacy_views"),
    ))
}

/// What the panel shows and which views it lacks, and why.
fn caption(own: &[&PointSummary]) -> String {
    let mut parts =
        vec!["central and network are weaker adversaries than local (the headline)".to_string()];
    let walk = |kind: &str| {
        own.iter()
            .any(|p| p.algorithm == kind && p.mode == "decentralized")
    };
    if walk("admm") {
        parts.push("ADMM walk: no network figure (withdrawn, not proved)".into());
    }
    if own
        .iter()
        .any(|p| p.algorithm == "dp-sgd" && p.privacy.accounting.network.is_none())
    {
        parts.push(
            "DP-SGD walk: the path-hidden network figure is not offered on graphs other than the complete one above 200 users, nor past its cost limit (summary.json notes say which)".into(),
        );
    }
    if own.iter().any(|p| p.privacy.accounting.network.is_some()) {
        parts.push(format!(
            "network: {} (DP-SGD walk, a priori), assumes: {}",
            dpwalk_privacy::walk::PATH_HIDDEN,
            dpwalk_privacy::walk::ASSUMPTIONS.join("; ")
        ));
    }
    let central = |p: &&&PointSummary| p.privacy.accounting.central.is_some();
    if own.iter().filter(central).any(|p| p.algorithm == "fed-sgd") {
        parts.push(
            "fed-sgd central: the server's models, the server trusted with the messages".into(),
        );
    }
    if own.iter().filter(central).any(|p| p.algorithm != "fed-sgd") {
        parts.push(
            "central (federated, centralized ADMM) assumes the users' hidden state does not leak"
                .into(),
        );
    } else if !own.iter().any(|p| central(&p)) {
        parts.push("central: dpwalk's federated and centralized modes and fed-sgd only".into());
    }
    parts.join("; ")
}
