/**
 * TCP probes for isolation tests: connections tried from inside a container with the image's node (one
 * `host:port connected|timeout|<errno code>` line per target), and from the test process itself.
 */
import net from 'node:net';

/** How long a probe waits for a TCP connection before it calls the target silent. */
export const PROBE_MS = 2500;

/**
 * TCP connections from inside a sandbox, with the image's node (it has no curl): one line per target,
 * `host:port connected|timeout|<errno code>`, all tried at once.
 */
export const PROBE_JS =
  'const net=require("net");' +
  'Promise.all(process.argv.slice(1).map((t)=>new Promise((r)=>{' +
  'const i=t.lastIndexOf(":");const s=net.connect({host:t.slice(0,i),port:Number(t.slice(i+1))});' +
  `const done=(v)=>{clearTimeout(k);s.destroy();r(t+" "+v)};const k=setTimeout(()=>done("timeout"),${PROBE_MS});` +
  's.on("connect",()=>done("connected"));s.on("error",(e)=>done(e.code))' +
  '}))).then((lines)=>console.log(lines.join("\\n")))';
/** The shell command that runs PROBE_JS on `targets`. */
export const probeCommand = (targets: string[]) => `timeout 10 node -e '${PROBE_JS}' ${targets.join(' ')}`;
/** PROBE_JS's output, by target. */
export const parseProbe = (output: string): Record<string, string> =>
  Object.fromEntries(
    output
      .trim()
      .split('\n')
      .map((l) => l.split(' ') as [string, string]),
  );

/** The port of a URL or of `host:port`. */
export const portOf = (address: string) => Number(new URL(address.includes('://') ? address : `tcp://${address}`).port);

/** A TCP connection from the test process itself (the host). */
export const hostConnects = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(PROBE_MS, () => done(false));
    s.on('connect', () => done(true));
    s.on('error', () => done(false));
  });
