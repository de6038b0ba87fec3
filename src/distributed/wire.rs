//! Byte encoding of what ranks exchange (little-endian numbers), and the one collective the
//! data-parallel sampler builds everything on: a fold in rank order.

use super::comm::Comm;
use crate::error::{Error, Result};

/// Appends `v` as 8 little-endian bytes.
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends every value of `v` as 8 little-endian bytes (the bit pattern: `-0.0` and NaN
/// payloads survive).
pub fn put_f64s(out: &mut Vec<u8>, v: &[f64]) {
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Reads values written by [`put_u64`] and [`put_f64s`] in the same order.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(Error::Usage(format!(
                "a message between ranks is {} bytes short (ranks running different versions \
                 or settings?)",
                n - self.buf.len()
            )));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    /// The next `u64`.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// The next `n` `f64`s.
    pub fn f64s(&mut self, n: usize) -> Result<Vec<f64>> {
        Ok(self
            .take(8 * n)?
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect())
    }
}

/// Folds an accumulator through the ranks in rank order and gives every rank the result:
/// rank 0 applies `fold` to `init`, every later rank applies its `fold` to what the rank
/// before it sent, and the last rank broadcasts the outcome. Because every rank folds its own
/// parts onto the running value, the operations and their order are those of one process
/// folding all parts in order: the result is the same, bit for bit, for any number of ranks
/// whose parts follow each other in that order. Cost: `size - 1` sequential messages plus one
/// broadcast.
pub fn fold_in_rank_order<T>(
    comm: &dyn Comm,
    init: T,
    fold: impl FnOnce(T) -> Result<T>,
    encode: impl Fn(&T) -> Vec<u8>,
    decode: impl Fn(&[u8]) -> Result<T>,
) -> Result<T> {
    let (rank, size) = (comm.rank(), comm.size());
    let start = if rank == 0 {
        init
    } else {
        decode(&comm.recv(rank - 1)?)?
    };
    let acc = fold(start)?;
    if size == 1 {
        return Ok(acc);
    }
    if rank + 1 < size {
        comm.send(rank + 1, &encode(&acc))?;
    }
    let mut bytes = if rank + 1 == size {
        encode(&acc)
    } else {
        Vec::new()
    };
    comm.broadcast(size - 1, &mut bytes)?;
    if rank + 1 == size {
        Ok(acc)
    } else {
        decode(&bytes)
    }
}

/// Every rank's `local` values, concatenated in rank order, on every rank (a fold that
/// appends). Cost: as [`fold_in_rank_order`], with messages growing to the whole result.
pub fn all_gather_u64(comm: &dyn Comm, local: &[u64]) -> Result<Vec<u64>> {
    fold_in_rank_order(
        comm,
        Vec::new(),
        |mut acc: Vec<u64>| {
            acc.extend_from_slice(local);
            Ok(acc)
        },
        |acc| {
            let mut out = Vec::with_capacity(8 * acc.len());
            for &v in acc {
                put_u64(&mut out, v);
            }
            out
        },
        |bytes| {
            let mut r = Reader::new(bytes);
            (0..bytes.len() / 8).map(|_| r.u64()).collect()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::comm::{Single, ThreadRanks};
    use super::*;

    #[test]
    fn a_fold_in_rank_order_is_one_process_folding_in_order() {
        let parts: Vec<f64> = (0..12).map(|i| 1.0 / (i as f64 + 0.3)).collect();
        let serial = parts.iter().fold(0.0, |a, b| a + b);
        let enc = |v: &f64| v.to_le_bytes().to_vec();
        let dec = |b: &[u8]| Ok(f64::from_le_bytes(b.try_into().unwrap()));
        let one = fold_in_rank_order(
            &Single,
            0.0,
            |a| Ok(parts.iter().fold(a, |a, b| a + b)),
            enc,
            dec,
        )
        .unwrap();
        assert_eq!(one.to_bits(), serial.to_bits());
        for size in [2, 3, 5] {
            let group = ThreadRanks::group(size).unwrap();
            let results: Vec<(f64, Vec<u64>)> = std::thread::scope(|s| {
                let hs: Vec<_> = group
                    .iter()
                    .map(|c| {
                        let parts = &parts;
                        s.spawn(move || {
                            let (r, n) = (c.rank(), c.size());
                            let mine = &parts[r * 12 / n..(r + 1) * 12 / n];
                            let sum = fold_in_rank_order(
                                c,
                                0.0,
                                |a| Ok(mine.iter().fold(a, |a, b| a + b)),
                                enc,
                                dec,
                            )
                            .unwrap();
                            (sum, all_gather_u64(c, &[r as u64]).unwrap())
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for (sum, ranks) in results {
                assert_eq!(sum.to_bits(), serial.to_bits());
                assert_eq!(ranks, (0..size as u64).collect::<Vec<_>>());
            }
        }
        assert!(Reader::new(&[1, 2]).u64().is_err());
    }
}
