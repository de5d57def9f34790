/**
 * The conversation contract's views of the workspace, on the conversation the earlier tests worked in
 * (conversation-contract-start.ts): a file (nothing outside the working directory), git changes and diff,
 * and the download of the whole log.
 */
import { loggedEvents } from './agent';
import type { TestApi } from './api';
import type { ContractConversation } from './conversation-contract-start';
import { unzip } from './zip';

export function contractViews(conversation: ContractConversation): void {
  let t: TestApi;
  let user: { userId: string; key: string };
  let id: string;
  const { handle } = conversation;

  beforeEach(() => {
    ({ t, user, id } = conversation);
  });

  it('serves the workspace: a file (nothing outside the working directory), git changes and diff, the download of the whole log', async () => {
    expect(
      (await t.request('GET', `/api/v1/app-conversations/${id}/file?file_path=hello.txt`, { key: user.key })).body,
    ).toBe('hello\nagain\n');
    for (const outside of ['/etc/passwd', '../../../../etc/passwd', `${(await handle()).workspace}/../runtime.log`]) {
      const r = await t.request(
        'GET',
        `/api/v1/app-conversations/${id}/file?file_path=${encodeURIComponent(outside)}`,
        { key: user.key },
      );
      expect([outside, r.status]).toEqual([outside, 400]);
    }
    expect(
      await t.request('GET', `/api/v1/app-conversations/${id}/git/changes?path=.`, { key: user.key }),
    ).toMatchObject({ status: 200, body: [{ status: 'ADDED', path: 'hello.txt' }] });
    const diff = await t.request('GET', `/api/v1/app-conversations/${id}/git/diff?path=README.md`, { key: user.key });
    expect(diff.status).toBe(200);
    expect(diff.body.original).toContain('# demo');
    expect(diff.body.modified).toBe(diff.body.original);

    const log = await loggedEvents(t, user.key, id);
    const res = await fetch(`${t.url}/api/v1/app-conversations/${id}/download`, {
      headers: { 'X-Access-Token': user.key },
    });
    expect(res.status).toBe(200);
    const entries = await unzip(Buffer.from(await res.arrayBuffer()));
    expect(entries.map(([name]) => name)).toEqual([
      'meta.json',
      ...log.map((_, i) => `events/${String(i + 1).padStart(8, '0')}.json`),
    ]);
    expect(entries.slice(1).map(([, text]) => JSON.parse(text).id)).toEqual(log.map((e) => e.id));
  }, 120_000);
}
