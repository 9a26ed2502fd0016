/**
 * `tasks get` shows the wait bound, and beside an answer on the pool's pace the guarantee on
 * timeouts alone (wait.worstCaseSeconds), so the CLI does not show an estimate as a guarantee.
 */
import { describe, expect, it } from 'vitest';
import { formatTask, plainStyle } from '../../client/cli/format.ts';
import { EXAMPLE_TASK, EXAMPLE_WAIT } from '../../runtime/api/examples.ts';

describe('Function: formatTask (a waiting task)', () => {
  it("shows an answer on the pool's pace, rounded up, with the bound on timeouts beside it", () => {
    // Act
    const text = formatTask({ ...EXAMPLE_TASK, wait: EXAMPLE_WAIT } as never, plainStyle);
    // Assess: 2.7 s reads 3s, not 2s
    expect(text).toMatch(/at most 3s more at the pool's pace \(20s however slowly slots free\)/);
  });

  it('shows a bound on timeouts alone as it is', () => {
    // Prepare
    const { worstCaseSeconds: _worst, assumedFreed: _freed, ...onTimeouts } = EXAMPLE_WAIT;
    // Act
    const text = formatTask({ ...EXAMPLE_TASK, wait: { ...onTimeouts, maxWaitSeconds: 24.1 } } as never, plainStyle);
    // Assess: 24.1 s reads 25s, not 24s
    expect(text).toMatch(/at most 25s more$/m);
  });
});
