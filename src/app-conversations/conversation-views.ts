/**
 * The AppConversation a client reads: the stored record, with what is true now joined in for a whole
 * page at once (one query each, never one per conversation): the sandbox's status, and while it runs the
 * conversation's address and session key; what the agent last reported (execution status, metrics); the
 * conversations started as its children.
 */
import type { SecretBox } from '../auth/secret-box';
import {
  ConversationExecutionStatusSchema,
  MetricsSnapshotSchema,
  type AppConversation,
} from '../schemas/app-conversations';
import { AGENT_SERVER, type SandboxStatus } from '../schemas/sandboxes';
import type { AppConversationRecord, AppConversationsStore } from '../store/app-conversations-store';
import type { ConversationStatesStore } from '../store/conversation-states-store';
import type { SandboxesStore, SandboxRecord } from '../store/sandboxes-store';

export interface ConversationViewsDeps {
  appConversations: Pick<AppConversationsStore, 'childrenOf'>;
  conversationStates: Pick<ConversationStatesStore, 'getMany'>;
  sandboxes: Pick<SandboxesStore, 'getManyOwned'>;
  box: SecretBox;
}

/** Overrides for one view: what a run control just learnt from the runtime. */
export interface ViewOverrides {
  execution_status?: string | null;
}

export class ConversationViews {
  constructor(private readonly deps: ConversationViewsDeps) {}

  async one(userId: string, record: AppConversationRecord, overrides: ViewOverrides = {}): Promise<AppConversation> {
    const [view] = await this.many(userId, [record]);
    if (overrides.execution_status !== undefined)
      view!.execution_status = ConversationExecutionStatusSchema.safeParse(overrides.execution_status).data ?? null;
    return view!;
  }

  async many(userId: string, records: readonly AppConversationRecord[]): Promise<AppConversation[]> {
    const ids = records.map((r) => r.id);
    const sandboxIds = [...new Set(records.flatMap((r) => (r.sandbox_id ? [r.sandbox_id] : [])))];
    const [sandboxes, states, children] = await Promise.all([
      sandboxIds.length > 0 ? this.deps.sandboxes.getManyOwned(sandboxIds, userId) : new Map<string, SandboxRecord>(),
      this.deps.conversationStates.getMany(ids),
      this.deps.appConversations.childrenOf(ids, userId),
    ]);
    return records.map((r) => {
      const { processors: _p, skills: _s, hooks: _h, working_dir: _w, ...rest } = r;
      const sandbox = r.sandbox_id ? sandboxes.get(r.sandbox_id) : undefined;
      const status: SandboxStatus = !sandbox || sandbox.status === 'DELETED' ? 'MISSING' : sandbox.status;
      // The sandbox's address as it is now, and only while it runs: a runtime started again (after it
      // died, or was lost) listens elsewhere, and the port it left may be someone else's next.
      const agentServer =
        status === 'RUNNING' ? sandbox?.exposed_urls.find((u) => u.name === AGENT_SERVER)?.url : undefined;
      const state = states.get(r.id);
      const view: AppConversation = {
        ...rest,
        // The record keeps the values the start validated against these enums.
        git_provider: r.git_provider as AppConversation['git_provider'],
        trigger: r.trigger as AppConversation['trigger'],
        sub_conversation_ids: children.get(r.id) ?? [],
        // Not the address the start recorded: that one is the first runtime's.
        agent_server_url: agentServer ?? null,
        sandbox_status: status,
        // What a runtime reported is checked like any input: a value outside the schema shows as null.
        execution_status: ConversationExecutionStatusSchema.safeParse(state?.execution_status).data ?? null,
        metrics: MetricsSnapshotSchema.safeParse(state?.metrics).data ?? null,
        conversation_url: agentServer ? `${agentServer}/api/conversations/${encodeURIComponent(r.id)}` : null,
        session_api_key: agentServer && sandbox ? this.deps.box.open(sandbox.session_key_sealed) : null,
        acp_server: null,
        launched_agent_profile: r.launched_agent_profile,
        created_at: r.created_at.toISOString(),
        updated_at: r.updated_at.toISOString(),
      };
      return view;
    });
  }
}
