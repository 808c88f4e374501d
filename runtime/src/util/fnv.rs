//! FNV-1a, 64 bits: a hash stable across processes and Rust versions, for keys and fingerprints
//! kept outside the process (std's hashers promise neither).

/// The FNV-1a hash of `bytes`.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3))
}
