import { definePolicy, type Policy } from 'sluice';
import { describe, expect, it } from 'vitest';
import { OverrideTable } from './override-table.js';

const policy = (quota: number) => definePolicy({ name: 'o', quota, window: 60 });

describe('OverrideTable', () => {
  it('gives one object per definition and keeps at most its capacity, evicting the least recently used', () => {
    const evicted: string[] = [];
    const table = new OverrideTable(3);
    const use = (id: string, quota: number) =>
      table.use(
        id,
        () => policy(quota),
        (p, total) => evicted.push(`${p.quota}#${total}`),
      );
    const a = use('a', 1);
    use('b', 2);
    use('c', 3);
    expect(use('a', 99)).toBe(a);
    // "b" is now the least recently used one.
    use('d', 4);
    expect(evicted).toEqual(['2#1']);
    expect(table.size).toBe(3);
    expect(table.evictions).toBe(1);
    use('e', 5);
    expect(evicted).toEqual(['2#1', '3#2']);
    expect(use('a', 99)).toBe(a);
  });

  it('never refuses a definition, however many distinct ones arrive', () => {
    const table = new OverrideTable(4);
    for (let i = 1; i <= 1000; i++) expect(table.use(`k${i}`, () => policy(i)).quota).toBe(i);
    expect(table.size).toBe(4);
    expect(table.evictions).toBe(996);
  });

  it('hands back an evicted policy that something still holds (a memory store with its buckets), not an equal copy', () => {
    const table = new OverrideTable(1);
    const held: Policy = table.use('a', () => policy(1));
    table.use('b', () => policy(2));
    expect(table.evictions).toBe(1);
    let defined = 0;
    const again = table.use('a', () => {
      defined++;
      return policy(1);
    });
    expect(again).toBe(held);
    expect(defined).toBe(0);
    expect(table.size).toBe(1);
  });
});
