import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { HELP_TEXT } from './help-text.js';

it('names the JSON Schema where this package has it, not its path in the repository', () => {
  const path = /the JSON Schema is (\S+);/.exec(HELP_TEXT)?.[1];
  // Installed, the package is node_modules/@sluice/gateway: the path is found from the running code.
  expect(path).toBe(fileURLToPath(new URL('../../schema/rate-limits.schema.json', import.meta.url)));
  expect(existsSync(path as string)).toBe(true);
});
