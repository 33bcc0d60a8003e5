//! Writing the core's answer to the client: a [`Reply`] as RESP, a
//! [`Refusal`] as the error reply `<CODE> <text>`, in the words the Lua
//! script would use.

use std::ffi::CString;
use std::os::raw::{c_char, c_long};

use echomq_core::{Answer, Refusal, Reply};
use redis_module::raw;

use crate::api::rm;

/// Send a transition's outcome.
pub(crate) fn send(ctx: *mut raw::RedisModuleCtx, outcome: &Answer) {
    match outcome {
        Ok(reply) => send_reply(ctx, reply),
        Err(refusal) => send_error(ctx, &error_line(refusal)),
    }
}

/// Send one reply, arrays recursively; an item's own refusal inside an
/// array as an error reply there.
pub(crate) fn send_reply(ctx: *mut raw::RedisModuleCtx, reply: &Reply) {
    match reply {
        Reply::Int(n) => {
            rm!(RedisModule_ReplyWithLongLong(ctx, *n) or 0);
        }
        Reply::Bulk(bytes) => {
            let data = bytes.as_ptr().cast::<c_char>();
            rm!(RedisModule_ReplyWithStringBuffer(ctx, data, bytes.len()) or 0);
        }
        Reply::Nil => {
            rm!(RedisModule_ReplyWithNull(ctx) or 0);
        }
        Reply::Array(items) => {
            let len = c_long::try_from(items.len()).unwrap_or(c_long::MAX);
            rm!(RedisModule_ReplyWithArray(ctx, len) or 0);
            for item in items {
                send_reply(ctx, item);
            }
        }
        Reply::Error(refusal) => send_error(ctx, &error_line(refusal)),
    }
}

/// Send an error reply; its first word is the code.
pub(crate) fn send_error(ctx: *mut raw::RedisModuleCtx, line: &CString) {
    rm!(RedisModule_ReplyWithError(ctx, line.as_ptr()) or 0);
}

/// The refusal's wire text, `<CODE> <text>`, as Redis delivers a Lua
/// script's `redis.error_reply`: cut at the first NUL byte (Redis formats the
/// text with `%s`) and with `\r` and `\n` turned to spaces (RESP errors are
/// one line).
pub(crate) fn error_line(refusal: &Refusal) -> CString {
    let text = refusal.to_string();
    let line: Vec<u8> = text
        .bytes()
        .take_while(|b| *b != 0)
        .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect();
    CString::new(line).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use echomq_core::Code;

    #[test]
    fn error_lines_are_one_line_and_stop_at_nul() {
        let refusal = Refusal::new(Code::Type, "emq:{q}:a\r\nb holds a string, not a zset");
        assert_eq!(error_line(&refusal).as_bytes(), b"EMQTYPE emq:{q}:a  b holds a string, not a zset");
        let refusal = Refusal::arg("KEYS[2] must be emq:{q\0}:active");
        assert_eq!(error_line(&refusal).as_bytes(), b"EMQARG KEYS[2] must be emq:{q");
    }
}
