/** Children accepted by {@link h}: nodes, text (set as text, never parsed as HTML), or nothing. */
export type Child = Node | string | number | null | undefined | false;

/**
 * Builds an element. Text goes in as text nodes, so values from the server (patterns, tenant ids, key hashes)
 * can never inject markup.
 *
 * @param tag - the element name.
 * @param attrs - attributes (`class`, `aria-*`, ...); `undefined` and `false` values are left out.
 * @param children - the content.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'object' ? c : String(c));
  }
  return el;
}

/** Replaces the content of `el`. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren(
    ...children
      .filter((c): c is Node | string | number => c !== null && c !== undefined && c !== false)
      .map((c) => (typeof c === 'object' ? c : String(c))),
  );
}

/** The element with this id; throws when the page lacks it (a build mistake, not a runtime condition). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`missing #${id}`);
  return el as T;
}

/**
 * A horizontal bar for a table cell: the filled share of the track, optional markers (for example alert
 * thresholds), and a tone. Decorative: the number beside it carries the value for assistive technology.
 *
 * @param share - the filled fraction of the track, 0 to 1.
 * @param tone - `ok`, `warn`, `danger` or `neutral`.
 * @param markers - fractions of the track where a marker line is drawn, with their labels.
 */
export function bar(
  share: number,
  tone: string,
  markers: readonly { at: number; label: string }[] = [],
): HTMLElement {
  const track = h('span', { class: 'bar', 'aria-hidden': 'true' });
  const fillEl = h('span', { class: `bar-fill tone-${tone}` });
  fillEl.style.width = `${Math.max(0, Math.min(1, share)) * 100}%`;
  track.append(fillEl);
  for (const m of markers) {
    const mark = h('span', { class: 'bar-marker', title: m.label });
    mark.style.left = `${Math.max(0, Math.min(1, m.at)) * 100}%`;
    track.append(mark);
  }
  return track;
}
