//! What the fuzz targets share: an input is a few cut points and the bytes
//! a server sent, so that one input says both what arrived and in what pieces.

/// Splits a fuzzer's input into its payload and the places the payload is
/// cut. The first byte says how many cuts (0 to 8) follow as little-endian
/// `u16`s; the rest is the payload. Cuts are taken modulo the payload's
/// length plus one and returned sorted, with 0 and the length at the ends,
/// so consecutive pairs are the pieces.
pub fn split(data: &[u8]) -> (&[u8], Vec<usize>) {
    let Some((&n, rest)) = data.split_first() else {
        return (&[], vec![0, 0]);
    };
    let n = (n % 9) as usize;
    let take = (2 * n).min(rest.len());
    let (head, payload) = rest.split_at(take);
    let mut cuts: Vec<usize> =
        head.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as usize % (payload.len() + 1)).collect();
    cuts.push(0);
    cuts.push(payload.len());
    cuts.sort_unstable();
    (payload, cuts)
}

/// The pieces `cuts` makes of `payload` (some may be empty).
pub fn pieces<'a>(payload: &'a [u8], cuts: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    cuts.windows(2).map(move |w| &payload[w[0]..w[1]])
}
