//! Whole transitions on the in-process store: a sequence of arbitrary calls
//! (parse, checks and writes) must never panic, and every refusal must leave
//! the keyspace exactly as it was.
//!
//! Input: calls separated by 0xFE; in each, the first byte picks the
//! transition and the number of KEYS, the rest splits on 0xFF into parts.
//! Parts shorter than 3 bytes are replaced by keys of one queue, so calls
//! often reach the checks and writes instead of stopping at the key check.
#![no_main]

use std::sync::Arc;

use echomq_core::memory::{ManualClock, Memory};
use echomq_core::Name;
use libfuzzer_sys::fuzz_target;

const KEYS: [&[u8]; 12] = [
    b"emq:{f}:pending",
    b"emq:{f}:active",
    b"emq:{f}:delayed",
    b"emq:{f}:done",
    b"emq:{f}:dead",
    b"emq:{f}:cancelled",
    b"emq:{f}:priority",
    b"emq:{f}:errors",
    b"emq:{f}:config",
    b"emq:{f}:rate",
    b"emq:{f}:job:JOB_00000000000000000000000001",
    b"JOB_00000000000000000000000001",
];

fuzz_target!(|data: &[u8]| {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let mut store = Memory::new(clock.clone());
    for call in data.split(|b| *b == 0xFE) {
        let Some((&head, rest)) = call.split_first() else { continue };
        let name = Name::ALL[head as usize % Name::ALL.len()];
        let parts: Vec<&[u8]> = rest
            .split(|b| *b == 0xFF)
            .map(|part| if part.len() < 3 { KEYS[part.first().copied().unwrap_or(0) as usize % KEYS.len()] } else { part })
            .collect();
        let split = (head as usize / Name::ALL.len()).min(parts.len());
        let (keys, args) = parts.split_at(split);
        let before = store.dump();
        if name.run(&mut store, keys, args).is_err() {
            assert_eq!(before, store.dump(), "a refused {name} changed the keyspace");
        }
        clock.advance(u64::from(head));
    }
});
