/**
 * A conversation's state is its events: a restarted runtime reads its log back and rebuilds what the loop
 * needs from it here, without running anything. What the restart itself must record (a run it cut short)
 * is decided here too, and recorded by the conversation.
 */
import type { Event } from '../../schemas/events';
import { errorOf, type ActionEvent, type NewEvent } from './conversation-events';
import type { ExecutionStatus } from './conversation-schemas';
import type { TaskItem } from './tools/tool';

export interface ReplayedState {
  status: ExecutionStatus;
  tasks: TaskItem[];
  /** Skills already sent to the agent: a trigger word does not send them again. */
  activatedSkills: Set<string>;
  /** A CondensationRequest no Condensation has answered yet. */
  condenseRequested: boolean;
  updatedAt: string;
  /** Actions without an answer: those waiting for a confirmation, or those a stop cut short. */
  open: ActionEvent[];
}

export function replay(events: readonly Event[], createdAt: string): ReplayedState {
  const state: ReplayedState = {
    status: 'idle',
    tasks: [],
    activatedSkills: new Set(),
    condenseRequested: false,
    updatedAt: createdAt,
    open: [],
  };
  for (const e of events) {
    if (e.kind === 'ConversationStateUpdateEvent' && e.key === 'execution_status')
      state.status = e.value as ExecutionStatus;
    if (e.kind === 'ObservationEvent' && e.observation.kind === 'TaskTrackerObservation')
      state.tasks = (e.observation.task_list as TaskItem[]) ?? [];
    if (e.kind === 'MessageEvent') e.activated_skills.forEach((s) => state.activatedSkills.add(s));
    if (e.kind === 'CondensationRequest') state.condenseRequested = true;
    if (e.kind === 'Condensation') state.condenseRequested = false;
  }
  state.updatedAt = events.at(-1)?.timestamp ?? createdAt;
  state.open = unanswered(events);
  return state;
}

/** Actions no observation, rejection or error has answered yet. */
export function unanswered(events: readonly Event[]): ActionEvent[] {
  const answered = new Set<string>();
  for (const e of events) {
    if (e.kind === 'ObservationEvent' || e.kind === 'UserRejectObservation' || e.kind === 'AgentErrorEvent')
      answered.add(e.tool_call_id);
  }
  return events.filter((e): e is ActionEvent => e.kind === 'ActionEvent' && !answered.has(e.tool_call_id));
}

/**
 * What a restart records when the log says the conversation was running: the runtime stopped mid-step
 * (killed, or its machine went away), an infrastructure failure reported as such, and every action in
 * flight gets an answer.
 */
export function restartReport(inFlight: readonly ActionEvent[]): NewEvent[] {
  return [
    {
      kind: 'ServerErrorEvent',
      source: 'environment',
      code: 'RuntimeRestarted',
      detail: `The runtime stopped while the conversation ran${inFlight.length ? ` (${inFlight.length} action(s) in flight)` : ''}; it is paused now: run it to go on.`,
    },
    ...inFlight.map((a) =>
      errorOf(a, 'The runtime restarted while this action ran; it may have run partly or not at all.'),
    ),
  ];
}
