/**
 * Lookups in records keyed by user-chosen ids (tenant ids). A plain `record[id]` finds
 * Object.prototype members for ids such as `constructor` or `toString`, and `__proto__`
 * returns the prototype itself: only own properties count.
 */
export function ownEntry<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}
