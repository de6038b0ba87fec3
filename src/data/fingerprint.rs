//! What identifies a data set: size, dimension and a hash of every value ([`Fingerprint`]),
//! recorded with a run so that resuming it or predicting from it on other data is refused.

use super::Dataset;
use serde::{Deserialize, Serialize};

/// What identifies the data a run was made on: size, dimension and a hash of every value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Points or documents.
    pub n: usize,
    /// Dimension or vocabulary size.
    pub dim: usize,
    /// FNV-1a hash of the values (bit patterns of reals; ids and counts of sparse rows), in
    /// hexadecimal.
    pub hash: String,
}

impl Fingerprint {
    /// The fingerprint of `data`. Cost O(values).
    pub fn of(data: &Dataset) -> Self {
        let mut h = Fnv1a::new();
        let (n, dim) = match data {
            Dataset::Dense(x) => {
                h.word(0);
                for &v in x.values() {
                    h.word(v.to_bits());
                }
                (x.n(), x.d())
            }
            Dataset::Counts(c) => {
                h.word(1);
                for i in 0..c.n() {
                    let (ids, counts) = c.row(i);
                    h.word(ids.len() as u64);
                    for (&w, &k) in ids.iter().zip(counts) {
                        h.word((u64::from(w) << 32) | u64::from(k));
                    }
                }
                (c.n(), c.vocab())
            }
            Dataset::Table(t) => {
                h.word(2);
                for c in t.columns() {
                    h.word(c.kind as u64);
                    for name in &c.levels {
                        h.bytes(name.as_bytes());
                        h.word(name.len() as u64);
                    }
                    for &v in &c.values {
                        // Every NaN (missing) hashes alike.
                        h.word(if v.is_nan() { u64::MAX } else { v.to_bits() });
                    }
                }
                (t.n(), t.d())
            }
        };
        h.word(n as u64);
        h.word(dim as u64);
        Fingerprint {
            n,
            dim,
            hash: format!("{:016x}", h.finish()),
        }
    }
}

/// The 64-bit FNV-1a hash fed incrementally, with bytes or 64-bit words (little-endian).
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv1a {
    /// The hash of nothing.
    pub fn new() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }

    /// Feeds `bytes`.
    pub fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// Feeds `w` as its 8 little-endian bytes.
    pub fn word(&mut self, w: u64) {
        self.bytes(&w.to_le_bytes());
    }

    /// The hash so far.
    pub fn finish(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DenseData, SparseCounts};

    #[test]
    fn fingerprints_tell_data_apart() {
        let a = Dataset::Dense(DenseData::new(2, 2, vec![1.0, 2.0, 3.0, 4.0]).unwrap());
        let b = Dataset::Dense(DenseData::new(2, 2, vec![1.0, 2.0, 3.0, 4.5]).unwrap());
        let c = Dataset::Dense(DenseData::new(4, 1, vec![1.0, 2.0, 3.0, 4.0]).unwrap());
        let s = Dataset::Counts(SparseCounts::from_rows(5, &[vec![(0, 1)], vec![(4, 2)]]).unwrap());
        let t = Dataset::Counts(SparseCounts::from_rows(5, &[vec![(0, 1)], vec![(4, 3)]]).unwrap());
        let prints = [&a, &b, &c, &s, &t].map(Fingerprint::of);
        for i in 0..prints.len() {
            for j in i + 1..prints.len() {
                assert_ne!(prints[i], prints[j], "{i} {j}");
            }
        }
        assert_eq!(Fingerprint::of(&a), prints[0]);
    }
}
