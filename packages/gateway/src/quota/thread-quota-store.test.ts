import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { ManualClock } from 'sluice';
import { MemoryQuotaStore, type QuotaAlert, QuotaTracker } from 'sluice/quota';
import { afterEach, describe, expect, it } from 'vitest';
import { answerQuotaCall, type QuotaCall, ThreadQuotaStore } from './thread-quota-store.js';

/** Real message ports, as between worker threads: every call and answer is a structured clone. */
const ports: MessagePort[] = [];
function threadStore(target: MemoryQuotaStore): ThreadQuotaStore {
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  port2.on('message', (m: { id: number; call: QuotaCall }) => {
    answerQuotaCall(target, m.call).then(
      (value) => port2.postMessage({ id: m.id, value }),
      (e: Error) => port2.postMessage({ id: m.id, error: e.message }),
    );
  });
  const store = new ThreadQuotaStore((id, call) => port1.postMessage({ id, call }));
  port1.on('message', (m: { id: number; value?: unknown; error?: string }) =>
    store.settle(m.id, m.value, m.error),
  );
  return store;
}

afterEach(() => {
  for (const p of ports.splice(0)) p.close();
});

describe('ThreadQuotaStore', () => {
  it('gives two threads one usage, one top list and one alert per crossing', async () => {
    const shared = new MemoryQuotaStore();
    const clock = new ManualClock(1_700_000_000_000);
    const alerts: QuotaAlert[] = [];
    const trackers = [threadStore(shared), threadStore(shared)].map((store) => {
      const t = new QuotaTracker({
        store,
        quotas: { acme: 10 },
        thresholds: [0.5],
        flushIntervalMs: 0,
        clock,
      });
      t.on('alert', (a: QuotaAlert) => alerts.push(a));
      return t;
    });
    for (let i = 0; i < 3; i++) trackers[0].record('acme', 'api', 1);
    for (let i = 0; i < 4; i++) trackers[1].record('acme', 'batch', 1);
    trackers[1].record('globex', 'api', 2);
    await Promise.all(trackers.map((t) => t.flush()));
    // Both threads read the same totals, by category too.
    for (const t of trackers) {
      expect((await t.usage('acme')).total).toBe(7);
      expect((await t.usage('acme')).categories).toEqual({ api: 3, batch: 4 });
      expect((await t.topTenants(2)).map((r) => [r.tenant, r.total])).toEqual([
        ['acme', 7],
        ['globex', 2],
      ]);
    }
    // 7 of 10 crossed 0.5 once over both threads: one alert, not one per thread.
    expect(alerts.map((a) => [a.tenant, a.threshold])).toEqual([['acme', 0.5]]);
    await Promise.all(trackers.map((t) => t.close()));
  });

  it("passes the other thread's error on and refuses calls left unanswered at close", async () => {
    const failing = new MemoryQuotaStore();
    failing.top = () => Promise.reject(new Error('store down'));
    await expect(threadStore(failing).top([1], 3)).rejects.toThrow('store down');
    const silent = new ThreadQuotaStore(() => undefined);
    const pending = silent.claimAlert('acme', 0.5, 60);
    await silent.close();
    await expect(pending).rejects.toThrow(/closed/);
  });
});
