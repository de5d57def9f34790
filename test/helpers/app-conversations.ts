/** App conversation records as a start writes them, for tests that need one without running a start. */
import type { NewAppConversation } from '../../src/store/app-conversations-store';

/** Every field empty but the id, the owner and those in `fields`; created and updated now unless given. */
export function appConversationRecord(
  fields: Pick<NewAppConversation, 'id' | 'created_by_user_id'> & Partial<NewAppConversation>,
): NewAppConversation {
  const now = new Date();
  return {
    sandbox_id: null,
    title: null,
    selected_repository: null,
    selected_branch: null,
    git_provider: null,
    trigger: null,
    agent_server_url: null,
    start_task_id: null,
    processors: [],
    created_at: now,
    updated_at: now,
    ...fields,
  };
}
