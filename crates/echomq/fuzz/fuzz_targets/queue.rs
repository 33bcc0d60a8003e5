//! Queue names and the key parser. A name `valid_queue` accepts is exactly
//! one of 1..=255 bytes without `{`, `}` or NUL (PROTOCOL.md §1); it gives a
//! `Keyspace` whose every key starts `emq:{name}:`, has `name` as its Redis
//! Cluster hashtag (so the whole queue is one slot), matches its state's
//! `SCAN` pattern, and maps back to `name` through `queue_of`. A refused
//! name is `ErrorKind::InvalidQueue`, from `valid_queue` and `Keyspace::new`
//! alike. And for any key at all, a queue `queue_of` names is a valid name
//! and the key's hashtag.
//!
//! Input: a 0xFF byte splits a name from a key suffix; the name is also
//! tried as a whole key, raw and behind `emq:{`.
#![no_main]

use echomq::keyspace::{queue_of, state_pattern, valid_queue, MAX_QUEUE_NAME};
use echomq::{Error, ErrorKind, JobId, Keyspace, State};
use libfuzzer_sys::fuzz_target;

/// The slot tag Redis Cluster hashes: between the first `{` and the next
/// `}`, when that is not empty; else the whole key.
fn hashtag(key: &str) -> &str {
    if let Some(open) = key.find('{') {
        if let Some(len) = key[open + 1..].find('}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// A `SCAN MATCH` glob with `*` as its only wildcard (all `state_pattern` uses).
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => text.strip_prefix(head).is_some_and(|rest| {
            (0..=rest.len()).any(|at| rest.is_char_boundary(at) && glob(tail, &rest[at..]))
        }),
    }
}

/// A key found in the wild: whatever `queue_of` says of it must hold.
fn check_key(key: &str) {
    if let Some(name) = queue_of(key) {
        assert!(valid_queue(name).is_ok(), "queue_of gave an invalid name {name:?} for {key:?}");
        assert!(key.starts_with(&format!("emq:{{{name}}}:")), "{key:?} is not under {name:?}");
        assert_eq!(hashtag(key), name, "{key:?} hashes elsewhere than its queue {name:?}");
    }
}

fn check_name(name: &str, suffix: &str) {
    let expected = !name.is_empty() && name.len() <= MAX_QUEUE_NAME && !name.contains(['{', '}', '\0']);
    match (valid_queue(name), Keyspace::new(name)) {
        (Ok(()), Ok(keys)) => {
            assert!(expected, "accepted {name:?}");
            assert_eq!(keys.queue(), name);
            let id: JobId = "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R".parse().unwrap();
            let mut all = vec![keys.pending(), keys.priority(), keys.errors(), keys.job(&id)];
            for state in State::ALL {
                let key = keys.state(state);
                assert!(glob(&state_pattern(state), &key), "{key:?} escapes SCAN {}", state_pattern(state));
                all.push(key);
            }
            all.extend([keys.active(), keys.delayed(), keys.done(), keys.dead(), keys.cancelled()]);
            for key in &all {
                assert_eq!(queue_of(key), Some(name), "{key:?}");
                assert_eq!(hashtag(key), name, "{key:?}");
            }
            // Any key under the queue's prefix is the queue's, whatever follows.
            assert_eq!(queue_of(&format!("emq:{{{name}}}:{suffix}")), Some(name));
        }
        (Err(why), Err(Error { kind: ErrorKind::InvalidQueue, .. }))
            if why.kind == ErrorKind::InvalidQueue =>
        {
            assert!(!expected, "refused {name:?}: {why}");
        }
        other => {
            panic!("valid_queue and Keyspace::new disagree, or an untyped error, for {name:?}: {other:?}")
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(2, |b| *b == 0xFF);
    let name = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let suffix = String::from_utf8_lossy(parts.next().unwrap_or_default());
    check_name(&name, &suffix);
    check_key(&name);
    check_key(&format!("emq:{{{name}"));
    check_key(&format!("emq:{{{name}}}:{suffix}"));
});
