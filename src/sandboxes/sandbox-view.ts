import type { SecretBox } from '../auth/secret-box';
import type { SandboxView } from '../schemas/sandboxes';
import type { SandboxRecord } from '../store/sandboxes-store';

/** SPEC 2.5. The session key and the URLs are given only while the sandbox runs (they answer only then). */
export function sandboxView(r: SandboxRecord, box: SecretBox): SandboxView {
  const running = r.status === 'RUNNING';
  return {
    id: r.id,
    created_by_user_id: r.created_by_user_id,
    sandbox_spec_id: r.sandbox_spec_id,
    status: r.status,
    session_api_key: running ? box.open(r.session_key_sealed) : null,
    exposed_urls: running ? r.exposed_urls : [],
    created_at: r.created_at.toISOString(),
    status_detail: r.status_detail,
  };
}
