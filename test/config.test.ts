import { ConfigError, ENV_VARIABLES, loadConfig, requireServers } from '../src/config';

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env, false);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return [...(e as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
};

describe('config', () => {
  it('has working defaults for the embedded service', () => {
    const c = loadConfig({}, false);
    expect(c.api).toEqual({ host: '127.0.0.1', port: 8000, publicBaseUrl: 'http://127.0.0.1:8000' });
    expect(c.sandboxes.controlPlaneUrl).toBe('http://127.0.0.1:8000');
    expect(c.mongo.uri).toBeUndefined();
    expect(c.temporal).toEqual({
      address: undefined,
      namespace: 'default',
      taskQueue: 'agent-control',
      workerHost: undefined,
    });
    expect(loadConfig({ WORKER_HOST: 'host-b.1' }).temporal.workerHost).toBe('host-b.1');
    expect(() => loadConfig({ WORKER_HOST: 'a/b' })).toThrow(/WORKER_HOST="a\/b" is invalid/);
    for (const bad of ['0.0.0.0.1', '0.0.0.0', '255.255.255.255', '224.0.0.1', 'example.com'])
      expect(() => loadConfig({ SANDBOX_PROCESS_HOST: bad })).toThrow(/SANDBOX_PROCESS_HOST/);
    expect(loadConfig({ SANDBOX_PROCESS_HOST: '10.1.2.3' }).sandboxes.processHost).toBe('10.1.2.3');
    expect(() => loadConfig({ SANDBOX_HOST_LOST_MS: '1' })).toThrow(
      /SANDBOX_HOST_LOST_MS="1" is invalid: expected milliseconds, at least 2000/,
    );
    expect(c.sandboxes).toMatchObject({ processHost: '127.0.0.1', hostLostMs: 300_000 });
    expect(c.limits).toEqual({
      maxBodyBytes: 5 * 1024 * 1024,
      maxEventsPerConversation: 1_000_000,
      requestTimeoutMs: 60_000,
      answerDeadlineMs: 9000,
    });
    expect(c.live).toEqual({ pollMs: 10, idlePollMs: 250, retainSlots: 100 });
    expect(c.embedded).toMatchObject({ mongoPort: 27017, postgresPort: 27432, ferretdbBackend: 'postgresql' });
    expect(c.postgres).toEqual({ url: undefined });
    expect(c.log).toEqual({ level: 'info', format: 'json' });
    expect(loadConfig({}, true).log.format).toBe('pretty');
  });

  it('reads and converts every kind of value', () => {
    const c = loadConfig(
      {
        API_PORT: '9000',
        MONGODB_URI: 'mongodb://db:27017/?replicaSet=rs0',
        TEMPORAL_ADDRESS: 'temporal:7233',
        TEMPORAL_NAMESPACE: 'prod',
        LOG_LEVEL: 'debug',
        LOG_FORMAT: 'json',
        MAX_EVENTS_PER_CONVERSATION: '5000',
        PUBLIC_BASE_URL: 'https://agents.example.com/',
      },
      true,
    );
    expect(c.api.port).toBe(9000);
    expect(c.api.publicBaseUrl).toBe('https://agents.example.com');
    expect(c.sandboxes.controlPlaneUrl).toBe('https://agents.example.com'); // runtimes report where clients call
    expect(
      loadConfig(
        { PUBLIC_BASE_URL: 'https://agents.example.com', SANDBOX_CONTROL_PLANE_URL: 'http://api:8000/' },
        false,
      ).sandboxes.controlPlaneUrl,
    ).toBe('http://api:8000');
    expect(c.mongo.uri).toBe('mongodb://db:27017/?replicaSet=rs0');
    expect(c.temporal.address).toBe('temporal:7233');
    expect(c.temporal.namespace).toBe('prod');
    expect(c.log).toEqual({ level: 'debug', format: 'json' });
    expect(c.limits.maxEventsPerConversation).toBe(5000);
  });

  it('names the variable, the value and the expected form', () => {
    expect(problems({ API_PORT: 'eighty' })).toEqual([
      'API_PORT="eighty" is invalid: expected a port number for the api (0-65535; 0 picks a free port)',
    ]);
    expect(problems({ MONGODB_URI: 'localhost:27017' })[0]).toMatch(
      /^MONGODB_URI=<redacted> is invalid: expected a MongoDB connection string/,
    );
    // Values that may hold secrets are never echoed.
    const bad = problems({ SECRETS_KEY: 'c2VjcmV0LWJ1dC10b28tc2hvcnQ=' })[0]!;
    expect(bad).toMatch(/^SECRETS_KEY=<redacted> is invalid: expected 32 random bytes/);
    expect(bad).not.toContain('c2VjcmV0');
    const pg = problems({ POSTGRES_URL: 'postgres://u:pa#ss word@host:5432/db' })[0]!;
    expect(pg).toMatch(/^POSTGRES_URL=<redacted> is invalid: expected a postgres:\/\/ connection string/);
    expect(pg).not.toContain('pa#ss');
    expect(
      problems({ ISSUE_TRACKER_B_ORIGINS: 'https://jira.acme.example, https://jira.acme.example/rest' })[0],
    ).toMatch(
      /^ISSUE_TRACKER_B_ORIGINS=.* is invalid: expected origins \(http\(s\):\/\/host\[:port\], nothing after\), not https:\/\/jira\.acme\.example\/rest$/,
    );
    expect(problems({ ISSUE_TRACKER_B_ORIGINS: 'ftp://files.acme.example' })[0]).toMatch(
      /not ftp:\/\/files\.acme\.example$/,
    );
    expect(
      loadConfig({ ISSUE_TRACKER_B_ORIGINS: ' https://Jira.Acme.example:443/ ,http://10.0.0.5:8080' }, false)
        .callbackHosts.issueTrackerBOrigins,
    ).toEqual(['https://jira.acme.example', 'http://10.0.0.5:8080']);
    expect(loadConfig({}, false).callbackHosts).toEqual({
      gitHostBApiUrl: 'https://gitlab.com/api/v4',
      gitHostCApiUrl: 'https://api.bitbucket.org/2.0',
      issueTrackerAApiUrl: 'https://api.atlassian.com',
      issueTrackerBOrigins: [],
      chatApiUrl: 'https://slack.com/api',
    });
    expect(problems({ FERRETDB_BACKEND: 'mysql' })[0]).toMatch(
      /^FERRETDB_BACKEND="mysql" is invalid: expected postgresql or sqlite/,
    );
    expect(problems({ TEMPORAL_ADDRESS: 'temporal' })[0]).toMatch(
      /^TEMPORAL_ADDRESS="temporal" is invalid: expected host:port/,
    );
    expect(problems({ LOG_LEVEL: 'loud' })[0]).toBe(
      'LOG_LEVEL="loud" is invalid: expected one of fatal, error, warn, info, debug, trace, silent',
    );
    expect(problems({ MAX_BODY_BYTES: '-1' })[0]).toMatch(
      /^MAX_BODY_BYTES="-1" is invalid: expected a positive integer/,
    );
    expect(problems({ EMBEDDED_TEMPORAL_PORT: '70000' })[0]).toMatch(
      /^EMBEDDED_TEMPORAL_PORT="70000" is invalid: expected a port number/,
    );
  });

  it('lists every bad variable at once, and the message says so', () => {
    const list = problems({ API_PORT: 'x', LOG_FORMAT: 'xml', MONGODB_DB: 'a.b' });
    expect(list.map((p) => p.split('=')[0])).toEqual(['API_PORT', 'MONGODB_DB', 'LOG_FORMAT']);
    expect(() => loadConfig({ API_PORT: 'x' }, false)).toThrow(/^Invalid configuration:\n {2}- API_PORT/);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ API_PORT: '', MONGODB_URI: '' }, false).api.port).toBe(8000);
  });

  it('requires both servers outside the launcher', () => {
    expect(() => requireServers(loadConfig({}, false))).toThrow(
      /MONGODB_URI .*required[\s\S]*TEMPORAL_ADDRESS .*required/,
    );
    expect(requireServers(loadConfig({ MONGODB_URI: 'mongodb://a:1', TEMPORAL_ADDRESS: 'b:2' }, false))).toEqual({
      mongoUri: 'mongodb://a:1',
      temporalAddress: 'b:2',
    });
  });

  it('exports the variable names the compose file and README use', () => {
    expect(ENV_VARIABLES).toEqual(
      expect.arrayContaining(['API_PORT', 'MONGODB_URI', 'TEMPORAL_ADDRESS', 'TEMPORAL_TASK_QUEUE', 'DATA_DIR']),
    );
  });
});
