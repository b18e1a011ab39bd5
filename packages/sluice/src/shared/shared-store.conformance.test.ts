import { storeConformance } from '../testing/index.js';
import { SharedStore } from './index.js';

storeConformance('shared', (clock) => new SharedStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: 10_000 }));
storeConformance(
  'shared (tiny table, eviction under way)',
  (clock) => new SharedStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: 8 }),
);
