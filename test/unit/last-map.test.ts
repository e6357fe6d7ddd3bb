import { describe, expect, it } from 'vitest';
import { LastMap } from '../../src/internal/last-map.js';

describe('LastMap: a Map that remembers its last lookup', () => {
  it('answers as a Map through every write: set, delete, clear, a remembered miss', () => {
    const m = new LastMap<string, number>();
    expect(m.get('a')).toBeUndefined(); // a miss, remembered
    m.set('a', 1);
    expect(m.get('a')).toBe(1);
    m.set('a', 2);
    expect(m.get('a')).toBe(2);
    m.set('b', 3);
    expect(m.get('a')).toBe(2);
    expect(m.get('b')).toBe(3);
    expect(m.delete('b')).toBe(true);
    expect(m.get('b')).toBeUndefined();
    expect(m.get('a')).toBe(2);
    m.clear();
    expect(m.get('a')).toBeUndefined();
    expect(m.size).toBe(0);
  });

  it('a delete while iterating (a sweep) forgets the remembered entry', () => {
    const m = new LastMap<string, number>();
    m.set('x', 1);
    m.set('y', 2);
    expect(m.get('x')).toBe(1);
    for (const [key] of m) if (key === 'x') m.delete(key);
    expect(m.get('x')).toBeUndefined();
    expect([...m.keys()]).toEqual(['y']);
  });

  it('an undefined key is a key like any other', () => {
    const m = new LastMap<string | undefined, number>();
    expect(m.get(undefined)).toBeUndefined();
    m.set(undefined, 7);
    expect(m.get(undefined)).toBe(7);
  });
});
