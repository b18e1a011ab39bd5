import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { Agent } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import { openWatchedPage, type WatchedPage } from '../../../test/support/watched-page.js';
import { buildDashboard } from '../dashboard-ui/build.js';
import {
  client,
  startedIn,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

/** Where the dashboard suites write their screenshots. */
export const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'dashboard');
/** The admin token of the dashboard suites' configurations (`${ADMIN_TOKEN}` in their YAML). */
export const TOKEN = 'dashboard-admin-token-0123456789';

/** What a dashboard suite shares between its tests, set in `beforeAll`. */
export interface DashboardSuite {
  readonly tmp: { readonly dir: string; readonly cleanup: () => void };
  readonly agent: Agent;
  readonly upstream: TestUpstream;
  /** The gateway in process, with its admin listener. */
  readonly t: TestGateway;
  /** The Chromium page, its console problems and its requests. */
  readonly page: Page;
  readonly problems: string[];
}

/** How {@link dashboardSuite} starts its gateway. */
export interface DashboardSuiteOptions {
  /** The Chromium binary: `toolPath('chromium')` in the suite, which sorts it as a browser suite. */
  readonly chromium: string;
  /** A short name for the configuration file and the browser profile's folder. */
  readonly name: string;
  /** The configuration, with `admin.token: ${ADMIN_TOKEN}`. */
  readonly yaml: string;
  /** What the upstream answers; its echo when absent. */
  readonly handler?: (req: IncomingMessage, res: ServerResponse) => void;
  /** Run before the gateway closes (answering requests an upstream still holds). */
  readonly beforeClose?: () => void;
}

/**
 * Registers the hooks of a suite that drives the dashboard in Chromium: builds the dashboard's bundle, starts an
 * upstream and a gateway on real wall time (the page turns the totals of successive statuses into rates) and
 * opens a watched page on a profile of its own; at the end closes all of it.
 */
export function dashboardSuite(o: DashboardSuiteOptions): DashboardSuite {
  const tmp = tempDir();
  const agent = client();
  let upstream: TestUpstream | undefined;
  let t: TestGateway | undefined;
  let profile: string | undefined;
  let watched: WatchedPage | undefined;
  beforeAll(async () => {
    await buildDashboard();
    await mkdir(ARTIFACTS, { recursive: true });
    upstream = await startUpstream();
    if (o.handler !== undefined) upstream.handler = o.handler;
    t = await startGateway(join(tmp.dir, `${o.name}.yaml`), {
      yaml: o.yaml,
      env: { ADMIN_TOKEN: TOKEN },
      overrides: { upstream: upstream.url },
      now: () => Date.now(),
    });
    profile = await mkdtemp(join(tmpdir(), `sluice-${o.name}-chromium-`));
    watched = await openWatchedPage(o.chromium, profile, { width: 1440, height: 900 });
  }, 60_000);
  afterAll(async () => {
    o.beforeClose?.();
    await watched?.context.close();
    await t?.gateway.close();
    await upstream?.close();
    await agent.close();
    if (profile !== undefined) await rm(profile, { recursive: true, force: true });
    tmp.cleanup();
  });
  const ready = startedIn('the dashboard suite');
  return {
    tmp,
    agent,
    get upstream() {
      return ready(upstream);
    },
    get t() {
      return ready(t);
    },
    get page() {
      return ready(watched).page;
    },
    get problems() {
      return ready(watched).problems;
    },
  };
}

/**
 * Signs in to the dashboard at `url` with the suite's token and waits until it is live and `card` shows.
 *
 * @param card - the selector of the panel the test reads, for example `#units-card`.
 */
export async function openPanel(page: Page, url: string, card: string): Promise<void> {
  await page.goto(url);
  await page.fill('#token', TOKEN);
  await page.click('button[type=submit]');
  await page.waitForFunction(() => document.getElementById('connection')?.textContent === 'Live');
  await page.locator(card).waitFor({ state: 'visible' });
}
