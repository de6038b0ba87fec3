//! The `nrmm` command-line tool.

mod args;
mod commands;

use clap::Parser;

fn main() {
    let cli = args::Cli::parse();
    if let Err(e) = commands::dispatch(cli.command) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
