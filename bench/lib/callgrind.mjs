/**
 * Reads a callgrind file (valgrind --tool=callgrind, --compress-strings=no
 * --compress-pos=no) into self instructions by key, for bench/instructions.mjs
 * and bench/tools/callgrind-js.mjs. V8's JIT code, which callgrind knows only by
 * address, is named from the `/tmp/perf-PID.map` that node writes under
 * `--perf-basic-prof`, when the file was written with --dump-instr=yes.
 *
 *   const { costs, compile, requests } = readCallgrind(file, { by: 'file' });
 *
 * `compile` is the part spent in V8's parsers and compilers (bytecode,
 * Sparkplug, Maglev, TurboFan/Turboshaft, wasm): work a long-lived process has
 * finished, which lands in a run's measured window or not as V8 decides.
 */
import { readFileSync } from 'node:fs';

const COMPILER =
  /v8::internal::(compiler|maglev|baseline|interpreter|wasm|turboshaft)::|v8::internal::(Parser|ParserBase|PreParser|Scanner|Compiler|OptimizingCompileDispatcher)\b/;

/** perf map: sorted entries with later entries winning on overlap. */
function perfMap(pid) {
  let text;
  try {
    text = readFileSync(`/tmp/perf-${pid}.map`, 'utf8');
  } catch {
    return [];
  }
  const entries = [];
  let order = 0;
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m === null) continue;
    const start = Number.parseInt(m[1], 16);
    entries.push({ start, end: start + Number.parseInt(m[2], 16), name: m[3], order: order++ });
  }
  entries.sort((a, b) => a.start - b.start || b.order - a.order);
  return entries;
}

function lookup(entries, address) {
  let lo = 0;
  let hi = entries.length - 1;
  let best;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (entries[mid].start <= address) {
      best = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (best === undefined) return undefined;
  // The covering entries start at or before `best`; take the latest written.
  let found;
  for (let i = best; i >= 0 && i > best - 64; i--) {
    const e = entries[i];
    if (e.start <= address && address < e.end && (found === undefined || e.order > found.order))
      found = e;
  }
  return found?.name;
}

/** The key a JIT name is grouped under: its file (or kind), or the whole name. */
function jitKey(name, by) {
  if (by === 'function') return name;
  const file = /(?:file:\/\/)?(\/[^\s:]+|node:[^\s:]+)(?::\d+)*$/.exec(name);
  if (file !== null) {
    const path = file[1];
    const at = path.indexOf('node_modules/');
    if (at >= 0) return path.slice(at + 'node_modules/'.length);
    const dist = path.indexOf('/dist/');
    if (dist >= 0) return `staunch ${path.slice(dist + 1)}`;
    return path;
  }
  const kind = /^(\w+):/.exec(name);
  return kind === null
    ? name
    : `${kind[1]}:${kind[1] === 'Builtin' ? name.slice(kind[0].length) : ''}`;
}

/**
 * Self costs by key ('file' or 'function') of one callgrind file: of
 * `event`, instructions (`Ir`) by default, or one of the cache simulation's
 * (`I1mr`, `D1mr`, … with `--cache-sim=yes`).
 */
export function readCallgrind(file, { by = 'file', callersOf, event = 'Ir' } = {}) {
  if (by !== 'file' && by !== 'function')
    throw new RangeError(`by must be file or function, got ${JSON.stringify(by)}`);
  const text = readFileSync(file, 'utf8');
  /** The fields of the file's `name:` line, if it has one. */
  const fields = (name) => new RegExp(`^${name}: (.+)$`, 'm').exec(text)?.[1].trim().split(/\s+/);
  const events = fields('events') ?? ['Ir'];
  const which = events.indexOf(event);
  if (which < 0)
    throw new RangeError(
      `${file} has no event ${JSON.stringify(event)} (it has ${events.join(' ')})`,
    );
  // A cost line is its positions (the instruction's address, the line), then one cost an event;
  // callgrind leaves trailing zero costs out.
  const column = (fields('positions')?.length ?? 1) + which;
  const cost = (parts) => Number(parts[column] ?? 0);
  const pid = /^pid: (\d+)/m.exec(text)?.[1];
  const entries = pid === undefined ? [] : perfMap(pid);
  const costs = new Map();
  let compile = 0;
  let total = 0;
  // Code callgrind knows no object file of: V8's JIT code.
  let jit = true;
  let lib = '';
  let fn = '';
  let isCompiler = false;
  let skipNext = false;
  let cfn = '';
  let callsTo = false;
  /** With `callersOf` (a function name), the instructions of its calls, inclusive, by calling key. */
  const callers = new Map();
  for (const line of text.split('\n')) {
    if (line.startsWith('ob=')) {
      const ob = line.slice(3);
      jit = ob === '???' || ob === '';
      lib = ob.slice(ob.lastIndexOf('/') + 1);
    } else if (line.startsWith('fn=')) {
      fn = line.slice(3);
      isCompiler = COMPILER.test(fn);
    } else if (line.startsWith('cfn=')) cfn = line.slice(4);
    else if (line.startsWith('calls=')) {
      skipNext = true;
      if (callersOf === undefined) callsTo = false;
      else if (cfn === callersOf) callsTo = true;
      else {
        // JIT code is named by the perf map: a name that contains `callersOf`.
        const name = /^0x[0-9a-f]+$/.test(cfn) ? lookup(entries, Number(cfn)) : undefined;
        callsTo = name?.includes(callersOf) === true;
      }
    } else if (/^(0x[0-9a-f]+|\d)/.test(line)) {
      // The line after calls= is the call's inclusive cost, not this function's own.
      if (skipNext) {
        skipNext = false;
        if (callsTo) {
          const parts = line.split(' ');
          const key = (jit ? lookup(entries, Number(parts[0])) : fn) ?? 'JIT (unnamed)';
          callers.set(key, (callers.get(key) ?? 0) + cost(parts));
        }
        continue;
      }
      const parts = line.split(' ');
      const ir = cost(parts);
      total += ir;
      if (isCompiler) compile += ir;
      let key;
      if (jit) {
        const name = lookup(entries, Number(parts[0]));
        key = name === undefined ? 'JIT (unnamed)' : jitKey(name, by);
      } else {
        if (by === 'function') key = `${lib} ${fn}`;
        else if (isCompiler) key = 'C++ V8 compilers';
        else key = lib.startsWith('node') ? `C++ ${fn.split('::').slice(0, 2).join('::')}` : lib;
      }
      costs.set(key, (costs.get(key) ?? 0) + ir);
    }
  }
  // `totals:` is the sum of this part's cost lines; `summary:` can hold a few more (the cache
  // simulation's), so it is the check only when there are no totals.
  const summary = Number((fields('totals') ?? fields('summary'))?.[which] ?? 0);
  if (summary !== total)
    throw new Error(`${file}: self costs sum to ${total}, the file says ${summary}`);
  const requests = Number(/profile-variant\.mjs \S+ (\d+)/.exec(text)?.[1]);
  return { costs, compile, total, requests, callers };
}
