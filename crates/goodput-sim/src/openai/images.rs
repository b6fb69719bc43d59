//! Images in chat requests, as the simulated engine charges them: each
//! image's size read from its PNG or JPEG header (data URLs only: the
//! simulator fetches nothing), its tokens as a Qwen2-VL-style encoder
//! makes them, and its encoder's work.

use super::fields::ChatMessage;
use base64::prelude::{Engine as _, BASE64_STANDARD};

/// One image of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageInput {
    pub width: u32,
    pub height: u32,
    /// Encoded bytes.
    pub bytes: usize,
    /// A hash of its bytes: the same image, the same tokens (a server's
    /// multimodal cache and prefix cache key on it), another image, others.
    pub hash: u64,
}

/// Pixels a vision patch covers on a side (Qwen2-VL's and most ViTs' 14),
/// and the patches merged into one token on a side (Qwen2-VL merges 2×2).
pub const PATCH: u32 = 14;
pub const MERGE: u32 = 2;
/// The vision encoder's parameters (Qwen2-VL-7B's ViT: 675 M).
pub const ENCODER_PARAMS: f64 = 675e6;

impl ImageInput {
    /// Patches the encoder sees: the image cut into 14-pixel squares, each
    /// side rounded up to whole merged tokens.
    pub fn patches(&self) -> u64 {
        let side = |px: u32| u64::from(px.div_ceil(PATCH * MERGE) * MERGE);
        side(self.width).saturating_mul(side(self.height))
    }

    /// Tokens the image adds to the prompt: its patches merged 2×2, and the
    /// vision start and end markers.
    pub fn tokens(&self) -> u64 {
        self.patches() / u64::from(MERGE * MERGE) + 2
    }

    /// The encoder's floating-point work: 2 × parameters per patch (its
    /// attention over the patches left out).
    pub fn encoder_flops(&self) -> f64 {
        2.0 * ENCODER_PARAMS * self.patches() as f64
    }
}

/// Why an image part cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageError(pub String);

/// The images of chat messages' content parts (`image_url` with a data URL).
pub fn images_of(messages: &[ChatMessage]) -> Result<Vec<ImageInput>, ImageError> {
    let mut out = Vec::new();
    for url in messages.iter().flat_map(|m| &m.content.images) {
        out.push(read_data_url(url)?);
    }
    Ok(out)
}

/// The tokens `images` add to a prompt, added up (saturating): what is
/// checked against the context before any placeholder id is made, for a
/// header may claim any size (4294967295 × 4294967295 pixels is 2.3e16
/// tokens, and building their ids had aborted the server).
pub fn tokens_of(images: &[ImageInput]) -> u64 {
    images.iter().fold(0u64, |sum, i| sum.saturating_add(i.tokens()))
}

fn read_data_url(url: &str) -> Result<ImageInput, ImageError> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(ImageError(
            "the simulated server takes images as data URLs (data:image/png;base64,...) only: it fetches nothing"
                .into(),
        ));
    };
    let Some((_, b64)) = rest.split_once(";base64,") else {
        return Err(ImageError("an image data URL must be base64 (data:image/png;base64,...)".into()));
    };
    let bytes = BASE64_STANDARD
        .decode(b64.trim())
        .map_err(|e| ImageError(format!("an image's base64 does not decode: {e}")))?;
    let (width, height) = dimensions(&bytes)
        .ok_or_else(|| ImageError("an image is neither a PNG nor a JPEG whose size its header gives".into()))?;
    Ok(ImageInput { width, height, bytes: bytes.len(), hash: goodput_core::util::hash::fnv1a64(&bytes) })
}

/// Width and height from a PNG's IHDR or a JPEG's start-of-frame.
fn dimensions(b: &[u8]) -> Option<(u32, u32)> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") && b.get(12..16) == Some(b"IHDR") {
        let be = |at: usize| Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?));
        return Some((be(16)?, be(20)?));
    }
    if !b.starts_with(&[0xff, 0xd8]) {
        return None;
    }
    let mut at = 2;
    while at + 4 <= b.len() {
        if b[at] != 0xff {
            return None;
        }
        let marker = b[at + 1];
        let len = usize::from(u16::from_be_bytes([b[at + 2], b[at + 3]]));
        // Start of frame: baseline, extended, progressive, lossless (not DHT, JPG, DAC).
        if (0xc0..=0xcf).contains(&marker) && ![0xc4, 0xc8, 0xcc].contains(&marker) {
            let h = u16::from_be_bytes([*b.get(at + 5)?, *b.get(at + 6)?]);
            let w = u16::from_be_bytes([*b.get(at + 7)?, *b.get(at + 8)?]);
            return Some((u32::from(w), u32::from(h)));
        }
        at += 2 + len;
    }
    None
}

/// The prompt token ids standing for `img`: distinct per image (drawn from
/// its hash), in a range above the text vocabulary the simulator's words use.
pub fn placeholder_ids(img: &ImageInput) -> impl Iterator<Item = u32> + '_ {
    (0..img.tokens()).map(move |k| 1_000_000 + (goodput_core::util::hash::draw(img.hash, k) % 1_000_000_000) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_header(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 2, 0, 0, 0]);
        b
    }

    #[test]
    fn sizes_come_from_png_and_jpeg_headers() {
        assert_eq!(dimensions(&png_header(640, 480)), Some((640, 480)));
        // SOI, an APP0 segment, then a baseline SOF0 of 300 × 200.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00];
        jpeg.extend([0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0xc8, 0x01, 0x2c, 0x03]);
        assert_eq!(dimensions(&jpeg), Some((300, 200)));
        assert_eq!(dimensions(b"GIF89a"), None);
    }

    #[test]
    fn an_images_tokens_follow_its_size() {
        let img = |w, h| ImageInput { width: w, height: h, bytes: 0, hash: 1 };
        // 512 px: 19 merged tokens a side (rounded up from 18.3), 38 patches.
        assert_eq!((img(512, 512).patches(), img(512, 512).tokens()), (38 * 38, 19 * 19 + 2));
        assert_eq!(img(28, 28).tokens(), 3);
        assert!(img(1024, 1024).encoder_flops() > 3.5 * img(512, 512).encoder_flops());
        let a: Vec<u32> = placeholder_ids(&img(56, 56)).collect();
        let b: Vec<u32> = placeholder_ids(&ImageInput { hash: 2, ..img(56, 56) }).collect();
        assert_eq!(a.len(), 6);
        assert_ne!(a, b, "another image, other tokens");
        assert_eq!(a, placeholder_ids(&img(56, 56)).collect::<Vec<_>>(), "the same image, the same tokens");
    }

    #[test]
    fn images_are_read_from_data_urls_only() {
        let url = format!("data:image/png;base64,{}", BASE64_STANDARD.encode(png_header(100, 50)));
        let msgs: super::super::fields::Messages =
            serde_json::from_value(serde_json::json!([{"role": "user", "content": [
                {"type": "text", "text": "what is this"},
                {"type": "image_url", "image_url": {"url": url}},
            ]}]))
            .unwrap();
        let imgs = images_of(&msgs.list).unwrap();
        assert_eq!((imgs.len(), imgs[0].width, imgs[0].height), (1, 100, 50));
        let remote: super::super::fields::Messages =
            serde_json::from_value(serde_json::json!([{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            ]}]))
            .unwrap();
        assert!(images_of(&remote.list).unwrap_err().0.contains("data URLs"));
        // A header may claim any size: its tokens saturate, and are summed so.
        let huge = ImageInput { width: u32::MAX, height: u32::MAX, bytes: 0, hash: 1 };
        assert_eq!(huge.tokens(), 153_391_690u64.pow(2) + 2, "306,783,380 patches a side, merged 2×2");
        assert_eq!(tokens_of(&[huge; 3]), 3 * huge.tokens());
    }
}
