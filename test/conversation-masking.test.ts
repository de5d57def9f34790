/** Pure logic of the agent: secret values hidden in what tools and hooks report, and the project's two masks. */
import { maskSecrets, secretValues } from '../src/runtime/agent/conversation-masking';
import { SECRET_MASK as ORGANIZATIONS_MASK } from '../src/schemas/organizations';
import { AGENT_SECRET_MASK, SECRET_MASK } from '../src/schemas/secret-mask';

const settings = (secrets: Record<string, string>, apiKey?: string | null) => ({
  secrets,
  agent: {
    llm: {
      model: 'm',
      base_url: 'http://llm',
      api_key: apiKey,
      stream: false,
      timeout_s: 600,
      log_completions: false,
      usage_id: 'default',
    },
  },
});

describe('secret masks', () => {
  it('keeps the API mask and the agent mask as they were (clients and stored logs rely on them)', () => {
    expect(SECRET_MASK).toBe('**********');
    expect(AGENT_SECRET_MASK).toBe('<secret-hidden>');
    expect(ORGANIZATIONS_MASK).toBe(SECRET_MASK);
  });
});

describe('secretValues', () => {
  it('takes the secrets and the LLM key, leaving out values too short to mask', () => {
    expect(secretValues(settings({ TOKEN: 'tok-123456', PIN: '123', EMPTY: '', FOUR: 'abcd' }, 'sk-live-9'))).toEqual([
      'tok-123456',
      'abcd',
      'sk-live-9',
    ]);
    expect(secretValues(settings({}, null))).toEqual([]);
    expect(secretValues(settings({}))).toEqual([]);
  });
});

describe('maskSecrets', () => {
  it('masks every occurrence in every string, however deep, and leaves keys and other values alone', () => {
    const value = {
      content: [{ type: 'text', text: 'export TOKEN=tok-123456; curl -H "auth: tok-123456"' }],
      exit_code: 0,
      is_error: false,
      missing: null,
      'tok-123456': ['sk-live-9', { nested: 'key sk-live-9!' }],
    };
    expect(maskSecrets(value, ['tok-123456', 'sk-live-9'])).toEqual({
      content: [{ type: 'text', text: 'export TOKEN=<secret-hidden>; curl -H "auth: <secret-hidden>"' }],
      exit_code: 0,
      is_error: false,
      missing: null,
      'tok-123456': ['<secret-hidden>', { nested: 'key <secret-hidden>!' }],
    });
  });

  it('does not change its input, and hands it back as it is when there is nothing to hide', () => {
    const value = { stdout: 'tok-123456' };
    expect(maskSecrets(value, ['tok-123456'])).toEqual({ stdout: '<secret-hidden>' });
    expect(value.stdout).toBe('tok-123456');
    expect(maskSecrets(value, [])).toBe(value);
    expect(maskSecrets('plain text', ['tok-123456'])).toBe('plain text');
  });

  it('sees a secret only whole inside one string: one split across values stays as it is', () => {
    // A limit, not a goal: tools report their output as one string, so a split is rare.
    expect(maskSecrets(['tok-12', '3456'], ['tok-123456'])).toEqual(['tok-12', '3456']);
    expect(maskSecrets({ stdout: 'tok-12', stderr: '3456' }, ['tok-123456'])).toEqual({
      stdout: 'tok-12',
      stderr: '3456',
    });
    expect(maskSecrets({ stdout: 'tok-12\n3456' }, ['tok-123456'])).toEqual({ stdout: 'tok-12\n3456' });
  });

  it('masks secrets in their order, so of two overlapping ones the first listed wins', () => {
    expect(maskSecrets('abcdef', ['abcdef', 'abcd'])).toBe('<secret-hidden>');
    expect(maskSecrets('abcdef', ['abcd', 'abcdef'])).toBe('<secret-hidden>ef');
    expect(maskSecrets('tok-1234 and sk-99999', ['tok-1234', 'sk-99999'])).toBe('<secret-hidden> and <secret-hidden>');
  });
});
