//! `nrmm tree`: build and export an IBHC or BHC forest.

use crate::args::{TreeArgs, TreeFormat};
use crate::output;
use nrmm::kernel::ConjugateKernel;
use nrmm::model::Model;
use nrmm::rng::SeedPlan;
use nrmm::run::record::Builtin;
use nrmm::sampler::RngChooser;
use nrmm::tree::{Forest, IbhcMode, NewickInfo};
use nrmm::{with_kernel, Error, Result};

/// How `nrmm tree` builds the forest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Build {
    Ibhc(IbhcMode),
    Greedy,
}

/// `nrmm tree`: builds the forest of the data under the model (hyperparameters at their
/// initial values) and writes it as DOT or Newick; a one-line summary goes to standard error
/// when the forest is written to a file.
pub fn tree(a: TreeArgs) -> Result<()> {
    if a.ln_d && a.tree_format != TreeFormat::Newick {
        return Err(Error::Usage(
            "--ln-d labels Newick exports; DOT labels every internal node with its ln d already"
                .into(),
        ));
    }
    let build = if a.noisy {
        Build::Ibhc(IbhcMode::Noisy)
    } else if a.greedy {
        Build::Greedy
    } else {
        Build::Ibhc(IbhcMode::Exact)
    };
    let Model { kernel, prior, .. } = crate::common::build(&a.data, &a.model, Builtin::Toy)?;
    let (text, n_trees, n) = with_kernel!(&kernel, |k| {
        let forest = match build {
            Build::Ibhc(mode) => {
                let mut rng = SeedPlan::new(a.seed).chain(0);
                Forest::ibhc(k, &prior, mode, &mut RngChooser::new(&mut rng))?
            }
            Build::Greedy => Forest::greedy_bhc(k, &prior)?,
        };
        let text = match a.tree_format {
            TreeFormat::Dot => forest.to_dot(),
            TreeFormat::Newick => forest.to_newick(if a.ln_d {
                NewickInfo::LnD
            } else {
                NewickInfo::Topology
            }),
        };
        Ok::<_, Error>((text, forest.n_roots(), k.n_points()))
    })?;
    match &a.out {
        Some(path) => {
            nrmm::run::write_atomic(path, text.as_bytes())?;
            output::stdout(|out| {
                writeln!(
                    out,
                    "wrote {n_trees} trees over {n} points to {}",
                    path.display()
                )
            })
        }
        None => output::stdout(|out| write!(out, "{text}")),
    }
}
