//! `dpwalk status`: what a running node reports about itself.

use anyhow::Context;
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The node's status address (node.toml's `status`): host:port, e.g. 127.0.0.1:9101 or
    /// localhost:9101.
    #[arg(long, default_value = "127.0.0.1:9101")]
    addr: String,
    /// Print the JSON as served.
    #[arg(long)]
    json: bool,
}

pub fn run(args: StatusArgs) -> anyhow::Result<()> {
    let s = dpwalk_net::status::fetch_status(&args.addr, Duration::from_secs(5))
        .with_context(|| format!("asking the node at {} for its status", args.addr))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    let eps = |e: Option<f64>| e.map_or_else(|| "unbounded".to_string(), |e| format!("{e:.4}"));
    println!(
        "run        {} ({})",
        s.run_id,
        &s.run_hash[..s.run_hash.len().min(16)]
    );
    println!("node       {} (member {})", s.peer_id, s.index);
    println!("listening  {}", s.listen.join(" "));
    println!(
        "peers      {:?} verified{}",
        s.peers,
        if s.mismatched.is_empty() {
            String::new()
        } else {
            format!(", {:?} with another run file", s.mismatched)
        }
    );
    if !s.connections.is_empty() {
        let links: Vec<String> = s
            .connections
            .iter()
            .map(|l| format!("{} {}", l.member, l.via.as_str()))
            .collect();
        println!("links      {}", links.join(", "));
    }
    if !s.external.is_empty() {
        println!("external   {}", s.external.join(" "));
    }
    println!(
        "walk       last seq {} of {}, {} steps here ({} skipped), {:.1} hops/s{}",
        s.last_seq.map_or_else(|| "-".into(), |q| q.to_string()),
        s.total_steps,
        s.steps_done,
        s.skipped,
        s.hop_rate,
        if s.holding { ", holding the token" } else { "" }
    );
    println!(
        "privacy    {}local eps {} at delta {:e}{}",
        if s.unit == dpwalk_net::run::RECORD_LEVEL {
            "record-level "
        } else {
            ""
        },
        eps(s.epsilon_local),
        s.delta,
        s.budget_epsilon
            .map_or_else(String::new, |b| format!(" (budget {b})"))
    );
    if let Some(e) = s.epsilon_network {
        println!(
            "           network (path hidden) eps {e:.4}: any other member, the path hidden from it"
        );
    }
    if let Some(c) = s.clipped_recent {
        println!(
            "clip       cut {} of the last {} updates of this node",
            c.clipped, c.of
        );
    }
    for w in &s.warnings {
        println!("warning    {w}");
    }
    println!("finished   {}", s.finished);
    Ok(())
}
