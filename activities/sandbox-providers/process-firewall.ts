/**
 * The firewall chain of isolated process sandboxes (a uid range): its rules, installed with
 * iptables-restore for IPv4 and IPv6, checked at every start, and removed by an operator's clean-up.
 */
import { execFile, spawn } from 'node:child_process';
import dns from 'node:dns/promises';
import { isIP } from 'node:net';
import { promisify } from 'node:util';
import { trustedProgram } from '../../src/process/trusted-path';
import type { ProcessIsolationOptions } from './process-isolation';

const execFileAsync = promisify(execFile);
/** Runs a program of the system's directories (never one found through PATH). */
const run = (name: string, args: string[]) => execFileAsync(trustedProgram(name, 'iptables'), args);

/** What the chain is made of: the uid range, what it may reach on this machine, the ports it may not answer from. */
export type SandboxFirewallOptions = Pick<
  ProcessIsolationOptions,
  'uidRange' | 'controlPlaneUrl' | 'localAllow' | 'reservedPorts'
>;

/** The firewall chain of a uid range (iptables names are at most 28 characters). */
export const chainName = (range: [number, number]) => `AC_SBX_${range[0]}`;

/**
 * The chain's two jumps from OUTPUT: every packet of the range's uids; and SYN-ACKs that belong to no
 * socket, which is how a SYN cookie leaves (a listener whose queue is full, as a sandbox can make its
 * own): the owner match cannot see their uid, so from a service's port they are dropped whoever sent them.
 */
const jumps = (range: [number, number]) => [
  ['-m', 'owner', '--uid-owner', `${range[0]}-${range[1]}`, '-j', chainName(range)],
  [
    '-p',
    'tcp',
    '--tcp-flags',
    'SYN,ACK',
    'SYN,ACK',
    '-m',
    'owner',
    '!',
    '--socket-exists',
    '-j',
    `${chainName(range)}_NS`,
  ],
];

async function hostPorts(pairs: string[]): Promise<{ address: string; family: 4 | 6; port: number }[]> {
  const out: { address: string; family: 4 | 6; port: number }[] = [];
  for (const pair of pairs) {
    const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(pair);
    if (!m) throw new Error(`not host:port: ${pair}`);
    const [, host, port] = m;
    const addresses = isIP(host!) ? [{ address: host!, family: isIP(host!) }] : await dns.lookup(host!, { all: true });
    for (const a of addresses) out.push({ address: a.address, family: a.family === 6 ? 6 : 4, port: Number(port) });
  }
  return out;
}

/** iptables-restore input for one family: the chain (flushed and refilled atomically) and its jump. */
function rules(
  chain: string,
  allowed: { address: string; port: number }[],
  reserved: number[],
  missingJumps: string[][],
  linkLocal: string,
): string {
  const local = '-m addrtype --dst-type LOCAL';
  // multiport takes at most 15 ports a rule.
  const groups = Array.from({ length: Math.ceil(reserved.length / 15) }, (_, i) =>
    reserved.slice(i * 15, i * 15 + 15).join(','),
  );
  return [
    '*filter',
    `:${chain} - [0:0]`,
    `:${chain}_NS - [0:0]`,
    ...groups.map((ports) => `-A ${chain}_NS -p tcp -m multiport --sports ${ports} -j DROP`),
    // Before the replies pass: a listener of a sandbox on a service port (the api's, after the api died)
    // sends no SYN-ACK and no datagram, so no client's key or request ever reaches it.
    ...groups.flatMap((ports) => [
      `-A ${chain} -p tcp -m multiport --sports ${ports} --tcp-flags SYN,ACK SYN,ACK -j DROP`,
      `-A ${chain} -p udp -m multiport --sports ${ports} -j DROP`,
    ]),
    `-A ${chain} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN`,
    ...allowed.map((a) => `-A ${chain} -p tcp -d ${a.address} --dport ${a.port} -j RETURN`),
    `-A ${chain} -p udp --dport 53 ${local} -j RETURN`,
    `-A ${chain} -p tcp --dport 53 ${local} -j RETURN`,
    `-A ${chain} ${local} -p tcp -j REJECT --reject-with tcp-reset`,
    `-A ${chain} ${local} -j REJECT`,
    // Broadcast and multicast reach local listeners too; a published port is a local one rewritten
    // (DNAT); link-local addresses include cloud metadata services (169.254.169.254) and their credentials.
    `-A ${chain} -m addrtype --dst-type ${linkLocal.includes(':') ? 'MULTICAST' : 'BROADCAST,MULTICAST'} -j REJECT`, // IPv6 has no broadcast
    `-A ${chain} -m conntrack --ctstate DNAT -j REJECT`,
    `-A ${chain} -d ${linkLocal} -j REJECT`,
    ...missingJumps.map((jump) => `-I OUTPUT 1 ${jump.join(' ')}`),
    'COMMIT',
    '',
  ].join('\n');
}

function restore(command: string, input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(trustedProgram(command, 'iptables'), ['--noflush'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}: ${err.trim()}`)),
    );
    child.stdin.end(input);
  });
}

/** The chain's jump is checked at every start: a firewall flushed by another tool is put back. */
export async function ensureSandboxFirewall(opts: SandboxFirewallOptions): Promise<void> {
  for (const cmd of ['iptables', 'ip6tables']) {
    for (const jump of jumps(opts.uidRange)) {
      if (
        !(await run(cmd, ['-C', 'OUTPUT', ...jump]).then(
          () => true,
          () => false,
        ))
      )
        return installSandboxFirewall(opts);
    }
  }
}

export async function installSandboxFirewall(opts: SandboxFirewallOptions): Promise<void> {
  const chain = chainName(opts.uidRange);
  const range = opts.uidRange;
  const api = new URL(opts.controlPlaneUrl);
  const reserved = [...new Set(opts.reservedPorts)].sort((a, b) => a - b);
  const allowed = await hostPorts([
    `${api.hostname}:${api.port || (api.protocol === 'https:' ? 443 : 80)}`,
    ...opts.localAllow,
  ]);
  for (const [family, command, check] of [
    [4, 'iptables-restore', 'iptables'],
    [6, 'ip6tables-restore', 'ip6tables'],
  ] as const) {
    const missing: string[][] = [];
    for (const jump of jumps(range))
      if (
        !(await run(check, ['-C', 'OUTPUT', ...jump]).then(
          () => true,
          () => false,
        ))
      )
        missing.push(jump);
    try {
      await restore(
        command,
        rules(
          chain,
          allowed.filter((a) => a.family === family),
          reserved,
          missing,
          family === 4 ? '169.254.0.0/16' : 'fe80::/10',
        ),
      );
    } catch (e) {
      throw new Error(
        `the firewall rule of process sandboxes could not be installed (${(e as Error).message}); install iptables, or set SANDBOX_PROCESS_ISOLATION=none`,
        { cause: e },
      );
    }
  }
}

/** Removes the firewall chain of a uid range (an operator's clean-up; the tests' own). */
export async function removeSandboxFirewall(range: [number, number]): Promise<void> {
  const chain = chainName(range);
  for (const cmd of ['iptables', 'ip6tables']) {
    for (const jump of jumps(range)) {
      for (let i = 0; i < 10; i++) {
        if (
          !(await run(cmd, ['-D', 'OUTPUT', ...jump]).then(
            () => true,
            () => false,
          ))
        )
          break;
      }
    }
    for (const c of [chain, `${chain}_NS`]) {
      await run(cmd, ['-F', c]).catch(() => undefined);
      await run(cmd, ['-X', c]).catch(() => undefined);
    }
  }
}
