/**
 * Every Debian package a script or test runs a program from is listed in scripts/lib/prerequisites.txt
 * (which scripts/test.sh installs) or comes with one that is (a dependency), unless a minimal Debian
 * has it (Priority required or important):
 * a tool that works here only because someone installed it by hand fails this test, not a fresh machine.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bashCommandWords, typescriptCommandWords } from './lib/command-words.ts';

const root = join(import.meta.dirname, '..');
const listed = new Set(
  readFileSync(join(root, 'scripts/lib/prerequisites.txt'), 'utf8')
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim().split(/\s+/)[0] ?? '')
    .filter(Boolean),
);

function commandWordsOfCheckout(): Set<string> {
  const files = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
  const words = new Set<string>();
  for (const file of files) {
    if (file.endsWith('.sh')) for (const w of bashCommandWords(readFileSync(join(root, file), 'utf8'))) words.add(w);
    else if (/^(test|e2e|bench|scripts)\/.*\.ts$/.test(file)) for (const w of typescriptCommandWords(readFileSync(join(root, file), 'utf8'))) words.add(w);
  }
  return words;
}

/** program -> the Debian package that installed it, for programs found in the system's folders. */
function packagesOf(programs: Iterable<string>): Map<string, string> {
  const script = 'for w in "$@"; do p=$(command -v -- "$w") && [[ $p == /* ]] && printf "%s %s\\n" "$w" "$(readlink -f "$p")"; done; true';
  const paths = new Map<string, string>();
  for (const line of execFileSync('bash', ['-c', script, 'resolve', ...programs], { encoding: 'utf8' }).split('\n')) {
    const [word, path] = line.split(' ');
    if (word && path && /^\/(usr\/)?s?bin\//.test(path)) paths.set(path, word);
  }
  const owners = new Map<string, string>();
  if (paths.size === 0) return owners;
  const out = execFileSync('bash', ['-c', 'dpkg -S "$@" 2>/dev/null; true', 'owners', ...paths.keys()], { encoding: 'utf8' });
  for (const line of out.split('\n')) {
    const m = /^([^:\s,]+)(?::\w+)?(?:, [^:]+)*: (\/.*)$/.exec(line);
    const word = m?.[2] === undefined ? undefined : paths.get(m[2]);
    if (m?.[1] !== undefined && word !== undefined) owners.set(word, m[1]);
  }
  return owners;
}

/** The listed packages and everything they depend on, as installed (what installing the list brings). */
function withDependencies(list: ReadonlySet<string>): Set<string> {
  const out = execFileSync('dpkg-query', ['-W', '-f', '${Package}\t${Depends}, ${Pre-Depends}\n'], { encoding: 'utf8' });
  const dependsOn = new Map(
    out.split('\n').filter(Boolean).map((line) => {
      const [pkg = '', deps = ''] = line.split('\t');
      return [pkg, deps.split(/[,|]/).map((d) => d.trim().split(/[\s:(]/)[0] ?? '').filter(Boolean)] as const;
    }),
  );
  const seen = new Set<string>();
  const queue = [...list];
  for (let pkg = queue.pop(); pkg !== undefined; pkg = queue.pop()) {
    if (seen.has(pkg)) continue;
    seen.add(pkg);
    queue.push(...(dependsOn.get(pkg) ?? []));
  }
  return seen;
}

function priorities(packages: Iterable<string>): Map<string, string> {
  const names = [...new Set(packages)];
  if (names.length === 0) return new Map();
  const out = execFileSync('dpkg-query', ['-W', '-f', '${Package} ${Priority}\n', ...names], { encoding: 'utf8' });
  return new Map(out.split('\n').filter(Boolean).map((l) => l.split(' ') as [string, string]));
}

/** Packages that programs come from which neither the list nor a minimal Debian provides. */
function unlisted(programs: Iterable<string>, list: ReadonlySet<string>): string[] {
  const owners = packagesOf(programs);
  const priority = priorities(owners.values());
  const installedByList = withDependencies(list);
  return [...owners]
    .filter(([, pkg]) => !installedByList.has(pkg) && !['required', 'important'].includes(priority.get(pkg) ?? ''))
    .map(([word, pkg]) => `${word} (package ${pkg})`)
    .sort();
}

describe('system packages the scripts and tests need', () => {
  it('are all listed in scripts/lib/prerequisites.txt or part of a minimal Debian', () => {
    expect(unlisted(commandWordsOfCheckout(), listed)).toEqual([]);
  });

  it('an unlisted one is found (positive control: skopeo, taken off the list)', () => {
    const words = bashCommandWords('set -e\nif skopeo inspect "$ref"; then :; fi\n');
    const withoutSkopeo = new Set([...listed].filter((p) => p !== 'skopeo'));
    expect(unlisted(words, withoutSkopeo)).toEqual(['skopeo (package skopeo)']);
    expect(unlisted(words, listed)).toEqual([]);
  });
});

describe('bashCommandWords', () => {
  it('finds programs in command position, behind wrappers and in tool loops, not in comments', () => {
    const words = bashCommandWords(
      [
        '# iptables is mentioned in a comment only',
        'FOO=1 timeout 5 ipset list | grep -q x && exec sudo -n conntrack -L',
        'out=$(skopeo inspect "$x"); if command -v buildah >/dev/null; then :; fi',
        'for tool in runc umoci; do command -v "$tool" >/dev/null || die; done',
      ].join('\n'),
    );
    for (const w of ['ipset', 'grep', 'conntrack', 'skopeo', 'buildah', 'runc', 'umoci']) expect(words).toContain(w);
    expect(words).not.toContain('iptables');
    expect(words).not.toContain('FOO');
  });
});

describe('typescriptCommandWords', () => {
  it('finds literal programs of spawn-like calls and of argv run in the node, not arguments of our CLIs', () => {
    const words = typescriptCommandWords("spawnSync('skopeo', ['copy']); inNodeOk(['ipset', 'list']); kubectlOk(['patch', 'x'])");
    expect([...words].sort()).toEqual(['ipset', 'skopeo']);
  });
});
