//! The message layer of a data-parallel run: a [`Comm`] of `size` ranks exchanging byte
//! messages, with a byte counter for the communication measurements.
//!
//! Three implementations: [`Single`] (one process, nothing to send), [`ThreadRanks`] (ranks
//! as threads of one process, over channels; the tests use it to check that a chain does
//! not depend on the number of ranks without an MPI installation) and, with the cargo
//! feature `mpi`, `MpiComm` over MPI's world communicator.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Ranks `0..size` exchanging byte messages. Messages between one ordered pair of ranks
/// arrive in the order they were sent. Only the thread that made the `Comm` calls it.
pub trait Comm {
    /// This process's rank.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn size(&self) -> usize;

    /// Sends `data` to rank `to`.
    fn send(&self, to: usize, data: &[u8]) -> Result<()>;

    /// Receives the next message from rank `from`.
    fn recv(&self, from: usize) -> Result<Vec<u8>>;

    /// Replaces `data` on every rank with `root`'s `data`. The default sends it from the root
    /// to every other rank; MPI's uses its broadcast tree. Counted as `size - 1` copies sent.
    fn broadcast(&self, root: usize, data: &mut Vec<u8>) -> Result<()> {
        if self.rank() == root {
            for r in (0..self.size()).filter(|&r| r != root) {
                self.send(r, data)?;
            }
        } else {
            *data = self.recv(root)?;
        }
        Ok(())
    }

    /// Bytes this rank has sent so far (a broadcast's root counts every copy).
    fn bytes_sent(&self) -> u64;

    /// Ends every rank of the job at once with `code` (an MPI abort); where there is no other
    /// process to end, returns and lets the caller exit.
    fn abort(&self, code: i32) {
        let _ = code;
    }
}

/// One rank, alone: nothing is ever sent.
#[derive(Debug, Default)]
pub struct Single;

impl Comm for Single {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn send(&self, to: usize, _data: &[u8]) -> Result<()> {
        Err(Error::Usage(format!(
            "a single rank cannot send to rank {to}"
        )))
    }

    fn recv(&self, from: usize) -> Result<Vec<u8>> {
        Err(Error::Usage(format!(
            "a single rank cannot receive from rank {from}"
        )))
    }

    fn bytes_sent(&self) -> u64 {
        0
    }
}

/// One rank of a group of ranks that are threads of one process, linked by channels
/// ([`ThreadRanks::group`]). Messages are copied, as between processes.
#[derive(Debug)]
pub struct ThreadRanks {
    rank: usize,
    to: Vec<Sender<Vec<u8>>>,
    from: Vec<Mutex<Receiver<Vec<u8>>>>,
    sent: AtomicU64,
}

impl ThreadRanks {
    /// `size` linked ranks, one to move into each thread. Errors if `size` is 0.
    pub fn group(size: usize) -> Result<Vec<ThreadRanks>> {
        if size == 0 {
            return Err(Error::param("ranks", 0, "at least 1"));
        }
        // links[a][b] carries messages from a to b.
        let mut senders: Vec<Vec<Option<Sender<Vec<u8>>>>> = vec![Vec::new(); size];
        let mut receivers: Vec<Vec<Option<Receiver<Vec<u8>>>>> = (0..size)
            .map(|_| (0..size).map(|_| None).collect())
            .collect();
        for (a, row) in senders.iter_mut().enumerate() {
            for recv_row in receivers.iter_mut() {
                let (tx, rx) = channel();
                row.push(Some(tx));
                recv_row[a] = Some(rx);
            }
        }
        Ok(senders
            .into_iter()
            .zip(receivers)
            .enumerate()
            .map(|(rank, (tx, rx))| ThreadRanks {
                rank,
                to: tx.into_iter().map(|t| t.expect("made above")).collect(),
                from: rx
                    .into_iter()
                    .map(|r| Mutex::new(r.expect("made above")))
                    .collect(),
                sent: AtomicU64::new(0),
            })
            .collect())
    }
}

impl Comm for ThreadRanks {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.to.len()
    }

    fn send(&self, to: usize, data: &[u8]) -> Result<()> {
        self.sent.fetch_add(data.len() as u64, Ordering::Relaxed);
        self.to[to]
            .send(data.to_vec())
            .map_err(|_| lost(self.rank, to))
    }

    fn recv(&self, from: usize) -> Result<Vec<u8>> {
        self.from[from]
            .lock()
            .map_err(|_| lost(self.rank, from))?
            .recv()
            .map_err(|_| lost(self.rank, from))
    }

    fn bytes_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

fn lost(me: usize, other: usize) -> Error {
    Error::Usage(format!(
        "rank {me}: rank {other} is gone (it stopped with an error or was killed); the job \
         stops, its last checkpoint is intact"
    ))
}

#[cfg(feature = "mpi")]
pub use mpi_impl::MpiComm;

#[cfg(feature = "mpi")]
mod mpi_impl {
    use super::Comm;
    use crate::error::{Error, Result};
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::{Destination, Root, Source};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// MPI's world communicator (MPI is initialised by [`MpiComm::init`] and finalised when
    /// the value is dropped).
    pub struct MpiComm {
        _universe: mpi::environment::Universe,
        world: SimpleCommunicator,
        sent: AtomicU64,
    }

    impl std::fmt::Debug for MpiComm {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "MpiComm(rank {} of {})", self.rank(), self.size())
        }
    }

    impl MpiComm {
        /// Initialises MPI (once per process). Errors if MPI was already initialised.
        pub fn init() -> Result<Self> {
            let universe = mpi::initialize().ok_or_else(|| {
                Error::Usage("MPI could not be initialised (was it initialised twice?)".into())
            })?;
            let world = universe.world();
            Ok(MpiComm {
                _universe: universe,
                world,
                sent: AtomicU64::new(0),
            })
        }
    }

    impl Comm for MpiComm {
        fn rank(&self) -> usize {
            self.world.rank() as usize
        }

        fn size(&self) -> usize {
            self.world.size() as usize
        }

        fn send(&self, to: usize, data: &[u8]) -> Result<()> {
            self.sent.fetch_add(data.len() as u64, Ordering::Relaxed);
            self.world.process_at_rank(to as i32).send(data);
            Ok(())
        }

        fn recv(&self, from: usize) -> Result<Vec<u8>> {
            Ok(self
                .world
                .process_at_rank(from as i32)
                .receive_vec::<u8>()
                .0)
        }

        fn broadcast(&self, root: usize, data: &mut Vec<u8>) -> Result<()> {
            let root_process = self.world.process_at_rank(root as i32);
            let mut len = data.len() as u64;
            root_process.broadcast_into(&mut len);
            if self.rank() == root {
                let copies = (self.size() - 1) as u64;
                self.sent.fetch_add((8 + len) * copies, Ordering::Relaxed);
            } else {
                data.resize(len as usize, 0);
            }
            // MPI refuses the buffer of an empty vector.
            if len > 0 {
                root_process.broadcast_into(&mut data[..]);
            }
            Ok(())
        }

        fn bytes_sent(&self) -> u64 {
            self.sent.load(Ordering::Relaxed)
        }

        fn abort(&self, code: i32) {
            self.world.abort(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ranks_deliver_in_order_and_broadcast() {
        let group = ThreadRanks::group(3).unwrap();
        let out: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = group
                .iter()
                .map(|c| {
                    s.spawn(move || {
                        let mut v = if c.rank() == 1 { vec![7, 8] } else { vec![] };
                        c.broadcast(1, &mut v).unwrap();
                        if c.rank() == 0 {
                            c.send(2, &[1]).unwrap();
                            c.send(2, &[2]).unwrap();
                        }
                        if c.rank() == 2 {
                            v.extend(c.recv(0).unwrap());
                            v.extend(c.recv(0).unwrap());
                        }
                        v
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(out, vec![vec![7, 8], vec![7, 8], vec![7, 8, 1, 2]]);
        assert_eq!(group[1].bytes_sent(), 4);
        assert!(Single.send(0, &[]).is_err());
    }
}
