//! Are a user's far observers below its neighbours? For each user given, N3's pair figure of
//! every neighbour (in full), then every other observer's at the worst neighbour's order alone
//! (a valid bound at one order), beside the coalition's figure that `path_hidden` prints when all
//! pairs are above the cost limit. σ/C = 20, δ = 1e-6, the network orders.
//!
//! `cargo run --release -p dpwalk-privacy --example n3_far_pairs -- TOPOLOGY.toml STEPS CAP USERS`
//! (`USERS` comma-separated, e.g. `0,60,117`).

use dpwalk_core::topology::Topology;
use dpwalk_privacy::Noise;
use dpwalk_privacy::network::coalition::Coalition;
use dpwalk_privacy::network::mixture::{MixtureOptions, PairChain, PairMixtures, network_orders};
use dpwalk_privacy::rdp::{Conversion, DpBound, Orders};
use dpwalk_privacy::walk::transition_rows;
use std::error::Error;
use std::path::Path;
use std::time::Instant;

/// `(ε, order)` of a cap's curve at δ = 1e-6.
fn figure(m: &PairMixtures, cap: u64) -> Result<(f64, f64), Box<dyn Error>> {
    Ok(match m.curve(cap).to_dp(1e-6, Conversion::Tight)? {
        DpBound::Finite(g) => (g.epsilon, g.order),
        DpBound::NoFiniteGuarantee { .. } => (f64::INFINITY, f64::NAN),
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, steps, cap, users] = args.as_slice() else {
        return Err("usage: n3_far_pairs TOPOLOGY.toml STEPS CAP USERS".into());
    };
    let rows = transition_rows(&Topology::load(Path::new(path), None, 1)?);
    let (k, cap): (usize, u64) = (steps.parse()?, cap.parse()?);
    let orders = network_orders(&Orders::default_grid())?;
    let noise = Noise::new(20.0, 1.0)?;
    let opts = MixtureOptions::default();
    for user in users.split(',') {
        let i: usize = user.parse()?;
        let start = Instant::now();
        let c = Coalition::new(rows.as_slice(), i)?;
        let mut near = (0.0, f64::NAN);
        for j in c.neighbours() {
            let chain = PairChain::pair(rows.as_slice(), i, j)?;
            let f = figure(&PairMixtures::new(&chain, k, &orders, noise, &opts), cap)?;
            if f.0 > near.0 {
                near = f;
            }
        }
        let coalition = figure(&c.observer(k, &opts).mixtures(&orders, noise), cap)?.0;
        let one = Orders::new(&[near.1])?;
        let (mut far, mut above) = (0.0_f64, 0);
        for &j in c.observers() {
            let chain = PairChain::pair(rows.as_slice(), i, j)?;
            let f = figure(&PairMixtures::new(&chain, k, &one, noise, &opts), cap)?.0;
            far = far.max(f);
            above += usize::from(f > near.0);
        }
        println!(
            "user {i}: neighbours {:.4} (order {}); {} far observers at that order: largest {far:.4}, {above} above the neighbours; coalition {coalition:.4}; {:.1} s",
            near.0,
            near.1,
            c.observers().len(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
