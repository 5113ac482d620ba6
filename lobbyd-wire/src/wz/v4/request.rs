//! v4 requests: `{method, params, id}` documents decoded into a typed [`Request`]
//! (`docs/protocols/wz-v4.md`, "Messages" and "Methods"; the seed's message shape).
//!
//! [`decode`] parses a frame body in either encoding, reads the `id` first so even a refused
//! request can be answered under it ([`Rejection`]), and checks every parameter's presence,
//! type and range, moving strings out of the tree without copying them. Unknown methods decode
//! to [`Method::Unknown`] and unknown keys are ignored. Whether a valid request is allowed
//! (login policy, game ownership) is the Warzone core's call, not this module's.

use std::borrow::Cow;

use super::{parse_document, DecodeError, Encoding, Fields, Node};

/// The `id` of a request: an integer, or absent (then the response carries `null`).
pub type RequestId = Option<i64>;

/// A method name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method<'a> {
    /// `login`.
    Login,
    /// `addGame`.
    AddGame,
    /// `list`.
    List,
    /// `addPlayer`.
    AddPlayer,
    /// `delPlayer`.
    DelPlayer,
    /// `delGame`.
    DelGame,
    /// Any other name; the server answers [`METHOD_NOT_FOUND`](super::METHOD_NOT_FOUND).
    Unknown(Cow<'a, str>),
}

impl<'a> Method<'a> {
    /// Maps a wire name (case-sensitive, as the clients send it) to a method.
    pub fn from_name(name: Cow<'a, str>) -> Method<'a> {
        match name.as_ref() {
            "login" => Method::Login,
            "addGame" => Method::AddGame,
            "list" => Method::List,
            "addPlayer" => Method::AddPlayer,
            "delPlayer" => Method::DelPlayer,
            "delGame" => Method::DelGame,
            _ => Method::Unknown(name),
        }
    }

    /// The wire name.
    pub fn name(&self) -> &str {
        match self {
            Method::Login => "login",
            Method::AddGame => "addGame",
            Method::List => "list",
            Method::AddPlayer => "addPlayer",
            Method::DelPlayer => "delPlayer",
            Method::DelGame => "delGame",
            Method::Unknown(name) => name,
        }
    }
}

/// `login` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login<'a> {
    /// Account name.
    pub username: Cow<'a, str>,
    /// Password in clear (the connection is expected to be private; see the protocol doc).
    pub password: Cow<'a, str>,
}

/// `addGame` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddGame<'a> {
    /// Game name shown in the list.
    pub description: Cow<'a, str>,
    /// Player slots.
    pub max_players: u32,
    /// Players currently in the game.
    pub current_players: u32,
    /// The host's game port (default 2100 is the server's decision).
    pub port: Option<u16>,
    /// Map name.
    pub mapname: Option<Cow<'a, str>>,
    /// The host player's name.
    pub hostplayer: Option<Cow<'a, str>>,
    /// Version string, e.g. "2.3.7".
    pub multi_ver: Option<Cow<'a, str>>,
    /// Netcode version, major.
    pub wz_ver_major: Option<u32>,
    /// Netcode version, minor.
    pub wz_ver_minor: Option<u32>,
    /// Whether the game has a password.
    pub is_private: Option<bool>,
    /// Mod list as the client sends it.
    pub modlist: Option<Cow<'a, str>>,
}

/// `addPlayer` parameters; which are needed is the server's decision.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AddPlayer<'a> {
    /// The host's game.
    pub game_id: Option<u32>,
    /// The slot the player took.
    pub slot: Option<u32>,
    /// The player's in-game name.
    pub name: Option<Cow<'a, str>>,
    /// The player's account id (seed form).
    pub userid: Option<i64>,
    /// The player's account name (implemented form).
    pub username: Option<Cow<'a, str>>,
    /// The player's session id: `sessionid`, or its alias `session`.
    pub sessionid: Option<Cow<'a, str>>,
}

/// `delPlayer` parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DelPlayer {
    /// The host's game.
    pub game_id: Option<u32>,
    /// The slot the player left.
    pub slot: Option<u32>,
    /// The player's account id.
    pub userid: Option<i64>,
}

/// `delGame` parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DelGame {
    /// The game to delist; absent means "the game this connection added".
    pub game_id: Option<u32>,
}

/// Parameters, typed per method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Params<'a> {
    /// For [`Method::Login`].
    Login(Login<'a>),
    /// For [`Method::AddGame`].
    AddGame(AddGame<'a>),
    /// For [`Method::List`] (params are `""`, `{}`, `null` or absent).
    List,
    /// For [`Method::AddPlayer`].
    AddPlayer(AddPlayer<'a>),
    /// For [`Method::DelPlayer`].
    DelPlayer(DelPlayer),
    /// For [`Method::DelGame`].
    DelGame(DelGame),
    /// For [`Method::Unknown`]: params are not looked at.
    Unknown,
}

/// A decoded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// What the client asks for.
    pub method: Method<'a>,
    /// Its parameters.
    pub params: Params<'a>,
    /// Echoed back in the response.
    pub id: RequestId,
}

/// A request that could not be decoded, with what the server needs to answer it anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejection {
    /// Why.
    pub error: DecodeError,
    /// The encoding to answer in (the sniffed one, even if the body is broken).
    pub encoding: Encoding,
    /// The request id, when the document parsed far enough to carry one.
    pub id: RequestId,
}

/// Decodes a frame body into a request, and tells the encoding to answer in.
pub fn decode(body: &[u8]) -> Result<(Encoding, Request<'_>), Rejection> {
    let (encoding, doc) = parse_document(body);
    let reject = |error, id| Rejection {
        error,
        encoding,
        id,
    };
    let doc = doc.map_err(|e| reject(e, None))?;
    let id = match doc.get("id") {
        None | Some(Node::Null) => None,
        Some(Node::Int(i)) => Some(*i),
        Some(_) => return Err(reject(DecodeError::WrongType("id"), None)),
    };
    let request = Request::from_document(doc, id).map_err(|e| reject(e, id))?;
    Ok((encoding, request))
}

impl<'a> Request<'a> {
    /// Builds a request from a parsed document whose `id` has already been read.
    fn from_document(doc: Node<'a>, id: RequestId) -> Result<Request<'a>, DecodeError> {
        let Node::Doc(mut fields) = doc else {
            return Err(DecodeError::WrongType("document"));
        };
        let method = match take(&mut fields, "method") {
            Some(Node::Str(name)) => Method::from_name(name),
            Some(_) => return Err(DecodeError::WrongType("method")),
            None => return Err(DecodeError::MissingField("method")),
        };
        let params = match &method {
            Method::Unknown(_) => Params::Unknown,
            _ => {
                let mut p = match take(&mut fields, "params") {
                    None | Some(Node::Null) => Vec::new(),
                    Some(Node::Str(s)) if s.is_empty() => Vec::new(),
                    Some(Node::Doc(p)) => p,
                    Some(_) => return Err(DecodeError::WrongType("params")),
                };
                parse_params(&method, &mut p)?
            }
        };
        Ok(Request { method, params, id })
    }
}

fn parse_params<'a>(method: &Method<'a>, p: &mut Fields<'a>) -> Result<Params<'a>, DecodeError> {
    Ok(match method {
        Method::Login => Params::Login(Login {
            username: required(text(p, "username")?, "username")?,
            password: required(text(p, "password")?, "password")?,
        }),
        Method::AddGame => Params::AddGame(AddGame {
            description: required(text(p, "description")?, "description")?,
            max_players: required(int(p, "maxPlayers")?, "maxPlayers")?,
            current_players: required(int(p, "currentPlayers")?, "currentPlayers")?,
            port: int(p, "port")?,
            mapname: text(p, "mapname")?,
            hostplayer: text(p, "hostplayer")?,
            multi_ver: text(p, "multiVer")?,
            wz_ver_major: int(p, "wzVerMajor")?,
            wz_ver_minor: int(p, "wzVerMinor")?,
            is_private: flag(p, "isPrivate")?,
            modlist: text(p, "modlist")?,
        }),
        Method::List => Params::List,
        Method::AddPlayer => {
            let sessionid = text(p, "sessionid")?;
            let session = text(p, "session")?;
            Params::AddPlayer(AddPlayer {
                game_id: int(p, "gameId")?,
                slot: int(p, "slot")?,
                name: text(p, "name")?,
                userid: int(p, "userid")?,
                username: text(p, "username")?,
                sessionid: sessionid.or(session),
            })
        }
        Method::DelPlayer => Params::DelPlayer(DelPlayer {
            game_id: int(p, "gameId")?,
            slot: int(p, "slot")?,
            userid: int(p, "userid")?,
        }),
        Method::DelGame => Params::DelGame(DelGame {
            game_id: int(p, "gameId")?,
        }),
        Method::Unknown(_) => Params::Unknown,
    })
}

/// Removes and returns the first field named `key` (so strings move out without a copy).
fn take<'a>(fields: &mut Fields<'a>, key: &str) -> Option<Node<'a>> {
    let at = fields.iter().position(|(k, _)| k == key)?;
    Some(fields.swap_remove(at).1)
}

fn required<T>(value: Option<T>, name: &'static str) -> Result<T, DecodeError> {
    value.ok_or(DecodeError::MissingField(name))
}

/// An optional string field; `null` counts as absent.
fn text<'a>(p: &mut Fields<'a>, name: &'static str) -> Result<Option<Cow<'a, str>>, DecodeError> {
    match take(p, name) {
        None | Some(Node::Null) => Ok(None),
        Some(Node::Str(s)) => Ok(Some(s)),
        Some(_) => Err(DecodeError::WrongType(name)),
    }
}

/// An optional integer field, range-checked into `T`; `null` counts as absent.
fn int<T: TryFrom<i64>>(p: &mut Fields<'_>, name: &'static str) -> Result<Option<T>, DecodeError> {
    match take(p, name) {
        None | Some(Node::Null) => Ok(None),
        Some(Node::Int(i)) => T::try_from(i)
            .map(Some)
            .map_err(|_| DecodeError::OutOfRange(name)),
        Some(_) => Err(DecodeError::WrongType(name)),
    }
}

/// An optional boolean; C clients may send 0/1, so integers count (non-zero is true).
fn flag(p: &mut Fields<'_>, name: &'static str) -> Result<Option<bool>, DecodeError> {
    match take(p, name) {
        None | Some(Node::Null) => Ok(None),
        Some(Node::Bool(b)) => Ok(Some(b)),
        Some(Node::Int(i)) => Ok(Some(i != 0)),
        Some(_) => Err(DecodeError::WrongType(name)),
    }
}

#[cfg(test)]
mod tests {
    use quickcheck::{quickcheck, Gen};

    use super::super::tests::{arbitrary_text, decoded, error_of, login_expected};
    use super::super::{Value, INVALID_DATA, MAX_STRING, PARSE_ERROR};
    use super::*;

    #[test]
    fn deconstruct_seed_json() {
        let login = br#"{"method": "login", "params": {"username": "Fastdeath", "password": "mysecretpass"}, "id": 1}"#;
        assert_eq!(decode(login).map(|(e, _)| e), Ok(Encoding::Json));
        assert_eq!(decoded(login), login_expected());

        let add = br#"{"method": "addGame", "params": {"description": "Fast, NTW", "maxPlayers": 8, "currentPlayers": 1}, "id": 2}"#;
        let Params::AddGame(game) = decoded(add).params else {
            panic!("not addGame")
        };
        assert_eq!(game.description, "Fast, NTW");
        assert_eq!((game.max_players, game.current_players), (8, 1));
        assert_eq!(
            (game.port, game.mapname, game.is_private),
            (None, None, None)
        );

        for list in [
            &br#"{"method": "list", "params": "", "id": 2}"#[..],
            br#"{"method": "list", "params": {}, "id": 2}"#,
            br#"{"method": "list", "id": 2}"#,
        ] {
            let r = decoded(list);
            assert_eq!(
                (r.method, r.params, r.id),
                (Method::List, Params::List, Some(2))
            );
        }

        let add_player = br#"{"method": "addPlayer", "params": {"userid": 2, "sessionid": "0123abcd"}, "id": 3}"#;
        let Params::AddPlayer(p) = decoded(add_player).params else {
            panic!("not addPlayer")
        };
        assert_eq!(
            (p.userid, p.sessionid.as_deref()),
            (Some(2), Some("0123abcd"))
        );

        let del_player = br#"{"method": "delPlayer", "params": {"userid": 2}, "id": 4}"#;
        assert_eq!(
            decoded(del_player).params,
            Params::DelPlayer(DelPlayer {
                userid: Some(2),
                ..DelPlayer::default()
            })
        );
        // The seed's delGame carries a userid; unknown keys are ignored.
        let del_game = br#"{"method": "delGame", "params": {"userid": 2}, "id": 4}"#;
        assert_eq!(
            decoded(del_game).params,
            Params::DelGame(DelGame { game_id: None })
        );
        let del_game = br#"{"method": "delGame", "params": {"gameId": 7}}"#;
        let r = decoded(del_game);
        assert_eq!(
            (r.params, r.id),
            (Params::DelGame(DelGame { game_id: Some(7) }), None)
        );
    }

    #[test]
    fn wrong_types_and_missing_fields() {
        let cases: &[(&[u8], DecodeError)] = &[
            (br#"{"params": {}}"#, DecodeError::MissingField("method")),
            (br#"{"method": 1}"#, DecodeError::WrongType("method")),
            (br#"{"method": "list", "id": "1"}"#, DecodeError::WrongType("id")),
            (br#"{"method": "list", "id": 1.5}"#, DecodeError::WrongType("id")),
            (br#"{"method": "list", "params": []}"#, DecodeError::WrongType("params")),
            (br#"{"method": "list", "params": "x"}"#, DecodeError::WrongType("params")),
            (br#"{"method": "login", "params": {"username": "a"}}"#, DecodeError::MissingField("password")),
            (br#"{"method": "login", "params": {"username": 5, "password": "p"}}"#, DecodeError::WrongType("username")),
            (br#"{"method": "addGame", "params": {"description": "d", "maxPlayers": 8}}"#, DecodeError::MissingField("currentPlayers")),
            (br#"{"method": "addGame", "params": {"description": "d", "maxPlayers": -1, "currentPlayers": 0}}"#, DecodeError::OutOfRange("maxPlayers")),
            (br#"{"method": "addGame", "params": {"description": "d", "maxPlayers": 8, "currentPlayers": 0, "port": 70000}}"#, DecodeError::OutOfRange("port")),
            (br#"{"method": "addGame", "params": {"description": "d", "maxPlayers": 8, "currentPlayers": 0, "isPrivate": "no"}}"#, DecodeError::WrongType("isPrivate")),
            (br#"{"method": "addPlayer", "params": {"gameId": "1"}}"#, DecodeError::WrongType("gameId")),
            (br#"{"method": "delGame", "params": {"gameId": 99999999999}}"#, DecodeError::OutOfRange("gameId")),
            (br#"{"method": "list"} x"#, DecodeError::BadJson),
            (br#"{"method": "list""#, DecodeError::BadJson),
            (b"  {\"method\": \"l\\ud800\"}", DecodeError::BadJson),
        ];
        for (body, error) in cases {
            assert_eq!(error_of(body), *error, "{}", String::from_utf8_lossy(body));
            assert_eq!(
                error.as_str(),
                DecodeError::ALL
                    .iter()
                    .find(|e| e.as_str() == error.as_str())
                    .map_or("", |e| e.as_str())
            );
        }
        let long = format!(r#"{{"method": "{}"}}"#, "m".repeat(MAX_STRING + 1));
        assert_eq!(error_of(long.as_bytes()), DecodeError::TooLong);
        let escaped = format!(r#"{{"method": "\n{}"}}"#, "m".repeat(MAX_STRING));
        assert_eq!(error_of(escaped.as_bytes()), DecodeError::TooLong);
        let rejection = decode(br#"{"method": "login", "id": 9}"#).unwrap_err();
        assert_eq!(
            (rejection.id, rejection.encoding),
            (Some(9), Encoding::Json)
        );
        assert_eq!(rejection.error.status(), INVALID_DATA);
        assert_eq!(DecodeError::BadBson.status(), PARSE_ERROR);
    }

    #[test]
    fn unknown_method_and_aliases() {
        let r = decoded(br#"{"method": "logout", "params": [1, 2], "id": 5}"#);
        assert_eq!(r.method, Method::Unknown("logout".into()));
        assert_eq!((r.params, r.id), (Params::Unknown, Some(5)));
        let r = decoded(br#"{"method": "addPlayer", "params": {"gameId": 1, "slot": 2, "name": "n", "username": "u", "session": "s", "isPrivate": true}}"#);
        assert_eq!(
            r.params,
            Params::AddPlayer(AddPlayer {
                game_id: Some(1),
                slot: Some(2),
                name: Some("n".into()),
                userid: None,
                username: Some("u".into()),
                sessionid: Some("s".into()),
            })
        );
        let r = decoded(br#"{"method": "addGame", "params": {"description": "d", "maxPlayers": 8, "currentPlayers": 0, "port": 2100, "mapname": "Rush", "hostplayer": "h", "multiVer": "2.3.7", "wzVerMajor": 2, "wzVerMinor": 98, "isPrivate": 1, "modlist": ""}}"#);
        assert_eq!(
            r.params,
            Params::AddGame(AddGame {
                description: "d".into(),
                max_players: 8,
                current_players: 0,
                port: Some(2100),
                mapname: Some("Rush".into()),
                hostplayer: Some("h".into()),
                multi_ver: Some("2.3.7".into()),
                wz_ver_major: Some(2),
                wz_ver_minor: Some(98),
                is_private: Some(true),
                modlist: Some("".into()),
            })
        );
        for method in [
            "login",
            "addGame",
            "list",
            "addPlayer",
            "delPlayer",
            "delGame",
            "x",
        ] {
            assert_eq!(Method::from_name(method.into()).name(), method);
        }
    }

    #[test]
    fn round_trip_login() {
        fn prop(id: i64) -> bool {
            let mut g = Gen::new(300);
            let (user, pass) = (arbitrary_text(&mut g), arbitrary_text(&mut g));
            let request = Value::Object(vec![
                ("method".into(), Value::String("login".into())),
                (
                    "params".into(),
                    Value::Object(vec![
                        ("username".into(), Value::String(user.clone())),
                        ("password".into(), Value::String(pass.clone())),
                    ]),
                ),
                ("id".into(), Value::Int(id)),
            ]);
            [Encoding::Bson, Encoding::Json].iter().all(|encoding| {
                let mut body = Vec::new();
                request.encode_document(*encoding, &mut body);
                decode(&body).is_ok_and(|(e, r)| {
                    e == *encoding
                        && r.id == Some(id)
                        && r.params
                            == Params::Login(Login {
                                username: user.as_str().into(),
                                password: pass.as_str().into(),
                            })
                })
            })
        }
        quickcheck(prop as fn(i64) -> bool);
    }
}
