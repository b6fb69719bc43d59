//! Synthetic images in chat requests (`--images N --image-size WxH`): drawn
//! from the seed, the request and the image's place in it, encoded as PNG
//! or JPEG, and sent as base64 data URLs in OpenAI's content parts, as
//! vLLM's, SGLang's and AIPerf's clients send them. Every image differs:
//! a server that caches encoded images by their hash (vLLM's multimodal
//! cache) serves none of them twice.

use super::item::WorkItem;
use crate::protocol::PromptBody;
use base64::prelude::{Engine as _, BASE64_STANDARD};
use serde_json::{json, Value};

/// How images are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Jpeg,
}

impl std::str::FromStr for ImageFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "png" => Ok(ImageFormat::Png),
            "jpeg" | "jpg" => Ok(ImageFormat::Jpeg),
            other => Err(format!("--image-format {other:?}: use png or jpeg")),
        }
    }
}

impl ImageFormat {
    fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }
}

/// The images each request carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImageSpec {
    /// Images per request that has any.
    pub count: u32,
    pub width: u32,
    pub height: u32,
    pub format: ImageFormat,
    /// Share of requests that carry images, drawn per request from the
    /// seed (1: every one); the rest are text only.
    pub share: f64,
}

/// The most images one request may carry, and the largest side.
pub const MAX_IMAGES: u32 = 32;
pub const MAX_SIDE: u32 = 8192;
/// The most bytes of pixels (RGB) one request's images may hold: one
/// 8192x8192 image is 192 MiB, and the simulator refuses a body of more
/// than 64 MiB.
pub const MAX_REQUEST_PIXEL_BYTES: u64 = 256 << 20;

/// `WxH`, e.g. `512x512`.
pub fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("--image-size {s:?}: give width and height in pixels, e.g. 512x512");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (w.trim().parse().map_err(|_| bad())?, h.trim().parse().map_err(|_| bad())?);
    if !(1..=MAX_SIDE).contains(&w) || !(1..=MAX_SIDE).contains(&h) {
        return Err(format!("--image-size {s}: each side must lie in 1..={MAX_SIDE} pixels"));
    }
    Ok((w, h))
}

impl ImageSpec {
    /// Checks the counts a flag could get wrong.
    pub fn check(&self) -> Result<(), String> {
        if self.count == 0 || self.count > MAX_IMAGES {
            return Err(format!("--images {} must lie in 1..={MAX_IMAGES}", self.count));
        }
        if !(self.share > 0.0 && self.share <= 1.0) {
            return Err(format!(
                "--image-share {} must lie in (0, 1]: the share of requests that carry images",
                self.share
            ));
        }
        // Each image is made and encoded whole for every request that
        // carries it, and sent in one body: 8 of 8192x8192 (1.6 GB of
        // pixels) a request aborted a run of 4 users for want of memory.
        let pixels = u64::from(self.count) * u64::from(self.width) * u64::from(self.height) * 3;
        if pixels > MAX_REQUEST_PIXEL_BYTES {
            return Err(format!(
                "--images {} of --image-size {}x{} come to {} MiB of pixels a request, more than goodput makes for \
                 one ({} MiB; each is made and held whole for every request): give fewer or smaller images",
                self.count,
                self.width,
                self.height,
                pixels >> 20,
                MAX_REQUEST_PIXEL_BYTES >> 20
            ));
        }
        Ok(())
    }

    /// The images request `i` carries: `count`, or 0 where the share left
    /// it text only.
    pub fn images_for(&self, seed: u64, i: u64) -> u32 {
        let u = goodput_core::util::hash::unit(seed ^ SHARE_SALT, i);
        if self.share >= 1.0 || u < self.share {
            self.count
        } else {
            0
        }
    }

    /// Image `k` of request `i`, encoded.
    pub fn encode(&self, seed: u64, i: u64, k: u32) -> Vec<u8> {
        let pixels =
            draw_pixels(self.width, self.height, goodput_core::util::hash::draw(seed ^ PIXEL_SALT, i) ^ u64::from(k));
        match self.format {
            ImageFormat::Png => encode_png(self.width, self.height, &pixels),
            ImageFormat::Jpeg => encode_jpeg(self.width, self.height, &pixels),
        }
    }

    /// `item` (request `i`'s content) with its images added to the last
    /// user message, as content parts after the text.
    pub fn attach(&self, seed: u64, i: u64, mut item: WorkItem) -> WorkItem {
        let n = self.images_for(seed, i);
        if n == 0 {
            return item;
        }
        let mut parts = Vec::with_capacity(n as usize);
        let mut bytes = 0u64;
        for k in 0..n {
            let data = self.encode(seed, i, k);
            bytes += data.len() as u64;
            let url = format!("data:{};base64,{}", self.format.mime(), BASE64_STANDARD.encode(&data));
            parts.push(json!({ "type": "image_url", "image_url": { "url": url } }));
        }
        item.prompt = with_parts(std::mem::replace(&mut item.prompt, PromptBody::Text(String::new())), parts);
        item.media = super::item::Media { images: n, image_bytes: bytes };
        item
    }
}

/// One image of a dataset entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatasetImage {
    /// A data URL, sent as it is.
    DataUrl(String),
    /// A file, read when the request is built (relative paths are resolved
    /// against the dataset's folder when the dataset is read).
    File(std::path::PathBuf),
}

/// The image columns looked for, in this order.
pub const IMAGE_COLUMNS: [&str; 4] = ["image", "images", "image_path", "image_paths"];

/// The images of a dataset record: its first image column's, each a file
/// path, a data URL, or the Hugging Face Image feature's `{"bytes", "path"}`
/// (bytes in base64, as JSON keeps them).
pub(super) fn images_column(
    obj: &serde_json::Map<String, Value>,
) -> Result<Vec<DatasetImage>, crate::error::EntryError> {
    // A number or a boolean is no image: a count (goodput's own records
    // carry `images`, an integer), read as none (it had refused the entry).
    let image = |v: &&Value| !(v.is_null() || v.is_number() || v.is_boolean());
    let Some((column, v)) = IMAGE_COLUMNS.iter().find_map(|k| Some((*k, obj.get(*k).filter(image)?))) else {
        return Ok(Vec::new());
    };
    let bad = || crate::error::EntryError::ImageColumn { column: column.to_owned() };
    let one = |v: &Value| -> Result<DatasetImage, crate::error::EntryError> {
        match v {
            Value::String(s) if s.starts_with("data:") => Ok(DatasetImage::DataUrl(s.clone())),
            Value::String(s) if s.starts_with("http://") || s.starts_with("https://") => {
                let url = goodput_core::util::redact::scrub(s).chars().take(120).collect();
                Err(crate::error::EntryError::ImageUrl { column: column.to_owned(), url })
            }
            Value::String(s) if !s.trim().is_empty() => Ok(DatasetImage::File(s.into())),
            Value::Object(o) => match (o.get("bytes").and_then(Value::as_str), o.get("path").and_then(Value::as_str)) {
                (Some(b64), _) if !b64.is_empty() => {
                    let bytes = BASE64_STANDARD.decode(b64.trim()).map_err(|_| bad())?;
                    // The dataset's own bytes, whatever their type: nothing
                    // beside it is read.
                    let mime = image_mime(&bytes).unwrap_or("application/octet-stream");
                    Ok(DatasetImage::DataUrl(data_url_of(mime, &bytes)))
                }
                (_, Some(p)) if !p.trim().is_empty() => Ok(DatasetImage::File(p.into())),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    };
    match v {
        Value::Array(items) => items.iter().map(one).collect(),
        v => Ok(vec![one(v)?]),
    }
}

/// Resolves every entry's image files against the dataset's folder and
/// checks that each can be read, so that a wrong path fails before the run,
/// naming the file.
pub(super) fn resolve_dataset_images(
    entries: &mut [super::dataset::DatasetEntry],
    dataset: &std::path::Path,
) -> Result<(), crate::error::WorkloadError> {
    let folder = dataset.parent().unwrap_or(std::path::Path::new("."));
    let held: u64 = entries
        .iter()
        .flat_map(|e| &e.images)
        .map(|i| match i {
            DatasetImage::DataUrl(u) => u.len() as u64,
            DatasetImage::File(_) => 0,
        })
        .sum();
    if held > EMBEDDED_IMAGES_CAP {
        return Err(crate::error::WorkloadError::DatasetRead {
            path: dataset.to_path_buf(),
            error: format!(
                "its embedded images come to {} MiB, more than goodput holds in memory ({} MiB): export a subset of \
                 its rows, or its images as files named in an image column",
                held >> 20,
                EMBEDDED_IMAGES_CAP >> 20
            ),
        });
    }
    for img in entries.iter_mut().flat_map(|e| e.images.iter_mut()) {
        if let DatasetImage::File(p) = img {
            if p.is_relative() {
                *p = folder.join(&*p);
            }
            // An image, by its first bytes: a dataset's path column can name
            // any file (`/etc/passwd`, a key), and the run sends what it names.
            std::fs::metadata(&*p)
                .and_then(|m| if m.is_file() { Ok(()) } else { Err(std::io::Error::other("not a regular file")) })
                .and_then(|()| {
                    use std::io::Read;
                    let mut head = Vec::with_capacity(16);
                    std::fs::File::open(&*p)?.take(16).read_to_end(&mut head)?;
                    match image_mime(&head) {
                        Some(_) => Ok(()),
                        None => Err(std::io::Error::other(
                            "not an image (PNG, JPEG, GIF or WebP, told by its first bytes), and goodput sends no \
                             other file",
                        )),
                    }
                })
                .map_err(|e| crate::error::WorkloadError::DatasetImage {
                    dataset: dataset.to_path_buf(),
                    image: p.clone(),
                    error: e.to_string(),
                })?;
        }
    }
    Ok(())
}

/// The most bytes of images held in memory from a dataset's rows (data URLs
/// and the hub's Image feature); image files are read per request instead.
pub const EMBEDDED_IMAGES_CAP: u64 = 1 << 30;

/// The most bytes one image file may have.
pub const IMAGE_FILE_CAP: u64 = 64 * 1024 * 1024;

/// A data URL of `bytes`, its type told by its first bytes.
fn data_url(bytes: &[u8]) -> Option<String> {
    Some(data_url_of(image_mime(bytes)?, bytes))
}

/// A data URL of `bytes` of type `mime`.
fn data_url_of(mime: &str, bytes: &[u8]) -> String {
    format!("data:{mime};base64,{}", BASE64_STANDARD.encode(bytes))
}

/// An image's type, told by its first bytes; `None` for anything else.
fn image_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF8") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// `item` with a dataset entry's images added to its last user message;
/// a file that can no longer be read (moved during the run) is left out,
/// and the record counts only the images sent.
pub(super) fn attach_dataset_images(images: &[DatasetImage], mut item: WorkItem) -> WorkItem {
    if images.is_empty() {
        return item;
    }
    let mut parts = Vec::with_capacity(images.len());
    let mut media = super::item::Media::default();
    for img in images {
        let (url, bytes) = match img {
            DatasetImage::DataUrl(u) => {
                let n = u.split_once(',').map_or(0, |(_, b)| b.len() as u64 * 3 / 4);
                (u.clone(), n)
            }
            DatasetImage::File(p) => {
                let read = std::fs::File::open(p).and_then(|f| {
                    use std::io::Read;
                    let mut buf = Vec::new();
                    f.take(IMAGE_FILE_CAP).read_to_end(&mut buf).map(|_| buf)
                });
                // One replaced by another kind of file since the check is left out too.
                match read.ok().and_then(|b| Some((data_url(&b)?, b.len() as u64))) {
                    Some(sent) => sent,
                    None => continue,
                }
            }
        };
        parts.push(json!({ "type": "image_url", "image_url": { "url": url } }));
        media.images += 1;
        media.image_bytes += bytes;
    }
    item.prompt = with_parts(std::mem::replace(&mut item.prompt, PromptBody::Text(String::new())), parts);
    item.media = media;
    item
}

const SHARE_SALT: u64 = 0x1d3a_5c7e_9b2f_4a61;
const PIXEL_SALT: u64 = 0x6c8e_9cf5_7075_2b13;

/// A prompt as chat messages whose last user message ends with `parts`.
fn with_parts(prompt: PromptBody, parts: Vec<Value>) -> PromptBody {
    let mut messages = match prompt {
        PromptBody::Messages(m) => m,
        PromptBody::Text(t) => vec![json!({ "role": "user", "content": t })],
        PromptBody::Turns(turns) => turns
            .into_iter()
            .enumerate()
            .map(|(k, t)| json!({ "role": if k % 2 == 0 { "user" } else { "assistant" }, "content": t }))
            .collect(),
    };
    let last_user = messages.iter().rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    let Some(m) = last_user.and_then(|k| messages.get_mut(k)) else {
        messages.push(json!({ "role": "user", "content": parts }));
        return PromptBody::Messages(messages);
    };
    let text = match m.get_mut("content").map(Value::take) {
        Some(Value::Array(a)) => a,
        Some(Value::String(s)) if !s.is_empty() => vec![json!({ "type": "text", "text": s })],
        _ => Vec::new(),
    };
    m["content"] = Value::Array(text.into_iter().chain(parts).collect());
    PromptBody::Messages(messages)
}

/// RGB pixels: 32-pixel tiles of a drawn colour, a gradient across the
/// image, and a few levels of noise per pixel, so that the images neither
/// compress to nothing (a flat colour) nor cost a photograph's worth of
/// CPU to draw. A PNG of it takes about 2 bytes a pixel (a photograph's
/// 1.5–2.5), a JPEG at quality 85 far less.
fn draw_pixels(w: u32, h: u32, seed: u64) -> Vec<u8> {
    // xorshift's state must not be zero; any other seed is its own stream.
    let mut state = if seed == 0 { 0x9e37_79b9_7f4a_7c15 } else { seed };
    let mut next = move || {
        // xorshift64*: cheap, and enough for pictures.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let tiles_x = w.div_ceil(32) as usize;
    let tiles: Vec<[u8; 3]> = (0..tiles_x * h.div_ceil(32) as usize)
        .map(|_| {
            let c = next();
            [c as u8, (c >> 8) as u8, (c >> 16) as u8]
        })
        .collect();
    let mut out = Vec::with_capacity(w as usize * h as usize * 3);
    for y in 0..h {
        for x in 0..w {
            let tile = tiles[(y / 32) as usize * tiles_x + (x / 32) as usize];
            let noise = next();
            let grad = ((x + y) * 64 / (w + h).max(1)) as u8;
            for (c, t) in tile.iter().enumerate() {
                out.push(t.wrapping_add(grad).wrapping_add((noise >> (8 * c)) as u8 & 0x0f));
            }
        }
    }
    out
}

fn encode_png(w: u32, h: u32, rgb: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Fast);
    // Writing into memory cannot fail, and the sizes match the pixels.
    if let Ok(mut writer) = enc.write_header() {
        let _ = writer.write_image_data(rgb);
    }
    out
}

fn encode_jpeg(w: u32, h: u32, rgb: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let enc = jpeg_encoder::Encoder::new(&mut out, 85);
    // Sides are at most MAX_SIDE, within JPEG's 65,535.
    let _ = enc.encode(rgb, w as u16, h as u16, jpeg_encoder::ColorType::Rgb);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(format: ImageFormat) -> ImageSpec {
        ImageSpec { count: 2, width: 64, height: 48, format, share: 1.0 }
    }

    #[test]
    fn images_are_valid_files_of_the_size_asked_and_differ_by_request_and_place() {
        let png = spec(ImageFormat::Png).encode(7, 3, 0);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, after the chunk's length and type.
        assert_eq!(
            (u32::from_be_bytes(png[16..20].try_into().unwrap()), u32::from_be_bytes(png[20..24].try_into().unwrap())),
            (64, 48)
        );
        let decoded = png::Decoder::new(std::io::Cursor::new(&png)).read_info().unwrap().info().width;
        assert_eq!(decoded, 64);
        let jpeg = spec(ImageFormat::Jpeg).encode(7, 3, 0);
        assert_eq!((&jpeg[..2], &jpeg[jpeg.len() - 2..]), (&[0xff, 0xd8][..], &[0xff, 0xd9][..]));
        assert!(jpeg.len() < png.len(), "JPEG {} bytes, PNG {}", jpeg.len(), png.len());
        // The same draw gives the same bytes; another request or place, others.
        let s = spec(ImageFormat::Png);
        assert_eq!(s.encode(7, 3, 0), png);
        assert_ne!(s.encode(7, 3, 1), png);
        assert_ne!(s.encode(7, 4, 0), png);
        assert_ne!(s.encode(8, 3, 0), png);
    }

    #[test]
    fn images_go_after_the_text_of_the_last_user_message() {
        let item = WorkItem {
            prompt: PromptBody::Text("describe".into()),
            intended_input_tokens: Some(1),
            max_tokens: Some(8),
            session: None,
            reference: Vec::new().into(),
            repeat: None,
            media: Default::default(),
        };
        let out = spec(ImageFormat::Jpeg).attach(1, 0, item);
        let PromptBody::Messages(m) = &out.prompt else { panic!("{:?}", out.prompt) };
        let parts = m[0]["content"].as_array().unwrap();
        assert_eq!(parts[0], json!({"type": "text", "text": "describe"}));
        assert_eq!(parts.len(), 3);
        let url = parts[1]["image_url"]["url"].as_str().unwrap();
        assert!(url.starts_with("data:image/jpeg;base64,/9j/"), "{}", &url[..40]);
        assert_eq!(out.media.images, 2);
        let b64 = url.split_once(',').unwrap().1;
        let first = BASE64_STANDARD.decode(b64).unwrap().len() as u64;
        assert!(out.media.image_bytes > first, "both images' bytes are counted");
    }

    #[test]
    fn a_share_of_requests_carries_images() {
        let s = ImageSpec { share: 0.3, ..spec(ImageFormat::Png) };
        let with = (0..2000).filter(|&i| s.images_for(5, i) > 0).count();
        assert!((500..700).contains(&with), "{with} of 2000");
        assert!((0..50).all(|i| spec(ImageFormat::Png).images_for(5, i) == 2));
    }

    #[test]
    fn a_datasets_image_column_takes_paths_data_urls_and_the_hub_feature() {
        let obj = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(images_column(&obj(json!({"prompt": "p"}))).unwrap(), []);
        assert_eq!(images_column(&obj(json!({"image": "x/a.png"}))).unwrap(), [DatasetImage::File("x/a.png".into())]);
        let png = spec(ImageFormat::Png).encode(1, 0, 0);
        let hub = json!({"images": [{"bytes": BASE64_STANDARD.encode(&png), "path": null}, {"path": "b.jpg"}, "data:image/png;base64,AAAA"]});
        let got = images_column(&obj(hub)).unwrap();
        assert!(matches!(&got[0], DatasetImage::DataUrl(u) if u.starts_with("data:image/png;base64,iVBOR")), "{got:?}");
        assert_eq!(got[1], DatasetImage::File("b.jpg".into()));
        assert_eq!(got[2], DatasetImage::DataUrl("data:image/png;base64,AAAA".into()));
        let err = images_column(&obj(json!({"image": "https://example.com/a.png"}))).unwrap_err().to_string();
        assert!(err.contains("by URL (https://example.com/a.png)") && err.contains("download the images"), "{err}");
        // A number alone is a count (no image); in a list, or an object without bytes or a path, it is refused.
        assert_eq!(images_column(&obj(json!({"image": 7}))).unwrap(), []);
        let err = images_column(&obj(json!({"image": [7]}))).unwrap_err().to_string();
        assert!(err.contains("\"image\" must be an image") && err.contains("Hugging Face Image feature"), "{err}");
    }

    #[test]
    fn sizes_and_counts_are_checked() {
        assert_eq!(parse_size("512x384"), Ok((512, 384)));
        assert!(parse_size("512").unwrap_err().contains("e.g. 512x512"));
        assert!(parse_size("0x10").unwrap_err().contains("1..=8192"));
        assert!(ImageSpec { count: 0, ..spec(ImageFormat::Png) }.check().unwrap_err().contains("--images 0"));
        assert!(ImageSpec { share: 0.0, ..spec(ImageFormat::Png) }.check().unwrap_err().contains("--image-share"));
        // One image of the largest size a request goes; eight do not.
        let big = ImageSpec { count: 1, width: MAX_SIDE, height: MAX_SIDE, ..spec(ImageFormat::Png) };
        assert!(big.check().is_ok());
        let err = ImageSpec { count: 8, ..big }.check().unwrap_err();
        assert!(err.contains("1536 MiB of pixels a request") && err.contains("fewer or smaller"), "{err}");
    }
}
