import { describe, expect, it } from 'vitest';
import { ErrorCode, SluiceError } from '../core/index.js';
import { requirePeer } from './peer-package.js';

describe('requirePeer', () => {
  it('returns an installed package', () => {
    const fp = requirePeer<{ default: unknown }>('fastify-plugin', 'sluice/fastify');
    expect(typeof fp.default).toBe('function');
  });

  it('names the entry point, the package and the command for a package that is not installed', () => {
    let caught: unknown;
    try {
      requirePeer('sluice-no-such-peer', 'sluice/example');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SluiceError);
    expect(caught).toMatchObject({
      code: ErrorCode.MissingPeer,
      message:
        'sluice/example needs the package "sluice-no-such-peer", which is not installed: npm install sluice-no-such-peer',
      details: { package: 'sluice-no-such-peer', entry: 'sluice/example' },
    });
  });
});
