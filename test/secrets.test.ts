import { SecretBox } from '../src/auth/secret-box';
import { maskSecrets, openSecrets, sealSecrets } from '../src/orgs/organization-secrets';
import { mergePatch, newOrganization } from '../src/orgs/organizations-service';
import { SECRET_MASK } from '../src/schemas/organizations';

describe('secret box (AES-256-GCM)', () => {
  const box = new SecretBox(SecretBox.generateKey());

  it('seals to a fresh ciphertext each time and opens it back', () => {
    const a = box.seal('sk-123');
    const b = box.seal('sk-123');
    expect(a).toMatch(/^enc:v1:/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('sk-123');
    expect(box.open(a)).toBe('sk-123');
  });

  it('refuses a tampered value and a wrong key', () => {
    const sealed = box.seal('secret');
    const raw = Buffer.from(sealed.slice(7), 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => box.open('enc:v1:' + raw.toString('base64'))).toThrow();
    expect(() => new SecretBox(SecretBox.generateKey()).open(sealed)).toThrow();
    expect(() => new SecretBox(Buffer.alloc(16).toString('base64'))).toThrow(/32 bytes/);
  });
});

describe('organization secrets', () => {
  const box = new SecretBox(SecretBox.generateKey());
  const org = () => {
    const o = newOrganization('acme', false);
    if (o.agent_settings.agent_kind === 'platform') o.agent_settings.llm = { model: 'm', api_key: 'sk-1' };
    o.search_api_key = 'search-1';
    return o;
  };

  it('seals, masks and opens every secret field, and nothing else', () => {
    const plain = org();
    const sealed = sealSecrets(plain, undefined, box);
    expect(sealed.search_api_key).toMatch(/^enc:v1:/);
    expect(sealed.agent_settings).toMatchObject({ llm: { model: 'm', api_key: expect.stringMatching(/^enc:v1:/) } });
    expect(sealed.sandbox_api_key).toBe('');
    const masked = maskSecrets(sealed);
    expect(masked.search_api_key).toBe(SECRET_MASK);
    expect(masked.sandbox_api_key).toBe('');
    expect(masked.agent_settings).toMatchObject({ llm: { model: 'm', api_key: SECRET_MASK } });
    expect(openSecrets(sealed, box)).toEqual(plain);
  });

  it('the mask keeps the stored secret', () => {
    const stored = sealSecrets(org(), undefined, box);
    const resent = sealSecrets(maskSecrets(stored), stored, box);
    expect(resent.search_api_key).toBe(stored.search_api_key);
    expect(openSecrets(resent, box).agent_settings).toMatchObject({ llm: { api_key: 'sk-1' } });
  });
});

describe('merge patch', () => {
  it('merges objects key by key and replaces everything else', () => {
    expect(mergePatch({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, e: 2 })).toEqual({
      a: { b: 1, c: [3] },
      d: 1,
      e: 2,
    });
    expect(mergePatch({ a: { b: 1 } }, { a: 5 })).toEqual({ a: 5 });
  });
});
