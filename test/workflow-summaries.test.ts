/** What the Temporal UI shows of a start: the service's facts first, the user's values quoted on one line. */
import { shown, workflowSummaries, type StartTaskWorkflowInput } from '../src/temporal/shared';

const input = (request: StartTaskWorkflowInput['request']): StartTaskWorkflowInput => ({
  taskId: 'task-1',
  userId: 'user-a',
  request,
  settings: { sandboxWaitMs: 1000, setupScriptTimeoutMs: 1000 },
});

describe('workflow summaries', () => {
  it('names the user first and the repository and branch as quoted values', () => {
    const s = workflowSummaries.startTask(
      input({ selected_repository: 'acme/app', selected_branch: 'main', plugins: [{ source: 'x' }] }),
    );
    expect(s.staticSummary).toBe('Start for user user-a: "acme/app" branch "main"');
    expect(s.staticDetails.split('\n')).toEqual([
      '- user: user-a',
      '- conversation: task-1',
      '- repository: "acme/app" branch "main"',
      '- sandbox: a new one',
      '- plugins: 1',
    ]);
    expect(workflowSummaries.startTask(input({})).staticSummary).toBe('Start for user user-a: an empty workspace');
  });

  it('a request cannot pass for another user, add lines, or run on', () => {
    const s = workflowSummaries.startTask(
      input({
        selected_repository: 'acme/app for user victim',
        selected_branch: 'main\n- user: victim\n- sandbox: [x](https://evil.example)',
        sandbox_id: 'a'.repeat(500),
      }),
    );
    expect(s.staticSummary.startsWith('Start for user user-a: "acme/app for user victim"')).toBe(true);
    const lines = s.staticDetails.split('\n');
    expect(lines).toHaveLength(5);
    expect(lines.filter((l) => l.startsWith('- user:'))).toEqual(['- user: user-a']);
    expect(lines[3]!.length).toBeLessThan(140);
  });

  it('shown() keeps one line of at most 120 characters, in JSON quotes', () => {
    expect(shown('a\u2028b\r\nc\u0000')).toBe('"a b  c "');
    expect(JSON.parse(shown('x'.repeat(300)))).toHaveLength(120);
    expect(shown('say "hi"')).toBe('"say \\"hi\\""');
  });
});
