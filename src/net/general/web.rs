//! The static files the general lobby's WebSocket port serves for plain GETs
//! (`--lobby-web DIR`; docs/protocols/general-lobby.md, "WebSocket transport"), so a page and
//! its WebSocket share one origin.
//!
//! The directory is read once, at start, before the loop runs: the loop never waits on
//! the disk, and a request is a lookup in memory. Bounded: at most [`MAX_FILES`] files of
//! at most [`MAX_FILE`] bytes each, [`MAX_TOTAL`] in all, [`MAX_DEPTH`] folders deep; only
//! the extensions of [`content_type`] are served; names are plain (letters, digits, `.`,
//! `_`, `-`, no leading dot). Nothing outside DIR is reachable: a symlink is followed only
//! when it resolves to a file inside DIR, and a request is a name looked up in the table,
//! never a path opened (a `..` segment is refused before the lookup).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// Largest file served.
pub const MAX_FILE: usize = 512 * 1024;
/// Most bytes served in all.
pub const MAX_TOTAL: usize = 8 * 1024 * 1024;
/// Most files served.
pub const MAX_FILES: usize = 256;
/// Deepest folder served (DIR itself is 0).
pub const MAX_DEPTH: usize = 8;

/// One file, with its content type.
#[derive(Debug)]
pub struct WebFile {
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The bytes.
    pub body: Box<[u8]>,
}

/// The files of `--lobby-web`, by URL path (`/index.html`, `/js/lobby.js`).
#[derive(Debug, Default)]
pub struct WebFiles {
    files: HashMap<String, WebFile>,
    bytes: usize,
}

/// What a request's path finds.
#[derive(Debug)]
pub enum Lookup<'a> {
    /// The file.
    Found(&'a WebFile),
    /// A path with a `..` segment, a backslash or an empty segment: refused (400).
    Refused,
    /// No such file (404).
    Missing,
}

/// The content type of a served extension; `None`: not served.
pub fn content_type(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1;
    Some(match ext {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" | "map" => "application/json",
        "txt" => "text/plain; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "wasm" => "application/wasm",
        _ => return None,
    })
}

/// A file or folder name that is served: plain characters, no leading dot.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl WebFiles {
    /// Reads `dir` (at start, before the loop). An unreadable `dir` is an error; a file
    /// past a bound, with another extension or name, or a symlink leading out, is skipped
    /// with a log line.
    pub fn load(dir: &Path) -> io::Result<WebFiles> {
        let root = dir
            .canonicalize()
            .map_err(|e| io::Error::new(e.kind(), format!("--lobby-web {}: {e}", dir.display())))?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--lobby-web {}: not a directory", dir.display()),
            ));
        }
        let mut web = WebFiles::default();
        web.walk(&root, &root, String::new(), 0)?;
        log::info!(
            "general lobby: serving {} files ({} bytes) from {}",
            web.files.len(),
            web.bytes,
            root.display()
        );
        Ok(web)
    }

    fn walk(&mut self, root: &Path, dir: &Path, prefix: String, depth: usize) -> io::Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for path in entries {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !plain_name(name) {
                log::debug!("--lobby-web: skipping {} (name)", path.display());
                continue;
            }
            // Follow a symlink only to a place inside the root.
            let Ok(real) = path.canonicalize() else {
                continue;
            };
            if !real.starts_with(root) {
                log::warn!("--lobby-web: skipping {} (leads outside)", path.display());
                continue;
            }
            let url = format!("{prefix}/{name}");
            if real.is_dir() {
                if depth < MAX_DEPTH && real != root {
                    self.walk(root, &real, url, depth + 1)?;
                }
                continue;
            }
            self.add(&real, url);
        }
        Ok(())
    }

    fn add(&mut self, path: &Path, url: String) {
        let Some(content_type) = content_type(&url) else {
            log::debug!("--lobby-web: skipping {} (type)", path.display());
            return;
        };
        let len = std::fs::metadata(path).map_or(usize::MAX, |m| m.len() as usize);
        if len > MAX_FILE || self.files.len() >= MAX_FILES || self.bytes + len > MAX_TOTAL {
            log::warn!(
                "--lobby-web: skipping {} ({len} bytes; at most {MAX_FILE} a file, {MAX_TOTAL} \
                 and {MAX_FILES} files in all)",
                path.display()
            );
            return;
        }
        match std::fs::read(path) {
            Ok(body) if body.len() <= MAX_FILE => {
                self.bytes += body.len();
                let body = body.into_boxed_slice();
                self.files.insert(url, WebFile { content_type, body });
            }
            Ok(_) => log::warn!("--lobby-web: skipping {} (grew)", path.display()),
            Err(e) => log::warn!("--lobby-web: skipping {}: {e}", path.display()),
        }
    }

    /// The file a request's `path` (without its query) names: `/` and a folder's `/` stand
    /// for its `index.html`.
    pub fn get(&self, path: &str) -> Lookup<'_> {
        let Some(rest) = path.strip_prefix('/') else {
            return Lookup::Refused;
        };
        let mut segments = rest.split('/').peekable();
        while let Some(segment) = segments.next() {
            let last = segments.peek().is_none();
            if matches!(segment, ".." | ".")
                || segment.contains('\\')
                || (segment.is_empty() && !last)
            {
                return Lookup::Refused;
            }
        }
        let found = if path.ends_with('/') {
            self.files.get(&format!("{path}index.html"))
        } else {
            self.files.get(path)
        };
        found.map_or(Lookup::Missing, Lookup::Found)
    }

    /// Files served.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.files.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_within_bounds_and_never_leads_out() {
        let base = std::env::temp_dir().join(format!("lobbyd-web-{}", std::process::id()));
        let dir = base.join("site");
        std::fs::create_dir_all(dir.join("js")).unwrap();
        std::fs::write(dir.join("index.html"), "<p>hi</p>").unwrap();
        std::fs::write(dir.join("js/app.js"), "1").unwrap();
        std::fs::write(dir.join("notes.exe"), "x").unwrap();
        std::fs::write(dir.join(".hidden.html"), "x").unwrap();
        std::fs::write(dir.join("big.txt"), vec![b'a'; MAX_FILE + 1]).unwrap();
        std::fs::write(base.join("secret.txt"), "secret").unwrap();
        let _ = std::os::unix::fs::symlink(base.join("secret.txt"), dir.join("out.txt"));
        let _ = std::os::unix::fs::symlink(dir.join("index.html"), dir.join("in.html"));
        let web = WebFiles::load(&dir).unwrap();
        let body = |path| match web.get(path) {
            Lookup::Found(file) => Some((file.content_type, file.body.to_vec())),
            _ => None,
        };
        assert_eq!(
            body("/"),
            Some(("text/html; charset=utf-8", b"<p>hi</p>".to_vec()))
        );
        assert_eq!(body("/in.html"), body("/index.html"));
        assert_eq!(
            body("/js/app.js").map(|b| b.0),
            Some("text/javascript; charset=utf-8")
        );
        for missing in [
            "/notes.exe",
            "/.hidden.html",
            "/big.txt",
            "/out.txt",
            "/secret.txt",
        ] {
            assert!(matches!(web.get(missing), Lookup::Missing), "{missing}");
        }
        for refused in [
            "/../secret.txt",
            "/js/../index.html",
            "/./index.html",
            "//index.html",
            "x",
        ] {
            assert!(matches!(web.get(refused), Lookup::Refused), "{refused}");
        }
        assert_eq!(web.len(), 3);
        std::fs::remove_dir_all(&base).unwrap();
        assert!(
            WebFiles::load(&base).is_err(),
            "a missing directory stops the start"
        );
    }
}
