//! `nrmm plot`: the plots of runs written as SVG files ([`nrmm::run::svg`]).

use crate::args::PlotArgs;
use crate::output;
use nrmm::run::RunDir;
use nrmm::Result;

/// `nrmm plot`.
pub fn plot(a: PlotArgs) -> Result<()> {
    let runs = RunDir::resolve(&a.dirs)?;
    let out = a.out.clone().unwrap_or_else(|| a.dirs[0].clone());
    let (written, notes) = nrmm::run::svg::draw(&runs, &out)?;
    output::stdout(|o| {
        for p in &written {
            writeln!(o, "wrote {}", p.display())?;
        }
        for n in &notes {
            writeln!(o, "note: {n}")?;
        }
        Ok(())
    })
}
