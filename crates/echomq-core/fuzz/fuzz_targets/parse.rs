//! The core's argument parsing, fed arbitrary KEYS and ARGV for every
//! transition: it must answer `Ok` or a refusal, and never panic (a panic in
//! the module aborts redis-server).
//!
//! Input: the first byte picks the transition and how many of the parts are
//! KEYS; the rest is split on 0xFF into parts.
#![no_main]

use echomq_core::transition::{parse_only, NAMES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else { return };
    let name = NAMES[head as usize % NAMES.len()];
    let parts: Vec<&[u8]> = rest.split(|b| *b == 0xFF).collect();
    let split = (head as usize / NAMES.len()).min(parts.len());
    let (keys, args) = parts.split_at(split);
    let _ = parse_only(name, keys, args);
});
