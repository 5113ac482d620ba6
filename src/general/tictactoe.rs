//! `tictactoe`, the server-hosted game type (docs/protocols/general-lobby.md, "tictactoe"):
//! two players, moves as TO_OWNER bodies, the board to both after every move, the winner
//! announced, illegal moves refused.
//!
//! Messages (GAME_MESSAGE app codes; the server's come from member 0):
//!
//! ```text
//! MOVE    1  client -> game (TO_OWNER)  | cell u8 (0..=8, row by row) |
//! BOARD   2  game -> both               | cells[9] (0 empty, 1 X, 2 O) | x i32 | o i32 | to move i32 (0: over) |
//! REFUSED 3  game -> the mover          | reason, UTF-8 |
//! RESULT  4  game -> both               | winner i32 (0: draw) |
//! ```
//!
//! The first player to join is X, the second O; the game starts when the second joins, X
//! moves first. A player who does not move within [`TURN_TIMEOUT`], or who leaves mid-game,
//! loses. When the last player leaves, the board is cleared and the game is open again.
//!
//! This module must not know about connections or frames: it answers with `HostedAction`s.

use std::time::{Duration, Instant};

use super::hosted::{HostedGame, HostedOut, JoinVerdict};
use super::types::MemberId;

/// TO_OWNER app code of a move.
pub const MOVE: u32 = 1;
/// GAME_MESSAGE app code of the board.
pub const BOARD: u32 = 2;
/// GAME_MESSAGE app code of a refused move.
pub const REFUSED: u32 = 3;
/// GAME_MESSAGE app code of the result.
pub const RESULT: u32 = 4;

/// Time a player has for a move.
pub const TURN_TIMEOUT: Duration = Duration::from_secs(60);

const LINES: [[usize; 3]; 8] = [
    [0, 1, 2],
    [3, 4, 5],
    [6, 7, 8],
    [0, 3, 6],
    [1, 4, 7],
    [2, 5, 8],
    [0, 4, 8],
    [2, 4, 6],
];

/// Where a game stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Fewer than two players so far.
    Waiting,
    /// `to_move` has the turn.
    Playing { to_move: MemberId },
    /// Won, drawn or forfeited; the players may leave.
    Over,
}

/// One tic-tac-toe game.
#[derive(Clone, Debug)]
pub struct TicTacToe {
    cells: [u8; 9],
    x: Option<MemberId>,
    o: Option<MemberId>,
    stage: Stage,
}

impl Default for TicTacToe {
    fn default() -> Self {
        TicTacToe::new()
    }
}

impl TicTacToe {
    /// An empty board waiting for two players.
    pub const fn new() -> TicTacToe {
        TicTacToe {
            cells: [0; 9],
            x: None,
            o: None,
            stage: Stage::Waiting,
        }
    }

    fn board(&self) -> Vec<u8> {
        let to_move = match self.stage {
            Stage::Playing { to_move } => to_move.0,
            Stage::Waiting | Stage::Over => 0,
        };
        let mut body = Vec::with_capacity(21);
        body.extend_from_slice(&self.cells);
        for id in [
            self.x.map_or(0, |m| m.0),
            self.o.map_or(0, |m| m.0),
            to_move,
        ] {
            body.extend_from_slice(&id.to_le_bytes());
        }
        body
    }

    fn other(&self, member: MemberId) -> Option<MemberId> {
        if self.x == Some(member) {
            self.o
        } else {
            self.x
        }
    }

    fn mark_of(&self, member: MemberId) -> u8 {
        if self.x == Some(member) {
            1
        } else {
            2
        }
    }

    fn finish(&mut self, winner: Option<MemberId>, out: &mut HostedOut) {
        self.stage = Stage::Over;
        out.message_all(RESULT, winner.map_or(0, |m| m.0).to_le_bytes().to_vec());
        out.set_timer(None);
    }

    fn winner_mark(&self) -> Option<u8> {
        LINES.iter().find_map(|line| {
            let [a, b, c] = line.map(|i| self.cells[i]);
            (a != 0 && a == b && b == c).then_some(a)
        })
    }

    fn refuse(member: MemberId, reason: &str, out: &mut HostedOut) {
        out.message_player(member, REFUSED, reason.as_bytes().to_vec());
    }
}

impl HostedGame for TicTacToe {
    fn max_players(&self) -> u32 {
        2
    }

    fn can_join(&self, _member: MemberId, players: &[i32]) -> JoinVerdict {
        if self.stage != Stage::Waiting {
            JoinVerdict::Refuse("game in progress")
        } else if players.len() >= 2 {
            JoinVerdict::Refuse("game full")
        } else {
            JoinVerdict::Accept("")
        }
    }

    fn player_joined(
        &mut self,
        now: Instant,
        _member: MemberId,
        players: &[i32],
        out: &mut HostedOut,
    ) {
        if let [x, o] = *players {
            let x = MemberId(x);
            self.x = Some(x);
            self.o = Some(MemberId(o));
            self.stage = Stage::Playing { to_move: x };
            out.start();
            out.message_all(BOARD, self.board());
            out.set_timer(Some(now + TURN_TIMEOUT));
        }
    }

    fn player_left(
        &mut self,
        _now: Instant,
        member: MemberId,
        players: &[i32],
        out: &mut HostedOut,
    ) {
        if matches!(self.stage, Stage::Playing { .. }) {
            let winner = self.other(member);
            self.finish(winner, out);
        }
        if players.is_empty() {
            let started = self.stage != Stage::Waiting;
            *self = TicTacToe::new();
            if started {
                out.reset();
            }
        }
    }

    fn message(
        &mut self,
        now: Instant,
        from: MemberId,
        app_code: u32,
        body: &[u8],
        out: &mut HostedOut,
    ) {
        let Stage::Playing { to_move } = self.stage else {
            return Self::refuse(from, "no game in progress", out);
        };
        if app_code != MOVE {
            return Self::refuse(from, "unknown message: moves are app code 1", out);
        }
        if from != to_move {
            return Self::refuse(from, "not your turn", out);
        }
        let Some(cell) = body
            .first()
            .filter(|_| body.len() == 1)
            .map(|&c| usize::from(c))
            .filter(|&c| c < 9)
        else {
            return Self::refuse(from, "a move is one byte, a cell 0 to 8", out);
        };
        if self.cells[cell] != 0 {
            return Self::refuse(from, "cell taken", out);
        }
        self.cells[cell] = self.mark_of(from);
        let won = self.winner_mark().is_some();
        if won || self.cells.iter().all(|&c| c != 0) {
            // The last board already says nobody is to move.
            self.stage = Stage::Over;
            out.message_all(BOARD, self.board());
            return self.finish(won.then_some(from), out);
        }
        if let Some(next) = self.other(from) {
            self.stage = Stage::Playing { to_move: next };
        }
        out.message_all(BOARD, self.board());
        out.set_timer(Some(now + TURN_TIMEOUT));
    }

    fn timer(&mut self, _now: Instant, out: &mut HostedOut) {
        if let Stage::Playing { to_move } = self.stage {
            let winner = self.other(to_move);
            self.finish(winner, out);
        }
    }
}

#[cfg(test)]
mod test {
    use super::super::hosted::HostedAction;
    use super::*;

    fn actions(out: &mut HostedOut) -> Vec<HostedAction> {
        out.drain().collect()
    }

    fn board(cells: [u8; 9], to_move: i32) -> HostedAction {
        let mut body = cells.to_vec();
        for id in [1i32, 2, to_move] {
            body.extend_from_slice(&id.to_le_bytes());
        }
        HostedAction::ToAll {
            app_code: BOARD,
            body,
        }
    }

    fn result(winner: i32) -> HostedAction {
        HostedAction::ToAll {
            app_code: RESULT,
            body: winner.to_le_bytes().to_vec(),
        }
    }

    fn refused(member: i32, reason: &str) -> HostedAction {
        HostedAction::ToPlayer {
            member: MemberId(member),
            app_code: REFUSED,
            body: reason.as_bytes().to_vec(),
        }
    }

    fn started(now: Instant) -> (TicTacToe, HostedOut) {
        let mut game = TicTacToe::new();
        let mut out = HostedOut::default();
        assert_eq!(game.can_join(MemberId(1), &[]), JoinVerdict::Accept(""));
        game.player_joined(now, MemberId(1), &[1], &mut out);
        assert!(actions(&mut out).is_empty(), "one player waits");
        game.player_joined(now, MemberId(2), &[1, 2], &mut out);
        assert_eq!(
            actions(&mut out),
            [
                HostedAction::Start,
                board([0; 9], 1),
                HostedAction::Timer(Some(now + TURN_TIMEOUT))
            ]
        );
        (game, out)
    }

    #[test]
    fn a_won_game_with_an_illegal_move() {
        let now = Instant::now();
        let (mut game, mut out) = started(now);
        assert_eq!(
            game.can_join(MemberId(3), &[1, 2]),
            JoinVerdict::Refuse("game in progress")
        );
        // X: 0, O: 3, X: 1, O tries 1 (taken), O: 4, X: 2 wins the top row.
        game.message(now, MemberId(1), MOVE, &[0], &mut out);
        game.message(now, MemberId(2), MOVE, &[3], &mut out);
        game.message(now, MemberId(1), MOVE, &[1], &mut out);
        game.message(now, MemberId(2), MOVE, &[1], &mut out);
        game.message(now, MemberId(2), MOVE, &[4], &mut out);
        game.message(now, MemberId(1), MOVE, &[2], &mut out);
        let timer = HostedAction::Timer(Some(now + TURN_TIMEOUT));
        assert_eq!(
            actions(&mut out),
            [
                board([1, 0, 0, 0, 0, 0, 0, 0, 0], 2),
                timer.clone(),
                board([1, 0, 0, 2, 0, 0, 0, 0, 0], 1),
                timer.clone(),
                board([1, 1, 0, 2, 0, 0, 0, 0, 0], 2),
                timer.clone(),
                refused(2, "cell taken"),
                board([1, 1, 0, 2, 2, 0, 0, 0, 0], 1),
                timer,
                board([1, 1, 1, 2, 2, 0, 0, 0, 0], 0),
                result(1),
                HostedAction::Timer(None),
            ]
        );
        game.message(now, MemberId(2), MOVE, &[5], &mut out);
        assert_eq!(actions(&mut out), [refused(2, "no game in progress")]);
        // Both leave: the board is cleared and the game open again.
        game.player_left(now, MemberId(1), &[2], &mut out);
        assert!(actions(&mut out).is_empty());
        game.player_left(now, MemberId(2), &[], &mut out);
        assert_eq!(actions(&mut out), [HostedAction::Reset]);
        assert_eq!(game.can_join(MemberId(3), &[]), JoinVerdict::Accept(""));
    }

    #[test]
    fn every_illegal_move() {
        let now = Instant::now();
        let (mut game, mut out) = started(now);
        game.message(now, MemberId(2), MOVE, &[0], &mut out);
        game.message(now, MemberId(1), 9, &[0], &mut out);
        game.message(now, MemberId(1), MOVE, &[9], &mut out);
        game.message(now, MemberId(1), MOVE, &[0, 1], &mut out);
        game.message(now, MemberId(1), MOVE, &[], &mut out);
        let bad_cell = "a move is one byte, a cell 0 to 8";
        assert_eq!(
            actions(&mut out),
            [
                refused(2, "not your turn"),
                refused(1, "unknown message: moves are app code 1"),
                refused(1, bad_cell),
                refused(1, bad_cell),
                refused(1, bad_cell),
            ]
        );
    }

    #[test]
    fn a_draw() {
        let now = Instant::now();
        let (mut game, mut out) = started(now);
        // X O X / X O O / O X X
        for (member, cell) in [
            (1, 0),
            (2, 1),
            (1, 2),
            (2, 4),
            (1, 3),
            (2, 5),
            (1, 7),
            (2, 6),
            (1, 8),
        ] {
            game.message(now, MemberId(member), MOVE, &[cell], &mut out);
        }
        let all = actions(&mut out);
        assert_eq!(all[all.len() - 3], board([1, 2, 1, 1, 2, 2, 2, 1, 1], 0));
        assert_eq!(all[all.len() - 2], result(0));
    }

    #[test]
    fn timeout_and_leaving_forfeit() {
        let now = Instant::now();
        let (mut game, mut out) = started(now);
        game.timer(now + TURN_TIMEOUT, &mut out);
        assert_eq!(actions(&mut out), [result(2), HostedAction::Timer(None)]);
        game.timer(now + TURN_TIMEOUT * 2, &mut out);
        assert!(actions(&mut out).is_empty(), "a finished game has no timer");

        let (mut game, mut out) = started(now);
        game.message(now, MemberId(1), MOVE, &[4], &mut out);
        actions(&mut out);
        game.player_left(now, MemberId(1), &[2], &mut out);
        assert_eq!(actions(&mut out), [result(2), HostedAction::Timer(None)]);
        assert_eq!(
            game.can_join(MemberId(3), &[2]),
            JoinVerdict::Refuse("game in progress")
        );
    }

    #[test]
    fn a_lone_player_leaving_needs_no_reset() {
        let now = Instant::now();
        let mut game = TicTacToe::new();
        let mut out = HostedOut::default();
        game.player_joined(now, MemberId(5), &[5], &mut out);
        game.player_left(now, MemberId(5), &[], &mut out);
        assert!(actions(&mut out).is_empty());
        assert_eq!(
            game.can_join(MemberId(6), &[5, 7]),
            JoinVerdict::Refuse("game full")
        );
    }
}
