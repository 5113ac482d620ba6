//! The load generator behind the `lobby-load` binary: a single-threaded mio client that
//! drives lobbyd's protocols (and a raw UDP echo baseline) and measures what it gets back.
//!
//! It is a client, a crate apart from the server: the server never imports it, and it uses
//! of the server only what a client needs (the wire formats, the default limits of
//! `lobbyd::config` and `lobbyd::wz`, and the driver's `net::io::wake` timerfd alarm,
//! `net::io::batch` `recvmmsg` reads and `net::io::rx_time` kernel receive timestamps). Every message
//! it sends is built, and every reply checked, with lobbyd's own [`lobbyd::wire`] modules, so
//! a load run also checks that the server keeps the wire contract under load.
//!
//! - [`options`]: the [`Mode`] and the validated [`Options`] of a run; [`args`]: the command
//!   line (getopts) into them;
//! - [`runner`]: the poll loop shared by every mode, the open-loop [`runner::Pacer`], the
//!   progress line each second; it stops by itself at `--duration` or `--requests`;
//! - [`stats`] and [`histogram`]: counters, errors and timeouts by kind, latency
//!   percentiles, the text and JSON summaries;
//! - [`sources`]: target and source address policy (loopback only unless `--allow-remote`),
//!   and the blocks of loopback addresses a run spreads over by default;
//! - [`caps`] and [`fit`]: lobbyd's default per-address limits, the budgets that keep each
//!   source address within them, and the one line saying what a run adjusted, so every mode
//!   works against `make run` with no flags (`--caps off` for a server with raised limits);
//! - [`setup`]: blocking room creation and joins before the clock starts;
//! - one module per family of modes: [`udp_rr`] (the request/reply engine over UDP) with
//!   [`udp_modes`] (`udp-list`, `udp-create-join`, `echo`) and [`echo_server`]; [`relay`];
//!   [`tcp_engine`] (connection-per-cycle clients over TCP) with [`tcp_modes`] (`tcp-join`,
//!   `tcp-idle`), [`tcp_upstream`] (`tcp-join --dialect upstream`), [`tcp_cycle`] (`tcp-cycle`), [`wz_modes`] (`wz-list`, `wz-host`, their game
//!   ports answering lobbyd's reachability probe in [`wz_probe`]) and
//!   [`general_modes`] (`lobby-join`, `lobby-idle`); [`general_chat`] (`lobby-chat`), both
//!   over [`general_client`] (frames, usernames, the sign-in);
//!   [`hostile`] (`hostile-udp`, `hostile-tcp`, `hostile-wz`, `hostile-lobby`, `hostile-http`:
//!   attackers, for `scripts/hostile.sh`); [`start_rounds`] (`tcp-cycle --spread`);
//!   [`write_floor`] (`write-floor`, the kernel's time to write one countdown tick).

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod args;
pub mod caps;
pub mod dialect;
pub mod echo_server;
pub mod fit;
pub mod general_chat;
pub mod general_client;
pub mod general_modes;
pub mod histogram;
pub mod hostile;
pub mod options;
pub mod relay;
pub mod runner;
pub mod setup;
pub mod sources;
pub mod start_rounds;
pub mod stats;
pub mod tcp_cycle;
pub mod tcp_engine;
pub mod tcp_modes;
pub mod tcp_probe;
pub mod tcp_upstream;
pub mod udp_modes;
pub mod udp_rr;
pub mod write_floor;
pub mod ws;
pub mod wz_modes;
pub mod wz_probe;

use std::time::Duration;

pub use caps::Caps;
pub use options::{Mode, Options, TcpDialect};
pub use stats::Summary;

/// Runs one load test and returns its summary. The options are first [`fit::fit`] to the
/// server (the line saying what changed goes to `progress`, quiet or not), progress lines
/// follow (unless `quiet`); the run stops by itself after `duration` or `max_requests`.
pub fn run(options: &Options, progress: &mut dyn std::io::Write) -> std::io::Result<Summary> {
    let fitted = fit_to_conn_rate(options, fit::fit(options));
    if let Some(note) = &fitted.note {
        writeln!(progress, "lobby-load: {note}")?;
    }
    let mut summary = run_fitted(&fitted.options, progress)?;
    summary.adjusted = fitted.note;
    Ok(summary)
}

/// A connection mode fitted to lobbyd's default `--conn-rate` is fitted again without that
/// pacing when the server welcomes more connections in a row than the default allows
/// ([`tcp_probe`]); the note says so.
fn fit_to_conn_rate(given: &Options, fitted: fit::Fitted) -> fit::Fitted {
    let Some(caps) = given.caps.as_ref() else {
        return fitted;
    };
    if !matches!(given.mode, Mode::TcpJoin | Mode::TcpIdle | Mode::TcpCycle) {
        return fitted;
    }
    let Some(source) = tcp_probe::probe_source(given.target, &fitted.options.sources) else {
        return fitted;
    };
    let count = usize::try_from(caps.conn_rate)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    let wait = given.timeout.min(Duration::from_secs(2));
    match tcp_probe::welcomed_in_a_row(source, given.target, count, wait) {
        Ok(welcomed) if welcomed == count => {}
        _ => return fitted,
    }
    let mut raised = given.clone();
    if let Some(caps) = raised.caps.as_mut() {
        caps.conn_rate = fit::RAISED_CONN_RATE;
    }
    let mut refitted = fit::fit(&raised);
    let probe = format!(
        "lobbyd welcomed {count} connections in a row from {source}, more than its default \
         --conn-rate allows: connections are not paced by it"
    );
    refitted.note = Some(match refitted.note.take() {
        Some(note) => format!("{note}; {probe}"),
        None => probe,
    });
    refitted
}

fn run_fitted(options: &Options, progress: &mut dyn std::io::Write) -> std::io::Result<Summary> {
    match options.mode {
        Mode::UdpList => udp_rr::run_exchange(
            options,
            options.target.to_string(),
            udp_modes::ListRooms::setup(options)?,
            progress,
        ),
        Mode::UdpCreateJoin => udp_rr::run_exchange(
            options,
            options.target.to_string(),
            udp_modes::CreateJoin::new(options),
            progress,
        ),
        Mode::Echo => {
            let echo = udp_modes::Echo::start(options)?;
            let kind = if options.blocking { "blocking " } else { "" };
            let target = format!("{kind}echo server {}", echo.addr());
            udp_rr::run_exchange(options, target, echo, progress)
        }
        Mode::Relay => relay::run(options, progress),
        Mode::TcpJoin if options.tcp_dialect == TcpDialect::Upstream => run_tcp(
            options,
            tcp_upstream::UpstreamJoin,
            options.concurrency,
            progress,
        ),
        Mode::TcpJoin => run_tcp(
            options,
            tcp_modes::LobbyJoin::new(false, options.concurrency, None),
            options.concurrency,
            progress,
        ),
        Mode::TcpIdle => run_tcp(
            options,
            tcp_modes::LobbyJoin::new(true, options.concurrency, keepalive(options)),
            tcp_modes::IDLE_RAMP,
            progress,
        ),
        Mode::TcpCycle => run_tcp(
            options,
            tcp_cycle::Cycle::new(options),
            options.concurrency,
            progress,
        ),
        Mode::WzList => run_tcp(
            options,
            wz_modes::WzList::setup(options)?,
            options.concurrency,
            progress,
        ),
        Mode::WzHost => run_tcp(
            options,
            wz_modes::WzHost::new(options),
            options.concurrency,
            progress,
        ),
        Mode::LobbyJoin => run_tcp(
            options,
            general_modes::GeneralJoin::new(
                false,
                options.concurrency,
                options.hold,
                resumes(options),
                None,
            ),
            options.concurrency,
            progress,
        ),
        Mode::LobbyIdle => run_tcp(
            options,
            general_modes::GeneralJoin::new(
                true,
                options.concurrency,
                options.hold,
                false,
                keepalive(options),
            ),
            tcp_modes::IDLE_RAMP,
            progress,
        ),
        Mode::LobbyChat => general_chat::run(options, progress),
        Mode::HostileUdp
        | Mode::HostileTcp
        | Mode::HostileWz
        | Mode::HostileLobby
        | Mode::HostileHttp => hostile::run(options, progress),
        Mode::WriteFloor => write_floor::run(options, progress),
    }
}

/// How often a held connection shows it is alive: under caps, a third of lobbyd's default
/// `--idle-timeout`; without, never (the server's is raised past the run).
fn keepalive(options: &Options) -> Option<Duration> {
    options.caps.as_ref().map(Caps::keepalive)
}

/// Whether `lobby-join` clients resume their member: under caps, when lobbyd's default
/// `--lobby-resume-grace` would keep each closed one away.
fn resumes(options: &Options) -> bool {
    options
        .caps
        .as_ref()
        .is_some_and(|caps| !caps.resume_grace.is_zero())
}

/// Runs a TCP script with at most `ramp` clients busy at once (closed loop).
fn run_tcp<S: tcp_engine::Script>(
    options: &Options,
    script: S,
    ramp: usize,
    progress: &mut dyn std::io::Write,
) -> std::io::Result<Summary> {
    let poll = mio::Poll::new()?;
    let mut engine = tcp_engine::TcpEngine::new(options, script, ramp);
    runner::drive(
        options,
        options.target.to_string(),
        poll,
        &mut engine,
        progress,
    )
}
