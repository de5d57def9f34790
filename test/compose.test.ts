/** The compose file checked against the config module (test/docker/compose.test.ts runs it on a Docker engine). */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ENV_VARIABLES, loadConfig } from '../src/config';
import { TEMPORAL_SERVER_VERSION, TEMPORAL_UI_VERSION } from '../scripts/servers/paths';

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

/** The script a service's command runs with node (`node dist/...js`, also inside `sh -c "... exec node ..."`). */
const entryOf = (command: string[]) => /\bnode (dist\/\S+\.js)/.exec(command.join(' '))?.[1];

describe('docker-compose.yml', () => {
  it('runs the production shape: PostgreSQL, the real Temporal server with its jobs and UI, MongoDB 7+, the gateway, the apis and the workers', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'api',
      'gateway',
      'mongodb',
      'postgresql',
      'temporal',
      'temporal-namespace',
      'temporal-schema',
      'temporal-ui',
      'worker',
    ]);
    expect(Number(compose.services.mongodb.image.match(/^mongo:(\d+)/)[1])).toBeGreaterThanOrEqual(7);
    // The registry's images of the versions the project builds (a variable names another).
    expect(compose.services.postgresql.image).toBe('${POSTGRES_IMAGE:-postgres:16}');
    expect(compose.services.temporal.image).toBe(
      `\${TEMPORAL_SERVER_IMAGE:-temporalio/server:${TEMPORAL_SERVER_VERSION.slice(1)}}`,
    );
    expect(compose.services['temporal-ui'].image).toBe(
      `\${TEMPORAL_UI_IMAGE:-temporalio/ui:${TEMPORAL_UI_VERSION.slice(1)}}`,
    );
    for (const job of ['temporal-schema', 'temporal-namespace']) {
      expect(compose.services[job].image).toBe(
        `\${TEMPORAL_ADMIN_TOOLS_IMAGE:-temporalio/admin-tools:${TEMPORAL_SERVER_VERSION.slice(1)}}`,
      );
      expect(compose.services[job].restart).toBe('no');
    }
    // Loopback only by default: the UI has no login and can terminate workflows.
    expect(byDefault(compose.services['temporal-ui'].ports)).toEqual(['127.0.0.1:8233:8080']);
  });

  it('starts Temporal in order: its schema job after PostgreSQL is healthy, the server after the job succeeded, the apps after the namespace job', () => {
    expect(compose.services['temporal-schema'].depends_on).toEqual({ postgresql: { condition: 'service_healthy' } });
    expect(compose.services.temporal.depends_on).toEqual({
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
    for (const name of ['api', 'worker', 'temporal-ui']) {
      expect(compose.services[name].depends_on['temporal-namespace']).toEqual({
        condition: 'service_completed_successfully',
      });
    }
    // The server's configuration is the mounted template, which reads the password from the environment.
    const entry = compose.services.temporal.entrypoint.join(' ');
    expect(entry).toContain('temporal-server --root /etc/agent-control --config temporal --env docker');
    expect(compose.services.temporal.volumes).toEqual(['./deploy/temporal:/etc/agent-control/temporal:ro']);
    const template = fs.readFileSync(path.join(root, 'deploy/temporal/docker.yaml'), 'utf8');
    expect(template.split('\n')[0]).toBe('# enable-template');
    expect(template).toContain(`password: {{ env "POSTGRES_PASSWORD" | toJson }}`);
    expect(
      template.match(/password: .*/g)!.every((l) => l === 'password: {{ env "POSTGRES_PASSWORD" | toJson }}'),
    ).toBe(true);
    for (const script of ['setup-schema.sh', 'create-namespace.sh'])
      expect(fs.existsSync(path.join(root, 'deploy/temporal', script))).toBe(true);
  });

  it.each(['api', 'worker', 'gateway'])(
    '%s: built from the Dockerfile, its variables known to the config module and valid',
    (name) => {
      const svc = compose.services[name];
      expect(svc.build).toBe('.');
      expect(fs.existsSync(path.join(root, 'Dockerfile'))).toBe(true);
      const env = composeEnv(svc);
      for (const key of Object.keys(env)) expect(ENV_VARIABLES).toContain(key);
      const config = loadConfig(env, false);
      if (name === 'gateway') {
        expect(config.gateway.upstream).toEqual({ host: 'api', port: 8000 });
      } else {
        expect(env.SECRETS_KEY).toBeDefined();
        expect(config.mongo.uri).toMatch(/^mongodb:\/\/mongodb:27017/);
        expect(config.temporal.address).toBe('temporal:7233');
      }
      const entry = entryOf(svc.command);
      expect(entry).toBeDefined();
      expect(fs.existsSync(path.join(root, entry!.replace(/^dist\//, '').replace(/\.js$/, '.ts')))).toBe(true);
    },
  );

  it('scales the api and the worker: neither publishes a host port nor has a fixed name; the gateway publishes the port the apis listen on', () => {
    for (const name of ['api', 'worker']) {
      expect(compose.services[name].ports).toBeUndefined();
      expect(compose.services[name].container_name).toBeUndefined();
    }
    const api = loadConfig(composeEnv(compose.services.api), false).api;
    expect(api.host).toBe('0.0.0.0');
    expect(compose.services.api.expose).toEqual([String(api.port)]);
    const gateway = loadConfig(composeEnv(compose.services.gateway), false);
    expect(gateway.gateway.upstream).toEqual({ host: 'api', port: api.port });
    expect(byDefault(compose.services.gateway.ports)).toEqual([`${gateway.api.port}:${gateway.api.port}`]);
    // Each worker its own data directory (its WORKER_HOST), and its runtimes at its own address.
    expect(compose.services.worker.volumes).toEqual(['/data']);
    expect(compose.services.worker.command.join(' ')).toContain('SANDBOX_PROCESS_HOST="$$(hostname -i');
  });
});
