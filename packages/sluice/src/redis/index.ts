export {
  type IoredisLike,
  ioredisClient,
  type NodeRedisLike,
  nodeRedisClient,
  type RedisScriptClient,
  toScriptClient,
} from './client-adapter.js';
export { clusterSlot } from './cluster-slot.js';
export { DenyCache } from './deny-cache.js';
export type { FailureMode } from './failure-mode.js';
export { type HashTagFunction, KeyLayout } from './key-layout.js';
export { SCRIPT, SCRIPT_SHA } from './lua-script.js';
export { type ReconnectBackoffOptions, reconnectBackoff } from './reconnect-backoff.js';
export { RedisOverrides, type RedisOverridesOptions } from './redis-overrides.js';
export { RedisStore } from './redis-store.js';
export {
  type RedisStoreOptions,
  type ResolvedRedisStoreOptions,
  resolveRedisStoreOptions,
} from './redis-store-options.js';
export type { RedisStoreStats } from './redis-store-stats.js';
export {
  type FailoverEvent,
  logStoreTransitions,
  type RecoverEvent,
  type RedisStoreEvents,
  type StoreErrorEvent,
  type StoreLogger,
  type TransitionSource,
} from './store-events.js';
