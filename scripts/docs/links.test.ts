/**
 * Every relative link in README and the Markdown pages of the repository points to a file that
 * exists, and a link with `#anchor` to a heading of that page (GitHub's slugs): a page that moved or
 * a heading that was renamed leaves no dead link.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const pages = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file !== '' && !file.startsWith('node_modules/') && existsSync(join(root, file)));

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a page: one per heading, outside code blocks. */
function anchorsOf(text: string): Set<string> {
  const prose = text.replace(/```[\s\S]*?```/g, '');
  return new Set([...prose.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => slug(m[1] ?? '')));
}

/** Relative link targets of a page (inline links outside code blocks), without external ones. */
export function linksOf(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '').filter((target) => !/^[a-z]+:/.test(target));
}

function deadLinks(page: string): string[] {
  const text = readFileSync(join(root, page), 'utf8');
  return linksOf(text).flatMap((target) => {
    const [path = '', anchor] = target.split('#');
    const file = path === '' ? join(root, page) : join(root, dirname(page), path);
    if (!existsSync(file)) return [`${page}: ${target} (no such file)`];
    if (anchor === undefined || statSync(file).isDirectory() || !file.endsWith('.md')) return [];
    return anchorsOf(readFileSync(file, 'utf8')).has(anchor) ? [] : [`${page}: ${target} (no heading ${relative(root, file)}#${anchor})`];
  });
}

describe('links between the Markdown pages', () => {
  it('lead to files and headings that exist', () => {
    expect(pages.length).toBeGreaterThan(20);
    expect(pages.flatMap(deadLinks)).toEqual([]);
  });

  it('are read as GitHub reads them (positive controls)', () => {
    expect(slug('Install in an air-gapped cluster')).toBe('install-in-an-air-gapped-cluster');
    expect(slug('Module values: what a tenant may set')).toBe('module-values-what-a-tenant-may-set');
    expect(slug('Bootstrap: `eva-operator nats-bootstrap`')).toBe('bootstrap-eva-operator-nats-bootstrap');
    expect(linksOf('[a](x.md#y) `[b](no.md)` [c](https://e.x) \n```\n[d](no.md)\n```')).toEqual(['x.md#y']);
  });
});
