import { storeConformance } from '../testing/index.js';
import { MemoryStore } from './index.js';

storeConformance('memory', (clock) => new MemoryStore({ clock, sweepIntervalMs: 0 }));
storeConformance(
  'memory (tiny table, eviction under way)',
  (clock) => new MemoryStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: 8 }),
);
