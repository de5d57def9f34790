/** The compose file checked against the config module (test/docker/compose.test.ts runs it on a Docker engine). */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ENV_VARIABLES, loadConfig } from '../src/config';
import { SEARCH_ATTRIBUTES } from '../src/temporal/search-attributes';

const root = path.resolve(__dirname, '..');
const compose = parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true });

/** A service's environment as compose would pass it, with valid stand-ins for what the user supplies (`${VAR:?...}`). */
function composeEnv(svc: { environment: Record<string, string> }): Record<string, string> {
  const supplied: Record<string, string> = { SECRETS_KEY: Buffer.alloc(32, 1).toString('base64') };
  return Object.fromEntries(
    Object.entries(svc.environment).map(([k, v]) => {
      const m = /^\$\{(\w+):\?[^}]*\}$/.exec(v);
      if (m) expect(m[1]).toBe(k);
      return [k, m ? supplied[m[1]!]! : v];
    }),
  );
}

/** Published ports as compose reads them when the user sets none of the variables they name (`${VAR:-default}`). */
const byDefault = (ports: string[]) => ports.map((p) => p.replace(/\$\{\w+:-([^}]*)\}/g, '$1'));

describe('docker-compose.yml', () => {
  it('runs MongoDB 7+, Temporal with its UI, the api and the worker', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'mongodb', 'temporal', 'worker']);
    expect(Number(compose.services.mongodb.image.match(/^mongo:(\d+)/)[1])).toBeGreaterThanOrEqual(7);
    expect(compose.services.temporal.command).toEqual(expect.arrayContaining(['server', 'start-dev', '--ui-port=8233']));
    expect(byDefault(compose.services.temporal.ports)).toContain('8233:8233');
  });

  it('registers every search attribute the workflows use', () => {
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
      expect(compose.services.temporal.command).toContain(`--search-attribute=${name}=${type}`);
    }
  });

  it.each(['api', 'worker'])('%s: built from the Dockerfile, its variables known to the config module and valid', (name) => {
    const svc = compose.services[name];
    expect(svc.build).toBe('.');
    expect(fs.existsSync(path.join(root, 'Dockerfile'))).toBe(true);
    const env = composeEnv(svc);
    for (const key of Object.keys(env)) expect(ENV_VARIABLES).toContain(key);
    expect(env.SECRETS_KEY).toBeDefined();
    const config = loadConfig(env, false);
    expect(config.mongo.uri).toMatch(/^mongodb:\/\/mongodb:27017/);
    expect(config.temporal.address).toBe('temporal:7233');
    expect(svc.depends_on).toEqual(expect.objectContaining({ mongodb: expect.anything(), temporal: expect.anything() }));
    const entry = svc.command[svc.command.length - 1];
    expect(fs.existsSync(path.join(root, entry.replace(/^dist\//, '').replace(/\.js$/, '.ts')))).toBe(true);
  });

  it('publishes the api on the port it listens on', () => {
    const api = compose.services.api;
    const port = loadConfig(composeEnv(api), false).api.port;
    expect(byDefault(api.ports)).toContain(`${port}:${port}`);
    expect(api.environment.API_HOST).toBe('0.0.0.0');
  });
});
