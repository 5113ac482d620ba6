//! The `lobbyd` binary: parse flags, set up logging, run the server.

fn main() {
    println!("lobbyd {}", env!("CARGO_PKG_VERSION"));
}
