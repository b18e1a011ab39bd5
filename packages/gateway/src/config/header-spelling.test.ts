import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cgiSpelling,
  compareSpelling,
  NOT_SPELLING,
  OTHER_SPELLING,
  SAME_SPELLING,
} from './header-spelling.js';

describe('header spellings', () => {
  it('reads every character but a letter or a digit as `-`, and upper case as lower', () => {
    expect(cgiSpelling('X_Tenant.Id')).toBe('x-tenant-id');
    expect(compareSpelling('x-tenant-id', 'x-tenant-id')).toBe(SAME_SPELLING);
    for (const other of ['x_tenant_id', 'X-Tenant-Id', 'x.tenant.id', 'x-tenant~id', 'x tenant\u00e9id'])
      expect(compareSpelling(other, 'x-tenant-id')).toBe(OTHER_SPELLING);
    for (const not of ['x-tenant-i', 'x-tenant-ix', 'y-tenant-id', 'x-tenantxid', 'x-tenant-idd'])
      expect(compareSpelling(not, 'x-tenant-id')).toBe(NOT_SPELLING);
  });

  it('agrees with the spelling it compares against, for any name', () => {
    const char = fc.constantFrom(...'aAzZ09-_.~ \u00e9xX'.split(''));
    const name = fc.array(char, { minLength: 1, maxLength: 8 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(name, name, (a, b) => {
        const spelling = cgiSpelling(b);
        const got = compareSpelling(a, spelling);
        if (a === spelling) expect(got).toBe(SAME_SPELLING);
        else if (cgiSpelling(a) === spelling) expect(got).toBe(OTHER_SPELLING);
        else expect(got).toBe(NOT_SPELLING);
      }),
      { numRuns: 2000 },
    );
  });
});
