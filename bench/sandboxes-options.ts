/**
 * The command line of bench:sandboxes (see bench/sandboxes.ts), read once when the bench loads, and its
 * poll interval.
 */
import { arg, wordArg } from './report';

export const RUNS = arg('runs', 20);
export const DOCKER = arg('docker', 1) !== 0;
/** `--limits on`: process sandboxes in a cgroup each (SANDBOX_CGROUPS=on) on a file system of their own (SANDBOX_DISKS=on), as root; `off` (the default): neither, as the other benches run them. */
export const LIMITS = wordArg('limits', ['off', 'on'] as const, 'off');
/** How often a measured run asks whether what it waits for is there. */
export const POLL_MS = 10;
