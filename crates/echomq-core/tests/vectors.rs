//! Every golden vector case, one test each, replayed from the committed
//! file on the in-memory store with no redis-server (`vectors::read`): its
//! `before` loaded, its call run at the file's now, its reply and its whole
//! keyspace after compared with the file's. A behaviour change fails the
//! cases it changes, each naming its transition and case and showing the
//! keys that differ.
//!
//! The tests are listed in `vectors/cases.rs`, written by `cargo run -p
//! echomq-core --example vectors` with the files (and checked with them by
//! the staleness test), so a case never lacks its test.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use echomq_core::vectors::json::Json;
use echomq_core::vectors::read;
use echomq_core::Name;

#[rustfmt::skip]
#[path = "vectors/cases.rs"]
mod cases;

/// Every vector file, parsed once per test binary.
fn files() -> &'static BTreeMap<&'static str, Result<Json, String>> {
    static FILES: OnceLock<BTreeMap<&'static str, Result<Json, String>>> = OnceLock::new();
    FILES.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../protocol/vectors");
        Name::ALL
            .iter()
            .map(|name| {
                let path = dir.join(format!("{name}.json"));
                let parsed = std::fs::read_to_string(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|text| read::parse(&text));
                (name.as_str(), parsed.map_err(|e| format!("{}: {e}", path.display())))
            })
            .collect()
    })
}

/// Replay `case` of `transition`'s file; panic with what differs.
fn replay(transition: &str, case: &str) {
    let file = match files().get(transition) {
        Some(Ok(file)) => file,
        Some(Err(err)) => panic!("{err}"),
        None => panic!("{transition} is no transition"),
    };
    if let Err(wrong) = read::replay(file, case) {
        panic!("{transition}.json, case {case:?}:\n{wrong}");
    }
}
