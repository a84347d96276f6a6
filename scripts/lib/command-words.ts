/**
 * The programs a script or test runs, read from its text: the words in command position of bash
 * (first word of a command, after `|`, `&&`, `;`, `$(`, `then`, `do`, wrappers such as `exec`,
 * `sudo`, `timeout 5`, `command -v`, and the lists of `for tool in a b c` loops that check tools),
 * and in TypeScript the literal program of spawn/execFile calls and of the argv run in the real
 * node's namespaces (test/support/real-node.ts `inNode*`, which runs host programs). A heuristic: it over-reports (a word that is no program resolves to nothing and is
 * dropped by the caller) rather than miss a tool; scripts/prerequisites.test.ts checks what it finds.
 */

const WORD = /^[A-Za-z][A-Za-z0-9._+-]*$/;
const KEYWORDS = new Set(['if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until', 'for', 'case', 'esac', 'in', 'function', 'select', 'time', '!', '{', '}', '[[', ']]', 'return', 'local', 'export', 'declare', 'readonly', 'shift', 'exit', 'break', 'continue', 'set', 'unset', 'source', 'eval', 'trap', 'wait', 'cd', 'echo', 'printf', 'read', 'test', 'true', 'false', 'mapfile', 'let', 'pushd', 'popd', 'type', 'hash', 'ulimit', 'umask', 'getopts', 'builtin', 'caller', 'kill', 'jobs', 'disown']);
/** Words that start a command without being its program. */
const LEADERS = new Set(['then', 'do', 'else', 'if', 'elif', 'while', 'until', '!', '{', 'time']);
/** Words that run the word after them (their own flags skipped). */
const WRAPPERS = new Set(['exec', 'sudo', 'command', 'env', 'nohup', 'setsid', 'timeout', 'nice', 'xargs', 'stdbuf']);
const SEPARATORS = /\|\||&&|[|;&(){}`]|\$\(/;

/** The code of a line: no comment, no `${...}` or `$((...))`, quoted text reduced to its `$(...)`. */
function codeOf(line: string): string {
  if (line.trimStart().startsWith('#')) return '';
  return line
    .replace(/\$\(\([^)]*\)\)/g, ' ')
    .replace(/\$\{[^}]*\}/g, ' ')
    .replace(/'[^']*'/g, ' ')
    .replace(/"(?:[^"\\]|\\.)*"/g, (quoted) => ` ${(quoted.match(/\$\([^)]*\)/g) ?? []).join(' ; ')} `)
    .replace(/\s#(?![{!]).*$/, '');
}

/** The program a simple command runs: skip `VAR=value` prefixes, wrappers and their flags. */
function programOf(tokens: readonly string[]): string | undefined {
  let i = 0;
  while (i < tokens.length) {
    const t = tokens[i] ?? '';
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(t) || LEADERS.has(t)) {
      i += 1;
      continue;
    }
    if (WRAPPERS.has(t)) {
      i += 1;
      while (i < tokens.length && (/^-/.test(tokens[i] ?? '') || /^\d+[smh]?$/.test(tokens[i] ?? ''))) i += 1;
      continue;
    }
    return t.replace(/^["']|["']$/g, '');
  }
  return undefined;
}

export function bashCommandWords(text: string): Set<string> {
  const words = new Set<string>();
  for (const raw of text.split('\n')) {
    const line = codeOf(raw);
    for (const segment of line.split(SEPARATORS)) {
      const program = programOf(segment.trim().split(/\s+/).filter(Boolean));
      if (program !== undefined && WORD.test(program) && !KEYWORDS.has(program)) words.add(program);
    }
    // `for tool in buildah skopeo go; do command -v "$tool"`: the list names programs.
    const loop = /\bfor\s+\w+\s+in\s+([^;]+);\s*do\b.*command\s+-v/.exec(line);
    for (const w of loop?.[1]?.split(/\s+/) ?? []) if (WORD.test(w)) words.add(w);
  }
  return words;
}

export function typescriptCommandWords(text: string): Set<string> {
  const words = new Set<string>();
  const patterns = [/\b(?:spawn|spawnSync|execFile|execFileSync)\(\s*'([A-Za-z][\w.+-]*)'/g, /\binNode\w*\(\s*\[\s*'([A-Za-z][\w.+-]*)'/g];
  for (const pattern of patterns) for (const m of text.matchAll(pattern)) if (m[1] !== undefined) words.add(m[1]);
  return words;
}
