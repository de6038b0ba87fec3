//! Data-parallel runs of the exact sub-cluster sampler across processes (MPI ranks with the
//! cargo feature `mpi`, or threads for tests).
//!
//! Each rank holds only its share of the points ([`layout`]): a row range of one file, or one
//! file per rank. Cluster moments are combined by reductions in a fixed order, every rank
//! draws the chain's global quantities from the same stream, rank 0's split/merge decisions
//! are broadcast, and per-point draws come from streams keyed by the point's global position,
//! so the chain is the same, bit for bit, for any number of ranks and threads
//! ([`sampler`]). [`run`] adds traces, one labels file, checkpoints (each rank its share, one
//! manifest) and a stop any rank can ask for.
//!
//! - [`comm`]: the message layer ([`Comm`]; [`Single`], [`ThreadRanks`], `MpiComm`).
//! - [`wire`]: byte encoding and the fold in rank order all reductions use.
//! - [`layout`]: which points each rank holds, reading a rank's share.
//! - [`sampler`]: [`DataParallel`], the sampler.
//! - [`run`]: [`run()`](run::run), the chain with its outputs.
//! - [`request`]: which settings of an ordinary run it honours, and the refusal of the others.

pub mod comm;
pub mod layout;
pub mod request;
pub mod run;
pub mod sampler;
pub mod wire;

pub use comm::{Comm, Single, ThreadRanks};
pub use layout::{read_share, Layout, Source};
pub use run::{RunConfig, RunReport};
pub use sampler::{DataParallel, Shard, ShardKernel, SweepInfo};

#[cfg(feature = "mpi")]
pub use comm::MpiComm;

#[cfg(test)]
mod tests;
