//! ACKNEXT: ACK, then CLAIM for the same holder, in one atomic step
//! (PROTOCOL.md §7; `acknext.lua`).

use super::ack::{Ack, AckKeys, Told};
use super::claim::{Claim, ClaimKeys};
use super::fenced::{ack_result, Fenced};
use super::need;
use crate::description::{keys, Description, Effect};
use crate::limits::{CLAIM_COUNT, LEASE_MS};
use crate::parse::{count, lossy};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal};

keys! {
    /// ACKNEXT's KEYS: ACK's, then those of CLAIM's that ACK lacks.
    AckNextKeys {
        job: Job,
        active: Active,
        done: Done,
        results: Results,
        events: Events,
        config: Config,
        pending: Pending,
        rate: Rate,
        policy: Policy,
        headers: Headers,
        wake: Wake,
    }
    then counts: Counts
    flow
    /// ACK's flows' keys (protocol 1.6, §7.8).
    AckNextTold { parents: Parents, notices: Notices }
}

/// A parsed ACKNEXT: ACK, then CLAIM for the same holder, in one atomic step.
#[derive(Debug)]
pub struct AckNext<'a> {
    ack: Ack<'a>,
    /// CLAIM's keys, picked out of ACKNEXT's.
    claim_keys: ClaimKeys<'a>,
    prefix: &'a [u8],
    lease: u64,
    count: u64,
}

impl<'a> AckNext<'a> {
    /// What ACKNEXT is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "acknext",
        command: "EMQ.ACKNEXT",
        keys: AckNextKeys::ROLES,
        forms: AckNextKeys::FORMS,
        args: &["id", "token", "lease"],
        options: &["RESULT", "COUNT"],
        effect: Effect::Writes,
        wakes_claims: false,
        fenced: true,
        hands_out_tokens: true,
        waits_for_replication: true,
    };

    /// KEYS: job, active, done, results, events, config, pending, rate,
    /// policy, headers, wake. ARGV: id, token, the next claims' lease, then
    /// `RESULT <bytes>` and `COUNT <n>` (default 1), in any order.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the token or the lease is
    ///   missing or out of range; an option is unknown or given twice; `RESULT` has no bytes.
    /// - `EMQSIZE`: the result is over `MAX_RESULT` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<AckNext<'a>, Refusal> {
        let Fenced { keys, prefix, id, token } = Fenced::<AckNextKeys>::parse(keys, args)?;
        let lease = count(args.get(2).copied(), "lease", LEASE_MS)?;
        let (mut result, mut claims) = (None, None);
        let mut rest = args.get(3..).unwrap_or_default();
        while let Some((&name, tail)) = rest.split_first() {
            let value = tail.first().copied();
            if name.eq_ignore_ascii_case(b"RESULT") {
                result = Some(ack_result(result, value)?);
            } else if name.eq_ignore_ascii_case(b"COUNT") {
                if claims.is_some() {
                    return Err(Refusal::arg("COUNT given twice"));
                }
                claims = Some(count(value, "COUNT", CLAIM_COUNT)?);
            } else {
                return Err(Refusal::arg(format!("unknown option {}", lossy(name))));
            }
            rest = &tail[1..];
        }
        let AckNextKeys {
            job,
            active,
            done,
            results,
            events,
            config,
            pending,
            rate,
            policy,
            headers,
            wake,
            counts,
            flow,
        } = keys;
        let flow = flow.map(|AckNextTold { parents, notices }| Told { parents, notices });
        let claim_keys = ClaimKeys { pending, active, config, rate, policy, events, headers, wake };
        let ack_keys = AckKeys { job, active, done, results, events, config, counts, flow };
        let ack = Ack { fenced: Fenced { keys: ack_keys, prefix, id, token }, result };
        Ok(AckNext { ack, claim_keys, prefix, lease, count: claims.unwrap_or(1) })
    }

    /// ACK the job, then CLAIM up to COUNT jobs under a new lease: CLAIM's
    /// reply. Every key's type, the fence, and the records at the head of
    /// pending that the claim may take are checked before the first write,
    /// so a refusal changes nothing (and claims nothing).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key or the record holds another type.
    /// - `TRYAGAIN`: the record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQNOJOB`: there is no record.
    /// - `EMQDATA`: the record's `state` or `attempts`, a claimed record's `state` or `attempts`, or a
    ///   setting of `<q>config` is malformed.
    /// - `EMQFENCE`: the job is not active, or `token` is not its `attempts` (PROTOCOL.md §6).
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - Any of them refuses the whole call, before the first write: it acks nothing and claims nothing.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        self.ack.check(store)?;
        let ClaimKeys { pending, rate, policy, headers, wake: wakes, .. } = self.claim_keys;
        need(store, pending, KeyType::Zset)?;
        need(store, rate, KeyType::Zset)?;
        need(store, policy, KeyType::Hash)?;
        need(store, headers, KeyType::Hash)?;
        need(store, wakes, KeyType::Zset)?;
        // What the claim takes, read and checked here, before the ack's
        // writes, as the ack leaves it: one lease fewer (the gate's and its
        // group's).
        let claim = Claim {
            keys: self.claim_keys,
            prefix: self.prefix,
            lease: self.lease,
            count: self.count,
            block: None,
            until: None,
        };
        let opened = claim.open(store, Some(self.ack.fenced.id))?;
        self.ack.finish(store, true)?;
        claim.write(store, opened)
    }
}
