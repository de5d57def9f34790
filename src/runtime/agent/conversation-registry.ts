/**
 * The conversations of this runtime, each in its own directory under the state directory (settings,
 * outbox). At start the registry reads them back, so a restarted runtime knows its conversations, resumes
 * sending their unsent events and reports what a crash cut short. A deleted conversation's directory is
 * removed, so a restart does not bring it back.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BadRequest, Conflict, NotFound, Unavailable } from '../../errors';
import type { Logger } from '../../logger';
import { EventSchema } from '../../schemas/events';
import { PathEscapeError, resolveInside } from '../workspace-paths';
import { Conversation } from './conversation';
import { SETTINGS_FILE, writeSettings } from './conversation-settings-file';
import { CreateConversationSchema, type CreateConversation } from './conversation-schemas';
import { EventOutbox } from './outbox';

export interface RegistryOptions {
  stateDir: string;
  workingDir: string;
  controlPlaneUrl: string | undefined;
  sessionApiKey: string;
  maxOutputBytes: number;
  /** The environment of agent commands (without the session key). */
  baseEnv: NodeJS.ProcessEnv;
  logger: Logger;
}

export class ConversationRegistry {
  private readonly conversations = new Map<string, Conversation>();

  constructor(private readonly o: RegistryOptions) {}

  /** Reads back the conversations an earlier run of this runtime left. */
  loadAll(): void {
    if (!fs.existsSync(this.o.stateDir) || !this.o.controlPlaneUrl) return;
    for (const name of fs.readdirSync(this.o.stateDir)) {
      const dir = path.join(this.o.stateDir, name);
      try {
        const stored = JSON.parse(fs.readFileSync(path.join(dir, SETTINGS_FILE), 'utf8')) as {
          id: string;
          created_at: string;
          settings: unknown;
        };
        const settings = CreateConversationSchema.parse(stored.settings);
        const outbox = this.outbox(dir, stored.id);
        const events = outbox.written().flatMap((e) => {
          const r = EventSchema.safeParse(e);
          return r.success ? [r.data] : [];
        });
        const conversation = this.conversation(stored.id, settings, stored.created_at, outbox);
        conversation.restore(events);
        this.conversations.set(stored.id, conversation);
        this.o.logger.info(
          { conversation_id: stored.id, events: events.length, unsent: outbox.unsent },
          'conversation restored',
        );
      } catch (e) {
        this.o.logger.error({ dir, err: (e as Error).message }, 'cannot restore a conversation');
      }
    }
  }

  async create(settings: CreateConversation): Promise<Conversation> {
    if (!this.o.controlPlaneUrl)
      throw new Unavailable(
        'This runtime has no CONTROL_PLANE_URL, so it cannot report events; conversations cannot run here',
      );
    const id = settings.conversation_id ?? randomUUID();
    if (this.conversations.has(id)) throw new Conflict(`Conversation ${id} already exists in this runtime`);
    let workspace: string;
    try {
      workspace = resolveInside(this.o.workingDir, settings.workspace.working_dir);
    } catch (e) {
      if (e instanceof PathEscapeError) throw new BadRequest(e.message);
      throw e;
    }
    fs.mkdirSync(workspace, { recursive: true });
    const dir = this.dirOf(id);
    // One that could not be read back at start-up still has its files (and its sender): never a second one.
    if (fs.existsSync(path.join(dir, SETTINGS_FILE)))
      throw new Conflict(
        `Conversation ${id} already exists in this runtime (it could not be restored; see the runtime log)`,
      );
    const createdAt = new Date().toISOString();
    writeSettings(dir, { id, created_at: createdAt, settings: { ...settings, conversation_id: id } });
    const conversation = this.conversation(id, settings, createdAt, this.outbox(dir, id), workspace);
    this.conversations.set(id, conversation);
    await conversation.begin();
    return conversation;
  }

  get(id: string): Conversation {
    const c = this.conversations.get(id);
    if (!c) throw new NotFound(`Conversation ${id} not found in this runtime`);
    return c;
  }

  /** Swaps the conversation's LLM, kept in its settings file so that a restarted runtime uses it too. */
  switchLlm(id: string, llm: CreateConversation['agent']['llm']): Conversation {
    const c = this.get(id);
    // The file first: a switch that could not be kept is not made.
    writeSettings(this.dirOf(id), {
      id,
      created_at: c.createdAt,
      settings: { ...c.settings, agent: { ...c.settings.agent, llm }, conversation_id: id },
    });
    c.switchLlm(llm);
    this.o.logger.info({ conversation_id: id, model: llm.model }, 'conversation LLM switched');
    return c;
  }

  /**
   * Deletes a conversation: its loop is stopped (the step in flight cancelled), it is forgotten and its
   * directory (settings, events, unsent ones too) removed. Its workspace is left alone: it may be shared.
   */
  async delete(id: string): Promise<void> {
    const c = this.get(id);
    this.conversations.delete(id);
    try {
      await c.discard();
    } finally {
      await fs.promises.rm(this.dirOf(id), { recursive: true, force: true });
    }
    this.o.logger.info({ conversation_id: id }, 'conversation deleted');
  }

  /** Stops sending (the unsent events stay on disk for the next start). */
  async close(): Promise<void> {
    await Promise.all([...this.conversations.values()].map((c) => c.close()));
  }

  private dirOf(id: string): string {
    return path.join(this.o.stateDir, Buffer.from(id).toString('base64url'));
  }

  private outbox(dir: string, id: string): EventOutbox {
    return new EventOutbox({
      dir,
      conversationId: id,
      controlPlaneUrl: this.o.controlPlaneUrl!,
      sessionApiKey: this.o.sessionApiKey,
      onError: (message) => this.o.logger.warn({ conversation_id: id }, message),
    });
  }

  private conversation(
    id: string,
    settings: CreateConversation,
    createdAt: string,
    outbox: EventOutbox,
    workspace?: string,
  ): Conversation {
    const ws = workspace ?? path.resolve(this.o.workingDir, settings.workspace.working_dir);
    return new Conversation(id, settings, createdAt, {
      outbox,
      workspace: ws,
      baseEnv: this.o.baseEnv,
      maxOutputBytes: this.o.maxOutputBytes,
      log: (msg, fields) => this.o.logger.error({ conversation_id: id, ...fields }, msg),
    });
  }
}
