//! `lobby-load`: the load generator (see [`lobbyd::load`]).
//!
//! Thin on purpose: parse the command line, run one bounded load test, print the summary
//! (text, or JSON with `--json`) on stdout and the progress lines on stderr. Exit 0 when
//! every request was answered correctly, 1 when some failed or timed out (the summary says
//! which), 2 for a usage error, 3 when the run could not start (bind, setup refused).

use std::process::ExitCode;

use lobbyd::load::args::{parse, Command};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let options = match parse(&argv) {
        Ok(Command::Help(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Run(options)) => options,
        Err(reason) => {
            eprintln!("lobby-load: {reason}");
            eprintln!("Try 'lobby-load --help' for more information.");
            return ExitCode::from(2);
        }
    };
    let summary = match lobbyd::load::run(&options, &mut std::io::stderr()) {
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
    if summary.failures() == 0 && summary.completed > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
