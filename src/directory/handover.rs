//! When a driver hands a changed table (its rooms, its games) to the `lobbyd-directory`
//! thread: as soon as the table's generation differs from the last one handed over, but at
//! most once per [`COALESCE`]; a hand-over the thread's full queue refused is tried again
//! after the same wait, its generation still new. Shared by the R-Type and Warzone drivers.

use std::time::Instant;

use super::COALESCE;

/// The hand-overs of one table.
#[derive(Clone, Copy, Debug, Default)]
pub struct Handover {
    /// The generation the thread has (or that needs no hand-over: the thread is gone).
    handed: Option<u64>,
    /// The last attempt, taken or not.
    tried_at: Option<Instant>,
}

impl Handover {
    /// When the table at `generation` is next to be handed over (`now` when nothing was
    /// tried yet); `None` when the thread has it.
    pub fn due_at(&self, generation: u64, now: Instant) -> Option<Instant> {
        (self.handed != Some(generation)).then(|| self.tried_at.map_or(now, |at| at + COALESCE))
    }

    /// Whether the table at `generation` is to be handed over now.
    pub fn is_due(&self, generation: u64, now: Instant) -> bool {
        self.due_at(generation, now).is_some_and(|at| now >= at)
    }

    /// A hand-over of `generation` tried at `now`: `taken` when the thread has it (or is gone
    /// for good, so there is no one to hand it to), false when its queue was full.
    pub fn tried(&mut self, generation: u64, now: Instant, taken: bool) {
        if taken {
            self.handed = Some(generation);
        }
        self.tried_at = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_generation_waits_for_the_coalescing_period_and_a_refused_one_is_tried_again() {
        let t0 = Instant::now();
        let mut handover = Handover::default();
        assert!(handover.is_due(1, t0), "the first at once");
        handover.tried(1, t0, true);
        assert_eq!(handover.due_at(1, t0), None, "the thread has it");
        assert_eq!(handover.due_at(2, t0), Some(t0 + COALESCE));
        assert!(!handover.is_due(2, t0));
        handover.tried(2, t0 + COALESCE, false);
        assert_eq!(
            handover.due_at(2, t0),
            Some(t0 + 2 * COALESCE),
            "refused: again later"
        );
        handover.tried(2, t0 + 2 * COALESCE, true);
        assert_eq!(handover.due_at(2, t0), None);
    }
}
