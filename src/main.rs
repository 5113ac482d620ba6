//! The `lobbyd` binary: parse flags, set up logging, run the server.

use std::io::IsTerminal;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(("user", rest)) = args
        .split_first()
        .map(|(first, rest)| (first.as_str(), rest))
    {
        let stdin = std::io::stdin();
        let is_tty = stdin.is_terminal();
        std::process::exit(lobbyd::cli_user::run_user_command(
            rest,
            stdin.lock(),
            std::io::stdout(),
            std::io::stderr(),
            is_tty,
        ));
    }
    println!("lobbyd {}", env!("CARGO_PKG_VERSION"));
}
