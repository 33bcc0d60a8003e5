//! Every key of the protocol, built here and nowhere else.
//!
//! All keys of queue `q` are `emq:{q}:<name>`: the `{q}` hashtag puts a whole
//! queue in one Redis Cluster slot, so every transition is single-slot.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `emq:{q}:job:<id>` | hash | the record: `state`, `attempts`, `payload` |
//! | `emq:{q}:pending` | zset | ids by priority, then id (mint order) |
//! | `emq:{q}:active` | zset | ids by lease deadline (server ms) |
//! | `emq:{q}:delayed` | zset | ids by due time (server ms) |
//! | `emq:{q}:done` | zset | ids by finish time |
//! | `emq:{q}:dead` | zset | ids by death time |
//! | `emq:{q}:cancelled` | zset | ids by cancel time |
//! | `emq:{q}:priority` | hash | id → priority, for priorities other than 0 |
//! | `emq:{q}:errors` | hash | id → the job's last error text |
//! | `emq:{q}:config` | hash | the queue's settings: `paused`, `concurrency`, `rate`, `per` |
//! | `emq:{q}:rate` | zset | a rate-limited queue's claims, `<id>:<token>` by claim time |
//! | `emq:{q}:progress` | hash | id → the job's last progress value |
//! | `emq:{q}:schedules` | hash | schedule name → its definition |
//! | `emq:{q}:ticks` | zset | schedule names by next tick (server ms) |
//! | `emq:{q}:policy` | hash | id → the job's own policy (attempts, back-off, timeout) |

use crate::ErrorKind;
pub use echomq_core::Role;

/// The queue registry (PROTOCOL.md §2): every queue a speaker produced to
/// or worked, name → the ms it was last seen, so that tools find queues
/// without scanning the keyspace.
pub const REGISTRY: &str = "emq:queues";

/// The worker registry (PROTOCOL.md §2): every live worker's id → its last
/// beat (the worker's clock, ms); each worker's own hash is [`worker`].
pub const WORKERS: &str = "emq:workers";

/// A worker's registration (PROTOCOL.md §2): `emq:worker:<id>`, a hash that
/// expires unless the worker beats again.
#[must_use]
pub fn worker(id: &str) -> String {
    format!("emq:worker:{id}")
}

/// A partitioned queue's definition (PROTOCOL.md §7.10, 1.8):
/// `emq:{p}:partitions`, a hash in the partitioned queue's own slot.
#[must_use]
pub fn partitions(name: &str) -> String {
    format!("emq:{{{name}}}:partitions")
}

/// A partitioned queue's permit log (PROTOCOL.md §7.10, 1.8):
/// `emq:{p}:permits`, beside its definition.
#[must_use]
pub fn permits(name: &str) -> String {
    format!("emq:{{{name}}}:permits")
}

/// A partitioned queue's running permits under an exact concurrency
/// (PROTOCOL.md §7.10, 1.8): `emq:{p}:running`, beside its definition.
#[must_use]
pub fn running(name: &str) -> String {
    format!("emq:{{{name}}}:running")
}

use crate::id::JobId;
use crate::record::State;
use crate::{Error, Result};

/// The longest queue name, in bytes.
pub const MAX_QUEUE_NAME: usize = 255;

/// Check a queue name: 1..=255 bytes, never `{`, `}` or NUL (one queue, one hashtag).
///
/// # Errors
/// [`ErrorKind::InvalidQueue`], saying which rule the name breaks.
pub fn valid_queue(name: &str) -> Result<()> {
    let why = if name.is_empty() {
        "it is empty"
    } else if name.len() > MAX_QUEUE_NAME {
        "it is longer than 255 bytes"
    } else if name.contains(['{', '}', '\0']) {
        "it holds '{', '}' or NUL"
    } else {
        return Ok(());
    };
    Err(Error::new(ErrorKind::InvalidQueue, format!("{name:?}: {why}")))
}

/// A `SCAN MATCH` pattern for the `state` set of every queue: `emq:{*}:<state>`.
#[must_use]
pub fn state_pattern(state: State) -> String {
    format!("emq:{{*}}:{}", state.as_str())
}

/// A `SCAN MATCH` pattern for the record of job `id` in every queue:
/// `emq:{*}:job:<id>`, any glob character of the id escaped.
#[must_use]
pub fn job_pattern(id: &JobId) -> String {
    let mut pattern = String::from("emq:{*}:job:");
    for c in id.as_str().chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern
}

/// The queue a key belongs to: `emails` for `emq:{emails}:pending`.
#[must_use]
pub fn queue_of(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("emq:{")?;
    let (name, _) = rest.split_once("}:")?;
    valid_queue(name).ok().map(|()| name)
}

/// The keys of one queue. Built from a checked name, so every key it makes is valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keyspace {
    queue: String,
    prefix: String,
}

impl Keyspace {
    /// The keyspace of queue `name`.
    ///
    /// # Errors
    /// As [`valid_queue`].
    pub fn new(name: &str) -> Result<Keyspace> {
        valid_queue(name)?;
        Ok(Keyspace { queue: name.to_owned(), prefix: format!("emq:{{{name}}}:") })
    }

    /// The queue's name.
    #[must_use]
    pub fn queue(&self) -> &str {
        &self.queue
    }

    /// `emq:{q}:job:<id>`: the job's record. The id's kind (`JOB…`) was
    /// checked when it was parsed; the key shares the queue's hashtag whatever follows.
    #[must_use]
    pub fn job(&self, id: &JobId) -> String {
        self.key2("job:", id.as_str())
    }

    /// `emq:{q}:pending`: ids waiting to be claimed.
    #[must_use]
    pub fn pending(&self) -> String {
        self.key(Role::Pending.pattern())
    }

    /// `emq:{q}:active`: ids under a lease, scored by its deadline.
    #[must_use]
    pub fn active(&self) -> String {
        self.key(Role::Active.pattern())
    }

    /// `emq:{q}:delayed`: ids waiting for their due time.
    #[must_use]
    pub fn delayed(&self) -> String {
        self.key(Role::Delayed.pattern())
    }

    /// `emq:{q}:done`: finished ids.
    #[must_use]
    pub fn done(&self) -> String {
        self.key(Role::Done.pattern())
    }

    /// `emq:{q}:dead`: ids that used up their attempts (the dead letters).
    #[must_use]
    pub fn dead(&self) -> String {
        self.key(Role::Dead.pattern())
    }

    /// `emq:{q}:cancelled`: cancelled ids.
    #[must_use]
    pub fn cancelled(&self) -> String {
        self.key(Role::Cancelled.pattern())
    }

    /// `emq:{q}:priority`: id → priority, for jobs whose priority is not 0.
    #[must_use]
    pub fn priority(&self) -> String {
        self.key(Role::Priority.pattern())
    }

    /// `emq:{q}:errors`: id → the job's last error text.
    #[must_use]
    pub fn errors(&self) -> String {
        self.key(Role::Errors.pattern())
    }

    /// `emq:{q}:config`: the queue's settings, read by every claim's gate.
    #[must_use]
    pub fn config(&self) -> String {
        self.key(Role::Config.pattern())
    }

    /// `emq:{q}:rate`: the claim log of a rate-limited queue.
    #[must_use]
    pub fn rate(&self) -> String {
        self.key(Role::Rate.pattern())
    }

    /// `emq:{q}:progress`: id → the job's last progress value.
    #[must_use]
    pub fn progress(&self) -> String {
        self.key(Role::Progress.pattern())
    }

    /// `emq:{q}:schedules`: schedule name → its definition.
    #[must_use]
    pub fn schedules(&self) -> String {
        self.key(Role::Schedules.pattern())
    }

    /// `emq:{q}:ticks`: schedule names, scored by their next tick.
    #[must_use]
    pub fn ticks(&self) -> String {
        self.key(Role::Ticks.pattern())
    }

    /// `emq:{q}:policy`: id → the job's own policy.
    #[must_use]
    pub fn policy(&self) -> String {
        self.key(Role::Policy.pattern())
    }

    /// `emq:{q}:results`: id → what the job's handler returned (hash).
    #[must_use]
    pub fn results(&self) -> String {
        self.key(Role::Results.pattern())
    }

    /// `emq:{q}:notices`: what the queue's children tell their parents,
    /// until the relay carries it (stream; protocol 1.6).
    #[must_use]
    pub fn notices(&self) -> String {
        self.key(Role::Notices.pattern())
    }

    /// `emq:{q}:upkeep`: the queue's upkeep lease, the id of the worker that
    /// keeps its upkeep now (string; protocol 1.8, PROTOCOL.md §11.3), for a
    /// partitioned queue's queues.
    #[must_use]
    pub fn upkeep(&self) -> String {
        self.key("upkeep")
    }

    /// `emq:{q}:events`: the queue's capped log of what happened (stream).
    #[must_use]
    pub fn events(&self) -> String {
        self.key(Role::Events.pattern())
    }

    /// The key that plays `role`; `None` for [`Role::Job`] without a job,
    /// and for [`Role::Finished`], which only the call knows.
    #[must_use]
    pub fn role(&self, role: Role, job: Option<&JobId>) -> Option<String> {
        match (role, job) {
            (Role::Job, Some(id)) => Some(self.job(id)),
            (Role::Children, Some(id)) => Some(self.key2("children:", id.as_str())),
            (other, _) => other.fixed().map(|name| self.key(name)),
        }
    }

    /// The set that holds the jobs in `state`.
    #[must_use]
    pub fn state(&self, state: State) -> String {
        self.key(state.as_str())
    }

    fn key(&self, name: &str) -> String {
        self.key2(name, "")
    }

    /// The prefix and two parts, in one allocation of the exact size: keys are
    /// built for every call (four for each enqueue), and `format!` cost
    /// `add-bulk` about a tenth of the client's time (perf, BENCHMARKS.md).
    fn key2(&self, first: &str, second: &str) -> String {
        let mut key = String::with_capacity(self.prefix.len() + first.len() + second.len());
        key.push_str(&self.prefix);
        key.push_str(first);
        key.push_str(second);
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_are_checked() {
        for good in ["emails", "a", "with space:and:colons", &"x".repeat(255), "ünï"] {
            assert!(valid_queue(good).is_ok(), "{good:?}");
        }
        for bad in ["", "a{b", "a}b", "nul\0", &"x".repeat(256)] {
            assert!(matches!(valid_queue(bad), Err(Error { kind: ErrorKind::InvalidQueue, .. })), "{bad:?}");
        }
    }

    #[test]
    fn keys_name_their_queue() {
        let keys = Keyspace::new("a:b c").unwrap();
        assert_eq!(queue_of(&keys.dead()), Some("a:b c"));
        assert_eq!(queue_of("emq:{}:pending"), None);
        assert_eq!(queue_of("other:{q}:pending"), None);
        assert_eq!(state_pattern(State::Delayed), "emq:{*}:delayed");
        let id: JobId = "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R".parse().unwrap();
        assert_eq!(job_pattern(&id), "emq:{*}:job:JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R");
    }

    #[test]
    fn every_key_shares_the_queue_hashtag() {
        let keys = Keyspace::new("emails").unwrap();
        let id: JobId = "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R".parse().unwrap();
        assert_eq!(keys.job(&id), "emq:{emails}:job:JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R");
        assert_eq!(keys.pending(), "emq:{emails}:pending");
        let odd: JobId = "JOB}{x}".parse().unwrap();
        assert_eq!(queue_of(&keys.job(&odd)), Some("emails"), "an admitted id cannot move its key");
        assert_eq!(keys.state(State::Dead), "emq:{emails}:dead");
        for key in
            [keys.active(), keys.delayed(), keys.done(), keys.cancelled(), keys.priority(), keys.errors()]
        {
            assert!(key.starts_with("emq:{emails}:"), "{key}");
        }
    }
}
