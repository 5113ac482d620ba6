//! `lobby-load`: the load generator (see [`lobby_load`]).
//!
//! Thin on purpose: parse the command line, run one bounded load test, print the summary
//! (text, or JSON with `--json`) on stdout, and on stderr the line saying what the run
//! adjusted to lobbyd's default limits and the progress line. Exit 0 when the run completed
//! requests with failures (errors and timeouts) within `--max-failures`, 1 otherwise (the
//! last stderr line says why), 2 for a usage error, 3 when the run could not start (bind,
//! setup refused).

use std::io::IsTerminal;
use std::process::ExitCode;

use lobby_load::args::{parse, LoadCommand};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut options = match parse(&argv) {
        Ok(LoadCommand::Help(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(LoadCommand::Run(options)) => options,
        Err(reason) => {
            eprintln!("lobby-load: {reason}");
            eprintln!("Try 'lobby-load --help' for more information.");
            return ExitCode::from(2);
        }
    };
    options.tty = std::io::stderr().is_terminal();
    let summary = match lobby_load::run(&options, &mut std::io::stderr()) {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("lobby-load: {}: {e}", options.mode.name());
            return ExitCode::from(3);
        }
    };
    if options.json {
        println!("{}", summary.to_json());
    } else {
        print!("{}", summary.to_text());
    }
    match summary.shortfall(options.max_failures) {
        None => ExitCode::SUCCESS,
        Some(why) => {
            eprintln!("lobby-load: {}: {why}", options.mode.name());
            ExitCode::from(1)
        }
    }
}
