//! OBLITERATE: the last step of deleting a queue (PROTOCOL.md §7;
//! `obliterate.lua`).

use super::grouping::Grouping;
use super::{need, protocol};
use crate::description::{keys, Description, Effect};
use crate::parse::{named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// OBLITERATE's KEYS.
    ObliterateKeys {
        pending: Pending,
        active: Active,
        delayed: Delayed,
        done: Done,
        dead: Dead,
        cancelled: Cancelled,
        priority: Priority,
        errors: Errors,
        progress: Progress,
        policy: Policy,
        config: Config,
        rate: Rate,
        schedules: Schedules,
        ticks: Ticks,
        unique: Unique,
        unique_until: UniqueUntil,
        results: Results,
        events: Events,
        headers: Headers,
        batches: Batches,
        batch_jobs: BatchJobs,
        batch_open: BatchOpen,
        wake: Wake,
    }
    then counts: Counts
    flow
    /// The flows' keys (protocol 1.6, §7.8).
    ObliterateTold { waiting: Waiting, parents: Parents, notices: Notices }
}

/// A parsed OBLITERATE.
#[derive(Debug)]
pub struct Obliterate<'a> {
    keys: ObliterateKeys<'a>,
    prefix: &'a [u8],
}

impl<'a> Obliterate<'a> {
    /// What OBLITERATE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "obliterate",
        command: "EMQ.OBLITERATE",
        keys: ObliterateKeys::ROLES,
        forms: ObliterateKeys::FORMS,
        args: &[],
        options: &[],
        effect: Effect::Frees,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: the six sets, then every other key of the queue. No ARGV.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles, or an argument is given.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Obliterate<'a>, Refusal> {
        let (keys, prefix) = named_keys::<ObliterateKeys>(keys, b"")?;
        options(args, [])?;
        Ok(Obliterate { keys, prefix })
    }

    /// The last step of deleting a queue: refused while any of its six sets
    /// holds a job; else delete every other key it owns. Reply how many
    /// keys were deleted. Every key must hold its protocol type (or nothing).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key holds another type than its role's.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed: a queue this speaker
    ///   cannot read is not its to delete.
    /// - `EMQSTATE`: a job set still holds jobs (`the queue still holds <n> jobs`).
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let mut keys = self.keys.all().to_vec();
        keys.extend(self.keys.counts);
        let told = self.keys.flow;
        keys.extend(told.iter().flat_map(|told| [told.waiting, told.parents, told.notices]));
        for (key, role) in keys.iter().zip(ObliterateKeys::ROLES) {
            need(store, key, role.key_type())?;
        }
        protocol(self.keys.config, store.hget(self.keys.config, b"protocol").as_deref())?;
        let ObliterateKeys { pending, active, delayed, done, dead, cancelled, .. } = self.keys;
        let mut sets = vec![pending, active, delayed, done, dead, cancelled];
        sets.extend(told.map(|told| told.waiting));
        let jobs: u64 = sets.iter().map(|set| store.zcard(set)).sum();
        if jobs > 0 {
            return Err(Refusal::new(Code::State, format!("the queue still holds {jobs} jobs")));
        }
        // A notice no relay carried yet would leave its parent waiting.
        let notices = told.map_or(0, |told| store.xlen(told.notices));
        if notices > 0 {
            return Err(Refusal::new(
                Code::State,
                format!("the queue still holds {notices} notices to its children's parents"),
            ));
        }
        let mut deleted = 0;
        for key in keys.into_iter().filter(|key| !sets.contains(key)) {
            if store.key_type(key) != KeyType::None {
                store.del(key);
                deleted += 1;
            }
        }
        // The groups' keys (§7.9): with no job left, a group's settings, tag
        // and rate log are all that remain of it.
        let groups = Grouping::of(self.prefix).keys;
        let names = groups.names();
        let mut derived: Vec<Vec<u8>> =
            store.zhead(&names, usize::MAX).iter().map(|g| groups.rate(g)).collect();
        derived.extend([groups.membership(), groups.settings(), names, groups.ready(), groups.wait()]);
        for key in derived {
            if store.key_type(&key) != KeyType::None {
                store.del(&key);
                deleted += 1;
            }
        }
        Ok(Reply::count(deleted))
    }
}
