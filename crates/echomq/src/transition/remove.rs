//! REMOVE: delete chosen jobs of one state's set.

use echomq_core::Reply;
use echomq_core::{limits, Name, Role};

use super::reply::count_reply;
use super::Transition;
use crate::id::JobId;
use crate::keyspace::Keyspace;
use crate::record::State;
use crate::{Error, ErrorKind, Result};

/// Delete these jobs, those of them in `state`'s set: their records and
/// everything kept beside them. A removed active job's holder is fenced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remove {
    /// The set the jobs are in; an id found in another is left alone.
    pub state: State,
    /// One to 1000 jobs.
    pub ids: Vec<JobId>,
}

impl Transition for Remove {
    const NAME: Name = Name::Remove;
    /// How many jobs were deleted.
    type Output = u64;

    /// `KEYS[1]` is the set of the state it removes from.
    fn key(&self, keys: &Keyspace, role: Role) -> String {
        match role {
            Role::AnySet => keys.state(self.state),
            other => keys.role(other, None).expect("a call on the whole queue names no job"),
        }
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let most = *limits::SWEEP_LIMIT.end() as usize;
        if self.ids.is_empty() || self.ids.len() > most {
            let n = self.ids.len();
            return Err(Error::new(ErrorKind::Argument, format!("{n} jobs: a call removes 1 to {most}")));
        }
        Ok(self.ids.iter().map(|id| id.as_str().as_bytes().to_vec()).collect())
    }

    fn parse(reply: Reply) -> Result<u64> {
        count_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        let states = [State::Pending, State::Active, State::Delayed, State::Done, State::Dead, State::Cancelled];
        let remove = |state, n| Remove { state, ids: (1..=n).map(id).collect() };
        Vec::from_iter(states.into_iter().flat_map(|state| [1, 1000].map(|n| remove(state, n))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_or_more_than_a_thousand_ids_are_refused_before_sending() {
        let id: JobId = "JOB_00000000000000000000000001".parse().unwrap();
        for n in [0, 1001] {
            let err = Remove { state: State::Dead, ids: vec![id.clone(); n] }.args().unwrap_err();
            assert_eq!(err.kind, ErrorKind::Argument, "{n}: {err}");
            assert!(err.to_string().contains(&format!("{n} jobs: a call removes 1 to 1000")), "{err}");
        }
        assert_eq!(Remove { state: State::Dead, ids: vec![id; 1000] }.args().unwrap().len(), 1000);
    }
}
