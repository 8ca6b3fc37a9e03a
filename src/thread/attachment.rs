//! Files a person attaches to a message (issue 21): images the agent looks at, and text files it
//! reads. What may be attached, judged the same way by the composer (before anything is sent) and
//! by the server (which also reads the bytes: a "PNG" must begin as a PNG does). A message refers
//! to a stored file by its SHA-256, so that the thread does not carry its bytes.

use serde::{Deserialize, Serialize};

/// The largest file a message may carry: the Messages API's limit for an image (5 MB).
pub const MAX_ATTACHMENT_BYTES: usize = 5 * 1024 * 1024;
/// Files one message may carry.
pub const MAX_ATTACHMENTS_PER_MESSAGE: usize = 20;
/// What the store and the server say a text file is, whatever the browser called it: served so,
/// it can never be taken for a page or a script.
pub const TEXT_MEDIA_TYPE: &str = "text/plain";
/// The images the Messages API (and Claude Code) take.
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// A stored file, as a message refers to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentRef {
    /// SHA-256 of the bytes, lowercase hex: the file's address (`/api/attachments/<hash>`).
    pub hash: String,
    /// One of `IMAGE_MEDIA_TYPES`, or `TEXT_MEDIA_TYPE`.
    pub media_type: String,
    /// The file's name on the person's machine, when it had one (a pasted screenshot may not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub size: u64,
}

impl AttachmentRef {
    pub fn kind(&self) -> Option<Kind> {
        Kind::of_media_type(&self.media_type)
    }

    /// Where the browser fetches it.
    pub fn url(&self) -> String {
        attachment_url(&self.hash)
    }
}

pub fn attachment_url(hash: &str) -> String {
    format!("/api/attachments/{hash}")
}

/// Whether `hash` is a SHA-256 as the store keys files: 64 lowercase hex digits.
pub fn is_hash(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An image, with its media type (one of `IMAGE_MEDIA_TYPES`).
    Image(&'static str),
    Text,
}

/// Why a file cannot be attached, in words for the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    TooLarge {
        size: usize,
    },
    /// Neither an image the agent can read nor a text file.
    UnknownKind {
        declared: String,
    },
    /// The bytes are not what the name or type says (a "PNG" that is not one).
    NotWhatItSays {
        declared: String,
    },
    /// Said to be text, but is not UTF-8 text.
    NotText,
    Empty,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLarge { size } => write!(
                f,
                "it is {:.1} MB, and a file may be at most {} MB",
                *size as f64 / (1024.0 * 1024.0),
                MAX_ATTACHMENT_BYTES / (1024 * 1024)
            ),
            Self::UnknownKind { declared } if declared.is_empty() => {
                write!(f, "it is not an image (PNG, JPEG, GIF, WebP) or a text file")
            }
            Self::UnknownKind { declared } => {
                write!(f, "{declared} is not an image the agent can read (PNG, JPEG, GIF, WebP) or a text file")
            }
            Self::NotWhatItSays { declared } => write!(f, "its content is not {declared}"),
            Self::NotText => write!(f, "it is not a text file (its content is not UTF-8 text)"),
            Self::Empty => write!(f, "it is empty"),
        }
    }
}

impl Kind {
    pub fn of_media_type(media_type: &str) -> Option<Self> {
        let essence = media_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        if let Some(image) = IMAGE_MEDIA_TYPES.iter().find(|t| **t == essence) {
            return Some(Self::Image(image));
        }
        let texty = essence.starts_with("text/")
            || TEXT_APPLICATION_TYPES.contains(&essence.as_str())
            || essence.ends_with("+json")
            || (essence.ends_with("+xml") && essence != "image/svg+xml");
        texty.then_some(Self::Text)
    }

    /// What a file the person picked is, from its browser-given type and its name (browsers give
    /// no type to most source files: `main.rs` is `""`).
    pub fn of_file(media_type: &str, name: &str) -> Option<Self> {
        if !media_type.is_empty() && media_type != "application/octet-stream" {
            return Self::of_media_type(media_type);
        }
        let extension = name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase());
        match extension.as_deref() {
            Some("png") => Some(Self::Image("image/png")),
            Some("jpg" | "jpeg") => Some(Self::Image("image/jpeg")),
            Some("gif") => Some(Self::Image("image/gif")),
            Some("webp") => Some(Self::Image("image/webp")),
            Some(ext) if TEXT_EXTENSIONS.contains(&ext) => Some(Self::Text),
            // No extension at all: Makefile, Dockerfile, LICENSE.
            None if !name.is_empty() && !name.starts_with('.') => Some(Self::Text),
            _ => None,
        }
    }

    /// The media type a file of this kind is sent and stored with.
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Image(media_type) => media_type,
            Self::Text => TEXT_MEDIA_TYPE,
        }
    }
}

const TEXT_APPLICATION_TYPES: [&str; 12] = [
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/x-sh",
    "application/x-shellscript",
    "application/toml",
    "application/yaml",
    "application/x-yaml",
    "application/sql",
    "application/x-httpd-php",
];

const TEXT_EXTENSIONS: [&str; 56] = [
    "txt", "md", "markdown", "rst", "csv", "tsv", "log", "json", "jsonl", "ndjson", "yaml", "yml", "toml", "ini",
    "cfg", "conf", "env", "xml", "html", "htm", "css", "scss", "js", "mjs", "cjs", "ts", "tsx", "jsx", "rs", "py",
    "rb", "go", "java", "kt", "c", "h", "cc", "cpp", "hpp", "cs", "swift", "php", "sh", "bash", "zsh", "sql", "lua",
    "pl", "r", "scala", "ex", "exs", "hs", "diff", "patch", "lock",
];

/// Judges a file before it is stored: its declared type (`Content-Type`) must be an image the
/// agent reads, whose bytes begin as such an image does, or text that is UTF-8.
pub fn check(declared: &str, bytes: &[u8]) -> Result<Kind, Refused> {
    if bytes.len() > MAX_ATTACHMENT_BYTES {
        return Err(Refused::TooLarge { size: bytes.len() });
    }
    if bytes.is_empty() {
        return Err(Refused::Empty);
    }
    let kind = Kind::of_media_type(declared).ok_or_else(|| Refused::UnknownKind { declared: declared.to_string() })?;
    match kind {
        Kind::Image(media_type) if sniff_image(bytes) == Some(media_type) => Ok(kind),
        Kind::Image(media_type) => Err(Refused::NotWhatItSays { declared: media_type.to_string() }),
        Kind::Text if std::str::from_utf8(bytes).is_ok() && !bytes.contains(&0) => Ok(kind),
        Kind::Text => Err(Refused::NotText),
    }
}

/// The image type that `bytes` begin as (their magic number), if one the agent reads.
pub fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn an_image_is_accepted_when_its_bytes_are_what_its_type_says() {
        assert_eq!(check("image/png", PNG), Ok(Kind::Image("image/png")));
        assert_eq!(check("image/gif", b"GIF89a..."), Ok(Kind::Image("image/gif")));
        assert_eq!(check("image/webp", b"RIFF\0\0\0\0WEBPVP8 "), Ok(Kind::Image("image/webp")));
        assert_eq!(check("image/jpeg", &[0xFF, 0xD8, 0xFF, 0xE0]), Ok(Kind::Image("image/jpeg")));
    }

    #[test]
    fn text_sent_as_a_png_is_refused_as_not_what_it_says() {
        assert_eq!(check("image/png", b"just some text"), Err(Refused::NotWhatItSays { declared: "image/png".into() }));
        // A JPEG labelled PNG is refused too: the agent is told the media type.
        assert!(matches!(check("image/png", &[0xFF, 0xD8, 0xFF, 0xE0]), Err(Refused::NotWhatItSays { .. })));
    }

    #[test]
    fn a_file_over_five_megabytes_is_refused_whatever_it_is() {
        let big = vec![b'a'; MAX_ATTACHMENT_BYTES + 1];
        assert_eq!(check("text/plain", &big), Err(Refused::TooLarge { size: MAX_ATTACHMENT_BYTES + 1 }));
        assert!(check("text/plain", &big[..MAX_ATTACHMENT_BYTES]).is_ok());
    }

    #[test]
    fn unknown_kinds_are_refused_svg_and_pdf_among_them() {
        for declared in ["image/svg+xml", "application/pdf", "application/octet-stream", ""] {
            assert!(matches!(check(declared, b"<svg/>"), Err(Refused::UnknownKind { .. })), "{declared}");
        }
    }

    #[test]
    fn text_must_be_utf8_without_nul() {
        assert_eq!(check("text/plain; charset=utf-8", "héllo".as_bytes()), Ok(Kind::Text));
        assert_eq!(check("text/plain", b"\xff\xfe"), Err(Refused::NotText));
        assert_eq!(check("text/plain", b"a\0b"), Err(Refused::NotText));
        assert_eq!(check("text/plain", b""), Err(Refused::Empty));
    }

    #[test]
    fn a_picked_file_is_judged_by_its_type_or_else_its_name() {
        assert_eq!(Kind::of_file("image/png", "a.png"), Some(Kind::Image("image/png")));
        assert_eq!(Kind::of_file("", "main.rs"), Some(Kind::Text));
        assert_eq!(Kind::of_file("", "Makefile"), Some(Kind::Text));
        assert_eq!(Kind::of_file("text/markdown", "notes.md"), Some(Kind::Text));
        assert_eq!(Kind::of_file("application/pdf", "paper.pdf"), None);
        assert_eq!(Kind::of_file("", "archive.zip"), None);
        assert_eq!(Kind::of_file("image/svg+xml", "logo.svg"), None);
    }

    #[test]
    fn hashes_are_64_lowercase_hex_digits() {
        assert!(is_hash(&"ab".repeat(32)));
        assert!(!is_hash(&"AB".repeat(32)));
        assert!(!is_hash("../etc/passwd"));
    }
}
