/** The operator's render guard for one test file: started before its tests and closed after them, as the operator does. */
import { afterAll, beforeAll } from 'vitest';
import { renderGuardSettings } from '../../src/config.ts';
import { RenderGuardServer } from '../../src/steps/render-guard/render-guard-server.ts';

/** Registers the file's beforeAll and afterAll; call the result inside a test for the running guard. */
export function renderGuardForFile(): () => RenderGuardServer {
  let guard: RenderGuardServer | undefined;
  beforeAll(async () => {
    guard = await RenderGuardServer.start(renderGuardSettings().runtimeDir);
  });
  afterAll(async () => {
    await guard?.close();
  });
  return () => {
    if (guard === undefined) throw new Error('the render guard starts in beforeAll: ask for it inside a test');
    return guard;
  };
}
