//! RFC 6962 Merkle tree hashing and inclusion proofs.

use sha2::{Digest as _, Sha256};

pub fn leaf_hash(data: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}

fn node_hash(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Largest power of two strictly smaller than `n` (n >= 2).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// MTH(D[n]) over leaf hashes.
pub fn root_hash(leaves: &[[u8; 32]]) -> [u8; 32] {
    match leaves.len() {
        0 => Sha256::digest([]).into(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(&root_hash(&leaves[..k]), &root_hash(&leaves[k..]))
        }
    }
}

/// PATH(m, D[n]): the audit path for leaf `m`, leaf side first.
pub fn inclusion_path(m: usize, leaves: &[[u8; 32]]) -> Vec<[u8; 32]> {
    let n = leaves.len();
    if n <= 1 {
        return Vec::new();
    }
    let k = split(n);
    if m < k {
        let mut p = inclusion_path(m, &leaves[..k]);
        p.push(root_hash(&leaves[k..]));
        p
    } else {
        let mut p = inclusion_path(m - k, &leaves[k..]);
        p.push(root_hash(&leaves[..k]));
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recomputes the root from a path the way RFC 9162 section 2.1.3.2 verifies it.
    fn root_from_path(index: usize, size: usize, leaf: [u8; 32], path: &[[u8; 32]]) -> [u8; 32] {
        let (mut fn_, mut sn) = (index, size - 1);
        let mut r = leaf;
        for p in path {
            if fn_ & 1 == 1 || fn_ == sn {
                r = node_hash(p, &r);
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            } else {
                r = node_hash(&r, p);
            }
            fn_ >>= 1;
            sn >>= 1;
        }
        r
    }

    #[test]
    fn every_leaf_of_every_size_proves_against_the_root() {
        for n in 1..=17 {
            let leaves: Vec<[u8; 32]> = (0..n).map(|i| leaf_hash(&[i as u8])).collect();
            let root = root_hash(&leaves);
            for m in 0..n {
                let path = inclusion_path(m, &leaves);
                assert_eq!(root_from_path(m, n, leaves[m], &path), root, "n={n} m={m}");
            }
        }
    }
}
