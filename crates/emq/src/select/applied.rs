//! What a bulk change did, job by job: [`Applied`].

use echomq::{ErrorKind, JobId};

/// What applying an action did.
#[derive(Debug, Default)]
pub struct Applied {
    /// Jobs looked at (for [`apply_ids`](super::apply_ids), the ids given).
    pub examined: u64,
    /// Jobs the action changed.
    pub changed: u64,
    /// Jobs no longer in the state (moved or deleted meanwhile), or already so (cancelled).
    pub skipped: u64,
    /// Jobs the server refused otherwise, with why.
    pub failed: Vec<(JobId, String)>,
    /// The exit codes of the refusals (`failure::exit_code`'s): one code
    /// for them all is the command's.
    pub codes: std::collections::BTreeSet<i32>,
}

impl Applied {
    /// Count one job's outcome: `Ok(true)` changed, `Ok(false)` already so.
    pub(super) fn note(&mut self, id: &JobId, outcome: echomq::Result<bool>) {
        match outcome {
            Ok(true) => self.changed += 1,
            Ok(false) => self.skipped += 1,
            Err(err) if matches!(err.kind, ErrorKind::NoJob | ErrorKind::State) => self.skipped += 1,
            Err(err) => {
                self.refused(id, crate::failure::explain(&err), crate::failure::exit_code(&err, false))
            }
        }
    }

    /// A job refused, with why and the exit code its refusal is.
    pub fn refused(&mut self, id: &JobId, why: String, code: i32) {
        self.codes.insert(code);
        self.failed.push((id.clone(), why));
    }

    /// Add what another walk did (another partition's).
    pub fn add(&mut self, other: Applied) {
        self.examined += other.examined;
        self.changed += other.changed;
        self.skipped += other.skipped;
        self.failed.extend(other.failed);
        self.codes.extend(other.codes);
    }
}
