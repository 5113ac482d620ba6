//! Measures one argon2id password verification with lobbyd's parameters (m = 19 MiB, t = 2,
//! p = 1), the work a v4 `login` puts on the password worker thread.
//!
//! `cargo run --release --example argon2_verify [ROUNDS]` prints the mean, minimum and
//! maximum of ROUNDS (default 20) verifications.

use std::time::{Duration, Instant};

use lobbyd::accounts::store::{hash_password, verify_password};

fn main() {
    let rounds: u32 = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(20);
    let hash = match hash_password("correct horse battery staple") {
        Ok(hash) => hash,
        Err(e) => {
            eprintln!("argon2_verify: {e}");
            std::process::exit(1);
        }
    };
    let mut times = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        let ok = verify_password(&hash, "correct horse battery staple");
        times.push(start.elapsed());
        assert!(ok, "the password verifies");
    }
    let total: Duration = times.iter().sum();
    let min = times.iter().min().copied().unwrap_or_default();
    let max = times.iter().max().copied().unwrap_or_default();
    println!(
        "argon2id verify ({hash_params}): {rounds} rounds, mean {:.1} ms, min {:.1} ms, max {:.1} ms",
        total.as_secs_f64() * 1000.0 / f64::from(rounds),
        min.as_secs_f64() * 1000.0,
        max.as_secs_f64() * 1000.0,
        hash_params = hash.split('$').nth(3).unwrap_or("?"),
    );
}
