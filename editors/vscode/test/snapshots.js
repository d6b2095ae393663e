// Snapshot tests of the grammar on every example workflow: each
// ../../workflows/NAME.wf is tokenized with vscode-textmate and rendered in
// vscode-tmgrammar-snap's format, which must equal test/snapshots/NAME.wf.snap.
// An example without a snapshot, or a snapshot without an example, fails.
// `node test/snapshots.js --update` rewrites the snapshots.
'use strict';

const fs = require('fs');
const path = require('path');
const { loadConfiguration, createRegistry } = require('vscode-tmgrammar-test/dist/common/index');
const { getVSCodeTokens, renderSnap } = require('vscode-tmgrammar-test/dist/snapshot/index');

const root = path.join(__dirname, '..');
const examples = path.join(root, '..', '..', 'workflows');
const snapshots = path.join(__dirname, 'snapshots');
const update = process.argv.includes('--update');

async function main() {
  const { grammars } = loadConfiguration(path.join(root, 'package.json'));
  const registry = createRegistry(grammars);
  const names = fs.readdirSync(examples).filter((n) => n.endsWith('.wf')).sort();
  if (names.length === 0) {
    throw new Error(`no example workflows in ${examples}`);
  }
  let failed = 0;
  for (const name of names) {
    const src = fs.readFileSync(path.join(examples, name), 'utf8');
    const actual = renderSnap(await getVSCodeTokens(registry, 'source.wf', src));
    const file = path.join(snapshots, name + '.snap');
    if (update) {
      fs.writeFileSync(file, actual);
      continue;
    }
    if (!fs.existsSync(file)) {
      console.log(`FAIL ${name}: no snapshot ${path.relative(root, file)}; run npm run update:snapshots`);
      failed++;
      continue;
    }
    const expected = fs.readFileSync(file, 'utf8');
    if (expected === actual) {
      console.log(`ok   ${name}`);
      continue;
    }
    failed++;
    console.log(`FAIL ${name}: tokenized differently from ${path.relative(root, file)}`);
    console.log(firstDifference(expected, actual));
  }
  for (const snap of fs.readdirSync(snapshots).filter((n) => n.endsWith('.snap'))) {
    if (!names.includes(snap.replace(/\.snap$/, ''))) {
      if (update) {
        fs.unlinkSync(path.join(snapshots, snap));
        continue;
      }
      console.log(`FAIL ${snap}: a snapshot of no example; run npm run update:snapshots`);
      failed++;
    }
  }
  if (update) {
    console.log(`updated the snapshots of ${names.length} examples`);
    return;
  }
  if (failed > 0) {
    console.log(`${failed} of ${names.length} examples failed; if the change is intended, run npm run update:snapshots and review the diff`);
    process.exitCode = 1;
  }
}

// firstDifference shows the first lines where two snapshots differ, with
// the line of the example above them.
function firstDifference(expected, actual) {
  const a = expected.split('\n');
  const b = actual.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) {
      let src = i;
      while (src > 0 && (b[src] ?? '').startsWith('#')) {
        src--;
      }
      return [
        `  at snapshot line ${i + 1}, under: ${b[src] ?? ''}`,
        `  expected: ${a[i] ?? '(end of snapshot)'}`,
        `  actual:   ${b[i] ?? '(end of snapshot)'}`,
      ].join('\n');
    }
  }
  return '';
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
