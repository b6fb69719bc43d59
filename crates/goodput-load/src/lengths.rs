//! The lengths of one request, drawn for a synthetic workload or read from a
//! trace; the distributions they are drawn from are in `workload`.

/// The lengths of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lengths {
    /// Input tokens, shared prefix included.
    pub input: u32,
    pub output: u32,
    /// `(prefix id, prefix tokens)` when the request carries a shared prefix.
    pub prefix: Option<(u64, u32)>,
}
