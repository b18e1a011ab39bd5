import { type Clock, monotonicClock } from '../core/clock.js';
import { ErrorCode, SluiceError } from '../core/errors.js';
import { invalidOption } from '../core/options.js';
import type { RateLimitEntry, RateLimitListener } from './rate-limit-state.js';
import {
  DEFAULT_STATUS_MESSAGES,
  formatCountdown,
  mostConstrained,
  nextChangeAt,
  type RateLimitStatusMessages,
  type StatusLevel,
  statusView,
} from './status-format.js';

/** What feeds the element: a {@link SluiceClient} fits, or anything with the same three members. */
export interface RateLimitStatusSource {
  /** The clock the entries' times are readings of; the monotonic clock when absent. */
  readonly clock?: Clock;
  entries(): readonly RateLimitEntry[];
  subscribe(listener: RateLimitListener): () => void;
}

/** Options of {@link defineRateLimitStatus}. */
export interface RateLimitStatusOptions {
  /** Replaces some or all texts (language, product wording). */
  readonly messages?: Partial<RateLimitStatusMessages>;
  /** The warning fraction, from 0 to 1; the `warn-below` attribute overrides it per element. Default 0.2. */
  readonly warnBelow?: number;
}

/** The element's public members, beyond `HTMLElement`. */
export interface RateLimitStatusElement extends HTMLElement {
  /** The source of state; setting it subscribes (and unsubscribes from the previous one). */
  client: RateLimitStatusSource | undefined;
  /** The entry shown now. */
  readonly entry: RateLimitEntry | undefined;
  /** The level shown now. */
  readonly level: StatusLevel;
}

const STYLE = `
:host { display: inline-block; font: var(--sluice-status-font, 500 0.875rem/1.4 system-ui, sans-serif);
  color: var(--sluice-status-color, #1f2933); }
:host([hidden]) { display: none; }
.status { display: inline-flex; align-items: center; gap: 0.5em; padding: var(--sluice-status-padding, 0.25em 0.75em);
  border: var(--sluice-status-border-width, 1px) solid var(--sluice-status-border-color, #cbd2d9);
  border-radius: var(--sluice-status-radius, 999px); background: var(--sluice-status-background, #f5f7fa); }
.label { font-weight: 600; }
.count { font-variant-numeric: tabular-nums; font-weight: 700; }
time { font-variant-numeric: tabular-nums; }
.next, .full { padding-inline-start: 0.5em; border-inline-start: 1px solid var(--sluice-status-separator-color, #9aa5b1); }
.next:empty, .full:empty { display: none; }
.icon, .badge { display: none; }
.icon { inline-size: 1.25em; block-size: 1.25em; border: 2px solid currentColor; border-radius: 50%;
  align-items: center; justify-content: center; font-weight: 800; font-size: 0.8em; }
.badge { font-weight: 800; text-transform: uppercase; letter-spacing: 0.04em; text-decoration: underline; }
.status[data-level="warning"] { color: var(--sluice-status-warning-color, #6b4100);
  background: var(--sluice-status-warning-background, #fff1c2);
  border: var(--sluice-status-warning-border-width, 2px) solid var(--sluice-status-warning-border-color, currentColor); }
.status[data-level="exhausted"] { color: var(--sluice-status-exhausted-color, #8a1c1c);
  background: var(--sluice-status-exhausted-background, #ffe3e3);
  border: var(--sluice-status-warning-border-width, 2px) double var(--sluice-status-exhausted-border-color, currentColor); }
.status[data-level="warning"] .icon, .status[data-level="exhausted"] .icon,
.status[data-level="warning"] .badge, .status[data-level="exhausted"] .badge { display: inline-flex; }
.visually-hidden { position: absolute; inline-size: 1px; block-size: 1px; overflow: hidden; clip-path: inset(50%);
  white-space: nowrap; }
`;

/**
 * Registers the status element under `tagName` and returns its class: the requests left against what the bucket
 * holds (`49 of 50 left`: the burst, not the quota per window, which a token bucket never hands out at once), when
 * the next request passes (shown while none does), when the bucket is full, and a warning below 20% that shows an
 * icon and a text badge (never colour alone). Changes of level are announced through a polite live region; the
 * per-second countdowns are not, so screen readers are not flooded. Themed with CSS custom properties
 * (`--sluice-status-color`, `--sluice-status-background`, `--sluice-status-warning-color`, ...) and
 * `::part(container|label|icon|remaining|next|full|badge)`.
 *
 * The element never touches the network: it only reads the client it is given. Attributes: `label`, `origin`
 * and `policy` (which state to show; by default the most constrained policy of any origin) and `warn-below`.
 *
 * @param tagName - any valid custom element name, so products can use their own (`acme-quota`).
 * @param options - texts and the default warning fraction.
 * @returns the element class (the existing one when the tag is already defined by this function).
 * @throws SluiceError `ERR_INVALID_OPTION` outside a browser, for an invalid name or an invalid `warnBelow`.
 *
 * @example
 * ```ts
 * defineRateLimitStatus();
 * const el = document.createElement('sluice-rate-limit-status') as RateLimitStatusElement;
 * el.client = client;
 * document.querySelector('header')?.append(el);
 * ```
 */
export function defineRateLimitStatus(
  tagName = 'sluice-rate-limit-status',
  options: RateLimitStatusOptions = {},
): CustomElementConstructor {
  const registry = (globalThis as { customElements?: CustomElementRegistry }).customElements;
  if (registry === undefined || typeof HTMLElement === 'undefined') {
    throw new SluiceError(
      ErrorCode.InvalidOption,
      'defineRateLimitStatus needs a browser: this runtime has no customElements registry',
      { option: 'tagName', given: tagName },
    );
  }
  if (!/^[a-z][a-z0-9._]*-[a-z0-9._-]*$/.test(tagName)) {
    throw invalidOption(
      'tagName',
      'a custom element name: lower case, starting with a letter, with a hyphen',
      tagName,
    );
  }
  const defaultWarnBelow = options.warnBelow ?? 0.2;
  if (typeof defaultWarnBelow !== 'number' || !(defaultWarnBelow >= 0 && defaultWarnBelow <= 1)) {
    throw invalidOption('warnBelow', 'a number from 0 to 1', defaultWarnBelow);
  }
  const existing = registry.get(tagName);
  if (existing !== undefined) return existing;
  const messages: RateLimitStatusMessages = { ...DEFAULT_STATUS_MESSAGES, ...options.messages };

  class Status extends HTMLElement implements RateLimitStatusElement {
    static observedAttributes = ['label', 'origin', 'policy', 'warn-below'];
    #client: RateLimitStatusSource | undefined;
    #unsubscribe: (() => void) | undefined;
    #entries: readonly RateLimitEntry[] = [];
    #entry: RateLimitEntry | undefined;
    #level: StatusLevel = 'unknown';
    #ticker: AbortController | undefined;
    readonly #container: HTMLElement;
    readonly #label: HTMLElement;
    readonly #remaining: HTMLElement;
    readonly #next: HTMLElement;
    readonly #nextTime: HTMLTimeElement;
    readonly #full: HTMLElement;
    readonly #fullTime: HTMLTimeElement;
    readonly #badge: HTMLElement;
    readonly #live: HTMLElement;

    constructor() {
      super();
      const root = this.attachShadow({ mode: 'open' });
      const style = document.createElement('style');
      style.textContent = STYLE;
      const make = <K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, part?: string) => {
        const el = document.createElement(tag);
        el.className = cls;
        if (part !== undefined) el.setAttribute('part', part);
        return el;
      };
      this.#container = make('div', 'status', 'container');
      this.#container.setAttribute('role', 'group');
      this.#label = make('span', 'label', 'label');
      const icon = make('span', 'icon', 'icon');
      icon.textContent = '!';
      icon.setAttribute('aria-hidden', 'true');
      this.#remaining = make('span', 'remaining', 'remaining');
      this.#next = make('span', 'next', 'next');
      this.#nextTime = make('time', 'countdown');
      this.#full = make('span', 'full', 'full');
      this.#fullTime = make('time', 'countdown');
      this.#badge = make('span', 'badge', 'badge');
      // role=status is a polite live region: level changes are announced once, without interrupting.
      this.#live = make('div', 'visually-hidden');
      this.#live.setAttribute('role', 'status');
      this.#live.setAttribute('aria-live', 'polite');
      this.#live.setAttribute('aria-atomic', 'true');
      this.#container.append(this.#label, icon, this.#remaining, this.#next, this.#full, this.#badge);
      root.append(style, this.#container, this.#live);
    }

    get client(): RateLimitStatusSource | undefined {
      return this.#client;
    }

    set client(source: RateLimitStatusSource | undefined) {
      this.#unsubscribe?.();
      this.#unsubscribe = undefined;
      this.#client = source;
      this.#entries = source?.entries() ?? [];
      if (this.isConnected) this.#connect();
      this.#select();
    }

    get entry(): RateLimitEntry | undefined {
      return this.#entry;
    }

    get level(): StatusLevel {
      return this.#level;
    }

    connectedCallback(): void {
      this.#connect();
      this.#select();
    }

    disconnectedCallback(): void {
      this.#unsubscribe?.();
      this.#unsubscribe = undefined;
      this.#ticker?.abort();
      this.#ticker = undefined;
    }

    attributeChangedCallback(): void {
      this.#select();
    }

    #connect(): void {
      if (this.#client === undefined || this.#unsubscribe !== undefined) return;
      this.#unsubscribe = this.#client.subscribe((snapshot) => {
        this.#entries = snapshot.entries;
        this.#select();
      });
    }

    get #clock(): Clock {
      return this.#client?.clock ?? monotonicClock;
    }

    #warnBelow(): number {
      const attr = this.getAttribute('warn-below');
      if (attr === null) return defaultWarnBelow;
      const n = Number(attr);
      if (attr.trim() !== '' && n >= 0 && n <= 1) return n;
      console.warn(
        `<${tagName}> warn-below must be a number from 0 to 1, got ${JSON.stringify(attr)}; using ${defaultWarnBelow}`,
      );
      return defaultWarnBelow;
    }

    #select(): void {
      const origin = this.getAttribute('origin');
      const policy = this.getAttribute('policy');
      const candidates = this.#entries.filter(
        (e) => (origin === null || e.origin === origin) && (policy === null || e.policy === policy),
      );
      const entry = mostConstrained(candidates, this.#clock.now());
      const changed = entry !== this.#entry;
      this.#entry = entry;
      this.#render();
      if (changed) this.#tick();
    }

    #render(): void {
      const now = this.#clock.now();
      const view = statusView(this.#entry, now, this.#warnBelow());
      const label = this.getAttribute('label') ?? messages.label;
      this.#label.textContent = label;
      this.#container.setAttribute('aria-label', label);
      this.#container.dataset.level = view.level;
      if (view.remaining === undefined) {
        this.#remaining.textContent = messages.unknown;
      } else {
        const count = document.createElement('span');
        count.className = 'count';
        const text = messages.remaining(view.remaining, view.capacity);
        // The number is emphasised where it appears in the (replaceable) sentence.
        const at = text.indexOf(String(view.remaining));
        if (at < 0) {
          this.#remaining.textContent = text;
        } else {
          count.textContent = String(view.remaining);
          this.#remaining.replaceChildren(
            text.slice(0, at),
            count,
            text.slice(at + String(view.remaining).length),
          );
        }
      }
      // The next request is worth a countdown only while none passes; "full" always has its own.
      const nextCountdown =
        view.secondsToNext === undefined || view.secondsToNext === 0
          ? undefined
          : countdownIn(this.#next, this.#nextTime, view.secondsToNext, messages.nextIn);
      if (nextCountdown === undefined) this.#next.replaceChildren();
      if (view.secondsToFull === undefined) this.#full.replaceChildren();
      else if (view.secondsToFull === 0) this.#full.textContent = messages.full;
      else countdownIn(this.#full, this.#fullTime, view.secondsToFull, messages.fullIn);
      this.#badge.textContent =
        view.level === 'warning' ? messages.warning : view.level === 'exhausted' ? messages.exhausted : '';
      if (view.level !== this.#level) {
        const previous = this.#level;
        this.#level = view.level;
        if (view.level === 'warning')
          this.#live.textContent = messages.announceWarning(view.remaining ?? 0, view.capacity);
        else if (view.level === 'exhausted')
          this.#live.textContent = messages.announceExhausted(nextCountdown);
        else if (previous === 'warning' || previous === 'exhausted')
          this.#live.textContent = messages.announceRestored;
        this.dispatchEvent(new CustomEvent('levelchange', { detail: { level: view.level, previous } }));
      }
    }

    #tick(): void {
      this.#ticker?.abort();
      this.#ticker = undefined;
      const entry = this.#entry;
      if (entry === undefined || !this.isConnected) return;
      const ticker = new AbortController();
      this.#ticker = ticker;
      const clock = this.#clock;
      const loop = async () => {
        // One wait per displayed second on the client's clock: no interval timer, and a fake clock drives it. The
        // refilled count is redrawn at the same instants; between them it only understates.
        while (!ticker.signal.aborted) {
          const now = clock.now();
          const at = nextChangeAt(entry, now);
          if (at === undefined) break;
          await clock.sleep(at - now, ticker.signal);
          // Selecting again: as buckets refill, another policy may become the most constrained.
          this.#select();
        }
      };
      loop().catch(() => {
        // Aborted: a newer entry or a disconnect took over.
      });
    }
  }

  registry.define(tagName, Status);
  return Status;
}

/** Fills `part` with a labelled countdown around `time`; returns the countdown text (announced on exhaustion). */
function countdownIn(
  part: HTMLElement,
  time: HTMLTimeElement,
  seconds: number,
  label: (countdown: string) => string,
): string {
  const countdown = formatCountdown(seconds);
  time.textContent = countdown;
  time.dateTime = `PT${seconds}S`;
  // The label is a replaceable sentence; the countdown goes where the sentence puts it.
  const [before, after = ''] = label('\u0000').split('\u0000');
  part.replaceChildren(before, time, after);
  return countdown;
}
