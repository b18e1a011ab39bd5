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
export { type HashTagFunction, KeyLayout } from './key-layout.js';
export { SCRIPT, SCRIPT_SHA } from './lua-script.js';
export {
  type FailoverEvent,
  type RecoverEvent,
  RedisStore,
  type RedisStoreEvents,
  type RedisStoreStats,
} from './redis-store.js';
export {
  type FailureMode,
  type RedisStoreOptions,
  type ResolvedRedisStoreOptions,
  resolveRedisStoreOptions,
} from './redis-store-options.js';
