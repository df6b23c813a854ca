//! RNG seeding: the one place where a run seed becomes random streams.
//!
//! Every user `i` of a run with seed `s` draws its noise and its walk's next hop from
//! [`node_rng`]`(s, i)`: a `ChaCha12Rng` (named, not `StdRng`, whose algorithm may change) whose
//! 256-bit key is expanded from `s` by SplitMix64 and whose stream number is `i`. The daemon and the
//! simulator both call it, so a node and its simulated twin draw the same numbers. A node's
//! position in its stream ([`NodeRng::get_word_pos`]) is all that must be persisted to resume it.
//!
//! Other randomness of a run (data generation, partition, topology generation, federated
//! sampling) uses [`derive_seed`] with a distinct purpose tag, so that changing one never shifts
//! another. Repetition `r` of a scenario is simply the run with seed `seed + r`
//! (`dpwalk_sim::simulate::repetition_seed`), so that repetition 0 is the run a daemon swarm makes.

use rand::SeedableRng;
use rand::rngs::ChaCha12Rng;

/// The RNG of one user (one node) of a run.
pub type NodeRng = ChaCha12Rng;

/// SplitMix64 (Steele, Lea & Flood 2014): a bijective mixer used only to expand seeds.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The RNG of user `node` in the run seeded by `run_seed`, at the start of its stream.
pub fn node_rng(run_seed: u64, node: u64) -> NodeRng {
    let mut state = run_seed;
    let mut key = [0u8; 32];
    for chunk in key.chunks_exact_mut(8) {
        chunk.copy_from_slice(&splitmix64(&mut state).to_le_bytes());
    }
    let mut rng = ChaCha12Rng::from_seed(key);
    rng.set_stream(node);
    rng
}

/// Well-known purposes of derived seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Synthetic data generation.
    Data = 1,
    /// Train/test split and partition of records among users.
    Partition = 2,
    /// Random topology generators.
    Topology = 3,
    /// The federated server's choice of blocks, and the walk's first holder.
    Schedule = 4,
    /// `dpwalk tune`: its validation split and its draw of configurations.
    Tuning = 5,
}

/// A seed for `purpose` (and an index within it, e.g. the repetition number) derived from a run
/// seed; distinct purposes give unrelated seeds.
pub fn derive_seed(run_seed: u64, purpose: Purpose, index: u64) -> u64 {
    let mut state = run_seed ^ (purpose as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let a = splitmix64(&mut state);
    let mut state = a ^ index.wrapping_mul(0xA24B_AED4_963E_E407);
    splitmix64(&mut state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..8)
            .map(|_| 0)
            .scan(node_rng(7, 3), |r, _: u64| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..8)
            .map(|_| 0)
            .scan(node_rng(7, 3), |r, _: u64| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..8)
            .map(|_| 0)
            .scan(node_rng(7, 4), |r, _: u64| Some(r.next_u64()))
            .collect();
        let d: Vec<u64> = (0..8)
            .map(|_| 0)
            .scan(node_rng(8, 3), |r, _: u64| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn word_position_resumes_a_stream() {
        let mut r = node_rng(11, 2);
        for _ in 0..13 {
            r.next_u64();
        }
        let pos = r.get_word_pos();
        let expected: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
        let mut resumed = node_rng(11, 2);
        resumed.set_word_pos(pos);
        let got: Vec<u64> = (0..5).map(|_| resumed.next_u64()).collect();
        assert_eq!(expected, got);
    }

    #[test]
    fn derived_seeds_differ_by_purpose_and_index() {
        let s = 42;
        assert_ne!(
            derive_seed(s, Purpose::Data, 0),
            derive_seed(s, Purpose::Partition, 0)
        );
        assert_ne!(
            derive_seed(s, Purpose::Schedule, 0),
            derive_seed(s, Purpose::Schedule, 1)
        );
        assert_eq!(
            derive_seed(s, Purpose::Topology, 3),
            derive_seed(s, Purpose::Topology, 3)
        );
    }
}
