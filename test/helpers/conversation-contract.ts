/**
 * The conversation contract: what a client of the control plane sees of one conversation, whichever
 * runtime (the built-in one or the real OpenHands agent server) runs it in whichever provider's sandbox
 * (a process or a container). One suite, run by `test/conversation-contract.test.ts` (process sandboxes)
 * and `test/docker/conversation-contract.test.ts` (containers) for each runtime, through the real api,
 * worker, Temporal and database, with the scripted LLM and a git host on addresses the sandbox reaches:
 *
 *   start to READY through every status; the agent edits a file of the cloned repository with its own
 *   tools; events stored once, in order, seq 1..n, each valid against SPEC.md; a follow-up message
 *   reaches the next step; interrupt, run and pause; the file, git and download views; `kill -9` of the
 *   runtime mid-run with the api away, then resume: every event it had emitted is in the log once;
 *   delete leaves nothing running.
 *
 * What a provider does differently (where its runtime is, how it is frozen or killed) is the target's
 * (conversation-contract-target.ts). The suite's tests run in this order, on one conversation, from:
 * conversation-contract-start.ts (the service, the start, the readers the others use), -agent.ts (the
 * agent's work, follow-up, interrupt/run/pause), -views.ts (file, git, download) and -crash.ts (kill -9
 * and resume, then delete).
 */
import { contractAgent } from './conversation-contract-agent';
import { contractCrash } from './conversation-contract-crash';
import { contractStart } from './conversation-contract-start';
import type { ContractTarget } from './conversation-contract-target';
import { contractViews } from './conversation-contract-views';

export type { ContractHandle, ContractTarget } from './conversation-contract-target';

/** The whole contract on `target`: one conversation followed from its start to its delete, in this order. */
export function conversationContract(target: ContractTarget): void {
  const conversation = contractStart(target);
  contractAgent(target, conversation);
  contractViews(conversation);
  contractCrash(target, conversation);
}
