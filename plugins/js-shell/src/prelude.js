// The JavaScript half of glovebox-js-shell: evaluated once per realm, in `wizer-initialize`
// (so it is part of the snapshot), before any code of a plugin or an agent runs.
//
// It is a function expression: the shell calls it with `native`, an object of Rust
// functions (`write`, `fs`, `http`, `random`, `tools`) that is reachable only from these closures,
// and keeps what it returns (`inspect`, `format`). It installs `console`, `fs`, `fetch`, `tools`,
// `Headers`, `Response` and a `Math.random` seeded at call time.
(function (native) {
    'use strict';

    const g = globalThis;
    const hidden = (obj, name, value) =>
        Object.defineProperty(obj, name, { value, writable: true, configurable: true, enumerable: false });

    // ---- inspect: Node-like, one line ----------------------------------------------------

    const MAX_ITEMS = 100;
    const MAX_DEPTH = 4;
    const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

    function quote(s) {
        const q = s.includes("'") && !s.includes('"') ? '"' : "'";
        let out = q;
        for (const c of s) {
            if (c === q || c === '\\') out += '\\' + c;
            else if (c === '\n') out += '\\n';
            else if (c === '\r') out += '\\r';
            else if (c === '\t') out += '\\t';
            else if (c < ' ') out += '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0');
            else out += c;
        }
        return out + q;
    }

    function errorText(e) {
        let head;
        try {
            head = String(e);
        } catch {
            head = 'Error';
        }
        // The prelude's own frames (fs, fetch) and native frames say nothing to the caller.
        const stack =
            typeof e.stack === 'string'
                ? e.stack
                      .split('\n')
                      .filter((l) => l.trim() && !l.includes('glovebox-prelude.js') && !l.includes('(native)'))
                      .join('\n')
                : '';
        return stack ? head + '\n' + stack : head;
    }

    function functionText(f) {
        let src = '';
        try {
            src = Function.prototype.toString.call(f);
        } catch { }
        const name = f.name ? String(f.name) : '';
        if (/^class[\s{]/.test(src)) return name ? `[class ${name}]` : '[class (anonymous)]';
        return name ? `[Function: ${name}]` : '[Function (anonymous)]';
    }

    function list(prefix, items, more, open = '[', close = ']') {
        const tail = more > 0 ? [...items, `... ${more} more item${more === 1 ? '' : 's'}`] : items;
        if (tail.length === 0) return prefix + open + close;
        return `${prefix}${open} ${tail.join(', ')} ${close}`;
    }

    function inspect(v, depth = MAX_DEPTH, seen = []) {
        switch (typeof v) {
            case 'string':
                return quote(v);
            case 'number':
                return Object.is(v, -0) ? '-0' : String(v);
            case 'bigint':
                return `${v}n`;
            case 'symbol':
                return v.toString();
            case 'undefined':
                return 'undefined';
            case 'boolean':
                return String(v);
            case 'function':
                return functionText(v);
        }
        if (v === null) return 'null';
        if (seen.includes(v)) return '[Circular]';
        if (v instanceof Error) return errorText(v);
        if (v instanceof Date) return isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString();
        if (v instanceof RegExp) return String(v);
        if (v instanceof Promise) return 'Promise { ... }';
        if (v instanceof Headers) return 'Headers ' + inspectObject(v, depth, seen, '');
        const inner = (x) => inspect(x, depth - 1, seen.concat([v]));
        if (Array.isArray(v)) {
            if (depth < 0) return '[Array]';
            const n = Math.min(v.length, MAX_ITEMS);
            const items = [];
            for (let i = 0; i < n; i++) items.push(i in v ? inner(v[i]) : '<empty>');
            return list('', items, v.length - n);
        }
        if (v instanceof Map) {
            if (depth < 0) return '[Map]';
            const items = [];
            for (const [k, x] of v) {
                if (items.length === MAX_ITEMS) break;
                items.push(`${inner(k)} => ${inner(x)}`);
            }
            return list(`Map(${v.size}) `, items, v.size - items.length, '{', '}');
        }
        if (v instanceof Set) {
            if (depth < 0) return '[Set]';
            const items = [];
            for (const x of v) {
                if (items.length === MAX_ITEMS) break;
                items.push(inner(x));
            }
            return list(`Set(${v.size}) `, items, v.size - items.length, '{', '}');
        }
        if (ArrayBuffer.isView(v) && typeof v.length === 'number') {
            const n = Math.min(v.length, MAX_ITEMS);
            const items = [];
            for (let i = 0; i < n; i++) items.push(inspect(v[i]));
            return list(`${v.constructor.name}(${v.length}) `, items, v.length - n);
        }
        if (v instanceof ArrayBuffer) return `ArrayBuffer { byteLength: ${v.byteLength} }`;
        const proto = Object.getPrototypeOf(v);
        let prefix = '';
        if (proto === null) prefix = '[Object: null prototype] ';
        else if (proto !== Object.prototype) {
            const ctor = proto.constructor;
            const name = typeof ctor === 'function' && ctor.name ? String(ctor.name) : '';
            if (name && name !== 'Object') prefix = name + ' ';
        }
        if (depth < 0) return prefix ? `[${prefix.trim()}]` : '[Object]';
        return prefix + inspectObject(v, depth, seen, prefix);
    }

    function inspectObject(v, depth, seen) {
        const keys = Object.keys(v);
        const items = [];
        for (const k of keys.slice(0, MAX_ITEMS)) {
            const d = Object.getOwnPropertyDescriptor(v, k);
            let shown;
            if (d === undefined) continue;
            if (d.get || d.set) shown = d.get && d.set ? '[Getter/Setter]' : d.get ? '[Getter]' : '[Setter]';
            else shown = inspect(d.value, depth - 1, seen.concat([v]));
            items.push(`${IDENT.test(k) ? k : quote(k)}: ${shown}`);
        }
        return list('', items, keys.length - Math.min(keys.length, MAX_ITEMS), '{', '}');
    }

    // What console.log prints for one argument: strings as they are, the rest inspected.
    const show = (v) => (typeof v === 'string' ? v : inspect(v));

    function format(args) {
        if (args.length === 0) return '';
        if (args.length === 1) return show(args[0]);
        let out;
        let next = 1;
        const first = args[0];
        if (typeof first === 'string' && first.includes('%')) {
            out = first.replace(/%[sdifjoOc%]/g, (m) => {
                if (m === '%%') return '%';
                if (next >= args.length) return m;
                const a = args[next++];
                switch (m) {
                    case '%s':
                        return typeof a === 'string' ? a : typeof a === 'bigint' ? `${a}n` : inspect(a, 1);
                    case '%d':
                    case '%i': {
                        if (typeof a === 'bigint') return `${a}n`;
                        if (typeof a === 'symbol') return 'NaN';
                        const n = Number(a);
                        return String(m === '%i' ? Math.trunc(n) : n);
                    }
                    case '%f':
                        return typeof a === 'symbol' ? 'NaN' : String(parseFloat(a));
                    case '%j':
                        try {
                            return JSON.stringify(a);
                        } catch {
                            return '[Circular]';
                        }
                    case '%c':
                        return '';
                    default:
                        return inspect(a);
                }
            });
        } else {
            out = show(first);
        }
        for (; next < args.length; next++) out += ' ' + show(args[next]);
        return out;
    }

    // ---- console -------------------------------------------------------------------------

    const console = {};
    const printer = (stream) =>
        function (...args) {
            native.write(stream, format(args));
        };
    for (const name of ['log', 'info', 'debug']) hidden(console, name, printer(1));
    for (const name of ['error', 'warn', 'trace']) hidden(console, name, printer(2));
    hidden(console, 'dir', function dir(v) {
        native.write(1, inspect(v));
    });
    hidden(console, 'assert', function assert(ok, ...args) {
        if (!ok) native.write(2, args.length ? 'Assertion failed: ' + format(args) : 'Assertion failed');
    });
    const counts = new Map();
    hidden(console, 'count', function count(label = 'default') {
        const n = (counts.get(String(label)) || 0) + 1;
        counts.set(String(label), n);
        native.write(1, `${label}: ${n}`);
    });
    const timers = new Map();
    hidden(console, 'time', function time(label = 'default') {
        timers.set(String(label), Date.now());
    });
    hidden(console, 'timeEnd', function timeEnd(label = 'default') {
        const start = timers.get(String(label));
        if (start === undefined) return;
        timers.delete(String(label));
        native.write(1, `${label}: ${Date.now() - start}ms`);
    });
    hidden(g, 'console', console);

    // ---- fs: synchronous, relative paths under /scratch -----------------------------------

    const fs = {};
    const fsOp = (name, op, arity) =>
        hidden(fs, name, {
            [name](path, text) {
                if (path === undefined && name === 'readdir') path = '.';
                if (typeof path !== 'string') {
                    throw new TypeError(`fs.${name}: the path must be a string, got ${inspect(path, 0)}`);
                }
                if (arity === 2 && typeof text !== 'string') {
                    throw new TypeError(
                        `fs.${name}: the content must be a string, got ${inspect(text, 0)} (use JSON.stringify for data)`,
                    );
                }
                const recursive = arity === 1 && text !== null && typeof text === 'object' && !!text.recursive;
                return native.fs(op, path, arity === 2 ? text : recursive);
            },
        }[name]);
    fsOp('readFile', 'read', 1);
    fsOp('writeFile', 'write', 2);
    fsOp('appendFile', 'append', 2);
    fsOp('readdir', 'readdir', 1);
    fsOp('exists', 'exists', 1);
    fsOp('remove', 'remove', 1);
    fsOp('mkdir', 'mkdir', 1);
    hidden(g, 'fs', fs);

    // ---- fetch over wasi:http ------------------------------------------------------------

    class Headers {
        constructor(entries) {
            for (const [k, v] of Object.entries(entries || {})) this[String(k).toLowerCase()] = String(v);
        }
        get(name) {
            const v = Object.prototype.hasOwnProperty.call(this, String(name).toLowerCase())
                ? this[String(name).toLowerCase()]
                : undefined;
            return v === undefined ? null : v;
        }
        has(name) {
            return this.get(name) !== null;
        }
        entries() {
            return Object.entries(this)[Symbol.iterator]();
        }
        keys() {
            return Object.keys(this)[Symbol.iterator]();
        }
        forEach(callback) {
            for (const [k, v] of Object.entries(this)) callback(v, k, this);
        }
        [Symbol.iterator]() {
            return this.entries();
        }
    }

    class Response {
        #body;
        constructor(raw) {
            this.status = raw.status;
            this.ok = raw.status >= 200 && raw.status < 300;
            this.url = raw.url;
            this.redirected = raw.redirects > 0;
            this.headers = new Headers(raw.headers);
            this.#body = raw.body;
        }
        text() {
            return Promise.resolve(this.#body);
        }
        json() {
            return Promise.resolve(this.#body).then((b) => JSON.parse(b));
        }
    }

    function headerPairs(h) {
        const out = [];
        if (h === undefined || h === null) return out;
        const push = (k, v) => out.push([String(k), String(v)]);
        if (h instanceof Headers || h instanceof Map) for (const [k, v] of h) push(k, v);
        else if (Array.isArray(h)) for (const [k, v] of h) push(k, v);
        else if (typeof h === 'object') for (const [k, v] of Object.entries(h)) push(k, v);
        else throw new TypeError('fetch: `headers` must be an object of name: value');
        return out;
    }

    function fetch(resource, options = {}) {
        return new Promise((resolve) => {
            const url = resource instanceof Response ? resource.url : String(resource);
            const opts = options === null || options === undefined ? {} : options;
            const method = opts.method === undefined ? 'GET' : String(opts.method).toUpperCase();
            let body = opts.body;
            if (body === null) body = undefined;
            if (body !== undefined && typeof body !== 'string') {
                if (typeof body === 'object') {
                    throw new TypeError('fetch: `body` must be a string; use JSON.stringify(data) for JSON');
                }
                body = String(body);
            }
            const follow = opts.redirect !== 'manual';
            resolve(new Response(native.http(method, url, headerPairs(opts.headers), body, follow)));
        });
    }
    hidden(g, 'fetch', fetch);
    hidden(g, 'Headers', Headers);
    hidden(g, 'Response', Response);

    // ---- tools: the session's other tools, over the `tools` import ------------------------
    //
    // `await tools.call('plugin.tool', {...})` is the tool's result; a call that returns none
    // rejects with a ToolError of its kind. Each call is judged and logged by the host as a
    // call of the session (only when the operator allows this plugin calls).

    class ToolError extends Error {
        constructor(tool, failure) {
            super(failure.message);
            this.name = new.target.name;
            this.tool = tool;
            this.kind = failure.kind;
            this.reason = failure.message;
            this.alternatives = failure.alternatives || [];
            this.approvalId = failure.approvalId === null ? undefined : failure.approvalId;
        }
    }
    class ToolDenied extends ToolError { }
    class BudgetExceeded extends ToolDenied { }
    class ApprovalRequired extends ToolError { }
    class ToolLimitExceeded extends ToolError { }
    class ToolInputError extends ToolError { }
    class ToolFailed extends ToolError { }
    const KINDS = {
        denied: ToolDenied,
        budget: BudgetExceeded,
        awaiting_approval: ApprovalRequired,
        nested_limit: ToolLimitExceeded,
        unknown_tool: ToolInputError,
        ambiguous_tool: ToolInputError,
        not_offered: ToolInputError,
        invalid_input: ToolInputError,
    };

    function callTool(name, input) {
        return new Promise((resolve, reject) => {
            if (typeof name !== 'string') throw new TypeError('tools.call: the tool name must be a string');
            const text = input === undefined ? '{}' : typeof input === 'string' ? input : JSON.stringify(input);
            if (text === undefined) throw new TypeError(`tools.call('${name}'): the input is not JSON`);
            const answer = JSON.parse(native.tools(1, name, text));
            if ('ok' in answer) resolve(JSON.parse(answer.ok));
            else reject(new (KINDS[answer.err.kind] || ToolFailed)(name, answer.err));
        });
    }
    function listTools() {
        return JSON.parse(native.tools(0)).map((t) => ({ ...t, inputSchema: JSON.parse(t.inputSchema) }));
    }
    const tools = {};
    hidden(tools, 'call', callTool);
    hidden(tools, 'list', listTools);
    hidden(g, 'tools', tools);
    for (const c of [ToolError, ToolDenied, BudgetExceeded, ApprovalRequired, ToolLimitExceeded, ToolInputError, ToolFailed]) {
        hidden(g, c.name, c);
    }

    // ---- Math.random: the state is seeded by the first use in each call ---------------------

    hidden(Math, 'random', function random() {
        return native.random();
    });

    // An uncaught exception, as the runner reports it.
    const describe = (e) => (e instanceof Error ? errorText(e) : 'Uncaught ' + inspect(e));

    return { inspect, format, describe };
});
