//! `wz-list` and `wz-host`: legacy Warzone 2100 browsers and hosts on the master server
//! (docs/protocols/wz-lobby.md, legacy protocol).
//!
//! - `wz-list`: before the clock, `--rooms` games are registered (one host connection each,
//!   spread over the sources, kept open with `keep` so they stay listed). Then each client
//!   connects, sends `list\0` as the 4.x client does, and reads the whole reply as it
//!   streams in: batch 1 (at most 11 games), status 200 + MOTD, the parameters word 1, batch
//!   2 (every game). Each game is checked with the crate's GAMESTRUCT view (version 3 or 4,
//!   a game id, a non-zero dwSize); fewer games than registered is a `short_list` error. The
//!   client then waits for the server to close (the server closes first after a list, so
//!   the TIME_WAIT is its own). Latency: `list\0` written to the last reply byte.
//! - `wz-host`: each client is a host: `gaId\0` (the u32 id), then `addg\0` + a version 4
//!   GAMESTRUCT carrying that id; status 200 is one completed registration (latency from
//!   `gaId` written to the status read). It keeps the game listed for `--hold` ms, then
//!   closes (which delists it) and starts over.
//!
//! Reachability: lobbyd probes a host's game port before listing it, so each host listens on
//! a game port of its own, announces it in its GAMESTRUCT and answers the probe as a 4.x host
//! does ([`super::wz_probe`]). The per-address limits (16 connections that may host,
//! `--wz-max-games-per-ip`, 30 registrations a minute with a burst of 20) are kept by
//! spreading hosts over the run's sources: under caps `wz-list` registers at most
//! `--wz-max-games-per-ip` games per address and `wz-host` takes each cycle's address from a
//! pool that keeps every address within its registration rate and games at once
//! ([`super::fit::source_pool`]).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use lobbyd::wire::wz::{
    parse_game_id, parse_status, Error, GameStruct, GameStructRepr, FIRST_BATCH_MAX,
    GAMESTRUCT_LEN, IGNORE_FIRST_BATCH, MAX_MOTD,
};

use super::fit::games_per_host;
use super::options::Options;
use super::stats::Stats;
use super::tcp_engine::{connect_blocking, Ctx, Script, Step};
use super::wz_probe::{register_answering, GamePort};

/// Status code of a listed game / a good reply.
const OK: u32 = 200;
/// A registered host with nothing to say sends `keep` this often (4.x: every 25 s).
const KEEP_EVERY: Duration = Duration::from_secs(20);
/// Most games a list reply may announce (lobbyd lists at most 200; this only bounds a bad one).
const MAX_LISTED: u32 = 100_000;

/// A version 4 GAMESTRUCT as a 4.x host fills it, carrying `game_id` and its game port.
pub fn host_gamestruct(game_id: u32, game_port: u16) -> [u8; GAMESTRUCT_LEN] {
    let mut repr = GameStructRepr::zeroed(4);
    let put = |field: &mut [u8], text: &[u8]| field[..text.len()].copy_from_slice(text);
    put(&mut repr.name, b"lobby-load");
    put(&mut repr.map_name, b"Rush");
    put(&mut repr.host_name, b"load");
    put(&mut repr.version_string, b"4.3.3");
    repr.dw_size = 72;
    repr.max_players = 4;
    repr.current_players = 1;
    repr.game_version_major = 0x4000;
    repr.game_version_minor = 0x4f;
    repr.game_id = game_id;
    repr.host_port = game_port;
    let mut buf = [0u8; GAMESTRUCT_LEN];
    repr.emit(&mut GameStruct::new_unchecked(&mut buf[..]));
    buf
}

/// `addg\0` + GAMESTRUCT into `out`.
fn push_addg(out: &mut Vec<u8>, game_id: u32, game_port: u16) {
    out.extend_from_slice(b"addg\0");
    out.extend_from_slice(&host_gamestruct(game_id, game_port));
}

fn refused(code: u32) -> &'static str {
    match code {
        403 => "refused_403_version",
        406 => "refused_406_limits",
        408 => "refused_408_unreachable",
        _ => "refused_other_status",
    }
}

/// Registers one game from `source`, blocking (setup, before the clock), its game port
/// answering the reachability probe meanwhile: the open host connection that keeps it listed.
fn register(source: std::net::IpAddr, target: SocketAddr, wait: Duration) -> io::Result<TcpStream> {
    let game_port = std::net::TcpListener::bind(SocketAddr::new(source, 0))?;
    let port = game_port.local_addr()?.port();
    let mut stream = connect_blocking(source, target, wait)?;
    stream.write_all(b"gaId\0")?;
    let mut word = [0u8; 4];
    stream.read_exact(&mut word)?;
    let id = parse_game_id(&word).map_err(|e| io::Error::other(e.as_str()))?;
    let mut out = Vec::with_capacity(5 + GAMESTRUCT_LEN);
    push_addg(&mut out, id, port);
    let (code, motd) = register_answering(&game_port, id, wait, || {
        stream.write_all(&out)?;
        let mut head = [0u8; 8];
        stream.read_exact(&mut head)?;
        let code = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let len = u32::from_be_bytes([head[4], head[5], head[6], head[7]]) as usize;
        let mut motd = vec![0u8; len.min(MAX_MOTD)];
        stream.read_exact(&mut motd)?;
        Ok((code, motd))
    })?;
    if code != OK {
        return Err(io::Error::other(format!(
            "the master server at {target} refused a game from {source} with status {code} \
             ({}): lobbyd's --wz-max-games-per-ip / --wz-max-games must allow --rooms games \
             over the hosts' addresses (--sources)",
            String::from_utf8_lossy(&motd)
        )));
    }
    stream.set_nonblocking(true)?;
    Ok(stream)
}

/// Where a list reply is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Part {
    #[default]
    FirstCount,
    FirstGames(u32),
    Status,
    Motd(usize),
    Parameters,
    Count,
    Games(u32),
    Done,
}

/// One browser: a streaming reader of the list reply that keeps one GAMESTRUCT at most.
#[derive(Debug)]
pub struct Browser {
    sent: Option<Instant>,
    part: Part,
    /// The piece being read: a word, a status header, or a GAMESTRUCT.
    piece: Box<[u8; GAMESTRUCT_LEN]>,
    have: usize,
    first: u32,
    games: u32,
}

impl Default for Browser {
    fn default() -> Browser {
        Browser {
            sent: None,
            part: Part::FirstCount,
            piece: Box::new([0; GAMESTRUCT_LEN]),
            have: 0,
            first: 0,
            games: 0,
        }
    }
}

impl Browser {
    fn want(&self) -> usize {
        match self.part {
            Part::FirstCount | Part::Parameters | Part::Count => 4,
            Part::Status => 8,
            Part::Motd(left) => left,
            Part::FirstGames(_) | Part::Games(_) => GAMESTRUCT_LEN,
            Part::Done => 0,
        }
    }

    fn word(&self) -> u32 {
        u32::from_be_bytes([self.piece[0], self.piece[1], self.piece[2], self.piece[3]])
    }

    /// Checks one listed GAMESTRUCT.
    fn game(&self) -> Result<(), &'static str> {
        let view = GameStruct::new_checked(&self.piece[..]).map_err(Error::as_str)?;
        let repr = GameStructRepr::parse(&view).map_err(Error::as_str)?;
        if repr.game_id == 0 || repr.dw_size == 0 {
            return Err("bad_listed_game");
        }
        Ok(())
    }

    /// The next part once the current piece is complete.
    fn advance(&mut self, expected: u32) -> Result<Part, &'static str> {
        let games = |n: u32, then: Part, each: fn(u32) -> Part| if n == 0 { then } else { each(n) };
        Ok(match self.part {
            Part::FirstCount => {
                self.first = self.word();
                if self.first as usize > FIRST_BATCH_MAX {
                    return Err("first_batch_too_long");
                }
                games(self.first, Part::Status, Part::FirstGames)
            }
            Part::FirstGames(n) => {
                self.game()?;
                games(n - 1, Part::Status, Part::FirstGames)
            }
            Part::Status => {
                // The status header (`u32 code | u32 length`); the MOTD follows.
                let code = self.word();
                let len = u32::from_be_bytes([
                    self.piece[4],
                    self.piece[5],
                    self.piece[6],
                    self.piece[7],
                ]);
                if code != OK {
                    return Err("status_not_200");
                }
                match len as usize {
                    0 => Part::Parameters,
                    len if len <= MAX_MOTD => Part::Motd(len),
                    _ => return Err(Error::MotdTooLong.as_str()),
                }
            }
            Part::Motd(_) => Part::Parameters,
            Part::Parameters if self.word() == IGNORE_FIRST_BATCH => Part::Count,
            Part::Parameters => return Err("bad_parameters"),
            Part::Count => {
                let count = self.word();
                if count > MAX_LISTED || self.first != count.min(FIRST_BATCH_MAX as u32) {
                    return Err("batch_mismatch");
                }
                if count < expected {
                    return Err("short_list");
                }
                self.games = count;
                games(count, Part::Done, Part::Games)
            }
            Part::Games(n) => {
                self.game()?;
                games(n - 1, Part::Done, Part::Games)
            }
            Part::Done => return Err("trailing_bytes"),
        })
    }

    /// Reads `data`; `Ok(true)` once the whole reply is in.
    fn feed(&mut self, mut data: &[u8], expected: u32) -> Result<bool, &'static str> {
        while !data.is_empty() {
            let want = self.want();
            if want == 0 {
                return Err("trailing_bytes");
            }
            let take = (want - self.have).min(data.len());
            if let Part::Motd(_) = self.part {
                // The MOTD is text to show: counted, not kept.
            } else {
                self.piece[self.have..self.have + take].copy_from_slice(&data[..take]);
            }
            self.have += take;
            data = &data[take..];
            if self.have == want {
                self.have = 0;
                self.part = self.advance(expected)?;
            }
        }
        Ok(self.part == Part::Done)
    }
}

/// `wz-list`.
pub struct WzList {
    expected: u32,
    hosts: Vec<TcpStream>,
    next_keep: Instant,
}

impl WzList {
    /// Registers `options.rooms` games (hosts spread over the sources, as many per address as
    /// the caps allow).
    pub fn setup(options: &Options) -> io::Result<WzList> {
        let wait = options.timeout.max(Duration::from_secs(1));
        let per_host = games_per_host(options);
        let hosts = (0..options.rooms)
            .map(|r| register(options.source(r / per_host), options.target, wait))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(WzList {
            expected: options.rooms as u32,
            hosts,
            next_keep: Instant::now() + KEEP_EVERY,
        })
    }
}

impl Script for WzList {
    type Client = Browser;
    // The reader consumes everything it is given.
    const MAX_PENDING: usize = 0;

    fn opened(&mut self, _i: usize, c: &mut Browser, ctx: &mut Ctx<'_>) {
        ctx.out.extend_from_slice(b"list\0");
        c.sent = Some(ctx.now);
    }

    fn received(
        &mut self,
        _i: usize,
        c: &mut Browser,
        data: &[u8],
        ctx: &mut Ctx<'_>,
    ) -> (usize, Step) {
        let was_done = c.part == Part::Done;
        match c.feed(data, self.expected) {
            Err(kind) => (data.len(), Step::Fail(kind)),
            Ok(true) if !was_done => {
                let sent = c.sent.unwrap_or(ctx.now);
                ctx.stats.complete(ctx.now.saturating_duration_since(sent));
                (data.len(), Step::More)
            }
            Ok(_) => (data.len(), Step::More),
        }
    }

    fn eof(&mut self, _i: usize, c: &mut Browser, _ctx: &mut Ctx<'_>) -> Step {
        if c.part == Part::Done {
            Step::Done
        } else {
            Step::Fail("truncated_list")
        }
    }

    fn timed_out(&mut self, _i: usize, c: &mut Browser) -> &'static str {
        if c.part == Part::Done {
            "close"
        } else {
            "list"
        }
    }

    fn chores(&mut self, now: Instant) {
        if now < self.next_keep {
            return;
        }
        self.next_keep = now + KEEP_EVERY;
        for host in &mut self.hosts {
            // Best effort: lobbyd never answers `keep`; a lost one is sent again later.
            let _ = host.write(b"keep\0");
        }
    }

    fn finish(&mut self, stats: &mut Stats) {
        stats.set("games_listed", u64::from(self.expected));
    }
}

/// Where one `wz-host` client is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostStep {
    /// `gaId` sent, waiting for the id.
    #[default]
    GameId,
    /// `addg` sent, waiting for the status.
    Status,
    /// Listed, holding the game.
    Listed,
}

/// One host.
#[derive(Debug, Default)]
pub struct Host {
    sent: Option<Instant>,
    step: HostStep,
    /// The id `gaId` gave.
    game_id: u32,
    /// Its game port, answering the probe, and the port number.
    port: Option<(GamePort, u16)>,
    /// When a listed game's hold ends.
    hold_until: Option<Instant>,
}

/// `wz-host`.
pub struct WzHost {
    hold: Duration,
}

impl WzHost {
    /// The script; each host keeps its game listed for `options.hold`.
    pub fn new(options: &Options) -> WzHost {
        WzHost { hold: options.hold }
    }
}

impl Script for WzHost {
    type Client = Host;
    const MAX_PENDING: usize = 8 + MAX_MOTD;

    fn opened(&mut self, _i: usize, c: &mut Host, ctx: &mut Ctx<'_>) {
        // A port that cannot be opened fails the cycle when the id comes.
        c.port = GamePort::open(ctx.source, ctx.registry, ctx.aux_token).ok();
        ctx.out.extend_from_slice(b"gaId\0");
        c.sent = Some(ctx.now);
    }

    fn received(
        &mut self,
        _i: usize,
        c: &mut Host,
        data: &[u8],
        ctx: &mut Ctx<'_>,
    ) -> (usize, Step) {
        let mut used = 0;
        loop {
            let rest = data.get(used..).unwrap_or(&[]);
            if rest.is_empty() {
                return (used, Step::More);
            }
            match c.step {
                HostStep::GameId => match parse_game_id(rest) {
                    Err(_) => return (used, Step::More),
                    Ok(0) => return (used, Step::Fail("zero_game_id")),
                    Ok(id) => {
                        used += 4;
                        let Some((_, port)) = c.port else {
                            return (used, Step::Fail("game_port_bind_failed"));
                        };
                        c.game_id = id;
                        push_addg(ctx.out, id, port);
                        c.step = HostStep::Status;
                    }
                },
                HostStep::Status => match parse_status(rest) {
                    Err(Error::Truncated) => return (used, Step::More),
                    Err(e) => return (used, Step::Fail(e.as_str())),
                    Ok((code, _, _)) if code != OK => {
                        return (data.len(), Step::Fail(refused(code)))
                    }
                    Ok((_, _, end)) => {
                        let sent = c.sent.unwrap_or(ctx.now);
                        ctx.stats.complete(ctx.now.saturating_duration_since(sent));
                        c.step = HostStep::Listed;
                        // Probed (the status comes after the probe's verdict): the port is done.
                        c.port = None;
                        c.hold_until = Some(ctx.now + self.hold);
                        // `--hold 0` ends the cycle now: a zero sleep would wait for the
                        // engine's next 10 ms sweep and cap the rate at the tool, not lobbyd.
                        let step = if rest.len() > end {
                            Step::Fail("unexpected_bytes")
                        } else if self.hold.is_zero() {
                            Step::Done
                        } else {
                            Step::Sleep(self.hold)
                        };
                        return (used + end, step);
                    }
                },
                HostStep::Listed => return (data.len(), Step::Fail("unexpected_bytes")),
            }
        }
    }

    fn aux_ready(&mut self, _i: usize, c: &mut Host, ctx: &mut Ctx<'_>) -> Step {
        if let Some((port, _)) = c.port.as_mut() {
            if let Err(kind) = port.ready(ctx.registry, ctx.aux_token, c.game_id) {
                return Step::Fail(kind);
            }
        }
        // What the host was doing: holding its listed game, or waiting for its status.
        match c.hold_until {
            Some(until) => Step::Sleep(until.saturating_duration_since(ctx.now)),
            None => Step::More,
        }
    }

    fn timed_out(&mut self, _i: usize, c: &mut Host) -> &'static str {
        match c.step {
            HostStep::GameId => "game_id",
            HostStep::Status | HostStep::Listed => "status",
        }
    }
}
