//! `emq scripts --out DIR` gives a speaker in another language scripts it can
//! load as they are (PROTOCOL.md §11): each one's SHA1 in `SHA1SUMS` is the
//! one `SCRIPT LOAD` answers, and a transition run by that SHA1 works, where
//! the reference file, with its `--@include` line, fails.

use std::collections::BTreeMap;
use std::process::Command;

use echomq_test_support::{unique_queue, RedisServer};

#[test]
fn the_written_scripts_load_and_run_by_their_sha1() {
    let dir = std::env::temp_dir().join(unique_queue("emq-scripts"));
    let output =
        Command::new(env!("CARGO_BIN_EXE_emq")).arg("scripts").arg("--out").arg(&dir).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let sums = std::fs::read_to_string(dir.join("SHA1SUMS")).unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), sums, "it prints what it wrote");

    let server = RedisServer::start();
    let mut conn = server.client().get_connection().unwrap();
    let mut by_file = BTreeMap::new();
    for line in sums.lines() {
        let (sha1, file) = line.split_once("  ").unwrap();
        let source = std::fs::read_to_string(dir.join(file)).unwrap();
        let loaded: String = redis::cmd("SCRIPT").arg("LOAD").arg(&source).query(&mut conn).unwrap();
        assert_eq!(loaded, sha1, "{file}");
        by_file.insert(file.to_owned(), sha1.to_owned());
    }
    assert_eq!(by_file.len(), echomq::Name::ALL.len());

    // A producer and a worker, by SHA1 alone.
    let q = format!("emq:{{{}}}:", unique_queue("scripts"));
    let id = "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R";
    let enqueued: i64 = redis::cmd("EVALSHA")
        .arg(&by_file["enqueue.lua"])
        .arg(2)
        .arg(format!("{q}job:{id}"))
        .arg(format!("{q}pending"))
        .arg(id)
        .arg("hello")
        .query(&mut conn)
        .unwrap();
    assert_eq!(enqueued, 1);
    let claimed: Vec<(String, i64, Vec<u8>)> = redis::cmd("EVALSHA")
        .arg(&by_file["claim.lua"])
        .arg(8)
        .arg(
            &["pending", "active", "config", "rate", "policy", "events", "headers", "wake"]
                .map(|k| format!("{q}{k}")),
        )
        .arg(30_000)
        .query(&mut conn)
        .unwrap();
    assert_eq!(claimed, vec![(id.to_owned(), 1, b"hello".to_vec())]);

    // The reference file as it stands does not load: its include is not expanded.
    let reference = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../echomq/lua/claim.lua"));
    let reference = reference.unwrap();
    assert!(reference.contains("--@include "));
    let err = redis::cmd("EVAL")
        .arg(&reference)
        .arg(8)
        .arg(
            &["pending", "active", "config", "rate", "policy", "events", "headers", "wake"]
                .map(|k| format!("{q}{k}")),
        )
        .arg(30_000)
        .query::<redis::Value>(&mut conn)
        .unwrap_err();
    assert!(err.to_string().contains("nonexistent global"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `manifest.json` tells a program what `SHA1SUMS` tells `sha1sum`, and
/// more: the protocol's version, and per transition its file, its number of
/// keys and the SHA1 a real server computes for it.
#[test]
fn the_manifest_names_the_version_and_every_transition_by_the_servers_sha1() {
    let dir = std::env::temp_dir().join(unique_queue("emq-manifest"));
    let output =
        Command::new(env!("CARGO_BIN_EXE_emq")).arg("scripts").arg("--out").arg(&dir).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(manifest["protocol"], "1.11");
    let entries = manifest["scripts"].as_array().unwrap();

    let server = RedisServer::start();
    let mut conn = server.client().get_connection().unwrap();
    let mut transitions = Vec::new();
    for entry in entries {
        let file = entry["file"].as_str().unwrap();
        let transition = entry["transition"].as_str().unwrap();
        let name = echomq::Name::ALL.iter().find(|name| name.as_str() == transition).unwrap();
        assert_eq!(entry["keys"].as_u64().unwrap() as usize, name.describe().keys.len(), "{file}");
        assert_eq!(file, format!("{transition}.lua"), "a script is named by its transition alone");
        let counts: Vec<usize> =
            entry["key_counts"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap() as usize).collect();
        assert_eq!(counts, name.describe().forms, "{file}");
        let source = std::fs::read_to_string(dir.join(file)).unwrap();
        let loaded: String = redis::cmd("SCRIPT").arg("LOAD").arg(&source).query(&mut conn).unwrap();
        assert_eq!(entry["sha1"].as_str().unwrap(), loaded, "{file}");
        transitions.push(transition.to_owned());
    }
    let all: Vec<String> = echomq::Name::ALL.iter().map(|name| name.as_str().to_owned()).collect();
    assert_eq!(transitions, all, "one entry per transition, in the protocol's order");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_version_names_the_program_and_the_protocol() {
    let output = Command::new(env!("CARGO_BIN_EXE_emq")).arg("--version").output().unwrap();
    assert!(output.status.success());
    let expected = format!("emq {} (protocol 1.11)\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
}
