//! The part of a general lobby client (docs/protocols/general-lobby.md) every general lobby
//! mode shares: client frames out ([`push`]), server frames in ([`each_frame`], bounded by
//! [`MAX_FRAME`]), usernames unique to this process ([`Usernames`]), and the sign-in as a
//! client does it ([`sign_in`], then [`sign_in_frame`] for each frame until SYNC_DONE).
//! `lobby-join` and `lobby-idle` (`general_modes.rs`), `lobby-chat` (`general_chat.rs`) and
//! `hostile-lobby` sign their members in with it.

use lobbyd::wire::general::{
    next_frame, ClientRepr, GameInfo, Next, ServerRepr, HEADER_LEN, PROTOCOL_VERSION,
};

use super::tcp_engine::{each_frame_by, Cut, Step};

/// Longest server payload the tool accepts: no server message has more than nine parameters
/// and none is longer than 65,535 bytes, so 1 MiB bounds every legitimate frame.
pub const MAX_SERVER_PAYLOAD: usize = 1024 * 1024;
/// A server frame of any legitimate size, header included.
pub const MAX_FRAME: usize = HEADER_LEN + MAX_SERVER_PAYLOAD;

/// Appends `msg` to `out`.
pub fn push(out: &mut Vec<u8>, msg: &ClientRepr<'_>) {
    let at = out.len();
    out.resize(at + msg.buffer_len(), 0);
    msg.emit(&mut out[at..]);
}

/// Hands every complete server frame at the front of `data` to `each` until it returns a
/// step; a malformed or oversized frame fails. Returns the bytes consumed and the step.
pub fn each_frame<'a>(
    data: &'a [u8],
    each: impl FnMut(ServerRepr<'a>) -> Option<Step>,
) -> (usize, Step) {
    each_frame_by(data, cut_frame, each)
}

/// The next general lobby server frame of `data`.
fn cut_frame(data: &[u8]) -> Cut<ServerRepr<'_>> {
    match next_frame(data, MAX_SERVER_PAYLOAD) {
        Next::NeedMore => Cut::NeedMore,
        Next::Oversized { .. } => Cut::Fail("oversized_frame"),
        Next::Frame { frame, consumed } => match ServerRepr::parse(&frame) {
            Ok(repr) => Cut::Frame(repr, consumed),
            Err(e) => Cut::Fail(e.as_str()),
        },
    }
}

/// Usernames unique to this process (its id is in each) and to each sign-in, within the
/// lobby's 24 characters.
#[derive(Debug)]
pub struct Usernames {
    prefix: char,
    pid: u32,
    next: u64,
}

impl Usernames {
    /// Names starting with `prefix` (one letter per mode, so modes run side by side differ).
    pub fn new(prefix: char) -> Usernames {
        Usernames {
            prefix,
            pid: std::process::id(),
            next: 0,
        }
    }

    /// The next name: prefix, process id and a counter, at most 1 + 8 + 1 + 14 characters
    /// for the first 10^14 names.
    pub fn next_name(&mut self) -> String {
        self.next += 1;
        format!("{}{:x}-{}", self.prefix, self.pid, self.next)
    }
}

/// Where a member's sign-in is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SignInStep {
    /// Waiting for HELLO.
    #[default]
    Hello,
    /// Waiting for CHALLENGE.
    Challenge,
    /// SIGN_IN written, waiting for WELCOME.
    Welcome,
    /// Reading the sync; `first` until the member's own MEMBER_INFO came.
    Sync {
        /// The member id WELCOME gave.
        member: i32,
        /// The next MEMBER_INFO must be the member's own.
        first: bool,
    },
    /// SYNC_DONE read.
    Done {
        /// The member id WELCOME gave.
        member: i32,
    },
}

/// What one frame meant for a sign-in in progress.
#[derive(Debug)]
pub enum SignInEvent<'a> {
    /// Nothing to do.
    Nothing,
    /// The challenge came: write SIGN_IN now.
    SendSignIn,
    /// A game of the sync.
    Game(GameInfo<'a>),
    /// SYNC_DONE: the member is signed in with this id.
    Synced(i32),
}

/// Moves `step` on with one server frame; an error names a refusal, an ERROR frame's code or
/// a frame out of the documented order.
pub fn sign_in_frame<'a>(
    step: &mut SignInStep,
    repr: ServerRepr<'a>,
) -> Result<SignInEvent<'a>, &'static str> {
    let event = match (*step, repr) {
        (_, ServerRepr::Error { code, .. }) => return Err(code.as_str()),
        (SignInStep::Hello, ServerRepr::Hello { version, .. }) => {
            if version != PROTOCOL_VERSION {
                return Err("bad_protocol_version");
            }
            *step = SignInStep::Challenge;
            SignInEvent::Nothing
        }
        (SignInStep::Challenge | SignInStep::Welcome, ServerRepr::Challenge { failed, .. }) => {
            if failed {
                return Err("sign_in_refused");
            }
            if *step == SignInStep::Welcome {
                return Err("challenge_twice");
            }
            *step = SignInStep::Welcome;
            SignInEvent::SendSignIn
        }
        (SignInStep::Welcome, ServerRepr::Welcome { member, .. }) => {
            *step = SignInStep::Sync {
                member,
                first: true,
            };
            SignInEvent::Nothing
        }
        (SignInStep::Sync { member, first }, ServerRepr::MemberInfo { id, .. }) => {
            if first && id != member {
                return Err("sync_not_self_first");
            }
            *step = SignInStep::Sync {
                member,
                first: false,
            };
            SignInEvent::Nothing
        }
        (SignInStep::Sync { first: false, .. }, ServerRepr::GameInfo(game)) => {
            SignInEvent::Game(game)
        }
        (SignInStep::Sync { member, first }, ServerRepr::SyncDone) => {
            if first {
                return Err("sync_not_self_first");
            }
            *step = SignInStep::Done { member };
            SignInEvent::Synced(member)
        }
        // A frame meant for someone else: the server routed a broadcast to a fresh connection.
        (SignInStep::Hello, _) => return Err("frame_before_hello"),
        _ => return Err("unexpected_frame"),
    };
    Ok(event)
}

/// SIGN_IN for a new session as `username`, without a password.
pub fn sign_in(username: &str) -> ClientRepr<'_> {
    ClientRepr::SignIn {
        username,
        password: "",
        resume: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lobbyd::wire::general::{ErrorCode, Words, TOKEN_LEN};

    #[test]
    fn sign_in_follows_the_documented_order() {
        let token = [7u8; TOKEN_LEN];
        let mut step = SignInStep::default();
        let hello = ServerRepr::Hello {
            server_name: "lobbyd",
            version: PROTOCOL_VERSION,
        };
        assert!(matches!(
            sign_in_frame(&mut step, hello),
            Ok(SignInEvent::Nothing)
        ));
        let challenge = ServerRepr::Challenge {
            text: "hi",
            failed: false,
        };
        assert!(matches!(
            sign_in_frame(&mut step, challenge),
            Ok(SignInEvent::SendSignIn)
        ));
        let welcome = ServerRepr::Welcome {
            member: 9,
            token: &token,
        };
        assert!(sign_in_frame(&mut step, welcome).is_ok());
        let other = ServerRepr::MemberInfo {
            id: 3,
            flags: 0,
            username: "a",
            display_name: "a",
        };
        // Another member before the member's own MEMBER_INFO breaks the sync order.
        let mut early = step;
        assert_eq!(
            sign_in_frame(&mut early, other).err(),
            Some("sync_not_self_first")
        );
        let own = ServerRepr::MemberInfo {
            id: 9,
            flags: 0,
            username: "b",
            display_name: "b",
        };
        assert!(sign_in_frame(&mut step, own).is_ok());
        assert!(sign_in_frame(&mut step, other).is_ok());
        let game = GameInfo {
            id: 4,
            owner: 3,
            max_players: 2,
            name: "load",
            game_type: "lobby-load",
            version: "1",
            flags: 0,
            players: Words::new(&[3]),
            player_flags: Words::new(&[]),
        };
        assert!(matches!(
            sign_in_frame(&mut step, ServerRepr::GameInfo(game)),
            Ok(SignInEvent::Game(g)) if g.id == 4
        ));
        assert!(matches!(
            sign_in_frame(&mut step, ServerRepr::SyncDone),
            Ok(SignInEvent::Synced(9))
        ));
        assert_eq!(step, SignInStep::Done { member: 9 });
    }

    #[test]
    fn refusals_and_errors_end_the_sign_in() {
        let mut step = SignInStep::Welcome;
        let refused = ServerRepr::Challenge {
            text: "name taken",
            failed: true,
        };
        assert_eq!(
            sign_in_frame(&mut step, refused).err(),
            Some("sign_in_refused")
        );
        let error = ServerRepr::Error {
            code: ErrorCode::LimitReached,
            request: 3,
            text: "full",
        };
        assert_eq!(
            sign_in_frame(&mut SignInStep::Hello, error).err(),
            Some("limit_reached")
        );
        let old = ServerRepr::Hello {
            server_name: "x",
            version: 2,
        };
        assert_eq!(
            sign_in_frame(&mut SignInStep::Hello, old).err(),
            Some("bad_protocol_version")
        );
        assert_eq!(
            sign_in_frame(&mut SignInStep::Hello, ServerRepr::MemberLeft { id: 4 }).err(),
            Some("frame_before_hello")
        );
        assert_eq!(
            sign_in_frame(&mut SignInStep::Challenge, ServerRepr::SyncDone).err(),
            Some("unexpected_frame")
        );
    }

    #[test]
    fn usernames_are_distinct_and_fit() {
        let mut names = Usernames::new('j');
        let a = names.next_name();
        let b = names.next_name();
        assert_ne!(a, b);
        assert!(a.starts_with('j') && a.len() <= 24, "{a}");
        names.next = 99_999_999_999_998;
        assert!(names.next_name().len() <= 24);
    }

    #[test]
    fn frames_are_cut_and_a_split_one_waits() {
        let mut bytes = Vec::new();
        let pong = ServerRepr::Pong { payload: b"x" };
        let mut buf = vec![0u8; pong.buffer_len()];
        pong.emit(&mut buf);
        bytes.extend_from_slice(&buf);
        bytes.extend_from_slice(&buf[..5]);
        let mut seen = 0;
        let (used, step) = each_frame(&bytes, |_| {
            seen += 1;
            None
        });
        assert_eq!((used, step, seen), (buf.len(), Step::More, 1));
        let mut huge = buf.clone();
        huge[4..8].copy_from_slice(&(MAX_SERVER_PAYLOAD as u32 + 1).to_le_bytes());
        assert_eq!(each_frame(&huge, |_| None).1, Step::Fail("oversized_frame"));
    }
}
