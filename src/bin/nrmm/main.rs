//! The `nrmm` command-line tool.
//!
//! Every failure ends as one line on standard error, `error: ...`, and a non-zero exit status:
//! 2 for a malformed command line (clap's multi-line report folded into one line), 1 when a
//! verb fails. A run stopped by Ctrl-C says on one line what it left and how to resume, and
//! exits with 130. Results go to standard output and files; progress bars, drawn only on a
//! terminal, to standard error.

mod args;
mod commands;
mod common;
mod compare;
mod data_parallel;
mod interrupt;
mod output;
mod plot;
mod predict;
mod run_verb;
mod sva_cmd;
mod tree_cmd;

use args::Command;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use common::Status;
use nrmm::Result;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return command_line_error(&e),
    };
    match dispatch(cli.command) {
        Ok(Status::Done) => ExitCode::SUCCESS,
        Ok(Status::Interrupted) => ExitCode::from(interrupt::INTERRUPTED_STATUS),
        Err(e) => {
            output::report_error(&e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// Runs one verb.
pub fn dispatch(command: Command) -> Result<Status> {
    let done = |r: Result<()>| r.map(|()| Status::Done);
    match command {
        Command::Loglik(a) => done(commands::loglik(a)),
        Command::Exact(a) => done(commands::exact(a)),
        Command::Generate(a) => done(commands::generate(a)),
        Command::Run(a) => run_verb::run(a),
        Command::CheckExact(a) => done(commands::check_exact(a)),
        Command::Diagnose(a) => done(run_verb::diagnose(a)),
        Command::Predict(a) => done(predict::predict(a)),
        Command::Impute(a) => done(predict::impute(a)),
        Command::Compare(a) => compare::compare(a),
        Command::Plot(a) => done(plot::plot(a)),
        Command::Tree(a) => done(tree_cmd::tree(a)),
        Command::Sva(a) => done(sva_cmd::sva(a)),
    }
}

/// Exit status of a malformed command line (clap's convention).
const USAGE_STATUS: u8 = 2;

/// Handles what `clap` stopped parsing for: help and version requests are printed as asked;
/// every real mistake becomes one line naming the flag or verb and what was expected.
fn command_line_error(e: &clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Asked for: printed to standard output. A closed pipe loses nothing worth an error.
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            output::report_error(&format!(
                "no verb given: expected one of {} (nrmm --help describes them)",
                verbs()
            ));
            ExitCode::from(USAGE_STATUS)
        }
        ErrorKind::InvalidSubcommand => {
            output::report_error(&format!("{}; expected one of {}", clap_message(e), verbs()));
            ExitCode::from(USAGE_STATUS)
        }
        _ => {
            output::report_error(&clap_message(e));
            ExitCode::from(USAGE_STATUS)
        }
    }
}

/// The verbs, comma-separated, as the parser knows them.
fn verbs() -> String {
    args::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name())
        .filter(|&name| name != "help")
        .collect::<Vec<_>>()
        .join(", ")
}

/// Clap's report without its `error:` prefix, usage block and `--help` hint, folded onto one
/// line; a "tip" is kept after a semicolon.
fn clap_message(e: &clap::Error) -> String {
    // `StyledStr`'s `Display` drops the terminal styling.
    let rendered = e.render().to_string();
    let mut message = String::new();
    for line in rendered.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("Usage:") || line.starts_with("For more information")
        {
            continue;
        }
        let line = line.strip_prefix("error:").map_or(line, str::trim_start);
        if !message.is_empty() {
            message.push_str(if line.starts_with("tip:") { "; " } else { " " });
        }
        message.push_str(line);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_error(args: &[&str]) -> clap::Error {
        args::Cli::try_parse_from(args).expect_err("the command line is malformed")
    }

    #[test]
    fn clap_errors_fold_onto_one_line() {
        let e = parse_error(&["nrmm", "generate", "gaussian", "--n", "5"]);
        let m = clap_message(&e);
        assert!(!m.contains('\n'), "{m}");
        assert!(
            m.contains("--d") && m.contains("--seed") && m.contains("--out"),
            "{m}"
        );
        assert!(!m.starts_with("error"), "{m}");
        assert!(!m.contains("Usage"), "{m}");
    }

    #[test]
    fn tips_are_kept_after_a_semicolon() {
        let e = parse_error(&["nrmm", "run", "--out", "x", "--sampler", "gibs"]);
        let m = clap_message(&e);
        assert!(m.contains("possible values: gibbs, jain-neal, sams"), "{m}");
        let e = parse_error(&["nrmm", "compare", "--out", "x", "--samplers", "gibbs,sam"]);
        let m = clap_message(&e);
        assert!(
            m.contains("'sam'") && m.contains("gibbs, jain-neal, sams"),
            "{m}"
        );
        assert!(m.contains("; tip:"), "{m}");
    }

    #[test]
    fn verbs_lists_every_subcommand_but_help() {
        assert_eq!(
            verbs(),
            "loglik, exact, generate, run, check-exact, diagnose, predict, impute, compare, plot, tree, sva"
        );
    }
}
