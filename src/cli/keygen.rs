//! `dpwalk keygen`: a node's ed25519 identity, written once with mode 0600.

use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Where to write the key (refused if the file exists).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: KeygenArgs) -> anyhow::Result<()> {
    let keypair = dpwalk_net::keys::generate(&args.out)
        .with_context(|| format!("generating an identity in {}", args.out.display()))?;
    println!("{}", dpwalk_net::keys::peer_id(&keypair));
    eprintln!(
        "wrote {} (mode 0600); the line above is this node's PeerId for the run file's [[members]]",
        args.out.display()
    );
    Ok(())
}
