import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { CHROMIUM_ARGS } from './tools.js';

/** A headless Chromium page whose console problems and requests a suite checks at its end. */
export interface WatchedPage {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Console errors and warnings, and uncaught page errors, in order. */
  readonly problems: string[];
  /** Every URL the page requested, in order. */
  readonly requested: string[];
}

/**
 * Starts headless Chromium on a profile folder of its own and opens a page that records its console problems and
 * requests, so a suite can assert that nothing failed quietly and nothing left the origins it expects.
 *
 * @param executablePath - the Chromium binary (`toolPath('chromium')` in the suite, which sorts it as a browser suite).
 * @param profile - an empty folder for the browser profile; the caller removes it.
 * @param viewport - the page's size.
 * @returns the context (close it in `afterAll`), the page and the two lists.
 */
export async function openWatchedPage(
  executablePath: string,
  profile: string,
  viewport: { readonly width: number; readonly height: number },
): Promise<WatchedPage> {
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: [...CHROMIUM_ARGS],
    viewport,
    colorScheme: 'dark',
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  const requested: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('request', (r) => requested.push(r.url()));
  return { context, page, problems, requested };
}
