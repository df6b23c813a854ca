//! The maker's seal on the final model: who made the run's last step, checkable by every member.
//!
//! The member that makes step `K` signs, with its node key, the bytes
//! ```text
//! "dpwalk/final-model/1" | run hash (32) | run id length (u64 LE) | run id | seq (u64 LE)
//!   | length of z (u64 LE) | z as IEEE-754 bits (u64 LE each)
//! ```
//! and sends the signature with its public key. A receiver accepts the model only when the key's
//! PeerId is a member of its run and the signature verifies over *its own* run hash: a member of
//! another run (a run file that differs in any key, even with the same member keys) cannot have a
//! model adopted, and a member that relays a model it received (to a member that was away at the
//! end) cannot alter it. Ed25519 signatures are deterministic, so a maker that restarts after the
//! end seals its model to the same bytes again.
//!
//! The seal says who made the model, not that the model is the walk's: a member's key can seal any
//! `z` (members are trusted; see the README's trust model).

use libp2p_identity::{Keypair, PeerId, PublicKey};
use thiserror::Error;

use crate::codec::{FinalModel, Rejection, RunContext, Seal, check_common};

/// What the signed bytes start with: a signature for something else never verifies as a seal.
const DOMAIN: &[u8] = b"dpwalk/final-model/1";

/// Longest accepted public key encoding (protobuf; an ed25519 key takes 36 bytes).
pub const MAX_KEY: usize = 128;
/// Longest accepted signature (an ed25519 signature takes 64 bytes).
pub const MAX_SIGNATURE: usize = 128;

/// Why a seal could not be made.
#[derive(Debug, Error)]
pub enum SealError {
    /// The key cannot sign.
    #[error("signing the final model: {0}")]
    Signing(String),
}

/// The bytes a seal signs (see the module docs).
fn signed_bytes(run_hash: &[u8; 32], run_id: &str, seq: u64, z: &[f64]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(DOMAIN.len() + 32 + 24 + run_id.len() + 8 * z.len());
    bytes.extend_from_slice(DOMAIN);
    bytes.extend_from_slice(run_hash);
    bytes.extend_from_slice(&(run_id.len() as u64).to_le_bytes());
    bytes.extend_from_slice(run_id.as_bytes());
    bytes.extend_from_slice(&seq.to_le_bytes());
    bytes.extend_from_slice(&(z.len() as u64).to_le_bytes());
    for v in z {
        bytes.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    bytes
}

/// The final model `z` after `seq` steps of run `run_id`, sealed by `keypair` for the run whose
/// hash is `run_hash`.
pub fn seal(
    keypair: &Keypair,
    run_hash: &[u8; 32],
    run_id: String,
    seq: u64,
    z: Vec<f64>,
) -> Result<FinalModel, SealError> {
    let signature = keypair
        .sign(&signed_bytes(run_hash, &run_id, seq, &z))
        .map_err(|e| SealError::Signing(e.to_string()))?;
    Ok(FinalModel {
        run_id,
        seq,
        z,
        seal: Seal {
            key: keypair.public().encode_protobuf(),
            signature,
        },
    })
}

/// The maker of `model` when its seal verifies over `run_hash`; [`Rejection::BadSeal`] otherwise.
/// Whether the maker is a member is the caller's check.
pub fn maker(model: &FinalModel, run_hash: &[u8; 32]) -> Result<PeerId, Rejection> {
    let Seal { key, signature } = &model.seal;
    if key.len() > MAX_KEY || signature.len() > MAX_SIGNATURE {
        return Err(Rejection::BadSeal);
    }
    let key = PublicKey::try_decode_protobuf(key).map_err(|_| Rejection::BadSeal)?;
    let bytes = signed_bytes(run_hash, &model.run_id, model.seq, &model.z);
    if !key.verify(&bytes, signature) {
        return Err(Rejection::BadSeal);
    }
    Ok(key.to_peer_id())
}

/// Whether a decoded final model from `from` may be written: as [`crate::codec::validate`], except that its
/// `seq` must be exactly `K`, and its seal must verify over the run's hash and name a member (see
/// this module). Returns that member, the model's maker; `from` may be another member that
/// relays the model.
pub fn validate_final(
    from: &PeerId,
    model: &FinalModel,
    ctx: &RunContext,
) -> Result<PeerId, Rejection> {
    check_common(from, &model.run_id, &model.z, ctx)?;
    if model.seq != ctx.steps {
        return Err(Rejection::SeqOutOfRange {
            seq: model.seq,
            steps: ctx.steps,
        });
    }
    let maker = maker(model, &ctx.run_hash)?;
    if !ctx.members.contains(&maker) {
        return Err(Rejection::NotMember {
            peer: maker.to_base58(),
        });
    }
    Ok(maker)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(keypair: &Keypair, hash: [u8; 32]) -> FinalModel {
        seal(keypair, &hash, "r".into(), 10, vec![0.5, -1.25, 0.0]).unwrap()
    }

    #[test]
    fn a_seal_names_its_maker_and_is_deterministic() {
        let k = Keypair::generate_ed25519();
        let m = model(&k, [7; 32]);
        assert_eq!(maker(&m, &[7; 32]), Ok(k.public().to_peer_id()));
        assert_eq!(m, model(&k, [7; 32]));
    }

    #[test]
    fn another_run_or_an_altered_model_does_not_verify() {
        let k = Keypair::generate_ed25519();
        let m = model(&k, [7; 32]);
        assert_eq!(maker(&m, &[8; 32]), Err(Rejection::BadSeal));
        for alter in [
            |m: &mut FinalModel| m.z[1] = -1.0,
            |m: &mut FinalModel| m.z[2] = -0.0,
            |m: &mut FinalModel| m.seq = 11,
            |m: &mut FinalModel| m.run_id = "s".into(),
            |m: &mut FinalModel| m.seal.signature[0] ^= 1,
            |m: &mut FinalModel| m.seal.key = vec![1, 2, 3],
            |m: &mut FinalModel| m.seal.key = vec![0; MAX_KEY + 1],
        ] {
            let mut bad = m.clone();
            alter(&mut bad);
            assert_eq!(maker(&bad, &[7; 32]), Err(Rejection::BadSeal));
        }
        // Another key's seal over the same model names the other key, not the first.
        let other = Keypair::generate_ed25519();
        let mut swapped = m.clone();
        swapped.seal = model(&other, [7; 32]).seal;
        assert_eq!(maker(&swapped, &[7; 32]), Ok(other.public().to_peer_id()));
    }
}
