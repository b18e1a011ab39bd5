/** One node of a {@link PrefixTrie}: children by UTF-16 code unit, and the entries whose prefix ends here. */
interface TrieNode<T> {
  children: Map<number, TrieNode<T>> | undefined;
  entries: T[] | undefined;
}

/**
 * Entries by key prefix, in a character trie: the entries whose prefix a key starts with are found in one walk as
 * long as the key, whatever the number of prefixes. Entries are added and deleted one by one (a rule set or
 * removed), and a deletion drops the nodes it leaves empty, so a churn of distinct prefixes does not grow it.
 */
export class PrefixTrie<T> {
  readonly #root: TrieNode<T> = { children: undefined, entries: undefined };
  #size = 0;

  /** Entries held. */
  get size(): number {
    return this.#size;
  }

  /** Adds an entry under a prefix, after the ones already there. */
  add(prefix: string, entry: T): void {
    let node = this.#root;
    for (let i = 0; i < prefix.length; i++) {
      node.children ??= new Map();
      const c = prefix.charCodeAt(i);
      let next = node.children.get(c);
      if (next === undefined) {
        next = { children: undefined, entries: undefined };
        node.children.set(c, next);
      }
      node = next;
    }
    if (node.entries === undefined) node.entries = [entry];
    else node.entries.push(entry);
    this.#size++;
  }

  /** Deletes an entry added under `prefix` (compared by identity); no-op when it is not there. */
  delete(prefix: string, entry: T): void {
    const path: TrieNode<T>[] = [this.#root];
    let node: TrieNode<T> | undefined = this.#root;
    for (let i = 0; i < prefix.length && node !== undefined; i++) {
      node = node.children?.get(prefix.charCodeAt(i));
      if (node !== undefined) path.push(node);
    }
    if (node === undefined || node.entries === undefined) return;
    const at = node.entries.indexOf(entry);
    if (at < 0) return;
    node.entries.splice(at, 1);
    this.#size--;
    if (node.entries.length === 0) node.entries = undefined;
    // Drops the nodes left with neither entries nor children, from the end of the prefix up.
    for (let i = path.length - 1; i > 0; i--) {
      const n = path[i];
      if (n.entries !== undefined || (n.children !== undefined && n.children.size > 0)) break;
      path[i - 1].children?.delete(prefix.charCodeAt(i - 1));
    }
  }

  /**
   * Appends the entries of every prefix `key` starts with to `out`, shorter prefixes first.
   *
   * @returns `out`, or a new list when `out` is `undefined` and some prefix matched.
   */
  collect(key: string, out: T[] | undefined): T[] | undefined {
    let node: TrieNode<T> | undefined = this.#root;
    for (let i = 0; node !== undefined; i++) {
      if (node.entries !== undefined) {
        if (out === undefined) out = [...node.entries];
        else out.push(...node.entries);
      }
      if (i >= key.length || node.children === undefined) break;
      node = node.children.get(key.charCodeAt(i));
    }
    return out;
  }
}
