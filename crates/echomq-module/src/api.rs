//! The few corners of the Redis module API the module uses, as small safe
//! wrappers: owned strings, open keys, sorted-set ranges, effects replication
//! and keyspace events.
//!
//! Everything here is byte-safe (keys, members and fields may hold NUL bytes)
//! and never panics: a missing API function (checked once at load time by
//! [`missing_functions`]) falls back to a harmless value instead of unwrapping.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::ptr;

use redis_module::raw;

/// Call a Redis module API function, or yield `$fallback` when the server
/// lacks it (never the case once [`missing_functions`] found none missing).
macro_rules! rm {
    ($name:ident($($arg:expr),* $(,)?) or $fallback:expr) => {
        // SAFETY: the function table is filled by `RedisModule_Init` before
        // any command runs and never changes afterwards; each caller passes
        // pointers that are valid for the call.
        match unsafe { raw::$name } {
            Some(function) => unsafe { function($($arg),*) },
            None => $fallback,
        }
    };
}
pub(crate) use rm;

/// The API functions the module cannot work without, by name, that this
/// server does not provide. Checked when the module loads.
pub(crate) fn missing_functions() -> Vec<&'static str> {
    /// `(name, whether the server filled in RedisModule_<name>)`.
    macro_rules! present {
        ($($function:ident),* $(,)?) => {
            // SAFETY: copying entries of the function table after `RedisModule_Init`.
            [$((stringify!($function).trim_start_matches("RedisModule_"), unsafe { raw::$function }.is_some())),*]
        };
    }
    let present = present![
        RedisModule_OpenKey,
        RedisModule_CloseKey,
        RedisModule_KeyType,
        RedisModule_ValueLength,
        RedisModule_HashGet,
        RedisModule_HashSet,
        RedisModule_ZsetAdd,
        RedisModule_ZsetRem,
        RedisModule_ZsetScore,
        RedisModule_ZsetFirstInScoreRange,
        RedisModule_ZsetFirstInLexRange,
        RedisModule_ZsetRangeCurrentElement,
        RedisModule_ZsetRangeNext,
        RedisModule_ZsetRangeStop,
        RedisModule_StreamAdd,
        RedisModule_StreamTrimByLength,
        RedisModule_DeleteKey,
        RedisModule_Milliseconds,
        RedisModule_Replicate,
        RedisModule_NotifyKeyspaceEvent,
        RedisModule_SignalKeyAsReady,
        RedisModule_SignalModifiedKey,
        RedisModule_BlockClientOnKeys,
        RedisModule_GetContextFlags,
        RedisModule_CreateString,
        RedisModule_FreeString,
        RedisModule_StringPtrLen,
        RedisModule_Call,
        RedisModule_CallReplyType,
        RedisModule_CallReplyLength,
        RedisModule_CallReplyArrayElement,
        RedisModule_CallReplyStringPtr,
        RedisModule_FreeCallReply,
        RedisModule_ReplyWithArray,
        RedisModule_ReplyWithError,
        RedisModule_ReplyWithLongLong,
        RedisModule_ReplyWithNull,
        RedisModule_ReplyWithStringBuffer,
        RedisModule_IsKeysPositionRequest,
        RedisModule_KeyAtPos,
        RedisModule_CreateCommand,
        RedisModule_GetCommand,
        RedisModule_SetCommandInfo,
    ];
    present.into_iter().filter(|(_, here)| !here).map(|(name, _)| name).collect()
}

/// A module string this code owns, freed on drop. Created without a context,
/// so it never joins a context's automatic memory and may outlive a callback.
pub(crate) struct RString(*mut raw::RedisModuleString);

impl RString {
    /// A copy of `bytes`, NUL bytes included.
    pub(crate) fn new(bytes: &[u8]) -> RString {
        let ptr = bytes.as_ptr().cast::<c_char>();
        RString(rm!(RedisModule_CreateString(ptr::null_mut(), ptr, bytes.len()) or ptr::null_mut()))
    }

    /// Take ownership of a string the API handed out (a hash value, a member).
    fn adopt(ptr: *mut raw::RedisModuleString) -> Option<RString> {
        (!ptr.is_null()).then_some(RString(ptr))
    }

    /// The pointer, for API calls; the string keeps it alive.
    pub(crate) fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.0
    }

    /// The bytes, copied out.
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        bytes_of(self.0).to_vec()
    }
}

impl Drop for RString {
    fn drop(&mut self) {
        if !self.0.is_null() {
            rm!(RedisModule_FreeString(ptr::null_mut(), self.0) or ());
        }
    }
}

/// The bytes of a module string the caller keeps alive (an argv entry).
pub(crate) fn bytes_of<'a>(string: *const raw::RedisModuleString) -> &'a [u8] {
    if string.is_null() {
        return &[];
    }
    let mut len = 0usize;
    let data = rm!(RedisModule_StringPtrLen(string, &mut len) or ptr::null());
    if data.is_null() {
        return &[];
    }
    // SAFETY: Redis guarantees `len` readable bytes at `data` for as long as
    // the string lives, which the caller ensures outlives the slice.
    unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
}

/// A key opened with `RedisModule_OpenKey`, closed on drop.
pub(crate) struct Key(*mut raw::RedisModuleKey);

impl Key {
    /// Open `name` to read; `None` when the key does not exist.
    pub(crate) fn read(ctx: *mut raw::RedisModuleCtx, name: &RString) -> Option<Key> {
        Key::open(ctx, name, raw::REDISMODULE_READ)
    }

    /// Open `name` to write (an empty key when it does not exist yet).
    pub(crate) fn write(ctx: *mut raw::RedisModuleCtx, name: &RString) -> Option<Key> {
        Key::open(ctx, name, raw::REDISMODULE_READ | raw::REDISMODULE_WRITE)
    }

    fn open(ctx: *mut raw::RedisModuleCtx, name: &RString, mode: u32) -> Option<Key> {
        let key = rm!(RedisModule_OpenKey(ctx, name.as_ptr(), mode as c_int) or ptr::null_mut());
        (!key.is_null()).then_some(Key(key))
    }

    /// The key's `REDISMODULE_KEYTYPE_*`.
    pub(crate) fn kind(&self) -> isize {
        rm!(RedisModule_KeyType(self.0) or 0) as isize
    }

    /// The number of members or fields.
    pub(crate) fn len(&self) -> usize {
        rm!(RedisModule_ValueLength(self.0) or 0)
    }

    /// One field of a hash.
    pub(crate) fn hash_get(&self, field: &RString) -> Option<RString> {
        let mut value: *mut raw::RedisModuleString = ptr::null_mut();
        let flags = raw::REDISMODULE_HASH_NONE as c_int;
        let end: *mut raw::RedisModuleString = ptr::null_mut();
        rm!(RedisModule_HashGet(self.0, flags, field.as_ptr(), &mut value, end) or 0);
        RString::adopt(value)
    }

    /// Set one field of a hash, creating the hash when the key is empty.
    pub(crate) fn hash_set(&self, field: &RString, value: &RString) {
        let flags = raw::REDISMODULE_HASH_NONE as c_int;
        let end: *mut raw::RedisModuleString = ptr::null_mut();
        rm!(RedisModule_HashSet(self.0, flags, field.as_ptr(), value.as_ptr(), end) or 0);
    }

    /// Delete one field of a hash; whether it was there.
    pub(crate) fn hash_del(&self, field: &RString) -> bool {
        // `REDISMODULE_HASH_DELETE`: the API's marker value for "delete this field".
        let delete = ptr::without_provenance_mut::<raw::RedisModuleString>(1);
        let flags = raw::REDISMODULE_HASH_NONE as c_int;
        let end: *mut raw::RedisModuleString = ptr::null_mut();
        rm!(RedisModule_HashSet(self.0, flags, field.as_ptr(), delete, end) or 0) > 0
    }

    /// Add `member` at `score` or move it there; whether the set changed.
    pub(crate) fn zset_add(&self, score: f64, member: &RString) -> bool {
        let mut flags: c_int = 0;
        let ok = rm!(RedisModule_ZsetAdd(self.0, score, member.as_ptr(), &mut flags) or raw::REDISMODULE_ERR as c_int);
        let changed = (raw::REDISMODULE_ZADD_ADDED | raw::REDISMODULE_ZADD_UPDATED) as c_int;
        ok == raw::REDISMODULE_OK as c_int && flags & changed != 0
    }

    /// The score of `member`, if it is in the set.
    pub(crate) fn zset_score(&self, member: &RString) -> Option<f64> {
        let mut score = 0.0;
        let found =
            rm!(RedisModule_ZsetScore(self.0, member.as_ptr(), &mut score) or raw::REDISMODULE_ERR as c_int);
        (found == raw::REDISMODULE_OK as c_int).then_some(score)
    }

    /// Remove `member`; whether it was there.
    pub(crate) fn zset_rem(&self, member: &RString) -> bool {
        let mut deleted: c_int = 0;
        rm!(RedisModule_ZsetRem(self.0, member.as_ptr(), &mut deleted) or 0);
        deleted != 0
    }

    /// Up to `limit` members with a score in `min..=max`, in (score, member) order.
    pub(crate) fn zset_range(&self, min: f64, max: f64, limit: usize) -> Vec<Vec<u8>> {
        self.zset_range_scored(min, false, max, limit).into_iter().map(|(member, _)| member).collect()
    }

    /// Up to `limit` members after `after` (excluded), or from the first,
    /// in byte order, of a sorted set whose scores are all equal (BYLEX).
    pub(crate) fn zset_range_lex(&self, after: Option<&[u8]>, limit: usize) -> Vec<Vec<u8>> {
        let mut members = Vec::new();
        let min = RString::new(&after.map_or_else(|| b"-".to_vec(), |after| [b"(", after].concat()));
        let max = RString::new(b"+");
        if limit == 0 || rm!(RedisModule_ZsetFirstInLexRange(self.0, min.as_ptr(), max.as_ptr()) or 1) != 0 {
            return members;
        }
        while members.len() < limit {
            let current =
                rm!(RedisModule_ZsetRangeCurrentElement(self.0, ptr::null_mut()) or ptr::null_mut());
            match RString::adopt(current) {
                Some(member) => members.push(member.to_vec()),
                None => break,
            }
            if rm!(RedisModule_ZsetRangeNext(self.0) or 0) == 0 {
                break;
            }
        }
        rm!(RedisModule_ZsetRangeStop(self.0) or ());
        members
    }

    /// Up to `limit` members with a score from `min` (excluded when
    /// `min_excluded`) to `max`, in (score, member) order, each with its score.
    pub(crate) fn zset_range_scored(
        &self,
        min: f64,
        min_excluded: bool,
        max: f64,
        limit: usize,
    ) -> Vec<(Vec<u8>, f64)> {
        let mut members = Vec::new();
        let min_ex = c_int::from(min_excluded);
        if limit == 0 || rm!(RedisModule_ZsetFirstInScoreRange(self.0, min, max, min_ex, 0) or 1) != 0 {
            return members;
        }
        while members.len() < limit {
            let mut score = 0.0;
            let current = rm!(RedisModule_ZsetRangeCurrentElement(self.0, &mut score) or ptr::null_mut());
            match RString::adopt(current) {
                Some(member) => members.push((member.to_vec(), score)),
                None => break,
            }
            if rm!(RedisModule_ZsetRangeNext(self.0) or 0) == 0 {
                break;
            }
        }
        rm!(RedisModule_ZsetRangeStop(self.0) or ());
        members
    }

    /// Append an entry of `fields` (field, value, field, value…) to a
    /// stream under a new id, as `XADD key * …` would, creating the stream
    /// when the key is empty; the id, or `None` when the stream refused it.
    pub(crate) fn stream_add(&self, fields: &[RString]) -> Option<raw::RedisModuleStreamID> {
        let mut argv: Vec<*mut raw::RedisModuleString> = fields.iter().map(RString::as_ptr).collect();
        let mut id = raw::RedisModuleStreamID { ms: 0, seq: 0 };
        let flags = raw::REDISMODULE_STREAM_ADD_AUTOID as c_int;
        let numfields = (argv.len() / 2) as i64;
        let added = rm!(RedisModule_StreamAdd(self.0, flags, &mut id, argv.as_mut_ptr(), numfields)
            or raw::REDISMODULE_ERR as c_int);
        (added == raw::REDISMODULE_OK as c_int).then_some(id)
    }

    /// Trim a stream to about `keep` entries, as `MAXLEN ~ keep` does (whole
    /// nodes only); how many entries went.
    pub(crate) fn stream_trim_about(&self, keep: u64) -> u64 {
        let flags = raw::REDISMODULE_STREAM_TRIM_APPROX as c_int;
        let length = i64::try_from(keep).unwrap_or(i64::MAX);
        rm!(RedisModule_StreamTrimByLength(self.0, flags, length) or 0).max(0) as u64
    }

    /// Delete the key.
    pub(crate) fn delete(&self) {
        rm!(RedisModule_DeleteKey(self.0) or 0);
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        rm!(RedisModule_CloseKey(self.0) or ());
    }
}

/// Send one write to replicas and the AOF as a plain Redis command. Redis
/// wraps all the writes one command replicates in a single MULTI/EXEC.
pub(crate) fn replicate(ctx: *mut raw::RedisModuleCtx, command: &CStr, args: &[&RString]) {
    let mut argv: Vec<*mut raw::RedisModuleString> = args.iter().map(|arg| arg.as_ptr()).collect();
    // "v": an array of module strings and its length; Redis retains them.
    let format = c"v".as_ptr();
    rm!(RedisModule_Replicate(ctx, command.as_ptr(), format, argv.as_mut_ptr(), argv.len()) or 0);
}

/// Fire the keyspace event `event` of class `class` (`REDISMODULE_NOTIFY_*`) on `key`.
pub(crate) fn notify(ctx: *mut raw::RedisModuleCtx, class: c_int, event: &CStr, key: &RString) {
    rm!(RedisModule_NotifyKeyspaceEvent(ctx, class, event.as_ptr(), key.as_ptr()) or 0);
}

/// Mark `key` modified, for `WATCH` and client-side caching.
pub(crate) fn signal_modified(ctx: *mut raw::RedisModuleCtx, key: &RString) {
    rm!(RedisModule_SignalModifiedKey(ctx, key.as_ptr()) or 0);
}

/// Wake clients blocked on `key` (a blocking CLAIM on pending).
pub(crate) fn signal_ready(ctx: *mut raw::RedisModuleCtx, key: &RString) {
    rm!(RedisModule_SignalKeyAsReady(ctx, key.as_ptr()) or ());
}

/// A transition's keys' flags: `RO ACCESS` for one that only reads (so a
/// user whose keys are read-only, `%R~`, may run it), `RW ACCESS UPDATE`
/// for one that writes.
fn key_flags(reads_only: bool) -> u32 {
    if reads_only {
        raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS
    } else {
        raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE
    }
}

/// Answer a key-position request: argv[`position`] is a key, with the
/// flags of [`key_flags`].
pub(crate) fn key_at(ctx: *mut raw::RedisModuleCtx, position: usize, reads_only: bool) {
    let position = position as c_int;
    let flags = key_flags(reads_only) as c_int;
    rm!(RedisModule_KeyAtPosWithFlags(ctx, position, flags) or rm!(RedisModule_KeyAtPos(ctx, position) or ()));
}

/// Declare where `command`'s keys are, as `EVALSHA`'s are: argv[1] counts
/// them and they follow it (`EMQ.<NAME> numkeys key… arg…`), with its
/// arity: at least the count. One key spec, begin-search index 1, find-keys
/// keynum (the count at 0 past it, the first key at 1, step 1), which
/// `COMMAND INFO` and `COMMAND DOCS` show, with [`key_flags`]; its flags
/// are variable, so `COMMAND GETKEYS`, Cluster's routing and ACLs ask the
/// command (`key_at`).
/// `false` when the server refused.
pub(crate) fn declare_counted_keys(ctx: *mut raw::RedisModuleCtx, command: &CStr, reads_only: bool) -> bool {
    let command = rm!(RedisModule_GetCommand(ctx, command.as_ptr()) or ptr::null_mut());
    if command.is_null() {
        return false;
    }
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    // VARIABLE_FLAGS: the server asks the command itself for a call's keys
    // (`getkeys-api`, `key_at`), which names none for a refused count,
    // where the spec alone would read any count it is given.
    let flags = key_flags(reads_only) | raw::REDISMODULE_CMD_KEY_VARIABLE_FLAGS;
    let counted = raw::RedisModuleCommandKeySpec {
        notes: ptr::null(),
        flags: u64::from(flags),
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX,
        bs: raw::RedisModuleCommandKeySpec__bindgen_ty_1 {
            index: raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 { pos: 1 },
        },
        find_keys_type: raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM,
        fk: raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
            keynum: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_2 {
                keynumidx: 0,
                firstkey: 1,
                keystep: 1,
            },
        },
    };
    // SAFETY: an all-zero key spec is the list's terminator, as the API asks.
    let end: raw::RedisModuleCommandKeySpec = unsafe { std::mem::zeroed() };
    let mut specs = [counted, end];
    let mut info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: ptr::null(),
        complexity: ptr::null(),
        since: ptr::null(),
        history: ptr::null_mut(),
        tips: ptr::null(),
        // The command's name and the key count, at least.
        arity: -2,
        key_specs: specs.as_mut_ptr(),
        args: ptr::null_mut(),
    };
    rm!(RedisModule_SetCommandInfo(command, &mut info) or raw::Status::Err as c_int)
        == raw::Status::Ok as c_int
}

/// A command's argv as bytes, the command name first.
pub(crate) fn words<'a>(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> Vec<&'a [u8]> {
    let len = usize::try_from(argc).unwrap_or(0);
    if argv.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: Redis passes `argc` valid strings that live while the command
    // runs (and while its client stays blocked, for a blocked claim).
    let argv = unsafe { std::slice::from_raw_parts(argv, len) };
    argv.iter().map(|&arg| bytes_of(arg)).collect()
}

/// The server's clock, ms since the Unix epoch, as the server's own
/// commands read it: on Redis 7.2 and later (and Valkey) the time cached
/// when the command (or script) began, which `TIME` answers and `XADD *`
/// stamps its entries with; before 7.2, which has no cached time for
/// modules, the clock itself, which `XADD *` reads too, after us. So an
/// event's id is never earlier than the transition's now (PROTOCOL.md §7.1).
pub(crate) fn now_ms() -> u64 {
    let cached = rm!(RedisModule_CachedMicroseconds() or 0);
    if cached > 0 {
        return u64::try_from(cached / 1000).unwrap_or(0);
    }
    u64::try_from(rm!(RedisModule_Milliseconds() or 0)).unwrap_or(0)
}

/// The context's `REDISMODULE_CTX_FLAGS_*`.
pub(crate) fn context_flags(ctx: *mut raw::RedisModuleCtx) -> u32 {
    rm!(RedisModule_GetContextFlags(ctx) or 0) as u32
}

/// `CLUSTER NODES` as this node answers it; empty outside a cluster.
pub(crate) fn cluster_nodes(ctx: *mut raw::RedisModuleCtx) -> Vec<u8> {
    let reply = rm!(RedisModule_Call(ctx, c"CLUSTER".as_ptr(), c"c".as_ptr(), c"NODES".as_ptr())
        or ptr::null_mut());
    if reply.is_null() {
        return Vec::new();
    }
    let mut nodes = Vec::new();
    if rm!(RedisModule_CallReplyType(reply) or 0) == raw::REDISMODULE_REPLY_STRING as c_int {
        let mut len = 0usize;
        let data = rm!(RedisModule_CallReplyStringPtr(reply, &mut len) or ptr::null());
        if !data.is_null() {
            // SAFETY: the reply owns `len` bytes at `data` until it is freed below.
            nodes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }.to_vec();
        }
    }
    rm!(RedisModule_FreeCallReply(reply) or ());
    nodes
}

/// Every field and value of a hash, in the order `HGETALL` gives them (the
/// order the Lua script sees), through `RedisModule_Call`.
pub(crate) fn hgetall(ctx: *mut raw::RedisModuleCtx, key: &RString) -> Vec<(Vec<u8>, Vec<u8>)> {
    let reply =
        rm!(RedisModule_Call(ctx, c"HGETALL".as_ptr(), c"s".as_ptr(), key.as_ptr()) or ptr::null_mut());
    if reply.is_null() {
        return Vec::new();
    }
    let text = |i: usize| -> Vec<u8> {
        let element = rm!(RedisModule_CallReplyArrayElement(reply, i) or ptr::null_mut());
        if element.is_null() {
            return Vec::new();
        }
        let mut len = 0usize;
        let data = rm!(RedisModule_CallReplyStringPtr(element, &mut len) or ptr::null());
        if data.is_null() {
            return Vec::new();
        }
        // SAFETY: the reply owns `len` bytes at `data` until it is freed below.
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }.to_vec()
    };
    let mut fields = Vec::new();
    if rm!(RedisModule_CallReplyType(reply) or 0) == raw::REDISMODULE_REPLY_ARRAY as c_int {
        let len = rm!(RedisModule_CallReplyLength(reply) or 0);
        for i in (0..len.saturating_sub(1)).step_by(2) {
            fields.push((text(i), text(i + 1)));
        }
    }
    rm!(RedisModule_FreeCallReply(reply) or ());
    fields
}
