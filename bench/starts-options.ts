/** The command line of bench:starts (see bench/starts.ts), read once when the bench loads. */
import { arg, wordArg } from './report';

export const STARTS = arg('starts', 200);
export const SINGLE = arg('single', 15);
export const FOLLOW = wordArg('follow', ['workflow', 'record'] as const, 'workflow');
export const RUNTIME = wordArg('runtime', ['built-in', 'openhands'] as const, 'built-in');
export const WORKERS = arg('workers', 1);
/** The bench is one user: its N starts at once are the load, so its start quotas (under way, not ended, conversations kept) are lifted, the first unless --max-starts sets one (each start still passes its line). */
export const CONCURRENT_STARTS = String(arg('max-starts', 0));
