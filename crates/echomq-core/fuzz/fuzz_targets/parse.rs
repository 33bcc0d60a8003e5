//! The core's argument parsing, fed arbitrary KEYS and ARGV for every
//! transition: it must answer `Ok` or a refusal, and never panic (a panic in
//! the module aborts redis-server).
//!
//! Input: the first byte picks the transition and how many of the parts are
//! KEYS; the rest is split on 0xFF into parts.
#![no_main]

use echomq_core::Name;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else { return };
    let name = Name::ALL[head as usize % Name::ALL.len()];
    let parts: Vec<&[u8]> = rest.split(|b| *b == 0xFF).collect();
    let split = (head as usize / Name::ALL.len()).min(parts.len());
    let (keys, args) = parts.split_at(split);
    let _ = name.parse_only(keys, args);
});
