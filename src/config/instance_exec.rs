//! `--instance-exec` and `--instance-stop-grace`: a game server of the operator's per room in
//! place of lobbyd's own relay instance (docs/OPERATING.md, "A game server per room").
//!
//! Same contract as the parent module: strings in, a validated [`InstanceExecSettings`] or a
//! one-line [`UsageError`] out. The command is split into words here, once, by the rules of
//! [`CommandTemplate::parse`] (no shell is involved unless the operator names one); the server
//! only fills in the placeholders per room. It imports the parsing leaf (`super::parse`),
//! never its parent; the parent calls `flags`/`declare`/`settings_from`.

use std::fmt;
use std::time::Duration;

use getopts::{Matches, Options};

use super::parse::{declare_flags, seconds, secs, UsageError, MAX_TIMEOUT_SECS};

/// The most words a command may have (a game server's command line, not a script).
pub const MAX_WORDS: usize = 64;

/// The most bytes of command text.
pub const MAX_COMMAND_LEN: usize = 4096;

/// The placeholders a command may use, in the order of [`Placeholders`]' fields.
pub const PLACEHOLDERS: [&str; 4] = ["port", "room", "players", "seed"];

/// The values one room's command is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placeholders {
    /// `{port}`: the UDP port of `--instance-ports` the game server is to bind.
    pub port: u16,
    /// `{room}`: the room id (ROOM_CREATED's, GAME_START's).
    pub room: u32,
    /// `{players}`: a UDP room's seats (`--max-players`), a party's members at its countdown.
    pub players: u8,
    /// `{seed}`: a random number drawn for the room.
    pub seed: u32,
}

/// One piece of a word: text as written, or a placeholder.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// Index in [`PLACEHOLDERS`].
    Placeholder(usize),
}

/// A command split into words, each a run of text and placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandTemplate {
    words: Vec<Vec<Piece>>,
    /// The text as given, for `--help`-style echoes and logs.
    text: String,
}

impl CommandTemplate {
    /// Splits `text` into words: blanks separate words; `'...'` quotes everything up to the
    /// next `'`; `"..."` quotes up to the next unescaped `"`, where `\"` and `\\` stand for
    /// `"` and `\`; outside quotes `\` takes the next character as it is. `{port}`, `{room}`,
    /// `{players}` and `{seed}` are filled in per room, wherever they stand (inside quotes
    /// too); any other `{name}` made of letters is refused (a misspelt placeholder), other
    /// braces are text. No shell is involved: `sh -c '...'` where one is wanted.
    pub fn parse(text: &str) -> Result<CommandTemplate, String> {
        if text.len() > MAX_COMMAND_LEN {
            return Err(format!("longer than {MAX_COMMAND_LEN} bytes"));
        }
        let mut words: Vec<Vec<Piece>> = Vec::new();
        // The word being read (None between words) and its current text run.
        let mut word: Option<Vec<Piece>> = None;
        let mut run = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                c if c.is_whitespace() => {
                    if let Some(mut pieces) = word.take() {
                        end_run(&mut pieces, &mut run)?;
                        words.push(pieces);
                    }
                    continue;
                }
                '\'' => loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => run.push(c),
                        None => return Err("a ' is not closed".into()),
                    }
                },
                '"' => loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') if matches!(chars.peek(), Some('"' | '\\')) => {
                            run.extend(chars.next());
                        }
                        Some(c) => run.push(c),
                        None => return Err("a \" is not closed".into()),
                    }
                },
                '\\' => match chars.next() {
                    Some(c) => run.push(c),
                    None => return Err("a \\ ends the command".into()),
                },
                c => run.push(c),
            }
            word.get_or_insert_with(Vec::new);
        }
        if let Some(mut pieces) = word.take() {
            end_run(&mut pieces, &mut run)?;
            words.push(pieces);
        }
        if words.is_empty() {
            return Err("no command".into());
        }
        if words.len() > MAX_WORDS {
            return Err(format!("more than {MAX_WORDS} words"));
        }
        Ok(CommandTemplate {
            words,
            text: text.to_string(),
        })
    }

    /// The argument vector for one room: the program, then its arguments.
    pub fn argv(&self, values: &Placeholders) -> Vec<String> {
        let filled = [
            values.port.to_string(),
            values.room.to_string(),
            values.players.to_string(),
            values.seed.to_string(),
        ];
        self.words
            .iter()
            .map(|pieces| {
                let mut word = String::new();
                for piece in pieces {
                    match piece {
                        Piece::Text(text) => word.push_str(text),
                        Piece::Placeholder(i) => word.push_str(&filled[*i]),
                    }
                }
                word
            })
            .collect()
    }
}

impl fmt::Display for CommandTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Ends a run of word text: splits out its placeholders into `pieces`.
fn end_run(pieces: &mut Vec<Piece>, run: &mut String) -> Result<(), String> {
    let text = std::mem::take(run);
    let mut rest = text.as_str();
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let name_len = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        if name_len == 0 || !after[name_len..].starts_with('}') {
            // Not `{letters}`: a brace of the text.
            push_text(pieces, &rest[..=open]);
            rest = after;
            continue;
        }
        let name = &after[..name_len];
        let Some(index) = PLACEHOLDERS.iter().position(|p| *p == name) else {
            return Err(format!(
                "{{{name}}} is not one of {{port}}, {{room}}, {{players}}, {{seed}}"
            ));
        };
        push_text(pieces, &rest[..open]);
        pieces.push(Piece::Placeholder(index));
        rest = &after[name_len + 1..];
    }
    push_text(pieces, rest);
    Ok(())
}

fn push_text(pieces: &mut Vec<Piece>, text: &str) {
    if text.is_empty() {
        return;
    }
    match pieces.last_mut() {
        Some(Piece::Text(last)) => last.push_str(text),
        _ => pieces.push(Piece::Text(text.to_string())),
    }
}

/// The game-server settings. `Default`: no command (lobbyd's own relay), 5 s grace.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceExecSettings {
    /// The command each room runs (`--instance-exec`); `None`: lobbyd's own relay instance.
    pub command: Option<CommandTemplate>,
    /// How long a game server has between SIGTERM and SIGKILL (`--instance-stop-grace`,
    /// default 5 s, 0 to 60 s).
    pub stop_grace: Duration,
}

impl Default for InstanceExecSettings {
    fn default() -> Self {
        InstanceExecSettings {
            command: None,
            stop_grace: Duration::from_secs(5),
        }
    }
}

/// The longest `--instance-stop-grace`: lobbyd's own shutdown waits this long at most.
const MAX_STOP_GRACE_SECS: f64 = 60.0;

/// The flags: (long name, value hint, description).
pub(super) fn flags(d: &InstanceExecSettings) -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "instance-exec",
            "CMD",
            "Run CMD as each room's game server instead of lobbyd's relay: {port} {room} \
             {players} {seed} filled in, split into words with ' \" \\ quoting, no shell, \
             own process group (default none)."
                .into(),
        ),
        (
            "instance-stop-grace",
            "SECS",
            format!(
                "How long a game server has between SIGTERM and SIGKILL when its room ends \
                 or lobbyd stops (default {}, at most {MAX_STOP_GRACE_SECS}).",
                secs(d.stop_grace)
            ),
        ),
    ]
}

/// Adds the flags to `options`.
pub(super) fn declare(options: &mut Options, d: &InstanceExecSettings) {
    declare_flags(options, &flags(d));
}

/// Builds the settings from parsed flags.
pub(super) fn settings_from(
    m: &Matches,
    d: InstanceExecSettings,
) -> Result<InstanceExecSettings, UsageError> {
    let command = match m.opt_str("instance-exec") {
        Some(text) => Some(
            CommandTemplate::parse(&text)
                .map_err(|why| UsageError::new(format!("--instance-exec: {text:?}: {why}")))?,
        ),
        None => d.command,
    };
    let stop_grace = seconds(
        m,
        "instance-stop-grace",
        0.0..=MAX_STOP_GRACE_SECS.min(MAX_TIMEOUT_SECS),
        d.stop_grace,
    )?;
    Ok(InstanceExecSettings {
        command,
        stop_grace,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUES: Placeholders = Placeholders {
        port: 4301,
        room: 7,
        players: 4,
        seed: 99,
    };

    fn argv(text: &str) -> Vec<String> {
        CommandTemplate::parse(text).unwrap().argv(&VALUES)
    }

    #[test]
    fn words_quotes_and_placeholders() {
        assert_eq!(
            argv("  ./game --port {port} --room={room}  "),
            ["./game", "--port", "4301", "--room=7"]
        );
        assert_eq!(
            argv(r#"sh -c 'exec ./game {port} >"log {room}.txt"' -"#),
            ["sh", "-c", "exec ./game 4301 >\"log 7.txt\"", "-"]
        );
        assert_eq!(
            argv(r#"a "b \"c\" \\ \n" d\ e ''"#),
            ["a", r#"b "c" \ \n"#, "d e", ""]
        );
        assert_eq!(argv("x{players}y{seed}{port}"), ["x4y994301"]);
        // Braces that are not `{letters}` are text.
        assert_eq!(argv("{} {1} {port"), ["{}", "{1}", "{port"]);
    }

    #[test]
    fn refusals_say_why() {
        for (text, why) in [
            ("", "no command"),
            ("   ", "no command"),
            ("game 'open", "not closed"),
            ("game \"open", "not closed"),
            ("game \\", "ends the command"),
            ("game {prot}", "{prot} is not one of"),
        ] {
            let err = CommandTemplate::parse(text).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
        }
        let many = "w ".repeat(MAX_WORDS + 1);
        assert!(CommandTemplate::parse(&many).is_err());
        assert!(CommandTemplate::parse(&"x".repeat(MAX_COMMAND_LEN + 1)).is_err());
    }

    #[test]
    fn arbitrary_text_never_panics() {
        fn prop(text: String) -> bool {
            if let Ok(template) = CommandTemplate::parse(&text) {
                return !template.argv(&VALUES).is_empty();
            }
            true
        }
        quickcheck::quickcheck(prop as fn(String) -> bool);
    }
}
