import { createRequire } from 'node:module';
import { ErrorCode, SluiceError } from '../core/index.js';

// Resolved from this package's own location, as a static import would be; the peers loaded here are CommonJS
// packages, so the instance is the one an application's own `import` of them gets.
const requireHere = createRequire(import.meta.url);

/**
 * Loads an optional peer package that an entry point needs at run time. A static import of a missing peer fails
 * before any of the entry point's code runs, with Node's ERR_MODULE_NOT_FOUND naming neither the entry point nor
 * the fix; this names both.
 *
 * @param name - the peer package, for example `prom-client`.
 * @param entry - the entry point that needs it, for example `sluice/prometheus`.
 * @returns the package's exports.
 * @throws SluiceError `ERR_MISSING_PEER` when the package is not installed (`details.package`, `details.entry`);
 * any other loading error as it is.
 */
export function requirePeer<T>(name: string, entry: string): T {
  try {
    return requireHere(name) as T;
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown };
    if (e.code === 'MODULE_NOT_FOUND' && String(e.message).includes(`'${name}'`)) {
      throw new SluiceError(
        ErrorCode.MissingPeer,
        `${entry} needs the package "${name}", which is not installed: npm install ${name}`,
        { package: name, entry },
        { cause: error },
      );
    }
    throw error;
  }
}
