/** `agent-control events`: a conversation's event log, followed live (`tail`, and after `start`) or searched. */
import type { Command } from 'commander';
import type { AgentControlClient, Event } from '../client';
import { eventLine } from './event-lines';
import { EXIT } from './exit-codes';
import { listCommand } from './agent-control-listing';
import { json, jsonOption, note, out } from './agent-control-output';
import { client, interruptSignal } from './agent-control-session';

/** Whether the agent has stopped working on the conversation (finished, failed or stuck). */
const finished = (e: Event) => {
  const x = e as { kind: string; key?: string; value?: unknown };
  return (
    x.kind === 'ConversationStateUpdateEvent' && (x.value === 'finished' || x.value === 'error' || x.value === 'stuck')
  );
};

export interface FollowOptions {
  json?: boolean;
  afterId?: string;
  live?: boolean;
  untilFinished?: boolean;
}

/** Prints each stored event of the conversation as it comes (streamed deltas left out), until `signal` aborts. */
export async function follow(c: AgentControlClient, conversationId: string, o: FollowOptions, signal: AbortSignal) {
  for await (const e of c.events.tail(conversationId, {
    afterId: o.afterId,
    live: o.live,
    signal,
    onReconnect: (n, why) => note(`(reconnecting to the event stream, attempt ${n}: ${why})`),
  })) {
    if (e.kind === 'StreamingDeltaEvent') continue;
    if (o.json) json(e);
    else out(eventLine(e));
    if (o.untilFinished && finished(e)) return;
  }
}

export function addEventsCommands(program: Command) {
  const events = program.command('events').description('the event log of a conversation');
  events
    .command('tail')
    .description(
      'every event of a conversation, then each new one as it comes (reconnects without gap or repeat; Ctrl-C stops)',
    )
    .argument('<conversation-id>')
    .option('--after <event-id>', 'only the events after this one')
    .option('--live', 'only events from now on')
    .option('--until-finished', 'exit when the agent finishes')
    .addOption(jsonOption())
    .action(async (id: string, o: { after?: string; live?: boolean; untilFinished?: boolean; json?: boolean }) => {
      const ac = interruptSignal();
      await follow(
        client(),
        id,
        { json: o.json, afterId: o.after, live: o.live, untilFinished: o.untilFinished },
        ac.signal,
      );
      if (ac.signal.aborted) process.exitCode = EXIT.DETACHED;
    });
  listCommand(
    events,
    'search',
    (c, pageId, limit, [id], o) => c.events.search(id!, { kind__eq: o.kind as never, page_id: pageId, limit }),
    (e) => eventLine(e as Event),
  )
    .description('stored events of a conversation, oldest first')
    .argument('<conversation-id>')
    .option('--kind <kind>', 'only events of this kind (e.g. MessageEvent)');
}
