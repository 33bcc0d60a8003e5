//! Shared by the module's integration tests: a server with the module loaded,
//! a fresh queue, raw `EMQ.*` calls, and the queue's keyspace as text so a
//! test can check every key a command may touch.

#![allow(dead_code)]

use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};
use redis::{Connection, RedisError, Value};

/// Two valid ids, in mint order; cases write `$A` and `$B` for them.
pub const A: &str = "JOB_00000000000000000000000001";
pub const B: &str = "JOB_00000000000000000000000002";

/// A server with the module loaded, plus `args` (`--name value` words).
pub fn server_with(args: &[&str]) -> RedisServer {
    RedisServer::start_with(ServerOptions {
        module: Some(module_path()),
        args: args.iter().map(|arg| arg.to_string()).collect(),
        ..ServerOptions::default()
    })
}

/// A connection to `server`.
pub fn connect(server: &RedisServer) -> Connection {
    server.client().get_connection().expect("connect to the test server")
}

/// A queue no other test uses: its prefix `emq:{name}:`.
pub fn queue() -> String {
    format!("emq:{{{}}}:", unique_queue("m"))
}

/// `words` with `$q:` as the queue's prefix and `$A`, `$B` as the two ids.
pub fn expand(prefix: &str, words: &str) -> Vec<String> {
    words
        .split_whitespace()
        .map(|word| word.replace("$q:", prefix).replace("$A", A).replace("$B", B))
        .collect()
}

/// Run one command given as words; an error reply comes back as its text.
pub fn call(conn: &mut Connection, words: &[impl AsRef<[u8]>]) -> Result<Value, String> {
    let (name, args) = words.split_first().expect("a command");
    let mut command = redis::cmd(std::str::from_utf8(name.as_ref()).expect("a UTF-8 command name"));
    for arg in args {
        command.arg(arg.as_ref());
    }
    command.query(conn).map_err(|err| error_text(&err))
}

/// An error reply as the server sent it: `EMQKIND job id must be …`.
pub fn error_text(err: &RedisError) -> String {
    match (err.code(), err.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_owned(),
        _ => err.to_string(),
    }
}

/// Run commands given as lines of words (expanded as [`expand`] does).
pub fn arrange(conn: &mut Connection, prefix: &str, lines: &[&str]) {
    for line in lines {
        call(conn, &expand(prefix, line)).unwrap_or_else(|err| panic!("arranging {line}: {err}"));
    }
}

/// A reply as short text: `1`, `hello`, `nil`, `[a, b]`; integers of 10^12 and
/// more (server times) read `T`, and so do bulk strings holding one.
pub fn render(value: &Value) -> String {
    match value {
        Value::Nil => "nil".into(),
        Value::Int(n) => time_or(n.to_string()),
        Value::BulkString(bytes) => time_or(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => text.clone(),
        Value::Okay => "OK".into(),
        Value::Array(items) => format!("[{}]", items.iter().map(render).collect::<Vec<_>>().join(", ")),
        other => format!("{other:?}"),
    }
}

fn time_or(text: String) -> String {
    match text.parse::<f64>() {
        Ok(n) if n >= 1e12 => "T".into(),
        _ => text,
    }
}

/// Every key of the database, one line each, sorted, with `prefix` written
/// `$q:` and the ids `$A`, `$B`: `job:$A attempts=0 payload=p state=pending`
/// (fields sorted, times as `T`) or `pending $A@0 $B@5` (members in order).
pub fn snapshot(conn: &mut Connection, prefix: &str) -> Vec<String> {
    let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(conn).expect("KEYS");
    keys.sort();
    let shorten = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        text.replace(prefix, "").replace(A, "$A").replace(B, "$B")
    };
    let mut lines = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE").arg(&key).query(conn).expect("TYPE");
        let body = match kind.as_str() {
            "hash" => {
                let mut fields: Vec<(Vec<u8>, Vec<u8>)> =
                    redis::cmd("HGETALL").arg(&key).query(conn).unwrap();
                fields.sort();
                let fields: Vec<String> =
                    fields.iter().map(|(f, v)| format!("{}={}", shorten(f), time_or(shorten(v)))).collect();
                fields.join(" ")
            }
            "zset" => {
                let members: Vec<(Vec<u8>, f64)> =
                    redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).arg("WITHSCORES").query(conn).unwrap();
                let members: Vec<String> = members
                    .iter()
                    .map(|(m, s)| format!("{}@{}", shorten(m), time_or(s.to_string())))
                    .collect();
                members.join(" ")
            }
            other => other.to_owned(),
        };
        lines.push(format!("{} {body}", shorten(&key)));
    }
    lines
}

/// Every key of the database with its exact content, for comparing servers.
pub fn dump(conn: &mut Connection) -> Vec<(Vec<u8>, String)> {
    let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(conn).expect("KEYS");
    keys.sort();
    let mut all = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE").arg(&key).query(conn).expect("TYPE");
        let content = match kind.as_str() {
            "hash" => {
                let mut fields: Vec<(Vec<u8>, Vec<u8>)> =
                    redis::cmd("HGETALL").arg(&key).query(conn).unwrap();
                fields.sort();
                format!("hash {fields:?}")
            }
            "zset" => {
                let members: Vec<(Vec<u8>, String)> =
                    redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).arg("WITHSCORES").query(conn).unwrap();
                format!("zset {members:?}")
            }
            "stream" => {
                // Every entry with its id: a replica holds the master's ids.
                let entries: Vec<(String, Vec<Vec<u8>>)> =
                    redis::cmd("XRANGE").arg(&key).arg("-").arg("+").query(conn).unwrap();
                format!("stream {entries:?}")
            }
            other => other.to_owned(),
        };
        all.push((key, content));
    }
    all
}

/// One field of `INFO <section>`.
pub fn info_field(conn: &mut Connection, section: &str, field: &str) -> Option<String> {
    let info: String = redis::cmd("INFO").arg(section).query(conn).ok()?;
    let prefix = format!("{field}:");
    info.lines().find_map(|line| line.strip_prefix(&prefix)).map(str::to_owned)
}
