/**
 * The fields the gateway adds to a proxied answer (the request id, the rate-limit fields, the `cors:` fields) as
 * one flat list, `[name, value, name, value, ...]`: made once per request and read by the response's head as it
 * is, with no header object built and walked twice per response.
 */
export type ExtraFields = string[];

/**
 * Sets a field as an object key would be set: a name already in the list (compared exactly, case included) keeps
 * its place and takes the new value, a new one goes at the end.
 *
 * @param list - the list to change.
 * @param name - the field name.
 * @param value - its value.
 */
export function setField(list: ExtraFields, name: string, value: string): void {
  for (let i = 0; i < list.length; i += 2) {
    if (list[i] === name) {
      list[i + 1] = value;
      return;
    }
  }
  list.push(name, value);
}

/**
 * The fields as a header object, for the gateway's own answers that merge them with others (a problem, a 101).
 *
 * @param list - the fields.
 * @returns a new object, in the list's order.
 */
export function fieldRecord(list: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < list.length; i += 2) out[list[i] as string] = list[i + 1] as string;
  return out;
}
