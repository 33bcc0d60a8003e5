//! What a transition is, written once: its protocol name, its command, its
//! KEYS by keyspace role, its ARGV, and what it does to the keyspace. Every
//! layer reads it: the host builds KEYS from the roles and names the command,
//! the module registers each command with its key positions and flags, the
//! Lua executor finds `<name>.lua` (and a test checks each script's
//! header against it), the embedded executor decides wake-ups from it.
//!
//! Each transition's description sits beside its code, as `DESCRIPTION` on
//! its type; [`Name::describe`](crate::transition::Name::describe) finds it.
//! Its KEYS are declared once with `keys!`: the roles the description lists
//! and the named keys the transition's code reads come from the same list,
//! so reordering one reorders the other.

/// The part a key plays in a queue's keyspace, `emq:{q}:<role>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// `job:<id>`: the record of the call's job (hash).
    Job,
    /// `pending`: ids waiting to be claimed (zset).
    Pending,
    /// `active`: ids under a lease, by deadline (zset).
    Active,
    /// `delayed`: ids waiting for their due time (zset).
    Delayed,
    /// `done`: finished ids (zset).
    Done,
    /// `dead`: ids out of attempts (zset).
    Dead,
    /// `cancelled`: cancelled ids (zset).
    Cancelled,
    /// `priority`: id → priority, for priorities other than 0 (hash).
    Priority,
    /// `errors`: id → the job's last error text (hash).
    Errors,
    /// `done`, `dead` or `cancelled`: the finished set the call names (PURGE).
    Finished,
    /// `pending`, `delayed` or `active`: the unfinished set the call names (DRAIN).
    Unfinished,
    /// Any of the six state sets, the one the call names (REMOVE).
    AnySet,
    /// `config`: the queue's settings, field → value (hash): `paused`,
    /// `concurrency`, `rate`, `per`. CLAIM's gate reads it; CONFIG writes it.
    Config,
    /// `rate`: the claim log of a rate-limited queue, `<id>:<token>` by
    /// claim time (zset). CLAIM's gate counts and trims it.
    Rate,
    /// `progress`: id → the job's last progress value (hash).
    Progress,
    /// `schedules`: schedule name → its definition (hash).
    Schedules,
    /// `ticks`: schedule names by their next tick, server ms (zset).
    Ticks,
    /// `policy`: id → the job's own policy, for jobs enqueued with one (hash).
    Policy,
    /// `unique`: dedup key → its holder, `<0|1>:<id>` (hash).
    Unique,
    /// `unique_until`: dedup keys by the server ms their hold ends (zset).
    UniqueUntil,
    /// `results`: id → what the job's handler returned, kept by ACK (hash).
    Results,
    /// `events`: the queue's capped log of what happened to its jobs (stream).
    Events,
    /// `headers`: id → the job's headers, set at enqueue (hash).
    Headers,
    /// `batches`: each open batch's state and callback payload (hash).
    Batches,
    /// `batch_jobs`: `<batch>:<n>` → the batch's nth job (hash).
    BatchJobs,
    /// `batch_open`: the open batches by creation time, or by when a SETTLE
    /// passed them over, server ms (zset).
    BatchOpen,
    /// `wake`: the queue's wake-up key, one member `1` while a job may be
    /// pending that no waiting claim was told of (zset): idle workers wait
    /// on it with `BZPOPMIN`, any Redis, no module (PROTOCOL.md §9).
    Wake,
    /// `counts`: the queue's counters that only go up (protocol 1.4):
    /// enqueued, completed, failed and dead jobs, in all and per minute and
    /// hour over a bounded history (hash). Kept by the transitions that
    /// write those events, when passed it; read by COUNTS.
    Counts,
    /// `waiting`: the ids of parents waiting for their children, by when
    /// they began to wait (zset; protocol 1.6, §7.8).
    Waiting,
    /// `children:<id>`: a parent's dependencies, its incarnation and how
    /// many are open, and its children's results (hash; protocol 1.6).
    Children,
    /// `parents`: child id → its link, `<incarnation> {<queue>}<parent
    /// id>`, until its parent is told of its end (hash; protocol 1.6).
    Parents,
    /// `notices`: what the children of this queue tell their parents, each
    /// entry one notice, until the relay carries it (stream; protocol 1.6).
    Notices,
    /// `groups`: the groups' settings (`set:<g>`), start tags (`tag:<g>`)
    /// and the queue's virtual time (`vtime`) (hash; protocol 1.7, §7.9).
    Groups,
    /// `gnames`: the groups with a job pending or running, or settings,
    /// every score 0, paged by name (zset; protocol 1.7).
    GroupNames,
    /// `ready`: the groups a claim may take from now, by start tag (zset;
    /// protocol 1.7).
    Ready,
    /// `gwait`: the groups held by their rate, by the server ms their
    /// window frees (zset; protocol 1.7).
    GroupWait,
    /// `group`: id → the job's group, while its record lives (hash;
    /// protocol 1.7, §7.9). Only INSPECT names it among its KEYS; the
    /// other transitions derive it from the prefix.
    Group,
    /// `partitions`: a partitioned queue's definition (hash; protocol 1.8,
    /// §7.10): its count, routing, partitions, and its exact rate.
    Partitions,
    /// `permits`: a partitioned queue's permit log, each permit's number by
    /// the server ms it was granted (zset; protocol 1.8). PERMIT keeps it.
    Permits,
    /// `running`: a partitioned queue's running permits under an exact
    /// concurrency, each permit's number by the server ms its hold ends
    /// (zset; protocol 1.8). PERMIT grants them, RENEW extends them.
    Running,
}

impl Role {
    /// The key's name after the queue's prefix, as a script header writes
    /// it: `job:<id>`, `pending`, …, and `done|dead|cancelled` for [`Role::Finished`].
    #[must_use]
    pub const fn pattern(self) -> &'static str {
        match self {
            Role::Job => "job:<id>",
            Role::Pending => "pending",
            Role::Active => "active",
            Role::Delayed => "delayed",
            Role::Done => "done",
            Role::Dead => "dead",
            Role::Cancelled => "cancelled",
            Role::Priority => "priority",
            Role::Errors => "errors",
            Role::Finished => "done|dead|cancelled",
            Role::Unfinished => "pending|delayed|active|waiting",
            Role::AnySet => "pending|active|delayed|done|dead|cancelled|waiting",
            Role::Config => "config",
            Role::Rate => "rate",
            Role::Progress => "progress",
            Role::Schedules => "schedules",
            Role::Ticks => "ticks",
            Role::Policy => "policy",
            Role::Unique => "unique",
            Role::UniqueUntil => "unique_until",
            Role::Results => "results",
            Role::Events => "events",
            Role::Headers => "headers",
            Role::Batches => "batches",
            Role::BatchJobs => "batch_jobs",
            Role::BatchOpen => "batch_open",
            Role::Wake => "wake",
            Role::Counts => "counts",
            Role::Waiting => "waiting",
            Role::Children => "children:<id>",
            Role::Parents => "parents",
            Role::Notices => "notices",
            Role::Groups => "groups",
            Role::GroupNames => "gnames",
            Role::Ready => "ready",
            Role::GroupWait => "gwait",
            Role::Group => "group",
            Role::Partitions => "partitions",
            Role::Permits => "permits",
            Role::Running => "running",
        }
    }

    /// The Redis type a key of this role holds.
    #[must_use]
    pub(crate) const fn key_type(self) -> KeyType {
        match self {
            Role::Job
            | Role::Priority
            | Role::Errors
            | Role::Config
            | Role::Progress
            | Role::Schedules
            | Role::Policy
            | Role::Unique
            | Role::Results
            | Role::Headers
            | Role::Batches
            | Role::BatchJobs
            | Role::Counts
            | Role::Children
            | Role::Parents
            | Role::Groups
            | Role::Group
            | Role::Partitions => KeyType::Hash,
            Role::Pending
            | Role::Active
            | Role::Delayed
            | Role::Done
            | Role::Dead
            | Role::Cancelled
            | Role::Finished
            | Role::Unfinished
            | Role::AnySet
            | Role::Rate
            | Role::Ticks
            | Role::UniqueUntil
            | Role::BatchOpen
            | Role::Wake
            | Role::Waiting
            | Role::GroupNames
            | Role::Ready
            | Role::GroupWait
            | Role::Permits
            | Role::Running => KeyType::Zset,
            Role::Events | Role::Notices => KeyType::Stream,
        }
    }

    /// The key's name after the prefix when it is one fixed name (every role
    /// but [`Role::Job`], [`Role::Children`], [`Role::Finished`],
    /// [`Role::Unfinished`] and [`Role::AnySet`]).
    #[must_use]
    pub const fn fixed(self) -> Option<&'static str> {
        match self {
            Role::Job | Role::Children | Role::Finished | Role::Unfinished | Role::AnySet => None,
            other => Some(other.pattern()),
        }
    }
}

use crate::parse::wrong_number_of_keys;
use crate::store::KeyType;
use crate::Refusal;

/// What a transition does to the keyspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Only reads: runs as EVALSHA_RO on Lua (a replica or a user with
    /// read-only keys may serve it), declares its keys read-only in the
    /// module, and no replication wait follows it.
    Reads,
    /// Writes, moving the jobs already there (a claim, an ack, a lease
    /// renewed, a retry, a running job's progress): runs at `maxmemory`
    /// too, so that work in flight ends rather than runs again (§8).
    Writes,
    /// Writes what may grow the queue (a job, a job's children, a
    /// schedule, a batch, a setting, a permit, a parent's resolution): refused at
    /// `maxmemory` before any write, as the module's `deny-oom` and a
    /// script's first write refuse it.
    Grows,
    /// Writes, but only frees memory (PURGE): allowed under OOM.
    Frees,
}

/// One transition, as every layer sees it.
#[derive(Debug)]
pub struct Description {
    /// The protocol's name, lower case: `claim`. The script is `<name>.lua`.
    pub name: &'static str,
    /// The native module's command: `EMQ.CLAIM`.
    pub command: &'static str,
    /// KEYS, in order, by role.
    pub keys: &'static [Role],
    /// How many of `keys` a call may send, fewest first: each form is the
    /// first n of `keys`, and the last is all of them. One form, all the
    /// keys, for most; ENQUEUE also takes the seed's two (the job and
    /// pending) for a job with no options; RELEASE its policy key only
    /// with REFUND; and the transitions that count (protocol 1.4) take the
    /// counts key last, when the caller wants the queue's counters kept.
    pub forms: &'static [usize],
    /// The positional ARGV, by name, in order.
    pub args: &'static [&'static str],
    /// The options that may follow them, `NAME value` pairs.
    pub options: &'static [&'static str],
    /// Reads, writes, grows, or only frees.
    pub effect: Effect,
    /// Whether it may add to a pending set, or put a group back in
    /// `<q>ready` (a lease of a capped group ended), so that claims waiting
    /// for work should look again.
    pub wakes_claims: bool,
    /// Whether it carries a job's token and is refused (`EMQFENCE`) unless
    /// the token still holds the lease (PROTOCOL.md §6).
    pub fenced: bool,
    /// Whether its reply hands out jobs, each with a newly minted token.
    pub hands_out_tokens: bool,
    /// Whether a host that confirms writes on replicas waits for this one.
    /// Not for what only reads, nor for CLAIM (a claim lost in a failover
    /// only runs its job again, and the ack's wait covers it) or EXTEND (a
    /// lost renewal only shortens a lease; a lagging replica must not fail
    /// every heartbeat).
    pub waits_for_replication: bool,
}

impl Description {
    /// The roles of a call with `count` keys, or the refusal of a count that
    /// is none of the forms (the same text as the script's and the module's).
    ///
    /// # Errors
    ///
    /// `EMQARG wrong number of keys: takes <forms>` when `count` is none of
    /// [`forms`](Description::forms).
    pub fn form(&self, count: usize) -> Result<&'static [Role], Refusal> {
        if self.forms.contains(&count) {
            Ok(&self.keys[..count])
        } else {
            Err(wrong_number_of_keys(self.forms))
        }
    }

    /// Whether it only reads.
    #[must_use]
    pub const fn reads_only(&self) -> bool {
        matches!(self.effect, Effect::Reads)
    }

    /// The script's file, named by its transition alone: `claim.lua`. A key
    /// added to a transition renames nothing.
    #[must_use]
    pub fn script(&self) -> String {
        format!("{}.lua", self.name)
    }

    /// The first key of `role`'s, by 0-based position.
    #[must_use]
    pub fn position(&self, role: Role) -> Option<usize> {
        self.keys.iter().position(|r| *r == role)
    }
}

/// A transition's KEYS as named keys: what its code reads instead of
/// positions. The crate's `keys!` declares one for each transition.
pub(crate) trait Keys<'k>: Sized {
    /// The roles of the keys, in KEYS order: the description's `keys`.
    const ROLES: &'static [Role];
    /// How many keys a call may send (see [`Description::forms`]).
    const FORMS: &'static [usize];
    /// Name a call's keys, when their count is one of the forms.
    fn bind(keys: &[&'k [u8]]) -> Option<Self>;
}

/// The macro that declares each transition's KEYS (`keys!`), in a file
/// of its own: it writes one arm a shape of key list.
mod keys_macro;
pub(crate) use keys_macro::keys;

#[cfg(test)]
mod tests {
    use crate::transition::Name;

    #[test]
    fn every_transition_takes_all_its_keys_and_enqueue_and_release_also_fewer() {
        for name in Name::ALL {
            let described = name.describe();
            let all = described.keys.len();
            let forms: &[usize] = match name {
                // The counts key is optional (protocol 1.4), and the child's
                // link key after it (1.6).
                Name::Enqueue => &[2, all - 2, all - 1, all],
                // The counts key, then the flows' pair (1.6).
                Name::Ack | Name::AckNext | Name::AckMany | Name::Fail | Name::Reap => {
                    &[all - 3, all - 2, all]
                }
                Name::Obliterate => &[all - 4, all - 3, all],
                // The flows' keys alone (1.6): the pair, and CANCEL's waiting.
                Name::Purge | Name::Trim | Name::Drain | Name::Remove => &[all - 2, all],
                Name::Cancel => &[all - 3, all],
                // A flow parent's dependencies and waiting set (1.11).
                Name::Retry => &[all - 2, all],
                // STATS' seventh set (1.6); INSPECT's group (1.7); PERMIT's
                // running permits, for an exact concurrency (1.8).
                Name::Fire | Name::Settle | Name::Stats | Name::Inspect | Name::Permit => &[all - 1, all],
                // The counts key, then the children's link key (1.6).
                Name::EnqueueMany => &[all - 2, all - 1, all],
                // The policy key goes with REFUND (protocol 1.1).
                Name::Release => &[7, all],
                _ => &[all],
            };
            assert_eq!(described.forms, forms, "{name}");
            assert_eq!(described.form(all).map(<[_]>::len), Ok(all), "{name}");
            let wrong = described.form(all + 1).unwrap_err().to_string();
            assert!(wrong.starts_with("EMQARG wrong number of keys: takes "), "{name}: {wrong}");
        }
        let enqueue = Name::Enqueue.describe();
        assert_eq!(
            enqueue.form(4).unwrap_err().to_string(),
            "EMQARG wrong number of keys: takes 2 or 11 or 12 or 13"
        );
    }
}
