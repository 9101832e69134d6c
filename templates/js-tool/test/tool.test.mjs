// Builds the component (./build.sh) and calls its tool through the real `glovebox`
// binary, with the grants of {{name}}.toml: what an agent's call would get.
// The binary is $GLOVEBOX when set, else `glovebox` on PATH. Run: node --test test/tool.test.mjs
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const project = dirname(dirname(fileURLToPath(import.meta.url)));

function glovebox() {
    if (process.env.GLOVEBOX) return process.env.GLOVEBOX;
    for (const dir of (process.env.PATH ?? '').split(delimiter)) {
        if (dir && existsSync(join(dir, 'glovebox'))) return join(dir, 'glovebox');
    }
    throw new Error(
        'the `glovebox` binary was not found on PATH: install it, or set GLOVEBOX=/path/to/glovebox');
}

// `glovebox call TOOL --input INPUT --json` with the project's config: the exit code
// and the JSON document it prints.
function call(tool, input) {
    const done = spawnSync(glovebox(), [
        '--config', join(project, 'glovebox.toml'),
        'call', tool, '--input', JSON.stringify(input), '--json',
    ], { encoding: 'utf8' });
    if (done.error) throw done.error;
    let doc;
    try {
        doc = JSON.parse(done.stdout);
    } catch {
        throw new Error(`\`glovebox call ${tool}\` printed no JSON; its stderr:\n${done.stderr}`);
    }
    return { code: done.status, doc };
}

before(() => {
    glovebox();
    execFileSync('sh', [join(project, 'build.sh')], { stdio: 'inherit' });
});

test('greets by name', () => {
    const { code, doc } = call('{{name}}.greet', { name: 'Ada' });
    assert.equal(code, 0, JSON.stringify(doc));
    assert.equal(doc.output.greeting, 'hello, Ada');
});

test('refuses a blank name', () => {
    const { code, doc } = call('{{name}}.greet', { name: '  ' });
    assert.equal(code, 4, JSON.stringify(doc)); // exit code 4: invalid input
    assert.equal(doc.error.kind, 'invalid_input');
    assert.match(doc.error.message, /`name` is blank/);
});

test('the host checks the schema first', () => {
    // `name` is required by the tool's input schema: the host refuses the call
    // before the tool runs.
    const { code, doc } = call('{{name}}.greet', {});
    assert.equal(code, 4, JSON.stringify(doc));
    assert.equal(doc.error.kind, 'invalid_input');
});
