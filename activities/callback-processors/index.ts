/** The processor of each kind the spec names; the mapped type makes a kind without one a compile error. */
import type { CallbackProcessorKind } from '../../src/schemas/app-conversations';
import { gitHostAV1Processor } from './git-host-a-v1-processor';
import { chatV1Processor } from './chat-v1-processor';
import { gitHostBV1Processor } from './git-host-b-v1-processor';
import { gitHostCV1Processor } from './git-host-c-v1-processor';
import { issueTrackerAV1Processor } from './issue-tracker-a-v1-processor';
import { issueTrackerBV1Processor } from './issue-tracker-b-v1-processor';
import { loggingProcessor } from './logging-processor';
import type { CallbackProcessorImpl } from './processor';
import { setTitleProcessor } from './set-title-processor';

export type { CallbackProcessorDeps, CallbackProcessorImpl, CallbackRun } from './processor';

export const CALLBACK_PROCESSORS: { readonly [K in CallbackProcessorKind]: CallbackProcessorImpl<K> } = {
  GitHostAV1CallbackProcessor: gitHostAV1Processor,
  GitHostBV1CallbackProcessor: gitHostBV1Processor,
  GitHostCV1CallbackProcessor: gitHostCV1Processor,
  IssueTrackerAV1CallbackProcessor: issueTrackerAV1Processor,
  IssueTrackerBV1CallbackProcessor: issueTrackerBV1Processor,
  ChatV1CallbackProcessor: chatV1Processor,
  LoggingCallbackProcessor: loggingProcessor,
  SetTitleCallbackProcessor: setTitleProcessor,
};

/** The processor of a stored kind; none for a kind this version does not know. */
export const processorFor = (kind: string): CallbackProcessorImpl | undefined =>
  Object.hasOwn(CALLBACK_PROCESSORS, kind) ? CALLBACK_PROCESSORS[kind as CallbackProcessorKind] : undefined;
