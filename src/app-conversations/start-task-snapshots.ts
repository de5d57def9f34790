/**
 * A start task's snapshots as a follower sends them: made from the stored record and its history, and
 * what a follower has written so far (so that each is written once, in order).
 */
import { startEnded } from '../schemas/app-conversations';
import type { StartTaskRecord, StartTaskStep } from '../store/start-tasks-store';
import type { StartTaskSnapshot } from '../temporal/shared';

export const snapshotOf = ({ conversation_id: _c, ...t }: StartTaskRecord): StartTaskSnapshot => ({
  ...t,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
});

/**
 * The task's snapshots from its stored history. A status write that was lost leaves a hole (null) in the
 * array when a later one lands: it is skipped, never a reason to fail.
 */
export const snapshotsOf = ({
  task: { conversation_id: _c, ...task },
  history,
}: {
  task: StartTaskRecord;
  history: (StartTaskStep | null)[];
}): StartTaskSnapshot[] =>
  history
    .filter((h): h is StartTaskStep => h != null && typeof h === 'object' && h.at instanceof Date)
    .map(({ at, ...step }) => ({
      ...task,
      ...step,
      created_at: task.created_at.toISOString(),
      updated_at: at.toISOString(),
    }));

/** What a follower has written: how many snapshots, the first one's time (to tell a run started again) and the last status. */
export class WrittenSnapshots {
  count = 0;
  firstAt: string | undefined;
  private last: string | undefined;

  constructor(private readonly write: (s: StartTaskSnapshot) => void) {}

  get ended(): boolean {
    return startEnded(this.last);
  }

  /**
   * Writes those of `snapshots` (the task's from position `from` on) not written yet. A list from the
   * first position that is shorter than what was written, or starts at another time, is a run started
   * again from the record (its workflow was lost): it is written whole again rather than none of it. An
   * empty list (a history just cleared for such a run) writes nothing and forgets nothing.
   * False when the list does not reach what was written (a gap): nothing is written.
   */
  take(from: number, snapshots: StartTaskSnapshot[]): boolean {
    if (
      from === 0 &&
      this.count > 0 &&
      snapshots.length > 0 &&
      (snapshots.length < this.count || snapshots[0]!.updated_at !== this.firstAt)
    )
      this.count = 0;
    if (from > this.count) return false;
    for (const s of snapshots.slice(this.count - from)) {
      this.write(s);
      this.count++;
      this.last = s.status;
      if (this.count === 1) this.firstAt = s.updated_at;
    }
    return true;
  }
}
