//! A server-hosted tic-tac-toe game over loopback (docs/protocols/general-lobby.md,
//! "Server-hosted games", "tictactoe"): joining decided by the game type, the board after every
//! move to both players from member 0, illegal moves refused to the mover, the winner
//! announced, the game reset and the spare one closed once both players leave.

use lobbyd::general::{HostedKind, HostedSpec};
use lobbyd::wire::general::{code, ClientRepr, ErrorCode, ServerRepr};

use super::client::*;
use crate::common::snapshot;

const BOARD: u32 = 2;
const REFUSED: u32 = 3;
const RESULT: u32 = 4;

/// BOARD's body: the cells (0 empty, 1 X, 2 O), X, O and who is to move (0: nobody).
fn board(cells: [u8; 9], x: i32, o: i32, to_move: i32) -> Vec<u8> {
    let mut body = cells.to_vec();
    for id in [x, o, to_move] {
        body.extend_from_slice(&id.to_le_bytes());
    }
    body
}

/// Every byte a move may carry, and one past: moves borrow their body from here.
const CELLS: [u8; 10] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

/// A MOVE of X or O: TO_OWNER(game 1, app code 1, cell).
fn play(cell: usize) -> ClientRepr<'static> {
    ClientRepr::ToOwner {
        game: 1,
        app_code: 1,
        body: &CELLS[cell..=cell],
    }
}

fn refused(reason: &str) -> ServerRepr<'_> {
    game_message(1, 0, REFUSED, reason.as_bytes())
}

#[test]
fn a_full_tictactoe_game_with_illegal_moves() {
    let (server, addr) = start_lobby(|c| {
        c.general.core.hosted = vec![HostedSpec {
            kind: HostedKind::TicTacToe,
            count: 1,
        }];
    });
    let mut ttt = Game::tictactoe(1, "tictactoe #1");
    let mut alice = Client::greeted(addr);
    alice.sign_in("alice", "", None);
    alice.expect_own_info();
    alice.expect(&ttt.info());
    alice.expect(&ServerRepr::SyncDone);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut carol = Client::enter(addr, "carol", &mut [&mut alice, &mut bob]);
    let (x, o) = (alice.id, bob.id);

    // The game type decides joins; the second player starts the game.
    alice.send(join_request(1, 1, ""));
    alice.expect(&join_response(1, 1, true, ""));
    ttt.seat(x);
    expect_all(&mut [&mut alice, &mut bob, &mut carol], &ttt.info());
    bob.send(join_request(1, 2, ""));
    bob.expect(&join_response(1, 2, true, ""));
    ttt.seat(o);
    ttt.flags = 8 | 4;
    let spare = Game::tictactoe(2, "tictactoe #2");
    let empty = board([0; 9], x, o, x);
    for player in [&mut alice, &mut bob] {
        player.expect(&ttt.info());
        player.expect(&ServerRepr::GameStarted { game: 1, flags: 12 });
        player.expect(&game_message(1, 0, BOARD, &empty));
        player.expect(&spare.info());
    }
    carol.expect(&ttt.info());
    carol.expect(&spare.info());
    carol.send(join_request(1, 3, ""));
    carol.expect(&join_response(1, 3, false, "game full"));

    // X: 0, O: 3, X: 1, O: 4, X: 2 wins the top row; illegal tries in between.
    alice.send(play(0));
    let after = board([1, 0, 0, 0, 0, 0, 0, 0, 0], x, o, o);
    expect_all(
        &mut [&mut alice, &mut bob],
        &game_message(1, 0, BOARD, &after),
    );
    bob.send(play(0));
    bob.expect(&refused("cell taken"));
    alice.send(play(4));
    alice.expect(&refused("not your turn"));
    bob.send(play(9));
    bob.expect(&refused("a move is one byte, a cell 0 to 8"));
    bob.send(ClientRepr::ToOwner {
        game: 1,
        app_code: 5,
        body: &[3],
    });
    bob.expect(&refused("unknown message: moves are app code 1"));
    for (mover, cell, cells, next) in [
        (o, 3, [1, 0, 0, 2, 0, 0, 0, 0, 0], x),
        (x, 1, [1, 1, 0, 2, 0, 0, 0, 0, 0], o),
        (o, 4, [1, 1, 0, 2, 2, 0, 0, 0, 0], x),
        (x, 2, [1, 1, 1, 2, 2, 0, 0, 0, 0], 0),
    ] {
        let player = if mover == x { &mut alice } else { &mut bob };
        player.send(play(cell));
        expect_all(
            &mut [&mut alice, &mut bob],
            &game_message(1, 0, BOARD, &board(cells, x, o, next)),
        );
    }
    expect_all(
        &mut [&mut alice, &mut bob],
        &game_message(1, 0, RESULT, &x.to_le_bytes()),
    );
    bob.send(play(5));
    bob.expect(&refused("no game in progress"));
    carol.send(play(5));
    carol.expect_error(
        ErrorCode::NotInGame,
        code::TO_OWNER,
        "not a player of this game",
    );
    carol.expect_quiet();

    // Both leave: the board is cleared, and of the two open games the older one closes.
    alice.send(ClientRepr::LeaveGame { game: 1 });
    ttt.unseat(x);
    expect_all(&mut [&mut alice, &mut bob, &mut carol], &ttt.info());
    bob.send(ClientRepr::LeaveGame { game: 1 });
    ttt.unseat(o);
    ttt.flags = 8;
    expect_all(&mut [&mut alice, &mut bob, &mut carol], &ttt.info());
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol],
        &ServerRepr::GameClosed { id: 1 },
    );
    let snap = snapshot(&server);
    assert_eq!(snap.counter("general_hosted_opened_total", ""), Some(2));
    let games = snap.general.expect("general snapshot").games;
    assert_eq!(games.len(), 1);
    assert_eq!((games[0].id, games[0].owner, games[0].flags), (2, 0, 8));
}
