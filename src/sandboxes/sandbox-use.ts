/**
 * Recording use of sandboxes for idle auto-pause: at most once per interval per sandbox (or conversation)
 * in this process, in the background, so a busy sandbox never looks idle and the database is not flooded.
 */
import type { ConversationsStore } from '../store/conversations-store';
import type { SandboxesStore } from '../store/sandboxes-store';

/** Past this many remembered keys, those whose interval has passed are forgotten. */
const MAX_REMEMBERED = 10_000;

export class SandboxUseRecorder {
  /** Last time this process recorded use of a sandbox (or of a conversation's sandbox). */
  private readonly touched = new Map<string, number>();
  private readonly touchEveryMs: number;

  constructor(
    private readonly deps: {
      sandboxes: Pick<SandboxesStore, 'touch'>;
      conversations: Pick<ConversationsStore, 'sandboxIdOf'>;
    },
    /** The sandbox workflow's idle timeout (0: never pauses): use is recorded at most every quarter of it, and of 10 s. */
    idleTimeoutMs: number,
  ) {
    this.touchEveryMs = idleTimeoutMs > 0 ? Math.min(10_000, Math.floor(idleTimeoutMs / 4)) : 10_000;
  }

  /** Records use of a sandbox (at most once per interval per process): it keeps idle auto-pause away. */
  touch(sandboxId: string): void {
    if (!this.due(sandboxId)) return;
    void this.deps.sandboxes.touch(sandboxId).catch(() => this.touched.delete(sandboxId));
  }

  /** Events ingested for a conversation are use of the sandbox that runs it. */
  touchConversation(conversationId: string): void {
    const key = `conversation:${conversationId}`;
    if (!this.due(key)) return;
    void this.deps.conversations
      .sandboxIdOf(conversationId)
      .then((sandboxId) => (sandboxId ? this.deps.sandboxes.touch(sandboxId) : undefined))
      .catch(() => this.touched.delete(key));
  }

  private due(key: string): boolean {
    const now = Date.now();
    const last = this.touched.get(key);
    if (last !== undefined && now - last < this.touchEveryMs) return false;
    this.touched.set(key, now);
    if (this.touched.size > MAX_REMEMBERED) {
      for (const [k, t] of this.touched) if (now - t >= this.touchEveryMs) this.touched.delete(k);
    }
    return true;
  }
}
