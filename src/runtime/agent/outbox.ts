/**
 * The runtime's event outbox: every event is appended to a file in the sandbox before it is sent, and a
 * sender posts the unsent ones, in order and in batches, to the control plane's ingest endpoint until
 * each batch is acknowledged, backing off while the control plane is away. The count of acknowledged
 * events is kept beside the file, so a restarted runtime resumes where the last one stopped; a batch
 * sent twice (acknowledged, then a crash before the count was written) is harmless, because ingest is
 * idempotent on event id. Transient events (StreamingDeltaEvent) skip the outbox and are sent at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface OutboxOptions {
  /** Directory that holds this conversation's outbox files. */
  dir: string;
  conversationId: string;
  /** Base URL of the control plane (its api). */
  controlPlaneUrl: string;
  sessionApiKey: string;
  batchSize?: number;
  /** Longest wait between retries (ms). */
  maxBackoffMs?: number;
  onError?: (message: string) => void;
}

const EVENTS_FILE = 'outbox.jsonl';
const SENT_FILE = 'outbox.sent';
const REJECTED_FILE = 'outbox.rejected.jsonl';

/** How often, at most, the acknowledged count is written. */
const SENT_WRITE_MS = 200;

/** Largest request body the sender makes (the api's MAX_BODY_BYTES is 5 MiB by default). */
const MAX_BATCH_BYTES = 2 * 1024 * 1024;

/** Statuses after which a batch can never be accepted as it is: set aside, not retried forever. */
const PERMANENT = new Set([400, 409, 413, 422]);

export class EventOutbox {
  private pending: string[] = [];
  private sent = 0;
  private sending: Promise<void> | null = null;
  private transient: string[] = [];
  private sentTimer: NodeJS.Timeout | undefined;
  private transientSending: Promise<void> | null = null;
  private stopped = false;
  private wake: (() => void) | null = null;
  private readonly url: string;

  constructor(private readonly o: OutboxOptions) {
    fs.mkdirSync(o.dir, { recursive: true });
    this.url = `${o.controlPlaneUrl.replace(/\/+$/, '')}/api/v1/webhooks/events/${encodeURIComponent(o.conversationId)}`;
    const sent = Number(readOr(path.join(o.dir, SENT_FILE), '0'));
    const lines = readOr(path.join(o.dir, EVENTS_FILE), '').split('\n');
    // A line cut short by a crash mid-write is not an event: it was never acknowledged, so it is dropped.
    const whole = lines.filter((l, i) => l !== '' && (i < lines.length - 1 || isJson(l)));
    this.sent = Math.min(Number.isInteger(sent) ? sent : 0, whole.length);
    this.pending = whole.slice(this.sent);
    if (whole.length !== lines.filter((l) => l !== '').length) {
      writeAtomically(path.join(o.dir, EVENTS_FILE), whole.map((l) => `${l}\n`).join(''));
    }
    this.kick();
  }

  /** Events written but not yet acknowledged. */
  get unsent(): number {
    return this.pending.length;
  }

  /** Every event ever appended, in order (what a restarted runtime rebuilds its conversation from). */
  written(): unknown[] {
    return readOr(path.join(this.o.dir, EVENTS_FILE), '')
      .split('\n')
      .filter(isJson) // a damaged line is skipped, not the whole conversation
      .map((l) => JSON.parse(l) as unknown);
  }

  /** Writes the event to disk, then lets the sender take it. */
  append(event: object): void {
    const line = JSON.stringify(event);
    fs.appendFileSync(path.join(this.o.dir, EVENTS_FILE), `${line}\n`);
    this.pending.push(line);
    this.kick();
  }

  /**
   * Sends a transient event now, best effort: it is never stored, so a lost one is only a lost delta.
   * One request at a time keeps them in order; those that queue up meanwhile go together in the next.
   */
  sendTransient(event: object): void {
    this.transient.push(JSON.stringify(event));
    this.transientSending ??= (async () => {
      while (this.transient.length > 0 && !this.stopped) {
        const batch = this.transient.splice(0);
        await this.post(`[${batch.join(',')}]`).catch(() => undefined);
      }
      this.transientSending = null;
    })();
  }

  /** Resolves once every appended event is acknowledged and recorded (or the outbox stops). */
  async flushed(): Promise<void> {
    while (!this.stopped && this.pending.length > 0) await (this.sending ?? Promise.resolve());
    if (this.sentTimer) this.writeSent(); // and the count recorded now
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.sending;
    this.writeSent();
  }

  /**
   * Keeps the acknowledged count on disk, at most every SENT_WRITE_MS: events trickle out one or two per
   * request, and a file write per request would cost more than the request. A crash loses at most that
   * much of the count, so a restart resends a few events, which ingest stores once.
   */
  private recordSent(): void {
    if (this.sentTimer) return;
    this.sentTimer = setTimeout(() => this.writeSent(), SENT_WRITE_MS);
  }

  private writeSent(): void {
    clearTimeout(this.sentTimer);
    this.sentTimer = undefined;
    try {
      writeAtomically(path.join(this.o.dir, SENT_FILE), String(this.sent));
    } catch (e) {
      // Not fatal: without the count a restart resends these, and ingest stores them once.
      this.o.onError?.(`cannot record what was sent: ${(e as Error).message}`);
    }
  }

  private kick(): void {
    if (this.stopped) return;
    if (this.sending) {
      this.wake?.();
      return;
    }
    this.sending = this.run().finally(() => {
      this.sending = null;
      if (!this.stopped && this.pending.length > 0) this.kick();
    });
  }

  /** The next batch: up to batchSize events and MAX_BATCH_BYTES (always at least one event). */
  private nextBatch(): string[] {
    const batch: string[] = [];
    let bytes = 0;
    for (const line of this.pending.slice(0, this.o.batchSize ?? 100)) {
      bytes += Buffer.byteLength(line) + 1;
      if (batch.length > 0 && bytes > MAX_BATCH_BYTES) break;
      batch.push(line);
    }
    return batch;
  }

  private async run(): Promise<void> {
    let backoff = 100;
    while (!this.stopped && this.pending.length > 0) {
      const batch = this.nextBatch();
      let status: number;
      try {
        status = await this.post(`[${batch.join(',')}]`);
      } catch (e) {
        status = 0;
        this.o.onError?.(`sending events failed: ${(e as Error).message}`);
      }
      if (status === 200 || PERMANENT.has(status)) {
        // A refused batch is all or nothing: send its events one by one so only the bad ones are set aside.
        const settled = status === 200 ? batch.length : await this.oneByOne(batch);
        this.sent += settled;
        this.pending.splice(0, settled);
        this.recordSent();
        backoff = 100;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoff);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
      backoff = Math.min(backoff * 2, this.o.maxBackoffMs ?? 5000);
    }
  }

  /** Sends the events one at a time; returns how many were settled (acknowledged or set aside) before a stop. */
  private async oneByOne(batch: readonly string[]): Promise<number> {
    let settled = 0;
    for (const line of batch) {
      let status = await this.post(`[${line}]`).catch(() => 0);
      for (
        let backoff = 100;
        status !== 200 && !PERMANENT.has(status) && !this.stopped;
        backoff = Math.min(backoff * 2, 5000)
      ) {
        await sleep(backoff);
        status = await this.post(`[${line}]`).catch(() => 0);
      }
      if (status !== 200 && !PERMANENT.has(status)) return settled; // stopped: the rest stays unsent
      if (PERMANENT.has(status)) {
        try {
          fs.appendFileSync(path.join(this.o.dir, REJECTED_FILE), `${line}\n`);
        } catch {
          // the event stays in outbox.jsonl in any case
        }
        this.o.onError?.(`the control plane refused an event with ${status}; kept in ${REJECTED_FILE}`);
      }
      settled++;
    }
    return settled;
  }

  private async post(body: string): Promise<number> {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Session-API-Key': this.o.sessionApiKey },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    await res.body?.cancel();
    return res.status;
  }
}

function readOr(file: string, fallback: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

function writeAtomically(file: string, text: string): void {
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file);
}
