import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { upperMethod } from '../../src/request-options.js';

describe('upperMethod', () => {
  it('returns the common upper-case spellings as they are', () => {
    for (const m of ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'PATCH', 'OPTIONS']) {
      expect(upperMethod(m)).toBe(m);
    }
  });

  it('upper-cases any other spelling', () => {
    expect(upperMethod('post')).toBe('POST');
    expect(upperMethod('Get')).toBe('GET');
    expect(upperMethod('purge')).toBe('PURGE');
    expect(upperMethod(undefined)).toBe('UNDEFINED');
  });

  it('agrees with String(m).toUpperCase() for every string', () => {
    fc.assert(
      fc.property(fc.string(), (m) => {
        expect(upperMethod(m)).toBe(m.toUpperCase());
      }),
    );
  });
});
