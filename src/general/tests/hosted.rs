//! Server-hosted games: how they appear (owner 0, flag 8), a whole tic-tac-toe game with an
//! illegal move, owner-only requests refused, the count of joinable games kept, the move timer.

use std::time::Duration;

use super::games::join;
use super::{config, Harness};
use crate::general::tictactoe::{BOARD, MOVE, REFUSED, RESULT};
use crate::general::{GeneralConfig, HostedKind, HostedSpec};
use crate::wire::general::{
    code, ClientRepr, ErrorCode, GameInfo, ServerRepr, Words, GAME_HOSTED, GAME_IN_PROGRESS,
};

fn hosted_config() -> GeneralConfig {
    GeneralConfig {
        hosted: vec![HostedSpec {
            kind: HostedKind::TicTacToe,
            count: 1,
        }],
        ..config()
    }
}

fn table<'a>(id: i32, name: &'a str, flags: u32, players: &'a [i32]) -> ServerRepr<'a> {
    ServerRepr::GameInfo(GameInfo {
        id,
        owner: 0,
        max_players: 2,
        name,
        game_type: "tictactoe",
        version: "1",
        flags,
        players: Words::new(players),
        player_flags: Words::new(&[1, 1][..players.len()]),
    })
}

fn board(cells: [u8; 9], to_move: i32) -> Vec<u8> {
    let mut body = cells.to_vec();
    for id in [1i32, 2, to_move] {
        body.extend_from_slice(&id.to_le_bytes());
    }
    body
}

fn from_game(app_code: u32, body: &[u8]) -> ServerRepr<'_> {
    ServerRepr::GameMessage {
        game: 1,
        from: 0,
        app_code,
        body,
    }
}

fn play(sim: &mut Harness, conn: usize, cell: u8) {
    sim.send(
        conn,
        ClientRepr::ToOwner {
            game: 1,
            app_code: MOVE,
            body: &[cell],
        },
    );
}

#[test]
fn a_whole_tictactoe_game() {
    let mut sim = Harness::new(hosted_config());
    sim.open(1);
    sim.take(1);
    sim.send(
        1,
        ClientRepr::SignIn {
            username: "alice",
            password: "",
            resume: None,
        },
    );
    let sync = sim.take(1);
    assert!(
        super::describe(&sync).contains("owner: 0"),
        "the sync lists the hosted game"
    );
    sim.member(2, "bob");
    sim.member(3, "carol");
    let (open, playing) = (GAME_HOSTED, GAME_HOSTED | GAME_IN_PROGRESS);
    join(&mut sim, 1, 1, 11, "");
    let one = table(1, "tictactoe #1", open, &[1]);
    sim.expect(
        1,
        &[
            ServerRepr::JoinResponse {
                game: 1,
                request: 11,
                accepted: true,
                reason: "",
            },
            one,
        ],
    );
    sim.expect(3, &[one]);
    sim.clear();
    join(&mut sim, 2, 1, 12, "");
    let started = ServerRepr::GameStarted {
        game: 1,
        flags: playing,
    };
    let empty = board([0; 9], 1);
    let both = table(1, "tictactoe #1", playing, &[1, 2]);
    let second = table(2, "tictactoe #2", open, &[]);
    sim.expect(
        2,
        &[
            ServerRepr::JoinResponse {
                game: 1,
                request: 12,
                accepted: true,
                reason: "",
            },
            both,
            started,
            from_game(BOARD, &empty),
            second,
        ],
    );
    sim.expect(1, &[both, started, from_game(BOARD, &empty), second]);
    sim.expect(3, &[both, second]);
    // The lobby's own checks come first; the server is the owner.
    join(&mut sim, 3, 1, 13, "");
    sim.expect(
        3,
        &[ServerRepr::JoinResponse {
            game: 1,
            request: 13,
            accepted: false,
            reason: "game full",
        }],
    );
    sim.send(1, ClientRepr::StartGame { game: 1 });
    sim.expect_error(1, ErrorCode::NotOwner, code::START_GAME);
    sim.send(
        1,
        ClientRepr::ToPlayer {
            game: 1,
            member: 2,
            app_code: MOVE,
            body: &[0],
        },
    );
    sim.expect_error(1, ErrorCode::NotOwner, code::TO_PLAYER);
    // X 4, O tries 4 (refused), O 0, X 2, O 1, X 6: X wins on the diagonal.
    play(&mut sim, 1, 4);
    play(&mut sim, 2, 4);
    sim.expect(
        2,
        &[
            from_game(BOARD, &board([0, 0, 0, 0, 1, 0, 0, 0, 0], 2)),
            from_game(REFUSED, b"cell taken"),
        ],
    );
    sim.take(1);
    play(&mut sim, 2, 0);
    play(&mut sim, 1, 2);
    play(&mut sim, 2, 1);
    sim.clear();
    play(&mut sim, 1, 6);
    let last = board([2, 2, 1, 0, 1, 0, 1, 0, 0], 0);
    let winner = 1i32.to_le_bytes();
    for conn in [1, 2] {
        sim.expect(conn, &[from_game(BOARD, &last), from_game(RESULT, &winner)]);
    }
    sim.expect_none(3);
    // Both leave: the board is cleared, and the surplus open game is closed.
    sim.send(1, ClientRepr::LeaveGame { game: 1 });
    sim.expect(2, &[table(1, "tictactoe #1", playing, &[2])]);
    sim.clear();
    sim.send(2, ClientRepr::LeaveGame { game: 1 });
    sim.expect(
        3,
        &[
            table(1, "tictactoe #1", open, &[]),
            ServerRepr::GameClosed { id: 1 },
        ],
    );
    assert_eq!(sim.lobby.game_count(), 1);
    assert_eq!(sim.lobby.stats().hosted_opened, 2);
}

#[test]
fn a_player_who_does_not_move_loses() {
    let mut sim = Harness::new(hosted_config());
    sim.member(1, "alice");
    sim.member(2, "bob");
    join(&mut sim, 1, 1, 1, "");
    join(&mut sim, 2, 1, 2, "");
    sim.clear();
    sim.advance(Duration::from_secs(59));
    sim.expect_none(1);
    sim.advance(Duration::from_millis(1100));
    let bob_wins = 2i32.to_le_bytes();
    sim.expect(1, &[from_game(RESULT, &bob_wins)]);
    sim.expect(2, &[from_game(RESULT, &bob_wins)]);
}

#[test]
fn hosted_kinds_by_name() {
    assert_eq!(
        HostedKind::from_name("tictactoe"),
        Some(HostedKind::TicTacToe)
    );
    assert_eq!(HostedKind::from_name("chess"), None);
    for kind in HostedKind::ALL {
        assert_eq!(HostedKind::from_name(kind.name()), Some(kind));
    }
}
