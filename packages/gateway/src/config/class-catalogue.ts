import type { KeyKind } from 'sluice/http';

/**
 * What one bucket of a class limits: `request` buckets are taken per HTTP request (endpoint rules), `connection`
 * buckets once per gateway connection when it is set up or resumed, never per request.
 */
export type ClassScope = 'request' | 'connection';

/** The scopes, in the order the schema lists them. */
export const CLASS_SCOPES: readonly ClassScope[] = Object.freeze(['request', 'connection']);

/** One class of a catalogue: its name, how its buckets are keyed, and what one bucket limits. */
export interface CatalogueClass {
  /** The class name, for example `rl.read`; its limits are `ratelimit.<name>.per_minute` and `.burst`. */
  readonly name: string;
  /** The key kind of `sluice/http` its buckets are keyed by (one bucket per class and key). */
  readonly key: KeyKind;
  readonly scope: ClassScope;
}

const entry = (name: string, key: KeyKind, scope: ClassScope = 'request'): CatalogueClass =>
  Object.freeze({ name, key, scope });

/**
 * The class catalogues `ratelimit.catalogue` loads. A catalogue fixes which classes exist and how each is keyed;
 * the limits stay with the operator (`ratelimit.<class>.per_minute` and `.burst`), because no default suits every
 * deployment and a class without limits must stop the start rather than limit by a guess.
 *
 * `standard` is the class table of the design document: client IP for failed credentials, device or token for
 * gateway connections, the principal for the REST classes, the agent for the agent runtime, the connection for
 * typing, the webhook id for incoming webhooks, the human for terminals and the host for hosts. `rl.typing` and
 * `rl.gateway_connect` belong to gateway connections, so no endpoint rule may name them. The table "The
 * `standard` class catalogue" of docs/guide/tiers-and-endpoint-rules.md is compared with this list by a test.
 */
export const CLASS_CATALOGUES = Object.freeze({
  standard: Object.freeze([
    entry('rl.public_auth', 'ip'),
    entry('rl.gateway_connect', 'device', 'connection'),
    entry('rl.read', 'principal'),
    entry('rl.write', 'principal'),
    entry('rl.message', 'principal'),
    entry('rl.trigger', 'principal'),
    entry('rl.interaction', 'principal'),
    entry('rl.upload', 'principal'),
    entry('rl.search', 'principal'),
    entry('rl.admin', 'principal'),
    entry('rl.export', 'principal'),
    entry('rl.import', 'principal'),
    entry('rl.agent_runtime', 'agent'),
    entry('rl.typing', 'connection', 'connection'),
    entry('rl.webhook_in', 'webhook'),
    entry('rl.terminal', 'human'),
    entry('rl.host', 'host'),
  ]),
} as const satisfies Record<string, readonly CatalogueClass[]>);

/** The name of a shipped catalogue. */
export type CatalogueName = keyof typeof CLASS_CATALOGUES;

/**
 * The classes of a catalogue, or `undefined` for a name that is not one.
 *
 * @param name - the value of `ratelimit.catalogue`.
 */
export function catalogueClasses(name: string): readonly CatalogueClass[] | undefined {
  return Object.hasOwn(CLASS_CATALOGUES, name) ? CLASS_CATALOGUES[name as CatalogueName] : undefined;
}
