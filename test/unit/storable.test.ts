import { describe, expect, it } from 'vitest';
import { clipText, MAX_ERROR_MESSAGE_BYTES } from '../../runtime/core/storable.ts';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

describe('Function: clipText', () => {
  it('keeps text that fits as it is', () => {
    expect(clipText('héllo 😀', 100)).toBe('héllo 😀');
    expect(clipText('x'.repeat(100), 100)).toBe('x'.repeat(100));
  });

  it('cuts longer text to the byte limit, marked with the original length', () => {
    const clipped = clipText('x'.repeat(1_000_000), MAX_ERROR_MESSAGE_BYTES);
    expect(bytes(clipped)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_BYTES);
    expect(clipped).toMatch(/^x+ …\[truncated: 1000000 bytes\]$/);
    expect(bytes(clipped)).toBeGreaterThan(MAX_ERROR_MESSAGE_BYTES - 4);
  });

  it('cuts between characters of every UTF-8 length, at every offset', () => {
    for (const char of ['é', '€', '😀']) {
      for (let lead = 0; lead < 4; lead++) {
        const text = 'a'.repeat(lead) + char.repeat(500);
        const clipped = clipText(text, 300);
        expect(bytes(clipped)).toBeLessThanOrEqual(300);
        expect(clipped.isWellFormed()).toBe(true);
        expect(clipped.includes('\ufffd')).toBe(false);
        expect(text.startsWith(clipped.slice(0, clipped.indexOf(' …[truncated')))).toBe(true);
      }
    }
  });

  it('makes a lone surrogate well-formed (U+FFFD), as UTF-8 would', () => {
    expect(clipText('a\ud83d', 100)).toBe('a\ufffd');
    expect(clipText(`\ud83d${'b'.repeat(200)}`, 50).startsWith('\ufffd')).toBe(true);
  });

  it('gives the marker alone when the limit leaves no room for text', () => {
    expect(clipText('x'.repeat(100), 5)).toBe(' …[truncated: 100 bytes]');
  });
});
