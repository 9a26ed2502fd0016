/**
 * The docs render: every code fence in README.md and docs/*.md closes, and a closing fence is a
 * fence alone. A closing fence with text after it is no fence to a Markdown renderer, and the rest
 * of docs/benchmarks.md became one code block (a figure update wrote "``` A task with …").
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const FILES = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** Fence problems of one Markdown text: `line N: …`. */
function fenceProblems(text: string): string[] {
  const problems: string[] = [];
  let openedAt: number | undefined;
  text.split('\n').forEach((line, index) => {
    const fence = /^(\s*)(```+|~~~+)(.*)$/.exec(line);
    if (!fence) return;
    if (openedAt === undefined) openedAt = index + 1;
    else {
      if ((fence[3] ?? '').trim() !== '') problems.push(`line ${index + 1}: a closing fence with text after it`);
      openedAt = undefined;
    }
  });
  if (openedAt !== undefined) problems.push(`line ${openedAt}: a fence that never closes`);
  return problems;
}

describe('Docs: Markdown code fences', () => {
  it('finds the two problems it is for', () => {
    expect(fenceProblems('```\ncode\n``` text after\nmore')).toEqual(['line 3: a closing fence with text after it']);
    expect(fenceProblems('text\n```ts\ncode')).toEqual(['line 2: a fence that never closes']);
    expect(fenceProblems('```ts\ncode\n```\n')).toEqual([]);
  });

  for (const file of FILES) {
    it(`${file}: every fence closes, alone on its line`, () => {
      expect(fenceProblems(readFileSync(path.join(ROOT, file), 'utf8'))).toEqual([]);
    });
  }
});
