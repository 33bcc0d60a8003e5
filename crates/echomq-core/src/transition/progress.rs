//! PROGRESS: the holder's report of how far it got (PROTOCOL.md §7;
//! `progress.lua`).

use super::events::{emit, Events};
use super::fenced::Fenced;
use crate::description::{keys, Description, Effect};
use crate::limits::MAX_PROGRESS;
use crate::parse::options;
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// PROGRESS's KEYS.
    ProgressKeys { job: Job, progress: Progress, events: Events, config: Config }
}

/// A parsed PROGRESS.
#[derive(Debug)]
pub struct Progress<'a> {
    fenced: Fenced<'a, ProgressKeys<'a>>,
    value: &'a [u8],
}

impl<'a> Progress<'a> {
    /// What PROGRESS is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "progress",
        command: "EMQ.PROGRESS",
        keys: ProgressKeys::ROLES,
        forms: ProgressKeys::FORMS,
        args: &["id", "token", "value"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: false,
        fenced: true,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, progress, events, config. ARGV: id, token, value.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the token is missing or out of
    ///   range; the value is missing; an argument follows it.
    /// - `EMQSIZE`: the value is over `MAX_PROGRESS` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Progress<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args)?;
        let value = *args.get(2).ok_or_else(|| Refusal::arg("progress value is missing"))?;
        if value.len() > MAX_PROGRESS {
            return Err(Refusal::new(Code::Size, format!("progress exceeds {MAX_PROGRESS} bytes")));
        }
        options(args.get(3..).unwrap_or_default(), [])?;
        Ok(Progress { fenced, value })
    }

    /// Keep the holder's progress value beside the record; the record is untouched.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: progress, the record, events or config holds another type.
    /// - `TRYAGAIN`: the record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQNOJOB`: there is no record.
    /// - `EMQDATA`: the record's `state` or `attempts` is malformed, or `<q>config`'s `events` is not an
    ///   integer.
    /// - `EMQFENCE`: the job is not active, or `token` is not its `attempts` (PROTOCOL.md §6).
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced { keys: ProgressKeys { job, progress, events, config }, id, .. } = self.fenced;
        self.fenced.check(store, job, &[(progress, KeyType::Hash)])?;
        let events = Events::open(store, Some((events, config)))?;
        store.hset(progress, &[(id, self.value)]);
        emit(&events, store, "progress", id, &[(b"progress", self.value)]);
        Ok(Reply::Int(1))
    }
}
