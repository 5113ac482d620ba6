//! `--config FILE`: settings from a file, in the flat `key = value` subset of TOML, turned
//! into the flags they stand for.
//!
//! Every key is a flag's long name (`lobby-port = 4243`, `auto-start = true`, `motd =
//! "hi"`); values are strings (basic `"..."` with the usual escapes, or literal `'...'`),
//! integers, decimals and booleans; `#` starts a comment. Tables, arrays, dates and
//! multi-line strings are not part of it: no flag takes one. The file only lists flags: the
//! caller checks each key against the flag table (a switch takes a boolean, a flag with a
//! value takes a string or a number) and every value goes through the same checks as on the
//! command line, so the file can never mean more than the flags do.
//!
//! This is a leaf: it imports `parse` for [`UsageError`] and nothing else of `config`.

use super::parse::UsageError;

/// One value of the file.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum FileValue {
    /// `"text"` or `'text'`.
    Text(String),
    /// An integer or a decimal, as written (underscores removed): the flag parses it.
    Number(String),
    /// `true` or `false`.
    Bool(bool),
}

/// One `key = value` line.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct FileSetting {
    /// The line number, from 1.
    pub line: usize,
    /// The key: a flag's long name, unchecked.
    pub key: String,
    /// Its value.
    pub value: FileValue,
}

/// Parses the text of a config file; an error names the file, the line and the key.
pub(super) fn parse_config_file(path: &str, text: &str) -> Result<Vec<FileSetting>, UsageError> {
    let mut settings: Vec<FileSetting> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let fail = |what: String| UsageError::new(format!("{path}:{line}: {what}"));
        let content = raw.trim();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if content.starts_with('[') {
            return Err(fail(
                "tables are not supported: every key is a flag's long name".into(),
            ));
        }
        let (key, rest) = split_key(content).map_err(fail)?;
        let value = parse_value(rest.trim_start()).map_err(|e| fail(format!("{key}: {e}")))?;
        if let Some(first) = settings.iter().find(|s| s.key == key) {
            return Err(fail(format!("{key}: already set on line {}", first.line)));
        }
        settings.push(FileSetting { line, key, value });
    }
    Ok(settings)
}

/// Splits `key = rest` (a bare or quoted key).
fn split_key(content: &str) -> Result<(String, &str), String> {
    let (key, rest) = if let Some(quoted) = content.strip_prefix('"') {
        let end = quoted.find('"').ok_or("unterminated key")?;
        (quoted[..end].to_string(), &quoted[end + 1..])
    } else {
        let end = content
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(content.len());
        (content[..end].to_string(), &content[end..])
    };
    if key.is_empty() {
        return Err(format!("expected key = value, got {content:?}"));
    }
    match rest.trim_start().strip_prefix('=') {
        Some(value) => Ok((key, value)),
        None => Err(format!("{key}: expected = after the key")),
    }
}

/// Parses a value and what may follow it on the line (spaces, a comment).
fn parse_value(text: &str) -> Result<FileValue, String> {
    let (value, rest) = match text.chars().next() {
        Some('"') => {
            if text.starts_with("\"\"\"") {
                return Err("multi-line strings are not supported".into());
            }
            let (value, len) = basic_string(&text[1..])?;
            (FileValue::Text(value), &text[1 + len..])
        }
        Some('\'') => {
            let end = text[1..].find('\'').ok_or("unterminated string")?;
            (
                FileValue::Text(text[1..1 + end].to_string()),
                &text[end + 2..],
            )
        }
        Some(_) => {
            let end = text.find([' ', '\t', '#']).unwrap_or(text.len());
            (bare_value(&text[..end])?, &text[end..])
        }
        None => return Err("missing value".into()),
    };
    let rest = rest.trim_start();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(value)
    } else {
        Err(format!("unexpected {rest:?} after the value"))
    }
}

/// A basic string's text after its opening quote: the unescaped value and the length taken,
/// closing quote included.
fn basic_string(text: &str) -> Result<(String, usize), String> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Ok((value, at + 1)),
            '\\' => {
                let escaped = match chars.next().map(|(_, e)| e) {
                    Some('"') => '"',
                    Some('\\') => '\\',
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some('r') => '\r',
                    Some(u @ ('u' | 'U')) => {
                        let digits = if u == 'u' { 4 } else { 8 };
                        let hex: String = chars.by_ref().take(digits).map(|(_, h)| h).collect();
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == digits)
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("bad escape \\{u}{hex}"))?
                    }
                    other => return Err(format!("bad escape \\{}", other.unwrap_or(' '))),
                };
                value.push(escaped);
            }
            c if c.is_control() && c != '\t' => return Err("control character in a string".into()),
            c => value.push(c),
        }
    }
    Err("unterminated string".into())
}

/// `true`, `false`, an integer or a decimal.
fn bare_value(text: &str) -> Result<FileValue, String> {
    match text {
        "true" => return Ok(FileValue::Bool(true)),
        "false" => return Ok(FileValue::Bool(false)),
        _ => {}
    }
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    let number_like = digits.starts_with(|c: char| c.is_ascii_digit())
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '_' | '.' | 'e' | 'E' | '+' | '-'));
    let plain = text.strip_prefix('+').unwrap_or(text).replace('_', "");
    if number_like && plain.parse::<f64>().is_ok() {
        Ok(FileValue::Number(plain))
    } else {
        Err(format!(
            "{text:?} is not a string, a number or a boolean (quote text: \"...\")"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Result<FileValue, UsageError> {
        parse_config_file("f.toml", text).map(|mut s| s.remove(0).value)
    }

    #[test]
    fn values() {
        let text = "# lobbyd\n\nlobby-port = 4243 # the general lobby\nauto-start = true\n\
                    motd = \"hi \\\"you\\\"\\n\\u00e9\"\nlog='debug'\ncountdown = 2.5\n\
                    \"max-rooms\" = 1_000\nwz-check-reachable = false\n";
        let settings = parse_config_file("f.toml", text).unwrap();
        let pairs: Vec<(usize, &str, &FileValue)> = settings
            .iter()
            .map(|s| (s.line, s.key.as_str(), &s.value))
            .collect();
        assert_eq!(
            pairs,
            [
                (3, "lobby-port", &FileValue::Number("4243".into())),
                (4, "auto-start", &FileValue::Bool(true)),
                (5, "motd", &FileValue::Text("hi \"you\"\né".into())),
                (6, "log", &FileValue::Text("debug".into())),
                (7, "countdown", &FileValue::Number("2.5".into())),
                (8, "max-rooms", &FileValue::Number("1000".into())),
                (9, "wz-check-reachable", &FileValue::Bool(false)),
            ]
        );
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        let err = |text: &str| parse_config_file("f.toml", text).unwrap_err().reason;
        assert_eq!(
            err("a = 1\nport = four\n"),
            "f.toml:2: port: \"four\" is not a string, a number or a boolean (quote text: \"...\")"
        );
        assert_eq!(err("motd = \"open"), "f.toml:1: motd: unterminated string");
        assert_eq!(
            err("[server]\n"),
            "f.toml:1: tables are not supported: every key is a flag's long name"
        );
        assert_eq!(err("port 4242"), "f.toml:1: port: expected = after the key");
        assert_eq!(
            err("port = 1\nport = 2"),
            "f.toml:2: port: already set on line 1"
        );
        assert_eq!(
            err("port = 1 2"),
            "f.toml:1: port: unexpected \"2\" after the value"
        );
        assert_eq!(err("port ="), "f.toml:1: port: missing value");
        assert_eq!(err("= 3"), "f.toml:1: expected key = value, got \"= 3\"");
        assert!(one("motd = \"\\q\"").is_err());
        assert!(one("motd = \"\"\"x\"\"\"").is_err());
        assert!(one("spawns = [1, 2]").is_err());
    }

    quickcheck::quickcheck! {
        fn arbitrary_text_never_panics(text: String) -> bool {
            let _ = parse_config_file("f", &text);
            true
        }
    }
}
