/**
 * The kinds the spec registers but that have nothing to do here yet: they are accepted, stored and
 * dispatched like the others, and every round of theirs does nothing (so leaves no record).
 */
import type { CallbackProcessorKind } from '../../src/schemas/app-conversations';
import type { CallbackProcessorImpl } from './processor';

const inert = <K extends CallbackProcessorKind>(kind: K): CallbackProcessorImpl<K> => ({ kind, process: async () => [] });

export const gitHostBV1Processor = inert('GitHostBV1CallbackProcessor');
export const gitHostCV1Processor = inert('GitHostCV1CallbackProcessor');
export const issueTrackerAV1Processor = inert('IssueTrackerAV1CallbackProcessor');
export const issueTrackerBV1Processor = inert('IssueTrackerBV1CallbackProcessor');
export const chatV1Processor = inert('ChatV1CallbackProcessor');
