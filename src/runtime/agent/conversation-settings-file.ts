/**
 * The file a conversation keeps its settings in, beside its outbox: what a restarted runtime needs to
 * rebuild the conversation before it replays the events.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CreateConversation } from './conversation-schemas';

export const SETTINGS_FILE = 'conversation.json';

/** Written whole or not at all (a crash mid-write must not leave a file that fails the next start); 0600: it holds the secrets. */
export function writeSettings(
  dir: string,
  stored: { id: string; created_at: string; settings: CreateConversation },
): void {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, SETTINGS_FILE);
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(stored), { mode: 0o600 });
  fs.renameSync(`${file}.tmp`, file);
}
