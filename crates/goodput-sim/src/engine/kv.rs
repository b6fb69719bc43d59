//! The paged KV cache: a pool of fixed-size blocks with reference counts, and
//! prefix caching by chained hashes of full prompt blocks, with unreferenced
//! cached blocks kept in LRU order and evicted only when a block is needed.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A prompt as the engine sees it: its length and the chained hashes of its
/// full blocks (the partial last block is never shared), and what follows it
/// (its output), when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    len: u32,
    block_size: u32,
    block_hashes: Arc<[u64]>,
    continuation: Continuation,
}

/// The tokens after a prompt, its output, so that the blocks they fill are
/// cached as vLLM V1 caches every full block, and a later prompt that
/// repeats them (the next turn of a conversation) finds them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Continuation {
    /// Unknown: output blocks are not cached.
    #[default]
    Unknown,
    /// A synthetic prompt's unique content goes on, as [`Prompt::synthetic`]
    /// draws it for the same seed and a longer length.
    Synthetic { unique_seed: u64 },
    /// Real token ids: the prompt's partial last block, then the output.
    Tokens { tail: Arc<[u32]>, output: Arc<[u32]> },
}

impl Prompt {
    /// Hashes real token ids: block i's hash covers its parent's hash and its
    /// own tokens, so equal hashes mean equal prefixes up to that block.
    pub fn from_tokens(tokens: &[u32], block_size: u32) -> Prompt {
        let bs = block_size.max(1) as usize;
        let mut parent = ROOT_HASH;
        let hashes = tokens
            .chunks_exact(bs)
            .map(|block| {
                let content = block.iter().fold(BLOCK_SEED, |h, &t| mix(h ^ t as u64));
                parent = chain(parent, content);
                parent
            })
            .collect();
        Prompt {
            len: tokens.len().min(u32::MAX as usize) as u32,
            block_size: block_size.max(1),
            block_hashes: hashes,
            continuation: Continuation::Unknown,
        }
    }

    /// The same prompt (built by [`Prompt::from_tokens`] from `tokens`),
    /// knowing that `output` token ids will follow it.
    pub fn followed_by(self, tokens: &[u32], output: Vec<u32>) -> Prompt {
        let full = self.block_hashes.len() * self.block_size as usize;
        let tail = tokens.get(full..).unwrap_or_default().into();
        Prompt { continuation: Continuation::Tokens { tail, output: output.into() }, ..self }
    }

    /// The hash of block `j`, past the prompt's full blocks, once its output
    /// has filled it: chained to `parent` (block j − 1's hash; none for the
    /// first block). `None` when the output is not known.
    pub fn continued_hash(&self, j: u32, parent: Option<u64>) -> Option<u64> {
        let parent = parent.unwrap_or(ROOT_HASH);
        let bs = self.block_size as usize;
        let content = match &self.continuation {
            Continuation::Unknown => return None,
            Continuation::Synthetic { unique_seed } => unique_content(*unique_seed, j),
            Continuation::Tokens { tail, output } => {
                let start = j as usize * bs;
                let full = self.block_hashes.len() * bs;
                let token = |pos: usize| match pos.checked_sub(self.len as usize) {
                    None => tail.get(pos.checked_sub(full)?).copied(),
                    Some(i) => output.get(i).copied(),
                };
                let mut h = BLOCK_SEED;
                for pos in start..start + bs {
                    h = mix(h ^ token(pos)? as u64);
                }
                h
            }
        };
        Some(chain(parent, content))
    }

    /// A prompt of `len` tokens with no token array: it opens with the
    /// `shared` segments in order, each `(id, len)` (a chat template's start,
    /// then a shared prefix), the rest unique to `unique_seed`. A block that
    /// ends inside segment k is equal in every prompt that opens with the
    /// same segments up to k; a block that straddles the end of the last
    /// segment is unique, as its tokens would be.
    pub fn synthetic(len: u32, shared: &[(u64, u32)], unique_seed: u64, block_size: u32) -> Prompt {
        let bs = block_size.max(1);
        // Each segment's end, and the identity of the segments up to it.
        let mut ends = Vec::with_capacity(shared.len());
        let (mut end, mut ids) = (0u32, None::<u64>);
        for &(id, n) in shared {
            end = end.saturating_add(n);
            let so_far = match ids {
                None => id ^ 0x5eed_0000_0000_0001,
                Some(before) => mix(before) ^ id,
            };
            ids = Some(so_far);
            ends.push((end, so_far));
        }
        let mut parent = ROOT_HASH;
        // The first segment that block i ends within: the blocks go in
        // order, so it only moves on (a prompt of many segments, a trace's
        // prefix blocks, is hashed in one pass).
        let mut seg = 0;
        let hashes = (0..len / bs)
            .map(|i| {
                while ends.get(seg).is_some_and(|&(end, _)| (i + 1) * bs > end) {
                    seg += 1;
                }
                let content = match ends.get(seg) {
                    Some(&(_, so_far)) => mix(mix(so_far).wrapping_add(i as u64)),
                    None => unique_content(unique_seed, i),
                };
                parent = chain(parent, content);
                parent
            })
            .collect();
        Prompt { len, block_size: bs, block_hashes: hashes, continuation: Continuation::Synthetic { unique_seed } }
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    pub fn block_hashes(&self) -> &[u64] {
        &self.block_hashes
    }
}

const ROOT_HASH: u64 = 0x9e37_79b9_7f4a_7c15;
const BLOCK_SEED: u64 = 0x243f_6a88_85a3_08d3;

/// Block `i`'s content in a synthetic prompt's (or its output's) unique part.
fn unique_content(unique_seed: u64, i: u32) -> u64 {
    mix(mix(unique_seed ^ 0x5eed_0000_0000_0002).wrapping_add(i as u64))
}

/// splitmix64's finaliser: a cheap, well-mixed, run-to-run stable hash.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn chain(parent: u64, content: u64) -> u64 {
    mix(parent.rotate_left(17) ^ content)
}

/// Block hashes are already uniform, so the map need not hash them again.
#[derive(Default)]
pub(crate) struct IdentityHasher(u64);

/// A map keyed by block hashes, which it takes as they are.
pub(crate) type BlockMap<V> = HashMap<u64, V, BuildHasherDefault<IdentityHasher>>;

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

const NIL: u32 = u32::MAX;

/// The share of `total` blocks held when `free` are free (none of none).
pub(crate) fn usage(total: u32, free: u32) -> f64 {
    if total == 0 {
        return 0.0;
    }
    1.0 - f64::from(free) / f64::from(total)
}

/// The block pool. Free blocks come in two kinds: plain ones (never cached,
/// handed out first) and cached ones with no references, in an intrusive LRU
/// list so a prefix hit can pull one out in O(1). Per-block state exists only
/// for blocks ever handed out, so a large GPU with a small load costs little.
pub(crate) struct BlockPool {
    block_size: u32,
    /// Blocks a sequence of n tokens takes: ⌈n / block_size⌉ but where a
    /// sliding window makes it other ([`crate::engine::catalog::KvBlocks`]).
    counts: crate::engine::catalog::KvBlocks,
    num_blocks: u32,
    ref_count: Vec<u32>,
    /// The prefix hash a block is registered under, if any.
    hash: Vec<Option<u64>>,
    prev: Vec<u32>,
    next: Vec<u32>,
    lru_head: u32,
    lru_tail: u32,
    lru_len: u32,
    plain_free: Vec<u32>,
    /// Prefix hash → the block registered under it. An evicted block's
    /// entry is left behind, stale (the block no longer holds that hash),
    /// and read as absent: removing it was a probe of a table larger than
    /// the CPU's caches for every block evicted. The stale entries are
    /// swept out together once they outnumber the live ones.
    cached: BlockMap<u32>,
    /// Stale entries in `cached`.
    stale: usize,
    /// Blocks evicted from the cache to make room: a diagnostic.
    pub evictions: u64,
}

impl BlockPool {
    pub fn new(num_blocks: u32, block_size: u32) -> BlockPool {
        BlockPool {
            block_size,
            counts: Default::default(),
            num_blocks,
            ref_count: Vec::new(),
            hash: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            lru_head: NIL,
            lru_tail: NIL,
            lru_len: 0,
            plain_free: Vec::new(),
            cached: HashMap::default(),
            stale: 0,
            evictions: 0,
        }
    }

    pub fn num_blocks(&self) -> u32 {
        self.num_blocks
    }

    /// Blocks never handed out yet.
    fn untouched(&self) -> u32 {
        self.num_blocks - self.ref_count.len() as u32
    }

    /// Blocks a request could take: plain ones plus evictable cached ones.
    pub fn num_free(&self) -> u32 {
        self.untouched() + self.plain_free.len() as u32 + self.lru_len
    }

    /// The tokens the blocks requests hold can store (whole blocks; cached
    /// blocks no request holds are free, not held).
    pub fn held_tokens(&self) -> u64 {
        u64::from(self.num_blocks - self.num_free()) * u64::from(self.block_size)
    }

    /// Share of blocks held by requests (vLLM's `kv_cache_usage_perc`; the
    /// engine's is its pools' together, [`usage`]).
    #[cfg(test)]
    pub fn usage(&self) -> f64 {
        usage(self.num_blocks, self.num_free())
    }

    /// A pool whose sequences take the blocks `model`'s sliding window
    /// makes them take, where it has one.
    pub fn counting(mut self, model: &crate::engine::ModelSpec) -> BlockPool {
        self.counts = model.kv_blocks();
        self
    }

    /// Blocks needed to hold `tokens` tokens. With a sliding window the
    /// blocks past a sequence's positions are its sliding layers' (block
    /// ids are interchangeable, so which of a sequence's blocks holds what
    /// is not tracked).
    pub fn blocks_for(&self, tokens: u32) -> u32 {
        self.counts.blocks_for(tokens, self.block_size)
    }

    /// The cached blocks of the longest prefix of `hashes` (at most
    /// `max_blocks`), written into `out`.
    pub fn find_prefix(&self, hashes: &[u64], max_blocks: usize, out: &mut Vec<u32>) {
        out.clear();
        out.extend(hashes.iter().take(max_blocks).map_while(|&h| self.cached_block(h)));
    }

    /// The block registered under `hash`, where one still is (not a stale
    /// entry's).
    fn cached_block(&self, hash: u64) -> Option<u32> {
        self.cached.get(&hash).copied().filter(|&b| self.hash[b as usize] == Some(hash))
    }

    /// Gives a request the cached blocks `hits` and enough fresh blocks to
    /// hold `tokens` tokens in all, or nothing when that does not fit. A hit
    /// on an unreferenced block takes it out of the free pool, so it counts
    /// against what is free.
    pub fn admit(&mut self, blocks: &mut Vec<u32>, hits: &[u32], tokens: u32) -> bool {
        debug_assert!(blocks.is_empty());
        let fresh = self.blocks_for(tokens).saturating_sub(hits.len() as u32);
        let idle_hits = hits.iter().filter(|&&b| self.ref_count[b as usize] == 0).count() as u32;
        if fresh + idle_hits > self.num_free() {
            return false;
        }
        for &b in hits {
            if self.ref_count[b as usize] == 0 {
                self.lru_remove(b);
            }
            self.ref_count[b as usize] += 1;
            blocks.push(b);
        }
        for _ in 0..fresh {
            let b = self.take_fresh();
            blocks.push(b);
        }
        true
    }

    /// Grows a request's blocks to hold `tokens` tokens; false (and no
    /// change) when the pool has too few free blocks.
    pub fn grow(&mut self, blocks: &mut Vec<u32>, tokens: u32) -> bool {
        let need = self.blocks_for(tokens).saturating_sub(blocks.len() as u32);
        if need > self.num_free() {
            return false;
        }
        for _ in 0..need {
            let b = self.take_fresh();
            blocks.push(b);
        }
        true
    }

    /// Registers a full block under its prefix hash. When another block
    /// already holds that prefix, the first stays the cached one.
    pub fn register(&mut self, block: u32, hash: u64) {
        // One probe of the table, not two (a lookup, then the insert): the
        // table holds every cached block, and a probe of it is a cache miss.
        if self.hash[block as usize].is_none() {
            match self.cached.entry(hash) {
                std::collections::hash_map::Entry::Vacant(v) => drop(v.insert(block)),
                // An evicted block's entry: this block holds that prefix now.
                std::collections::hash_map::Entry::Occupied(mut o) if self.hash[*o.get() as usize] != Some(hash) => {
                    o.insert(block);
                    self.stale -= 1;
                }
                std::collections::hash_map::Entry::Occupied(_) => return,
            }
            self.hash[block as usize] = Some(hash);
        }
    }

    /// Drops a request's references, last block first, so the tail of a
    /// sequence (the least shared part) is the first to be evicted.
    pub fn release(&mut self, blocks: &mut Vec<u32>) {
        for &b in blocks.iter().rev() {
            let r = &mut self.ref_count[b as usize];
            debug_assert!(*r > 0);
            *r -= 1;
            if *r == 0 {
                if self.hash[b as usize].is_some() {
                    self.lru_push_tail(b);
                } else {
                    self.plain_free.push(b);
                }
            }
        }
        blocks.clear();
    }

    /// Forgets every cached prefix (vLLM's `reset_prefix_cache`): the idle
    /// cached blocks become plain free ones, and the blocks requests hold
    /// are no longer found by a prefix, nor cached when released. Returns
    /// how many prefixes were forgotten.
    pub fn reset_prefix_cache(&mut self) -> usize {
        let forgotten = self.cached.len() - self.stale;
        while self.lru_head != NIL {
            let b = self.lru_head;
            self.lru_remove(b);
            self.plain_free.push(b);
        }
        for h in &mut self.hash {
            *h = None;
        }
        self.cached.clear();
        self.stale = 0;
        forgotten
    }

    /// A block for new tokens: a plain free one if any, else the least
    /// recently used cached one, whose prefix is then forgotten.
    fn take_fresh(&mut self) -> u32 {
        let b = match self.plain_free.pop() {
            Some(b) => b,
            None if self.untouched() > 0 => {
                let b = self.ref_count.len() as u32;
                self.ref_count.push(0);
                self.hash.push(None);
                self.prev.push(NIL);
                self.next.push(NIL);
                b
            }
            None => {
                let b = self.lru_head;
                debug_assert!(b != NIL, "take_fresh called with no free block");
                self.lru_remove(b);
                if self.hash[b as usize].take().is_some() {
                    self.evictions += 1;
                    self.stale += 1;
                    self.sweep_stale();
                }
                b
            }
        };
        self.ref_count[b as usize] = 1;
        b
    }

    /// Sweeps the stale entries out of `cached` once they outnumber the
    /// live ones (and a few thousand), in one pass over the table: it holds
    /// at most about twice the prefixes cached.
    fn sweep_stale(&mut self) {
        let live = self.cached.len() - self.stale;
        if self.stale > live.max(4096) {
            let (hash, before) = (&self.hash, self.cached.len());
            self.cached.retain(|h, b| hash[*b as usize] == Some(*h));
            debug_assert_eq!(before - self.cached.len(), self.stale, "the stale entries were miscounted");
            self.stale = 0;
        }
    }

    fn lru_push_tail(&mut self, b: u32) {
        let i = b as usize;
        self.prev[i] = self.lru_tail;
        self.next[i] = NIL;
        if self.lru_tail != NIL {
            self.next[self.lru_tail as usize] = b;
        } else {
            self.lru_head = b;
        }
        self.lru_tail = b;
        self.lru_len += 1;
    }

    fn lru_remove(&mut self, b: u32) {
        let i = b as usize;
        let (p, n) = (self.prev[i], self.next[i]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.lru_head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.lru_tail = p;
        }
        self.prev[i] = NIL;
        self.next[i] = NIL;
        self.lru_len -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_s_blocks_hash_as_the_prompt_that_repeats_it() {
        // Real ids: a 20-token prompt, 30 output tokens, then a question of 10.
        let prompt: Vec<u32> = (100..120).collect();
        let output: Vec<u32> = (500..530).collect();
        let next: Vec<u32> = prompt.iter().chain(&output).copied().chain(900..910).collect();
        let p = Prompt::from_tokens(&prompt, 16).followed_by(&prompt, output.clone());
        let q = Prompt::from_tokens(&next, 16);
        let b1 = p.continued_hash(1, p.block_hashes().last().copied()).unwrap();
        let b2 = p.continued_hash(2, Some(b1)).unwrap();
        assert_eq!(&q.block_hashes()[..3], &[p.block_hashes()[0], b1, b2]);
        assert_eq!(p.continued_hash(3, Some(b2)), None, "block 3 would need output token 30");
        assert_eq!(Prompt::from_tokens(&prompt, 16).continued_hash(1, None), None, "no output known");
        // Synthetic: a prompt's unique content goes on as the longer prompt's.
        let s = Prompt::synthetic(40, &[(7, 16)], 99, 16);
        let longer = Prompt::synthetic(100, &[(7, 16)], 99, 16);
        let b2 = s.continued_hash(2, s.block_hashes().last().copied()).unwrap();
        assert_eq!(longer.block_hashes()[2], b2);
        assert_eq!(longer.block_hashes()[3], s.continued_hash(3, Some(b2)).unwrap());
    }

    #[test]
    fn equal_prefixes_hash_equal_and_divergence_propagates() {
        let a: Vec<u32> = (0..40).collect();
        let mut b = a.clone();
        b[20] = 999;
        let (pa, pb) = (Prompt::from_tokens(&a, 16), Prompt::from_tokens(&b, 16));
        assert_eq!(pa.len(), 40);
        assert_eq!(pa.block_hashes().len(), 2);
        assert_eq!(pa.block_hashes()[0], pb.block_hashes()[0]);
        assert_ne!(pa.block_hashes()[1], pb.block_hashes()[1]);
        // Same block content under another parent is another prefix.
        let shifted: Vec<u32> = (16..32).chain(16..32).collect();
        let ps = Prompt::from_tokens(&shifted, 16);
        assert_ne!(ps.block_hashes()[1], pa.block_hashes()[1]);
    }

    #[test]
    fn synthetic_prompts_share_exactly_the_full_prefix_blocks() {
        let a = Prompt::synthetic(100, &[(7, 40)], 1, 16);
        let b = Prompt::synthetic(100, &[(7, 40)], 2, 16);
        let c = Prompt::synthetic(100, &[(8, 40)], 1, 16);
        assert_eq!(a.block_hashes().len(), 6);
        // 40 tokens of prefix: blocks 0 and 1 are shared, block 2 straddles.
        assert_eq!(a.block_hashes()[..2], b.block_hashes()[..2]);
        assert_ne!(a.block_hashes()[2], b.block_hashes()[2]);
        assert_ne!(a.block_hashes()[0], c.block_hashes()[0]);
        assert_eq!(Prompt::synthetic(100, &[], 3, 16), Prompt::synthetic(100, &[], 3, 16));
    }

    #[test]
    fn a_template_start_is_shared_under_any_prefix_and_a_prefix_only_under_its_start() {
        // A 30-token template start, then a 40-token prefix: block 0 ends in
        // the start, blocks 1..3 in the prefix (70 tokens: 4 full blocks).
        let p = |prefix: u64, seed: u64| Prompt::synthetic(120, &[(1, 30), (prefix, 40)], seed, 16);
        let (a, b, c) = (p(7, 1), p(7, 2), p(8, 1));
        assert_eq!(a.block_hashes()[..4], b.block_hashes()[..4], "same start and prefix");
        assert_ne!(a.block_hashes()[4], b.block_hashes()[4], "block 4 straddles into the unique part");
        assert_eq!(a.block_hashes()[0], c.block_hashes()[0], "the start is shared under another prefix");
        assert_ne!(a.block_hashes()[1], c.block_hashes()[1]);
        let other_start = Prompt::synthetic(120, &[(2, 30), (7, 40)], 1, 16);
        assert_ne!(a.block_hashes()[1], other_start.block_hashes()[1], "a prefix under another start is another");
        // A trailing segment of no tokens changes nothing.
        assert_eq!(Prompt::synthetic(120, &[(1, 30), (0, 0)], 1, 16), Prompt::synthetic(120, &[(1, 30)], 1, 16));
        // One segment hashes as the single shared prefix always did.
        assert_eq!(Prompt::synthetic(100, &[(0, 0), (7, 40)], 1, 16).block_hashes().len(), 6);
    }

    #[test]
    fn cached_blocks_survive_until_space_is_needed_then_lru_goes_first() {
        let mut pool = BlockPool::new(4, 16);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        assert!(pool.admit(&mut a, &[], 32));
        pool.register(a[0], 100);
        pool.register(a[1], 101);
        assert!(pool.admit(&mut b, &[], 16));
        pool.register(b[0], 200);
        pool.release(&mut a);
        pool.release(&mut b);
        assert_eq!(pool.num_free(), 4);
        assert_eq!(pool.usage(), 0.0);
        // One plain block left: the first fresh block evicts nothing.
        let mut c = Vec::new();
        assert!(pool.admit(&mut c, &[], 16));
        assert_eq!(pool.evictions, 0);
        // The next one evicts a's tail block (released first, last block
        // first), keeping a's head and b.
        let mut d = Vec::new();
        assert!(pool.admit(&mut d, &[], 16));
        assert_eq!(pool.evictions, 1);
        let mut hits = Vec::new();
        pool.find_prefix(&[100, 101], 2, &mut hits);
        assert_eq!(hits.len(), 1);
        pool.find_prefix(&[200], 1, &mut hits);
        assert_eq!(hits.len(), 1);
    }

    /// An evicted block's prefix is no longer found, though its entry is
    /// left in the table; a block that takes the prefix again is found;
    /// and the table stays within about twice the prefixes cached however
    /// many are evicted.
    #[test]
    fn evicted_prefixes_are_not_found_and_their_entries_are_swept() {
        let mut pool = BlockPool::new(8, 16);
        let mut hits = Vec::new();
        let mut held = Vec::new();
        for round in 0..20_000u64 {
            assert!(pool.admit(&mut held, &[], 16));
            pool.register(held[0], round);
            pool.release(&mut held);
            // The eight latest are cached; the ninth latest was evicted.
            pool.find_prefix(&[round], 1, &mut hits);
            assert_eq!(hits.len(), 1, "{round} is cached");
            if round >= 8 {
                pool.find_prefix(&[round - 8], 1, &mut hits);
                assert!(hits.is_empty(), "{} was evicted", round - 8);
            }
            assert!(pool.cached.len() <= 8 + 4097, "{} entries", pool.cached.len());
        }
        assert_eq!(pool.evictions, 20_000 - 8);
        // A prefix evicted, then registered again on another block.
        let mut b = Vec::new();
        assert!(pool.admit(&mut b, &[], 16));
        pool.register(b[0], 3);
        pool.find_prefix(&[3], 1, &mut hits);
        assert_eq!(hits, b);
        assert_eq!(pool.reset_prefix_cache(), 8, "seven idle and b's: stale entries are not prefixes");
    }

    #[test]
    fn a_hit_on_an_idle_block_counts_against_free_space() {
        let mut pool = BlockPool::new(2, 16);
        let mut a = Vec::new();
        assert!(pool.admit(&mut a, &[], 16));
        pool.register(a[0], 1);
        pool.release(&mut a);
        let mut hits = Vec::new();
        pool.find_prefix(&[1], 1, &mut hits);
        // The hit plus two fresh blocks would need three of two.
        let mut b = Vec::new();
        assert!(!pool.admit(&mut b, &hits, 48));
        assert!(b.is_empty() && pool.num_free() == 2);
        assert!(pool.admit(&mut b, &hits, 32));
        assert_eq!(b[0], hits[0]);
        assert_eq!(pool.num_free(), 0);
        // Shared: a second holder of the same block needs no new space.
        let mut c = Vec::new();
        assert!(pool.admit(&mut c, &hits, 16));
        pool.release(&mut b);
        assert_eq!(pool.num_free(), 1);
        pool.release(&mut c);
        assert_eq!(pool.num_free(), 2);
    }

    #[test]
    fn a_reset_forgets_every_prefix_and_frees_the_idle_cached_blocks() {
        let mut pool = BlockPool::new(4, 16);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        assert!(pool.admit(&mut a, &[], 32));
        pool.register(a[0], 1);
        pool.register(a[1], 2);
        assert!(pool.admit(&mut b, &[], 16));
        pool.register(b[0], 3);
        pool.release(&mut a);
        // a's two blocks idle in the cache, b's held and registered.
        let mut hits = Vec::new();
        pool.find_prefix(&[1, 2], 2, &mut hits);
        assert_eq!(hits.len(), 2);
        assert_eq!(pool.reset_prefix_cache(), 3);
        for h in [1, 3] {
            pool.find_prefix(&[h], 1, &mut hits);
            assert!(hits.is_empty(), "prefix {h} is still found");
        }
        // Nothing was lost: three blocks free, b's still held.
        assert_eq!(pool.num_free(), 3);
        pool.release(&mut b);
        assert_eq!(pool.num_free(), 4);
        assert_eq!(pool.evictions, 0);
    }

    #[test]
    fn a_sliding_window_s_blocks_stop_growing_once_it_slides() {
        // GPT-OSS: 16-token blocks of its full layers, and of its sliding
        // ones the window's (⌈128 / 16⌉ + 1 = 9 once past it).
        let m = crate::engine::ModelSpec::lookup("gpt-oss-20b").unwrap();
        let mut pool = BlockPool::new(1000, 16).counting(&m);
        let mut blocks = Vec::new();
        assert!(pool.admit(&mut blocks, &[], 100));
        assert_eq!(blocks.len(), 7 + 7);
        assert!(pool.grow(&mut blocks, 1000));
        assert_eq!(blocks.len(), 63 + 9);
        assert!(pool.grow(&mut blocks, 2000));
        assert_eq!((blocks.len(), pool.num_free()), (125 + 9, 1000 - 134));
        pool.release(&mut blocks);
        assert_eq!(pool.num_free(), 1000);
        // A model without one: a block per 16 tokens.
        let plain = BlockPool::new(1000, 16).counting(&crate::engine::ModelSpec::lookup("llama-3.1-8b").unwrap());
        assert_eq!(plain.blocks_for(2000), 125);
    }

    #[test]
    fn grow_allocates_only_at_block_boundaries() {
        let mut pool = BlockPool::new(3, 16);
        let mut a = Vec::new();
        assert!(pool.grow(&mut a, 16));
        assert!(pool.grow(&mut a, 16));
        assert_eq!(a.len(), 1);
        assert!(pool.grow(&mut a, 17));
        assert_eq!(a.len(), 2);
        assert!(!pool.grow(&mut a, 49));
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn per_block_state_grows_only_with_use() {
        let mut pool = BlockPool::new(10_000_000, 16);
        assert_eq!((pool.num_free(), pool.ref_count.len()), (10_000_000, 0));
        let mut a = Vec::new();
        assert!(pool.grow(&mut a, 64));
        assert_eq!((a.clone(), pool.ref_count.len()), (vec![0, 1, 2, 3], 4));
        pool.release(&mut a);
        // Freed blocks are reused before untouched ones.
        assert!(pool.grow(&mut a, 16));
        assert_eq!(pool.ref_count.len(), 4);
    }
}
