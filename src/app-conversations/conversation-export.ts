/**
 * A conversation as a zip (GET .../download): `meta.json` (the conversation's view), then one entry per
 * stored event in seq order, `events/00000001.json`, ..., each holding the event's JSON text exactly as
 * stored. Written with yazl as it is read: the next event is taken from the log only when yazl starts the
 * entry before it, and each entry's data reaches the output through a pipe that waits for the reader, so a
 * slow client slows the reads and memory holds about one page of events whatever the log's length.
 */
import { PassThrough, Readable } from 'node:stream';
import { ZipFile } from 'yazl';

export interface ExportedEvent {
  seq: number;
  json: string;
}

export interface ConversationExportSource {
  /** What meta.json holds (JSON.stringify'd). */
  meta: unknown;
  /** The log in seq order; its `return` is called when the export stops early (a client that went away). */
  events: AsyncIterable<ExportedEvent>;
}

export const eventEntryName = (seq: number) => `events/${String(seq).padStart(8, '0')}.json`;
export const exportFileName = (conversationId: string) => `conversation_${conversationId}.zip`;

/**
 * The parts of yazl 3's ZipFile this module reaches into (see CompactedZip); checked at construction, so a
 * yazl that changed them fails the export's tests rather than writing bad archives.
 */
interface YazlEntry {
  state: number;
  getCentralDirectoryRecord(): Buffer;
}
interface YazlInternals {
  entries: YazlEntry[];
}
/** yazl's Entry.FILE_DATA_DONE: the entry's data and data descriptor are written. */
const FILE_DATA_DONE = 3;
/** Central directory records joined into one buffer per this many entries (fewer small Buffers to keep). */
const RECORDS_PER_CHUNK = 1024;

/**
 * yazl keeps every entry object until the end (for the central directory) and, at every step, looks for
 * the next entry to write from the first one on: with one entry per event, memory and time grow with the
 * log (quadratic time: 100k events took 35 s of CPU before any compression). This keeps the written
 * entries out of yazl's list: each leaves behind its central directory record (its bytes are final once
 * it is written), all of them under one stand-in at the head of the list, and the count is restored with
 * placeholders of no bytes just before `end`. Memory: the central directory's bytes (about 100 bytes per
 * event, as any zip writer must keep) and one array slot per event at the end.
 */
class CompactedZip {
  readonly zip = new ZipFile();
  private readonly internals: YazlInternals;
  private readonly chunks: Buffer[] = [];
  private pending: Buffer[] = [];
  private written = 0;
  private readonly head: YazlEntry = {
    state: FILE_DATA_DONE,
    getCentralDirectoryRecord: () => Buffer.concat([...this.chunks, ...this.pending]),
  };

  constructor() {
    const internals = this.zip as unknown as Partial<YazlInternals>;
    if (!Array.isArray(internals.entries) || internals.entries.length !== 0)
      throw new Error('yazl ZipFile internals changed: no empty `entries` list');
    this.internals = internals as YazlInternals;
  }

  /** Moves the written entries after the head out of yazl's list (cheap: at most a few are queued). */
  compact(): void {
    const entries = this.internals.entries;
    const from = entries[0] === this.head ? 1 : 0;
    let to = from;
    while (to < entries.length && entries[to]!.state === FILE_DATA_DONE) to++;
    if (to === from) return;
    for (const e of entries.splice(from, to - from)) {
      this.pending.push(e.getCentralDirectoryRecord());
      this.written++;
    }
    if (this.pending.length >= RECORDS_PER_CHUNK) {
      this.chunks.push(Buffer.concat(this.pending));
      this.pending = [];
    }
    if (entries[0] !== this.head) entries.unshift(this.head);
  }

  /** Puts the entry count back (head + placeholders + entries still queued), then ends the zip. */
  end(): void {
    this.compact();
    const entries = this.internals.entries;
    if (this.written > 0) {
      const blank: YazlEntry = { state: FILE_DATA_DONE, getCentralDirectoryRecord: () => Buffer.alloc(0) };
      this.internals.entries = [this.head, ...new Array<YazlEntry>(this.written - 1).fill(blank), ...entries.slice(1)];
    }
    this.zip.end();
  }
}

export interface ConversationZipOptions {
  /** Modification time of every entry. @default the time of the call */
  mtime?: Date;
  /**
   * Entries of at least this many bytes are deflated, smaller ones stored. Each deflated entry costs its
   * own zlib stream (about 0.4 ms, mostly waiting on the thread pool, where a stored one costs 0.05 ms),
   * and an event of a few hundred bytes shrinks by little. (100k events, a fifth of them over 1 KiB: about
   * 7 s, the JS heap flat at 4 MB, the central directory's bytes off it.)
   * @default 1024
   */
  compressFromBytes?: number;
}

/**
 * The zip of the conversation as a stream. Reading starts at once; a read or write error destroys the
 * stream with it (the answer is cut off, never a well-formed partial archive), and a stream destroyed by
 * its reader (a client that disconnected) stops the reads of the log.
 */
export function conversationZip(source: ConversationExportSource, opts: ConversationZipOptions = {}): Readable {
  const compacted = new CompactedZip();
  const { zip } = compacted;
  // yazl's output is a PassThrough (its typings say only ReadableStream); yazl writes into it without
  // waiting, so the loop below waits for it to drain before it adds more.
  const output = zip.outputStream as unknown as PassThrough;
  const mtime = opts.mtime ?? new Date();
  const compressFrom = opts.compressFromBytes ?? 1024;
  zip.on('error', (e: Error) => output.destroy(e));

  /**
   * Resolves when `start` calls its `done`, or when the output closes (its reader went away), whichever
   * comes first, and leaves no listener behind: one such wait per entry must not pile up on anything that
   * lives as long as the export.
   */
  const waitFor = (start: (done: () => void) => (() => void) | void) =>
    new Promise<void>((resolve) => {
      if (output.destroyed) return resolve();
      let cleanup: (() => void) | undefined;
      let finished = false;
      const done = () => {
        finished = true;
        output.off('close', done);
        cleanup?.();
        resolve();
      };
      output.once('close', done);
      const stop = start(done);
      if (stop && finished)
        stop(); // done was called before `start` returned
      else if (stop) cleanup = stop;
    });
  /** Adds an entry; resolves when yazl starts writing it (every entry before it is written). */
  const add = (name: string, data: Buffer) =>
    waitFor((done) =>
      zip.addReadStreamLazy(name, { mtime, compress: data.length >= compressFrom }, (cb) => {
        cb(null, Readable.from([data]));
        done();
      }),
    );
  /** Resolves once the reader has taken what is buffered (at once when little is). */
  const drained = () =>
    output.writableNeedDrain
      ? waitFor((done) => {
          output.once('drain', done);
          return () => output.off('drain', done);
        })
      : undefined;

  const produce = async () => {
    await add('meta.json', Buffer.from(JSON.stringify(source.meta, null, 2)));
    for await (const e of source.events) {
      if (output.destroyed) break; // `break` returns the iterator: its reads stop
      compacted.compact();
      await add(eventEntryName(e.seq), Buffer.from(e.json));
      await drained();
      if (output.destroyed) break;
    }
    if (!output.destroyed) compacted.end();
  };
  produce().catch((e: unknown) => output.destroy(e instanceof Error ? e : new Error(String(e))));
  return output;
}
