//! The person's message as the model reads it, files included (issue 21): its text, then each
//! attached file, as the Messages API's own blocks. Claude Code's stream-json user message takes
//! the same content array, so both backends send what this writes.
//!
//! An image goes as an `image` block with its bytes in base64. A text file goes as a `text` block
//! that names it, `File: notes.txt` and a blank line before its contents: every agent reads a
//! text block, where a `document` block with a text source is the Messages API's alone and Claude
//! Code's stream-json input does not promise to take it; the name tells the model which file it
//! reads when there are several.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;

use super::{ContentBlock, ImageSource};
use crate::thread::AttachmentRef;
use crate::thread::attachment::Kind;

/// The text, then each file.
pub fn message_content(text: &str, files: &[AttachmentRef], bytes: &HashMap<String, Arc<[u8]>>) -> Vec<ContentBlock> {
    let mut blocks = Vec::new();
    if !text.trim().is_empty() {
        blocks.push(ContentBlock::text(text));
    }
    blocks.extend(files.iter().map(|file| file_block(file, bytes)));
    blocks
}

/// One attached file as a block: an image, or a text block that names the file.
fn file_block(file: &AttachmentRef, bytes: &HashMap<String, Arc<[u8]>>) -> ContentBlock {
    let name = file.name.as_deref().unwrap_or("attached file");
    let Some(content) = bytes.get(&file.hash) else {
        return ContentBlock::text(format!("[The attached file {name} is no longer stored on the server.]"));
    };
    match file.kind() {
        Some(Kind::Image(media_type)) => ContentBlock::image(ImageSource::Base64 {
            media_type: media_type.to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(content),
        }),
        _ => ContentBlock::text(format!("File: {name}\n\n{}", String::from_utf8_lossy(content))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn file(hash: &str, media_type: &str, name: &str) -> AttachmentRef {
        AttachmentRef { hash: hash.into(), media_type: media_type.into(), name: Some(name.into()), size: 3 }
    }

    #[test]
    fn a_message_is_its_text_then_an_image_block_per_image_and_a_named_text_block_per_file() {
        let bytes = HashMap::from([
            ("h1".to_string(), Arc::<[u8]>::from(&b"\x89PNG"[..])),
            ("h2".to_string(), Arc::<[u8]>::from(&b"a = 1\n"[..])),
        ]);
        let files = [file("h1", "image/png", "shot.png"), file("h2", "text/plain", "notes.txt")];
        let blocks = message_content("What is this?", &files, &bytes);
        assert_eq!(
            serde_json::to_value(&blocks).unwrap(),
            json!([
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
                {"type": "text", "text": "File: notes.txt\n\na = 1\n"},
            ])
        );
    }

    #[test]
    fn a_file_no_longer_stored_is_named_rather_than_left_out_silently() {
        let blocks = message_content("x", &[file("gone", "image/png", "old.png")], &HashMap::new());
        assert_eq!(blocks[1], ContentBlock::text("[The attached file old.png is no longer stored on the server.]"));
    }
}
