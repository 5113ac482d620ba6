//! The `lobbyd` binary: parse flags, set up logging, run the server.
//!
//! Deliberately thin: all validation lives in [`lobbyd::config`], all serving in the
//! library. This file only maps a [`CliCommand`] to process output and an exit code.

use std::io::IsTerminal;
use std::process::ExitCode;

use lobbyd::config::{parse_args, CliCommand, Config};

fn main() -> ExitCode {
    // `lobbyd user add|del|list ...`: account administration, not the server.
    // Lossy conversion: a non-UTF-8 argument becomes a usage error, not a panic.
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if argv.first().map(String::as_str) == Some("user") {
        let stdin = std::io::stdin();
        let is_tty = stdin.is_terminal();
        let code = lobbyd::cli_user::run_user_command(
            &argv[1..],
            stdin.lock(),
            std::io::stdout(),
            std::io::stderr(),
            is_tty,
        );
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    match parse_args(argv) {
        Ok(CliCommand::Help(text)) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Ok(CliCommand::Version(line)) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("lobbyd: {err}");
            eprintln!("Try 'lobbyd --help' for more information.");
            ExitCode::from(2)
        }
        Ok(CliCommand::Run(config)) => {
            // Rooms the descriptor limit cannot hold: refused before anything binds.
            let limit = lobbyd::net::fd_table::open_file_limit();
            if let Err(err) = lobbyd::net::fd_table::check_descriptor_limit(&config, limit) {
                eprintln!("lobbyd: {err}");
                return ExitCode::from(2);
            }
            init_logging(config.log.as_deref());
            log::info!("lobbyd {} starting", env!("CARGO_PKG_VERSION"));
            for line in config.summary() {
                log::info!("{line}");
            }
            run_server(config)
        }
    }
}

/// `--log` wins; without it `RUST_LOG` decides, falling back to info.
fn init_logging(level: Option<&str>) {
    let mut builder = match level {
        Some(level) => {
            let mut builder = env_logger::Builder::new();
            builder.parse_filters(level);
            builder
        }
        None => env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")),
    };
    builder.format_timestamp_millis().init();
}

/// Runs the server until shutdown; an I/O error at bind or in the loop exits 1.
fn run_server(config: Box<Config>) -> ExitCode {
    match lobbyd::net::run(&config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One plain line, whatever the log level: a start-up error (a port in use, a
            // missing file or directory) must reach the operator as is.
            eprintln!("lobbyd: {e}");
            ExitCode::from(1)
        }
    }
}
