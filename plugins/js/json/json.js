// json: get, pick and filter values in a JSON document by path. A Glovebox tool plugin
// written in JavaScript (see ../README.md): it declares `tools` and `call`.
//
// Paths: `a.b`, `items[0]`, `items[-1]` (from the end), `items[*].name` (every element),
// `["key with spaces"]`. An empty path is the document itself.

const PATH_HELP = 'a path like `a.b`, `items[0].name`, `items[-1]`, `items[*].id` or `["odd key"]`';

const tools = [
    {
        name: 'get',
        description:
            'Returns the value at `path` in the JSON document `data`: {"found", "value"}. ' +
            '`[*]` in the path collects every element (then `value` is the list of matches). ' +
            'Paths: `a.b`, `items[0].name`, `items[-1]`, `items[*].id`, `["odd key"]`.',
        inputSchema: {
            type: 'object',
            properties: {
                data: { description: 'Any JSON document.' },
                path: { type: 'string', description: PATH_HELP + '; "" is the whole document.' },
            },
            required: ['data', 'path'],
            additionalProperties: false,
        },
        action: 'execute:json:get',
        destructive: false,
        idempotent: true,
    },
    {
        name: 'pick',
        description:
            'Reshapes `data`: keeps only `fields` (paths), from an object or from every object of an ' +
            'array. `fields` is a list of paths (each becomes a key named after the path) or an object ' +
            '{"new_name": "path"}. Missing values are left out.',
        inputSchema: {
            type: 'object',
            properties: {
                data: { type: ['object', 'array'], description: 'An object, or an array of objects.' },
                fields: {
                    oneOf: [
                        { type: 'array', items: { type: 'string' }, minItems: 1 },
                        { type: 'object', additionalProperties: { type: 'string' }, minProperties: 1 },
                    ],
                    description: 'Paths to keep, or {"output_key": "path"}.',
                },
            },
            required: ['data', 'fields'],
            additionalProperties: false,
        },
        action: 'execute:json:pick',
        destructive: false,
        idempotent: true,
    },
    {
        name: 'filter',
        description:
            'Keeps the elements of the array `data` that match every condition of `where` ' +
            '({"path", "op", "value"}; ops: eq, ne, lt, lte, gt, gte, contains, startsWith, in, exists, ' +
            'matches), optionally sorted by `sort` (a path; `order` asc or desc) and cut to `limit`. ' +
            'Returns {"count", "items"}; count is the number of matches before the limit.',
        inputSchema: {
            type: 'object',
            properties: {
                data: { type: 'array', description: 'The array to filter.' },
                where: {
                    type: 'array',
                    items: {
                        type: 'object',
                        properties: {
                            path: { type: 'string' },
                            op: {
                                enum: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'contains', 'startsWith', 'in', 'exists', 'matches'],
                            },
                            value: {},
                        },
                        required: ['path', 'op'],
                        additionalProperties: false,
                    },
                    description: 'Conditions that must all hold; none keeps every element.',
                },
                sort: { type: 'string', description: 'Path of the sort key.' },
                order: { enum: ['asc', 'desc'], description: 'Sort order; default asc.' },
                limit: { type: 'integer', minimum: 0, description: 'At most this many items.' },
            },
            required: ['data'],
            additionalProperties: false,
        },
        action: 'execute:json:filter',
        destructive: false,
        idempotent: true,
    },
];

function call(tool, input, ctx) {
    switch (tool) {
        case 'get':
            return get(input);
        case 'pick':
            return pick(input);
        case 'filter':
            return filter(input);
    }
    throw new InvalidInput(`unknown tool \`${tool}\``);
}

// ---- input checks ------------------------------------------------------------------------

function kind(v) {
    if (v === null) return 'null';
    if (Array.isArray(v)) return 'an array';
    if (typeof v === 'number') return `${v}`;
    return { string: 'a string', boolean: 'a boolean', object: 'an object' }[typeof v] || typeof v;
}

function only(input, allowed) {
    for (const key of Object.keys(input)) {
        if (!allowed.includes(key)) {
            throw new InvalidInput(`unknown field \`${key}\`; expected only: ${allowed.join(', ')}`);
        }
    }
}

function need(input, field, check, what) {
    if (!(field in input)) throw new InvalidInput(`missing required field \`${field}\``);
    if (!check(input[field])) throw new InvalidInput(`field \`${field}\` must be ${what}, got ${kind(input[field])}`);
    return input[field];
}

// ---- paths -------------------------------------------------------------------------------

// Parses a path into steps: {key}, {index}, {all}. `field` names the input field for errors.
function parsePath(text, field) {
    const steps = [];
    let i = 0;
    const fail = (why) => {
        throw new InvalidInput(`field \`${field}\`: ${why} at character ${i + 1} of \`${text}\`; use ${PATH_HELP}`);
    };
    while (i < text.length) {
        const c = text[i];
        if (c === '.') {
            if (i === 0 || i === text.length - 1 || text[i + 1] === '.' || text[i + 1] === '[') fail('misplaced `.`');
            i++;
        } else if (c === '[') {
            const close = text.indexOf(']', i);
            if (close < 0) fail('unclosed `[`');
            const inner = text.slice(i + 1, close).trim();
            if (inner === '*') steps.push({ all: true });
            else if (/^-?\d+$/.test(inner)) steps.push({ index: Number(inner) });
            else if (/^"(?:[^"\\]|\\.)*"$/.test(inner)) steps.push({ key: JSON.parse(inner) });
            else if (/^'[^']*'$/.test(inner)) steps.push({ key: inner.slice(1, -1) });
            else fail(`\`[${inner}]\` is not an index, \`*\` or a quoted key`);
            i = close + 1;
            if (i < text.length && text[i] !== '.' && text[i] !== '[') fail('expected `.` or `[` after `]`');
        } else {
            let j = i;
            while (j < text.length && text[j] !== '.' && text[j] !== '[') j++;
            const key = text.slice(i, j);
            if (key.includes(']')) fail('unexpected `]`');
            steps.push({ key });
            i = j;
        }
    }
    return steps;
}

// Every value at `steps` under `root`: [] when missing. `many` tells whether the path has `[*]`.
function resolve(root, steps) {
    let current = [root];
    for (const step of steps) {
        const next = [];
        for (const v of current) {
            if (step.all) {
                if (Array.isArray(v)) next.push(...v);
                else if (v !== null && typeof v === 'object') next.push(...Object.values(v));
            } else if (step.index !== undefined) {
                if (Array.isArray(v)) {
                    const at = step.index < 0 ? v.length + step.index : step.index;
                    if (at >= 0 && at < v.length) next.push(v[at]);
                }
            } else if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.hasOwn(v, step.key)) {
                next.push(v[step.key]);
            }
        }
        current = next;
    }
    return current;
}

const isWild = (steps) => steps.some((s) => s.all);

// ---- tools -------------------------------------------------------------------------------

function get(input) {
    only(input, ['data', 'path']);
    if (!('data' in input)) throw new InvalidInput('missing required field `data`');
    const path = need(input, 'path', (v) => typeof v === 'string', 'a string');
    const steps = parsePath(path, 'path');
    const found = resolve(input.data, steps);
    if (isWild(steps)) return { found: found.length > 0, value: found };
    return found.length ? { found: true, value: found[0] } : { found: false, value: null };
}

function pick(input) {
    only(input, ['data', 'fields']);
    const data = need(input, 'data', (v) => v !== null && typeof v === 'object', 'an object or an array');
    const fields = need(
        input,
        'fields',
        (v) => v !== null && typeof v === 'object',
        'a list of paths or an object {"output_key": "path"}',
    );
    let pairs;
    if (Array.isArray(fields)) {
        if (fields.length === 0) throw new InvalidInput('field `fields` is empty; name at least one path');
        pairs = fields.map((p, i) => {
            if (typeof p !== 'string') throw new InvalidInput(`field \`fields\`: item ${i} must be a path string, got ${kind(p)}`);
            return [p, p];
        });
    } else {
        pairs = Object.entries(fields);
        if (pairs.length === 0) throw new InvalidInput('field `fields` is empty; name at least one path');
        for (const [name, p] of pairs) {
            if (typeof p !== 'string') throw new InvalidInput(`field \`fields.${name}\` must be a path string, got ${kind(p)}`);
        }
    }
    const compiled = pairs.map(([name, p]) => [name, parsePath(p, `fields (${p})`)]);
    const one = (item) => {
        const out = {};
        for (const [name, steps] of compiled) {
            const found = resolve(item, steps);
            if (isWild(steps)) out[name] = found;
            else if (found.length) out[name] = found[0];
        }
        return out;
    };
    return Array.isArray(data) ? data.map(one) : one(data);
}

const OPS = {
    eq: (a, b) => equal(a, b),
    ne: (a, b) => !equal(a, b),
    lt: (a, b) => comparable(a, b) && a < b,
    lte: (a, b) => comparable(a, b) && a <= b,
    gt: (a, b) => comparable(a, b) && a > b,
    gte: (a, b) => comparable(a, b) && a >= b,
    contains: (a, b) =>
        typeof a === 'string' ? typeof b === 'string' && a.includes(b) : Array.isArray(a) && a.some((x) => equal(x, b)),
    startsWith: (a, b) => typeof a === 'string' && typeof b === 'string' && a.startsWith(b),
    in: (a, b) => b.some((x) => equal(a, x)),
    exists: (a, b, present) => present === (b === undefined ? true : !!b),
    matches: (a, re) => typeof a === 'string' && re.test(a),
};

function equal(a, b) {
    return JSON.stringify(a) === JSON.stringify(b);
}

function comparable(a, b) {
    return (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
}

function filter(input) {
    only(input, ['data', 'where', 'sort', 'order', 'limit']);
    const data = need(input, 'data', Array.isArray, 'an array');
    const where = 'where' in input ? need(input, 'where', Array.isArray, 'a list of conditions') : [];
    const conditions = where.map((c, i) => {
        const at = `where[${i}]`;
        if (c === null || typeof c !== 'object' || Array.isArray(c)) {
            throw new InvalidInput(`\`${at}\` must be an object {"path", "op", "value"}, got ${kind(c)}`);
        }
        for (const key of Object.keys(c)) {
            if (!['path', 'op', 'value'].includes(key)) throw new InvalidInput(`\`${at}\`: unknown field \`${key}\`; expected path, op, value`);
        }
        if (typeof c.path !== 'string') throw new InvalidInput(`\`${at}.path\` must be a string, got ${kind(c.path)}`);
        if (!Object.hasOwn(OPS, c.op)) {
            throw new InvalidInput(`\`${at}.op\` must be one of ${Object.keys(OPS).join(', ')}; got ${JSON.stringify(c.op)}`);
        }
        let value = c.value;
        if (c.op !== 'exists' && !('value' in c)) throw new InvalidInput(`\`${at}.value\` is required for op \`${c.op}\``);
        if (c.op === 'in' && !Array.isArray(value)) throw new InvalidInput(`\`${at}.value\` must be a list for op \`in\`, got ${kind(value)}`);
        if (c.op === 'exists' && value !== undefined && typeof value !== 'boolean') {
            throw new InvalidInput(`\`${at}.value\` must be true or false for op \`exists\`, got ${kind(value)}`);
        }
        if (c.op === 'matches') {
            if (typeof value !== 'string') throw new InvalidInput(`\`${at}.value\` must be a regular expression string, got ${kind(value)}`);
            try {
                value = new RegExp(value);
            } catch (e) {
                throw new InvalidInput(`\`${at}.value\` is not a valid regular expression: ${e.message}`);
            }
        }
        return { steps: parsePath(c.path, `${at}.path`), test: OPS[c.op], value };
    });
    let items = data.filter((item) =>
        conditions.every(({ steps, test, value }) => {
            const found = resolve(item, steps);
            return test(found[0], value, found.length > 0);
        }),
    );
    const count = items.length;
    if ('sort' in input) {
        const steps = parsePath(need(input, 'sort', (v) => typeof v === 'string', 'a path string'), 'sort');
        const order = 'order' in input ? input.order : 'asc';
        if (order !== 'asc' && order !== 'desc') throw new InvalidInput(`field \`order\` must be "asc" or "desc", got ${JSON.stringify(order)}`);
        const key = (item) => resolve(item, steps)[0];
        const sign = order === 'desc' ? -1 : 1;
        items = items
            .map((item) => [key(item), item])
            .sort(([a], [b]) => {
                // Missing keys sort last, whatever the order.
                if (a === undefined || b === undefined) return a === undefined ? (b === undefined ? 0 : 1) : -1;
                if (comparable(a, b)) return a < b ? -sign : a > b ? sign : 0;
                return sign * String(a).localeCompare(String(b));
            })
            .map(([, item]) => item);
    } else if ('order' in input) {
        throw new InvalidInput('field `order` needs `sort` (the path to sort by)');
    }
    if ('limit' in input) {
        const limit = need(input, 'limit', (v) => Number.isInteger(v) && v >= 0, 'a non-negative integer');
        items = items.slice(0, limit);
    }
    return { count, items };
}
