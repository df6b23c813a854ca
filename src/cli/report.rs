//! What `dpwalk sim` and `dpwalk swarm` print: one table row per point of a summary.

use dpwalk_sim::output::Summary;
use std::path::Path;

/// Prints the summary table, the privacy note and where the results are. At record level the
/// ε columns and the note say so (the points of a scenario share its unit).
pub fn print_table(summary: &Summary, optimum: f64, out: &Path) {
    let unit = summary
        .points
        .first()
        .map_or("", |p| p.privacy.accounting.unit.prefix());
    let (local_head, network_head) = (format!("{unit}local eps"), format!("{unit}network eps"));
    let width = network_head.len().max(12);
    // The central column only where a point has a central figure (federated DP-SGD, the
    // federated and centralized modes).
    let central = summary
        .points
        .iter()
        .any(|p| p.privacy.accounting.central.is_some());
    let central_head = format!("{unit}central eps");
    let central_cell = |cell: &str| {
        if central {
            format!(" {cell:>w$}", w = central_head.len())
        } else {
            String::new()
        }
    };
    println!(
        "{:<8} {:>10} {:>8} {:>8} {:>14} {:>12} {:>10} {:>width$} {:>width$}{} {:>12}  topology",
        "algo",
        "sigma",
        "clip",
        "clipped",
        "objective",
        "rel. gap",
        "test err",
        local_head,
        network_head,
        central_cell(&central_head),
        "steps/s"
    );
    let eps = |e: Option<f64>| e.map_or_else(|| "inf".to_string(), |e| format!("{e:.4}"));
    for p in &summary.points {
        let accounting = &p.privacy.accounting;
        let local = accounting
            .local
            .as_ref()
            .map_or_else(|| "-".to_string(), |l| eps(l.figure.epsilon));
        let network = accounting
            .network
            .as_ref()
            .map_or_else(|| "-".to_string(), |n| eps(n.figure.epsilon));
        let central_eps = accounting
            .central
            .as_ref()
            .map_or_else(|| "-".to_string(), |c| eps(c.epsilon));
        println!(
            "{:<8} {:>10.4} {:>8} {:>8} {:>14.6e} {:>12.3e} {:>10} {:>width$} {:>width$}{} {:>12.0}  {}",
            p.algorithm,
            p.sigma,
            p.clip
                .map_or_else(|| "none".to_string(), |c| format!("{c}")),
            // The share of the clip's tests where it bound (summary.json: privacy.clipped_fraction).
            p.clip.map_or_else(
                || "-".to_string(),
                |_| format!("{:.1}%", 100.0 * p.privacy.clipped_fraction)
            ),
            p.final_mean.train_objective,
            p.final_mean.relative_gap,
            p.final_mean
                .test_error
                .map_or_else(|| "-".to_string(), |e| format!("{e:.4}")),
            local,
            network,
            central_cell(&central_eps),
            p.throughput.steps_per_second,
            p.topology,
        );
    }
    if let Some(delta) = summary.points.first().map(|p| p.privacy.accounting.delta) {
        println!(
            "{unit}local eps: worst user against an eavesdropper on every token, which bounds every \
             observer; network eps: the path-hidden figure of the DP-SGD walk (a priori, for the \
             walk's steps and each user's contribution cap), worst user against its worst \
             observer, else - (ADMM, or not offered); the network figure given the walk (N2) is \
             in summary.json and privacy_users.csv; at delta = {delta:e} (summary.json says why)"
        );
        if central {
            println!(
                "{unit}central eps: whoever sees only the released models (federated DP-SGD: \
                 the server's, the server trusted with the messages), else -"
            );
        }
        if !unit.is_empty() {
            println!(
                "record-level: neighbouring datasets differ in one record of one user; for admm, \
                 dp-sgd and fed-sgd the clip is min(C, gamma G2/m) (DP-SGD: min(C, G2/m)) for \
                 the user with the fewest records m, assuming every record's feature norm is \
                 within the data's largest (and, for admm, an exact prox); each point's \
                 assumptions are in summary.json: privacy.unit"
            );
        }
    }
    println!(
        "clipped: the share of the clip's tests where it bound (per contribution; per record \
         gradient for dp-iadmm and ipadmm), over all repetitions"
    );
    if let Some(line) = references(summary) {
        println!("{line}");
    }
    println!(
        "optimum objective {:.6e}; results in {}",
        optimum,
        out.display()
    );
}

/// The test errors that make the table's readable (classifiers with test records): the zero
/// model's, the majority class's where it differs, and the non-private optimum's.
fn references(summary: &Summary) -> Option<String> {
    let zero = summary.zero_model.test_error?;
    let mut line = format!("references, test error: zero model {zero:.4}");
    if let Some((label, e)) = summary.distinct_majority() {
        line.push_str(&format!(", majority class (label {label}) {e:.4}"));
    }
    if let Some(e) = summary.optimum_model.test_error {
        line.push_str(&format!(", non-private optimum {e:.4}"));
    }
    Some(line)
}

/// `YYYYMMDD-HHMMSS` in UTC, from the system clock (civil-from-days, Hinnant's algorithm).
pub fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}
